"""Features and edge costs of the grid shortest-path benchmark."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.robust_optimization._problems import ShortestPathProblem
from sklearn_ext.utils._sklearn_compat import Interval, validate_params

__all__ = ["make_shortest_path"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "noise": [Interval(Real, 0, 1, closed="left")],
        "grid": [tuple, list],
        "coef": ["array-like", None],
        "return_coef": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_shortest_path(
    n_samples=1000,
    n_features=5,
    *,
    degree=1,
    noise=0.5,
    grid=(5, 5),
    coef=None,
    return_coef=False,
    random_state=None,
):
    """Generate features and edge costs of the grid shortest-path benchmark.

    The polynomial construction of Elmachtoub and Grigas (2022), as in PyEPO:
    features ``x ~ N(0, I_p)`` and, for each edge ``j`` of the grid of
    :class:`~sklearn_ext.robust_optimization.ShortestPathProblem`,

    ``c_j = [((B x)_j / sqrt(p) + 3) ** degree + 1] / 3.5 ** degree * eps_j``

    with ``eps_j ~ Uniform(1 - noise, 1 + noise)`` independent, so that
    ``E[c_j | x]`` is a polynomial of degree ``degree`` in ``x``: ``degree=1``
    is well specified for a linear model, larger degrees are not. The matrix
    ``B`` has Bernoulli(0.5) entries. Columns of ``C`` follow the edge order of
    ``ShortestPathProblem(grid).edges_``. With an even ``degree`` every cost is
    positive.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    n_features : int, default=5
        Number of features ``p``.
    degree : int, default=1
        Degree of the polynomial link, ``>= 1``.
    noise : float in [0, 1), default=0.5
        Half-width of the multiplicative uniform noise.
    grid : tuple of int, default=(5, 5)
        ``(n_rows, n_cols)`` of the grid.
    coef : array-like of shape (n_edges, n_features), default=None
        The matrix ``B``. By default it is drawn first from ``random_state``, so
        that passing the returned ``coef`` back with another ``random_state``
        gives fresh samples from the same distribution.
    return_coef : bool, default=False
        Whether to return ``coef`` as well.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    C : ndarray of shape (n_samples, n_edges)
        Edge costs, one row per sample.
    coef : ndarray of shape (n_edges, n_features)
        The matrix ``B``, float64; only when ``return_coef=True``.

    References
    ----------
    .. [1] A. N. Elmachtoub and P. Grigas, "Smart 'predict, then optimize'",
       Management Science, 68(1), 9-26, 2022.
    .. [2] B. Tang and E. B. Khalil, "PyEPO: a PyTorch-based end-to-end
       predict-then-optimize library for linear and integer programming",
       Mathematical Programming Computation, 16, 297-335, 2024.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_shortest_path
    >>> X, C = make_shortest_path(n_samples=100, degree=2, random_state=0)
    >>> X.shape, C.shape, bool((C > 0).all())
    ((100, 5), (100, 40), True)
    """
    problem = ShortestPathProblem(grid)
    n_edges = problem.n_params
    rng = check_random_state(random_state)
    if coef is None:
        coef = rng.binomial(1, 0.5, size=(n_edges, n_features)).astype(np.float64)
    else:
        try:
            coef = np.array(coef, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"coef must be a numeric array ({exc}).") from None
        if coef.shape != (n_edges, n_features):
            raise ValueError(
                f"coef must have shape (n_edges, n_features) = ({n_edges}, "
                f"{n_features}) for grid={problem.grid}; got shape {coef.shape}."
            )
        if not np.isfinite(coef).all():
            raise ValueError("coef contains NaN or infinity.")
    X = rng.normal(size=(n_samples, n_features))
    eps = rng.uniform(1.0 - noise, 1.0 + noise, size=(n_samples, n_edges))
    mean = ((X @ coef.T / np.sqrt(n_features) + 3.0) ** degree + 1.0) / 3.5**degree
    C = mean * eps
    if return_coef:
        return X, C, coef
    return X, C
