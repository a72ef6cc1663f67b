"""Cross-validated graph strength for the graph-guided regressor, on a warm path.

The strength ``alpha`` of the graph term is chosen like ``LassoCV`` chooses its
own: fits along a decreasing grid, each warm-started from the one before, on
every training fold; the held-out mean squared error picks ``alpha_``, which is
refitted on all the data.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import re
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import cg
from sklearn.model_selection import KFold, StratifiedKFold, check_cv
from sklearn.utils.metaestimators import available_if

from sklearn_ext.linear_model._graph_guided import GraphGuidedRegressor
from sklearn_ext.linear_model._graph_guided_base import _BaseGraphGuided
from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps
from sklearn_ext.linear_model._graph_guided_solver import _scores
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._sklearn_compat import Interval, _fit_context

__all__ = ["GraphGuidedRegressorCV"]

# scipy 1.12 renamed cg's relative tolerance from ``tol`` to ``rtol``; the oldest
# scipy we support (1.10) knows only ``tol``.
_CG_RTOL = "rtol" if "rtol" in inspect.signature(cg).parameters else "tol"


@fill_doc
class GraphGuidedRegressorCV(GraphGuidedRegressor):
    """Graph-guided multi-task regression with ``alpha`` chosen by cross-validation.

    :class:`GraphGuidedRegressor` fitted along a decreasing grid of graph
    strengths ``alphas`` on each training fold, each fit warm-started from the
    previous one (weights and dual variables; the step schedule restarts),
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
    n_alphas : int, default=6
        Size of the default grid.
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
        Held-out mean squared error of every strength on every fold.
    coef_, intercept_, tasks_, edges_, edge_weights_, n_iter_, device_, \
n_features_in_, feature_names_in_
        Of the fit at ``alpha_`` on all the data, as for
        :class:`GraphGuidedRegressor`.

    See Also
    --------
    GraphGuidedRegressor : The model at a given strength.
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

    def __init__(
        self,
        *,
        alphas=None,
        n_alphas=6,
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
        inner_tol=0.3,
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

    def _graph_alpha(self):
        return self._path_alpha

    # alpha is chosen on the whole data: a stream has no cross-validation
    partial_fit = available_if(lambda est: False)(GraphGuidedRegressor.partial_fit)

    @classmethod
    def _get_test_params(cls):
        params = super()._get_test_params()
        return {**params, "max_iter": 200, "n_alphas": 2, "cv": 2}

    @classmethod
    def _gpu_check_params(cls):
        params, n_samples = super()._gpu_check_params()
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
        all_tasks = np.unique(labels)
        if self.alphas is None:
            top = self._alpha_max(X, feats, labels, y, weights, all_tasks)
            alphas = top * np.geomspace(1.0, self.eps, self.n_alphas)
        else:
            alphas = np.sort(np.asarray(self.alphas, dtype=float).ravel())[::-1]
            if alphas.size == 0 or np.any(~np.isfinite(alphas)) or alphas[-1] < 0:
                raise ValueError(
                    "alphas must be a non-empty array of finite non-negative "
                    f"strengths; got {self.alphas!r}."
                )
        if self.cv is None or isinstance(self.cv, Integral):
            n_splits = 5 if self.cv is None else int(self.cv)
            if self.task_column is None:
                splitter = KFold(n_splits)
                folds = list(splitter.split(np.zeros(len(y))))
            else:
                splitter = StratifiedKFold(n_splits)
                _, codes = np.unique(labels, return_inverse=True)
                folds = list(splitter.split(np.zeros(len(y)), codes))
        else:
            folds = list(check_cv(self.cv).split(X, y))
        mse = np.empty((len(alphas), len(folds)))
        for j, (train, test) in enumerate(folds):
            X_train = X[train]
            w_train = (
                None
                if weights is None
                else self._check_weights(weights[train], X_train)
            )
            w_test = None if weights is None else weights[test]
            X_test = X[test]
            idx_test = np.searchsorted(all_tasks, labels[test])
            path = self._alpha_path(
                X_train,
                feats,
                labels[train],
                y[train],
                "squared",
                1,
                w_train,
                alphas,
                tasks=all_tasks,
            )
            Xf = X_test if _all(feats) else X_test[:, feats]
            for i, (_, W, B) in enumerate(path):
                pred = _scores(_NumpyOps(), Xf, W, B, idx_test)[:, 0]
                mse[i, j] = np.average((y[test] - pred) ** 2, weights=w_test)
        self.alphas_ = alphas
        self.mse_path_ = mse
        best = int(np.argmin(mse.mean(axis=1)))
        self.alpha_ = float(alphas[best])
        self._path_alpha = self.alpha_
        self._fit_problem(X, feats, labels, y, "squared", 1, weights)
        return self

    def _alpha_max(self, X, feats, labels, y, weights, tasks):
        """A strength at which the pooled fit is the optimum (all tasks fused).

        The pooled least-squares weights ``w`` (per-task intercepts) are
        optimal for every task when the data gradients ``G_t`` at ``w`` are
        ``-(D' Y)_t`` for edge duals of norm ``||y_e|| <= alpha a_e``. The
        least-norm ``Y = D L^+ (-G)`` (``L`` the graph Laplacian, solved by
        conjugate gradients) gives such an alpha: ``max_e ||y_e|| / a_e``.
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
        w = np.ones(len(y)) if weights is None else weights
        T = len(self.tasks_)
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
        l2 = self.task_alpha * len(y) if self.task_penalty == "l2" else 0.0
        coef = np.linalg.lstsq(
            gram + l2 * np.eye(len(gram)), Xc.T @ (w * yc), rcond=None
        )[0]
        resid = Xc @ coef - yc
        G = np.zeros((T, Xf.shape[1]))
        np.add.at(G, idx, (w * resid)[:, None] * Xc)
        G /= w.sum()
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


def _all(feats):
    return isinstance(feats, slice) and feats == slice(None)


def _regressor_parameters():
    """The regressor's docstring entries of every parameter but alpha."""
    doc = GraphGuidedRegressor.__doc__
    start = doc.index("    Parameters\n    ----------\n") + len(
        "    Parameters\n    ----------\n"
    )
    body = doc[start : doc.index("\n    Attributes\n")]
    entries = re.split(r"\n(?=    \w+ : )", body)
    return "\n".join(e for e in entries if not e.startswith("    alpha :")).rstrip()


GraphGuidedRegressorCV.__doc__ = GraphGuidedRegressorCV.__doc__.replace(
    "    <parameters of GraphGuidedRegressor but alpha>", _regressor_parameters()
)
