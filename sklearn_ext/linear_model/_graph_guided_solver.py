"""Objective, proximal operators and stochastic solvers of graph-guided models.

The problem, for tasks t = 1..T with weights W[t] (K x d) and intercepts B[t]::

    F(W, B) = (1/n) sum_i w_i loss(y_i, W[t_i] x_i + B[t_i])             (data)
              + (l2 / 2) sum_t ||W[t]||^2   or   l1 sum_t |W[t]|_1       (task term)
              + alpha sum_{e=(s,t)} a_e ||W[s] - W[t]||_F                (graph)

with sample weights ``w_i`` of mean one (all ones without sample weights).
Both solvers draw, at every iteration, ``batch_size`` samples from each task
(within the task, with probability proportional to their weights: uniformly
without weights) and form the unbiased stochastic gradient of the data term,
whose task-t block is ``(W_t / n) * mean of the drawn samples' gradients`` with
``W_t`` the total weight of task t (``n_t`` without weights). Weighted draws are
the draws of the data with each row repeated ``w_i`` times, in distribution.
They then apply a proximal step with step ``eta_t = eta0 / sqrt(t + 1)``:

- ``rip`` (randomized incremental proximal method): the l1 prox (closed form,
  every step), then the closed-form proxes of a random set of edge terms, each
  scaled by the inverse of the probability that it is drawn, so that the
  expected regulariser is the whole graph term. ``edge_sampling="matching"``
  draws one class of a fixed edge colouring (a matching: node-disjoint edges,
  whose proxes are applied at once; every node talks to at most one
  neighbour per iteration, as in the block-proximal methods of decentralised
  optimisation); ``"uniform"`` draws ``edges_per_step`` edges uniformly (the
  textbook method). With ``edge_memory`` the graph term is sampled with a
  table of the edges' last subgradients (point-SAGA, Defazio 2016): the step
  uses the whole stored graph subgradient and the drawn edges correct their
  entries, so that the variance of the edge sampling vanishes at the optimum
  and the iterations no longer stall at a level set by that variance;
- ``prox_sgd``: the prox of the whole nonsmooth part (graph + l1), computed by
  accelerated projected gradient on its dual, warm-started from the previous
  iteration's dual variables, to a relative tolerance ``inner_tol / sqrt(t +
  1)`` that tightens with the iterations (an inexact prox whose error shrinks
  faster than the step keeps the rate of the exact method).

Random draws come from a numpy generator in blocks of iterations, so the numpy
(CPU) and torch (GPU) backends of ``_graph_guided_ops.py`` run the very same
iterations. The stopping test evaluates the objective on a fixed subsample of
the rows every ``CHECK_EVERY`` iterations, whatever the number of samples.
Features may be a dense array or a CSR matrix (the numpy backend keeps it
sparse).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps, _TorchOps

__all__ = [
    "CHECK_EVERY",
    "RIP_STEP",
    "RIP_STEP_MIN",
    "RIP_STEP_POWER",
    "GraphProblem",
    "SolverState",
    "edge_colouring",
    "objective",
    "prox_edge",
    "inner_tol_auto",
    "prox_graph",
    "rip_step_fraction",
    "solve",
]

_CURVATURE = {"squared": 1.0, "logistic": 0.25, "softmax": 0.5}

# Iterations between two evaluations of the stopping test, and the rows it
# evaluates the objective on: at most max(CHECK_ROWS, 10 * n_tasks *
# batch_size), evenly spaced, so that a check costs at most about a tenth of
# the iterations between two checks, whatever the number of samples.
CHECK_EVERY = 100
CHECK_ROWS = 5000

# RIP's automatic step is a fraction of prox-SGD's: a sampled edge prox acts
# with its radius scaled by the inverse of its probability, and at the full
# step those scaled proxes overshoot, the more so the larger that radius. The
# fraction is RIP_STEP * q ** RIP_STEP_POWER, clipped to [RIP_STEP_MIN, 1],
# where q = eta_smooth * alpha * max_e a_e * (1 / P(edge drawn)) is the
# largest scaled radius of the first step (with standardised features, in
# the units of the weights). Measured on planted problems of 10 and 30 tasks
# over alpha and fixed fractions (benchmarks/bench_graph_guided.py, part
# "ripstep", graph_guided_rip_step.md): the fraction of least relative gap
# after a default fit falls as q grows, as this power law does, where the
# former constant fraction (0.2) stopped at max_iter, far from the optimum,
# at small q.
RIP_STEP = 0.4
RIP_STEP_POWER = -0.3
RIP_STEP_MIN = 0.1


# prox-SGD's inner tolerance, inner_tol="auto": INNER_TOL on small graphs,
# shrinking in proportion to the number of tasks beyond INNER_TOL_TASKS, down
# to INNER_TOL_MIN. Measured (benchmarks/bench_graph_guided.py, part
# "innertol", graph_guided_inner_tol.md): a loose prox runs more iterations
# per second, which wins on small graphs, while on large graphs (hundreds of
# tasks and more) a tight one reaches a lower gap in the same solver time,
# the loose prox's error carrying across the graph. The number of samples
# did not change the best value in those measurements.
INNER_TOL = 0.3
INNER_TOL_TASKS = 30
INNER_TOL_MIN = 0.01


def inner_tol_auto(n_tasks, n_edges, n_samples):
    """The inner tolerance of ``inner_tol="auto"`` for a graph of this size."""
    if not n_edges:
        return INNER_TOL
    return float(
        np.clip(INNER_TOL * INNER_TOL_TASKS / n_tasks, INNER_TOL_MIN, INNER_TOL)
    )


def rip_step_fraction(eta_smooth, alpha, edge_weight, inverse_probability):
    """The fraction of the smoothness step that RIP's automatic step takes."""
    if not len(edge_weight) or alpha <= 0:
        return 1.0
    q = eta_smooth * alpha * float(np.max(edge_weight)) * inverse_probability
    return float(np.clip(RIP_STEP * q**RIP_STEP_POWER, RIP_STEP_MIN, 1.0))


@dataclass
class GraphProblem:
    """Data and penalties of one fit, independent of the backend."""

    X: object  # (n, p): the caller's array (task column included), or CSR
    features: object  # column selector of the features: slice or index array
    y: np.ndarray  # (n,) float targets, or int class indices
    task_index: np.ndarray  # (n,) int in [0, n_tasks)
    n_tasks: int
    n_outputs: int  # K: 1 (regression, binary) or n_classes
    loss: str  # "squared", "logistic" or "softmax"
    src: np.ndarray  # (m,) edge endpoints, task indices
    dst: np.ndarray
    edge_weight: np.ndarray  # (m,) a_e > 0
    alpha: float
    l2: float = 0.0
    l1: float = 0.0
    fit_intercept: bool = True
    # (n,) non-negative weights of mean one, or None (every sample weighs one)
    sample_weight: object = None
    # Features are (x - center) / scale (dense X; either may be None)
    center: object = None
    scale: object = None
    n_features: int = field(init=False)

    def __post_init__(self):
        self.n_features = len(np.arange(self.X.shape[1])[self.features])
        self.counts = np.bincount(self.task_index, minlength=self.n_tasks)
        self.order = np.argsort(self.task_index, kind="stable")
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        if self.sample_weight is None:
            self.task_share = self.counts / self.task_index.shape[0]
        else:
            total = np.bincount(
                self.task_index, weights=self.sample_weight, minlength=self.n_tasks
            )
            self.task_share = total / self.sample_weight.sum()

    def feature_rows(self, rows):
        """Feature rows (numpy or CSR), centred and scaled."""
        Xb = self.X[rows]
        if not isinstance(self.features, slice) or self.features != slice(None):
            Xb = Xb[:, self.features]
        if sparse.issparse(Xb):
            return Xb.tocsr()
        if self.center is not None:
            Xb = Xb - self.center
        if self.scale is not None:
            Xb = Xb / self.scale
        return Xb


# --- losses and objective ----------------------------------------------------


def _loss_and_residual(ops, loss, Z, y):
    """Per-sample loss (N,) and its gradient (N, K) with respect to the scores Z.

    ``y`` holds float targets (squared), 0/1 labels (logistic) or class indices
    (softmax).
    """
    if loss == "squared":
        r = Z[:, 0] - y
        return 0.5 * r * r, r[:, None]
    if loss == "logistic":
        z = Z[:, 0]
        return ops.logaddexp0(z) - y * z, (ops.sigmoid(z) - y)[:, None]
    value = ops.logsumexp(Z) - ops.take_along(Z, y)
    R = ops.softmax(Z)
    R[ops.arange(R.shape[0]), y] -= 1.0
    return value, R


def _nonzero_rows(Xb):
    """Row of every stored entry of a CSR matrix."""
    return np.repeat(np.arange(Xb.shape[0]), np.diff(Xb.indptr))


def _scores(ops, Xb, W, B, tb):
    """Scores (N, K) of rows Xb (N, d) under the weights of tasks tb (N,)."""
    if not sparse.issparse(Xb):
        return ops.einsum("nd,nkd->nk", Xb, W[tb]) + B[tb]
    rows = _nonzero_rows(Xb)
    owner = tb[rows]
    N, K = Xb.shape[0], W.shape[1]
    Z = np.empty((N, K))
    for k in range(K):
        Z[:, k] = np.bincount(
            rows, weights=Xb.data * W[owner, k, Xb.indices], minlength=N
        )
    return Z + B[tb]


def _task_gradient(ops, R, Xb, tb, T):
    """Per-task sums ``G[t, k] = sum over rows of task t of R[n, k] x_n``."""
    K = R.shape[1]
    if not sparse.issparse(Xb):
        d = Xb.shape[1]
        return ops.einsum("tbk,tbd->tkd", R.reshape(T, -1, K), Xb.reshape(T, -1, d))
    d = Xb.shape[1]
    rows = _nonzero_rows(Xb)
    flat = tb[rows] * (K * d) + Xb.indices
    G = np.zeros(T * K * d)
    for k in range(K):
        G += np.bincount(
            flat + k * d, weights=Xb.data * R[rows, k], minlength=T * K * d
        )
    return G.reshape(T, K, d)


def objective(problem, W, B, ops=None, chunk=65536, rows=None):
    """Objective ``F(W, B)`` of the problem (float), in chunks of rows.

    With sample weights, the data term is their weighted mean of the losses.

    Parameters
    ----------
    problem : GraphProblem
    W : array of shape (n_tasks, K, d)
    B : array of shape (n_tasks, K)
    ops : backend, default=None
        numpy when None (then W and B are numpy arrays).
    chunk : int, default=65536
        Rows per chunk, which bounds the temporary memory.
    rows : ndarray of int or None, default=None
        Evaluate the data term as the (weighted) mean over these rows only
        (the stopping test's subsample); None: over all rows.

    Returns
    -------
    float
    """
    ops = ops or _NumpyOps(problem)
    n = problem.X.shape[0] if rows is None else len(rows)
    total = 0.0
    for start in range(0, n, chunk):
        part = (
            slice(start, min(start + chunk, n))
            if rows is None
            else rows[start : start + chunk]
        )
        tb = ops.index(problem.task_index[part])
        Z = _scores(ops, ops.features(part), W, B, tb)
        value, _ = _loss_and_residual(ops, problem.loss, Z, ops.targets(part))
        weights = ops.weights(part)
        total += float((value if weights is None else value * weights).sum())
    weights = problem.sample_weight
    if weights is not None:
        n = float(weights.sum() if rows is None else weights[rows].sum())
    value = total / max(n, 1e-300)
    Wf = W.reshape(W.shape[0], -1)
    if problem.l2:
        value += 0.5 * problem.l2 * ops.sum_sq(Wf)
    if problem.l1:
        value += problem.l1 * float(abs(Wf).sum())
    if len(problem.src):
        radii = ops.asarray(problem.alpha * problem.edge_weight)
        value += float((radii * ops.row_norms(ops.D(Wf))).sum())
    return value


# --- proximal operators ---------------------------------------------------------


def prox_edge(ws, wt, lam):
    """Prox of ``lam * ||ws - wt||_2`` at ``(ws, wt)`` (numpy arrays).

    If ``||ws - wt|| <= 2 lam`` both move to their mean; otherwise each moves
    ``lam`` towards the other along ``ws - wt``: both cases are a shift of
    ``min(1/2, lam / ||ws - wt||) * (ws - wt)``, as :func:`apply_edge_proxes`
    computes it.

    Parameters
    ----------
    ws, wt : ndarray
    lam : float, >= 0

    Returns
    -------
    (ndarray, ndarray)
    """
    W = np.vstack([np.ravel(ws), np.ravel(wt)]).astype(float)
    W = apply_edge_proxes(
        _NumpyOps(),
        W,
        np.array([0]),
        np.array([0]),
        np.array([1]),
        np.array([float(lam)]),
    )
    return W[0].reshape(np.shape(ws)), W[1].reshape(np.shape(wt))


def edge_rounds(edges, src, dst):
    """Split a sequence of edges into rounds of node-disjoint edges.

    An edge goes to the round after the last one that holds an earlier edge
    sharing a node with it. Edges of a round commute, and every pair of edges
    that share a node keeps its order, so applying the rounds one after the
    other (each at once) equals applying the edges one by one.
    """
    last = {}
    rounds = []
    for e in edges.tolist():
        s, q = src[e], dst[e]
        r = max(last.get(s, -1), last.get(q, -1)) + 1
        last[s] = last[q] = r
        if r == len(rounds):
            rounds.append([])
        rounds[r].append(e)
    return rounds


def apply_edge_proxes(ops, Wf, edges, src, dst, lam):
    """Apply the edge proxes ``lam[e] * ||W_s - W_t||`` for ``edges``, in order.

    Equal to calling :func:`prox_edge` on each edge in turn, but vectorised over
    rounds of node-disjoint edges (:func:`edge_rounds`).
    """
    for group in edge_rounds(edges, src, dst):
        Wf = _edge_round(ops, Wf, np.asarray(group), src, dst, lam)
    return Wf


def prox_graph(ops, V, radii, l1, Y, D_norm2, max_iter=50, tol=1e-2):
    """Prox of ``sum_e radii_e ||(D W)_e|| + l1 |W|_1`` at V, by its dual.

    For dual variables ``Y`` (one row per edge, ``||Y_e|| <= radii_e``) the
    minimising primal point is ``W(Y) = soft_threshold(V - D^T Y, l1)``, and the
    dual function is concave with a ``||D||^2``-Lipschitz gradient ``D W(Y)``.
    Accelerated projected gradient (FISTA) ascends it; since the dual is strongly
    concave in ``D^T Y``, ``W(Y)`` converges even where Y is not unique (fused
    tasks). The iterations stop when W moves by less than ``tol`` relative to the
    prox's displacement ``|W - V|``. Zeros of the l1 term are exact. ``Y``
    warm-starts the iterations and is returned updated.

    Returns
    -------
    W, Y, n_inner
    """

    def primal(Yv):
        W = V - ops.DT(Yv)
        return ops.soft_threshold(W, l1) if l1 else W

    step = 1.0 / D_norm2
    rad = radii[:, None]
    Yk = Yprev = Y
    W_prev = None
    t = 1.0
    n_inner = 0
    for _ in range(max_iter):
        n_inner += 1
        W = primal(Yk)
        Yn = Yk + step * ops.D(W)
        Yn = Yn * ops.minimum(1.0, rad / (ops.row_norms(Yn)[:, None] + 1e-300))
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        Yk = Yn + ((t - 1.0) / t_next) * (Yn - Yprev)
        Yprev, t = Yn, t_next
        # Relative to the prox's own displacement W - V, which shrinks with the
        # step: a tolerance relative to |W| would stop early once eta is small
        # and leave a bias of the order of the prox's effect.
        if W_prev is not None and ops.sum_sq(W - W_prev) <= tol * tol * max(
            ops.sum_sq(W - V), 1e-300
        ):
            break
        W_prev = W
    return primal(Yprev), Yprev, n_inner


# --- the solvers --------------------------------------------------------------


def step_size_auto(problem, batch_size):
    """eta0 = 1 / (largest expected smoothness of a task's stochastic block).

    The task-t block of the stochastic gradient is ``(n_t / n)`` times the mean
    gradient of ``b = batch_size`` samples drawn with replacement, whose expected
    smoothness is ``(1 - 1/b) L_t + (1/b) max_i c ||x~_i||^2`` with ``L_t = c *
    lambda_max(X~_t' X~_t / n_t)`` (Gower et al., 2019); ``c`` is 1 for the
    squared loss, 1/4 logistic, 1/2 softmax, and ``x~`` includes the intercept's 1.
    With sample weights (rows drawn in proportion to them), ``X~_t' X~_t / n_t``
    is their weighted mean of ``x~ x~'`` and the maximum runs over the rows of
    positive weight. The l2 strength adds to every block. Features are taken as
    the solver sees them (centred and scaled).
    """
    c = _CURVATURE[problem.loss]
    b = batch_size
    smooth = np.zeros(problem.n_tasks)
    for t in range(problem.n_tasks):
        rows = problem.order[problem.starts[t] : problem.starts[t] + problem.counts[t]]
        w = None
        if problem.sample_weight is not None:
            w = problem.sample_weight[rows]
            rows, w = rows[w > 0], w[w > 0]
        if not len(rows):
            continue  # a task without (weighted) rows: its gradient block is 0
        Xt = problem.feature_rows(rows)
        if sparse.issparse(Xt):
            if problem.fit_intercept:
                Xt = sparse.hstack([Xt, np.ones((Xt.shape[0], 1))]).tocsr()
            max_sq = float(Xt.multiply(Xt).sum(axis=1).max())
        else:
            if problem.fit_intercept:
                Xt = np.column_stack([Xt, np.ones(len(Xt))])
            max_sq = float(np.einsum("ij,ij->i", Xt, Xt).max())
        if w is None:
            lam = _top_eigenvalue(Xt) / Xt.shape[0]
        else:
            root = np.sqrt(w / w.sum())
            scaled = (
                sparse.diags(root) @ Xt if sparse.issparse(Xt) else Xt * root[:, None]
            )
            lam = _top_eigenvalue(scaled)
        smooth[t] = c * ((1.0 - 1.0 / b) * lam + max_sq / b)
    L = problem.task_share * smooth + problem.l2
    return 1.0 / max(float(L.max()), 1e-12)


def _top_eigenvalue(A, n_iter=30):
    """Largest eigenvalue of ``A' A``: exact for few columns, else power iteration."""
    if A.shape[1] <= 256:
        gram = A.T @ A
        gram = gram.toarray() if sparse.issparse(gram) else gram
        return float(np.linalg.eigvalsh(gram)[-1])
    v = np.ones(A.shape[1]) / np.sqrt(A.shape[1])
    value = 0.0
    for _ in range(n_iter):
        w = A.T @ (A @ v)
        value = float(np.linalg.norm(w))
        v = w / max(value, 1e-300)
    return value


@dataclass
class SolverState:
    """Where a run stopped, to continue it (``partial_fit``, warm starts).

    Arrays are numpy, in the solver's (centred and scaled) coordinates.
    ``t`` counts the iterations run, which sets the next step; ``dual`` holds
    the edges' dual variables: the warm start of ``prox_sgd``'s prox, or
    ``rip``'s table of edge subgradients (None without edges or memory).
    """

    W: np.ndarray
    B: np.ndarray
    W_avg: np.ndarray
    B_avg: np.ndarray
    t: int = 0
    dual: object = None
    dual_alpha: float = 0.0  # the alpha the dual variables were computed for


@dataclass
class SolveResult:
    W: object
    B: object
    W_avg: object
    B_avg: object
    n_iter: int
    converged: bool
    curve: list
    state: SolverState
    eta0: float
    # prox_sgd: prox calls, dual iterations in all, calls that hit the cap
    inner: dict = field(default_factory=dict)


def check_rows(problem, batch_size):
    """Rows the stopping test evaluates the objective on (evenly spaced)."""
    n = problem.X.shape[0]
    size = max(CHECK_ROWS, 10 * problem.n_tasks * batch_size)
    if n <= size:
        return None
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.intp))


def solve(
    problem,
    *,
    solver="rip",
    batch_size=8,
    edges_per_step=1,
    edge_sampling="matching",
    edge_memory=True,
    eta0=None,
    max_iter=10000,
    tol=None,
    n_iter_no_change=5,
    average=False,
    record_objective=False,
    inner_max_iter=200,
    inner_tol=0.3,
    rng=None,
    device=None,
    state=None,
    progress=None,
    callback=None,
    check_every=CHECK_EVERY,
):
    """Run the stochastic proximal iterations; see the module docstring.

    ``state`` (a :class:`SolverState`) continues a run: its weights, step
    counter and dual variables. ``callback(t, W, B)``, when given, is called
    after every iteration with the backend's arrays (for benchmarks' traces);
    a true return value stops the run. ``check_every``: iterations between
    two evaluations of the stopping test.

    Returns
    -------
    SolveResult
        Last and averaged iterates (numpy), iterations run, whether the stopping
        rule was met (always False when ``tol`` is None), the objective trace
        as rows ``(iteration, F(last), F(average))`` when ``record_objective``,
        the state to continue from, the step used and the inner statistics.
    """
    ops = _NumpyOps(problem) if device is None else _TorchOps(problem, device)
    T, K, d = problem.n_tasks, problem.n_outputs, problem.n_features
    if isinstance(inner_tol, str):  # "auto"
        inner_tol = inner_tol_auto(T, len(problem.src), problem.X.shape[0])
    b = batch_size
    t0 = 0 if state is None else state.t
    if state is None:
        W, B = ops.zeros((T, K, d)), ops.zeros((T, K))
        W_avg, B_avg = W * 1.0, B * 1.0
    else:
        W, B = ops.asarray(state.W), ops.asarray(state.B)
        W_avg, B_avg = ops.asarray(state.W_avg), ops.asarray(state.B_avg)
    share = ops.asarray(problem.task_share)[:, None, None] / b
    prox = _ProxStep(
        problem,
        ops,
        solver,
        edges_per_step,
        edge_sampling,
        edge_memory,
        inner_max_iter,
        inner_tol,
        state,
    )
    if eta0 is None:
        eta0 = step_size_auto(problem, batch_size)
        if solver == "rip" and len(problem.src):
            eta0 *= rip_step_fraction(
                eta0, problem.alpha, problem.edge_weight, prox.scale
            )
    eta0 = float(eta0)
    draw_rows = _row_sampler(problem)
    sub = None if tol is None else check_rows(problem, batch_size)
    end = t0 + max_iter
    checkpoints = set(
        (t0 + np.unique(np.geomspace(1, max_iter, 60).astype(int))).tolist()
    )
    checkpoints |= {t0 + 10**k for k in range(int(math.log10(max_iter)) + 1)} | {end}
    curve = []
    best, stall, converged, stopped = math.inf, 0, False, False
    block = max(1, min(1024, (1 << 20) // max(1, T * b)))
    tb = ops.index(np.repeat(np.arange(T), b))
    t = t0
    while t < end and not (converged or stopped):
        # Draw a block of iterations' samples and edges at once, on the CPU.
        n_block = min(block, end - t)
        rows_block = ops.index(draw_rows(rng.random_sample((n_block, T, b))))
        edges_block = prox.draw(rng, n_block)
        for j in range(n_block):
            eta = eta0 / math.sqrt(t + 1.0)
            W, B = _gradient_step(
                problem, ops, W, B, rows_block[j].reshape(-1), tb, share, eta
            )
            edges = None if edges_block is None else edges_block[j]
            W = prox(W.reshape(T, K * d), eta, edges, t).reshape(T, K, d)
            t += 1
            if average or record_objective:
                n_avg = t - t0 if state is None else t
                W_avg = W_avg + (W - W_avg) / n_avg
                B_avg = B_avg + (B - B_avg) / n_avg
            if record_objective and t in checkpoints:
                f_last = objective(problem, W, B, ops)
                curve.append((t, f_last, objective(problem, W_avg, B_avg, ops)))
            if tol is not None and (t - t0) % check_every == 0:
                Wc, Bc = (W_avg, B_avg) if average else (W, B)
                f = objective(problem, Wc, Bc, ops, rows=sub)
                stall = stall + 1 if f > best - tol * max(abs(best), 1e-12) else 0
                best = min(best, f)
                if stall >= n_iter_no_change:
                    converged = True
            if progress is not None:
                progress.update(1)
            if callback is not None and callback(t, W, B):
                stopped = True
            if converged or stopped:
                break
    W_np, B_np = ops.to_numpy(W), ops.to_numpy(B)
    Wa_np, Ba_np = ops.to_numpy(W_avg), ops.to_numpy(B_avg)
    return SolveResult(
        W=W_np,
        B=B_np,
        W_avg=Wa_np,
        B_avg=Ba_np,
        n_iter=t - t0,
        converged=converged,
        curve=curve,
        state=SolverState(
            W_np, B_np, Wa_np, Ba_np, t, prox.dual_numpy(), problem.alpha
        ),
        eta0=eta0,
        inner=dict(prox.inner),
    )


def _row_sampler(problem):
    """``draw(u)``: rows of X for uniform draws ``u`` of shape (..., T, b).

    Row ``k`` of task t is drawn with probability ``w_k / W_t`` (``1 / n_t``
    without sample weights): ``u`` scaled to the task's total weight, located
    in the cumulative weights of its rows. Rows of zero weight are never drawn.
    A task without rows (a streamed batch, a cross-validation fold) draws row
    0, whose gradient its zero share cancels.
    """
    counts, starts, order = problem.counts, problem.starts, problem.order
    n = len(order)
    if problem.sample_weight is None:

        def draw(u):
            within = (u * counts[:, None]).astype(np.intp)
            return order[np.minimum(starts[:, None] + within, n - 1)]

        return draw

    weights = problem.sample_weight[order]
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    safe = np.minimum(starts, n - 1)
    before = cum[starts]
    total = cum[starts + counts] - before
    # The last row of positive weight of each task (its first row if none):
    # where a draw that rounds up to the task's end lands.
    positive = np.where(weights > 0, np.arange(len(weights)), -1)
    last = np.maximum(np.maximum.reduceat(positive, safe), safe)
    last = np.where(counts > 0, last, safe)

    def draw(u):
        pos = np.searchsorted(cum[1:], before[:, None] + u * total[:, None], "right")
        return order[np.clip(pos, safe[:, None], last[:, None])]

    return draw


def _gradient_step(problem, ops, W, B, rows, tb, share, eta):
    """The stochastic gradient step of one iteration on the drawn ``rows``."""
    T, K, d = W.shape
    Xb = ops.features(rows)
    _, R = _loss_and_residual(
        ops, problem.loss, _scores(ops, Xb, W, B, tb), ops.targets(rows)
    )
    gW = _task_gradient(ops, R, Xb, tb, T) * share
    if problem.l2:
        gW = gW + problem.l2 * W
    W = W - eta * gW
    if problem.fit_intercept:
        B = B - eta * R.reshape(T, -1, K).sum(1) * share[:, :, 0]
    return W, B


def edge_colouring(src, dst, n_nodes):
    """Greedy proper edge colouring: a colour per edge, no two sharing a node.

    Each colour class is a matching. Edges are coloured in the order of their
    endpoints' decreasing degree, each with the smallest colour free at both
    ends, which uses at most ``2 * max_degree - 1`` colours (usually close to
    ``max_degree``).
    """
    degree = np.bincount(src, minlength=n_nodes) + np.bincount(dst, minlength=n_nodes)
    order = np.argsort(-(degree[src] + degree[dst]), kind="stable")
    used = [set() for _ in range(n_nodes)]
    colour = np.empty(len(src), dtype=np.intp)
    for e in order.tolist():
        s, q = int(src[e]), int(dst[e])
        taken = used[s] | used[q]
        c = 0
        while c in taken:
            c += 1
        colour[e] = c
        used[s].add(c)
        used[q].add(c)
    return colour


class _ProxStep:
    """The proximal step of one iteration of ``"rip"`` or ``"prox_sgd"``.

    It keeps the solver's state between iterations: the dual variables that
    warm-start the prox of ``"prox_sgd"``, or the table of edge subgradients of
    ``"rip"`` with memory.
    """

    def __init__(
        self,
        problem,
        ops,
        solver,
        edges_per_step,
        edge_sampling,
        edge_memory,
        inner_max_iter,
        tol,
        state,
    ):
        self.problem, self.ops, self.solver = problem, ops, solver
        self.edges_per_step = edges_per_step
        self.inner_max_iter, self.inner_tol = inner_max_iter, tol
        self.radii = problem.alpha * problem.edge_weight
        self.inner = {"calls": 0, "iterations": 0, "capped": 0}
        m = len(problem.src)
        K, d = problem.n_outputs, problem.n_features
        self.m = m
        self.scale = 1.0  # rip: 1 / P(an edge is drawn), set below
        self.sampling = edge_sampling
        self.memory = solver == "rip" and edge_memory and m > 0
        dual = None if state is None else state.dual
        if dual is not None and state.dual_alpha and problem.alpha != state.dual_alpha:
            # A new alpha (a path): the duals keep their direction, scaled to
            # the new radii.
            dual = dual * (problem.alpha / state.dual_alpha)
        if solver == "prox_sgd":
            self.radii_ops = ops.asarray(self.radii)
            self.Y_dual = ops.zeros((m, K * d)) if dual is None else ops.asarray(dual)
            self.D_norm2 = _laplacian_norm(problem) if m else 0.0
            self.prev_eta = None
        elif m:
            if edge_sampling == "matching":
                colour = edge_colouring(problem.src, problem.dst, problem.n_tasks)
                self.classes = [
                    np.flatnonzero(colour == c) for c in range(colour.max() + 1)
                ]
                self.scale = float(len(self.classes))  # 1 / P(edge drawn)
            else:
                self.scale = m / edges_per_step
            if self.memory:
                self.Y = ops.zeros((m, K * d)) if dual is None else ops.asarray(dual)
                # Z = D' Y: the sum of the stored edge subgradients, per node
                self.Z = ops.DT(self.Y)

    def draw(self, rng, n_block):
        """The edges of ``n_block`` iterations (None without edges or for prox_sgd)."""
        if self.solver != "rip" or not self.m:
            return None
        if self.sampling == "matching":
            return rng.randint(len(self.classes), size=n_block)
        return rng.randint(self.m, size=(n_block, self.edges_per_step))

    def dual_numpy(self):
        if self.solver == "prox_sgd" and self.m:
            return self.ops.to_numpy(self.Y_dual)
        if self.memory:
            return self.ops.to_numpy(self.Y)
        return None

    def __call__(self, Wf, eta, edges, t):
        """Prox at the flat weights ``Wf`` (T, K * d) with step ``eta``.

        ``edges`` are the edges drawn for this iteration (``"rip"``): a colour
        class (matching) or edge indices; ``t`` the iteration (``"prox_sgd"``'s
        tightening tolerance).
        """
        problem, ops = self.problem, self.ops
        if self.solver == "rip":
            if self.m:
                Wf = self._edge_proxes(Wf, eta, edges)
            if problem.l1:  # last, so that its zeros are exact
                Wf = ops.soft_threshold(Wf, eta * problem.l1)
            return Wf
        if self.m:
            if self.prev_eta is not None:  # rescale the warm start to the new radii
                self.Y_dual = self.Y_dual * (eta / self.prev_eta)
            self.prev_eta = eta
            Wf, self.Y_dual, n_inner = prox_graph(
                ops,
                Wf,
                eta * self.radii_ops,
                eta * problem.l1,
                self.Y_dual,
                self.D_norm2,
                max_iter=self.inner_max_iter,
                tol=self.inner_tol / math.sqrt(t + 1.0),
            )
            self.inner["calls"] += 1
            self.inner["iterations"] += n_inner
            self.inner["capped"] += n_inner >= self.inner_max_iter
        elif problem.l1:
            Wf = ops.soft_threshold(Wf, eta * problem.l1)
        return Wf

    def _edge_proxes(self, Wf, eta, edges):
        """RIP's proxes of the drawn edges (with the table, under memory)."""
        problem, ops = self.problem, self.ops
        lam = eta * self.scale * self.radii
        if self.sampling == "matching":
            rounds = [self.classes[edges]]
        else:
            rounds = [
                np.asarray(r) for r in edge_rounds(edges, problem.src, problem.dst)
            ]
        if not self.memory:
            for group in rounds:
                Wf = _edge_round(ops, Wf, group, problem.src, problem.dst, lam)
            return Wf
        # Point-SAGA on the graph term: step with the whole stored
        # subgradient, then each drawn edge trades its stored entry for
        # its prox.
        Wf = Wf - eta * self.Z
        for group in rounds:
            s = ops.index(problem.src[group])
            q = ops.index(problem.dst[group])
            g = ops.index(group)
            old = self.Y[g]
            step = eta * self.scale
            Wf[s] = Wf[s] + step * old
            Wf[q] = Wf[q] - step * old
            Wf, shift = _edge_round(
                ops, Wf, group, problem.src, problem.dst, lam, return_shift=True
            )
            new = shift / step
            self.Y[g] = new
            delta = new - old
            self.Z = ops.scatter_edges(self.Z, s, q, delta)
        return Wf


def _edge_round(ops, Wf, group, src, dst, lam, return_shift=False):
    """Proxes of the node-disjoint edges ``group`` at once (see prox_edge)."""
    s, q = ops.index(src[group]), ops.index(dst[group])
    diff = Wf[s] - Wf[q]
    factor = ops.minimum(0.5, ops.asarray(lam[group]) / (ops.row_norms(diff) + 1e-300))[
        :, None
    ]
    shift = factor * diff
    Wf[s] = Wf[s] - shift
    Wf[q] = Wf[q] + shift
    return (Wf, shift) if return_shift else Wf


def _laplacian_norm(problem):
    """Largest eigenvalue of the (unweighted) graph Laplacian, ``||D||_2^2``."""
    T, src, dst = problem.n_tasks, problem.src, problem.dst
    if T > 2000:
        degree = np.bincount(src, minlength=T) + np.bincount(dst, minlength=T)
        return 2.0 * float(degree.max())  # Gershgorin bound
    lap = np.zeros((T, T))
    np.add.at(lap, (src, src), 1.0)
    np.add.at(lap, (dst, dst), 1.0)
    np.add.at(lap, (src, dst), -1.0)
    np.add.at(lap, (dst, src), -1.0)
    return float(np.linalg.eigvalsh(lap)[-1])
