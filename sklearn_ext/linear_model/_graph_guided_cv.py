"""Cross-validated graph strength for the graph-guided models, on a warm path.

The strength ``alpha`` of the graph term is chosen like ``LassoCV`` chooses its
own: fits along a decreasing grid (100 strengths by default), each
warm-started from the one before, on every training fold; the held-out mean
squared error (regressor) or mean log-loss (classifier) picks ``alpha_``,
which is refitted on all the data.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import re
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import cg
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, check_cv
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.linear_model._graph_guided import (
    GraphGuidedClassifier,
    GraphGuidedRegressor,
)
from sklearn_ext.linear_model._graph_guided_base import _BaseGraphGuided
from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps
from sklearn_ext.linear_model._graph_guided_solver import _scores
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._sklearn_compat import Interval, _fit_context

__all__ = ["GraphGuidedClassifierCV", "GraphGuidedRegressorCV"]

# scipy 1.12 renamed cg's relative tolerance from ``tol`` to ``rtol``; the oldest
# scipy we support (1.10) knows only ``tol``.
_CG_RTOL = "rtol" if "rtol" in inspect.signature(cg).parameters else "tol"


def _cv_init(
    self,
    *,
    alphas=None,
    n_alphas=100,
    eps=1e-2,
    cv=None,
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
    self.alphas = alphas
    self.n_alphas = n_alphas
    self.eps = eps
    self.cv = cv
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


@fill_doc
class GraphGuidedRegressorCV(GraphGuidedRegressor):
    """Graph-guided multi-task regression with ``alpha`` chosen by cross-validation.

    :class:`GraphGuidedRegressor` fitted along a decreasing grid of graph
    strengths ``alphas`` on each training fold, each fit warm-started from the
    previous one (weights and dual variables; the step schedule restarts at a
    tenth of its first step),
    scored by the held-out (weighted) mean squared error; ``alpha_``, the
    strength of lowest mean error over the folds, is then fitted on all the
    data. Every other parameter is that of :class:`GraphGuidedRegressor`.

    Parameters
    ----------
    alphas : array-like or None, default=None
        Graph strengths to try (sorted decreasing for the path). None:
        ``n_alphas`` values log-spaced from ``alpha_max`` down to ``eps *
        alpha_max``, where ``alpha_max`` is a strength at which all tasks
        share one weight vector (the largest edge norm of the least-squares
        dual certificate of the pooled fit, an upper bound on the smallest
        such strength; computed on the whole data).
    n_alphas : int, default=100
        Size of the default grid (as ``LassoCV``'s); every strength starts
        from the weights and dual variables of the one before, so that a fine
        grid costs little more than its first fits.
    eps : float, default=1e-2
        Ratio of the smallest to the largest strength of the default grid.
        At ``eps=1e-2`` the tasks are nearly independent already; the
        stochastic fits at smaller strengths barely settle and cost the most.
    cv : int, cross-validation generator or iterable, default=None
        Folds. None or an int (default 5) split every task across the folds
        (``StratifiedKFold`` on the task labels), so that each training fold
        holds every task that has enough samples; a task missing from a
        training fold stays a graph node fitted through its neighbours.
        A splitter is used as given (``split(X, y)``).
    <parameters of GraphGuidedRegressor but alpha>

    Attributes
    ----------
    alpha_ : float
        The chosen strength.
    alphas_ : ndarray of shape (n_alphas,)
        The grid, decreasing.
    mse_path_ : ndarray of shape (n_alphas, n_folds)
        Held-out (weighted) mean squared error of every strength on every
        fold, in the order of ``alphas_``.
    coef_, intercept_, tasks_, edges_, edge_weights_, n_iter_, device_, \
n_features_in_, feature_names_in_
        Of the fit at ``alpha_`` on all the data, as for
        :class:`GraphGuidedRegressor`.

    See Also
    --------
    GraphGuidedRegressor : The model at a given strength.
    GraphGuidedClassifierCV : The same for classification.
    sklearn.linear_model.LassoCV : The same way of choosing a penalty.

    References
    ----------
    .. [1] K. K. T. Vaidyan, M. P. Friedlander and A. Alacaoglu, "Convergence Rate
       of the Last Iterate of Stochastic Proximal Algorithms", ICML 2026,
       arXiv:2602.05489.
    .. [2] J. Friedman, T. Hastie and R. Tibshirani, "Regularization Paths for
       Generalized Linear Models via Coordinate Descent", Journal of
       Statistical Software 33(1), 2010 (warm-started paths, the grid).

    Examples
    --------
    >>> from sklearn_ext.datasets import make_graph_multitask
    >>> from sklearn_ext.linear_model import GraphGuidedRegressorCV
    >>> data = make_graph_multitask(n_tasks=6, n_groups=2, n_samples_per_task=60,
    ...                             noise=2.0, random_state=0)
    >>> model = GraphGuidedRegressorCV(
    ...     graph=data.adjacency, task_column=0, n_alphas=4, cv=3,
    ...     max_iter=600, random_state=0,
    ... ).fit(data.data, data.target)
    >>> model.mse_path_.shape
    (4, 3)
    >>> bool(model.alpha_ in model.alphas_)
    True
    """

    _parameter_constraints: dict = {
        **_BaseGraphGuided._parameter_constraints,
        "alphas": [None, "array-like"],
        "n_alphas": [Interval(Integral, 1, None, closed="left")],
        "eps": [Interval(Real, 0, 1, closed="right")],
        "cv": [None, Integral, "cv_object"],
    }
    _parameter_constraints.pop("alpha")

    # alpha is chosen on the whole data: a stream has no cross-validation
    partial_fit = available_if(lambda est: False)(GraphGuidedRegressor.partial_fit)

    __init__ = _cv_init

    def _graph_alpha(self):
        return self._path_alpha

    @classmethod
    def _get_test_params(cls):
        params = GraphGuidedRegressor._get_test_params()
        return {**params, "max_iter": 200, "n_alphas": 2, "cv": 2}

    @classmethod
    def _gpu_check_params(cls):
        params, n_samples = GraphGuidedRegressor._gpu_check_params()
        return {**params, "max_iter": 100, "n_alphas": 2, "cv": 2}, n_samples

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y, sample_weight=None):
        """Choose ``alpha_`` by cross-validation, then fit it on all the data.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Targets.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedRegressorCV
            The fitted estimator.
        """
        X, feats, labels, y = self._validate(X, y, fitting=True, y_numeric=True)
        weights = self._check_weights(sample_weight, X)
        y = np.asarray(y, dtype=np.float64)
        self.mse_path_ = _cv_path(self, X, feats, labels, y, "squared", 1, weights)
        return self

    def _pooled_gradient(self, Xf, y, w, idx, T):
        """Per-task data gradients at the pooled least-squares weights."""
        if self.fit_intercept:  # centre every task: the intercepts drop out
            tot = np.bincount(idx, weights=w, minlength=T)
            mx = np.zeros((T, Xf.shape[1]))
            np.add.at(mx, idx, w[:, None] * Xf)
            mx /= np.maximum(tot, 1e-300)[:, None]
            my = np.bincount(idx, weights=w * y, minlength=T) / np.maximum(tot, 1e-300)
            Xc, yc = Xf - mx[idx], y - my[idx]
        else:
            Xc, yc = Xf, y
        gram = (Xc * w[:, None]).T @ Xc
        l2 = self.task_alpha * w.sum() if self.task_penalty == "l2" else 0.0
        coef = np.linalg.lstsq(
            gram + l2 * np.eye(len(gram)), Xc.T @ (w * yc), rcond=None
        )[0]
        resid = Xc @ coef - yc
        G = np.zeros((T, Xc.shape[1]))
        np.add.at(G, idx, (w * resid)[:, None] * Xc)
        return G / w.sum()

    @staticmethod
    def _held_out_loss(scores, y, weights):
        return np.average((y - scores[:, 0]) ** 2, weights=weights)


def _cv_folds(est, X, y, labels, n, strata=None):
    """The folds: every task on both sides by default (see ``cv``)."""
    if est.cv is None or isinstance(est.cv, Integral):
        n_splits = 5 if est.cv is None else int(est.cv)
        if est.task_column is None and strata is None:
            return list(KFold(n_splits).split(np.zeros(n)))
        _, codes = np.unique(labels, return_inverse=True)
        if strata is not None:
            # tasks and classes together, where every pair is frequent enough
            pairs = codes * (int(strata.max()) + 1) + strata
            _, pair_codes, counts = np.unique(
                pairs, return_inverse=True, return_counts=True
            )
            if counts.min() >= n_splits:
                codes = pair_codes
            elif est.task_column is None:
                codes = strata
        return list(StratifiedKFold(n_splits).split(np.zeros(n), codes))
    return list(check_cv(est.cv).split(X, y))


def _cv_path(est, X, feats, labels, y_enc, loss, n_outputs, weights, strata=None):
    """Fit the path on every fold, set ``alphas_`` and ``alpha_``, refit.

    Returns the held-out loss of every strength on every fold (n_alphas,
    n_folds).
    """
    all_tasks = np.unique(labels)
    if est.alphas is None:
        top = est._alpha_max(X, feats, labels, y_enc, weights, loss, n_outputs)
        alphas = top * np.geomspace(1.0, est.eps, est.n_alphas)
    else:
        alphas = np.sort(np.asarray(est.alphas, dtype=float).ravel())[::-1]
        if alphas.size == 0 or np.any(~np.isfinite(alphas)) or alphas[-1] < 0:
            raise ValueError(
                "alphas must be a non-empty array of finite non-negative "
                f"strengths; got {est.alphas!r}."
            )
    folds = _cv_folds(est, X, y_enc, labels, len(y_enc), strata)
    path = np.empty((len(alphas), len(folds)))
    for j, (train, test) in enumerate(folds):
        X_train = X[train]
        w_train = (
            None if weights is None else est._check_weights(weights[train], X_train)
        )
        w_test = None if weights is None else weights[test]
        X_test = X[test]
        idx_test = np.searchsorted(all_tasks, labels[test])
        fits = est._alpha_path(
            X_train,
            feats,
            labels[train],
            y_enc[train],
            loss,
            n_outputs,
            w_train,
            alphas,
            tasks=all_tasks,
        )
        Xf = X_test if _all(feats) else X_test[:, feats]
        for i, (_, W, B) in enumerate(fits):
            scores = _scores(_NumpyOps(), Xf, W, B, idx_test)
            path[i, j] = est._held_out_loss(scores, y_enc[test], w_test)
    est.alphas_ = alphas
    best = int(np.argmin(path.mean(axis=1)))
    est.alpha_ = float(alphas[best])
    est._path_alpha = est.alpha_
    est._fit_problem(X, feats, labels, y_enc, loss, n_outputs, weights)
    return path


def _alpha_max(self, X, feats, labels, y_enc, weights, loss, n_outputs):
    """A strength at which the pooled fit is the optimum (all tasks fused).

    The pooled weights ``w`` (shared by the tasks, per-task intercepts) are
    optimal for every task when the data gradients ``G_t`` at ``w`` are
    ``-(D' Y)_t`` for edge duals of norm ``||y_e|| <= alpha a_e``. The
    least-norm ``Y = D L^+ (-G)`` (``L`` the graph Laplacian, solved by
    conjugate gradients) gives such an alpha: ``max_e ||y_e|| / a_e``. The
    pooled fit is least squares (regressor) or a nearly unpenalised logistic
    regression (classifier, where ``alpha_max`` is then approximate).
    """
    self._set_tasks(labels)
    src, dst, edge_weight = self._edges
    if not len(src):
        return 1.0
    self._set_scaling(X, feats, weights)
    idx = np.searchsorted(self.tasks_, labels)
    Xf = X if _all(feats) else X[:, feats]
    Xf = Xf.toarray() if sparse.issparse(Xf) else np.asarray(Xf, dtype=float)
    if self._center is not None:
        Xf = Xf - self._center
    if self._scale is not None:
        Xf = Xf / self._scale
    w = np.ones(len(y_enc)) if weights is None else weights
    T = len(self.tasks_)
    G = self._pooled_gradient(Xf, y_enc, w, idx, T).reshape(T, -1)
    m = len(src)
    D = sparse.csr_matrix(
        (
            np.tile([1.0, -1.0], m),
            (np.repeat(np.arange(m), 2), np.column_stack([src, dst]).ravel()),
        ),
        shape=(m, T),
    )
    lap = (D.T @ D).tocsr()
    rhs = -(G - G.mean(axis=0))  # in the range of L on a connected graph
    U = np.column_stack(
        [
            cg(lap, rhs[:, k], maxiter=10 * T, **{_CG_RTOL: 1e-10})[0]
            for k in range(rhs.shape[1])
        ]
    )
    Y = D @ U
    top = float(np.max(np.linalg.norm(Y, axis=1) / edge_weight))
    return top if top > 0 else 1.0


GraphGuidedRegressorCV._alpha_max = _alpha_max


@fill_doc
class GraphGuidedClassifierCV(GraphGuidedClassifier):
    """Graph-guided multi-task classification with ``alpha`` chosen by cross-validation.

    :class:`GraphGuidedClassifier` fitted along a decreasing grid of graph
    strengths ``alphas`` on each training fold, each fit warm-started from the
    previous one (weights and dual variables; the step schedule restarts at a
    tenth of its first step),
    scored by the held-out (weighted) mean log-loss, which, unlike the
    accuracy, changes smoothly with ``alpha``; ``alpha_``, the strength of
    lowest mean held-out log-loss over the folds, is then fitted on all the
    data. Every other parameter is that of :class:`GraphGuidedClassifier`.

    Parameters
    ----------
    alphas : array-like or None, default=None
        Graph strengths to try (sorted decreasing for the path). None:
        ``n_alphas`` values log-spaced from ``alpha_max`` down to ``eps *
        alpha_max``, where ``alpha_max`` is the largest edge norm of the
        least-norm dual certificate of the pooled fit (one weight matrix for
        all tasks, per-task intercepts; a logistic regression with a tiny l2
        term, so the bound is approximate), computed on the whole data.
    n_alphas : int, default=100
        Size of the default grid (as ``LassoCV``'s).
    eps : float, default=1e-2
        Ratio of the smallest to the largest strength of the default grid.
    cv : int, cross-validation generator or iterable, default=None
        Folds. None or an int (default 5): ``StratifiedKFold`` on the pairs
        (task, class) when every pair has at least as many samples as there
        are folds, else on the task labels, so that every training fold holds
        every task (and, where possible, every class of every task). A
        splitter is used as given (``split(X, y)``).
    <parameters of GraphGuidedClassifier but alpha>

    Attributes
    ----------
    alpha_ : float
        The chosen strength.
    alphas_ : ndarray of shape (n_alphas,)
        The grid, decreasing.
    loss_path_ : ndarray of shape (n_alphas, n_folds)
        Held-out (weighted) mean log-loss (natural logarithm) of every
        strength on every fold, in the order of ``alphas_``: the
        classifier's counterpart of ``mse_path_``.
    classes_, coef_, intercept_, tasks_, edges_, edge_weights_, n_iter_, \
device_, n_features_in_, feature_names_in_
        Of the fit at ``alpha_`` on all the data, as for
        :class:`GraphGuidedClassifier`.

    See Also
    --------
    GraphGuidedClassifier : The model at a given strength.
    GraphGuidedRegressorCV : The same for regression.
    sklearn.linear_model.LogisticRegressionCV : Cross-validated logistic
        regression.

    References
    ----------
    .. [1] K. K. T. Vaidyan, M. P. Friedlander and A. Alacaoglu, "Convergence Rate
       of the Last Iterate of Stochastic Proximal Algorithms", ICML 2026,
       arXiv:2602.05489.
    .. [2] J. Friedman, T. Hastie and R. Tibshirani, "Regularization Paths for
       Generalized Linear Models via Coordinate Descent", Journal of
       Statistical Software 33(1), 2010 (warm-started paths, the grid).

    Examples
    --------
    >>> from sklearn_ext.datasets import make_graph_multitask
    >>> from sklearn_ext.linear_model import GraphGuidedClassifierCV
    >>> data = make_graph_multitask(n_tasks=6, n_groups=2, n_samples_per_task=60,
    ...                             task_type="binary", random_state=0)
    >>> clf = GraphGuidedClassifierCV(
    ...     graph=data.adjacency, task_column=0, n_alphas=4, cv=3,
    ...     max_iter=600, random_state=0,
    ... ).fit(data.data, data.target)
    >>> clf.loss_path_.shape
    (4, 3)
    >>> bool(clf.alpha_ in clf.alphas_)
    True
    """

    _parameter_constraints: dict = {
        **GraphGuidedRegressorCV._parameter_constraints,
    }

    partial_fit = available_if(lambda est: False)(GraphGuidedClassifier.partial_fit)

    __init__ = _cv_init

    def _graph_alpha(self):
        return self._path_alpha

    @classmethod
    def _get_test_params(cls):
        params = GraphGuidedClassifier._get_test_params()
        return {**params, "max_iter": 200, "n_alphas": 2, "cv": 2}

    @classmethod
    def _gpu_check_params(cls):
        params, n_samples = GraphGuidedClassifier._gpu_check_params()
        return {**params, "max_iter": 100, "n_alphas": 2, "cv": 2}, n_samples

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y, sample_weight=None):
        """Choose ``alpha_`` by cross-validation, then fit it on all the data.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Class labels.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedClassifierCV
            The fitted estimator.
        """
        X, feats, labels, y = self._validate(X, y, fitting=True)
        check_classification_targets(y)
        weights = self._check_weights(sample_weight, X)
        self.classes_ = LabelEncoder().fit(y).classes_
        weighed = y if weights is None else y[weights > 0]
        if len(self.classes_) < 2 or len(np.unique(weighed)) < 2:
            raise ValueError(
                "GraphGuidedClassifierCV needs samples of positive weight of at "
                f"least 2 classes; the data hold 1 class ({np.unique(weighed)[0]!r})."
            )
        binary = len(self.classes_) == 2
        self._loss = "logistic" if binary else "softmax"
        K = 1 if binary else len(self.classes_)
        y_enc = self._encode_targets(y)
        strata = np.searchsorted(self.classes_, y)
        self.loss_path_ = _cv_path(
            self, X, feats, labels, y_enc, self._loss, K, weights, strata
        )
        return self

    def _pooled_gradient(self, Xf, y_enc, w, idx, T):
        """Per-task log-loss gradients at the pooled logistic fit."""
        onehot = np.zeros((len(idx), T))
        onehot[np.arange(len(idx)), idx] = 1.0
        design = np.column_stack([Xf, onehot]) if self.fit_intercept else Xf
        codes = y_enc.astype(int)
        n_classes = len(self.classes_)
        present = np.unique(codes[w > 0])
        pooled = LogisticRegression(C=1e4, fit_intercept=False, max_iter=500)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            pooled.fit(design, codes, sample_weight=w)
        proba = np.zeros((len(idx), n_classes))
        proba[:, present] = pooled.predict_proba(design)
        if self._loss == "logistic":
            R = (proba[:, 1] - codes)[:, None]
        else:
            R = proba
            R[np.arange(len(idx)), codes] -= 1.0
        G = np.zeros((T, R.shape[1], Xf.shape[1]))
        np.add.at(G, idx, (w[:, None] * R)[:, :, None] * Xf[:, None, :])
        return G / w.sum()

    @staticmethod
    def _held_out_loss(scores, codes, weights):
        if scores.shape[1] == 1:
            z = scores[:, 0]
            losses = np.logaddexp(0.0, z) - codes * z
        else:
            top = scores.max(axis=1, keepdims=True)
            lse = top[:, 0] + np.log(np.exp(scores - top).sum(axis=1))
            losses = lse - scores[np.arange(len(codes)), codes.astype(int)]
        return np.average(losses, weights=weights)


GraphGuidedClassifierCV._alpha_max = _alpha_max


def _all(feats):
    return isinstance(feats, slice) and feats == slice(None)


def _parameters_but_alpha(cls):
    """The docstring entries of every parameter of ``cls`` but alpha."""
    doc = cls.__doc__
    start = doc.index("    Parameters\n    ----------\n") + len(
        "    Parameters\n    ----------\n"
    )
    body = doc[start : doc.index("\n    Attributes\n")]
    entries = re.split(r"\n(?=    \w+ : )", body)
    return "\n".join(e for e in entries if not e.startswith("    alpha :")).rstrip()


GraphGuidedRegressorCV.__doc__ = GraphGuidedRegressorCV.__doc__.replace(
    "    <parameters of GraphGuidedRegressor but alpha>",
    _parameters_but_alpha(GraphGuidedRegressor),
)
GraphGuidedClassifierCV.__doc__ = GraphGuidedClassifierCV.__doc__.replace(
    "    <parameters of GraphGuidedClassifier but alpha>",
    _parameters_but_alpha(GraphGuidedClassifier),
)
