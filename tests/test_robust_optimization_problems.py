"""Decision problems of robust predict-then-optimize, against brute force and cvxpy."""

import copy
import math
import pickle
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.utils import check_random_state

from sklearn_ext.datasets import make_shortest_path
from sklearn_ext.robust_optimization import (
    BaseProblem,
    LinearProblem,
    PortfolioProblem,
    ShortestPathProblem,
)

cp = pytest.importorskip("cvxpy")


# --- shortest path: independent references ------------------------------------------


def brute_paths(problem):
    """0/1 incidence (n_paths, n_edges) of all paths by depth-first search.

    East is explored before south, so the paths come in lexicographic order of
    their move sequences with east first: the documented tie-breaking order.
    """
    m, n = problem.grid
    index = {(int(u), int(v)): j for j, (u, v) in enumerate(problem.edges_)}
    paths = []

    def walk(r, c, used):
        if (r, c) == (m - 1, n - 1):
            w = np.zeros(len(index))
            w[used] = 1.0
            paths.append(w)
            return
        here = r * n + c
        if c + 1 < n:
            walk(r, c + 1, [*used, index[(here, here + 1)]])
        if r + 1 < m:
            walk(r + 1, c, [*used, index[(here, here + n)]])

    walk(0, 0, [])
    return np.array(paths)


def assert_paths(problem, W):
    """Every row is the 0/1 indicator of a source-sink path."""
    m, n = problem.grid
    assert W.shape[1] == problem.n_decisions
    assert np.isin(W, [0.0, 1.0]).all()
    out_flow = np.zeros((W.shape[0], m * n))
    in_flow = np.zeros((W.shape[0], m * n))
    np.add.at(out_flow.T, problem.edges_[:, 0], W.T)
    np.add.at(in_flow.T, problem.edges_[:, 1], W.T)
    balance = np.zeros(m * n)
    balance[0], balance[-1] = 1.0, -1.0
    np.testing.assert_array_equal(
        out_flow - in_flow, np.broadcast_to(balance, W.shape[:1] + balance.shape)
    )


GRIDS = [(5, 5), (3, 4), (4, 2), (1, 4), (4, 1), (2, 2)]


def test_grid_edges_order_and_paths():
    problem = ShortestPathProblem()
    assert repr(problem) == "ShortestPathProblem(grid=(5, 5))"
    assert problem.n_params == problem.n_decisions == 40
    assert problem.n_paths == 70 == len(brute_paths(problem))
    # Documented order: per grid row, its east edges, then the south edges out of it.
    expected = []
    for r in range(5):
        expected += [(5 * r + c, 5 * r + c + 1) for c in range(4)]
        if r < 4:
            expected += [(5 * r + c, 5 * r + c + 5) for c in range(5)]
    np.testing.assert_array_equal(problem.edges_, expected)
    for grid in GRIDS:
        problem = ShortestPathProblem(grid)
        m, n = grid
        assert problem.n_params == m * (n - 1) + (m - 1) * n
        assert (
            len(brute_paths(problem)) == problem.n_paths == math.comb(m + n - 2, m - 1)
        )
        assert len({tuple(e) for e in problem.edges_}) == problem.n_params


@pytest.mark.parametrize("grid", GRIDS)
def test_shortest_path_dp_matches_brute_force(grid):
    problem = ShortestPathProblem(grid)
    P = brute_paths(problem)
    C = np.random.RandomState(0).normal(size=(300, problem.n_params))  # negative too
    W = problem.solve(C)
    assert_paths(problem, W)
    np.testing.assert_array_equal(W, P[np.argmin(C @ P.T, axis=1)])
    best, worst = problem.cost_range(C)
    np.testing.assert_allclose(best, (C @ P.T).min(axis=1), atol=1e-12)
    np.testing.assert_allclose(worst, (C @ P.T).max(axis=1), atol=1e-12)
    # best is exactly the cost of the nominal decision: its regret is 0.
    np.testing.assert_array_equal(best, problem.cost(C, W))


@pytest.mark.parametrize("grid", [(5, 5), (3, 4)])
def test_shortest_path_ties_follow_the_documented_order(grid):
    # Small integer costs: many exact ties, all methods must pick the first path.
    problem = ShortestPathProblem(grid)
    P = brute_paths(problem)
    rng = np.random.RandomState(1)
    C = rng.randint(0, 3, size=(500, problem.n_params)).astype(float)
    H = rng.randint(0, 2, size=C.shape).astype(float)
    first = P[np.argmin(C @ P.T, axis=1)]
    zero = np.zeros_like(C)
    np.testing.assert_array_equal(problem.solve(C), first)
    np.testing.assert_array_equal(problem.solve_robust(C, zero, "l2"), first)
    np.testing.assert_array_equal(problem.solve_robust(C, zero, "linf"), first)
    np.testing.assert_array_equal(
        problem.solve_robust(C, H, "linf"), P[np.argmin((C + H) @ P.T, axis=1)]
    )
    objective = C @ P.T + np.sqrt(H**2 @ P.T)
    np.testing.assert_array_equal(
        problem.solve_robust(C, H, "l2"), P[np.argmin(objective, axis=1)]
    )


def test_shortest_path_robust_against_brute_force():
    problem = ShortestPathProblem()
    P = brute_paths(problem)
    rng = np.random.RandomState(2)
    C = rng.uniform(0.5, 2.0, size=(400, 40))
    H = rng.uniform(0, 1.5, size=C.shape) * (rng.uniform(size=C.shape) < 0.7)
    W_inf = problem.solve_robust(C, H, "linf")
    assert_paths(problem, W_inf)
    np.testing.assert_array_equal(W_inf, problem.solve(C + H))
    W_2 = problem.solve_robust(C, H, "l2")
    assert_paths(problem, W_2)
    objective = C @ P.T + np.sqrt(H**2 @ P.T)
    np.testing.assert_array_equal(W_2, P[np.argmin(objective, axis=1)])
    # The robust decision has the best worst case, and a worse nominal cost.
    worst_case = problem.cost(C, W_2) + np.linalg.norm(H * W_2, axis=1)
    W_nom = problem.solve(C)
    nominal_worst = problem.cost(C, W_nom) + np.linalg.norm(H * W_nom, axis=1)
    assert (worst_case <= nominal_worst + 1e-12).all()
    assert (worst_case < nominal_worst - 1e-6).any()
    # Zero half-widths give the nominal decision.
    for norm in ("l2", "linf"):
        np.testing.assert_array_equal(
            problem.solve_robust(C, np.zeros_like(C), norm), W_nom
        )


@settings(max_examples=40, deadline=None)
@given(
    C=hnp.arrays(np.float64, (3, 12), elements=st.floats(-5, 5, width=32)),
    H=hnp.arrays(np.float64, (3, 12), elements=st.floats(0, 3, width=32)),
)
def test_shortest_path_l2_is_the_brute_force_minimum(C, H):
    problem = ShortestPathProblem((3, 3))
    P = brute_paths(problem)
    W = problem.solve_robust(C, H, "l2")
    assert_paths(problem, W)
    value = problem.cost(C, W) + np.linalg.norm(H * W, axis=1)
    np.testing.assert_allclose(
        value, (C @ P.T + np.sqrt(H**2 @ P.T)).min(axis=1), rtol=0, atol=1e-9
    )


def test_shortest_path_large_grids():
    problem = ShortestPathProblem((12, 12))
    assert problem.n_paths == math.comb(22, 11) > 200_000
    rng = np.random.RandomState(0)
    C = rng.uniform(size=(20, problem.n_params))
    H = rng.uniform(size=C.shape)
    assert_paths(problem, problem.solve_robust(C, H, "linf"))
    with pytest.raises(ValueError, match=r"too large for exact l2.*norm='linf'"):
        problem.solve_robust(C, H, "l2")
    # No rows: empty decisions of the right width.
    small = ShortestPathProblem()
    for norm in ("l2", "linf"):
        assert small.solve_robust(np.zeros((0, 40)), np.zeros((0, 40)), norm).shape == (
            0,
            40,
        )


@pytest.mark.parametrize(
    "problem",
    [ShortestPathProblem((3, 4)), PortfolioProblem(4, budget=2.0)],
    ids=repr,
)
def test_problems_pickle_and_deepcopy(problem):
    rng = np.random.RandomState(0)
    C = rng.normal(size=(20, problem.n_params))
    H = rng.uniform(size=C.shape)
    W = problem.solve_robust(C, H, "l2")  # fills the caches
    for other in (pickle.loads(pickle.dumps(problem)), copy.deepcopy(problem)):
        assert repr(other) == repr(problem)
        np.testing.assert_array_equal(other.solve_robust(C, H, "l2"), W)
        np.testing.assert_array_equal(other.solve(C), problem.solve(C))


# --- portfolio ---------------------------------------------------------------------


def portfolio_reference(mu, s, norm, budget):
    """Optimal worst-case return by cvxpy (norm None: nominal)."""
    w = cp.Variable(mu.shape[0])
    risk = 0 if norm is None else cp.norm(cp.multiply(s, w), 2 if norm == "l2" else 1)
    problem = cp.Problem(cp.Maximize(mu @ w - risk), [w >= 0, cp.sum(w) == budget])
    problem.solve(solver=cp.CLARABEL)
    return problem.value


def portfolio_instances():
    rng = np.random.RandomState(0)
    mu = rng.normal(0.05, 0.1, size=(40, 6))
    s = rng.uniform(0, 0.3, size=mu.shape)
    s[5:20] *= rng.uniform(size=(15, 6)) < 0.5  # some riskless assets
    s[20:23] = 0.0  # all riskless
    mu[23:26, 1] = mu[23:26, 4]  # ties
    s[23:26, 1] = s[23:26, 4]
    mu[26:29, 2] = mu[26:29].max(axis=1) + 0.01  # a dominant riskless asset
    s[26:29, 2] = 0.0
    mu[29:32] = 0.05  # equal returns
    s[32:35] = 1e-3  # nearly riskless everywhere
    return mu, s


@pytest.mark.parametrize("budget", [1.0, 2.5])
def test_portfolio_matches_cvxpy(budget):
    problem = PortfolioProblem(6, budget=budget)
    mu, s = portfolio_instances()
    decisions = {
        None: problem.solve(mu),
        "linf": problem.solve_robust(mu, s, "linf"),
        "l2": problem.solve_robust(mu, s, "l2"),
    }
    for norm, W in decisions.items():
        assert (W >= 0).all()
        np.testing.assert_allclose(W.sum(axis=1), budget, rtol=1e-12)
        if norm is None:
            ours = -problem.cost(mu, W)
        else:
            q = 2 if norm == "l2" else 1
            ours = -problem.cost(mu, W) - np.linalg.norm(s * W, ord=q, axis=1)
        ref = np.array([portfolio_reference(m, h, norm, budget) for m, h in zip(mu, s)])
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6, err_msg=str(norm))
    # Ties go to the lowest index for the vertex solutions.
    tied = np.array([[1.0, 3.0, 3.0, 0.0]])
    small = PortfolioProblem(4, budget=budget)
    assert small.solve(tied).tolist() == [[0.0, budget, 0.0, 0.0]]
    h = np.array([[0.0, 1.0, 0.0, 0.0]])
    assert small.solve_robust(tied + h, h, "linf").tolist() == [[0, budget, 0, 0]]
    # No risk at all: the nominal decision.
    np.testing.assert_array_equal(
        problem.solve_robust(mu, np.zeros_like(mu), "l2"), problem.solve(mu)
    )
    best, worst = problem.cost_range(mu)
    np.testing.assert_array_equal(best, problem.cost(mu, decisions[None]))
    np.testing.assert_allclose(worst, -budget * mu.min(axis=1))


@settings(max_examples=60, deadline=None)
@given(
    mu=hnp.arrays(np.float64, (4, 5), elements=st.floats(-1, 1, width=32)),
    s=hnp.arrays(np.float64, (4, 5), elements=st.floats(2**-6, 1, width=32)),
)
def test_portfolio_l2_has_no_improving_vertex(mu, s):
    # Frank-Wolfe certificate: for a concave objective on the simplex, the
    # decision is optimal iff no vertex improves its linearisation.
    V = PortfolioProblem(5).solve_robust(mu, s, "l2")
    assert (V >= 0).all()
    np.testing.assert_allclose(V.sum(axis=1), 1.0)
    radius = np.linalg.norm(s * V, axis=1, keepdims=True)
    grad = mu - s**2 * V / radius
    gap = grad.max(axis=1) - (grad * V).sum(axis=1)
    assert (gap <= 1e-8).all()


# --- general linear programs -------------------------------------------------------


def transportation():
    """2 suppliers (capacity 3 and 4) to 3 customers (demand 2 each)."""
    A_ub = np.kron(np.eye(2), np.ones((1, 3)))  # sum over customers <= capacity
    A_eq = np.kron(np.ones((1, 2)), np.eye(3))  # sum over suppliers == demand
    return LinearProblem(A_ub=A_ub, b_ub=[3, 4], A_eq=A_eq, b_eq=[2, 2, 2])


def knapsack_free():
    """A knapsack relaxation on [-1, 1]^4 with one budget row and one equality."""
    return LinearProblem(
        A_ub=[[1.0, 2.0, 1.0, 3.0]],
        b_ub=[2.0],
        A_eq=[[1, 1, 1, 1]],
        b_eq=[0.5],
        bounds=(-1, 1),
    )


def lp_constraints(problem, w):
    """The feasible set of a LinearProblem as cvxpy constraints on ``w``."""
    cons = []
    if problem.A_ub is not None:
        cons.append(problem.A_ub @ w <= problem.b_ub)
    if problem.A_eq is not None:
        cons.append(problem.A_eq @ w == problem.b_eq)
    for j, (lo, hi) in enumerate(zip(problem.lower_, problem.upper_)):
        if np.isfinite(lo):
            cons.append(w[j] >= lo)
        if np.isfinite(hi):
            cons.append(w[j] <= hi)
    return cons


def lp_reference(problem, c, h, norm):
    w = cp.Variable(problem.n_variables)
    cons = lp_constraints(problem, w)
    risk = 0 if norm is None else cp.norm(cp.multiply(h, w), 2 if norm == "l2" else 1)
    value = cp.Problem(cp.Minimize(c @ w + risk), cons).solve(solver=cp.CLARABEL)
    return value


def mixed_bounds():
    """Nonnegative, two-sided and upper-bounded variables, tied by one equality."""
    return LinearProblem(
        A_eq=[[1.0, 1.0, 1.0]], b_eq=[1.0], bounds=[(0, 2), (-1, 1), (None, 3)]
    )


@pytest.mark.parametrize("make", [transportation, knapsack_free, mixed_bounds])
def test_linear_problem_matches_cvxpy(make):
    problem = make()
    rng = np.random.RandomState(0)
    C = rng.normal(1.0, 1.0, size=(5, problem.n_variables))
    H = rng.uniform(0, 1.5, size=C.shape)
    H[0] = 0.0
    H[1, :2] = 0.0
    for norm in (None, "linf", "l2"):
        W = problem.solve(C) if norm is None else problem.solve_robust(C, H, norm)
        # Feasible ...
        if problem.A_ub is not None:
            assert (W @ problem.A_ub.T <= problem.b_ub + 1e-7).all()
        if problem.A_eq is not None:
            np.testing.assert_allclose(
                W @ problem.A_eq.T, problem.b_eq[None].repeat(5, 0), atol=1e-7
            )
        assert (W >= problem.lower_ - 1e-7).all() and (W <= problem.upper_ + 1e-7).all()
        # ... and optimal.
        q = 2 if norm == "l2" else 1
        ours = problem.cost(C, W) + (
            0 if norm is None else np.linalg.norm(H * W, ord=q, axis=1)
        )
        ref = [lp_reference(problem, c, h, norm) for c, h in zip(C, H)]
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6, err_msg=str(norm))
    # Zero half-widths: the nominal value.
    zero = np.zeros_like(C)
    for norm in ("linf", "l2"):
        np.testing.assert_allclose(
            problem.cost(C, problem.solve_robust(C, zero, norm)),
            problem.cost(C, problem.solve(C)),
            atol=1e-6,
        )
    best, worst = problem.cost_range(C)
    np.testing.assert_array_equal(best, problem.cost(C, problem.solve(C)))
    np.testing.assert_allclose(
        worst, [-lp_reference(problem, -c, None, None) for c in C], atol=1e-6
    )
    assert (worst >= best).all()


def test_linear_problem_pickles_after_l2():
    problem = transportation()
    C = np.random.RandomState(0).uniform(size=(2, 6))
    W = problem.solve_robust(C, 0.5 * C, "l2")
    for other in (pickle.loads(pickle.dumps(problem)), copy.deepcopy(problem)):
        np.testing.assert_allclose(other.solve_robust(C, 0.5 * C, "l2"), W, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        # x + y <= -1 with x, y >= 0.
        ({"A_ub": [[1.0, 1.0]], "b_ub": [-1.0]}, r"A_ub w <= b_ub, the bounds"),
        # x + y = 3 inside the unit box.
        ({"A_eq": [[1.0, 1.0]], "b_eq": [3.0], "bounds": (0, 1)}, "A_eq w = b_eq"),
        # Two inequalities that contradict each other, no bounds.
        (
            {"A_ub": [[1.0], [-1.0]], "b_ub": [0.0, -1.0], "bounds": (None, None)},
            "A_ub w <= b_ub",
        ),
    ],
)
def test_linear_problem_empty_polytope_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match="feasible set is empty") as info:
        LinearProblem(**kwargs)
    assert re.search(match, str(info.value))
    assert "phase-one" in str(info.value)
    # A polytope that is a single point is not empty.
    point = LinearProblem(A_ub=[[1.0, 1.0], [-1.0, -1.0]], b_ub=[0.0, 0.0])
    assert point.solve([[1.0, 2.0]]).tolist() == [[0.0, 0.0]]


def test_linear_problem_infeasible_unbounded_and_cost_range():
    free = LinearProblem(bounds=[(None, None), (0, 1)])
    with pytest.raises(ValueError, match=r"row 0 is unbounded.*HiGHS"):
        free.solve([[1.0, 1.0]])
    with pytest.raises(ValueError, match="unbounded"):
        free.solve_robust([[1.0, 1.0]], [[0.5, 0.0]], "linf")
    # Bounded below, unbounded above: a solvable problem whose regret has no scale.
    open_set = LinearProblem(A_ub=[[-1.0, -1.0]], b_ub=[-1.0])
    np.testing.assert_allclose(open_set.solve([[1.0, 2.0]]), [[1.0, 0.0]])
    with pytest.raises(ValueError, match="regret cannot be normalised.*add bounds"):
        open_set.cost_range([[1.0, 2.0]])


def test_linear_problem_l2_needs_cvxpy_only_without_an_interior(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # import cvxpy fails
    # The batched barrier solves l2 sets without cvxpy ...
    problem = transportation()
    W = problem.solve_robust(np.ones((3, 6)), np.ones((3, 6)), "l2")
    assert W.shape == (3, 6)
    # ... unless the polytope has no interior point (two inequalities that
    # make an equality), where the rows go to cvxpy.
    flat = LinearProblem(A_ub=[[1.0, 1.0], [-1.0, -1.0]], b_ub=[1.0, -1.0])
    with pytest.raises(ImportError, match=re.escape('"sklearn-ext[optimization]"')):
        flat.solve_robust(np.ones((1, 2)), np.ones((1, 2)), "l2")
    assert flat.solve_robust(np.ones((1, 2)), np.ones((1, 2)), "linf").shape == (1, 2)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("solver", ["primal-dual", "barrier"])
def test_batched_l2_solver_matches_cvxpy_on_random_polytopes(seed, solver):
    """Objective within 1e-6 relative of cvxpy's on every row, no fallback."""
    from sklearn_ext.robust_optimization._socp import (
        PolytopeBarrier,
        solve_primal_dual,
    )

    rng = np.random.default_rng(seed)
    n, m = rng.integers(3, 12), rng.integers(1, 8)
    A_ub = rng.uniform(-0.5, 1.0, (m, n))
    w_in = rng.uniform(0.2, 0.8, n)  # strictly inside the box and the rows
    b_ub = A_ub @ w_in + rng.uniform(0.1, 1.0, m)
    A_eq = rng.normal(size=(1, n)) if seed % 2 else None
    b_eq = A_eq @ w_in if seed % 2 else None
    problem = LinearProblem(A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1))
    C = rng.normal(size=(40, n))
    H = rng.uniform(0, 2, size=(40, n))
    barrier = PolytopeBarrier(A_ub, b_ub, A_eq, b_eq, problem.lower_, problem.upper_)
    if solver == "barrier":
        W, ok = barrier.solve(C, H)
    else:
        W, ok = solve_primal_dual(barrier, C, H)
    assert ok.all()
    ours = problem.cost(C, W) + np.linalg.norm(H * W, axis=1)
    ref = np.array([lp_reference(problem, c, h, "l2") for c, h in zip(C, H)])
    assert np.all(np.abs(ours - ref) <= 1e-6 * np.maximum(1.0, np.abs(ref)))
    assert (W @ A_ub.T <= b_ub + 1e-9).all() and (W >= -1e-9).all()
    if A_eq is not None:
        np.testing.assert_allclose(W @ A_eq.T, np.tile(b_eq, (40, 1)), atol=1e-9)


def test_primal_dual_path_matches_per_row_cvxpy_decisions():
    """The default l2 path against per-row cvxpy on the benchmark's LP.

    Stated tolerance: objective within 1e-7 relative (1e-7 absolute below
    1), decisions within 1e-4 (the programs are strictly convex along the
    polytope only where the half-widths are positive, so decisions are
    compared on rows with every half-width >= 0.1).
    """
    rng = np.random.default_rng(0)
    n, m = 10, 6
    A_ub = rng.uniform(0, 1, (m, n))
    problem = LinearProblem(
        A_ub=A_ub,
        b_ub=0.5 * A_ub.sum(1),
        A_eq=np.ones((1, n)),
        b_eq=[3.0],
        bounds=(0, 1),
    )
    assert problem.l2_solver == "primal-dual"
    C = rng.normal(size=(30, n))
    H = rng.uniform(0.1, 1.0, size=C.shape)
    W = problem.solve_robust(C, H, "l2")
    ours = problem.cost(C, W) + np.linalg.norm(H * W, axis=1)
    w = cp.Variable(n)
    c_par, h_par = cp.Parameter(n), cp.Parameter(n, nonneg=True)
    program = cp.Problem(
        cp.Minimize(c_par @ w + cp.norm(cp.multiply(h_par, w), 2)),
        lp_constraints(problem, w),
    )
    for i in range(C.shape[0]):
        c_par.value, h_par.value = C[i], H[i]
        value = program.solve(solver=cp.CLARABEL)
        assert abs(ours[i] - value) <= 1e-7 * max(1.0, abs(value)), i
        np.testing.assert_allclose(W[i], w.value, atol=1e-4, err_msg=str(i))
    # The earlier barrier path gives the same decisions.
    barrier = LinearProblem(
        A_ub=A_ub,
        b_ub=0.5 * A_ub.sum(1),
        A_eq=np.ones((1, n)),
        b_eq=[3.0],
        bounds=(0, 1),
        l2_solver="barrier",
    )
    np.testing.assert_allclose(barrier.solve_robust(C, H, "l2"), W, atol=1e-4)
    with pytest.raises(ValueError, match="l2_solver must be one of"):
        LinearProblem(A_ub=A_ub, b_ub=np.ones(m), l2_solver="clarabel")


def test_stacked_cost_range_matches_row_by_row():
    problem = transportation()
    C = np.random.default_rng(3).normal(size=(700, problem.n_variables))
    best, worst = problem.cost_range(C)  # two stacked programs (512 + 188 rows)
    ref_best, ref_worst = problem._cost_range_rows(C)
    np.testing.assert_allclose(best, ref_best, atol=1e-9)
    np.testing.assert_allclose(worst, ref_worst, atol=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "cannot infer the number of variables"),
        ({"bounds": (0, 1)}, "cannot infer"),
        ({"A_ub": [[1, 2]]}, "A_ub is given but b_ub is not"),
        ({"b_eq": [1]}, "b_eq is given but A_eq is not"),
        ({"A_ub": [[1, 2]], "b_ub": [1, 2]}, r"shapes \(1, 2\) and \(2,\)"),
        ({"A_ub": [[1, np.nan]], "b_ub": [1]}, "must be finite"),
        (
            {"A_ub": [[1, 2]], "b_ub": [1], "A_eq": [[1, 2, 3]], "b_eq": [1]},
            "A_ub has 2 columns, A_eq has 3 columns",
        ),
        ({"A_ub": [[1, 2]], "b_ub": [1], "bounds": [(0, 1)] * 3}, "bounds has 3 pairs"),
        ({"bounds": [(1, 0), (0, 1)]}, "lower <= upper"),
        ({"bounds": [(0, "a"), (0, 1)]}, "bounds must be"),
        ({"bounds": [(0, 1, 2)]}, "bounds must be"),
    ],
)
def test_linear_problem_bad_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearProblem(**kwargs)


def test_linear_problem_bounds_forms():
    from scipy.optimize import Bounds

    problem = LinearProblem(bounds=[(None, 1), (-2, None), (0, 0)])
    np.testing.assert_array_equal(problem.lower_, [-np.inf, -2, 0])
    np.testing.assert_array_equal(problem.upper_, [1, np.inf, 0])
    assert repr(problem) == "LinearProblem(n_variables=3, n_ub=0, n_eq=0)"
    same = LinearProblem(bounds=Bounds([-np.inf, -2, 0], [1, np.inf, 0]))
    np.testing.assert_array_equal(same.lower_, problem.lower_)
    default = LinearProblem(A_eq=[[1, 1]], b_eq=[1], bounds=None)
    np.testing.assert_array_equal(default.lower_, [0, 0])


# --- shared input checks ----------------------------------------------------------


PROBLEMS = [
    ShortestPathProblem((2, 3)),
    PortfolioProblem(4),
    LinearProblem(A_eq=[[1.0, 1.0, 1.0]], b_eq=[1.0], bounds=(0, 1)),
]


@pytest.mark.parametrize("problem", PROBLEMS, ids=repr)
def test_shared_checks_name_the_problem(problem):
    p = problem.n_params
    good = np.ones((2, p))
    name = re.escape(repr(problem))
    bad_params = [
        (np.ones((2, p + 1)), rf"shape \(n_samples, {p}\).*{name}.*\(2, {p + 1}\)"),
        (np.ones(p), rf"{name}.*got shape \({p},\)"),
        (np.full((2, p), np.nan), f"NaN or infinity; {name}"),
        (np.full((2, p), np.inf), f"NaN or infinity; {name}"),
        ([["a"] * p], f"numeric array for {name}"),
    ]
    for C, match in bad_params:
        for call in (
            lambda C=C: problem.solve(C),
            lambda C=C: problem.cost_range(C),
            lambda C=C: problem.cost(C, good),
            lambda C=C: problem.solve_robust(C, good, "l2"),
        ):
            with pytest.raises(ValueError, match=match):
                call()
    bad_widths = [
        (-good, rf"half_widths must be >= 0 for {name}"),
        (np.ones((3, p)), rf"shape of C_hat, \(2, {p}\), for {name}; got shape \(3"),
        (np.full((2, p), np.nan), f"half_widths contains NaN or infinity; {name}"),
    ]
    for H, match in bad_widths:
        with pytest.raises(ValueError, match=match):
            problem.solve_robust(good, H, "linf")
    for norm in ("l1", "L2", None, 2):
        with pytest.raises(ValueError, match=rf"norm must be one of.*{name}"):
            problem.solve_robust(good, good, norm)
    with pytest.raises(ValueError, match=rf"W must have shape \(2, {p}\).*{name}"):
        problem.cost(good, np.ones((3, p)))
    with pytest.raises(ValueError, match=f"W contains NaN or infinity; {name}"):
        problem.cost(good, np.full((2, p), np.nan))
    # Valid input is not modified.
    C, H = np.ones((2, p)), np.full((2, p), 0.5)
    problem.solve_robust(C, H, "linf")
    assert (C == 1).all() and (H == 0.5).all()
    assert isinstance(problem, BaseProblem)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ShortestPathProblem((1, 1)), "ShortestPathProblem: grid"),
        (lambda: ShortestPathProblem((0, 5)), "ShortestPathProblem: grid"),
        (lambda: ShortestPathProblem((2.0, 3)), "ShortestPathProblem: grid"),
        (lambda: ShortestPathProblem((True, 3)), "ShortestPathProblem: grid"),
        (lambda: ShortestPathProblem((2, 3, 4)), "ShortestPathProblem: grid"),
        (lambda: ShortestPathProblem(5), "ShortestPathProblem: grid"),
        (lambda: PortfolioProblem(0), "PortfolioProblem: n_assets"),
        (lambda: PortfolioProblem(2.5), "PortfolioProblem: n_assets"),
        (lambda: PortfolioProblem(3, budget=0), "PortfolioProblem: budget"),
        (lambda: PortfolioProblem(3, budget=np.inf), "PortfolioProblem: budget"),
    ],
)
def test_bad_problem_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# --- make_shortest_path ---------------------------------------------------------------


def test_make_shortest_path_shapes_and_seeding():
    X, C = make_shortest_path(50, 3, grid=(3, 4), random_state=0)
    assert X.shape == (50, 3) and C.shape == (50, ShortestPathProblem((3, 4)).n_params)
    X2, C2, coef = make_shortest_path(
        50, 3, grid=(3, 4), random_state=0, return_coef=True
    )
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(C, C2)
    assert coef.shape == (17, 3) and set(np.unique(coef)) <= {0.0, 1.0}
    # coef is the first draw of the generator.
    np.testing.assert_array_equal(
        coef, check_random_state(0).binomial(1, 0.5, size=(17, 3))
    )
    # Same coef, another seed: new samples of the same distribution.
    X3, C3, coef3 = make_shortest_path(
        50, 3, grid=(3, 4), coef=coef, random_state=1, return_coef=True
    )
    np.testing.assert_array_equal(coef3, coef)
    assert not np.allclose(X3, X)
    _, C4 = make_shortest_path(50, 3, grid=(3, 4), random_state=1)
    assert not np.allclose(C4, C)


@pytest.mark.parametrize("degree", [1, 2, 4])
@pytest.mark.parametrize("noise", [0.0, 0.5, 0.9])
def test_make_shortest_path_follows_the_formula(degree, noise):
    X, C, B = make_shortest_path(
        5000, 4, degree=degree, noise=noise, random_state=0, return_coef=True
    )
    mean = ((X @ B.T / 2.0 + 3.0) ** degree + 1.0) / 3.5**degree
    ratio = C / mean  # the multiplicative noise
    assert ratio.min() >= 1 - noise - 1e-12 and ratio.max() <= 1 + noise + 1e-12
    # E[c | x] is the formula: the noise has mean 1 and the uniform's variance.
    assert abs(ratio.mean() - 1.0) < 0.005
    np.testing.assert_allclose(ratio.var(), noise**2 / 3, atol=0.005)
    np.testing.assert_allclose((C - mean).mean(axis=0), 0.0, atol=0.05)
    if degree % 2 == 0:
        assert (C > 0).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_samples": 0},
        {"n_features": 0},
        {"degree": 0},
        {"degree": 1.5},
        {"noise": 1.0},
        {"noise": -0.1},
        {"grid": (1, 1)},
        {"grid": 5},
        {"coef": np.ones((40, 4))},
        {"coef": np.full((40, 5), np.nan)},
        {"random_state": "a"},
    ],
)
def test_make_shortest_path_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_shortest_path(**kwargs)


# ------------------------------------------------- rotated ellipsoids (shape)


def _problems_for_shapes():
    return [
        ShortestPathProblem((3, 3)),
        PortfolioProblem(n_assets=5),
        transportation(),
        mixed_bounds(),
    ]


@pytest.mark.parametrize("problem", _problems_for_shapes(), ids=repr)
def test_a_diagonal_shape_is_a_rescaled_axis_aligned_set(problem):
    rng = np.random.default_rng(0)
    d = problem.n_params
    C = rng.normal(1.0, 1.0, size=(6, d))
    H = rng.uniform(0.1, 1.0, size=(6, d))
    D = np.diag(rng.uniform(0.5, 2.0, d))
    # ||D^T (h * w)|| = ||(h * diag(D)) * w||: the same decisions.
    shaped = problem.solve_robust(C, H, "l2", shape=D)
    plain = problem.solve_robust(C, H * np.diag(D), "l2")
    assert_value = problem.cost(C, shaped) - problem.cost(C, plain)
    np.testing.assert_allclose(assert_value, 0.0, atol=1e-6)
    np.testing.assert_allclose(
        problem.solve_robust(C, H, "l2", shape=np.eye(d)),
        problem.solve_robust(C, H, "l2"),
        atol=1e-6,
    )


@pytest.mark.parametrize("make", [transportation, mixed_bounds])
def test_rotated_ellipsoid_lp_matches_cvxpy(make):
    problem = make()
    rng = np.random.default_rng(1)
    d = problem.n_variables
    M = np.tril(rng.normal(size=(d, d))) + 2 * np.eye(d)
    C = rng.normal(1.0, 1.0, size=(8, d))
    H = rng.uniform(0.1, 1.5, size=C.shape)
    W = problem.solve_robust(C, H, "l2", shape=M)
    ours = problem.cost(C, W) + np.linalg.norm((H * W) @ M, axis=1)
    for c, h, value in zip(C, H, ours):
        w = cp.Variable(d)
        objective = c @ w + cp.norm(M.T @ cp.multiply(h, w), 2)
        ref = cp.Problem(cp.Minimize(objective), lp_constraints(problem, w)).solve(
            solver=cp.CLARABEL
        )
        assert abs(value - ref) <= 1e-6 * max(1.0, abs(ref))


def test_rotated_ellipsoid_portfolio_matches_cvxpy():
    problem = PortfolioProblem(n_assets=6)
    rng = np.random.default_rng(2)
    M = np.linalg.cholesky(np.full((6, 6), 0.7) + 0.3 * np.eye(6))
    mu = rng.normal(0.1, 0.05, size=(5, 6))
    S = rng.uniform(0.05, 0.3, size=mu.shape)
    W = problem.solve_robust(mu, S, "l2", shape=M)
    np.testing.assert_allclose(W.sum(1), 1.0, atol=1e-9)
    assert (W >= 0).all()
    ours = -(mu * W).sum(1) + np.linalg.norm((S * W) @ M, axis=1)
    for m_row, s_row, value in zip(mu, S, ours):
        w = cp.Variable(6)
        objective = -m_row @ w + cp.norm(M.T @ cp.multiply(s_row, w), 2)
        ref = cp.Problem(cp.Minimize(objective), [w >= 0, cp.sum(w) == 1]).solve(
            solver=cp.CLARABEL
        )
        assert abs(value - ref) <= 1e-6 * max(1.0, abs(ref))


def test_shape_errors_name_the_problem():
    problem = PortfolioProblem(n_assets=3)
    C, H = np.ones((1, 3)), np.ones((1, 3))
    with pytest.raises(ValueError, match="needs norm='l2'"):
        problem.solve_robust(C, H, "linf", shape=np.eye(3))
    with pytest.raises(ValueError, match=r"shape must be a \(3, 3\) matrix"):
        problem.solve_robust(C, H, "l2", shape=np.eye(2))
    with pytest.raises(ValueError, match="shape contains NaN"):
        problem.solve_robust(C, H, "l2", shape=np.full((3, 3), np.nan))
