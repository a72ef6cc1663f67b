"""What the two graph-guided models share: parameters, input, fitting, demo.

The models are :class:`~sklearn_ext.linear_model.GraphGuidedRegressor` and
:class:`~sklearn_ext.linear_model.GraphGuidedClassifier` (Vaidyan, Friedlander
and Alacaoglu, "Convergence Rate of the Last Iterate of Stochastic Proximal
Algorithms", ICML 2026, arXiv:2602.05489).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state

from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.linear_model._graph_guided_solver import (
    GraphProblem,
    objective,
    solve,
)
from sklearn_ext.linear_model._task_graph import (
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

    # --- input: features and task labels -----------------------------------------

    def _validate(self, X, y=None, *, fitting, **y_checks):
        """Validate X (and y in fit): ``(X, features, labels, y)``.

        ``X`` is numeric (float64 or float32), ``features`` selects its feature
        columns, ``labels`` are the task labels (int64 or str; all 0 without a
        task column). A numeric X is not copied: the solver reads its feature
        columns through ``features``. An object X (e.g. a DataFrame with a
        string task column) has its features converted apart.
        """
        # Task labels may be strings: with a task column, X is validated for
        # shape and feature names only, and the features are checked apart.
        checks = (
            {"dtype": _FLOATS}
            if self.task_column is None
            else {"dtype": None, "ensure_all_finite": False}
        )
        if fitting:
            X, y = validate_data(self, X, y, ensure_min_samples=2, **checks, **y_checks)
        else:
            check_is_fitted(self)
            X = validate_data(self, X, reset=False, **checks)
        if self.task_column is None:
            return X, slice(None), np.zeros(X.shape[0], dtype=np.int64), y
        if fitting:
            c = column_index(self, self.task_column, X.shape[1], param="task_column")
            if X.shape[1] < 2:
                raise ValueError(
                    "X has no feature column besides the task column; it needs at "
                    "least 2 columns when task_column is set."
                )
            self.task_column_index_ = c
        c = self.task_column_index_
        if c == 0:
            feats = slice(1, None)
        elif c == X.shape[1] - 1:
            feats = slice(0, c)
        else:
            feats = np.delete(np.arange(X.shape[1]), c)
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

    def _problem(self, X, feats, y_enc, task_index, loss, n_outputs, edges, weights):
        """The optimisation problem of these parameters on this data."""
        src, dst, edge_weight = edges
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
            alpha=float(self.alpha),
            l2=float(self.task_alpha) if self.task_penalty == "l2" else 0.0,
            l1=float(self.task_alpha) if self.task_penalty == "l1" else 0.0,
            fit_intercept=self.fit_intercept,
            sample_weight=weights,
        )

    def _fit_problem(self, X, feats, labels, y_encoded, loss, n_outputs, weights):
        self.tasks_, task_index = np.unique(labels, return_inverse=True)
        if self.task_column is None:
            edges = (
                np.zeros(0, dtype=np.intp),
                np.zeros(0, dtype=np.intp),
                np.zeros(0),
            )
        else:
            edges = parse_graph(self.graph, self.tasks_)
        problem = self._problem(
            X, feats, y_encoded, task_index, loss, n_outputs, edges, weights
        )
        src, dst, edge_weight = edges
        self.edges_ = np.column_stack([self.tasks_[src], self.tasks_[dst]])
        self.edge_weights_ = edge_weight
        work = len(self.tasks_) * self.batch_size * problem.n_features * n_outputs
        device = self._device(work)
        desc = f"{type(self).__name__}: {_SOLVER_LABELS[self.solver]}"
        with progress(total=self.max_iter, desc=desc, verbose=self.verbose) as bar:
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
                rng=check_random_state(self.random_state),
                device=device,
                progress=bar,
            )
        W, B = (result.W_avg, result.B_avg) if self.average else (result.W, result.B)
        self.n_iter_ = result.n_iter
        self._record_device(device)
        if self.record_objective:
            self.objective_curve_ = np.asarray(result.curve, dtype=float)
        if self.tol is not None and not result.converged:
            warn(
                f"{type(self).__name__}: stopped at max_iter={self.max_iter} before "
                f"the objective settled (tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
            )
        return W, B

    def _scores(self, X):
        X, feats, labels, _ = self._validate(X, fitting=False)
        idx = self._task_indices(labels)
        return np.einsum("nd,nkd->nk", X[:, feats], self._W[idx]) + self._B[idx]

    @fill_doc
    def objective(self, X, y, sample_weight=None):
        """Objective value of the fitted coefficients on ``(X, y)``.

        The value of the problem the estimator minimises (data term, task term and
        graph term with the fitted edges), at ``coef_`` and ``intercept_``.

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
        """Planted task groups, few noisy samples per task: graph vs plain fits."""
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
            random_state=0,
        ).fit(X_train, y_train)
        baselines = _demo_baselines(X_train, y_train, X_test, y_test, classify)
        best = max(baselines, key=baselines.get)
        return {
            "data": "make_graph_multitask: 30 tasks, 3 groups, 20 train/task",
            "metric": "accuracy" if classify else "R2",
            "score": model.score(X_test, y_test),
            "baseline": f"{best} (best of {len(baselines)})",
            "baseline_score": baselines[best],
            "greater_is_better": True,
        }


def _task_interactions(encoder, X):
    """Columns ``[one-hot task, one-hot task x features]`` of X (task in column 0)."""
    onehot = encoder.transform(X[:, :1])
    products = onehot[:, :, None] * X[:, None, 1:]
    return np.hstack([onehot, products.reshape(len(X), -1)])


def _demo_baselines(X_train, y_train, X_test, y_test, classify):
    """Test scores of plain scikit-learn fits of the demo's data, by name.

    Three ways to use the task column (column 0) without the graph: a model
    per task; one pooled model with the task one-hot encoded (per-task
    intercepts, shared weights); one model over the task x feature
    interactions (per-task weights under one penalty, chosen by
    cross-validation for all tasks together).
    """
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import OneHotEncoder

    if classify:
        name, per_task = "LogisticRegression", LogisticRegression

        def tuned():
            return GridSearchCV(LogisticRegression(), {"C": np.logspace(-2, 1, 5)})

    else:
        name = "RidgeCV"

        def per_task():
            return RidgeCV(alphas=np.logspace(-2, 3, 11))

        tuned = per_task
    encoder = OneHotEncoder(sparse_output=False).fit(X_train[:, :1])
    designs = {
        "pooled + task one-hot": lambda X: np.hstack(
            [encoder.transform(X[:, :1]), X[:, 1:]]
        ),
        "on task x feature": lambda X: _task_interactions(encoder, X),
    }
    scores = {}
    for label, design in designs.items():
        fit = tuned().fit(design(X_train), y_train)
        scores[f"{name} {label}"] = float(fit.score(design(X_test), y_test))
    tasks_train, tasks_test = X_train[:, 0], X_test[:, 0]
    predicted = np.empty(len(y_test), dtype=y_test.dtype)
    for t in np.unique(tasks_train):
        train, test = tasks_train == t, tasks_test == t
        fit = per_task().fit(X_train[train, 1:], y_train[train])
        predicted[test] = fit.predict(X_test[test, 1:])
    if classify:
        scores[f"{name} per task"] = float(np.mean(predicted == y_test))
    else:
        from sklearn.metrics import r2_score

        scores[f"{name} per task"] = float(r2_score(y_test, predicted))
    return scores
