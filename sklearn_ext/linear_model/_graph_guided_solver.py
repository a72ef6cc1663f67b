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
  every step), then the closed-form prox of ``edges_per_step`` edge terms drawn
  uniformly, each scaled by ``m / edges_per_step`` so that the expected
  regulariser is the whole graph term;
- ``prox_sgd``: the prox of the whole nonsmooth part (graph + l1), computed by
  accelerated projected gradient on its dual, warm-started from the previous
  iteration's dual variables.

Random draws come from a numpy generator in blocks of iterations, so the numpy
(CPU) and torch (GPU) backends of ``_graph_guided_ops.py`` run the very same
iterations.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass, field

import numpy as np

from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps, _TorchOps

__all__ = ["GraphProblem", "objective", "prox_edge", "prox_graph", "solve"]

_CURVATURE = {"squared": 1.0, "logistic": 0.25, "softmax": 0.5}


@dataclass
class GraphProblem:
    """Data and penalties of one fit, independent of the backend."""

    X: np.ndarray  # (n, p): the caller's array, task column included
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


def _scores(ops, Xb, W, B, tb):
    """Scores (N, K) of rows Xb (N, d) under the weights of tasks tb (N,)."""
    return ops.einsum("nd,nkd->nk", Xb, W[tb]) + B[tb]


def objective(problem, W, B, ops=None, chunk=65536):
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

    Returns
    -------
    float
    """
    ops = ops or _NumpyOps(problem)
    n = problem.X.shape[0]
    total = 0.0
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        tb = ops.index(problem.task_index[rows])
        Z = _scores(ops, ops.features(rows), W, B, tb)
        value, _ = _loss_and_residual(ops, problem.loss, Z, ops.targets(rows))
        weights = ops.weights(rows)
        total += float((value if weights is None else value * weights).sum())
    weights = problem.sample_weight
    value = total / (n if weights is None else float(weights.sum()))
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
        group = np.asarray(group)
        s, q = ops.index(src[group]), ops.index(dst[group])
        diff = Wf[s] - Wf[q]
        factor = ops.minimum(
            0.5, ops.asarray(lam[group]) / (ops.row_norms(diff) + 1e-300)
        )[:, None]
        Wf[s] = Wf[s] - factor * diff
        Wf[q] = Wf[q] + factor * diff
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
    positive weight. The l2 strength adds to every block.
    """
    X, feats, c = problem.X, problem.features, _CURVATURE[problem.loss]
    b = batch_size
    smooth = np.zeros(problem.n_tasks)
    for t in range(problem.n_tasks):
        rows = problem.order[problem.starts[t] : problem.starts[t] + problem.counts[t]]
        if problem.sample_weight is not None:
            w = problem.sample_weight[rows]
            rows, w = rows[w > 0], w[w > 0]
            if not len(rows):
                continue  # a task of zero weight: its block of the gradient is 0
        Xt = X[rows][:, feats]
        if problem.fit_intercept:
            Xt = np.column_stack([Xt, np.ones(len(Xt))])
        max_sq = float(np.einsum("ij,ij->i", Xt, Xt).max())
        if problem.sample_weight is None:
            lam = _top_eigenvalue(Xt) / len(Xt)
        else:
            lam = _top_eigenvalue(Xt * np.sqrt(w / w.sum())[:, None])
        smooth[t] = c * ((1.0 - 1.0 / b) * lam + max_sq / b)
    L = problem.task_share * smooth + problem.l2
    return 1.0 / max(float(L.max()), 1e-12)


def _top_eigenvalue(A, n_iter=30):
    """Largest eigenvalue of ``A' A``: exact for few columns, else power iteration."""
    if A.shape[1] <= 256:
        return float(np.linalg.eigvalsh(A.T @ A)[-1])
    v = np.ones(A.shape[1]) / np.sqrt(A.shape[1])
    value = 0.0
    for _ in range(n_iter):
        w = A.T @ (A @ v)
        value = float(np.linalg.norm(w))
        v = w / max(value, 1e-300)
    return value


@dataclass
class SolveResult:
    W: object
    B: object
    W_avg: object
    B_avg: object
    n_iter: int
    converged: bool
    curve: list


def solve(
    problem,
    *,
    solver="rip",
    batch_size=8,
    edges_per_step=1,
    eta0=None,
    max_iter=10000,
    tol=None,
    n_iter_no_change=5,
    average=False,
    record_objective=False,
    inner_max_iter=50,
    inner_tol=1e-2,
    rng=None,
    device=None,
    W0=None,
    B0=None,
    progress=None,
):
    """Run the stochastic proximal iterations; see the module docstring.

    Returns
    -------
    SolveResult
        Last and averaged iterates (numpy), iterations run, whether the stopping
        rule was met (always False when ``tol`` is None), and the objective trace
        as rows ``(iteration, F(last), F(average))`` when ``record_objective``.
    """
    ops = _NumpyOps(problem) if device is None else _TorchOps(problem, device)
    T, K, d = problem.n_tasks, problem.n_outputs, problem.n_features
    b, m = batch_size, len(problem.src)
    eta0 = step_size_auto(problem, batch_size) if eta0 is None else float(eta0)
    W = ops.zeros((T, K, d)) if W0 is None else ops.asarray(W0)
    B = ops.zeros((T, K)) if B0 is None else ops.asarray(B0)
    W_avg, B_avg = W * 1.0, B * 1.0
    share = ops.asarray(problem.task_share)[:, None, None] / b
    prox = _ProxStep(problem, ops, solver, edges_per_step, inner_max_iter, inner_tol)
    draw_rows = _row_sampler(problem)
    check_every = max(50, math.ceil(problem.X.shape[0] / (T * b)))
    checkpoints = set(np.unique(np.geomspace(1, max_iter, 60).astype(int)).tolist())
    checkpoints |= {10**k for k in range(int(math.log10(max_iter)) + 1)} | {max_iter}
    curve = []
    best, stall, converged = math.inf, 0, False
    block = max(1, min(1024, (1 << 20) // max(1, T * b)))
    tb = ops.index(np.repeat(np.arange(T), b))
    t = 0
    while t < max_iter and not converged:
        # Draw a block of iterations' samples and edges at once, on the CPU.
        n_block = min(block, max_iter - t)
        rows_block = ops.index(draw_rows(rng.random_sample((n_block, T, b))))
        edges_block = rng.randint(m, size=(n_block, edges_per_step)) if m else None
        for j in range(n_block):
            eta = eta0 / math.sqrt(t + 1.0)
            W, B = _gradient_step(
                problem, ops, W, B, rows_block[j].reshape(-1), tb, share, eta
            )
            edges = None if edges_block is None else edges_block[j]
            W = prox(W.reshape(T, K * d), eta, edges).reshape(T, K, d)
            t += 1
            if average or record_objective:
                W_avg = W_avg + (W - W_avg) / t
                B_avg = B_avg + (B - B_avg) / t
            if record_objective and t in checkpoints:
                f_last = objective(problem, W, B, ops)
                curve.append((t, f_last, objective(problem, W_avg, B_avg, ops)))
            if tol is not None and t % check_every == 0:
                Wc, Bc = (W_avg, B_avg) if average else (W, B)
                f = objective(problem, Wc, Bc, ops)
                stall = stall + 1 if f > best - tol * max(abs(best), 1e-12) else 0
                best = min(best, f)
                if stall >= n_iter_no_change:
                    converged = True
                    break
            if progress is not None:
                progress.update(1)
    return SolveResult(
        W=ops.to_numpy(W),
        B=ops.to_numpy(B),
        W_avg=ops.to_numpy(W_avg),
        B_avg=ops.to_numpy(B_avg),
        n_iter=t,
        converged=converged,
        curve=curve,
    )


def _row_sampler(problem):
    """``draw(u)``: rows of X for uniform draws ``u`` of shape (..., T, b).

    Row ``k`` of task t is drawn with probability ``w_k / W_t`` (``1 / n_t``
    without sample weights): ``u`` scaled to the task's total weight, located
    in the cumulative weights of its rows. Rows of zero weight are never drawn.
    """
    counts, starts, order = problem.counts, problem.starts, problem.order
    if problem.sample_weight is None:

        def draw(u):
            within = (u * counts[:, None]).astype(np.intp)
            return order[starts[:, None] + within]

        return draw

    weights = problem.sample_weight[order]
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    before = cum[starts]
    total = cum[starts + counts] - before
    # The last row of positive weight of each task (its first row if none):
    # where a draw that rounds up to the task's end lands.
    positive = np.where(weights > 0, np.arange(len(weights)), -1)
    last = np.maximum(np.maximum.reduceat(positive, starts), starts)

    def draw(u):
        pos = np.searchsorted(cum[1:], before[:, None] + u * total[:, None], "right")
        return order[np.clip(pos, starts[:, None], last[:, None])]

    return draw


def _gradient_step(problem, ops, W, B, rows, tb, share, eta):
    """The stochastic gradient step of one iteration on the drawn ``rows``."""
    T, K, d = W.shape
    Xb = ops.features(rows)
    _, R = _loss_and_residual(
        ops, problem.loss, _scores(ops, Xb, W, B, tb), ops.targets(rows)
    )
    R = R.reshape(T, -1, K)
    gW = ops.einsum("tbk,tbd->tkd", R, Xb.reshape(T, -1, d)) * share
    if problem.l2:
        gW = gW + problem.l2 * W
    W = W - eta * gW
    if problem.fit_intercept:
        B = B - eta * R.sum(1) * share[:, :, 0]
    return W, B


class _ProxStep:
    """The proximal step of one iteration of ``"rip"`` or ``"prox_sgd"``.

    It keeps the solver's state between iterations: the dual variables that
    warm-start the prox of ``"prox_sgd"``.
    """

    def __init__(self, problem, ops, solver, edges_per_step, inner_max_iter, tol):
        self.problem, self.ops, self.solver = problem, ops, solver
        self.edges_per_step = edges_per_step
        self.inner_max_iter, self.inner_tol = inner_max_iter, tol
        self.radii = problem.alpha * problem.edge_weight
        m = len(problem.src)
        if solver == "prox_sgd":
            K, d = problem.n_outputs, problem.n_features
            self.radii_ops = ops.asarray(self.radii)
            self.Y_dual = ops.zeros((m, K * d))
            self.D_norm2 = _laplacian_norm(problem) if m else 0.0
            self.prev_eta = None

    def __call__(self, Wf, eta, edges):
        """Prox at the flat weights ``Wf`` (T, K * d) with step ``eta``.

        ``edges`` are the edges drawn for this iteration (used by ``"rip"``).
        """
        problem, ops = self.problem, self.ops
        m = len(problem.src)
        if self.solver == "rip":
            if problem.l1:
                Wf = ops.soft_threshold(Wf, eta * problem.l1)
            if m:
                scale = eta * m / self.edges_per_step
                Wf = apply_edge_proxes(
                    ops, Wf, edges, problem.src, problem.dst, scale * self.radii
                )
            return Wf
        if m:
            if self.prev_eta is not None:  # rescale the warm start to the new radii
                self.Y_dual = self.Y_dual * (eta / self.prev_eta)
            self.prev_eta = eta
            Wf, self.Y_dual, _ = prox_graph(
                ops,
                Wf,
                eta * self.radii_ops,
                eta * problem.l1,
                self.Y_dual,
                self.D_norm2,
                max_iter=self.inner_max_iter,
                tol=self.inner_tol,
            )
        elif problem.l1:
            Wf = ops.soft_threshold(Wf, eta * problem.l1)
        return Wf


def _laplacian_norm(problem):
    """Largest eigenvalue of the (unweighted) graph Laplacian, ``||D||_2^2``."""
    T, src, dst = problem.n_tasks, problem.src, problem.dst
    lap = np.zeros((T, T))
    np.add.at(lap, (src, src), 1.0)
    np.add.at(lap, (dst, dst), 1.0)
    np.add.at(lap, (src, dst), -1.0)
    np.add.at(lap, (dst, src), -1.0)
    if T <= 2000:
        return float(np.linalg.eigvalsh(lap)[-1])
    return 2.0 * float(np.diag(lap).max())  # Gershgorin bound
