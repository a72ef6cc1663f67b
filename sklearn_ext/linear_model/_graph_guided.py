"""Graph-guided multi-task linear models, by last-iterate stochastic proximal methods.

Vaidyan, Friedlander and Alacaoglu, "Convergence Rate of the Last Iterate of
Stochastic Proximal Algorithms", ICML 2026 (arXiv:2602.05489).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.linear_model._graph_guided_solver import (
    GraphProblem,
    objective,
    solve,
)
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import DeviceConstraint

__all__ = ["GraphGuidedClassifier", "GraphGuidedRegressor"]

_PAPER = (
    "Vaidyan, Friedlander & Alacaoglu, Convergence Rate of the Last Iterate of "
    "Stochastic Proximal Algorithms, ICML 2026"
)

# Below this many multiply-adds per iteration (n_tasks * batch_size * features *
# outputs), a GPU is launch-bound and slower than numpy; device="auto" then stays
# on the CPU.
_GPU_MIN_WORK = 1 << 18


def _is_integer_like(values):
    return np.all(np.isfinite(values)) and np.all(values == np.round(values))


def _list_labels(labels, limit=8):
    labels = [int(v) for v in labels]
    text = ", ".join(map(str, labels[:limit]))
    return text + (", ..." if len(labels) > limit else "")


def parse_graph(graph, tasks):
    """Undirected weighted edges ``(src, dst, weight)`` over task indices.

    Parameters
    ----------
    graph : {"complete", "chain"}, array-like, sparse matrix or list of tuples
        "complete": every pair of tasks, weight 1. "chain": consecutive tasks in
        sorted label order, weight 1. A numpy array or sparse matrix is an
        (n_tasks, n_tasks) adjacency matrix over the sorted task labels: symmetric,
        non-negative, zero diagonal; each nonzero pair is one edge. A list holds
        ``(s, t)`` or ``(s, t, weight)`` edges by task label.
    tasks : ndarray of int
        Sorted task labels.

    Returns
    -------
    src, dst : ndarray of int
        Task indices of each edge, ``src < dst``.
    weight : ndarray of float
        Positive edge weights.
    """
    T = len(tasks)
    if isinstance(graph, str):
        if graph == "complete":
            src, dst = np.triu_indices(T, k=1)
        else:  # "chain"
            src, dst = np.arange(T - 1), np.arange(1, T)
        return src.astype(np.intp), dst.astype(np.intp), np.ones(len(src))

    if sparse.issparse(graph) or isinstance(graph, np.ndarray):
        return _edges_from_matrix(graph, tasks)
    return _edges_from_list(list(graph), tasks)


def _edges_from_matrix(A, tasks):
    T = len(tasks)
    A = sparse.coo_matrix(A) if sparse.issparse(A) else np.asarray(A, dtype=float)
    if A.shape != (T, T):
        raise ValueError(
            f"graph has shape {A.shape}, but the data have {T} tasks (sorted labels "
            f"{_list_labels(tasks)}); the adjacency matrix must be ({T}, {T})."
        )
    A = sparse.csr_matrix(A, dtype=float)
    A.eliminate_zeros()
    if not np.all(np.isfinite(A.data)):
        raise ValueError("graph holds NaN or infinite weights.")
    diag = A.diagonal()
    if np.any(diag != 0):
        i = int(np.flatnonzero(diag)[0])
        raise ValueError(
            f"graph has a self-loop at task {int(tasks[i])}; the diagonal must be 0."
        )
    if np.any(A.data < 0):
        coo = A.tocoo()
        k = int(np.flatnonzero(coo.data < 0)[0])
        s, t = int(tasks[coo.row[k]]), int(tasks[coo.col[k]])
        raise ValueError(
            f"graph has a negative weight {coo.data[k]} between tasks {s} and {t}; "
            "weights must be non-negative."
        )
    asym = abs(A - A.T)
    if asym.nnz and asym.max() > 1e-12 * max(abs(A).max(), 1.0):
        coo = asym.tocoo()
        k = int(np.argmax(coo.data))
        i, j = coo.row[k], coo.col[k]
        raise ValueError(
            f"graph is not symmetric: the weight from task {int(tasks[i])} to task "
            f"{int(tasks[j])} is {A[i, j]}, but back it is {A[j, i]}."
        )
    upper = sparse.triu(A, k=1).tocoo()
    return (
        upper.row.astype(np.intp),
        upper.col.astype(np.intp),
        upper.data.astype(float),
    )


def _edges_from_list(edges, tasks):
    position = {int(t): i for i, t in enumerate(tasks)}
    seen = {}
    for edge in edges:
        if np.ndim(edge) != 1 or len(edge) not in (2, 3):
            raise ValueError(
                f"graph edge {edge!r} must be a pair (s, t) or a triple (s, t, weight)."
            )
        s, t = edge[0], edge[1]
        weight = float(edge[2]) if len(edge) == 3 else 1.0
        for label in (s, t):
            if not _is_integer_like(np.asarray(label, dtype=float)):
                raise ValueError(
                    f"graph edge {edge!r} names a non-integer task {label!r}."
                )
            if int(label) not in position:
                raise ValueError(
                    f"graph edge {edge!r} names task {int(label)}, which is not "
                    f"among the tasks of the data ({_list_labels(tasks)})."
                )
        if int(s) == int(t):
            raise ValueError(f"graph edge {edge!r} is a self-loop at task {int(s)}.")
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(
                f"graph edge {edge!r} has weight {weight}; weights must be finite and "
                "non-negative."
            )
        i, j = sorted((position[int(s)], position[int(t)]))
        if (i, j) in seen:
            raise ValueError(
                f"graph lists the edge between tasks {int(tasks[i])} and "
                f"{int(tasks[j])} twice."
            )
        seen[(i, j)] = weight
    pairs = [(i, j, w) for (i, j), w in seen.items() if w > 0]
    if not pairs:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty.copy(), np.zeros(0)
    src, dst, weight = map(np.asarray, zip(*pairs))
    return src.astype(np.intp), dst.astype(np.intp), weight.astype(float)


class _BaseGraphGuided(BaseEstimator):
    """Shared parameters, task column handling and fitting of the two models."""

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "graph": [StrOptions({"complete", "chain"}), np.ndarray, "sparse matrix", list],
        "task_column": [None, Integral, str],
        "task_penalty": [StrOptions({"l2", "l1"})],
        "task_alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"prox_sgd", "rip"})],
        "edges_per_step": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean"],
        "record_objective": ["boolean"],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "inner_tol": [Interval(Real, 0, None, closed="left")],
        "device": [DeviceConstraint()],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    _paper = _PAPER
    _bench_name = "graph_guided"

    def __init__(
        self,
        alpha=1.0,
        *,
        graph="complete",
        task_column=None,
        task_penalty="l2",
        task_alpha=0.0,
        fit_intercept=True,
        solver="prox_sgd",
        edges_per_step=1,
        batch_size=8,
        eta0="auto",
        max_iter=5000,
        tol=1e-4,
        n_iter_no_change=5,
        average=False,
        record_objective=False,
        inner_max_iter=50,
        inner_tol=1e-2,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.graph = graph
        self.task_column = task_column
        self.task_penalty = task_penalty
        self.task_alpha = task_alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.edges_per_step = edges_per_step
        self.batch_size = batch_size
        self.eta0 = eta0
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.average = average
        self.record_objective = record_objective
        self.inner_max_iter = inner_max_iter
        self.inner_tol = inner_tol
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # --- task column ------------------------------------------------------------

    def _task_column_index(self, n_columns):
        col = self.task_column
        if isinstance(col, str):
            names = getattr(self, "feature_names_in_", None)
            if names is None or col not in list(names):
                raise ValueError(
                    f"task_column={col!r} names no column of X; a column name needs X "
                    "with feature names (a DataFrame) that include it."
                )
            return list(names).index(col)
        if not -n_columns <= col < n_columns:
            raise ValueError(
                f"task_column={col} is out of range for X with {n_columns} columns."
            )
        if n_columns < 2:
            raise ValueError(
                "X has no feature column besides the task column; it needs at least 2 "
                "columns when task_column is set."
            )
        return col % n_columns

    def _split(self, X, *, fitting):
        """Feature selector and task labels of X."""
        if self.task_column is None:
            return slice(None), np.zeros(X.shape[0], dtype=np.int64)
        c = self._task_column_index(X.shape[1]) if fitting else self.task_column_index_
        labels = X[:, c]
        if not _is_integer_like(labels):
            bad = labels[labels != np.round(labels)]
            raise ValueError(
                f"the task column ({c}) must hold integer task labels; it holds "
                f"{bad[0]!r}."
            )
        if c == 0:
            feats = slice(1, None)
        elif c == X.shape[1] - 1:
            feats = slice(0, c)
        else:
            feats = np.delete(np.arange(X.shape[1]), c)
        if fitting:
            self.task_column_index_ = c
        return feats, labels.astype(np.int64)

    def _task_indices(self, labels):
        idx = np.searchsorted(self.tasks_, labels)
        idx = np.clip(idx, 0, len(self.tasks_) - 1)
        unknown = self.tasks_[idx] != labels
        if np.any(unknown):
            missing = np.unique(labels[unknown])
            raise ValueError(
                f"task label(s) {_list_labels(missing)} were not seen in fit (known "
                f"tasks: {_list_labels(self.tasks_)})."
            )
        return idx

    # --- fitting ----------------------------------------------------------------

    def _resolve_device(self, work):
        if self.device == "auto":
            if work < _GPU_MIN_WORK:
                return None  # small iterations: numpy, without importing torch
            from sklearn_ext.utils._torch import import_torch

            torch = import_torch()
            return torch.device("cuda") if torch.cuda.is_available() else None
        if isinstance(self.device, str) and self.device == "cpu":
            return None
        from sklearn_ext.utils._torch import resolve_device

        device = resolve_device(self.device)
        return None if device.type == "cpu" else device

    def _problem(self, X, feats, y_enc, task_index, loss, n_outputs, src, dst, weight):
        """The optimisation problem of these parameters on this data."""
        return GraphProblem(
            X=X,
            features=feats,
            y=y_enc,
            task_index=np.asarray(task_index, dtype=np.intp),
            n_tasks=len(self.tasks_),
            n_outputs=n_outputs,
            loss=loss,
            src=src,
            dst=dst,
            edge_weight=weight,
            alpha=float(self.alpha),
            l2=float(self.task_alpha) if self.task_penalty == "l2" else 0.0,
            l1=float(self.task_alpha) if self.task_penalty == "l1" else 0.0,
            fit_intercept=self.fit_intercept,
        )

    def _fit_problem(self, X, y_encoded, loss, n_outputs):
        feats, labels = self._split(X, fitting=True)
        self.tasks_, task_index = np.unique(labels, return_inverse=True)
        T = len(self.tasks_)
        if self.task_column is None:
            src = dst = np.zeros(0, dtype=np.intp)
            weight = np.zeros(0)
        else:
            src, dst, weight = parse_graph(self.graph, self.tasks_)
        problem = self._problem(
            X, feats, y_encoded, task_index, loss, n_outputs, src, dst, weight
        )
        self.edges_ = np.column_stack([self.tasks_[src], self.tasks_[dst]])
        self.edge_weights_ = weight
        work = T * self.batch_size * problem.n_features * n_outputs
        device = self._resolve_device(work)
        rng = check_random_state(self.random_state)
        from tqdm.auto import tqdm

        with tqdm(
            total=self.max_iter, disable=self.verbose < 1, desc=type(self).__name__
        ) as bar:
            result = solve(
                problem,
                solver=self.solver,
                batch_size=self.batch_size,
                edges_per_step=self.edges_per_step,
                eta0=None if self.eta0 == "auto" else self.eta0,
                max_iter=self.max_iter,
                tol=self.tol,
                n_iter_no_change=self.n_iter_no_change,
                average=self.average,
                record_objective=self.record_objective,
                inner_max_iter=self.inner_max_iter,
                inner_tol=self.inner_tol,
                rng=rng,
                device=device,
                progress=bar,
            )
        W, B = (result.W_avg, result.B_avg) if self.average else (result.W, result.B)
        self.n_iter_ = result.n_iter
        self.device_ = "cpu" if device is None else str(device)
        if self.record_objective:
            self.objective_curve_ = np.asarray(result.curve, dtype=float)
        if self.tol is not None and not result.converged:
            warnings.warn(
                f"{type(self).__name__}: stopped at max_iter={self.max_iter} before "
                f"the objective settled (tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return W, B

    def _features_and_tasks(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        feats, labels = self._split(X, fitting=False)
        return X[:, feats], self._task_indices(labels)

    def _scores(self, X):
        Xf, idx = self._features_and_tasks(X)
        return np.einsum("nd,nkd->nk", Xf, self._W[idx]) + self._B[idx]

    def objective(self, X, y):
        """Objective value of the fitted coefficients on ``(X, y)``.

        The value of the problem the estimator minimises (data term, task term and
        graph term with the fitted edges), at ``coef_`` and ``intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data laid out as in ``fit`` (task column included).
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        float
            The objective value.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        feats, labels = self._split(X, fitting=False)
        src = np.searchsorted(self.tasks_, self.edges_[:, 0])
        dst = np.searchsorted(self.tasks_, self.edges_[:, 1])
        problem = self._problem(
            X,
            feats,
            self._encode_targets(np.asarray(y)),
            self._task_indices(labels),
            self._loss,
            self._W.shape[1],
            src,
            dst,
            self.edge_weights_,
        )
        return objective(problem, self._W, self._B)

    @classmethod
    def _get_test_params(cls):
        return {"max_iter": 800, "tol": None, "random_state": 0, "device": "cpu"}

    @classmethod
    def _gpu_check_params(cls):
        """Large iterations (16384-sample batches), where the GPU should win."""
        params = {"batch_size": 16384, "max_iter": 300, "tol": None, "random_state": 0}
        return params, 200_000

    @classmethod
    def _demo(cls):
        """Planted task groups, few noisy samples per task: graph vs per-task fits."""
        from sklearn.model_selection import train_test_split

        from sklearn_ext.datasets import make_graph_multitask

        classify = issubclass(cls, ClassifierMixin)
        data = make_graph_multitask(
            n_samples_per_task=40,
            noise=3.0,
            group_scale=0.5,
            task_type="binary" if classify else "regression",
            random_state=0,
        )
        X_train, X_test, y_train, y_test = train_test_split(
            data.data,
            data.target,
            test_size=0.5,
            random_state=0,
            stratify=data.data[:, 0],
        )
        model = cls(
            alpha=0.02 if classify else 0.1,
            graph=data.adjacency,
            task_column=0,
            solver="prox_sgd",
            max_iter=3000,
            random_state=0,
        ).fit(X_train, y_train)
        if classify:
            from sklearn.linear_model import LogisticRegression as Baseline
        else:
            from sklearn.linear_model import RidgeCV as Baseline
        per_task = np.empty(len(y_test), dtype=y_test.dtype if classify else float)
        for t in np.unique(X_train[:, 0]):
            tr, te = X_train[:, 0] == t, X_test[:, 0] == t
            per_task[te] = (
                Baseline().fit(X_train[tr, 1:], y_train[tr]).predict(X_test[te, 1:])
            )
        if classify:
            baseline_score = float(np.mean(per_task == y_test))
        else:
            from sklearn.metrics import r2_score

            baseline_score = r2_score(y_test, per_task)
        return {
            "data": "make_graph_multitask: 30 tasks, 3 groups, 20 train/task",
            "metric": "accuracy" if classify else "R2",
            "score": model.score(X_test, y_test),
            "baseline": f"{Baseline.__name__} per task",
            "baseline_score": baseline_score,
        }


class GraphGuidedRegressor(RegressorMixin, _BaseGraphGuided):
    """Multi-task linear regression coupled by a graph (last-iterate prox-SGD, RIP).

    Each task ``t`` has its own weights ``w_t`` and intercept ``b_t``; a weighted
    graph over the tasks pulls neighbours' weights together. The estimator
    minimises::

        (1/n) sum_i 1/2 (y_i - x_i . w_{t_i} - b_{t_i})^2
            + alpha * sum_{(s,t) in E} a_st ||w_s - w_t||_2
            + task term: (task_alpha / 2) sum_t ||w_t||^2   (task_penalty="l2")
                      or  task_alpha sum_t |w_t|_1          (task_penalty="l1")

    The data term equals ``sum_t (n_t / n) * mean squared loss of task t``.
    Because the graph term is a group norm of differences, tasks whose weights
    are close enough fuse to exactly equal weights, which recovers groups of
    tasks.

    Task membership travels inside ``X``: ``task_column`` names the column that
    holds each sample's integer task label; the other columns are the features.
    Cross-validation, scorers and pipelines therefore work unchanged, each sample
    being predicted with its own task's weights. With ``task_column=None`` there
    is one task and no graph term: the estimator is a plain linear least-squares
    model (with the optional task term), fitted by the same stochastic solver.

    Solvers (step ``eta_t = eta0 / sqrt(t + 1)``, the schedule of the theory):

    - ``"rip"``: the randomized incremental proximal method. Each iteration takes
      a stochastic gradient step on a minibatch (``batch_size`` samples drawn from
      every task), applies the l1 prox if any, then the closed-form prox of
      ``edges_per_step`` randomly drawn edge terms, each scaled by
      ``n_edges / edges_per_step``.
    - ``"prox_sgd"``: proximal SGD. The same stochastic gradient step, then the
      prox of the whole nonsmooth part (graph and l1), which has no closed form
      and is computed by accelerated projected gradient on its dual, warm-started
      from the previous iteration (at most ``inner_max_iter`` inner steps).

    The returned coefficients are the last iterate, for which the paper proves
    an O~(1/sqrt(T)) rate without a bounded-variance assumption;
    ``average=True`` returns the running average of the iterates instead.

    Parameters
    ----------
    alpha : float, default=1.0
        Strength of the graph term.
    graph : {"complete", "chain"}, array-like, sparse matrix or list, \
            default="complete"
        Collaboration graph over the tasks. "complete": every pair of tasks with
        weight 1; "chain": consecutive tasks in sorted label order. A numpy array
        or scipy sparse matrix is an (n_tasks, n_tasks) adjacency matrix over the
        sorted task labels (symmetric, non-negative, zero diagonal); a list holds
        ``(s, t)`` or ``(s, t, weight)`` edges by task label. Malformed graphs
        raise a ValueError that says what is wrong.
    task_column : int, str or None, default=None
        Column of X holding each sample's task label (integer-valued). Negative
        indices count from the end, as after a ``ColumnTransformer`` that passes
        the column through last; a string names a column of a DataFrame.
    task_penalty : {"l2", "l1"}, default="l2"
        Kind of the per-task term.
    task_alpha : float, default=0.0
        Strength of the per-task term.
    fit_intercept : bool, default=True
        Whether each task has an (unpenalised) intercept.
    solver : {"prox_sgd", "rip"}, default="prox_sgd"
        Stochastic proximal method, see above. ``"prox_sgd"`` converges in far
        fewer iterations on graphs of up to thousands of edges; ``"rip"``'s
        iterations cost O(edges_per_step) whatever the graph's size, which makes
        it the choice for very large graphs.
    edges_per_step : int, default=1
        Edge proxes per iteration of ``"rip"`` (applied in order, vectorised over
        node-disjoint rounds). One is the textbook method; more reduce the
        variance that sampling edges adds, at a cost linear in their number.
    batch_size : int, default=8
        Samples drawn (with replacement) from each task per iteration.
    eta0 : "auto" or float, default="auto"
        Initial step. "auto" is the inverse of the largest expected smoothness
        of a task's block of the stochastic gradient: ``(n_t / n) * ((1 - 1/b)
        lambda_max(X_t' X_t / n_t) + max_i ||x_i||^2 / b)`` (with the intercept's
        column, ``b = batch_size``), plus the l2 strength.
    max_iter : int, default=5000
        Number of iterations (stochastic steps).
    tol : float or None, default=1e-4
        Stop when, at ``n_iter_no_change`` consecutive checks (one per pass over
        the data, at least every 50 iterations), the objective has not decreased
        by ``tol`` times its value. None runs exactly ``max_iter`` iterations.
    n_iter_no_change : int, default=5
        Checks without improvement before stopping.
    average : bool, default=False
        Return the average of the iterates instead of the last one.
    record_objective : bool, default=False
        Record the objective of the last and averaged iterates at about 60
        log-spaced iterations (every power of ten among them) in
        ``objective_curve_``.
    inner_max_iter : int, default=50
        Maximum dual iterations of the prox of ``"prox_sgd"``.
    inner_tol : float, default=1e-2
        The prox's dual iterations stop when the primal point moves by less than
        ``inner_tol`` relative to the prox's displacement ``|prox(V) - V|``.
    device : str or torch.device, default="auto"
        Where the iterations run. The CPU path is numpy (float64); "cuda" runs
        the same iterations (same random draws) in torch, float32, on the GPU.
        "auto" picks CUDA only when it is available and an iteration is large
        enough (``n_tasks * batch_size * n_features * n_outputs >= 2**18``) for
        the GPU to win.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of samples and edges.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        Weights of each task, in the order of ``tasks_``.
    intercept_ : ndarray of shape (n_tasks,)
        Intercept of each task.
    tasks_ : ndarray of shape (n_tasks,)
        Sorted task labels seen in fit (``[0]`` without a task column).
    task_column_index_ : int
        Non-negative index of the task column (only with a task column).
    edges_ : ndarray of shape (n_edges, 2)
        Edges of the graph by task label.
    edge_weights_ : ndarray of shape (n_edges,)
        Their weights.
    n_iter_ : int
        Iterations run.
    objective_curve_ : ndarray of shape (n_points, 3)
        Rows ``(iteration, objective of the last iterate, objective of the
        average)``; only with ``record_objective=True``.
    device_ : str
        Device the iterations ran on.
    n_features_in_ : int
        Number of columns of X, task column included.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X has them.

    See Also
    --------
    GraphGuidedClassifier : The same model with the logistic loss.

    References
    ----------
    .. [1] K. K. T. Vaidyan, M. P. Friedlander and A. Alacaoglu, "Convergence Rate
       of the Last Iterate of Stochastic Proximal Algorithms", ICML 2026,
       arXiv:2602.05489.
    .. [2] D. Hallac, J. Leskovec and S. Boyd, "Network Lasso: Clustering and
       Optimization in Large Graphs", KDD 2015.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_graph_multitask
    >>> from sklearn_ext.linear_model import GraphGuidedRegressor
    >>> data = make_graph_multitask(n_tasks=6, n_groups=2, random_state=0)
    >>> model = GraphGuidedRegressor(
    ...     alpha=0.05, graph=data.adjacency, task_column=0, max_iter=2000,
    ...     random_state=0,
    ... ).fit(data.data, data.target)
    >>> model.coef_.shape
    (6, 20)
    >>> round(model.score(data.data, data.target), 2) > 0.9
    True
    """

    _loss = "squared"

    def _encode_targets(self, y):
        return np.asarray(y, dtype=np.float64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the task weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : GraphGuidedRegressor
            The fitted estimator.
        """
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            y_numeric=True,
            ensure_min_samples=2,
        )
        W, B = self._fit_problem(X, self._encode_targets(y), "squared", 1)
        self._W, self._B = W, B
        self.coef_ = W[:, 0, :].copy()
        self.intercept_ = B[:, 0].copy()
        return self

    def predict(self, X):
        """Predict each sample with its own task's weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Laid out as in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions.
        """
        return self._scores(X)[:, 0]


class GraphGuidedClassifier(ClassifierMixin, _BaseGraphGuided):
    """Multi-task logistic regression coupled by a graph (last-iterate prox-SGD, RIP).

    The classification counterpart of :class:`GraphGuidedRegressor`: each task
    has its own logistic model, binary (one weight vector per task) or
    multinomial (one per class and task), and the graph term
    ``alpha * sum_(s,t) a_st ||W_s - W_t||_F`` pulls neighbouring tasks' whole
    weight matrices together. It minimises the mean log-loss over all samples
    plus that term and the optional per-task term, with the same solvers, step
    schedule, task column and graph options as the regressor (see there).

    Parameters
    ----------
    alpha : float, default=1.0
        Strength of the graph term.
    graph : {"complete", "chain"}, array-like, sparse matrix or list, \
            default="complete"
        Collaboration graph over the tasks, as for the regressor.
    task_column : int, str or None, default=None
        Column of X holding each sample's task label.
    task_penalty : {"l2", "l1"}, default="l2"
        Kind of the per-task term.
    task_alpha : float, default=0.0
        Strength of the per-task term.
    fit_intercept : bool, default=True
        Whether each task has intercepts.
    solver : {"prox_sgd", "rip"}, default="prox_sgd"
        Stochastic proximal method, as for the regressor.
    edges_per_step : int, default=1
        Edge proxes per iteration of ``"rip"``.
    batch_size : int, default=8
        Samples drawn from each task per iteration.
    eta0 : "auto" or float, default="auto"
        Initial step; "auto" from the smoothness of the log-loss (1/4 of
        ``||x||^2`` binary, 1/2 multinomial).
    max_iter : int, default=5000
        Number of iterations.
    tol : float or None, default=1e-4
        Stopping tolerance on the objective; None runs ``max_iter`` iterations.
    n_iter_no_change : int, default=5
        Checks without improvement before stopping.
    average : bool, default=False
        Return the average of the iterates instead of the last one.
    record_objective : bool, default=False
        Record the objective trace in ``objective_curve_``.
    inner_max_iter : int, default=50
        Maximum dual iterations of the prox of ``"prox_sgd"``.
    inner_tol : float, default=1e-2
        Relative tolerance of the prox's dual iterations.
    device : str or torch.device, default="auto"
        Where the iterations run, as for the regressor.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of samples and edges.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (n_tasks, 1 or n_classes, n_features)
        Weights per task (one row for binary problems, one per class otherwise).
    intercept_ : ndarray of shape (n_tasks, 1 or n_classes)
        Intercepts per task.
    tasks_ : ndarray of shape (n_tasks,)
        Sorted task labels seen in fit.
    task_column_index_ : int
        Non-negative index of the task column (only with a task column).
    edges_ : ndarray of shape (n_edges, 2)
        Edges of the graph by task label.
    edge_weights_ : ndarray of shape (n_edges,)
        Their weights.
    n_iter_ : int
        Iterations run.
    objective_curve_ : ndarray of shape (n_points, 3)
        Objective trace (only with ``record_objective=True``).
    device_ : str
        Device the iterations ran on.
    n_features_in_ : int
        Number of columns of X, task column included.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when X has them.

    See Also
    --------
    GraphGuidedRegressor : The same model with the squared loss.

    References
    ----------
    .. [1] K. K. T. Vaidyan, M. P. Friedlander and A. Alacaoglu, "Convergence Rate
       of the Last Iterate of Stochastic Proximal Algorithms", ICML 2026,
       arXiv:2602.05489.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_graph_multitask
    >>> from sklearn_ext.linear_model import GraphGuidedClassifier
    >>> data = make_graph_multitask(
    ...     n_tasks=6, n_groups=2, task_type="binary", random_state=0
    ... )
    >>> clf = GraphGuidedClassifier(
    ...     alpha=0.01, graph=data.adjacency, task_column=0, max_iter=2000,
    ...     random_state=0,
    ... ).fit(data.data, data.target)
    >>> clf.coef_.shape
    (6, 1, 20)
    >>> clf.score(data.data, data.target) > 0.8
    True
    """

    def _encode_targets(self, y):
        codes = np.searchsorted(self.classes_, y)
        codes = np.clip(codes, 0, len(self.classes_) - 1)
        if np.any(self.classes_[codes] != y):
            raise ValueError("y holds labels that were not seen in fit.")
        return codes.astype(np.float64) if self._loss == "logistic" else codes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the task weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : GraphGuidedClassifier
            The fitted estimator.
        """
        X, y = validate_data(
            self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=2
        )
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                "GraphGuidedClassifier needs samples of at least 2 classes; the data "
                f"hold 1 class ({self.classes_[0]!r})."
            )
        binary = len(self.classes_) == 2
        self._loss = "logistic" if binary else "softmax"
        K = 1 if binary else len(self.classes_)
        W, B = self._fit_problem(X, self._encode_targets(y), self._loss, K)
        self._W, self._B = W, B
        self.coef_ = W.copy()
        self.intercept_ = B.copy()
        return self

    def decision_function(self, X):
        """Compute each sample's scores under its own task's model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Laid out as in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Log-odds of the second class (binary) or per-class scores.
        """
        scores = self._scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities of each sample under its own task's model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Laid out as in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, in the order of ``classes_``.
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            p = 0.5 * (1.0 + np.tanh(0.5 * scores[:, 0]))
            return np.column_stack([1.0 - p, p])
        scores = scores - scores.max(axis=1, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Predict class labels with each sample's own task model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Laid out as in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels.
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]
