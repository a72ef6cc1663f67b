"""Graph-guided multi-task regression: last-iterate rates and speed against peers.

Part 1, the paper's claim. On the planted problem (30 tasks, 3 groups on a
stochastic-block graph, 200 samples per task, 20 features, alpha=0.05), both
solvers run 1e5 iterations with the theory's steps eta0/sqrt(t+1) (eta0="auto");
f(w_T) - f* is recorded for the last and the averaged iterate, with Gaussian and
Student-t (2.5 degrees of freedom) noise, and the log-log slope over T in
[1e3, 1e5] is fitted (the theory bounds the last iterate's rate by ~ -1/2).
f* is the exact optimum (cvxpy/Clarabel on the per-task sufficient statistics,
checked against the plain formulation).

Part 2, speed: the whole time a user waits for 1e-3 relative suboptimality,
each method once, in its own process (limit ``PEER_TIMEOUT``), on

- the 30-task stochastic-block problem of part 1 at 1e4, 1e5 and 1e6 samples;
- large sparse task graphs (``_graph_guided_data.make_large_graph``: a ring
  lattice plus random chords, about 5 edges per node, contiguous groups) with
  1e3 and 1e4 tasks, 1e6 samples;

all with 20 features, noise 1, alpha=0.05 and ``standardize=False`` (the
problem the cvxpy references solve). f* is cvxpy/Clarabel on the per-task
sufficient statistics (``gram_optimum``), itself one of the timed peers; where
it fails (on the 1e4-task graph Clarabel's factorisation asks for ~34 GB), the
value of this file's dual FISTA on the same statistics, certified by a duality
gap below 1e-10 (a peer too, and a check of gram_optimum everywhere else).
Methods:

- sklearn_ext ``prox_sgd``, ``rip`` (matching + edge memory, the default),
  ``rip textbook`` (one uniform edge per step, no memory), ``rip, no memory``
  and ``rip uniform + memory``: one run of the solver with a callback that
  evaluates the objective at ~4 log-spaced iterations per decade, off the
  clock, and stops at the first check within 1e-3, or at ``MAX_ITER``
  iterations or ``SOLVER_SECONDS`` of solver time (then the status says so);
- ``prox_sgd default fit`` and ``rip default fit``: ``GraphGuidedRegressor``
  at its defaults (tol=1e-4, max_iter) with ``standardize=False``: the wall
  time of ``fit``, and the accuracy it stopped at;
- cvxpy (Clarabel) on the plain formulation and on the sufficient statistics;
- dual FISTA on the sufficient statistics, to a certified duality gap;
- copt 0.9.2's primal-dual (Condat-Vu) splitting (30-task problem only).

Part 3, standardisation (``graph_guided_standardize``): one task (no graph
term), ``load_diabetes(scaled=False)``, 5 random splits with a quarter held
out; ``GraphGuidedRegressor(random_state=seed)`` at its defaults
(``standardize=True``) and with ``standardize=False``, against least squares
(``LinearRegression``): held-out R^2, iterations, and whether ``fit`` warned
that it stopped at ``max_iter`` without converging.

Part 4, held-out error (``graph_guided_heldout``): a small planted problem
(10 tasks, 2 groups, 40 training rows per task, 20 features, noise 2), 5
seeds; alpha chosen by 5-fold ``GridSearchCV`` for both solvers at their
defaults, against the exact network-lasso optimum (cvxpy, alpha chosen on the
same folds) and per-task ``RidgeCV``: held-out MSE ratios with paired
intervals, the refit's relative gap and the ``ConvergenceWarning`` counts.

Part 6, RIP's step (``graph_guided_rip_step``): default RIP fits whose
step is a fixed fraction of the smoothness step, over alpha, on three planted
problems: the relative gap and warnings that set the rule of the automatic
step (``rip_step_fraction``).

Part 5, a speed part (``graph_guided_inner_tol``): prox-SGD's relative gap
after a fixed solver time against ``inner_tol`` on graphs of 30, 300 and 1000
tasks; it sets the rule of ``inner_tol="auto"``.

Run ``python benchmarks/bench_graph_guided.py [--quick] [--parts P,...]
[--speed-only] [--large-only]``: ``--parts`` picks among ``rates``,
``standardize``, ``heldout``, ``ripstep``, ``innertol`` and ``speed`` (all by
default), ``--quick`` is a smoke run on
small sizes, ``--speed-only`` is ``--parts speed``, ``--large-only`` runs part 2
on the large graphs only (into ``results/graph_guided_speed_large.*``, leaving
the full table as it is). The speed table is rewritten after each problem, so
an interrupted run keeps the problems done.
"""

import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import RESULTS, measure, peak_memory, write_results
from _graph_guided_data import make_large_graph, n_edges
from graph_guided_reference import gram_optimum
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.datasets import make_graph_multitask
from sklearn_ext.linear_model import GraphGuidedRegressor, GraphGuidedRegressorCV
from sklearn_ext.linear_model._graph_guided_solver import objective, solve

ALPHA, N_TASKS, N_FEATURES = 0.05, 30, 20
# Our variants: the two solvers at their defaults, and RIP with 8 uniform edge
# proxes per iteration (less variance from sampling edges; edges_per_step acts
# only with edge_sampling="uniform", the default draws one matching).
VARIANTS = {
    "prox_sgd": {"solver": "prox_sgd"},
    "rip": {"solver": "rip"},
    "rip, 8 edges/step": {
        "solver": "rip",
        "edge_sampling": "uniform",
        "edges_per_step": 8,
    },
}
TARGET = 1e-3


def _data(n_total, noise_dist="gaussian", seed=0):
    return make_graph_multitask(
        n_tasks=N_TASKS,
        n_samples_per_task=n_total // N_TASKS,
        n_features=N_FEATURES,
        noise=1.0,
        noise_dist=noise_dist,
        random_state=seed,
    )


def _model(data, **params):
    return GraphGuidedRegressor(
        alpha=ALPHA,
        graph=data.adjacency,
        task_column=0,
        tol=None,
        random_state=0,
        **params,
    )


def _probe(data):
    """A one-iteration fit: it carries the tasks and edges of the problem."""
    probe = _model(data, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return probe.fit(data.data, data.target)


def _f_star(data):
    return gram_optimum(_probe(data), data.data, data.target)[0]


# --- part 1: rates ------------------------------------------------------------


def rates(max_iter):
    rows, curves = [], {}
    for noise in ("gaussian", "student_t"):
        data = _data(N_TASKS * 200, noise, seed=1)
        f_star = _f_star(data)
        for solver, params in VARIANTS.items():
            start = time.perf_counter()
            model = _model(data, max_iter=max_iter, record_objective=True, **params)
            model.fit(data.data, data.target)
            seconds = time.perf_counter() - start
            curve = model.objective_curve_
            T = curve[:, 0]
            curves[(noise, solver)] = (T, curve[:, 1] - f_star, curve[:, 2] - f_star)
            for which, col in (("last", 1), ("average", 2)):
                gap = np.maximum(curve[:, col] - f_star, 1e-16)
                row = {"noise": noise, "solver": solver, "iterate": which}
                for power in range(2, int(math.log10(max_iter)) + 1):
                    hit = np.flatnonzero(T == 10**power)
                    row[f"T=1e{power}"] = (
                        float(gap[hit[0]]) if hit.size else float("nan")
                    )
                window = (T >= min(1e3, max_iter / 10)) & (T <= max_iter)
                slope = np.polyfit(np.log10(T[window]), np.log10(gap[window]), 1)[0]
                row["slope"] = float(slope)
                row["f*"] = f_star
                row["fit seconds"] = seconds
                rows.append(row)
    return rows, curves


def plot_rates(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, noise in zip(axes, ("gaussian", "student_t")):
        for solver, color in zip(VARIANTS, ("C0", "C1", "C2")):
            T, last, avg = curves[(noise, solver)]
            ax.loglog(T, np.maximum(last, 1e-12), color=color, label=f"{solver} last")
            ax.loglog(
                T,
                np.maximum(avg, 1e-12),
                color=color,
                ls="--",
                label=f"{solver} average",
            )
        ref = T[T >= 100]
        ax.loglog(
            ref, last[T >= 100][0] * (ref / ref[0]) ** -0.5, "k:", label="slope -1/2"
        )
        ax.set_title(f"{noise} noise")
        ax.set_xlabel("iteration T")
    axes[0].set_ylabel("f(w_T) - f*")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# --- part 2: speed, one process per method and problem --------------------------

# Budgets of the full run (--quick shrinks them, see QUICK_BUDGET), sized so
# that the whole speed part takes about half an hour on 2 CPUs.
PEER_TIMEOUT = 150  # wall-clock seconds of each method's process
SOLVER_SECONDS = 30  # solver time of a solve() run (checks off the clock)
MAX_ITER = 200_000  # iterations of a solve() run
MAX_PEER_ITER = 20_000  # iterations of copt
# The duality-gap certificate of f*: relative gap to reach, and its time limit.
CERT_RTOL, CERT_SECONDS = 1e-10, 300
CHECKS_PER_DECADE = 4
BUDGET = {
    "seconds": SOLVER_SECONDS,
    "max_iter": MAX_ITER,
    "peer_iter": MAX_PEER_ITER,
    "timeout": PEER_TIMEOUT,
}
QUICK_BUDGET = {
    "seconds": 1,
    "max_iter": 5_000,
    "peer_iter": 500,
    "timeout": 60,
}
SBM_SIZES, QUICK_SBM_SIZES = [10_000, 1_000_000], [3_000, 30_000]
LARGE_GRAPHS = [(1_000, 1_000_000), (10_000, 1_000_000)]  # (tasks, samples)
QUICK_LARGE_GRAPHS = [(200, 20_000)]

SOLVE_VARIANTS = {
    "prox_sgd": {"solver": "prox_sgd"},
    "rip": {"solver": "rip"},
    "rip textbook": {"solver": "rip", "edge_sampling": "uniform", "edge_memory": False},
    "rip, no memory": {"solver": "rip", "edge_memory": False},
    "rip uniform + memory": {"solver": "rip", "edge_sampling": "uniform"},
}
DEFAULT_FITS = {
    "prox_sgd default fit": {"solver": "prox_sgd"},
    "rip default fit": {"solver": "rip"},
}
GRAM = "cvxpy, sufficient statistics"
CERT = "dual FISTA, sufficient statistics"
METHODS = (*SOLVE_VARIANTS, *DEFAULT_FITS, "cvxpy", GRAM, CERT, "copt")


def _speed_data(problem):
    if problem["graph"] == "sbm":
        return _data(problem["n_samples"])
    return make_large_graph(
        problem["n_tasks"], problem["n_samples"], N_FEATURES, noise=1.0, seed=0
    )


def _speed_probe(data):
    """A one-iteration fit that carries the problem's tasks and edges.

    RIP with one uniform edge, no memory and a fixed step: it computes neither
    a step size nor an edge colouring, so that the solver's own set-up stays in
    the solver's time.
    """
    probe = GraphGuidedRegressor(
        alpha=ALPHA,
        graph=data.adjacency,
        task_column=0,
        standardize=False,
        solver="rip",
        edge_sampling="uniform",
        edge_memory=False,
        eta0=1.0,
        max_iter=1,
        tol=None,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return probe.fit(data.data, data.target)


def _marks(max_iter):
    """Iterations of the checks: round(10^(k / CHECKS_PER_DECADE)), and the last."""
    k = np.arange(int(CHECKS_PER_DECADE * math.log10(max_iter)) + 1)
    marks = np.unique(np.round(10.0 ** (k / CHECKS_PER_DECADE)).astype(int))
    return set(marks[marks <= max_iter].tolist()) | {max_iter}


def _solve_run(data, params, f_star, budget):
    """One solver run to TARGET, timed without its checks (see the notes)."""
    X, y = data.data, data.target
    p = GraphGuidedRegressor(standardize=False, random_state=0, **params).get_params()
    max_iter, seconds = budget["max_iter"], budget["seconds"]
    marks = _marks(max_iter)
    out = {"trace": []}

    def run():
        start = time.perf_counter()
        probe = _speed_probe(data)
        Xv, feats, labels, _ = probe._validate(X, fitting=False)
        problem = probe._problem(
            Xv,
            feats,
            probe._encode_targets(y),
            probe._task_indices(labels),
            "squared",
            1,
            probe._edges,
            None,
        )
        out["setup"] = time.perf_counter() - start
        clock = {"spent": 0.0, "since": 0.0}

        def check(t, W, B):
            spent = clock["spent"] + time.perf_counter() - clock["since"]
            over = spent >= seconds
            if t not in marks and not over:
                return False
            clock["spent"] = spent
            f = objective(problem, W, B)
            rel = (f - f_star) / f_star
            out["trace"].append([t, spent, rel])
            out.update(t=t, spent=spent, f=f, rel=rel, over=over)
            clock["since"] = time.perf_counter()
            return rel <= TARGET or over

        clock["since"] = time.perf_counter()
        solve(
            problem,
            solver=p["solver"],
            batch_size=p["batch_size"],
            edges_per_step=p["edges_per_step"],
            edge_sampling=p["edge_sampling"],
            edge_memory=p["edge_memory"],
            eta0=None if p["eta0"] == "auto" else p["eta0"],
            max_iter=max_iter,
            tol=None,
            inner_max_iter=p["inner_max_iter"],
            inner_tol=p["inner_tol"],
            rng=check_random_state(p["random_state"]),
            callback=check,
        )

    peak, _ = peak_memory(run)
    result = {
        "peak_mb": peak,
        "iterations": out["t"],
        "f": out["f"],
        "setup_seconds": out["setup"],
        "solver_seconds": out["spent"],
        "trace": out["trace"],
    }
    if out["rel"] <= TARGET:
        result["seconds"] = out["setup"] + out["spent"]
    else:
        which = "time" if out["over"] else "iteration"
        result["status"] = (
            f"not within {TARGET} after {out['t']} iterations / "
            f"{out['spent']:.0f} s ({which} budget)"
        )
    return result


def _default_fit(data, params, f_star):
    """``fit`` at the estimator's defaults (standardize=False), as a user waits."""
    X, y = data.data, data.target
    model = GraphGuidedRegressor(
        alpha=ALPHA,
        graph=data.adjacency,
        task_column=0,
        standardize=False,
        random_state=0,
        **params,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        stats, model = measure(lambda: model.fit(X, y), repeat=1, warmup=False)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    f = model.objective(X, y)
    rel = (f - f_star) / f_star
    stop = (
        f"ConvergenceWarning (stopped at max_iter={model.max_iter})"
        if warned
        else f"stopped by tol={model.tol}"
    )
    within = "within" if rel <= TARGET else "not within"
    return {
        **stats,
        "iterations": int(model.n_iter_),
        "f": f,
        "convergence_warning": warned,
        "device": model.device_,
        "status": f"{stop}; {within} {TARGET} (device {model.device_})",
    }


def worker(spec):
    """Run one method on one problem in this process; print a JSON line."""
    method, f_star, budget = spec["method"], spec["f_star"], spec["budget"]
    data = _speed_data(spec["problem"])
    X, y = data.data, data.target
    if method in SOLVE_VARIANTS:
        result = _solve_run(data, SOLVE_VARIANTS[method], f_star, budget)
    elif method in DEFAULT_FITS:
        result = _default_fit(data, DEFAULT_FITS[method], f_star)
    elif method in ("cvxpy", GRAM):
        from graph_guided_reference import cvxpy_optimum

        reference = cvxpy_optimum if method == "cvxpy" else gram_optimum
        probe = _speed_probe(data)
        stats, out = measure(lambda: reference(probe, X, y), repeat=1, warmup=False)
        result = {**stats, "f": out[0]}
    elif method == CERT:
        probe = _speed_probe(data)
        seconds = min(CERT_SECONDS, 0.8 * budget["timeout"])
        stats, out = measure(
            lambda: _dual_certificate(probe, X, y, CERT_RTOL, seconds),
            repeat=1,
            warmup=False,
        )
        result = {**stats, **out}
    else:
        result = _copt(data, f_star * (1 + TARGET), budget)
    print(json.dumps(result), flush=True)


def _dual_certificate(model, X, y, rtol, seconds):
    """f* to a certified relative duality gap ``rtol``, from sufficient statistics.

    The squared-loss problem (no task penalty, with intercepts) is
    ``f(V) = 1/(2n) sum_t (v_t' G_t v_t - 2 h_t' v_t + c_t) + sum_e r_e ||w_s -
    w_q||`` with ``v_t = (w_t, b_t)``, ``G_t = X~_t' X~_t``, ``h_t = X~_t' y_t``,
    ``c_t = |y_t|^2`` and ``r_e = alpha a_e``. With ``||w_s - w_q|| = max over
    ||u_e|| <= 1 of u_e' (w_s - w_q)``, its dual is the maximum over the balls
    ``||u_e|| <= r_e`` of ``g(U) = 1/(2n) sum_t (c_t - k_t' G_t^-1 k_t)``,
    ``k_t = h_t - n (D' U)_t`` (D the edge incidence, an intercept entry of 0),
    a smooth concave function whose gradient is ``D W(U)`` with ``v_t(U) =
    G_t^-1 k_t``. Projected FISTA with gradient restarts maximises it; every
    ``g(U)`` bounds f* from below and every ``f(V(U))`` from above, so the run
    stops once their relative gap is below ``rtol`` (or after ``seconds``).
    Needs every task's Gram matrix invertible (more samples than features).
    """
    from scipy import sparse
    from scipy.sparse.linalg import eigsh

    if not model.fit_intercept or model.task_alpha:
        raise ValueError("the certificate is written for intercepts, no task term")
    start = time.perf_counter()
    c = model.task_column_index_
    feats = np.delete(np.arange(X.shape[1]), c)
    task = np.searchsorted(model.tasks_, X[:, c].astype(int))
    T, d, n = len(model.tasks_), len(feats), X.shape[0]
    order = np.argsort(task, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(task, minlength=T))])
    Xs = np.column_stack([X[order][:, feats], np.ones(n)])
    ys = np.asarray(y, dtype=float)[order]
    G = np.empty((T, d + 1, d + 1))
    h = np.empty((T, d + 1))
    cc = np.empty(T)
    for t in range(T):
        rows = slice(bounds[t], bounds[t + 1])
        G[t] = Xs[rows].T @ Xs[rows]
        h[t] = Xs[rows].T @ ys[rows]
        cc[t] = ys[rows] @ ys[rows]
    del Xs, ys
    eig = np.linalg.eigvalsh(G)
    if not np.all(eig[:, 0] > 1e-10 * eig[:, -1]):
        raise ValueError("a task's Gram matrix is singular")
    Ginv = np.linalg.inv(G)
    src = np.searchsorted(model.tasks_, model.edges_[:, 0])
    dst = np.searchsorted(model.tasks_, model.edges_[:, 1])
    radii = model.alpha * np.asarray(model.edge_weights_, dtype=float)
    m = len(src)
    D = sparse.csr_matrix(
        (
            np.concatenate([np.ones(m), -np.ones(m)]),
            (np.tile(np.arange(m), 2), np.concatenate([src, dst])),
        ),
        shape=(m, T),
    )
    DT = D.T.tocsr()
    laplacian = (DT @ D).astype(float)
    if T <= 500:
        lap_norm = float(np.linalg.eigvalsh(laplacian.toarray())[-1])
    else:
        lap_norm = float(eigsh(laplacian, k=1, which="LA", tol=1e-8)[0][0])
    # the gradient's Lipschitz constant, with a margin for the eigenvalue's error
    lipschitz = 1.01 * n * lap_norm * float(np.linalg.eigvalsh(Ginv[:, :d, :d]).max())
    total_c = float(cc.sum())

    def primal_of(U):
        k = h.copy()
        k[:, :d] -= n * (DT @ U)
        return np.einsum("tij,tj->ti", Ginv, k), k

    def bounds_at(U):
        V, k = primal_of(U)
        lower = 0.5 * (total_c - np.einsum("ti,ti->", k, V)) / n
        quad = np.einsum("ti,tij,tj->", V, G, V) - 2 * np.sum(V * h) + total_c
        norms = np.linalg.norm(D @ V[:, :d], axis=1)
        return 0.5 * quad / n + float(radii @ norms), lower

    def project(U):
        norms = np.linalg.norm(U, axis=1)
        return U * np.minimum(1.0, radii / np.maximum(norms, 1e-300))[:, None]

    U = np.zeros((m, d))
    Y, theta = U, 1.0
    upper, lower, iters = bounds_at(U)[0], -math.inf, 0
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            V, _ = primal_of(Y)
            U_next = project(Y + (D @ V[:, :d]) / lipschitz)
            if np.sum((Y - U_next) * (U_next - U)) > 0:  # restart the momentum
                theta = 1.0
            theta_next = (1 + math.sqrt(1 + 4 * theta * theta)) / 2
            Y = U_next + ((theta - 1) / theta_next) * (U_next - U)
            U, theta = U_next, theta_next
        iters += 50
        f_up, f_low = bounds_at(U)
        upper, lower = min(upper, f_up), max(lower, f_low)
        if upper - lower <= rtol * abs(lower):
            break
    return {
        "f": upper,
        "f_lower": lower,
        "gap": (upper - lower) / abs(lower),
        "iterations": iters,
    }


def _edges(data):
    src, dst = np.nonzero(np.triu(data.adjacency, k=1))
    return np.column_stack([src, dst])


def _copt(data, threshold, budget):
    import copt
    from copt.penalty import GroupL1
    from scipy import sparse

    X, y = data.data, data.target
    n, d, T = len(y), N_FEATURES, N_TASKS
    state = {"iters": 0, "f": math.inf, "over": False}

    def build_and_run():
        start = time.perf_counter()
        task = X[:, 0].astype(int)
        F = X[:, 1:]
        edges = _edges(data)
        m = len(edges)
        rows = np.repeat(np.arange(m), 2)
        D = sparse.csr_matrix(
            (np.tile([1.0, -1.0], m), (rows, edges.ravel())), shape=(m, T)
        )
        # x = [vec(W) (T*d), B (T)]; L x = vec(D W) with contiguous edge blocks.
        L = sparse.hstack(
            [sparse.kron(D, sparse.eye(d)), sparse.csr_matrix((m * d, T))]
        ).tocsr()
        groups = [np.arange(e * d, (e + 1) * d) for e in range(m)]
        penalty = GroupL1(ALPHA, groups)
        Xt = np.column_stack([F, np.ones(n)])
        G = np.zeros((T, d + 1, d + 1))
        h = np.zeros((T, d + 1))
        for t in range(T):
            G[t] = Xt[task == t].T @ Xt[task == t]
            h[t] = Xt[task == t].T @ y[task == t]
        yy = float(y @ y)

        def unpack(x):
            return x[: T * d].reshape(T, d), x[T * d :]

        def f_grad(x, return_gradient=True):
            W, B = unpack(x)
            r = np.einsum("nd,nd->n", F, W[task]) + B[task] - y
            value = 0.5 * float(r @ r) / n
            if not return_gradient:
                return value
            gW = np.zeros((T, d))
            np.add.at(gW, task, r[:, None] * F)
            gB = np.bincount(task, weights=r, minlength=T)
            return value, np.concatenate([gW.ravel(), gB]) / n

        def objective_(x):  # from the sufficient statistics: cheap at any n
            W, B = unpack(x)
            V = np.column_stack([W, B])
            quad = np.einsum("ti,tij,tj->", V, G, V) - 2 * np.sum(V * h) + yy
            return 0.5 * quad / n + penalty(L @ x)

        def callback(frame):  # copt passes its local variables; False stops it
            state["iters"] += 1
            state["f"] = objective_(frame["x"])
            state["over"] = time.perf_counter() - start >= budget["seconds"]
            return state["f"] > threshold and not state["over"]

        # copt's default first step (1.0) is far below 1/L here; give it 1/L of
        # the data term, from the per-task Gram matrices, and let its line
        # search adapt; and a dual step with step * step2 * ||L||^2 = 1.
        lipschitz = max(np.linalg.eigvalsh(G[t])[-1] for t in range(T)) / n
        norm_L2 = float(np.linalg.eigvalsh((D.T @ D).toarray())[-1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its warning at max_iter
            return copt.minimize_primal_dual(
                f_grad,
                np.zeros(T * (d + 1)),
                prox_2=penalty.prox,
                L=L,
                step_size=1.0 / lipschitz,
                step_size2=lipschitz / norm_L2,
                callback=callback,
                max_iter=budget["peer_iter"],
                tol=1e-14,
            )

    stats, _ = measure(build_and_run, repeat=1, warmup=False)
    result = {"peak_mb": stats["peak_mb"], "iterations": state["iters"]}
    result["f"] = state["f"]
    if state["f"] <= threshold:
        result["seconds"] = stats["seconds"]
    else:
        which = "time" if state["over"] else "iteration"
        result["status"] = (
            f"not within {TARGET} after {state['iters']} iterations / "
            f"{stats['seconds']:.0f} s ({which} budget)"
        )
    return result


def _run_worker(spec, timeout):
    cmd = [sys.executable, __file__, "--worker", json.dumps(spec)]
    start = time.perf_counter()
    try:
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=Path(__file__).parent,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"timeout after {timeout} s"}
    lines = out.stdout.strip().splitlines()
    if out.returncode == 0 and lines:
        result = json.loads(lines[-1])
    else:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        result = {"status": f"failed (exit {out.returncode}): {last}"}
    result["process_seconds"] = time.perf_counter() - start
    return result


def speed_problems(quick, large_only):
    sbm = QUICK_SBM_SIZES if quick else SBM_SIZES
    large = QUICK_LARGE_GRAPHS if quick else LARGE_GRAPHS
    problems = (
        []
        if large_only
        else [{"graph": "sbm", "n_tasks": N_TASKS, "n_samples": n} for n in sbm]
    )
    problems += [
        {"graph": "ring+chords", "n_tasks": T, "n_samples": n} for T, n in large
    ]
    return problems


def speed(problems, budget, rows, on_problem=None):
    """Run every method on every problem; append the rows to ``rows``."""
    for problem in problems:
        data = _speed_data(problem)
        info = {
            "graph": problem["graph"],
            "n_tasks": problem["n_tasks"],
            "n_edges": n_edges(data.adjacency),
            "n_samples": len(data.target),
        }
        del data
        spec = {"problem": problem, "budget": budget}
        print(f"# {info}: f* ...", flush=True)
        results = {}
        for method in (GRAM, CERT):
            results[method] = _run_worker(
                {**spec, "method": method, "f_star": None}, budget["timeout"]
            )
            print(json.dumps({"method": method, **results[method]}), flush=True)
        f_star, source = _choose_f_star(results)
        if f_star is None:
            results[GRAM]["status"] += "; no f*, the other methods were not run"
        else:
            for method in METHODS:
                if method in (GRAM, CERT) or (
                    method == "copt" and problem["graph"] != "sbm"
                ):
                    continue
                results[method] = _run_worker(
                    {**spec, "method": method, "f_star": f_star}, budget["timeout"]
                )
                print(
                    json.dumps({"method": method, **_brief(results[method])}),
                    flush=True,
                )
        reference = results.get("prox_sgd", {}).get("seconds")
        for method in METHODS:
            if method not in results:
                continue
            row = {**info, "method": method, **results[method]}
            row.update({"f*": f_star, "f* from": source})
            if f_star is not None and "f" in row:
                row["rel. subopt."] = (row["f"] - f_star) / f_star
            if reference and "seconds" in row:
                row["ratio to prox_sgd"] = row["seconds"] / reference
            rows.append(row)
        if on_problem is not None:
            on_problem(rows)
    return rows


def _choose_f_star(results):
    """f* and its source: gram_optimum, or the certificate where it failed.

    Sets the status of the two rows.
    """
    gram, cert = results[GRAM], results[CERT]
    certified = "f" in cert and cert["gap"] <= 1e-6
    if "f" in cert:
        cert["status"] = f"relative duality gap {cert['gap']:.1e}"
    if "f" in gram:
        gram["status"] = "its value is f*"
        if certified:
            diff = (gram["f"] - cert["f"]) / cert["f"]
            cert["status"] += f"; gram_optimum's f* is {diff:+.1e} (relative) off"
        return gram["f"], GRAM
    if certified:
        cert["status"] += "; its value is f* (gram_optimum failed)"
        return cert["f"], CERT
    return None, None


def _brief(result):
    return {k: v for k, v in result.items() if k != "trace"}


PARTS = ("rates", "standardize", "heldout", "ripstep", "innertol", "speed")


def _parts(argv):
    if "--speed-only" in argv or "--large-only" in argv:
        return ["speed"]
    if "--parts" not in argv:
        return list(PARTS)
    at = argv.index("--parts")
    chosen = argv[at + 1].split(",") if at + 1 < len(argv) else []
    unknown = set(chosen) - set(PARTS)
    if not chosen or unknown:
        raise SystemExit(f"--parts takes a comma-separated subset of {PARTS}")
    return chosen


def main():
    quick = "--quick" in sys.argv
    large_only = "--large-only" in sys.argv
    parts = _parts(sys.argv)
    max_iter = 2_000 if quick else 100_000
    if "rates" in parts:
        rates_part(max_iter)
    if "standardize" in parts:
        standardize_part(range(2 if quick else 5))
    if "heldout" in parts:
        default_fits()
        heldout_part(range(2 if quick else 5))
    if "ripstep" in parts:
        ripstep_part()
    if "innertol" in parts:
        innertol_part(
            INNER_PROBLEMS[:3] if quick else INNER_PROBLEMS, 0.3 if quick else 1.0
        )
    if "speed" in parts:
        speed_part(
            speed_problems(quick, large_only),
            QUICK_BUDGET if quick else BUDGET,
            # a run of the large graphs alone keeps the full table
            "graph_guided_speed_large" if large_only else "graph_guided_speed",
        )


def rates_part(max_iter):
    rate_rows, curves = rates(max_iter)
    plot_rates(curves, RESULTS / "graph_guided_rates.png")
    power_cols = [f"T=1e{p}" for p in range(2, int(math.log10(max_iter)) + 1)]
    write_results(
        "graph_guided_rates",
        rate_rows,
        ["noise", "solver", "iterate", *power_cols, "slope", "f*", "fit seconds"],
        title="Graph-guided regression: f(w_T) - f* against T (30 tasks, 6000 samples)",
        notes=(
            "slope: least-squares slope of log10(f - f*) on log10 T over "
            "[1e3, max T]; the theory bounds the last iterate by O~(T^-1/2). "
            "Plot: graph_guided_rates.png."
        ),
    )


# --- part 3: standardisation ------------------------------------------------------


def standardize_part(seeds):
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True, scaled=False)
    fits = {
        "GraphGuidedRegressor, standardize=True (default)": {},
        "GraphGuidedRegressor, standardize=False": {"standardize": False},
        "least squares (LinearRegression)": None,
    }
    scores = {name: [] for name in fits}
    iterations = {name: [] for name in fits}
    warned = dict.fromkeys(fits, 0)
    for seed in seeds:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, random_state=seed
        )
        for name, params in fits.items():
            if params is None:
                model = LinearRegression()
            else:
                model = GraphGuidedRegressor(random_state=seed, **params)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                model.fit(X_train, y_train)
            warned[name] += any(
                issubclass(w.category, ConvergenceWarning) for w in caught
            )
            scores[name].append(model.score(X_test, y_test))
            if params is not None:
                iterations[name].append(model.n_iter_)
    defaults = GraphGuidedRegressor()
    rows = [
        {
            "fit": name,
            "test R²": f"{np.mean(scores[name]):.3f} ± {np.std(scores[name]):.3f}",
            "iterations": float(np.mean(iterations[name])) if iterations[name] else "",
            "ConvergenceWarning": f"{warned[name]}/{len(seeds)}",
        }
        for name in fits
    ]
    write_results(
        "graph_guided_standardize",
        rows,
        ["fit", "test R²", "iterations", "ConvergenceWarning"],
        title="Unscaled features: load_diabetes(scaled=False), one task, a quarter "
        f"held out, mean ± std over {len(seeds)} splits",
        notes=(
            f"GraphGuidedRegressor at its defaults (tol={defaults.tol}, "
            f"max_iter={defaults.max_iter}, the automatic step) but for "
            "standardize; iterations are n_iter_ (mean over splits); "
            "ConvergenceWarning: splits where fit stopped at max_iter without "
            "converging."
        ),
    )


def speed_part(problems, budget, name="graph_guided_speed"):
    columns = [
        "graph",
        "n_tasks",
        "n_edges",
        "n_samples",
        "method",
        "seconds",
        "ratio to prox_sgd",
        "peak_mb",
        "iterations",
        "rel. subopt.",
        "status",
    ]
    per_decade = CHECKS_PER_DECADE
    notes = (
        f"Target: relative suboptimality (f - f*) / f* <= {TARGET}. f* is "
        "gram_optimum's value (the 'cvxpy, sufficient statistics' row: its "
        "seconds are the time f* took), or, where it fails (Clarabel's "
        "factorisation runs out of memory on the 1e4-task graph), the value of "
        "the 'dual FISTA, sufficient statistics' row, certified by its duality "
        "gap (its status; the JSON's 'f* from' says which). All problems: 20 "
        f"features, noise 1, alpha={ALPHA}, standardize=False, random_state=0. "
        f"Each method runs once, in its own process, killed after "
        f"{budget['timeout']} s; the data are generated in that process before "
        "any clock starts. What 'seconds' includes:\n\n"
        "- prox_sgd, rip, rip textbook, rip, no memory, rip uniform + memory: "
        "the set-up (input validation, the task graph and its edges, through a "
        "fit of one RIP iteration with a fixed step) plus the solver's wall time "
        "from the call to solve() (step size, edge colouring, prox set-up and "
        "iterations) until the first check within the target. The checks (the "
        "full objective on all rows) run at iterations round(10^(k/"
        f"{per_decade})) and at the last one, off the clock, so a time is within "
        f"a factor 10^(1/{per_decade}) = {10 ** (1 / per_decade):.2f} in "
        "iterations of the first crossing. The run stops there, or after "
        f"{budget['max_iter']} iterations or {budget['seconds']} s of solver "
        "time (then 'seconds' is empty and the status gives the budget spent; "
        "rel. subopt. is the last check's). One run each, no restarts; its "
        "iterations are those of fit(tol=None, random_state=0) on the CPU. "
        "rip textbook: edge_sampling='uniform', edges_per_step=1, "
        "edge_memory=False; rip, no memory: matching, no memory; rip uniform + "
        "memory: one uniform edge per step with the edge memory.\n"
        "- prox_sgd default fit, rip default fit: the wall time of "
        "GraphGuidedRegressor(alpha, graph, task_column=0, standardize=False, "
        "random_state=0[, solver='rip']).fit(X, y), everything included, at the "
        "defaults (tol=1e-4, its stopping test every 100 iterations, max_iter, "
        "device='auto': the device is in the status); rel. subopt. is that of "
        "the fitted coefficients, iterations its n_iter_, and the status says "
        "whether it raised a ConvergenceWarning.\n"
        "- cvxpy: graph_guided_reference.cvxpy_optimum, the problem written on "
        "the raw rows (per-task least squares) as a user would, built and solved "
        "by Clarabel; cvxpy, sufficient statistics: gram_optimum, the per-task "
        "Gram matrices and their Cholesky factors, the cvxpy problem on them "
        "and Clarabel. Both include building the cvxpy problem; the task and "
        "edge lists come from a one-iteration fit that is not timed.\n"
        "- dual FISTA, sufficient statistics: this benchmark's exact reference "
        "(_dual_certificate): the per-task Gram matrices and their inverses, "
        "then projected FISTA with restarts on the dual (edge subgradients in "
        "their balls), until the relative gap between the primal and dual "
        f"values is below {CERT_RTOL:g} (at most {CERT_SECONDS} s): its "
        "seconds are the time to certify f*, far below 1e-3, not the time to "
        "1e-3.\n"
        "- copt (30-task problem only): building the incidence operator and "
        "the per-task Gram matrices, then minimize_primal_dual, with the "
        "objective (from the Gram matrices, cheap) checked at every iteration "
        "on the clock; it stops within the target, after "
        f"{budget['peer_iter']} iterations or {budget['seconds']} s.\n\n"
        "ratio to prox_sgd: seconds over the prox_sgd row's at the same problem "
        "(>1: slower). peak_mb: the peak resident memory of the timed part "
        "above the level before it, with the data already in memory (the "
        "kernel's high-water mark, see _common.peak_memory). The JSON has each "
        "solve() run's checks as [iteration, solver seconds, rel. subopt.] "
        "(trace), its set-up and solver seconds, and each process's wall time."
    )

    def write(rows):
        write_results(
            name,
            rows,
            columns,
            title=(
                f"Graph-guided regression: seconds to {TARGET} relative "
                "suboptimality, as a user waits"
            ),
            notes=notes,
        )

    speed(problems, budget, [], on_problem=write)


# --- part 4: held-out error, alpha chosen by cross-validation --------------------

HELDOUT = {
    "n_tasks": 10,
    "n_groups": 2,
    "n_samples_per_task": 80,  # half of each task's rows held out
    "n_features": 20,
    "noise": 2.0,
}
HELDOUT_ALPHAS = np.geomspace(3e-3, 0.3, 8)
HELDOUT_FOLDS = 5


def _heldout_data(seed):
    """Train and held-out halves of a small planted problem (every task in both)."""
    from sklearn.model_selection import train_test_split

    data = make_graph_multitask(**HELDOUT, random_state=seed)
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.data,
        data.target,
        test_size=0.5,
        stratify=data.data[:, 0],
        random_state=seed,
    )
    return data, X_tr, X_te, y_tr, y_te


def _exact_cv(data, X, y, folds):
    """The alpha of lowest CV error of the exact optimum, refitted exactly."""
    params = {**GraphGuidedRegressor(graph=data.adjacency, task_column=0).get_params()}
    cv_mse = np.zeros(len(HELDOUT_ALPHAS))
    for train, test in folds:
        for i, alpha in enumerate(HELDOUT_ALPHAS):
            _, W, B = gram_optimum({**params, "alpha": alpha}, X[train], y[train])
            cv_mse[i] += _mse_with(W, B, X[test], y[test])
    best = float(HELDOUT_ALPHAS[np.argmin(cv_mse)])
    f, W, B = gram_optimum({**params, "alpha": best}, X, y)
    return best, W, B


def _mse_with(W, B, X, y):
    task = X[:, 0].astype(int)
    pred = np.einsum("nd,nd->n", X[:, 1:], W[task]) + B[task]
    return float(np.mean((y - pred) ** 2))


def _search(data, X, y, folds, solver):
    """GridSearchCV over alpha at the solver's defaults; counts ConvergenceWarnings."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    model = GraphGuidedRegressor(
        graph=data.adjacency, task_column=0, solver=solver, random_state=0
    )
    search = GridSearchCV(
        model,
        {"alpha": list(HELDOUT_ALPHAS)},
        cv=folds,
        scoring="neg_mean_squared_error",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        search.fit(X, y)
    warned = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        refit = clone(search.best_estimator_).fit(X, y)
    refit_warned = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return refit, warned, len(HELDOUT_ALPHAS) * len(folds) + 1, refit_warned


def _per_task_ridge(X, y, X_te, y_te):
    from sklearn.linear_model import RidgeCV

    task, task_te = X[:, 0].astype(int), X_te[:, 0].astype(int)
    pred = np.empty(len(y_te))
    for t in np.unique(task):
        ridge = RidgeCV(alphas=np.geomspace(1e-3, 1e3, 25)).fit(
            X[task == t, 1:], y[task == t]
        )
        pred[task_te == t] = ridge.predict(X_te[task_te == t, 1:])
    return float(np.mean((y_te - pred) ** 2))


def heldout(seeds):
    """Per seed: held-out MSE of every method, gaps and warnings of the fits."""
    from sklearn.model_selection import KFold

    per_seed = []
    for seed in seeds:
        data, X, X_te, y, y_te = _heldout_data(seed)
        folds = list(KFold(HELDOUT_FOLDS, shuffle=True, random_state=seed).split(X))
        alpha, W, B = _exact_cv(data, X, y, folds)
        row = {"seed": seed, "exact": _mse_with(W, B, X_te, y_te), "alpha exact": alpha}
        row["ridge"] = _per_task_ridge(X, y, X_te, y_te)
        for solver in ("prox_sgd", "rip"):
            best, warned, fits, refit_warned = _search(data, X, y, folds, solver)
            f_star = gram_optimum(best, X, y)[0]
            row[solver] = float(np.mean((y_te - best.predict(X_te)) ** 2))
            row[f"alpha {solver}"] = float(best.alpha)
            row[f"gap {solver}"] = (best.objective(X, y) - f_star) / f_star
            row[f"iterations {solver}"] = best.n_iter_
            row[f"warned {solver}"] = warned
            row[f"fits {solver}"] = fits
            row[f"warned refit {solver}"] = refit_warned
            cv = GraphGuidedRegressorCV(
                graph=data.adjacency,
                task_column=0,
                solver=solver,
                cv=folds,
                random_state=0,
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                cv.fit(X, y)
            key = f"cv {solver}"
            row[key] = float(np.mean((y_te - cv.predict(X_te)) ** 2))
            row[f"alpha {key}"] = cv.alpha_
            f_star = gram_optimum({**cv.get_params(), "alpha": cv.alpha_}, X, y)[0]
            row[f"gap {key}"] = (cv.objective(X, y) - f_star) / f_star
            row[f"iterations {key}"] = cv.n_iter_
            row[f"warned {key}"] = sum(
                issubclass(w.category, ConvergenceWarning) for w in caught
            )
            row[f"fits {key}"] = 1
            row[f"warned refit {key}"] = row[f"warned {key}"]
        per_seed.append(row)
        print(row, flush=True)
    return per_seed


def heldout_part(seeds):
    from _common import paired_interval

    per_seed = heldout(seeds)
    rows = []
    names = {
        "exact": "exact network-lasso optimum (cvxpy), alpha by the same CV",
        "prox_sgd": "GridSearchCV, solver='prox_sgd' at defaults",
        "rip": "GridSearchCV, solver='rip' at defaults",
        "cv prox_sgd": "GraphGuidedRegressorCV, solver='prox_sgd' at defaults",
        "cv rip": "GraphGuidedRegressorCV, solver='rip' at defaults",
        "ridge": "per-task RidgeCV",
    }
    exact = [r["exact"] for r in per_seed]
    for key, name in names.items():
        mse = [r[key] for r in per_seed]
        ratio = np.array(mse) / np.array(exact)
        mean, lo, hi = paired_interval(ratio, np.ones(len(ratio)))
        row = {
            "method": name,
            "held-out MSE": f"{np.mean(mse):.3f} ± {np.std(mse):.3f}",
            "ratio to exact": f"{1 + mean:.3f} [{1 + lo:.3f}, {1 + hi:.3f}]",
            "ratio to exact (mean)": 1 + mean,
        }
        if key not in ("exact", "ridge"):
            gain = np.array([r["ridge"] / r[key] for r in per_seed])
            g, glo, ghi = paired_interval(gain, np.zeros(len(gain)))
            row["ridge MSE / MSE"] = f"{g:.2f} [{glo:.2f}, {ghi:.2f}]"
            row["ridge MSE / MSE (mean)"] = g
            gaps = [r[f"gap {key}"] for r in per_seed]
            row["rel. gap of refit"] = f"{np.median(gaps):.1e} (max {max(gaps):.1e})"
            row["rel. gap (max)"] = float(max(gaps))
            row["iterations"] = float(
                np.mean([r[f"iterations {key}"] for r in per_seed])
            )
            warned = sum(r[f"warned {key}"] for r in per_seed)
            fits = sum(r[f"fits {key}"] for r in per_seed)
            row["ConvergenceWarning"] = f"{warned}/{fits}"
            row["warned refits"] = sum(r[f"warned refit {key}"] for r in per_seed)
        rows.append(row)
    rip_vs = np.array([r["rip"] / r["exact"] for r in per_seed])
    sgd_vs = np.array([r["prox_sgd"] / r["exact"] for r in per_seed])
    d, lo, hi = paired_interval(rip_vs, sgd_vs)
    rows.append(
        {
            "method": "RIP minus prox-SGD (ratio to exact, paired)",
            "ratio to exact": f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]",
            "ratio to exact (mean)": d,
        }
    )
    write_results(
        "graph_guided_heldout",
        rows,
        [
            "method",
            "held-out MSE",
            "ratio to exact",
            "ridge MSE / MSE",
            "rel. gap of refit",
            "iterations",
            "ConvergenceWarning",
            "warned refits",
        ],
        title=(
            "Held-out MSE with alpha chosen by 5-fold GridSearchCV: the solvers "
            f"at their defaults against the exact optimum ({len(seeds)} seeds)"
        ),
        notes=(
            "make_graph_multitask("
            + ", ".join(f"{k}={v}" for k, v in HELDOUT.items())
            + ", "
            "random_state=seed), half of every task's rows held out; "
            f"alpha among {len(HELDOUT_ALPHAS)} values log-spaced in "
            f"[{HELDOUT_ALPHAS[0]:g}, {HELDOUT_ALPHAS[-1]:g}] by 5-fold CV (KFold, "
            "shuffled by the seed; the same folds for every method). exact: "
            "graph_guided_reference.gram_optimum (cvxpy/Clarabel, built from "
            "the user's inputs alone) on every fold and alpha, the alpha of "
            "lowest CV error refitted exactly. prox_sgd, rip: "
            "GridSearchCV(GraphGuidedRegressor(graph, task_column=0, solver, "
            "random_state=0)) at every other default, refitted on the whole "
            "training half. GraphGuidedRegressorCV: at its defaults (100 "
            "strengths from alpha_max down to 1e-2 alpha_max, warm-started "
            "path) on the same folds; its ConvergenceWarning counts its one "
            "refit (the path's fits do not warn). per-task RidgeCV: one "
            "RidgeCV per task (25 alphas in [1e-3, 1e3], efficient LOO). "
            "ratio to exact: held-out MSE over "
            "the exact optimum's, mean and 95% paired t interval over seeds; "
            "ridge MSE / MSE: per-task ridge's held-out MSE over the method's "
            "(>1: the method is better). rel. gap of refit: (F - F*)/F* of "
            "the refitted model at its alpha (median over seeds, max). "
            "ConvergenceWarning: warned fits of all GridSearchCV fits (every "
            "fold and alpha, and the refit); warned refits: refits at the "
            "chosen alpha that warned."
        ),
    )


# The problems of the benchmark, the example and the user guide, each at the
# alpha they use: (name, data parameters, alpha).
DEFAULT_FIT_PROBLEMS = (
    (
        "bench rates/speed: 30 tasks, 200/task, noise 1",
        {"n_samples_per_task": 200, "noise": 1.0, "random_state": 1},
        ALPHA,
    ),
    (
        "example: 30 tasks, 200/task, noise 6",
        {"noise": 6.0, "group_scale": 0.3, "random_state": 1},
        0.05,
    ),
    (
        "held-out part (seed 0): 10 tasks, 80/task, noise 2",
        {**HELDOUT, "random_state": 0},
        0.1,
    ),
    (
        "demo: 30 tasks, 40/task, noise 3",
        {"n_samples_per_task": 40, "noise": 3.0, "group_scale": 0.5, "random_state": 0},
        0.1,
    ),
    (
        "user guide: 6 tasks, 40/task, 5 features",
        {
            "n_tasks": 6,
            "n_groups": 2,
            "n_samples_per_task": 40,
            "n_features": 5,
            "random_state": 0,
        },
        0.05,
    ),
)


def default_fits():
    """Both solvers at their defaults on every problem: gap and warnings."""
    rows = []
    for name, spec, alpha in DEFAULT_FIT_PROBLEMS:
        data = make_graph_multitask(**spec)
        X, y = data.data, data.target
        for solver in ("prox_sgd", "rip"):
            model = GraphGuidedRegressor(
                alpha=alpha,
                graph=data.adjacency,
                task_column=0,
                solver=solver,
                random_state=0,
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                model.fit(X, y)
            f_star = gram_optimum(model, X, y)[0]
            rows.append(
                {
                    "problem": name,
                    "alpha": alpha,
                    "solver": solver,
                    "iterations": model.n_iter_,
                    "rel. gap": (model.objective(X, y) - f_star) / f_star,
                    "ConvergenceWarning": sum(
                        issubclass(w.category, ConvergenceWarning) for w in caught
                    ),
                }
            )
            print(rows[-1], flush=True)
    write_results(
        "graph_guided_default_fits",
        rows,
        ["problem", "alpha", "solver", "iterations", "rel. gap", "ConvergenceWarning"],
        title=(
            "Default fits (random_state=0) on the benchmark's, the example's, "
            "the demo's and the user guide's problems"
        ),
        notes=(
            "GraphGuidedRegressor(alpha, graph, task_column=0, solver, "
            "random_state=0) at every other default (tol=1e-4, max_iter=5000, "
            "standardize=True); rel. gap: (F - F*)/F* with F* the exact optimum "
            "(graph_guided_reference.gram_optimum, from the user's inputs); "
            "ConvergenceWarning: 1 when fit stopped at max_iter."
        ),
    )


# --- part 5: prox-SGD's inner tolerance against graph size (a speed part) ---------

INNER_TOLS = (0.3, 0.1, 0.03, 0.01)
INNER_PROBLEMS = (
    {"n_tasks": 30, "per_task": 300, "seconds": 1},
    {"n_tasks": 30, "per_task": 3000, "seconds": 1},
    {"n_tasks": 300, "per_task": 30, "seconds": 5},
    {"n_tasks": 300, "per_task": 300, "seconds": 5},
    {"n_tasks": 300, "per_task": 3000, "seconds": 5},
    {"n_tasks": 1000, "per_task": 300, "seconds": 20},
)


def _stop_after(seconds):
    """A solve() callback that stops the run ``seconds`` after its creation."""
    start = time.perf_counter()

    def stop(t, W, B):
        return time.perf_counter() - start >= seconds

    return stop


def innertol_part(problems, scale=1.0):
    """Relative gap after a fixed prox-SGD solver time, per inner_tol.

    Ring-with-chords graphs (``make_large_graph``) of several sizes; each run
    is the solver of ``fit(tol=None, random_state=0, standardize=False)`` with
    a fixed ``inner_tol``, stopped by a callback after the problem's
    ``seconds`` (times ``scale``) of solver time; the gap is then measured
    off the clock. The "auto" row is the estimator's rule
    (``inner_tol="auto"``).
    """
    from sklearn_ext.linear_model._graph_guided_solver import inner_tol_auto

    rows = []
    for spec in problems:
        T, per = spec["n_tasks"], spec["per_task"]
        seconds = spec["seconds"] * scale
        data = make_large_graph(T, T * per, N_FEATURES, noise=1.0, seed=0)
        probe = _speed_probe(data)
        f_star = gram_optimum(probe, data.data, data.target)[0]
        X, y = data.data, data.target
        Xv, feats, labels, _ = probe._validate(X, fitting=False)
        problem = probe._problem(
            Xv,
            feats,
            y,
            probe._task_indices(labels),
            "squared",
            1,
            probe._edges,
            None,
        )
        auto = inner_tol_auto(problem.n_tasks, len(problem.src), X.shape[0])
        for inner in (*INNER_TOLS, "auto"):
            value = auto if inner == "auto" else inner

            stop = _stop_after(seconds)

            result = solve(
                problem,
                solver="prox_sgd",
                batch_size=8,
                max_iter=10**7,
                inner_tol=value,
                rng=np.random.RandomState(0),
                callback=stop,
            )
            f = objective(problem, result.W, result.B)
            rows.append(
                {
                    "n_tasks": T,
                    "n_edges": len(problem.src),
                    "n_samples": X.shape[0],
                    "seconds": seconds,
                    "inner_tol": inner if inner != "auto" else f"auto ({auto:.3g})",
                    "iterations": result.n_iter,
                    "rel. gap": (f - f_star) / f_star,
                    "dual iterations per prox": result.inner["iterations"]
                    / max(1, result.inner["calls"]),
                }
            )
            print(rows[-1], flush=True)
    write_results(
        "graph_guided_inner_tol",
        rows,
        [
            "n_tasks",
            "n_edges",
            "n_samples",
            "seconds",
            "inner_tol",
            "iterations",
            "rel. gap",
            "dual iterations per prox",
        ],
        title=(
            "prox-SGD's inner tolerance: relative gap after a fixed solver time, "
            "by graph size"
        ),
        notes=(
            "make_large_graph (ring lattice + chords, about 5 edges per task), "
            f"{N_FEATURES} features, noise 1, alpha={ALPHA}, standardize=False, "
            "batch_size=8, eta0='auto', random_state=0; one run per cell, "
            "stopped after 'seconds' of solver time (a timing part: run it "
            "on an idle machine). rel. gap: (F - F*)/F* of the last iterate, F* "
            "from gram_optimum. auto: the estimator's default rule "
            "(inner_tol_auto)."
        ),
    )


# --- part 6: RIP's automatic step (the rule of rip_step_fraction) -------------------

RIP_STEP_FRACTIONS = (0.1, 0.2, 0.35, 0.5, 0.7, 1.0)
RIP_STEP_ALPHAS = (0.003, 0.01, 0.03, 0.1, 0.3)
RIP_STEP_PROBLEMS = (
    (
        "10 tasks, 40/task, noise 2",
        {
            "n_tasks": 10,
            "n_groups": 2,
            "n_samples_per_task": 40,
            "noise": 2.0,
            "random_state": 0,
        },
    ),
    (
        "30 tasks, 200/task, noise 1",
        {"n_samples_per_task": 200, "noise": 1.0, "random_state": 1},
    ),
    (
        "30 tasks, 40/task, noise 3",
        {"n_samples_per_task": 40, "noise": 3.0, "group_scale": 0.5, "random_state": 0},
    ),
)


def ripstep_part():
    """Default RIP fits with eta0 = fraction * the smoothness step, per alpha.

    For every problem and alpha: the relative gap of ``GraphGuidedRegressor(
    solver="rip", random_state=0)`` at its defaults but ``eta0`` (a fraction
    of the smoothness step ``step_size_auto``), whether it warned, and the
    rule's own fraction (``eta0="auto"``) with its gap.
    """
    from sklearn_ext.linear_model._graph_guided_solver import (
        edge_colouring,
        rip_step_fraction,
        step_size_auto,
    )

    rows = []
    for name, spec in RIP_STEP_PROBLEMS:
        data = make_graph_multitask(**spec)
        X, y = data.data, data.target
        for alpha in RIP_STEP_ALPHAS:
            params = {
                "alpha": alpha,
                "graph": data.adjacency,
                "task_column": 0,
                "solver": "rip",
                "random_state": 0,
            }
            probe = GraphGuidedRegressor(**params, max_iter=1, tol=None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                probe.fit(X, y)
            Xv, feats, labels, _ = probe._validate(X, fitting=False)
            problem = probe._problem(
                Xv,
                feats,
                y,
                probe._task_indices(labels),
                "squared",
                1,
                probe._edges,
                None,
            )
            eta = step_size_auto(problem, probe.batch_size)
            colours = edge_colouring(problem.src, problem.dst, problem.n_tasks)
            scale = float(colours.max() + 1)
            q = eta * alpha * float(problem.edge_weight.max()) * scale
            f_star = gram_optimum(probe, X, y)[0]
            row = {"problem": name, "alpha": alpha, "q": q}
            for fraction in (*RIP_STEP_FRACTIONS, "auto"):
                eta0 = "auto" if fraction == "auto" else fraction * eta
                model = GraphGuidedRegressor(**params, eta0=eta0)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    model.fit(X, y)
                gap = (model.objective(X, y) - f_star) / f_star
                warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
                row[f"{fraction}"] = f"{gap:.1e}{' (w)' if warned else ''}"
            row["rule's fraction"] = rip_step_fraction(
                eta, alpha, problem.edge_weight, scale
            )
            rows.append(row)
            print(row, flush=True)
    write_results(
        "graph_guided_rip_step",
        rows,
        [
            "problem",
            "alpha",
            "q",
            *map(str, RIP_STEP_FRACTIONS),
            "auto",
            "rule's fraction",
        ],
        title=(
            "RIP at its defaults: relative gap (F - F*)/F* for steps that are a "
            "fraction of the smoothness step"
        ),
        notes=(
            "GraphGuidedRegressor(alpha, graph, task_column=0, solver='rip', "
            "random_state=0) at every other default (tol=1e-4, max_iter=5000, "
            "matching + edge memory) with eta0 = fraction * step_size_auto (the "
            "smoothness step on the standardised features), and with "
            "eta0='auto' (the rule: clip(0.4 q^-0.3, 0.1, 1)); (w): the fit "
            "stopped at max_iter with a ConvergenceWarning. q = smoothness step "
            "* alpha * max edge weight * number of matchings (1 / P(edge "
            "drawn)): the largest scaled radius of the first edge proxes. F* "
            "from gram_optimum (the user's inputs alone). The former rule was "
            "the constant fraction 0.2."
        ),
    )


# --- the claims ledger ------------------------------------------------------------

_SPEED_CLAIMS = (
    [
        Claim(
            f"{key}_{size}",
            {"graph": "sbm", "n_samples": n, "method": method},
            "seconds",
            fmt=".1f",
        )
        for key, method in (
            ("prox_sgd", "prox_sgd"),
            ("rip", "rip"),
        )
        for size, n in (("1e4", 9990), ("1e6", 999990))
    ]
    + [
        Claim(
            f"rip_no_memory_{size}_subopt",
            {"graph": "sbm", "n_samples": n, "method": "rip, no memory"},
            "rel. subopt.",
            fmt=".3g",
            metric="relative suboptimality when the iteration budget ran out",
        )
        for size, n in (("1e4", 9990), ("1e6", 999990))
    ]
    + [
        Claim(
            "prox_sgd_1e3",
            {"n_tasks": 1000, "method": "prox_sgd"},
            "seconds",
            fmt=".1f",
        )
    ]
    + [
        Claim(
            f"{key}_{size}_subopt",
            {"n_tasks": tasks, "method": method},
            "rel. subopt.",
            fmt=".3g",
            metric="relative suboptimality when the time budget ran out",
        )
        for key, method in (
            ("prox_sgd", "prox_sgd"),
            ("rip", "rip"),
            ("rip_textbook", "rip textbook"),
        )
        for size, tasks in (("1e3", 1000), ("1e4", 10000))
    ]
)

LEDGER = {
    "graph_guided_rates": Ledger(
        "GraphGuidedRegressor",
        "make_graph_multitask: 30 tasks in 3 groups on a stochastic-block graph, "
        "200 samples per task, 20 features, Gaussian and Student-t (2.5 degrees "
        "of freedom) noise",
        "one run per noise (data seed 1, random_state=0)",
        {
            "ours": "both solvers (and RIP with 8 uniform edges per step), "
            "alpha=0.05, "
            "1e5 iterations of the theory's steps eta0/sqrt(t+1) (eta0='auto'), "
            "tol=None",
            "peers": "none: f* is the exact optimum (cvxpy/Clarabel on the per-task "
            "sufficient statistics)",
        },
        [
            Claim(
                f"slope_{solver}_{noise}",
                {"noise": noise, "solver": solver, "iterate": "last"},
                "slope",
                fmt=".2f",
                metric="log-log slope of f(w_T) - f* over T in [1e3, 1e5], last "
                "iterate",
            )
            for noise in ("gaussian", "student_t")
            for solver in ("prox_sgd", "rip")
        ],
    ),
    "graph_guided_standardize": Ledger(
        "GraphGuidedRegressor",
        "load_diabetes(scaled=False), one task, 5 splits with a quarter held out",
        5,
        {
            "ours": "GraphGuidedRegressor at its defaults, with and without "
            "standardize",
            "peers": "least squares (LinearRegression)",
        },
        [
            Claim("r2_default", 0, "test R²"),
            Claim("r2_unscaled", 1, "test R²"),
            Claim("r2_least_squares", 2, "test R²"),
            Claim("iterations_default", 0, "iterations", fmt=".0f"),
            Claim(
                "warned_default",
                0,
                "ConvergenceWarning",
                metric="splits where fit stopped at max_iter",
            ),
            Claim(
                "warned_unscaled",
                1,
                "ConvergenceWarning",
                metric="splits where fit stopped at max_iter",
            ),
        ],
    ),
    "graph_guided_heldout": Ledger(
        "GraphGuidedRegressor",
        "make_graph_multitask: 10 tasks in 2 groups, 80 samples per task (half "
        "held out), 20 features, noise 2",
        5,
        {
            "ours": "GridSearchCV over 8 alphas (5 folds) of GraphGuidedRegressor "
            "at its defaults, solver='prox_sgd' and solver='rip'",
            "peers": "the exact network-lasso optimum (cvxpy/Clarabel from the "
            "user's inputs, alpha by the same folds); per-task RidgeCV",
        },
        [
            Claim(
                f"ratio_{key}",
                {"method": method},
                "ratio to exact",
                metric="held-out MSE over the exact optimum's (mean [95% paired "
                "interval])",
            )
            for key, method in (
                ("prox_sgd", "GridSearchCV, solver='prox_sgd' at defaults"),
                ("rip", "GridSearchCV, solver='rip' at defaults"),
                (
                    "cv_prox_sgd",
                    "GraphGuidedRegressorCV, solver='prox_sgd' at defaults",
                ),
                ("cv_rip", "GraphGuidedRegressorCV, solver='rip' at defaults"),
                ("ridge", "per-task RidgeCV"),
            )
        ]
        + [
            Claim(
                f"ridge_gain_{key}",
                {"method": method},
                "ridge MSE / MSE",
                metric="per-task ridge's held-out MSE over the method's",
            )
            for key, method in (
                ("prox_sgd", "GridSearchCV, solver='prox_sgd' at defaults"),
                ("rip", "GridSearchCV, solver='rip' at defaults"),
            )
        ]
        + [
            Claim(
                f"warned_{key}",
                {"method": method},
                "ConvergenceWarning",
                metric="GridSearchCV fits that stopped at max_iter",
            )
            for key, method in (
                ("prox_sgd", "GridSearchCV, solver='prox_sgd' at defaults"),
                ("rip", "GridSearchCV, solver='rip' at defaults"),
            )
        ],
    ),
    "graph_guided_default_fits": Ledger(
        "GraphGuidedRegressor",
        "make_graph_multitask problems of the benchmark, the example, the demo "
        "and the user guide, each at its alpha",
        "one fit per problem and solver (random_state=0)",
        {
            "ours": "GraphGuidedRegressor at its defaults, both solvers",
            "peers": "none: the exact optimum (gram_optimum) gives the gap",
        },
        [],
    ),
    "graph_guided_rip_step": Ledger(
        "GraphGuidedRegressor",
        "make_graph_multitask: 10 tasks (40/task, noise 2), 30 tasks (200/task, "
        "noise 1) and 30 tasks (40/task, noise 3), alpha in [0.003, 0.3]",
        "one fit per cell (random_state=0)",
        {
            "ours": "RIP at its defaults with eta0 a fixed fraction of the "
            "smoothness step, and with eta0='auto'",
            "peers": "none: the exact optimum (gram_optimum) gives the gap",
        },
        [],
    ),
    "graph_guided_inner_tol": Ledger(
        "GraphGuidedRegressor",
        "make_large_graph: ring lattices with chords of 30, 300 and 1000 tasks, "
        "30 to 3000 samples per task, 20 features, noise 1, alpha=0.05, "
        "standardize=False",
        "one run per cell (random_state=0)",
        {
            "ours": "prox-SGD's solver with inner_tol in {0.3, 0.1, 0.03, 0.01, "
            "auto}, a fixed solver time per run",
            "peers": "none: the exact optimum (gram_optimum) gives the gap",
        },
        [],
    ),
    "graph_guided_speed": Ledger(
        "GraphGuidedRegressor",
        "30 tasks on a stochastic-block graph at 1e4 and 1e6 samples; ring "
        "lattices with chords of 1e3 and 1e4 tasks (about 5 edges per task), 1e6 "
        "samples; 20 features, noise 1, alpha=0.05, standardize=False",
        "one run per method (random_state=0)",
        {
            "ours": "the solvers at their defaults, one run each until the first "
            "check within 1e-3 relative suboptimality, at most 200000 iterations "
            "or 30 s of solver time; the estimator's default fit as a user waits",
            "peers": "cvxpy/Clarabel on the raw rows and on per-task sufficient "
            "statistics; copt's primal-dual splitting (30-task problem only, at "
            "most 20000 iterations or 30 s); every method in its own process, "
            "killed after 150 s",
        },
        _SPEED_CLAIMS,
    ),
}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]))
    else:
        main()
