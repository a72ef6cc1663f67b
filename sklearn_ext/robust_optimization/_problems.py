"""Linear decision problems with an uncertain cost vector, nominal and robust.

A problem is a family of linear programs over a fixed feasible set ``W``,
indexed by an uncertain parameter vector ``c`` (one row of a regression target).
It solves, for a batch of rows at once,

- the nominal problem ``argmin_{w in W} cost(c, w)``, and
- the robust problem ``argmin_{w in W} max_{c in U} cost(c, w)`` over the box or
  ellipsoid ``U = {c_hat + h * u : ||u|| <= 1}`` (elementwise product), which for
  a cost linear in ``c`` is ``c_hat^T w + ||h * w||_q`` with ``q`` the dual norm
  (Ben-Tal and Nemirovski).

Problems are plain Python objects, not estimators: cheap to build, picklable,
and validated when built.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import math
from abc import ABC, abstractmethod
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, linprog

from sklearn_ext.datasets._shortest_path import grid_edges

__all__ = [
    "BaseProblem",
    "LinearProblem",
    "PortfolioProblem",
    "ShortestPathProblem",
]

_NORMS = ("l2", "linf")
# Memory cap of one chunk of rows in the vectorised solvers, in bytes.
_CHUNK_BYTES = 50_000_000


def _chunks(n_rows, bytes_per_row):
    """Row slices whose working memory stays under ``_CHUNK_BYTES``."""
    size = max(1, int(_CHUNK_BYTES // max(bytes_per_row, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


class BaseProblem(ABC):
    """Base class of linear decision problems with an uncertain cost vector.

    A subclass describes a fixed feasible set ``W`` and a cost that is linear in
    the parameter vector ``c``. It implements ``n_params``, ``n_decisions``,
    ``_solve``, ``_solve_robust`` and ``_cost_range`` (and ``_cost`` when the
    cost is not ``c^T w``) on inputs already checked by the public methods,
    which this class provides.

    Every public method works on a batch: row ``i`` of each array is one
    instance of the problem.

    See Also
    --------
    ShortestPathProblem : Shortest path on a grid.
    PortfolioProblem : Long-only portfolio with an uncertain return.
    LinearProblem : Any linear program with an uncertain cost vector.

    References
    ----------
    .. [1] A. Ben-Tal and A. Nemirovski, "Robust solutions of uncertain linear
       programs", Operations Research Letters, 25(1), 1-13, 1999.

    Examples
    --------
    >>> from sklearn_ext.robust_optimization import BaseProblem, ShortestPathProblem
    >>> problem = ShortestPathProblem(grid=(3, 3))
    >>> isinstance(problem, BaseProblem), problem.n_params, problem.n_decisions
    (True, 12, 12)
    """

    @property
    @abstractmethod
    def n_params(self):
        """Number of uncertain parameters: the width of ``C``."""

    @property
    @abstractmethod
    def n_decisions(self):
        """Number of decision variables: the width of a decision ``W``."""

    # --- the public, checked API -----------------------------------------------

    def solve(self, C):
        """Nominal decisions: the best decision for each row of parameters.

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.

        Returns
        -------
        W : ndarray of shape (n_samples, n_decisions)
            ``W[i]`` minimises ``cost(C[i], w)`` over the feasible set.
        """
        C = self._check_params(C, "C")
        return self._solve(C)

    def solve_robust(self, C_hat, half_widths, norm):
        """Robust decisions: the best worst case over a box or an ellipsoid.

        The uncertainty set of row ``i`` is ``U_i = {C_hat[i] + half_widths[i] *
        u : ||u||_norm <= 1}`` (elementwise product; a zero half-width makes its
        coordinate certain). For a cost ``c^T w`` the worst case is
        ``C_hat[i]^T w + ||half_widths[i] * w||_q`` with ``q`` the dual norm:
        ``l2`` for ``norm="l2"``, ``l1`` for ``norm="linf"``.

        Parameters
        ----------
        C_hat : array-like of shape (n_samples, n_params)
            Centres of the uncertainty sets, e.g. point predictions.
        half_widths : array-like of shape (n_samples, n_params)
            Non-negative half-widths of the sets along each coordinate.
        norm : {"l2", "linf"}
            Shape of the set: an axis-aligned ellipsoid or a box.

        Returns
        -------
        W : ndarray of shape (n_samples, n_decisions)
            ``W[i]`` minimises ``max_{c in U_i} cost(c, w)`` over the feasible
            set.
        """
        C_hat = self._check_params(C_hat, "C_hat")
        half_widths = self._check_half_widths(half_widths, C_hat)
        self._check_norm(norm)
        return self._solve_robust(C_hat, half_widths, norm)

    def cost(self, C, W):
        """Cost of each decision under the matching row of parameters.

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.
        W : array-like of shape (n_samples, n_decisions)
            Decisions, one per row.

        Returns
        -------
        costs : ndarray of shape (n_samples,)
            ``cost(C[i], W[i])``.
        """
        C = self._check_params(C, "C")
        W = self._check_decisions(W, C.shape[0])
        return self._cost(C, W)

    def cost_range(self, C):
        """Smallest and largest cost over the feasible set, for each row.

        ``best`` is the cost of the nominal decision :meth:`solve` returns, so
        that ``(cost(C, W) - best) / (worst - best)`` is a regret in ``[0, 1]``
        (up to rounding; ``worst == best`` where every decision costs the same).

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.

        Returns
        -------
        best : ndarray of shape (n_samples,)
            ``min_{w in W} cost(C[i], w)``.
        worst : ndarray of shape (n_samples,)
            ``max_{w in W} cost(C[i], w)``.
        """
        C = self._check_params(C, "C")
        return self._cost_range(C)

    # --- to implement ----------------------------------------------------------

    @abstractmethod
    def _solve(self, C):
        """Nominal decisions for checked parameters."""

    @abstractmethod
    def _solve_robust(self, C_hat, half_widths, norm):
        """Robust decisions for checked centres, half-widths and norm."""

    @abstractmethod
    def _cost_range(self, C):
        """``(best, worst)`` for checked parameters."""

    def _cost(self, C, W):
        """``c^T w`` row by row; overridden where the cost is another one."""
        return np.einsum("ij,ij->i", C, W)

    # --- shared checks -----------------------------------------------------------

    def _as_float_2d(self, A, name):
        try:
            A = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be a numeric array for {self!r}; could not convert "
                f"it to float ({exc})."
            ) from None
        return A

    def _require_finite(self, A, name):
        if not np.isfinite(A).all():
            raise ValueError(
                f"{name} contains NaN or infinity; {self!r} needs finite values."
            )

    def _check_params(self, C, name):
        C = self._as_float_2d(C, name)
        if C.ndim != 2 or C.shape[1] != self.n_params:
            raise ValueError(
                f"{name} must be a 2-D array of shape (n_samples, {self.n_params}) "
                f"for {self!r}; got shape {C.shape}."
            )
        self._require_finite(C, name)
        return C

    def _check_half_widths(self, half_widths, C_hat):
        H = self._as_float_2d(half_widths, "half_widths")
        if H.shape != C_hat.shape:
            raise ValueError(
                f"half_widths must have the shape of C_hat, {C_hat.shape}, for "
                f"{self!r}; got shape {H.shape}."
            )
        self._require_finite(H, "half_widths")
        if (H < 0).any():
            raise ValueError(
                f"half_widths must be >= 0 for {self!r}; got a minimum of {H.min():g}."
            )
        return H

    def _check_norm(self, norm):
        if not isinstance(norm, str) or norm not in _NORMS:
            raise ValueError(
                f"norm must be one of {_NORMS} for {self!r}; got {norm!r}."
            )

    def _check_decisions(self, W, n_samples):
        W = self._as_float_2d(W, "W")
        if W.ndim != 2 or W.shape != (n_samples, self.n_decisions):
            raise ValueError(
                f"W must have shape ({n_samples}, {self.n_decisions}) (one decision "
                f"per row of C) for {self!r}; got shape {W.shape}."
            )
        self._require_finite(W, "W")
        return W

    # --- pickling: caches are rebuilt on demand ----------------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_cache", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _cached(self, key, build):
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = build()
        return cache[key]


# ---------------------------------------------------------------------------------
# Shortest path on a grid
# ---------------------------------------------------------------------------------


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

    def _solve_l2(self, C_hat, H):
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
            risk = np.sqrt(incidence @ (H[rows] ** 2).T)
            choice[rows] = np.argmin(linear + risk, axis=0)  # first = lowest path
        W = np.zeros((C_hat.shape[0], self.n_params))
        np.put_along_axis(W, path_edges[choice], 1.0, axis=1)
        return W

    # --- the problem API ---------------------------------------------------------

    def _solve(self, C):
        return self._dp(C)

    def _solve_robust(self, C_hat, half_widths, norm):
        if norm == "linf":
            return self._dp(C_hat + half_widths)
        return self._solve_l2(C_hat, half_widths)

    def _cost_range(self, C):
        best = self._cost(C, self._dp(C))
        worst = self._cost(C, self._dp(C, maximize=True))
        return best, worst


# ---------------------------------------------------------------------------------
# Portfolio
# ---------------------------------------------------------------------------------


def _check_scalar(value, name, owner, *, low, include_low=True, integer=False):
    kind = Integral if integer else Real
    bad = (
        not isinstance(value, kind)
        or isinstance(value, bool)
        or not np.isfinite(value)
        or (value < low if include_low else value <= low)
    )
    if bad:
        what = "an integer" if integer else "a finite number"
        op = ">=" if include_low else ">"
        raise ValueError(f"{owner}: {name} must be {what} {op} {low}; got {value!r}.")


class PortfolioProblem(BaseProblem):
    """Long-only, fully invested portfolio with uncertain asset returns.

    The feasible set is ``{w >= 0, sum(w) = budget}``; the parameters ``c`` are
    the assets' returns and the cost is the negative return ``-c^T w``. All
    decisions have closed forms, vectorised over rows (no solver):

    - nominal: the whole budget on the asset of highest return;
    - box-robust (``norm="linf"``): the whole budget on the asset of highest
      ``C_hat - half_widths``;
    - ellipsoid-robust (``norm="l2"``): maximise ``mu^T w - ||s * w||_2``
      (``mu = C_hat``, ``s = half_widths``). Its KKT conditions give
      ``w_j`` proportional to ``(mu_j - nu)_+ / s_j^2`` where ``nu`` solves
      ``sum_j (mu_j - nu)_+^2 / s_j^2 = 1``, and the optimal worst-case return
      per unit of budget is ``nu`` itself. ``nu`` is found exactly from the
      sorted returns and cumulative sums. Assets with a zero half-width are
      riskless: the best of them takes the whole budget when its return is at
      least the risky optimum ``nu`` (the objective is linear along the segment
      between the two).

    Ties go to the lowest asset index (nominal and box), and to the riskless
    asset against an equally good risky portfolio.

    Parameters
    ----------
    n_assets : int
        Number of assets, ``>= 1``.
    budget : float, default=1.0
        Total weight, ``> 0``.

    Attributes
    ----------
    n_params : int
        ``n_assets``.
    n_decisions : int
        ``n_assets``.

    References
    ----------
    .. [1] D. Goldfarb and G. Iyengar, "Robust portfolio selection problems",
       Mathematics of Operations Research, 28(1), 1-38, 2003.
    .. [2] A. Ben-Tal and A. Nemirovski, "Robust solutions of uncertain linear
       programs", Operations Research Letters, 25(1), 1-13, 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.robust_optimization import PortfolioProblem
    >>> problem = PortfolioProblem(n_assets=3)
    >>> mu = np.array([[0.10, 0.08, 0.02]])
    >>> problem.solve(mu).tolist()
    [[1.0, 0.0, 0.0]]
    >>> s = np.array([[0.20, 0.05, 0.0]])
    >>> problem.solve_robust(mu, s, norm="linf").tolist()
    [[0.0, 1.0, 0.0]]
    >>> w = problem.solve_robust(mu, s, norm="l2")
    >>> np.round(w, 3).tolist()
    [[0.082, 0.918, 0.0]]
    """

    def __init__(self, n_assets, budget=1.0):
        _check_scalar(n_assets, "n_assets", "PortfolioProblem", low=1, integer=True)
        _check_scalar(budget, "budget", "PortfolioProblem", low=0, include_low=False)
        self.n_assets = int(n_assets)
        self.budget = float(budget)

    def __repr__(self):
        return f"PortfolioProblem(n_assets={self.n_assets}, budget={self.budget!r})"

    @property
    def n_params(self):
        """Number of assets: the width of ``C``."""
        return self.n_assets

    @property
    def n_decisions(self):
        """Number of assets: the width of a decision."""
        return self.n_assets

    def _all_in(self, scores):
        """The whole budget on the highest score (lowest index on ties)."""
        W = np.zeros(scores.shape)
        W[np.arange(scores.shape[0]), np.argmax(scores, axis=1)] = self.budget
        return W

    def _cost(self, C, W):
        return -np.einsum("ij,ij->i", C, W)

    def _solve(self, C):
        return self._all_in(C)

    def _solve_robust(self, C_hat, half_widths, norm):
        if norm == "linf":
            return self._all_in(C_hat - half_widths)
        return self.budget * _simplex_l2_robust(C_hat, half_widths)

    def _cost_range(self, C):
        return -self.budget * C.max(axis=1), -self.budget * C.min(axis=1)


def _simplex_l2_robust(mu, s):
    """Row-wise argmax of ``mu^T v - ||s * v||_2`` over the unit simplex."""
    n, p = mu.shape
    idx = np.arange(n)
    # Scale each row by its largest half-width (the argmax does not change).
    sigma = s.max(axis=1, keepdims=True)
    sigma = np.where(sigma > 0, sigma, 1.0)
    mu, s2 = mu / sigma, (s / sigma) ** 2
    risky = s2 > 0  # a squared half-width that underflows counts as riskless
    inv = np.where(risky, 1.0 / np.where(risky, s2, 1.0), 0.0)

    # Best riskless asset of each row (-inf where there is none).
    riskless_mu = np.where(risky, -np.inf, mu)
    j0 = np.argmax(riskless_mu, axis=1)
    m0 = riskless_mu[idx, j0]
    has_risky = risky.any(axis=1)

    # Risky optimum: risky assets by decreasing return, riskless ones last.
    order = np.argsort(np.where(risky, -mu, np.inf), axis=1, kind="stable")
    mu_o = np.take_along_axis(mu, order, axis=1)
    inv_o = np.take_along_axis(inv, order, axis=1)
    risky_o = np.take_along_axis(risky, order, axis=1)
    # Gaps below the top return: phi(y) = sum_active inv * (y - d)^2 with
    # y = mu_top - nu >= 0 is increasing; solve phi(y) = 1.
    d = np.where(risky_o, mu_o[:, :1] - mu_o, 0.0)
    A = np.cumsum(inv_o, axis=1)
    B = np.cumsum(inv_o * d, axis=1)
    Q = np.cumsum(inv_o * d**2, axis=1)
    next_risky = np.zeros_like(risky_o)
    next_risky[:, :-1] = risky_o[:, 1:]
    next_d = np.zeros_like(d)
    next_d[:, :-1] = d[:, 1:]
    # phi of the top-k assets at the next breakpoint; stop at the first k where it
    # reaches 1 (or where no risky asset follows).
    phi_next = A * next_d**2 - 2.0 * B * next_d + Q
    stop = ~next_risky | (phi_next >= 1.0)
    k = np.argmax(stop, axis=1)
    Ak, Bk, Qk = A[idx, k], B[idx, k], Q[idx, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (Bk + np.sqrt(np.maximum(Bk**2 - Ak * (Qk - 1.0), 0.0))) / Ak
        active = np.arange(p)[None, :] <= k[:, None]
        for _ in range(2):  # Newton polish on the exact active-set function
            gap = np.where(active, y[:, None] - d, 0.0)
            phi = (inv_o * gap**2).sum(axis=1)
            slope = 2.0 * (inv_o * gap).sum(axis=1)
            y = np.where(slope > 0, y - (phi - 1.0) / slope, y)
    nu = mu_o[:, 0] - y
    weights_o = np.where(active, inv_o * np.maximum(y[:, None] - d, 0.0), 0.0)
    total = weights_o.sum(axis=1, keepdims=True)
    weights_o = weights_o / np.where(total > 0, total, 1.0)

    V = np.zeros((n, p))
    use_risky = has_risky & ~(m0 >= nu)
    np.put_along_axis(V, order, np.where(use_risky[:, None], weights_o, 0.0), axis=1)
    riskless_rows = idx[~use_risky]
    V[riskless_rows, j0[~use_risky]] = 1.0
    return V


# ---------------------------------------------------------------------------------
# General linear program
# ---------------------------------------------------------------------------------

_LINPROG_STATUS = {
    1: "iteration limit reached",
    2: "infeasible",
    3: "unbounded",
    4: "numerical difficulties",
}


class LinearProblem(BaseProblem):
    """Linear program with an uncertain cost vector.

    ``min c^T w`` subject to ``A_ub w <= b_ub``, ``A_eq w = b_eq`` and bounds
    on ``w``, as in :func:`scipy.optimize.linprog`. The parameters ``c`` are
    the cost vector, so ``n_params == n_decisions ==`` the number of variables.

    - nominal: one HiGHS linear program per row;
    - box-robust (``norm="linf"``): ``min C_hat^T w + sum_j h_j |w_j|``, one
      HiGHS linear program per row (with costs ``C_hat + h`` when all lower
      bounds are ``>= 0``, otherwise with auxiliary variables ``t >= |w|``);
    - ellipsoid-robust (``norm="l2"``): the second-order cone program
      ``min C_hat^T w + ||h * w||_2`` through cvxpy, compiled once (with
      parameters for the centre and the half-widths) and solved per row. It
      needs the optional dependency cvxpy (``pip install
      "sklearn-ext[optimization]"``).

    An infeasible or unbounded program raises a ``ValueError`` with the
    solver's status when it is solved.

    Parameters
    ----------
    A_ub : array-like of shape (n_ub, n_variables), default=None
        Inequality constraint matrix.
    b_ub : array-like of shape (n_ub,), default=None
        Inequality right-hand side.
    A_eq : array-like of shape (n_eq, n_variables), default=None
        Equality constraint matrix.
    b_eq : array-like of shape (n_eq,), default=None
        Equality right-hand side.
    bounds : pair, sequence of pairs or scipy.optimize.Bounds, default=(0, None)
        ``(lower, upper)`` for every variable, or one pair per variable; ``None``
        means no bound. ``bounds=None`` means ``(0, None)``, as in
        :func:`~scipy.optimize.linprog`.

    Attributes
    ----------
    n_variables : int
        Number of variables, inferred from ``A_ub``, ``A_eq`` or ``bounds``.
    lower_ : ndarray of shape (n_variables,)
        Lower bounds (``-inf`` where none).
    upper_ : ndarray of shape (n_variables,)
        Upper bounds (``inf`` where none).
    n_params : int
        ``n_variables``.
    n_decisions : int
        ``n_variables``.

    References
    ----------
    .. [1] A. Ben-Tal and A. Nemirovski, "Robust solutions of uncertain linear
       programs", Operations Research Letters, 25(1), 1-13, 1999.

    Examples
    --------
    A fractional knapsack: take at most 2 units of volume, each item at most
    once, and minimise the cost (negative value):

    >>> import numpy as np
    >>> from sklearn_ext.robust_optimization import LinearProblem
    >>> problem = LinearProblem(A_ub=[[1.0, 1.0, 1.0]], b_ub=[2.0], bounds=(0, 1))
    >>> C = np.array([[-3.0, -2.0, -1.0]])
    >>> problem.solve(C).round(6).tolist()
    [[1.0, 1.0, 0.0]]
    >>> problem.solve_robust(C, [[2.5, 0.0, 0.0]], norm="linf").round(6).tolist()
    [[0.0, 1.0, 1.0]]
    """

    def __init__(self, A_ub=None, b_ub=None, A_eq=None, b_eq=None, bounds=(0, None)):
        sizes = []
        self.A_ub, self.b_ub = self._check_constraints(A_ub, b_ub, "A_ub", "b_ub")
        self.A_eq, self.b_eq = self._check_constraints(A_eq, b_eq, "A_eq", "b_eq")
        for A, name in ((self.A_ub, "A_ub"), (self.A_eq, "A_eq")):
            if A is not None:
                sizes.append((A.shape[1], f"{name} has {A.shape[1]} columns"))
        lower, upper, n_pairs = self._parse_bounds(bounds)
        if n_pairs is not None:
            sizes.append((n_pairs, f"bounds has {n_pairs} pairs"))
        if not sizes:
            raise ValueError(
                "LinearProblem: cannot infer the number of variables; pass A_ub, "
                "A_eq or one bound pair per variable."
            )
        if len({size for size, _ in sizes}) > 1:
            raise ValueError(
                "LinearProblem: the number of variables disagrees: "
                + ", ".join(text for _, text in sizes)
                + "."
            )
        self.n_variables = sizes[0][0]
        if self.n_variables < 1:
            raise ValueError("LinearProblem: there must be at least one variable.")
        self.bounds = bounds
        self.lower_ = np.broadcast_to(lower, (self.n_variables,)).copy()
        self.upper_ = np.broadcast_to(upper, (self.n_variables,)).copy()

    @staticmethod
    def _check_constraints(A, b, a_name, b_name):
        if A is None and b is None:
            return None, None
        if A is None or b is None:
            missing, given = (a_name, b_name) if A is None else (b_name, a_name)
            raise ValueError(f"LinearProblem: {given} is given but {missing} is not.")
        try:
            A = np.array(A, dtype=np.float64)
            b = np.array(b, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"LinearProblem: {a_name} and {b_name} must be numeric ({exc})."
            ) from None
        if A.ndim != 2 or b.ndim != 1 or b.shape[0] != A.shape[0]:
            raise ValueError(
                f"LinearProblem: {a_name} must be 2-D and {b_name} 1-D with one "
                f"entry per row of {a_name}; got shapes {A.shape} and {b.shape}."
            )
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise ValueError(f"LinearProblem: {a_name} and {b_name} must be finite.")
        return A, b

    @staticmethod
    def _parse_bounds(bounds):
        """``(lower, upper, n_pairs)``; n_pairs is None for one shared pair."""

        def as_bound(value, default):
            if value is None:
                return default
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError
            return float(value)

        error = ValueError(
            "LinearProblem: bounds must be a (lower, upper) pair, a sequence of "
            "such pairs or a scipy.optimize.Bounds, with lower <= upper, lower < "
            f"inf and upper > -inf (None for no bound); got {bounds!r}."
        )
        if bounds is None:
            bounds = (0, None)
        try:
            if isinstance(bounds, Bounds):
                lower = np.atleast_1d(np.asarray(bounds.lb, dtype=np.float64))
                upper = np.atleast_1d(np.asarray(bounds.ub, dtype=np.float64))
                lower, upper = np.broadcast_arrays(lower, upper)
                n_pairs = None if lower.size == 1 else lower.size
                lower, upper = lower.ravel(), upper.ravel()
            elif len(bounds) == 2 and all(np.ndim(b) == 0 for b in bounds):
                lower = np.array([as_bound(bounds[0], -np.inf)])
                upper = np.array([as_bound(bounds[1], np.inf)])
                n_pairs = None
            else:
                pairs = [tuple(pair) for pair in bounds]
                if any(len(pair) != 2 for pair in pairs):
                    raise ValueError
                lower = np.array([as_bound(lo, -np.inf) for lo, _ in pairs])
                upper = np.array([as_bound(hi, np.inf) for _, hi in pairs])
                n_pairs = len(pairs)
        except (TypeError, ValueError):
            raise error from None
        if (
            np.isnan(lower).any()
            or np.isnan(upper).any()
            or (lower > upper).any()
            or (lower == np.inf).any()
            or (upper == -np.inf).any()
        ):
            raise error
        return lower, upper, n_pairs

    def __repr__(self):
        n_ub = 0 if self.A_ub is None else self.A_ub.shape[0]
        n_eq = 0 if self.A_eq is None else self.A_eq.shape[0]
        return (
            f"LinearProblem(n_variables={self.n_variables}, n_ub={n_ub}, n_eq={n_eq})"
        )

    @property
    def n_params(self):
        """Number of variables: the width of ``C``."""
        return self.n_variables

    @property
    def n_decisions(self):
        """Number of variables: the width of a decision."""
        return self.n_variables

    # --- HiGHS -------------------------------------------------------------------

    def _linprog(self, c, A_ub, A_eq, bounds):
        return linprog(
            c,
            A_ub=A_ub,
            b_ub=self.b_ub,
            A_eq=A_eq,
            b_eq=self.b_eq,
            bounds=bounds,
            method="highs",
        )

    def _fail(self, res, row, what):
        status = _LINPROG_STATUS.get(res.status, f"status {res.status}")
        raise ValueError(
            f"{self!r}: the {what} linear program of row {row} is {status} "
            f"(HiGHS: {res.message})"
        )

    def _solve_rows(self, costs, A_ub, A_eq, bounds, n_keep, what):
        W = np.empty((costs.shape[0], n_keep))
        for i, c in enumerate(costs):
            res = self._linprog(c, A_ub, A_eq, bounds)
            if res.status != 0:
                self._fail(res, i, what)
            W[i] = res.x[:n_keep] + 0.0  # no negative zeros
        return W

    def _box(self):
        return np.column_stack([self.lower_, self.upper_])

    def _solve(self, C):
        return self._solve_rows(
            C, self.A_ub, self.A_eq, self._box(), self.n_variables, "nominal"
        )

    def _solve_robust(self, C_hat, half_widths, norm):
        if norm == "l2":
            return self._solve_l2(C_hat, half_widths)
        if (self.lower_ >= 0).all():  # |w| = w
            return self._solve_rows(
                C_hat + half_widths,
                self.A_ub,
                self.A_eq,
                self._box(),
                self.n_variables,
                "box-robust",
            )
        # Variables (w, t_J) with t_J >= |w_J| for the J that can be negative.
        n = self.n_variables
        J = np.flatnonzero(self.lower_ < 0)
        nJ = J.size
        pick = np.zeros((nJ, n))
        pick[np.arange(nJ), J] = 1.0
        rows = [np.hstack([pick, -np.eye(nJ)]), np.hstack([-pick, -np.eye(nJ)])]
        if self.A_ub is not None:
            rows.insert(0, np.hstack([self.A_ub, np.zeros((self.A_ub.shape[0], nJ))]))
        A_ub = np.vstack(rows)
        b_ub = np.concatenate(
            [self.b_ub if self.A_ub is not None else np.zeros(0), np.zeros(2 * nJ)]
        )
        A_eq = (
            None
            if self.A_eq is None
            else np.hstack([self.A_eq, np.zeros((self.A_eq.shape[0], nJ))])
        )
        bounds = np.vstack(
            [self._box(), np.column_stack([np.zeros(nJ), np.full(nJ, np.inf)])]
        )
        W = np.empty(C_hat.shape)
        for i in range(C_hat.shape[0]):
            cost_w = C_hat[i] + np.where(self.lower_ >= 0, half_widths[i], 0.0)
            c = np.concatenate([cost_w, half_widths[i, J]])
            res = linprog(
                c,
                A_ub=A_ub,
                b_ub=b_ub,
                A_eq=A_eq,
                b_eq=self.b_eq,
                bounds=bounds,
                method="highs",
            )
            if res.status != 0:
                self._fail(res, i, "box-robust")
            W[i] = res.x[:n] + 0.0
        return W

    # --- cvxpy -------------------------------------------------------------------

    def _compile_l2(self):
        """The parametrised SOCP, compiled once per instance (DPP)."""
        try:
            import cvxpy as cp
        except ImportError as exc:
            raise ImportError(
                "LinearProblem with norm='l2' needs cvxpy: "
                'pip install "sklearn-ext[optimization]"'
            ) from exc
        n = self.n_variables
        w = cp.Variable(n)
        centre = cp.Parameter(n)
        half = cp.Parameter(n, nonneg=True)
        constraints = []
        if self.A_ub is not None:
            constraints.append(self.A_ub @ w <= self.b_ub)
        if self.A_eq is not None:
            constraints.append(self.A_eq @ w == self.b_eq)
        low, high = np.isfinite(self.lower_), np.isfinite(self.upper_)
        if low.any():
            constraints.append(w[low] >= self.lower_[low])
        if high.any():
            constraints.append(w[high] <= self.upper_[high])
        objective = cp.Minimize(centre @ w + cp.norm(cp.multiply(half, w), 2))
        problem = cp.Problem(objective, constraints)
        return cp, problem, w, centre, half

    def _solve_l2(self, C_hat, half_widths):
        cp, problem, w, centre, half = self._cached("l2", self._compile_l2)
        W = np.empty(C_hat.shape)
        for i in range(C_hat.shape[0]):
            centre.value = C_hat[i]
            half.value = half_widths[i]
            try:
                problem.solve()
            except cp.error.SolverError as exc:
                raise ValueError(
                    f"{self!r}: the l2-robust program of row {i} failed ({exc})."
                ) from None
            if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                raise ValueError(
                    f"{self!r}: the l2-robust program of row {i} is "
                    f"{problem.status} (cvxpy status)."
                )
            W[i] = w.value + 0.0
        return W

    # --- cost range ----------------------------------------------------------------

    def _cost_range(self, C):
        W_best = np.empty(C.shape)
        W_worst = np.empty(C.shape)
        box = self._box()
        for i, c in enumerate(C):
            for sign, out, what in (
                (1.0, W_best, "minimum"),
                (-1.0, W_worst, "maximum"),
            ):
                res = self._linprog(sign * c, self.A_ub, self.A_eq, box)
                # After a solved minimum the set is not empty: an "infeasible or
                # unbounded" maximum is unbounded.
                if res.status == 3 or (sign < 0 and res.status == 2):
                    raise ValueError(
                        f"{self!r}: the {what} of the cost of row {i} is unbounded "
                        "over the feasible set, so regret cannot be normalised on "
                        "it; add bounds (or constraints) that make the feasible "
                        f"set bounded. (HiGHS: {res.message})"
                    )
                if res.status != 0:
                    self._fail(res, i, f"cost {what}")
                out[i] = res.x
        return self._cost(C, W_best), self._cost(C, W_worst)
