"""Objective, proximal operators and stochastic solvers of graph-guided models.

The problem, for tasks t = 1..T with weights W[t] (K x d) and intercepts B[t]::

    F(W, B) = (1/n) sum_i loss(y_i, W[t_i] x_i + B[t_i])                 (data)
              + (l2 / 2) sum_t ||W[t]||^2   or   l1 sum_t |W[t]|_1       (task term)
              + alpha sum_{e=(s,t)} a_e ||W[s] - W[t]||_F                (graph)

Both solvers draw, at every iteration, ``batch_size`` samples from each task
(uniformly within the task) and form the unbiased stochastic gradient of the data
term, whose task-t block is ``(n_t / n) * mean of the drawn samples' gradients``.
They then apply a proximal step with step ``eta_t = eta0 / sqrt(t + 1)``:

- ``rip`` (randomized incremental proximal method): the l1 prox (closed form,
  every step), then the closed-form prox of ``edges_per_step`` edge terms drawn
  uniformly, each scaled by ``m / edges_per_step`` so that the expected
  regulariser is the whole graph term;
- ``prox_sgd``: the prox of the whole nonsmooth part (graph + l1), computed by
  accelerated projected gradient on its dual, warm-started from the previous
  iteration's dual variables.

Random draws come from a numpy generator in blocks of iterations, so the numpy
(CPU) and torch (GPU) backends run the very same iterations.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

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
    n_features: int = field(init=False)

    def __post_init__(self):
        self.n_features = len(np.arange(self.X.shape[1])[self.features])
        self.counts = np.bincount(self.task_index, minlength=self.n_tasks)
        self.order = np.argsort(self.task_index, kind="stable")
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        self.task_share = self.counts / self.task_index.shape[0]


# --- backends ----------------------------------------------------------------


class _NumpyOps:
    name = "numpy"
    dtype = np.float64

    def __init__(self, problem=None):
        """Array operations in numpy; with a problem, also its data and graph."""
        if problem is None:
            return
        self._X, self._feats = problem.X, problem.features
        self._y = problem.y
        m, T = len(problem.src), problem.n_tasks
        rows = np.repeat(np.arange(m), 2)
        cols = np.column_stack([problem.src, problem.dst]).ravel()
        vals = np.tile([1.0, -1.0], m)
        self._D = sparse.csr_matrix((vals, (rows, cols)), shape=(m, T))
        self._DT = self._D.T.tocsr()

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype or self.dtype)

    def index(self, a):
        return np.asarray(a, dtype=np.intp)

    def features(self, rows):
        """Feature rows: an index array, or a slice for a contiguous chunk."""
        return self._X[rows][:, self._feats]

    def targets(self, rows):
        return self._y[rows]

    def zeros(self, shape):
        return np.zeros(shape, dtype=self.dtype)

    def to_numpy(self, a):
        return np.array(a, dtype=np.float64)

    einsum = staticmethod(np.einsum)

    @staticmethod
    def sum_sq(a):
        return float(np.vdot(a, a))

    @staticmethod
    def row_norms(a):
        return np.sqrt(np.einsum("ij,ij->i", a, a))

    @staticmethod
    def soft_threshold(a, thr):
        return np.sign(a) * np.maximum(np.abs(a) - thr, 0.0)

    @staticmethod
    def minimum(a, b):
        return np.minimum(a, b)

    @staticmethod
    def logaddexp0(z):
        return np.logaddexp(0.0, z)

    @staticmethod
    def sigmoid(z):
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    @staticmethod
    def logsumexp(z):
        zmax = z.max(axis=-1, keepdims=True)
        return np.log(np.exp(z - zmax).sum(axis=-1)) + zmax[..., 0]

    @staticmethod
    def softmax(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    @staticmethod
    def take_along(z, idx):
        return np.take_along_axis(z, idx[..., None], axis=-1)[..., 0]

    @staticmethod
    def arange(n):
        return np.arange(n)

    def D(self, W):
        return self._D @ W

    def DT(self, Y):
        return self._DT @ Y


class _TorchOps:
    name = "torch"

    def __init__(self, problem, device):
        from sklearn_ext.utils._torch import import_torch

        self.torch = torch = import_torch()
        self.device = device
        self.dtype = torch.float32
        # The features and targets go to the device once; iterations index there.
        self._X = torch.zeros((problem.X.shape[0], problem.n_features), device=device)
        for start in range(0, problem.X.shape[0], 65536):
            chunk = problem.X[start : start + 65536][:, problem.features]
            self._X[start : start + len(chunk)] = torch.tensor(chunk, dtype=self.dtype)
        ydtype = torch.int64 if problem.loss == "softmax" else self.dtype
        self._y = torch.tensor(problem.y, dtype=ydtype, device=device)
        self._src = torch.as_tensor(problem.src, device=device)
        self._dst = torch.as_tensor(problem.dst, device=device)
        self._T = problem.n_tasks

    def asarray(self, a, dtype=None):
        return self.torch.tensor(
            np.asarray(a), dtype=dtype or self.dtype, device=self.device
        )

    def index(self, a):
        return self.torch.as_tensor(np.asarray(a, dtype=np.int64), device=self.device)

    def features(self, rows):
        return self._X[rows]

    def targets(self, rows):
        return self._y[rows]

    def zeros(self, shape):
        return self.torch.zeros(shape, dtype=self.dtype, device=self.device)

    def to_numpy(self, a):
        return a.detach().cpu().numpy().astype(np.float64)

    def einsum(self, spec, *args):
        return self.torch.einsum(spec, *args)

    def sum_sq(self, a):
        return float((a * a).sum())

    def row_norms(self, a):
        return self.torch.linalg.vector_norm(a, dim=1)

    def soft_threshold(self, a, thr):
        return self.torch.sign(a) * self.torch.clamp_min(a.abs() - thr, 0.0)

    def minimum(self, a, b):
        """Elementwise minimum of a float ``a`` and a tensor ``b``."""
        return self.torch.clamp_max(b, a)

    def logaddexp0(self, z):
        return self.torch.nn.functional.softplus(z)

    def sigmoid(self, z):
        return self.torch.sigmoid(z)

    def logsumexp(self, z):
        return self.torch.logsumexp(z, dim=-1)

    def softmax(self, z):
        return self.torch.softmax(z, dim=-1)

    def take_along(self, z, idx):
        return self.torch.take_along_dim(z, idx[..., None], dim=-1)[..., 0]

    def arange(self, n):
        return self.torch.arange(n, device=self.device)

    def D(self, W):
        return W[self._src] - W[self._dst]

    def DT(self, Y):
        out = self.torch.zeros((self._T, *Y.shape[1:]), dtype=Y.dtype, device=Y.device)
        out.index_add_(0, self._src, Y)
        out.index_add_(0, self._dst, -Y)
        return out


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
        total += float(value.sum())
    value = total / n
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
    The l2 strength adds to every block.
    """
    X, feats, c = problem.X, problem.features, _CURVATURE[problem.loss]
    b = batch_size
    smooth = np.zeros(problem.n_tasks)
    for t in range(problem.n_tasks):
        rows = problem.order[problem.starts[t] : problem.starts[t] + problem.counts[t]]
        Xt = X[rows][:, feats]
        if problem.fit_intercept:
            Xt = np.column_stack([Xt, np.ones(len(Xt))])
        max_sq = float(np.einsum("ij,ij->i", Xt, Xt).max())
        lam = _top_eigenvalue(Xt) / len(Xt)
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
    src, dst = problem.src, problem.dst
    radii = problem.alpha * problem.edge_weight
    share = ops.asarray(problem.task_share)[:, None, None] / b
    if solver == "prox_sgd":
        radii_ops = ops.asarray(radii)
        Y_dual = ops.zeros((m, K * d))
        D_norm2 = _laplacian_norm(problem) if m else 0.0
        prev_eta = None
    check_every = max(50, math.ceil(problem.X.shape[0] / (T * b)))
    checkpoints = set(np.unique(np.geomspace(1, max_iter, 60).astype(int)).tolist())
    checkpoints |= {10**k for k in range(int(math.log10(max_iter)) + 1)} | {max_iter}
    curve = []
    best, stall, converged = math.inf, 0, False
    counts, starts, order = problem.counts, problem.starts, problem.order
    block = max(1, min(1024, (1 << 20) // max(1, T * b)))
    tb = ops.index(np.repeat(np.arange(T), b))
    t = 0
    while t < max_iter and not converged:
        # Draw a block of iterations' samples and edges at once, on the CPU.
        n_block = min(block, max_iter - t)
        u = rng.random_sample((n_block, T, b))
        within = (u * counts[None, :, None]).astype(np.intp)
        rows_block = ops.index(order[starts[None, :, None] + within])
        edges_block = rng.randint(m, size=(n_block, edges_per_step)) if m else None
        for j in range(n_block):
            eta = eta0 / math.sqrt(t + 1.0)
            rows = rows_block[j].reshape(-1)
            Xb = ops.features(rows)
            _, R = _loss_and_residual(
                ops, problem.loss, _scores(ops, Xb, W, B, tb), ops.targets(rows)
            )
            R = R.reshape(T, b, K)
            gW = ops.einsum("tbk,tbd->tkd", R, Xb.reshape(T, b, d)) * share
            if problem.l2:
                gW = gW + problem.l2 * W
            W = W - eta * gW
            if problem.fit_intercept:
                B = B - eta * R.sum(1) * share[:, :, 0]
            Wf = W.reshape(T, K * d)
            if solver == "rip":
                if problem.l1:
                    Wf = ops.soft_threshold(Wf, eta * problem.l1)
                if m:
                    scale = eta * m / edges_per_step
                    Wf = apply_edge_proxes(
                        ops, Wf, edges_block[j], src, dst, scale * radii
                    )
            elif m:
                if prev_eta is not None:  # rescale the warm start to the new radii
                    Y_dual = Y_dual * (eta / prev_eta)
                prev_eta = eta
                Wf, Y_dual, _ = prox_graph(
                    ops,
                    Wf,
                    eta * radii_ops,
                    eta * problem.l1,
                    Y_dual,
                    D_norm2,
                    max_iter=inner_max_iter,
                    tol=inner_tol,
                )
            elif problem.l1:
                Wf = ops.soft_threshold(Wf, eta * problem.l1)
            W = Wf.reshape(T, K, d)
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
