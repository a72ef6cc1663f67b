"""The shortest-path problem on a grid: nominal and robust, batched."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import math

import numpy as np
from scipy import sparse

from sklearn_ext.datasets._shortest_path import grid_edges
from sklearn_ext.robust_optimization._problems import (
    BaseProblem,
    _chunks,
)

__all__ = ["ShortestPathProblem"]


class ShortestPathProblem(BaseProblem):
    """Shortest path on a grid, the benchmark of predict-then-optimize.

    The nodes form an ``n_rows x n_cols`` grid numbered ``row * n_cols + col``;
    directed edges go east (right) and south (down); a path runs from the
    top-left node ``0`` to the bottom-right node ``n_rows * n_cols - 1``. The
    parameters ``c`` are the edge costs and a decision ``w`` is the 0/1
    indicator vector (float64) of the path's edges; the cost is ``c^T w``. A
    ``5 x 5`` grid has 40 edges and ``C(8, 4) = 70`` paths.

    Edge order (as in PyEPO): for each grid row from the top, first its east
    edges from left to right, then the south edges leaving it, from left to
    right.

    Nominal decisions and box-robust decisions (``norm="linf"``: the shortest
    path under costs ``C_hat + half_widths``, since ``w >= 0``) come from a
    dynamic program over the grid, vectorised over rows; any grid size works.
    Ellipsoid-robust decisions (``norm="l2"``) minimise ``C_hat^T w +
    ||half_widths * w||_2``, which is not additive over edges: they are exact,
    by enumeration of all paths, on grids with at most 200,000 paths.

    Ties: among optimal paths, every method returns the first one in the order
    of their move sequences read from the source, with east before south (the
    dynamic program takes the east edge when both continuations are optimal).
    With exactly representable sums (e.g. integer costs) the dynamic program
    and the enumeration therefore return the same path; otherwise only paths
    whose objective values agree to rounding error may be resolved differently.

    Parameters
    ----------
    grid : tuple of int, default=(5, 5)
        ``(n_rows, n_cols)``, each ``>= 1``, with at least 2 nodes.

    Attributes
    ----------
    edges_ : ndarray of shape (n_edges, 2), int
        ``(from_node, to_node)`` of each edge, in the edge order above.
    n_params : int
        Number of edges.
    n_decisions : int
        Number of edges.
    n_paths : int
        Number of source-sink paths, ``C(n_rows + n_cols - 2, n_rows - 1)``.

    References
    ----------
    .. [1] A. N. Elmachtoub and P. Grigas, "Smart 'predict, then optimize'",
       Management Science, 68(1), 9-26, 2022.
    .. [2] B. Tang and E. B. Khalil, "PyEPO: a PyTorch-based end-to-end
       predict-then-optimize library for linear and integer programming",
       Mathematical Programming Computation, 16, 297-335, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.robust_optimization import ShortestPathProblem
    >>> problem = ShortestPathProblem(grid=(5, 5))
    >>> problem.n_params, problem.n_paths
    (40, 70)
    >>> C = np.random.RandomState(0).uniform(size=(3, 40))
    >>> W = problem.solve(C)
    >>> W.sum(axis=1).tolist()  # every path has 8 edges
    [8.0, 8.0, 8.0]
    >>> W_rob = problem.solve_robust(C, 0.5 * np.ones_like(C), norm="l2")
    >>> bool((problem.cost(C, W) <= problem.cost(C, W_rob)).all())
    True
    """

    #: Largest number of paths for which ``norm="l2"`` enumerates paths.
    max_paths_l2 = 200_000

    def __init__(self, grid=(5, 5)):
        self.grid, self.edges_, self._east_id, self._south_id = grid_edges(
            grid, owner="ShortestPathProblem"
        )

    def __repr__(self):
        return f"ShortestPathProblem(grid={self.grid})"

    @property
    def n_params(self):
        """Number of edges: the width of ``C``."""
        return self.edges_.shape[0]

    @property
    def n_decisions(self):
        """Number of edges: the width of a decision."""
        return self.edges_.shape[0]

    @property
    def n_paths(self):
        """Number of source-sink paths of the grid."""
        m, n = self.grid
        return math.comb(m + n - 2, m - 1)

    # --- dynamic program ---------------------------------------------------------

    def _dp(self, C, maximize=False):
        """Shortest (longest) path of each row by a DP over the grid nodes."""
        m, n = self.grid
        n_nodes, n_steps = m * n, m + n - 2
        W = np.zeros((C.shape[0], self.n_params))
        for rows in _chunks(C.shape[0], 8 * (self.n_params + 2 * n_nodes)):
            CT = np.ascontiguousarray(C[rows].T)  # (n_edges, chunk)
            to_go = np.zeros((n_nodes, CT.shape[1]))
            go_east = np.zeros((n_nodes, CT.shape[1]), dtype=bool)
            for v in range(n_nodes - 2, -1, -1):
                e, s = self._east_id[v], self._south_id[v]
                if e >= 0 and s >= 0:
                    via_e = CT[e] + to_go[v + 1]
                    via_s = CT[s] + to_go[v + n]
                    east = via_e >= via_s if maximize else via_e <= via_s
                    go_east[v] = east
                    to_go[v] = np.where(east, via_e, via_s)
                elif e >= 0:
                    go_east[v] = True
                    to_go[v] = CT[e] + to_go[v + 1]
                else:
                    to_go[v] = CT[s] + to_go[v + n]
            # Follow the choices forward from the source.
            idx = np.arange(CT.shape[1])
            cur = np.zeros(CT.shape[1], dtype=np.intp)
            block = W[rows]
            for _ in range(n_steps):
                east = go_east[cur, idx]
                edge = np.where(east, self._east_id[cur], self._south_id[cur])
                block[idx, edge] = 1.0
                cur = np.where(east, cur + 1, cur + n)
            W[rows] = block
        return W

    # --- path enumeration --------------------------------------------------------

    def _paths(self):
        """Edge ids (n_paths, n_steps) and CSR incidence (n_paths, n_edges)."""
        m, n = self.grid
        n_steps = m + n - 2
        # Positions of the east moves, in lexicographic order: the move
        # sequences come out in lexicographic order with east before south.
        flat = np.fromiter(
            itertools.chain.from_iterable(
                itertools.combinations(range(n_steps), n - 1)
            ),
            dtype=np.intp,
            count=self.n_paths * (n - 1),
        )
        east_at = flat.reshape(self.n_paths, n - 1)
        is_east = np.zeros((self.n_paths, n_steps), dtype=bool)
        np.put_along_axis(is_east, east_at, True, axis=1)
        col = np.cumsum(is_east, axis=1) - is_east
        row = np.arange(n_steps) - col
        node = row * n + col
        path_edges = np.sort(
            np.where(is_east, self._east_id[node], self._south_id[node]), axis=1
        )
        incidence = sparse.csr_matrix(
            (
                np.ones(path_edges.size),
                path_edges.ravel(),
                np.arange(0, path_edges.size + 1, n_steps),
            ),
            shape=(self.n_paths, self.n_params),
        )
        return path_edges, incidence

    def _solve_l2(self, C_hat, H, shape=None):
        if self.n_paths > self.max_paths_l2:
            raise ValueError(
                f"{self!r} has {self.n_paths} source-sink paths: the grid is too "
                f"large for exact l2 robust paths (they are found by enumerating "
                f"at most {self.max_paths_l2} paths); use norm='linf' instead."
            )
        path_edges, incidence = self._cached("paths", self._paths)
        choice = np.empty(C_hat.shape[0], dtype=np.intp)
        for rows in _chunks(C_hat.shape[0], 24 * self.n_paths):
            linear = incidence @ C_hat[rows].T  # (n_paths, chunk)
            if shape is None:
                risk = np.sqrt(incidence @ (H[rows] ** 2).T)
            else:  # ||L^T (h * p)|| for each path p, row by row
                risk = np.empty_like(linear)
                for col, h in enumerate(H[rows]):
                    rotated = incidence.multiply(h[None, :]) @ shape
                    risk[:, col] = np.sqrt((np.asarray(rotated) ** 2).sum(1))
            choice[rows] = np.argmin(linear + risk, axis=0)  # first = lowest path
        W = np.zeros((C_hat.shape[0], self.n_params))
        np.put_along_axis(W, path_edges[choice], 1.0, axis=1)
        return W

    # --- the problem API ---------------------------------------------------------

    def _solve(self, C):
        return self._dp(C)

    def _solve_robust(self, C_hat, half_widths, norm, shape=None):
        if norm == "linf":
            return self._dp(C_hat + half_widths)
        return self._solve_l2(C_hat, half_widths, shape)

    def _cost_range(self, C):
        best = self._cost(C, self._dp(C))
        worst = self._cost(C, self._dp(C, maximize=True))
        return best, worst


# ---------------------------------------------------------------------------------
# Portfolio
# ---------------------------------------------------------------------------------
