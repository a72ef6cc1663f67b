"""Generated multi-view data and random removal of views."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from sklearn_ext.utils._sklearn_compat import Interval, validate_params
from sklearn_ext.utils._views import check_views

__all__ = ["make_multiview_blobs", "mask_views"]


@validate_params(
    {
        "X": ["array-like"],
        "views": [None, list, tuple],
        "missing_rate": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def mask_views(X, views, missing_rate, random_state=None):
    """Remove whole views from a fraction of the samples, keeping one view each.

    Protocol: ``round(missing_rate * n_samples)`` samples, drawn uniformly without
    replacement, each lose at least one view and keep at least one. For each of
    them the number of lost views is uniform on ``1 .. n_views - 1`` and the lost
    views are a uniform subset of that size. A lost view becomes an all-NaN block
    in its columns. The other samples keep every view.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Complete data (no NaN).
    views : list or tuple
        View layout as for :func:`sklearn_ext.utils.check_views`.
    missing_rate : float in [0, 1]
        Fraction of samples that lose at least one view.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of the random choice of samples and views.

    Returns
    -------
    X_masked : ndarray of shape (n_samples, n_features), float64
        A new array; ``X`` is not modified.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.datasets import mask_views
    >>> X = np.ones((4, 3))
    >>> Xm = mask_views(X, [2, 1], missing_rate=0.5, random_state=0)
    >>> int(np.isnan(Xm).any(axis=1).sum())
    2
    """
    X = check_array(X, dtype=np.float64, copy=True, ensure_all_finite=True)
    cols = check_views(views, X.shape[1])
    n_views = len(cols)
    n_masked = int(round(missing_rate * X.shape[0]))
    if n_masked and n_views < 2:
        raise ValueError(
            "mask_views needs at least 2 views to remove one and keep another; "
            f"got {n_views} view."
        )
    rng = check_random_state(random_state)
    for i in rng.choice(X.shape[0], size=n_masked, replace=False):
        n_lost = rng.randint(1, n_views)
        for v in rng.choice(n_views, size=n_lost, replace=False):
            X[i, cols[v]] = np.nan
    return X


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "view_sizes": [list, tuple],
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "latent_dim": [None, Interval(Integral, 1, None, closed="left")],
        "separation": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left"), list, tuple],
        "missing_rate": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multiview_blobs(
    n_samples=300,
    *,
    view_sizes=(10, 10, 10),
    n_clusters=3,
    latent_dim=None,
    separation=3.0,
    noise=0.5,
    missing_rate=0.0,
    random_state=None,
):
    """Generate clustered multi-view data from a shared latent space.

    Each sample has a cluster label ``y`` and a latent vector
    ``z = mu[y] + e`` with ``e ~ N(0, I)`` and cluster centres ``mu`` drawn from
    ``N(0, separation**2 I)``. View ``v`` sees the latent vector through its own
    random linear map plus Gaussian noise of standard deviation ``noise[v]``:
    ``x_v = A_v z + noise[v] * eps``. A noisier view is a less informative one.
    Views are concatenated along the columns.

    Parameters
    ----------
    n_samples : int, default=300
        Number of samples.
    view_sizes : list or tuple of int, default=(10, 10, 10)
        Number of columns of each view.
    n_clusters : int, default=3
        Number of clusters (classes of ``y``).
    latent_dim : int, default=None
        Dimension of the shared latent space; defaults to ``max(2, n_clusters)``.
    separation : float, default=3.0
        Standard deviation of the cluster centres relative to the within-cluster
        spread.
    noise : float or sequence of float, default=0.5
        Noise standard deviation, one value for all views or one per view.
    missing_rate : float in [0, 1], default=0.0
        Fraction of samples that lose at least one view (see :func:`mask_views`).
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    X : ndarray of shape (n_samples, sum(view_sizes))
        Missing views are all-NaN blocks.
    y : ndarray of shape (n_samples,)
        Cluster labels.
    views : list of int
        The view sizes, ready for an estimator's ``views`` parameter.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_multiview_blobs
    >>> X, y, views = make_multiview_blobs(100, view_sizes=(4, 6), random_state=0)
    >>> X.shape, views
    ((100, 10), [4, 6])
    """
    sizes = [int(s) for s in view_sizes]
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError(f"view_sizes must be positive integers; got {view_sizes!r}.")
    if np.ndim(noise) and len(noise) != len(sizes):
        raise ValueError(
            f"noise has {len(noise)} values but there are {len(sizes)} views."
        )
    noises = np.broadcast_to(np.asarray(noise, dtype=np.float64), (len(sizes),))
    if (noises < 0).any():
        raise ValueError("noise must be non-negative.")
    rng = check_random_state(random_state)
    dim = latent_dim or max(2, n_clusters)
    centres = rng.normal(scale=separation, size=(n_clusters, dim))
    y = rng.randint(n_clusters, size=n_samples)
    z = centres[y] + rng.normal(size=(n_samples, dim))
    blocks = []
    for size, sd in zip(sizes, noises):
        loading = rng.normal(scale=1.0 / np.sqrt(dim), size=(dim, size))
        blocks.append(z @ loading + sd * rng.normal(size=(n_samples, size)))
    X = np.hstack(blocks)
    if missing_rate > 0:
        X = mask_views(X, sizes, missing_rate, random_state=rng)
    return X, y, sizes
