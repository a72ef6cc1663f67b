"""Graph-guided multi-task linear models, by last-iterate stochastic proximal methods.

Vaidyan, Friedlander and Alacaoglu, "Convergence Rate of the Last Iterate of
Stochastic Proximal Algorithms", ICML 2026 (arXiv:2602.05489). The shared part
of the two models is in ``_graph_guided_base.py``, the solvers in
``_graph_guided_solver.py``, the task labels and the graph in ``_task_graph.py``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.linear_model._graph_guided_base import _BaseGraphGuided
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._sklearn_compat import _fit_context

__all__ = ["GraphGuidedClassifier", "GraphGuidedRegressor"]


@fill_doc
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
    With ``sample_weight`` it is the weighted mean ``(1 / sum_i s_i) sum_i s_i
    1/2 (y_i - ...)^2``, which integer weights make equal to repeating rows; a
    task whose samples all weigh 0 stays a node of the graph, its weights set
    by its neighbours alone. Because the graph term is a group norm of
    differences, tasks whose weights are close enough fuse to exactly equal
    weights, which recovers groups of tasks.

    Task membership travels inside ``X``: ``task_column`` names the column that
    holds each sample's task label (integers, or strings in a DataFrame or an
    object array); the other columns are the features.
    Cross-validation, scorers and pipelines therefore work unchanged, each sample
    being predicted with its own task's weights. With ``task_column=None`` there
    is one task and no graph term: the estimator is a plain linear least-squares
    model (with the optional task term), fitted by the same stochastic solver.

    Solvers (step ``eta_t = eta0 / sqrt(t + 1)``, the schedule of the theory):

    - ``"prox_sgd"`` (default): proximal SGD. A stochastic gradient step on a
      minibatch (``batch_size`` samples drawn from every task; with sample
      weights, in proportion to them, as repeated rows would be drawn), then
      the prox of the whole nonsmooth part (graph and l1), which has no
      closed form and is computed by accelerated projected gradient on its
      dual, warm-started from the previous iteration, to a relative
      tolerance ``inner_tol / sqrt(t + 1)`` that tightens with the
      iterations (at most ``inner_max_iter`` dual steps).
    - ``"rip"``: the randomized incremental proximal method. The same gradient
      step, then the closed-form proxes of a random set of edge terms, each
      scaled by the inverse of its probability of being drawn, then the l1
      prox. ``edge_sampling="matching"`` draws one class of a fixed edge
      colouring (node-disjoint edges: every task exchanges with at most one
      neighbour per iteration); ``"uniform"`` draws ``edges_per_step`` edges.
      ``edge_memory=True`` keeps every edge's last subgradient (point-SAGA),
      which removes the variance of the edge sampling at the optimum. Its
      automatic step is a fraction of prox-SGD's that shrinks as the
      scaled radius ``q = eta0 * alpha * max a_st / P(edge drawn)`` of its
      first edge proxes grows: ``clip(0.4 * q ** -0.3, 0.1, 1)``, a rule
      measured over alpha and graph sizes (see ``_graph_guided_solver.py``).

    Which solver: on one machine prox-SGD was ahead at every size
    ``benchmarks/bench_graph_guided.py`` measures (the figures are in the
    user guide), because its prox passes information across the whole graph
    at every iteration while RIP moves each task along one edge. RIP is meant for
    decentralised settings, where a task (a client, a sensor) may exchange
    with one neighbour per round and a full graph prox is not available; its
    iteration costs O(edges drawn) communication.

    The returned coefficients are the last iterate, for which the paper proves
    an O~(1/sqrt(T)) rate without a bounded-variance assumption;
    ``average=True`` returns the running average of the iterates instead.

    X may be sparse (CSR; the feature columns are copied once, and the
    iterations keep them sparse on the CPU). :meth:`partial_fit` continues
    the iterations on a stream of batches;
    :class:`GraphGuidedRegressorCV` chooses ``alpha`` on a warm-started path.

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
        Column of X holding each sample's task label: integer-valued numbers, or
        strings (in a DataFrame or an object array). Negative indices count
        from the end, as after a ``ColumnTransformer`` that passes the column
        through last; a string names a column of a DataFrame. A task label
        that ``fit`` did not see raises a ValueError that names it.
    task_penalty : {"l2", "l1"}, default="l2"
        Kind of the per-task term.
    task_alpha : float, default=0.0
        Strength of the per-task term.
    fit_intercept : bool, default=True
        Whether each task has an (unpenalised) intercept.
    solver : {"prox_sgd", "rip"}, default="prox_sgd"
        Stochastic proximal method, see above. ``"prox_sgd"`` is the faster on
        one machine at every size measured; ``"rip"`` is the method for
        decentralised settings where each task exchanges with few neighbours
        per round.
    edge_sampling : {"matching", "uniform"}, default="matching"
        How ``"rip"`` draws its edges: one class of a greedy edge colouring
        (a matching, all its proxes at once) or ``edges_per_step`` uniform
        edges (applied in order, vectorised over node-disjoint rounds).
        ``"uniform"`` with ``edge_memory=False`` and one edge is the textbook
        method.
    edge_memory : bool, default=True
        Whether ``"rip"`` keeps a table of the edges' last subgradients
        (point-SAGA): every step then uses the whole stored graph subgradient
        and the drawn edges refresh their entries, so that edge sampling adds
        no variance at the optimum. It costs one (n_edges, n_features) table.
    edges_per_step : int, default=1
        Edges drawn per iteration of ``"rip"`` with ``edge_sampling="uniform"``.
    standardize : bool, default=True
        Fit on standardised features: centred (dense X with an intercept) and
        divided by their (weighted) standard deviation, a constant feature
        keeping scale 1; sparse X is scaled, not centred. The penalties then
        apply to the coefficients of the standardised features (as glmnet's
        ``standardize=TRUE``); ``coef_`` and ``intercept_`` are reported on the
        original scale. It makes the automatic step, and so the defaults,
        work on unscaled data (the user guide compares both settings on
        ``load_diabetes(scaled=False)``). False penalises the original-scale
        coefficients.
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
        Stop when, at ``n_iter_no_change`` consecutive checks (one every
        ``CHECK_EVERY = 100`` iterations, whatever the number of samples), the
        objective has not decreased by ``tol`` times its best value. The
        checks evaluate the objective on a fixed, evenly spaced subsample of
        ``max(5000, 10 * n_tasks * batch_size)`` rows (all rows when there are
        fewer), so that they cost at most about a tenth of the iterations.
        None runs exactly ``max_iter`` iterations.
    n_iter_no_change : int, default=5
        Checks without improvement before stopping.
    average : bool, default=False
        Return the average of the iterates instead of the last one.
    record_objective : bool, default=False
        Record the objective of the last and averaged iterates at about 60
        log-spaced iterations (every power of ten among them) in
        ``objective_curve_``.
    inner_max_iter : int, default=200
        Maximum dual iterations of the prox of ``"prox_sgd"`` (a safeguard:
        tests check that it is not reached in 1e5 iterations).
    inner_tol : "auto" or float, default="auto"
        At iteration t the prox's dual iterations stop when the primal point
        moves by less than ``inner_tol / sqrt(t + 1)`` relative to the prox's
        displacement ``|prox(V) - V|``: the error of the inexact prox then
        shrinks like ``eta_t^2``, faster than the step, and leaves no floor
        (tested up to 1e5 iterations). A smaller value makes each prox more
        exact and more costly. "auto" sets it from the graph's size,
        ``clip(0.3 * 30 / n_tasks, 0.01, 0.3)``, since a loose prox is the
        faster on small graphs and a tight one on large graphs (measured in
        ``benchmarks/bench_graph_guided.py``, part ``innertol``).
    device : str or torch.device, default="auto"
        Where the iterations run. The CPU path is numpy (float64) and does not
        import torch; "cuda" (or "cuda:N", a ``torch.device``) runs the same
        iterations (same random draws) in torch, float32, on the GPU. "auto"
        picks CUDA only when it is available and an iteration is large enough
        (``n_tasks * batch_size * n_features * n_outputs >= 2**18``) for the GPU
        to win. The fitted coefficients are numpy arrays either way.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of samples and edges (a numpy generator, on the CPU
        whatever the device). An int gives the same fit on the same data.
    %(verbose)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_tasks, n_features)
        Weights of each task, in the order of ``tasks_``.
    intercept_ : ndarray of shape (n_tasks,)
        Intercept of each task.
    tasks_ : ndarray of shape (n_tasks,)
        Sorted task labels seen in fit, int64 or str (``[0]`` without a task
        column).
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
    @fill_doc
    def fit(self, X, y, sample_weight=None):
        """Fit the task weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Targets.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedRegressor
            The fitted estimator.
        """
        X, feats, labels, y = self._validate(X, y, fitting=True, y_numeric=True)
        weights = self._check_weights(sample_weight, X)
        self._fit_problem(
            X, feats, labels, self._encode_targets(y), "squared", 1, weights
        )
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def partial_fit(self, X, y, tasks=None, sample_weight=None):
        """Continue the fit with one pass over a batch of a stream.

        The first call (on an estimator not yet fitted) sets the tasks, the
        feature scaling (``standardize``) and the step (``eta0="auto"``) from
        its batch; every call then runs ``ceil(n_batch / (n_tasks_in_batch *
        batch_size))`` iterations on its batch (one pass in expectation),
        continuing the step schedule, the weights and the solver's dual
        variables of the calls before (or of ``fit``). ``max_iter`` and
        ``tol`` do not apply.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Targets.
        tasks : array-like or None, default=None
            Every task label of the stream, needed on the first call when its
            batch lacks some tasks (they stay graph nodes, fitted by their
            neighbours until their samples arrive). None: the first batch's
            task labels. Later calls may omit it; a later batch's unknown
            task raises a ValueError.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedRegressor
            The updated estimator.
        """

        def prepare(y, first):
            return self._encode_targets(y), "squared", 1

        return self._partial_fit(X, y, tasks, sample_weight, prepare, y_numeric=True)

    def _set_coefficients(self, W, B):
        self.coef_ = W[:, 0, :].copy()
        self.intercept_ = B[:, 0].copy()

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


@fill_doc
class GraphGuidedClassifier(ClassifierMixin, _BaseGraphGuided):
    """Multi-task logistic regression coupled by a graph (last-iterate prox-SGD, RIP).

    The classification counterpart of :class:`GraphGuidedRegressor`: each task
    has its own logistic model, binary (one weight vector per task) or
    multinomial (one per class and task), and the graph term
    ``alpha * sum_(s,t) a_st ||W_s - W_t||_F`` pulls neighbouring tasks' whole
    weight matrices together. It minimises the mean log-loss over all samples
    plus that term and the optional per-task term, with the same solvers, step
    schedule, task column, graph options and sample weights as the regressor
    (see there).

    Parameters
    ----------
    alpha : float, default=1.0
        Strength of the graph term.
    graph : {"complete", "chain"}, array-like, sparse matrix or list, \
            default="complete"
        Collaboration graph over the tasks, as for the regressor.
    task_column : int, str or None, default=None
        Column of X holding each sample's task label (integers or strings), as
        for the regressor.
    task_penalty : {"l2", "l1"}, default="l2"
        Kind of the per-task term.
    task_alpha : float, default=0.0
        Strength of the per-task term.
    fit_intercept : bool, default=True
        Whether each task has intercepts.
    solver : {"prox_sgd", "rip"}, default="prox_sgd"
        Stochastic proximal method, as for the regressor.
    edge_sampling : {"matching", "uniform"}, default="matching"
        How ``"rip"`` draws its edges, as for the regressor.
    edge_memory : bool, default=True
        Whether ``"rip"`` keeps the edges' last subgradients, as for the
        regressor.
    edges_per_step : int, default=1
        Edges drawn per iteration of ``"rip"`` with uniform sampling.
    standardize : bool, default=True
        Fit on standardised features, coefficients reported on the original
        scale, as for the regressor.
    batch_size : int, default=8
        Samples drawn from each task per iteration.
    eta0 : "auto" or float, default="auto"
        Initial step; "auto" from the smoothness of the log-loss (1/4 of
        ``||x||^2`` binary, 1/2 multinomial).
    max_iter : int, default=5000
        Number of iterations.
    tol : float or None, default=1e-4
        Stopping tolerance on the objective, checked every 100 iterations on a
        fixed subsample as for the regressor; None runs ``max_iter``
        iterations.
    n_iter_no_change : int, default=5
        Checks without improvement before stopping.
    average : bool, default=False
        Return the average of the iterates instead of the last one.
    record_objective : bool, default=False
        Record the objective trace in ``objective_curve_``.
    inner_max_iter : int, default=200
        Maximum dual iterations of the prox of ``"prox_sgd"``.
    inner_tol : "auto" or float, default="auto"
        Relative tolerance of the prox's dual iterations at the first
        iteration, divided by ``sqrt(t + 1)`` at iteration t; "auto" sets it
        from the graph's size, as for the regressor.
    device : str or torch.device, default="auto"
        Where the iterations run, as for the regressor.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of samples and edges.
    %(verbose)s

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
    @fill_doc
    def fit(self, X, y, sample_weight=None):
        """Fit the task weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Class labels.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedClassifier
            The fitted estimator.
        """
        X, feats, labels, y = self._validate(X, y, fitting=True)
        check_classification_targets(y)
        weights = self._check_weights(sample_weight, X)
        self.classes_ = LabelEncoder().fit(y).classes_
        weighed = y if weights is None else y[weights > 0]
        if len(self.classes_) < 2 or len(np.unique(weighed)) < 2:
            held = np.unique(weighed)
            which = "" if weights is None else " of positive weight"
            raise ValueError(
                f"GraphGuidedClassifier needs samples{which} of at least 2 classes; "
                f"the data hold 1 class ({held[0]!r})."
            )
        binary = len(self.classes_) == 2
        self._loss = "logistic" if binary else "softmax"
        K = 1 if binary else len(self.classes_)
        self._fit_problem(
            X, feats, labels, self._encode_targets(y), self._loss, K, weights
        )
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def partial_fit(self, X, y, classes=None, tasks=None, sample_weight=None):
        """Continue the fit with one pass over a batch of a stream.

        As :meth:`GraphGuidedRegressor.partial_fit`; the first call also needs
        every class label.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features, plus the task column when ``task_column`` is set.
        y : array-like of shape (n_samples,)
            Class labels, among ``classes``.
        classes : array-like of shape (n_classes,) or None, default=None
            Every class of the stream: required on the first call, ignored
            afterwards.
        tasks : array-like or None, default=None
            Every task label of the stream (first call), as for the regressor.
        %(sample_weight)s

        Returns
        -------
        self : GraphGuidedClassifier
            The updated estimator.
        """

        def prepare(y, first):
            check_classification_targets(y)
            if first:
                if classes is None:
                    raise ValueError(
                        "classes must be passed on the first call to partial_fit "
                        "(every class label of the stream)."
                    )
                self.classes_ = np.unique(np.asarray(classes))
                if len(self.classes_) < 2:
                    raise ValueError(
                        "GraphGuidedClassifier needs at least 2 classes; classes "
                        f"holds {len(self.classes_)}."
                    )
                binary = len(self.classes_) == 2
                self._loss = "logistic" if binary else "softmax"
            K = 1 if self._loss == "logistic" else len(self.classes_)
            return self._encode_targets(y), self._loss, K

        return self._partial_fit(X, y, tasks, sample_weight, prepare)

    def _set_coefficients(self, W, B):
        self.coef_ = W.copy()
        self.intercept_ = B.copy()

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
