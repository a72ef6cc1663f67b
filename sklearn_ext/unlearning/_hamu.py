"""HAMUUnlearner: constrained unlearning steps on a fitted torch classifier.

The base classifier is read through
:func:`sklearn_ext.utils.torch_classifier_view`: a network trained in plain
PyTorch (wrapped in :class:`sklearn_ext.utils.TorchModuleClassifier` with its
loss), a skorch ``NeuralNetClassifier``, or a torch classifier of this
package; any of them trained already and passed in a scikit-learn
``FrozenEstimator``. Where the base can recompute its preprocessing on the
retain rows without changing the network's function (the package's
``UnlearnableMLPClassifier``), ``unlearn`` does so, so that the preprocessing
no longer depends on the forget rows.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils import column_or_1d

from sklearn_ext.unlearning._hamu_update import HAMUStep, hamu_step
from sklearn_ext.unlearning._membership import membership_inference_auc
from sklearn_ext.utils._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import import_torch, make_generator
from sklearn_ext.utils._torch_classifier import (
    check_torch_classifier,
    torch_classifier_view,
)

__all__ = ["HAMUUnlearner", "forget_retain_similarity", "membership_inference_auc"]

METHODS = ("hamu", "hamu_u", "gradient_ascent", "neggrad_plus")
ALLOCATIONS = ("model", "per_tensor")
REQUIREMENTS = ("relative", "absolute")


def _row_keys(X, y):
    """One hashable key per row: its float64 bytes and its label.

    ``+ 0.0`` turns -0.0 into 0.0, so that the two zeros match; a row of an
    array with more than two axes (an image) is flattened.
    """
    X = np.asarray(X, dtype=np.float64)
    X = np.ascontiguousarray(X.reshape(len(X), -1) + 0.0)
    return [(row.tobytes(), label) for row, label in zip(X, np.asarray(y).tolist())]


def _batch_indices(n, size, generator):
    """Batches of row indices drawn without replacement, epoch after epoch.

    Each epoch is one random permutation of the ``n`` rows cut into
    consecutive batches of ``size`` (the last one of an epoch may be
    shorter): no row appears twice in a batch, and every row appears once per
    epoch. ``size >= n``: every batch is the whole set, in order.
    """
    torch = import_torch()
    if size >= n:
        whole = torch.arange(n)
        while True:
            yield whole
    while True:
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, size):
            yield order[start : start + size]


def _shares(objective, constraint, sizes):
    """Per tensor: the parts of both gradients and their norms."""
    torch = import_torch()
    a = torch.split(objective, sizes)
    b = torch.split(constraint, sizes)
    a_norms = torch.stack([torch.linalg.vector_norm(t) for t in a])
    b_norms = torch.stack([torch.linalg.vector_norm(t) for t in b])
    return a, b, a_norms, b_norms


def _reach(objective, constraint, radius, sizes=None):
    """The largest first-order rise of the constraint any admissible step gets.

    Whole model: ``R ||b||``. Per tensor: ``sum_t R_t ||b_t||`` with the
    radii ``R_t = R ||a_t|| / ||a||`` of :func:`_solve`, at most ``R ||b||``.
    """
    torch = import_torch()
    if sizes is None or float(torch.linalg.vector_norm(objective)) == 0.0:
        return radius * float(torch.linalg.vector_norm(constraint))
    _, _, a_norms, b_norms = _shares(objective, constraint, sizes)
    return radius * float(a_norms @ b_norms) / float(torch.linalg.vector_norm(a_norms))


class _ZeroGradient(ValueError):
    """The constrained gradient vanished: the step cannot be solved."""


def _solve(objective, constraint, improvement, radius, sizes=None):
    """The HAMU subproblem, on the whole model or tensor by tensor.

    ``objective`` (``a``) is the gradient to descend, ``constraint`` (``b``)
    the one whose first-order rise must reach ``improvement`` (``c``).
    ``sizes`` (the parameter tensors' numbers of entries) shares the problem
    out per tensor, as the authors' code does: tensor ``t`` gets the radius
    ``R_t = R ||a_t|| / ||a||`` (so the whole step still has norm at most
    ``R``) and the share ``c_t = c ||a_t|| ||b_t|| / sum_s ||a_s|| ||b_s||``
    of the required rise. Every tensor's share is then the same fraction of
    its reach ``R_t ||b_t||``, so the tensors are feasible or infeasible
    together. A tensor with a zero gradient does not move; with a zero
    ``a`` the whole-model step is taken. The result holds the totals over
    tensors; its branch is "infeasible" when the tensors' are, "direct" when
    all are, else "rectified".
    """
    torch = import_torch()
    if sizes is None or float(torch.linalg.vector_norm(objective)) == 0.0:
        return hamu_step(objective, constraint, improvement, radius)
    a_parts, b_parts, a_norms, b_norms = _shares(objective, constraint, sizes)
    weights = a_norms * b_norms
    a_total = float(torch.linalg.vector_norm(a_norms))
    w_total = float(weights.sum())
    deltas, branches = [], []
    for a, b, na, w in zip(a_parts, b_parts, a_norms.tolist(), weights.tolist()):
        if w == 0.0:
            deltas.append(torch.zeros_like(a))
            continue
        step = hamu_step(a, b, improvement * w / w_total, radius * na / a_total)
        deltas.append(step.delta)
        branches.append(step.branch)
    delta = torch.cat(deltas)
    if "infeasible" in branches:
        branch = "infeasible"
    elif branches and all(b == "direct" for b in branches):
        branch = "direct"
    else:
        branch = "rectified"
    dot = float(objective @ constraint)
    norms = a_total * float(torch.linalg.vector_norm(b_norms))
    retain_change = float(objective @ delta)
    return HAMUStep(
        delta=delta,
        branch=branch,
        hardness=dot,
        cosine=dot / norms if norms > 0 else 0.0,
        forget_change=float(constraint @ delta),
        retain_change=retain_change,
        degradation_unavoidable=branch == "infeasible" or retain_change > 0,
    )


class HAMUUnlearner(ClassifierMixin, BaseEstimator):
    """Unlearn a forget set from a fitted torch classifier (HAMU).

    Parameters
    ----------
    estimator : classifier
        The torch classifier to unlearn from, any that
        :func:`~sklearn_ext.utils.torch_classifier_view` reads: a
        :class:`~sklearn_ext.utils.TorchModuleClassifier` (a network trained
        in plain PyTorch, with its loss), a skorch ``NeuralNetClassifier``, or
        a torch classifier of this package (``UnlearnableMLPClassifier``,
        ``SheafADMMClassifier``). ``fit`` trains a clone of it on all rows.
        An estimator trained already goes in a scikit-learn
        ``FrozenEstimator``: ``fit`` then trains nothing and unlearns from a
        deep copy, never from the caller's model. Each step's loss is the
        base's own training loss (the adapter's ``loss``; skorch's
        ``get_loss``; cross-entropy for the package's classifiers).
    method : {"hamu", "hamu_u", "gradient_ascent", "neggrad_plus"}, \
            default="hamu"
        ``"hamu"`` (the paper's HAMU-Q): each step solves the constrained
        subproblem of :func:`~sklearn_ext.unlearning.hamu_step` (forget loss
        up by the required rise ``c`` to first order, least retain cost,
        step norm at most ``step_size``).
        ``"hamu_u"`` (the paper's HAMU-U, the utility-guaranteed variant):
        the roles swap, ``hamu_step(-g_f, -g_r, c, R)``: the retain loss
        falls by at least ``c`` to first order, and the forget loss rises as
        much as the step allows. ``forget_improvement`` and ``requirement``
        then set that fall (relative: a share of ``R ||g_r||``), and a
        verified step checks the retain batch's realised fall.
        ``"gradient_ascent"``: ``step_size`` times the forget gradient.
        ``"neggrad_plus"``: ``step_size`` times ``g_f - g_r``.
    forget_improvement : float, default=0.5
        Sets the required rise ``c`` of the batch's mean forget
        cross-entropy in each HAMU step, as ``requirement`` says.
    requirement : {"relative", "absolute"}, default="relative"
        How ``forget_improvement`` sets ``c``.
        ``"relative"``: ``c = forget_improvement * step_size * ||g_f||``, a
        fraction (at most 1) of the largest first-order rise any step of
        the trust region reaches: every step is feasible, and "guaranteed"
        means that share of what is reachable.
        ``"absolute"`` (the paper's form): ``c = forget_improvement`` nats per
        step, whatever the gradients. A step is then infeasible when
        ``step_size * ||g_f|| < c``, as at a model that fits the forget rows
        so well that their gradient nearly vanishes, and
        ``stop_on_infeasible`` stops there.
        The default is "relative": on the benchmark's trained MLPs the
        forget gradient nearly vanishes, and an absolute ``c=0.01`` nats
        with ``step_size=0.2`` is infeasible at the first step in most runs
        (``benchmarks/results/hamu.md``, part 5; the figures are in the user
        guide).
    allocation : {"model", "per_tensor"}, default="model"
        How the constraint is shared among the parameter tensors.
        ``"model"``: one subproblem on the whole model (one concatenated
        gradient). ``"per_tensor"`` (the authors' code's option): one
        subproblem per tensor; tensor ``t`` gets the radius
        ``R ||g_r,t|| / ||g_r||`` (so the whole step still has norm at most
        ``R``) and the share ``||g_r,t|| ||g_f,t|| / sum_s ||g_r,s|| ||g_f,s||``
        of the required rise (the authors' allocation by gradient norms; for
        HAMU-U the roles of the two gradients swap). The first-order
        guarantee holds for the sum over tensors. The reach of the relative
        requirement is then the tensors' total, ``sum_t R_t ||g_f,t||``,
        at most the whole model's ``R ||g_f||``.
    optimizer : callable or None, default=None
        None: each step is added to the parameters. A callable
        ``optimizer(params) -> torch.optim.Optimizer`` (e.g.
        ``functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9)``): each
        step is handed to it as the gradient ``-delta / step_size`` and it
        moves the parameters (``SGD`` with ``lr=step_size`` and no momentum
        is the same as None). Momentum or adaptive scaling changes the
        step, so the first-order guarantee is then of the direction, not of
        the move; a verified step that falls short restores the optimiser's
        state and solves again. Created anew by each ``unlearn``.
    step_size : float, default=0.1
        The HAMU trust-region radius ``R``: a bound on the Euclidean norm of
        the change of the network's trainable parameters (all of them, as
        one vector). A feasible step has norm exactly ``R`` (less only when
        the two gradients are parallel; see
        :func:`~sklearn_ext.unlearning.hamu_step`). Not scaled by a gradient
        norm: at a converged model both gradients are near zero, and a
        radius proportional to them would not move. For the baselines, the
        learning rate of their gradient step.
    max_steps : int, default=100
        Steps of unlearning at most.
    batch_size : int, default=256
        Forget and retain rows per step (paired in time), drawn without
        replacement: each set is reshuffled once per pass and cut into
        consecutive batches, so every row is used once per pass; a batch as
        large as a set is the whole set at every step.
    stop_on_infeasible : bool, default=True
        Stop before the first step where degradation of the retain loss is
        unavoidable (``hamu_step(...).degradation_unavoidable``): no step
        within the radius reaches ``c`` (only in "absolute" mode), or every
        step that does raises the retain loss to first order. When False an
        infeasible step takes the smallest step that reaches ``c``, longer
        than ``step_size``.
    max_step_retries : int, default=3
        Verified steps: after a feasible HAMU step, the batch's forget loss
        is evaluated again; when its realised rise falls short of ``c``, the
        step is undone and solved again with a first-order target raised by
        the shortfall ratio and 1% (``1.01 * target * c / realised``, at most
        the reach ``step_size * ||g_f||``), at most this many times. Each
        retry costs one forward pass over the forget batch (the gradients
        are reused); a raised target costs retain loss. 0 takes every step as solved.
    target_forget_accuracy : float, default=None
        Stop once the accuracy on the forget set is at most this (e.g. the
        accuracy a model retrained without the forget set has on it).
    keep_training_data : bool, default=False
        Keep a copy of the training rows so that ``unlearn`` can default its
        retain set to the rows not forgotten. **Privacy risk**: the fitted
        object, and every pickle or skops file of it, then holds a verbatim
        copy of every training row that has not been forgotten. ``unlearn``
        deletes the forgotten rows from the copy before it trains, so they
        never re-enter a retain set; a forget row that is not in the copy is
        an error, and so is a retain row that is not (it may be one forgotten
        earlier). False (the default) keeps no training row: ``unlearn``
        then needs the retain set, and keeping rows forgotten earlier out of
        it is the caller's task.
    random_state : int, RandomState instance or None, default=None
        Seeds the batches.

    Attributes
    ----------
    estimator_ : classifier
        The fitted (and, after ``unlearn``, unlearned) clone of ``estimator``;
        for a ``FrozenEstimator``, a deep copy of the estimator inside it.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen in ``fit``.
    preprocessing_refit_ : bool
        Set by ``unlearn``: whether the base classifier's preprocessing was
        recomputed on the retain set (it has the protocol's
        ``_refit_preprocessing``, as :class:`UnlearnableMLPClassifier` has),
        so that it no longer depends on the forget rows.
    n_training_rows_kept_ : int
        Training rows held (0 unless ``keep_training_data``); falls by the
        rows each ``unlearn`` deletes.
    history_ : dict of lists
        One entry per step taken: ``forget_loss`` and ``retain_loss``
        (whole sets), ``forget_accuracy`` and ``batch_forget_rise`` (the
        realised rise of the batch's forget loss); for HAMU also ``branch``,
        ``required_rise`` (``c``), ``first_order_target`` (the ``c`` of the
        step taken, raised by the verified-step retries), ``retries`` and
        ``degradation_unavoidable``.
    hardness_ : list of float
        ``g_r . g_f`` per solved HAMU subproblem (including the one that
        stopped the run, if any).
    cosine_ : list of float
        The cosine of ``g_r`` and ``g_f``, likewise.
    stopped_reason_ : str
        ``"max_steps"``, ``"target forget accuracy reached"``,
        ``"degradation unavoidable at step k (branch)"``, or the forget (for
        HAMU-U the retain) gradient vanishing after the first step.

    See Also
    --------
    hamu_step : The per-step subproblem in closed form.
    forget_retain_similarity : Hardness as per-sample gradient similarity.
    lira_membership_auc : A membership attack to audit the result.

    Notes
    -----
    **What is protected and what is not.** With the default
    ``keep_training_data=False`` the unlearner stores no training row, and
    ``unlearn`` stores none of the rows it is given (only scalar losses and
    accuracies in ``history_``): no forget row can be read back from the
    model or its file. The base classifier's preprocessing is recomputed on
    the retain set where the base has the protocol's hook
    (:class:`UnlearnableMLPClassifier`'s standardiser; otherwise
    ``preprocessing_refit_`` is False and it keeps statistics of all the
    training rows, forget rows included). Not protected: the weights after
    approximate unlearning are not those of a model retrained without the
    forget rows, so they still carry information about them (membership
    attacks such as :func:`lira_membership_auc` measure how much), and the
    base's ``loss_curve_`` and ``n_iter_`` describe the original training on
    all rows.

    The constraint is on the whole model (one concatenated gradient) unless
    ``allocation="per_tensor"``. The guarantee is first order: on the
    benchmark's MLP the realised rise fell short of the required one in
    some steps without verification, and reached it in every step with
    ``max_step_retries=3`` (``benchmarks/results/hamu.md``, part 4; the
    figures are in the user guide).

    References
    ----------
    .. [1] J. Chen, X. Niu, R. H. L. Sim, Z. Liu, N. F. Chen and B. K. H. Low,
       "How Hard Can It Be? Hardness-Aware Multi-Objective Unlearning",
       ICML 2026, arXiv:2606.02119.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_ext.unlearning import HAMUUnlearner, UnlearnableMLPClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> base = UnlearnableMLPClassifier((), max_iter=30, random_state=0)
    >>> u = HAMUUnlearner(base, step_size=0.2, target_forget_accuracy=0.0,
    ...                   max_steps=200, random_state=0).fit(X, y)
    >>> forget = y == 3
    >>> u = u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
    >>> float(u.score(X[forget], y[forget]))
    0.0
    >>> bool(u.score(X[~forget], y[~forget]) > 0.95)
    True
    """

    _paper = "Chen, Niu, Sim, Liu, Chen & Low, ICML 2026 (arXiv:2606.02119)"
    _bench_name = "hamu"
    _no_sample_weight = (
        "fit trains the base classifier on all rows alike; the rows to remove "
        "are given to unlearn, not weighted down"
    )

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"])],
        "method": [StrOptions(set(METHODS))],
        "forget_improvement": [Interval(Real, 0, None, closed="neither")],
        "requirement": [StrOptions(set(REQUIREMENTS))],
        "allocation": [StrOptions(set(ALLOCATIONS))],
        "optimizer": [callable, None],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "max_steps": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "stop_on_infeasible": ["boolean"],
        "max_step_retries": [Interval(Integral, 0, None, closed="left")],
        "target_forget_accuracy": [Interval(Real, 0, 1, closed="both"), None],
        "keep_training_data": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        method="hamu",
        forget_improvement=0.5,
        requirement="relative",
        allocation="model",
        optimizer=None,
        step_size=0.1,
        max_steps=100,
        batch_size=256,
        stop_on_infeasible=True,
        max_step_retries=3,
        target_forget_accuracy=None,
        keep_training_data=False,
        random_state=None,
    ):
        self.estimator = estimator
        self.method = method
        self.forget_improvement = forget_improvement
        self.requirement = requirement
        self.allocation = allocation
        self.optimizer = optimizer
        self.step_size = step_size
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.stop_on_infeasible = stop_on_infeasible
        self.max_step_retries = max_step_retries
        self.target_forget_accuracy = target_forget_accuracy
        self.keep_training_data = keep_training_data
        self.random_state = random_state

    def _check_requirement(self):
        if self.requirement == "relative" and self.forget_improvement > 1:
            raise ValueError(
                "forget_improvement must be at most 1 with requirement='relative' "
                "(it is a share of the largest rise the trust region reaches); got "
                f"{self.forget_improvement!r}. Use requirement='absolute' for a "
                "rise in nats per step."
            )

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Train a clone of ``estimator`` on all the data.

        With a ``FrozenEstimator``, nothing is trained: the estimator inside
        it is deep-copied, and every label of ``y`` must be one of its
        classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, ...)
            Training rows (copied and kept only with
            ``keep_training_data=True``), in the base's input format: numeric,
            passed on in their dtype (e.g. float32 for a skorch net); more than
            two axes (images) only where the base takes them.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : HAMUUnlearner
            Fitted meta-estimator.
        """
        self._check_requirement()
        X, y = validate_data(
            self, X, y, dtype="numeric", allow_nd=True, ensure_min_samples=2
        )
        frozen = isinstance(self.estimator, FrozenEstimator)
        check_torch_classifier(self.estimator.estimator if frozen else self.estimator)
        if frozen:
            # FrozenEstimator's clone is itself: copy, or unlearning would
            # edit the caller's trained model.
            estimator = copy.deepcopy(self.estimator.estimator)
            view = torch_classifier_view(estimator)
            view.targets(y, "cpu")  # every label must be one the model knows
        else:
            estimator = clone(self.estimator).fit(X, y)
            view = torch_classifier_view(estimator)
        if self.keep_training_data:
            # Copies: the default retain set must not follow later edits of
            # the caller's arrays.
            self._X_fit, self._y_fit = X.copy(), np.array(y, copy=True)
        else:
            self._X_fit = self._y_fit = None
        self.n_training_rows_kept_ = len(X) if self.keep_training_data else 0
        self.estimator_ = estimator
        self.classes_ = np.asarray(view.classes)
        return self

    def _gradients(self, params, loss):
        torch = import_torch()
        # A parameter the loss does not reach has a zero gradient.
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return torch.cat(
            [
                torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1)
                for p, g in zip(params, grads)
            ]
        )

    def _labels(self, y, n_rows, name):
        y = column_or_1d(y, warn=True)
        if len(y) != n_rows:
            raise ValueError(
                f"X_{name} has {n_rows} rows but y_{name} has {len(y)} labels."
            )
        return y

    def _unlearning_sets(self, X_forget, y_forget, X_retain, y_retain):
        """Validated forget and retain sets; deletes the forget rows if kept."""
        if np.shape(X_forget)[0] == 0:
            raise ValueError("the forget set is empty: nothing to unlearn.")
        Xf = validate_data(self, X_forget, dtype="numeric", allow_nd=True, reset=False)
        yf = self._labels(y_forget, len(Xf), "forget")
        if (X_retain is None) != (y_retain is None):
            raise ValueError("give both X_retain and y_retain, or neither.")
        kept = self._X_fit is not None
        if X_retain is None and not kept:
            raise ValueError(
                "unlearn needs the retain set: pass X_retain and y_retain (the "
                "training rows to keep fitting), or fit with "
                "keep_training_data=True to let it default to the kept training "
                "rows not forgotten."
            )
        forget_keys = _row_keys(Xf, yf)
        forgotten = set(forget_keys)
        if kept:
            store_keys = _row_keys(self._X_fit, self._y_fit)
            in_store = set(store_keys)
            missing = [i for i, k in enumerate(forget_keys) if k not in in_store]
            if missing:
                raise ValueError(
                    f"{len(missing)} of the {len(Xf)} forget rows (the first at "
                    f"index {missing[0]}) are not among the kept training rows "
                    "(same values and label): they were never trained on, or an "
                    "earlier unlearn already deleted them."
                )
            keep = np.array([k not in forgotten for k in store_keys])
        if X_retain is None:
            Xr, yr = self._X_fit[keep], self._y_fit[keep]
        else:
            Xr = validate_data(
                self, X_retain, dtype="numeric", allow_nd=True, reset=False
            )
            yr = self._labels(y_retain, len(Xr), "retain")
            retain_keys = _row_keys(Xr, yr)
            clash = [i for i, k in enumerate(retain_keys) if k in forgotten]
            if clash:
                raise ValueError(
                    f"X_retain contains {len(clash)} rows of the forget set (same "
                    f"values and label; the first at retain index {clash[0]}): a "
                    "row to forget cannot also be retained."
                )
            if kept:
                # The kept rows are all that was trained on and not yet
                # forgotten: a retain row outside them may be one an earlier
                # unlearn deleted.
                foreign = [i for i, k in enumerate(retain_keys) if k not in in_store]
                if foreign:
                    raise ValueError(
                        f"{len(foreign)} of the {len(Xr)} retain rows (the first "
                        f"at index {foreign[0]}) are not among the kept training "
                        "rows (same values and label): they were forgotten by an "
                        "earlier unlearn or never trained on. With "
                        "keep_training_data=True a retain set is a subset of the "
                        "kept rows, so that a forgotten row never re-enters one."
                    )
        if len(Xr) == 0:
            raise ValueError("the retain set is empty.")
        if kept:
            # Every check passed: the forgotten rows leave the store now,
            # before any training, so no later retain set can contain them.
            self._X_fit, self._y_fit = self._X_fit[keep], self._y_fit[keep]
            self.n_training_rows_kept_ = len(self._X_fit)
        return Xf, yf, Xr, yr

    def _hamu_update(self, step_input, apply, history, sizes=None):
        """Solve, apply and (when retries are allowed) verify one HAMU step.

        ``apply(delta)`` moves the parameters from the pre-step ones by
        ``delta`` and returns the batch's realised forget-loss rise and
        retain-loss fall (the latter only for HAMU-U). Returns the forget
        rise and None, or None and the branch when the run must stop before
        this step.
        """
        torch = import_torch()
        g_r, g_f = step_input
        if self.method == "hamu_u":  # the roles swap: guarantee the retain fall
            objective, constraint, name = -g_f, -g_r, "retain"
        else:
            objective, constraint, name = g_r, g_f, "forget"
        radius = self.step_size
        if float(torch.linalg.vector_norm(constraint)) == 0.0:
            raise _ZeroGradient(
                f"the {name} gradient is zero: the {name} loss cannot be "
                f"{'raised' if name == 'forget' else 'lowered'} to first order (is "
                f"the {name} set already at a stationary point, or does the loss "
                "not depend on the parameters?)."
            )
        reach = _reach(objective, constraint, radius, sizes)
        if self.requirement == "relative":
            required = self.forget_improvement * reach
        else:
            required = float(self.forget_improvement)

        def solve(c):
            return _solve(objective, constraint, c, radius, sizes)

        def guaranteed(delta):
            rise, fall = apply(delta)
            return rise, fall if self.method == "hamu_u" else rise

        target, retries = required, 0
        step = solve(target)
        self.hardness_.append(step.hardness)
        self.cosine_.append(step.cosine)
        if self.stop_on_infeasible and step.degradation_unavoidable:
            return None, step.branch
        rise, realised = guaranteed(step.delta)
        while (
            realised < required
            and retries < self.max_step_retries
            and step.branch != "infeasible"
            and target < reach * (1 - 1e-9)
        ):
            ratio = required / realised if realised > 0 else np.inf
            # 1% beyond the shortfall: the ratio alone converges from below.
            target = min(target * max(ratio, 1.0) * 1.01, reach)
            retries += 1
            step = solve(target)
            rise, realised = guaranteed(step.delta)
        history["branch"].append(step.branch)
        history["required_rise"].append(required)
        history["first_order_target"].append(target)
        history["retries"].append(retries)
        history["degradation_unavoidable"].append(step.degradation_unavoidable)
        return rise, None

    def unlearn(self, X_forget, y_forget, X_retain=None, y_retain=None):
        """Run the unlearning steps on the fitted classifier.

        Parameters
        ----------
        X_forget : array-like of shape (n_forget, n_features)
            Rows whose influence is to be removed. With
            ``keep_training_data=True`` each must be a kept training row (same
            values and label); every kept copy of it is deleted.
        y_forget : array-like of shape (n_forget,)
            Their labels.
        X_retain : array-like of shape (n_retain, n_features), default=None
            Rows to keep fitting; it must not contain a forget row. None: the
            kept training rows not forgotten (needs
            ``keep_training_data=True``; rows forgotten by an earlier
            ``unlearn`` are no longer among them). With
            ``keep_training_data=True`` an explicit retain set must be a
            subset of the kept rows; without it, leaving out rows forgotten
            earlier is the caller's task: the unlearner keeps nothing to
            recognise them by.
        y_retain : array-like of shape (n_retain,), default=None
            Their labels.

        Returns
        -------
        self : HAMUUnlearner
            With ``history_``, ``hardness_``, ``cosine_`` and
            ``stopped_reason_``.
        """
        check_is_fitted(self, "estimator_")
        self._validate_params()
        self._check_requirement()
        Xf, y_forget, Xr, y_retain = self._unlearning_sets(
            X_forget, y_forget, X_retain, y_retain
        )
        view = torch_classifier_view(self.estimator_)
        net = view.module
        params = [p for p in net.parameters() if p.requires_grad]
        device, dtype = params[0].device, params[0].dtype
        for name, labels in (("forget", y_forget), ("retain", y_retain)):
            try:
                targets = view.targets(labels, device)
            except ValueError as err:
                raise ValueError(f"y_{name}: {err}") from None
            if name == "forget":
                yf = targets
            else:
                yr = targets
        # The base's preprocessing (a standardiser fitted on all training
        # rows) is recomputed on the retain set where the base allows it.
        if view.refit_preprocessing is not None:
            view.refit_preprocessing(Xr)
        self.preprocessing_refit_ = view.refit_preprocessing is not None
        inputs_f = view.inputs(Xf, device=device, dtype=dtype)
        inputs_r = view.inputs(Xr, device=device, dtype=dtype)
        ce = view.loss
        gen = make_generator(self.random_state)
        keys = ["forget_loss", "forget_accuracy", "retain_loss", "batch_forget_rise"]
        if self.method in ("hamu", "hamu_u"):
            keys += [
                "branch",
                "required_rise",
                "first_order_target",
                "retries",
                "degradation_unavoidable",
            ]
        history = {k: [] for k in keys}
        self.hardness_, self.cosine_, self.stopped_reason_ = [], [], "max_steps"
        forget_batches = _batch_indices(len(Xf), self.batch_size, gen)
        retain_batches = _batch_indices(len(Xr), self.batch_size, gen)
        sizes_all = [p.numel() for p in params]
        sizes = sizes_all if self.allocation == "per_tensor" else None
        opt = None if self.optimizer is None else self.optimizer(params)
        # Every forward pass in evaluation mode: the steps edit the function
        # the model predicts with; batch-norm statistics do not take in the
        # forget rows, and dropout does not randomise the verified steps.
        net.eval()
        try:
            self._steps(
                net, params, opt, sizes, sizes_all, ce, history, gen,
                (inputs_f, yf, forget_batches), (inputs_r, yr, retain_batches),
            )  # fmt: skip
        finally:
            if opt is not None:
                for p in params:
                    p.grad = None
        self.history_ = history
        return self

    def _steps(
        self, net, params, opt, sizes, sizes_all, ce, history, gen, forget, retain
    ):
        """The unlearning loop (see :meth:`unlearn`)."""
        torch = import_torch()
        inputs_f, yf, forget_batches = forget
        inputs_r, yr, retain_batches = retain
        device = params[0].device
        for t in range(self.max_steps):
            bf = next(forget_batches).to(device)
            br = next(retain_batches).to(device)
            loss_f = ce(net(inputs_f[bf]), yf[bf])
            loss_r = ce(net(inputs_r[br]), yr[br])
            before = float(loss_f.detach()), float(loss_r.detach())
            g_f = self._gradients(params, loss_f)
            g_r = self._gradients(params, loss_r)
            start = torch.nn.utils.parameters_to_vector(params).detach()
            state = None if opt is None else copy.deepcopy(opt.state_dict())

            def apply(delta, start=start, state=state, bf=bf, br=br, before=before):
                """Move by ``delta`` from ``start``; the realised changes."""
                with torch.no_grad():
                    if opt is None:
                        torch.nn.utils.vector_to_parameters(start + delta, params)
                    else:  # the optimiser moves, from the pre-step state
                        # A copy: the parameters become views of the vector,
                        # and the optimiser's step would edit ``start``.
                        torch.nn.utils.vector_to_parameters(start.clone(), params)
                        # A copy: load_state_dict keeps the tensors it is
                        # given, and the step would change the saved state.
                        opt.load_state_dict(copy.deepcopy(state))
                        grads = torch.split(-delta / self.step_size, sizes_all)
                        for p, g in zip(params, grads):
                            p.grad = g.reshape(p.shape).clone()
                        opt.step()
                    rise = float(ce(net(inputs_f[bf]), yf[bf])) - before[0]
                    fall = np.nan
                    if self.method == "hamu_u":
                        fall = before[1] - float(ce(net(inputs_r[br]), yr[br]))
                    return rise, fall

            if self.method in ("hamu", "hamu_u"):
                try:
                    rise, stop = self._hamu_update((g_r, g_f), apply, history, sizes)
                except _ZeroGradient as err:
                    if t == 0:  # nothing was edited: the input is at fault
                        raise ValueError(str(err)) from None
                    self.stopped_reason_ = f"{err} (step {t})"
                    break
                if stop is not None:
                    self.stopped_reason_ = (
                        f"degradation unavoidable at step {t} ({stop})"
                    )
                    break
            elif self.method == "gradient_ascent":
                rise, _ = apply(self.step_size * g_f)
            else:
                rise, _ = apply(self.step_size * (g_f - g_r))
            history["batch_forget_rise"].append(rise)
            with torch.no_grad():
                logits_f = net(inputs_f)
                forget_acc = float((logits_f.argmax(1) == yf).double().mean())
                history["forget_accuracy"].append(forget_acc)
                history["forget_loss"].append(float(ce(logits_f, yf)))
                history["retain_loss"].append(float(ce(net(inputs_r), yr)))
            target = self.target_forget_accuracy
            if target is not None and forget_acc <= target:
                self.stopped_reason_ = "target forget accuracy reached"
                break

    def predict_proba(self, X):
        """Class probabilities of the (unlearned) base classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X)

    def predict(self, X):
        """Predict classes with the (unlearned) base classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted classes.
        """
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)

    @classmethod
    def _get_test_params(cls):
        from sklearn_ext.unlearning._mlp import UnlearnableMLPClassifier

        base = UnlearnableMLPClassifier((8,), max_iter=20, device="cpu", random_state=0)
        return {"estimator": base, "max_steps": 3}


def _per_sample_gradients(estimator, X, y):
    """Unit per-sample gradients of the training loss: (n_samples, n_params)."""
    torch = import_torch()
    from torch.func import functional_call, grad, vmap

    view = torch_classifier_view(estimator)
    net = view.module
    params = {k: v.detach() for k, v in net.named_parameters()}
    dtype = next(iter(params.values())).dtype
    device = next(iter(params.values())).device
    inputs = view.inputs(X, device=device, dtype=dtype)
    target = view.targets(y, device)

    def loss(p, x, t):
        outputs = functional_call(net, p, (x[None],))
        return view.loss(outputs, t[None])

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, inputs, target)
    flat = torch.cat([g.reshape(len(X), -1) for g in per.values()], dim=1)
    return torch.nn.functional.normalize(flat, dim=1)


def forget_retain_similarity(
    estimator, X_forget, y_forget, X_retain, y_retain, n_retain=500, random_state=0
):
    """Hardness of unlearning as the similarity of forget and retain data.

    For each forget row, the largest cosine between its loss gradient and the
    loss gradient of a retain row (``n_retain`` retain rows drawn at random),
    averaged over the forget rows. Near 1: every forget row has a retain
    "twin" that the model must keep fitting, so forgetting it degrades the
    retain set. Per-sample gradients, not the two sets' mean gradients: at
    the trained optimum the total gradient vanishes, so the mean forget and
    retain gradients point in opposite directions whatever the data.

    Parameters
    ----------
    estimator : classifier
        Fitted, and one that :func:`~sklearn_ext.utils.torch_classifier_view`
        reads (a ``HAMUUnlearner``'s ``estimator_``, for instance).
    X_forget, y_forget : array-like
        Rows to forget and their labels.
    X_retain, y_retain : array-like
        Rows to keep and their labels.
    n_retain : int, default=500
        Retain rows compared against.
    random_state : int, default=0
        Seeds the choice of retain rows.

    Returns
    -------
    similarity : float
        In [-1, 1]; higher is harder.
    """
    rng = np.random.default_rng(random_state)
    X_retain, y_retain = np.asarray(X_retain), np.asarray(y_retain)
    pick = rng.choice(len(X_retain), min(n_retain, len(X_retain)), replace=False)
    gf = _per_sample_gradients(estimator, np.asarray(X_forget), y_forget)
    gr = _per_sample_gradients(estimator, X_retain[pick], y_retain[pick])
    return float((gf @ gr.T).max(dim=1).values.mean())
