"""A general linear program with an uncertain cost: nominal and robust, batched."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, linprog

from sklearn_ext.robust_optimization._problems import BaseProblem
from sklearn_ext.robust_optimization._socp import PolytopeBarrier, solve_primal_dual

__all__ = ["LinearProblem"]

_L2_SOLVERS = ("primal-dual", "barrier")
# Rows per stacked (block-diagonal) HiGHS program of cost_range.
_STACK_ROWS = 512

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
      ``min C_hat^T w + ||h * w||_2``, for all rows at once by an
      interior-point method batched over the rows in NumPy (the polytope is
      shared: its equalities are eliminated and an interior point found
      once). ``l2_solver="primal-dual"`` (the default): Mehrotra's
      predictor-corrector with Nesterov-Todd scaling, about 20 iterations;
      a row stops when its duality gap is below ``1e-8 * max(1, |value|)``
      and its dual residual below ``1e-8`` of its cost's scale.
      ``l2_solver="barrier"``: the earlier log-barrier method (duality gap
      ``1e-9`` relative on the central path; hundreds of Newton steps).
      Rows either cannot certify -- a polytope without interior, or
      iterations that do not converge -- are solved with cvxpy (compiled
      once, with parameters for the centre and the half-widths), which needs
      the optional dependency cvxpy (``pip install
      "sklearn-ext[optimization]"``).
    - cost range (for the normalised regret): the minimum and the maximum
      of the cost over the polytope, as block-diagonal HiGHS programs of
      many rows each.

    An empty feasible set raises a ``ValueError`` when the problem is built
    (a phase-one linear program with HiGHS); an infeasible or unbounded
    program raises a ``ValueError`` with the solver's status when it is
    solved.

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
    l2_solver : {"primal-dual", "barrier"}, default="primal-dual"
        The batched interior-point method of the l2-robust programs.

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

    def __init__(
        self,
        A_ub=None,
        b_ub=None,
        A_eq=None,
        b_eq=None,
        bounds=(0, None),
        l2_solver="primal-dual",
    ):
        if l2_solver not in _L2_SOLVERS:
            raise ValueError(
                f"LinearProblem: l2_solver must be one of {_L2_SOLVERS}; got "
                f"{l2_solver!r}."
            )
        self.l2_solver = l2_solver
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
        self._check_nonempty()

    def _check_nonempty(self):
        """Phase one: a zero-cost HiGHS program finds a feasible point or none."""
        res = self._linprog(
            np.zeros(self.n_variables), self.A_ub, self.A_eq, self._box()
        )
        if res.status == 2:
            parts = [
                name
                for A, name in (
                    (self.A_ub, "A_ub w <= b_ub"),
                    (self.A_eq, "A_eq w = b_eq"),
                )
                if A is not None
            ] + ["the bounds"]
            raise ValueError(
                f"LinearProblem: the feasible set is empty: no w satisfies "
                f"{', '.join(parts)} together (phase-one linear program, HiGHS: "
                f"{res.message})"
            )

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

    def _solve_robust(self, C_hat, half_widths, norm, shape=None):
        if norm == "l2":
            return self._solve_l2(C_hat, half_widths, shape)
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

    def _compile_l2(self, shape=None):
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
        scaled = cp.multiply(half, w)
        if shape is not None:
            scaled = shape.T @ scaled
        objective = cp.Minimize(centre @ w + cp.norm(scaled, 2))
        problem = cp.Problem(objective, constraints)
        return cp, problem, w, centre, half

    def _barrier(self):
        return PolytopeBarrier(
            self.A_ub, self.b_ub, self.A_eq, self.b_eq, self.lower_, self.upper_
        )

    def _solve_l2(self, C_hat, half_widths, shape=None):
        barrier = self._cached("barrier", self._barrier)
        if barrier.interior:
            # (problems pickled before l2_solver existed: the default)
            if getattr(self, "l2_solver", "primal-dual") == "primal-dual":
                W, ok = solve_primal_dual(barrier, C_hat, half_widths, shape)
            else:
                W, ok = barrier.solve(C_hat, half_widths, shape)
            W = W + 0.0
            if ok.all():
                return W
            rows = np.flatnonzero(~ok)
        else:
            W, rows = np.empty(C_hat.shape), np.arange(C_hat.shape[0])
        W[rows] = self._solve_l2_cvxpy(C_hat[rows], half_widths[rows], rows, shape)
        return W

    def _solve_l2_cvxpy(self, C_hat, half_widths, rows, shape=None):
        key = "l2" if shape is None else ("l2", shape.tobytes())
        cp, problem, w, centre, half = self._cached(
            key, lambda: self._compile_l2(shape)
        )
        W = np.empty(C_hat.shape)
        for i, row in enumerate(rows):
            centre.value = C_hat[i]
            half.value = half_widths[i]
            try:
                problem.solve()
            except cp.error.SolverError as exc:
                raise ValueError(
                    f"{self!r}: the l2-robust program of row {row} failed ({exc})."
                ) from None
            if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                raise ValueError(
                    f"{self!r}: the l2-robust program of row {row} is "
                    f"{problem.status} (cvxpy status)."
                )
            W[i] = w.value + 0.0
        return W

    # --- cost range ----------------------------------------------------------------

    def _cost_range(self, C):
        best = np.empty(C.shape[0])
        worst = np.empty(C.shape[0])
        for start in range(0, C.shape[0], _STACK_ROWS):
            rows = slice(start, start + _STACK_ROWS)
            out = self._stacked_range(C[rows])
            if out is None:  # some program failed: find it, row by row
                return self._cost_range_rows(C)
            best[rows], worst[rows] = out
        return best, worst

    def _stacked_range(self, C):
        """Minimum and maximum cost of every row, by one block-diagonal program.

        The minima and maxima of the rows are independent linear programs:
        stacked, HiGHS solves them at once. None when the stacked program is
        not solved (then some row's is not either).
        """
        R = C.shape[0]
        if R == 0:
            return np.zeros(0), np.zeros(0)
        eye = sp.identity(2 * R, format="csr")
        stack = {}
        for A, b, name in ((self.A_ub, self.b_ub, "ub"), (self.A_eq, self.b_eq, "eq")):
            stack[f"A_{name}"] = None if A is None else sp.kron(eye, sp.csr_matrix(A))
            stack[f"b_{name}"] = None if A is None else np.tile(b, 2 * R)
        res = linprog(
            np.concatenate([C, -C]).ravel(),
            bounds=np.tile(self._box(), (2 * R, 1)),
            method="highs",
            **stack,
        )
        if res.status != 0:
            return None
        W = res.x.reshape(2 * R, self.n_variables)
        return self._cost(C, W[:R]), self._cost(C, W[R:])

    def _cost_range_rows(self, C):
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
