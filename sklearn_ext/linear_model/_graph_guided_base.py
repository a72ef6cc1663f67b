"""What the two graph-guided models share: parameters, input, fitting, demo.

The models are :class:`~sklearn_ext.linear_model.GraphGuidedRegressor` and
:class:`~sklearn_ext.linear_model.GraphGuidedClassifier` (Vaidyan, Friedlander
and Alacaoglu, "Convergence Rate of the Last Iterate of Stochastic Proximal
Algorithms", ICML 2026, arXiv:2602.05489).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import dataclasses
import math
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state

from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps
from sklearn_ext.linear_model._graph_guided_solver import (
    CHECK_EVERY,
    GraphProblem,
    SolverState,
    _scores,
    objective,
    solve,
)
from sklearn_ext.linear_model._task_graph import (
    list_labels,
    parse_graph,
    task_indices,
    task_labels,
)
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._messages import progress, warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import resolve_device
from sklearn_ext.utils._validation import check_sample_weight, column_index

__all__: list = []

_PAPER = (
    "Vaidyan, Friedlander & Alacaoglu, Convergence Rate of the Last Iterate of "
    "Stochastic Proximal Algorithms, ICML 2026"
)

# Below this many multiply-adds per iteration (n_tasks * batch_size * features *
# outputs), a GPU is launch-bound and slower than numpy; device="auto" then stays
# on the CPU.
_GPU_MIN_WORK = 1 << 18

_SOLVER_LABELS = {"prox_sgd": "prox-SGD", "rip": "RIP"}

_FLOATS = [np.float64, np.float32]

# Iterations between two stopping tests of a warm-started fit on an alpha
# path, and the iteration its step schedule restarts at (eta0 / sqrt(101),
# a tenth of the first step). In development runs on the held-out problem of
# benchmarks/bench_graph_guided.py (10 tasks, 100 strengths, 5 folds), a
# restart at t = 0 or at 100 chose the same strengths, faster than a schedule
# continued through the path, whose tiny steps left the later strengths short
# of their optima (a larger held-out error).
PATH_CHECK_EVERY = 20
PATH_RESTART = 100


class _BaseGraphGuided(TorchDeviceMixin, BaseEstimator):
    """Shared parameters, task column handling and fitting of the two models."""

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "graph": [StrOptions({"complete", "chain"}), np.ndarray, "sparse matrix", list],
        "task_column": [None, Integral, str],
        "task_penalty": [StrOptions({"l2", "l1"})],
        "task_alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"prox_sgd", "rip"})],
        "edge_sampling": [StrOptions({"matching", "uniform"})],
        "edge_memory": ["boolean"],
        "edges_per_step": [Interval(Integral, 1, None, closed="left")],
        "standardize": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean"],
        "record_objective": ["boolean"],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "inner_tol": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
    }

    # The CPU path is numpy: torch is imported only for a GPU fit.
    _torch_optional = True
    _module_attributes = ()

    _paper = _PAPER
    _bench_name = "graph_guided"

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "the solvers are stochastic: a weighted fit draws each row with "
            "probability proportional to its weight, as the repeated rows would "
            "be drawn, but the same random numbers pick other rows once the check "
            "shuffles them; tests/test_linear_model_graph_guided.py checks the "
            "equivalence at the optimum, draw for draw with the repeats side by "
            "side, and over seeds"
        ),
    }
    _expected_failed_checks["check_sample_weight_equivalence_on_sparse_data"] = (
        _expected_failed_checks["check_sample_weight_equivalence_on_dense_data"]
    )

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
        edge_sampling="matching",
        edge_memory=True,
        edges_per_step=1,
        standardize=True,
        batch_size=8,
        eta0="auto",
        max_iter=5000,
        tol=1e-4,
        n_iter_no_change=5,
        average=False,
        record_objective=False,
        inner_max_iter=200,
        inner_tol="auto",
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
        self.edge_sampling = edge_sampling
        self.edge_memory = edge_memory
        self.edges_per_step = edges_per_step
        self.standardize = standardize
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # --- input: features and task labels -----------------------------------------

    def _validate(self, X, y=None, *, fitting, **y_checks):
        """Validate X (and y in fit): ``(X, features, labels, y)``.

        ``X`` is numeric (float64 or float32, dense or CSR), ``features``
        selects its feature columns, ``labels`` are the task labels (int64 or
        str; all 0 without a task column). A dense numeric X is not copied: the
        solver reads its feature columns through ``features``. A sparse X has
        its feature columns copied out once (CSR, ``features`` is then all
        columns). An object X (e.g. a DataFrame with a string task column) has
        its features converted apart.
        """
        # Task labels may be strings: with a task column, X is validated for
        # shape and feature names only, and the features are checked apart.
        checks = (
            {"dtype": _FLOATS}
            if self.task_column is None
            else {"dtype": None, "ensure_all_finite": False}
        )
        checks["accept_sparse"] = "csr"
        if fitting:
            X, y = validate_data(self, X, y, ensure_min_samples=2, **checks, **y_checks)
        else:
            check_is_fitted(self)
            X = validate_data(self, X, reset=False, **checks)
        if sparse.issparse(X):
            return self._validate_sparse(X, fitting, y)
        if self.task_column is None:
            return X, slice(None), np.zeros(X.shape[0], dtype=np.int64), y
        c = self._task_column_position(X, fitting)
        feats = _other_columns(c, X.shape[1])
        if X.dtype.kind in "fiub":
            X = check_array(X, dtype=_FLOATS, input_name="X")
            return X, feats, task_labels(X[:, c], c), y
        labels = task_labels(X[:, c], c)
        return (
            check_array(X[:, feats], dtype=_FLOATS, input_name="X"),
            slice(None),
            labels,
            y,
        )

    def _task_column_position(self, X, fitting):
        if fitting:
            c = column_index(self, self.task_column, X.shape[1], param="task_column")
            if X.shape[1] < 2:
                raise ValueError(
                    "X has no feature column besides the task column; it needs at "
                    "least 2 columns when task_column is set."
                )
            self.task_column_index_ = c
        return self.task_column_index_

    def _validate_sparse(self, X, fitting, y):
        X = check_array(X, accept_sparse="csr", dtype=_FLOATS, input_name="X")
        if self.task_column is None:
            return X, slice(None), np.zeros(X.shape[0], dtype=np.int64), y
        c = self._task_column_position(X, fitting)
        labels = task_labels(X[:, [c]].toarray().ravel(), c)
        return X[:, _other_columns(c, X.shape[1])].tocsr(), slice(None), labels, y

    def _task_indices(self, labels):
        return task_indices(self.tasks_, labels)

    @staticmethod
    def _check_weights(sample_weight, X):
        """Weights of mean one, or None when there are none or all are equal."""
        weights = check_sample_weight(sample_weight, X)
        if weights is None or np.all(weights == weights[0]):
            return None  # equal weights are the unweighted problem
        return weights

    # --- fitting ----------------------------------------------------------------

    def _device(self, work):
        """The torch device of a GPU fit, or None for the numpy path."""
        # resolve_device makes the choice (with the size threshold); the two
        # cases where it is bound to answer the CPU, device="cpu" and "auto"
        # below the threshold, are settled here first only so that the numpy
        # path never imports torch.
        if isinstance(self.device, str) and (
            self.device == "cpu" or (self.device == "auto" and work < _GPU_MIN_WORK)
        ):
            return None
        device = resolve_device(self.device, size=work, min_size=_GPU_MIN_WORK)
        return None if device.type == "cpu" else device

    def _set_scaling(self, X, feats, weights):
        """Fit ``_center`` and ``_scale`` of the features (see ``standardize``)."""
        self._center = self._scale = None
        if not self.standardize:
            return
        mean, var = _feature_moments(X, feats, weights)
        scale = np.sqrt(var)
        # Constant features keep their scale (a zero spread would divide by 0).
        scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
        self._scale = scale
        if self.fit_intercept and not sparse.issparse(X):
            self._center = mean

    def _problem(self, X, feats, y_enc, task_index, loss, n_outputs, edges, weights):
        """The optimisation problem of these parameters on this data."""
        src, dst, edge_weight = edges
        scale = getattr(self, "_scale", None)
        if sparse.issparse(X) and scale is not None:
            X = (X @ sparse.diags(1.0 / scale)).tocsr()  # the one sparse copy
            scale = None
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
            edge_weight=edge_weight,
            alpha=float(self._graph_alpha()),
            l2=float(self.task_alpha) if self.task_penalty == "l2" else 0.0,
            l1=float(self.task_alpha) if self.task_penalty == "l1" else 0.0,
            fit_intercept=self.fit_intercept,
            sample_weight=weights,
            center=getattr(self, "_center", None),
            scale=scale,
        )

    def _set_tasks(self, labels, tasks=None):
        """``tasks_``, edges and every sample's task index, from the labels.

        ``tasks`` (all the task labels, from ``partial_fit`` or a
        cross-validation) may hold tasks that the samples lack: they stay
        nodes of the graph, with weights set by their neighbours alone.
        """
        if tasks is None or self.task_column is None:
            self.tasks_ = np.unique(labels)
        else:
            self.tasks_ = np.unique(
                task_labels(np.asarray(tasks), self.task_column_index_)
            )
        if self.task_column is None:
            edges = (
                np.zeros(0, dtype=np.intp),
                np.zeros(0, dtype=np.intp),
                np.zeros(0),
            )
        else:
            edges = parse_graph(self.graph, self.tasks_)
        src, dst, edge_weight = edges
        self.edges_ = np.column_stack([self.tasks_[src], self.tasks_[dst]])
        self.edge_weights_ = edge_weight
        self._edges = edges
        return self._task_indices(labels)

    def _graph_alpha(self):
        """The strength of the graph term of the problem being solved."""
        return self.alpha

    def _run(
        self, problem, max_iter, tol, state, eta0, desc_extra="", check_every=None
    ):
        """Run the solver on ``problem``; the result."""
        work = len(self.tasks_) * self.batch_size * problem.n_features
        work *= problem.n_outputs
        device = self._device(work)
        desc = f"{type(self).__name__}: {_SOLVER_LABELS[self.solver]}{desc_extra}"
        with progress(total=max_iter, desc=desc, verbose=self.verbose) as bar:
            result = solve(
                problem,
                solver=self.solver,
                batch_size=self.batch_size,
                edges_per_step=self.edges_per_step,
                edge_sampling=self.edge_sampling,
                edge_memory=self.edge_memory,
                eta0=eta0,
                max_iter=max_iter,
                tol=tol,
                n_iter_no_change=self.n_iter_no_change,
                average=self.average,
                record_objective=self.record_objective,
                inner_max_iter=self.inner_max_iter,
                inner_tol=self.inner_tol,
                rng=self._rng,
                device=device,
                state=state,
                progress=bar,
                check_every=check_every or CHECK_EVERY,
            )
        self._record_device(device)
        return result

    def _fit_problem(
        self, X, feats, labels, y_encoded, loss, n_outputs, weights, tasks=None
    ):
        task_index = self._set_tasks(labels, tasks)
        self._set_scaling(X, feats, weights)
        problem = self._problem(
            X, feats, y_encoded, task_index, loss, n_outputs, self._edges, weights
        )
        self._rng = check_random_state(self.random_state)
        result = self._run(
            problem,
            self.max_iter,
            self.tol,
            None,
            None if self.eta0 == "auto" else self.eta0,
        )
        self.n_iter_ = result.n_iter
        if self.record_objective:
            self.objective_curve_ = np.asarray(result.curve, dtype=float)
        if self.tol is not None and not result.converged:
            warn(
                f"{type(self).__name__}: stopped at max_iter={self.max_iter} before "
                f"the objective settled (tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
            )
        self._keep(result)

    def _partial_fit(self, X, y, tasks, sample_weight, prepare, **y_checks):
        """One pass over a batch, continuing the stream's iterations.

        ``prepare(y, first)`` checks the targets (and on the first call sets
        what they define, e.g. ``classes_``); it returns ``(encoded targets,
        loss, n_outputs)``.
        """
        first = not hasattr(self, "_state")
        X, feats, labels, y = self._validate(X, y, fitting=first, **y_checks)
        weights = self._check_weights(sample_weight, X)
        y_enc, loss, n_outputs = prepare(y, first)
        if first:
            task_index = self._set_tasks(labels, tasks)
            self._set_scaling(X, feats, weights)
            self._rng = check_random_state(self.random_state)
            self._eta0 = None if self.eta0 == "auto" else float(self.eta0)
            state = None
        else:
            if tasks is not None and not np.array_equal(
                np.unique(np.asarray(tasks).astype(self.tasks_.dtype)), self.tasks_
            ):
                raise ValueError(
                    "tasks differ from the tasks of the first partial_fit call "
                    f"({list_labels(self.tasks_)}); they are fixed by that call."
                )
            task_index = self._task_indices(labels)
            state = SolverState(**self._state)
            if not hasattr(self, "_rng"):
                self._rng = check_random_state(self.random_state)
        problem = self._problem(
            X, feats, y_enc, task_index, loss, n_outputs, self._edges, weights
        )
        present = max(1, np.count_nonzero(problem.counts))
        n_iter = max(1, math.ceil(X.shape[0] / (present * self.batch_size)))
        result = self._run(problem, n_iter, None, state, self._eta0)
        self.n_iter_ = result.n_iter
        self._keep(result)
        self._eta0 = result.eta0  # the first batch's step, for the whole stream
        return self

    def _alpha_path(
        self, X, feats, labels, y_enc, loss, n_outputs, weights, alphas, tasks=None
    ):
        """Fits at decreasing ``alphas``, each warm-started from the one before.

        The first strength is fitted as ``fit`` does. Each later one starts
        from the weights and dual variables of the one before (the duals
        scaled to the new strength), restarts its step schedule at iteration
        ``PATH_RESTART`` (a tenth of the first step: a full restart's large
        first steps would throw the warm start away, a continued schedule's
        tiny ones would not move it), and checks its stopping test every
        ``PATH_CHECK_EVERY`` iterations, since a warm start is close to its
        optimum. Yields ``(alpha, W, B)`` on the original scale.
        """
        task_index = self._set_tasks(labels, tasks)
        self._set_scaling(X, feats, weights)
        self._rng = check_random_state(self.random_state)
        state = None
        eta0 = None if self.eta0 == "auto" else self.eta0
        for alpha in alphas:
            self._path_alpha = float(alpha)
            problem = self._problem(
                X, feats, y_enc, task_index, loss, n_outputs, self._edges, weights
            )
            result = self._run(
                problem,
                self.max_iter,
                self.tol,
                state,
                eta0,
                check_every=None if state is None else PATH_CHECK_EVERY,
            )
            eta0 = result.eta0
            self._keep(result)
            st = result.state
            t_next = min(st.t, PATH_RESTART)
            state = SolverState(st.W, st.B, st.W, st.B, t_next, st.dual, st.dual_alpha)
            yield float(alpha), self._W, self._B

    def _keep(self, result):
        """Store a run's solution (original scale) and its state."""
        # a dict of arrays and numbers (persistable with skops), for partial_fit
        self._state, self._eta0 = dataclasses.asdict(result.state), result.eta0
        self._inner = result.inner
        V, Bv = (result.W_avg, result.B_avg) if self.average else (result.W, result.B)
        self._V, self._Bv = V, Bv
        W = V if self._scale is None else V / self._scale
        B = Bv if self._center is None else Bv - np.einsum("tkd,d->tk", W, self._center)
        self._W, self._B = W, B
        self._set_coefficients(W, B)

    def _scores(self, X):
        X, feats, labels, _ = self._validate(X, fitting=False)
        idx = self._task_indices(labels)
        Xf = X if isinstance(feats, slice) and feats == slice(None) else X[:, feats]
        return _scores(_NumpyOps(), Xf, self._W, self._B, idx)

    @fill_doc
    def objective(self, X, y, sample_weight=None):
        """Objective value of the fitted coefficients on ``(X, y)``.

        The value of the problem the estimator minimises (data term, task term and
        graph term with the fitted edges, on standardised features when
        ``standardize=True``), at the fitted coefficients.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data laid out as in ``fit`` (task column included).
        y : array-like of shape (n_samples,)
            Targets.
        %(sample_weight)s

        Returns
        -------
        float
            The objective value.
        """
        X, feats, labels, _ = self._validate(X, fitting=False)
        src = np.searchsorted(self.tasks_, self.edges_[:, 0])
        dst = np.searchsorted(self.tasks_, self.edges_[:, 1])
        problem = self._problem(
            X,
            feats,
            self._encode_targets(np.asarray(y)),
            self._task_indices(labels),
            self._loss,
            self._W.shape[1],
            (src, dst, self.edge_weights_),
            self._check_weights(sample_weight, X),
        )
        return objective(problem, self._V, self._Bv)

    @classmethod
    def _get_test_params(cls):
        return {"max_iter": 800, "tol": None, "random_state": 0, "device": "cpu"}

    @classmethod
    def _gpu_check_params(cls):
        """Large iterations (16384-sample batches), where the GPU should win."""
        params = {"batch_size": 16384, "max_iter": 300, "tol": None, "random_state": 0}
        return params, 200_000


def _other_columns(c, n_columns):
    """Selector of every column but ``c``."""
    if c == 0:
        return slice(1, None)
    if c == n_columns - 1:
        return slice(0, c)
    return np.delete(np.arange(n_columns), c)


def _feature_moments(X, feats, weights, chunk=65536):
    """(Weighted) mean and variance of the feature columns, without a copy of X."""
    if sparse.issparse(X):
        w = np.ones(X.shape[0]) if weights is None else weights
        total = w.sum()
        mean = np.asarray(X.T @ w).ravel() / total
        second = np.asarray(X.multiply(X).T @ w).ravel() / total
        return mean, np.maximum(second - mean * mean, 0.0)
    n = X.shape[0]
    w = np.ones(n) if weights is None else weights
    total = w.sum()
    mean = 0.0
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        mean = mean + w[rows] @ X[rows][:, feats]
    mean = mean / total
    var = 0.0
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        dev = X[rows][:, feats] - mean
        var = var + w[rows] @ (dev * dev)
    return mean, var / total
