"""Features and edge costs of the grid shortest-path benchmark, and its grid graph.

The grid graph itself (:func:`grid_edges`) lives here, not in
``robust_optimization``, so that ``sklearn_ext.datasets`` imports no estimator
family: :class:`~sklearn_ext.robust_optimization.ShortestPathProblem` builds its
graph from this module.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, validate_params

__all__ = ["grid_edges", "make_shortest_path"]


def grid_edges(grid, owner="grid"):
    """The directed edges of an ``n_rows x n_cols`` grid, east and south.

    Nodes are numbered ``row * n_cols + col``; edges go east (right) and south
    (down). Edge order (as in PyEPO): for each grid row from the top, first its
    east edges from left to right, then the south edges leaving it, from left
    to right.

    Parameters
    ----------
    grid : tuple of int
        ``(n_rows, n_cols)``, each ``>= 1``, with at least 2 nodes.
    owner : str, default="grid"
        Name used in the error message (the caller's).

    Returns
    -------
    grid : tuple of int
        ``(n_rows, n_cols)`` as Python ints.
    edges : ndarray of shape (n_edges, 2), int
        ``(from_node, to_node)`` of each edge, in the edge order above.
    east_id, south_id : ndarray of shape (n_rows * n_cols,), int
        Id of the edge leaving each node eastwards (southwards); -1 where the
        move would leave the grid.

    Raises
    ------
    ValueError
        If ``grid`` is not a pair of positive integers with at least 2 nodes.

    Examples
    --------
    >>> from sklearn_ext.datasets._shortest_path import grid_edges
    >>> grid, edges, east_id, south_id = grid_edges((2, 3))
    >>> edges.tolist()
    [[0, 1], [1, 2], [0, 3], [1, 4], [2, 5], [3, 4], [4, 5]]
    """
    ok = (
        isinstance(grid, (tuple, list))
        and len(grid) == 2
        and all(
            isinstance(g, Integral) and not isinstance(g, bool) and g >= 1 for g in grid
        )
    )
    if not ok or grid[0] * grid[1] < 2:
        raise ValueError(
            f"{owner}: grid must be a pair of integers (n_rows, n_cols), each "
            f">= 1, with at least 2 nodes; got {grid!r}."
        )
    m, n = int(grid[0]), int(grid[1])
    node = np.arange(m * n).reshape(m, n)
    east_id = np.full((m, n), -1, dtype=np.intp)
    south_id = np.full((m, n), -1, dtype=np.intp)
    block = 2 * n - 1  # edges of a grid row: n - 1 east, then n south
    rows = np.arange(m)[:, None]
    east_id[:, :-1] = rows * block + np.arange(n - 1)
    south_id[:-1, :] = rows[:-1] * block + (n - 1) + np.arange(n)
    east_id, south_id = east_id.ravel(), south_id.ravel()
    n_edges = (m - 1) * block + (n - 1)
    edges = np.empty((n_edges, 2), dtype=np.intp)
    has_east, has_south = east_id >= 0, south_id >= 0
    edges[east_id[has_east]] = np.column_stack(
        [node.ravel()[has_east], node.ravel()[has_east] + 1]
    )
    edges[south_id[has_south]] = np.column_stack(
        [node.ravel()[has_south], node.ravel()[has_south] + n]
    )
    return (m, n), edges, east_id, south_id


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
    ``ShortestPathProblem(grid).edges_`` (east edges of a grid row, then the
    south edges leaving it, row by row from the top). With an even ``degree``
    every cost is positive.

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
    grid, edges, _, _ = grid_edges(grid, owner="make_shortest_path")
    n_edges = edges.shape[0]
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
                f"{n_features}) for grid={grid}; got shape {coef.shape}."
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
