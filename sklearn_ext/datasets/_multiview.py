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
        "cluster_std": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left"), list, tuple],
        "view_error": [Interval(Real, 0, None, closed="left"), list, tuple],
        "error_correlation": [Interval(Real, -1, 1, closed="both")],
        "missing_rate": [Interval(Real, 0, 1, closed="both")],
        "return_latent": ["boolean"],
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
    cluster_std=1.0,
    noise=0.5,
    view_error=0.0,
    error_correlation=0.0,
    missing_rate=0.0,
    return_latent=False,
    random_state=None,
):
    """Generate clustered multi-view data from a shared latent space.

    Each sample ``i`` has a cluster label ``y_i`` and a shared latent vector
    ``z_i = mu[y_i] + u_i`` with ``u_i ~ N(0, cluster_std**2 I)`` and cluster
    centres ``mu`` drawn from ``N(0, separation**2 I)``. View ``v`` sees the
    shared latent vector through its own latent error ``e_iv``, its own random
    linear map ``A_v`` and Gaussian noise of standard deviation ``noise[v]``::

        x_iv = (z_i + e_iv) @ A_v + noise[v] * eps_iv

    A noisier view is a less informative one. Views are concatenated along the
    columns.

    The latent errors of one sample, ``E_i = (e_i1, ..., e_iV)`` with each
    ``e_iv`` in ``R^latent_dim``, are drawn jointly Gaussian with mean zero,
    independently for every latent dimension ``d`` and every sample, with::

        Cov(e_iv[d], e_iw[d]) = view_error[v] * view_error[w] * R[v, w]

    where ``R`` is the equicorrelation matrix, ``R[v, v] = 1`` and
    ``R[v, w] = error_correlation`` for ``v != w``. The latent error ``e_v`` is
    what an estimate of ``z`` from view ``v`` alone gets wrong (even a noiseless
    view only determines ``z + e_v``), so ``error_correlation`` is the planted
    correlation between the per-view estimation errors: the quantity that a
    fusion model with correlated view errors (rather than independent ones)
    should recover. With ``view_error=0`` (the default) every view sees ``z``
    itself and no random number is spent on the errors, so the output is the
    same as without these parameters.

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
        Standard deviation of the cluster centres.
    cluster_std : float, default=1.0
        Within-cluster standard deviation of the shared latent vector. When it
        is small beside ``view_error``, the views' latent errors, not the
        spread of ``z``, decide how well the clusters can be told apart, and
        how the views are fused matters most.
    noise : float or sequence of float, default=0.5
        Noise standard deviation, one value for all views or one per view.
    view_error : float or sequence of float, default=0.0
        Standard deviation of each coordinate of the per-view latent error
        ``e_v``, one non-negative value for all views or one per view.
    error_correlation : float, default=0.0
        Correlation ``rho`` between the latent errors of any two views (the same
        for every pair). The correlation matrix is positive semi-definite only
        for ``rho`` in ``[-1 / (n_views - 1), 1]``; a non-zero ``rho`` needs a
        non-zero ``view_error``. Ignored when there is a single view.
    missing_rate : float in [0, 1], default=0.0
        Fraction of samples that lose at least one view (see :func:`mask_views`).
    return_latent : bool, default=False
        If True, also return the shared latent vectors and the latent errors.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw. For a given seed, ``y``, ``z``,
        the linear maps, the noise and the missing views do not depend on
        ``view_error`` and ``error_correlation``.

    Returns
    -------
    X : ndarray of shape (n_samples, sum(view_sizes))
        Missing views are all-NaN blocks.
    y : ndarray of shape (n_samples,)
        Cluster labels.
    views : list of int
        The view sizes, ready for an estimator's ``views`` parameter.
    latent : dict
        Only returned if ``return_latent`` is True. ``"z"``: ndarray of shape
        (n_samples, latent_dim), the shared latent vectors; ``"errors"``: ndarray
        of shape (n_samples, n_views, latent_dim), the latent errors ``e_iv``
        (zeros when ``view_error`` is 0), given also for missing views.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.datasets import make_multiview_blobs
    >>> X, y, views = make_multiview_blobs(100, view_sizes=(4, 6), random_state=0)
    >>> X.shape, views
    ((100, 10), [4, 6])
    >>> X, y, views, latent = make_multiview_blobs(
    ...     2000, view_sizes=(4, 6), view_error=1.0, error_correlation=0.5,
    ...     return_latent=True, random_state=0)
    >>> errors = latent["errors"]
    >>> errors.shape
    (2000, 2, 3)
    >>> rho = np.corrcoef(errors[:, 0].ravel(), errors[:, 1].ravel())[0, 1]
    >>> round(float(rho), 1)
    0.5
    """
    sizes = [int(s) for s in view_sizes]
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError(f"view_sizes must be positive integers; got {view_sizes!r}.")
    n_views = len(sizes)
    if np.ndim(noise) and len(noise) != n_views:
        raise ValueError(
            f"noise has {len(noise)} values but there are {n_views} views."
        )
    noises = np.broadcast_to(np.asarray(noise, dtype=np.float64), (n_views,))
    if (noises < 0).any():
        raise ValueError("noise must be non-negative.")
    if np.ndim(view_error) and len(view_error) != n_views:
        raise ValueError(
            f"view_error has {len(view_error)} values but there are {n_views} views."
        )
    try:
        error_sds = np.asarray(view_error, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"view_error must be a float or a sequence of floats; got {view_error!r}."
        ) from exc
    if error_sds.ndim > 1:
        raise ValueError(
            "view_error must be a float or a flat sequence of floats; "
            f"got {view_error!r}."
        )
    error_sds = np.broadcast_to(error_sds, (n_views,))
    if not np.isfinite(error_sds).all() or (error_sds < 0).any():
        raise ValueError(
            f"view_error must be finite and non-negative; got {view_error!r}."
        )
    rho = float(error_correlation)
    if n_views > 1 and rho < -1.0 / (n_views - 1) - 1e-12:
        raise ValueError(
            "error_correlation must be in [-1/(n_views - 1), 1] = "
            f"[{-1.0 / (n_views - 1):.6g}, 1] for {n_views} views, so that the "
            "correlation matrix of the view errors is positive semi-definite; "
            f"got {rho!r}."
        )
    if rho != 0 and not error_sds.any():
        raise ValueError(
            f"error_correlation={rho!r} needs a non-zero view_error: the latent "
            "errors it correlates are all zero when view_error is 0."
        )

    rng = check_random_state(random_state)
    dim = latent_dim or max(2, n_clusters)
    centres = rng.normal(scale=separation, size=(n_clusters, dim))
    y = rng.randint(n_clusters, size=n_samples)
    z = centres[y] + cluster_std * rng.normal(size=(n_samples, dim))
    loadings, view_noise = [], []
    for size, sd in zip(sizes, noises):
        loadings.append(rng.normal(scale=1.0 / np.sqrt(dim), size=(dim, size)))
        view_noise.append(sd * rng.normal(size=(n_samples, size)))
    # The missing views are drawn before the errors, so that for a given seed
    # everything but the errors is the same whatever view_error is.
    missing = None
    if missing_rate > 0:
        missing = np.isnan(
            mask_views(np.zeros((n_samples, sum(sizes))), sizes, missing_rate, rng)
        )
    errors = np.zeros((n_samples, n_views, dim))
    if error_sds.any():  # no random draw at all when every view_error is 0
        corr = np.full((n_views, n_views), rho)
        np.fill_diagonal(corr, 1.0)
        # The eigenvalues of the equicorrelation matrix are 1 - rho and
        # 1 + (n_views - 1) * rho; at an edge of the PSD range one of them is 0.
        min_eig = min(1.0 - rho, 1.0 + (n_views - 1) * rho) if n_views > 1 else 1.0
        if min_eig > 1e-10:
            factor = np.linalg.cholesky(corr)
        else:  # singular (rho = 1 or rho = -1/(n_views - 1)): eigen-decomposition
            eigval, eigvec = np.linalg.eigh(corr)
            # Round-off eigenvalues of the null space are set to 0, not sqrt'ed.
            eigval[eigval < 1e-10] = 0.0
            factor = eigvec * np.sqrt(eigval)
        # (n, dim, V) standard normals -> rows with covariance factor @ factor.T
        std = rng.normal(size=(n_samples, dim, n_views))
        errors = np.swapaxes(std @ factor.T, 1, 2) * error_sds[:, None]
    blocks = []
    for v, (loading, view_eps) in enumerate(zip(loadings, view_noise)):
        seen = z + errors[:, v] if error_sds[v] else z
        blocks.append(seen @ loading + view_eps)
    X = np.hstack(blocks)
    if missing is not None:
        X[missing] = np.nan
    if return_latent:
        return X, y, sizes, {"z": z, "errors": errors}
    return X, y, sizes
