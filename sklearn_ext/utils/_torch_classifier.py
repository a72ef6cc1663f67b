"""Bring your own torch classifier: the adapter and the one view of a model.

Methods that work on a fitted network's gradients (HAMU unlearning) need four
things from a fitted classifier: its ``torch.nn.Module``, its classes, how a
batch of raw rows becomes the module's input tensor, and the loss it was
trained with. :func:`torch_classifier_view` reads them, by one path, from

- :class:`TorchModuleClassifier`: any trained ``torch.nn.Module`` with its
  classes and loss (the adapter below);
- a fitted skorch ``NeuralNetClassifier`` (its ``module_``, ``classes_`` and
  ``get_loss``; its targets are the integer labels themselves);
- the package's torch classifiers (``UnlearnableMLPClassifier``,
  ``SheafADMMClassifier``), whose preprocessing is their own;
- any of these inside scikit-learn's ``FrozenEstimator``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import import_torch, to_numpy

__all__ = [
    "TorchClassifierView",
    "TorchModuleClassifier",
    "check_torch_classifier",
    "torch_classifier_view",
]

OUTPUTS = ("logits", "log_proba", "proba")


def _is_module(value):
    try:
        torch = import_torch()
    except ImportError:
        return False
    return isinstance(value, torch.nn.Module)


class TorchModuleClassifier(ClassifierMixin, BaseEstimator):
    """A trained ``torch.nn.Module`` as a fitted scikit-learn classifier.

    The adapter that lets methods which edit a trained network (e.g.
    :class:`~sklearn_ext.unlearning.HAMUUnlearner`) take a model trained in
    plain PyTorch. ``fit`` trains nothing: it checks the labels against
    ``classes``, records the input size and deep-copies ``module`` into
    ``module_``, so that editing ``module_`` never changes the caller's
    network.

    Parameters
    ----------
    module : torch.nn.Module
        The trained network. It maps a batch (first axis) of inputs to one
        score per class, in the order of ``classes``.
    classes : array-like of shape (n_classes,)
        The labels of the module's outputs, in output order.
    output : {"logits", "log_proba", "proba"}, default="logits"
        What the module returns: unnormalised scores, log-probabilities (a
        final ``LogSoftmax``) or probabilities (a final ``Softmax``).
        ``predict_proba`` normalises accordingly, and it sets the default
        ``loss``.
    loss : callable or None, default=None
        ``loss(outputs, targets) -> scalar tensor``, the mean training loss
        of a batch; ``targets`` are the positions of the labels in
        ``classes`` (a long tensor). None: the cross-entropy that matches
        ``output`` (``CrossEntropyLoss`` on logits, ``NLLLoss`` on
        log-probabilities or on the log of probabilities).
    input_shape : tuple of int or None, default=None
        The shape of one input of the module. None: a row of ``X`` as it is
        (``X`` may have more than two axes, e.g. images as
        ``(n, channels, height, width)``). A tuple: each row of a 2-D ``X``
        is reshaped to it (e.g. ``(1, 8, 8)`` for flattened 8x8 images),
        which keeps ``X`` two-dimensional for scikit-learn pipelines.
    batch_size : int, default=1024
        Rows per forward pass in ``predict_proba``.

    Attributes
    ----------
    module_ : torch.nn.Module
        A deep copy of ``module``, in evaluation mode.
    classes_ : ndarray of shape (n_classes,)
        ``classes`` as an array.
    n_features_in_ : int
        ``X.shape[1]`` in ``fit``.

    Notes
    -----
    Integer ``X`` (token ids) reaches the module as a ``torch.long`` tensor;
    any other numeric ``X`` as a float tensor of the module's parameter
    dtype, on its device. Preprocessing belongs inside the module (or
    before the adapter): the adapter adds none.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_ext.utils import TorchModuleClassifier
    >>> net = torch.nn.Linear(2, 2)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
    ...     _ = net.bias.zero_()
    >>> X = np.array([[2.0, 0.0], [0.0, 2.0]])
    >>> clf = TorchModuleClassifier(net, classes=["a", "b"]).fit(X, ["a", "b"])
    >>> clf.predict(X).tolist()
    ['a', 'b']
    """

    _parameter_constraints: dict = {
        "module": "no_validation",
        "classes": ["array-like"],
        "output": [StrOptions(set(OUTPUTS))],
        "loss": [callable, None],
        "input_shape": [tuple, None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        module,
        classes,
        *,
        output="logits",
        loss=None,
        input_shape=None,
        batch_size=1024,
    ):
        self.module = module
        self.classes = classes
        self.output = output
        self.loss = loss
        self.input_shape = input_shape
        self.batch_size = batch_size

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Check the data against the module; copy it. Trains nothing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, ...)
            Rows of the module's input (see ``input_shape``).
        y : array-like of shape (n_samples,)
            Labels, each one of ``classes``.

        Returns
        -------
        self : TorchModuleClassifier
            The adapter, with ``module_`` and ``classes_``.
        """
        if not _is_module(self.module):
            raise TypeError(
                f"module must be a torch.nn.Module; got {type(self.module).__name__}."
            )
        if not any(True for _ in self.module.parameters()):
            raise ValueError("module has no parameters.")
        classes = np.asarray(self.classes)
        if classes.ndim != 1 or len(classes) < 2:
            raise ValueError(
                f"classes must be a 1-D list of at least 2 labels; got shape "
                f"{classes.shape}."
            )
        if len(np.unique(classes)) != len(classes):
            raise ValueError("classes contains a label twice.")
        X, y = validate_data(self, X, y, dtype="numeric", allow_nd=True)
        check_classification_targets(y)
        unknown = np.setdiff1d(np.unique(y), classes)
        if len(unknown):
            raise ValueError(
                f"y has labels the module has no output for: {unknown[:5].tolist()} "
                f"(classes: {classes.tolist()})."
            )
        self._check_shape(X)
        self.classes_ = classes
        self.module_ = copy.deepcopy(self.module).eval()
        out = self._forward(X[:2])
        if out.ndim != 2 or out.shape[1] != len(classes):
            raise ValueError(
                f"module returns outputs of shape {tuple(out.shape)} for 2 rows; "
                f"expected (2, {len(classes)}), one score per class."
            )
        return self

    def _check_shape(self, X):
        if self.input_shape is None:
            return
        size = int(np.prod(self.input_shape))
        if X.ndim != 2 or X.shape[1] != size:
            raise ValueError(
                f"input_shape {tuple(self.input_shape)} needs rows of {size} "
                f"values in a 2-D X; got X of shape {X.shape}."
            )

    def _module_inputs(self, X, *, device, dtype):
        """The module's input tensor for raw rows ``X``."""
        torch = import_torch()
        X = np.asarray(X)
        if self.input_shape is not None:
            X = X.reshape(len(X), *self.input_shape)
        if X.dtype.kind in "iub":
            return torch.as_tensor(X.astype(np.int64), device=device)
        return torch.as_tensor(np.ascontiguousarray(X), dtype=dtype, device=device)

    def _forward(self, X):
        torch = import_torch()
        param = next(self.module_.parameters())
        outs = []
        with torch.no_grad():
            for start in range(0, len(X), self.batch_size):
                rows = X[start : start + self.batch_size]
                outs.append(
                    self.module_(
                        self._module_inputs(
                            rows, device=param.device, dtype=param.dtype
                        )
                    )
                )
        return torch.cat(outs)

    def _loss(self, outputs, targets):
        """The batch's mean training loss (``targets``: class positions)."""
        torch = import_torch()
        if self.loss is not None:
            return self.loss(outputs, targets)
        if self.output == "logits":
            return torch.nn.functional.cross_entropy(outputs, targets)
        if self.output == "proba":
            outputs = torch.log(outputs.clamp_min(torch.finfo(outputs.dtype).tiny))
        return torch.nn.functional.nll_loss(outputs, targets)

    def predict_proba(self, X):
        """Class probabilities from the module's outputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, ...)
            Rows of the module's input.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        torch = import_torch()
        check_is_fitted(self, "module_")
        X = validate_data(self, X, dtype="numeric", allow_nd=True, reset=False)
        self._check_shape(X)
        self.module_.eval()
        out = self._forward(X)
        if self.output == "proba":
            proba = out / out.sum(dim=1, keepdim=True)
        else:  # softmax of log-probabilities is the probabilities
            proba = torch.softmax(out, dim=1)
        return to_numpy(proba)

    def predict(self, X):
        """The most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, ...)
            Rows of the module's input.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


@dataclass(frozen=True)
class TorchClassifierView:
    """What a gradient-based method needs from a fitted torch classifier.

    Parameters
    ----------
    module : torch.nn.Module
        The network whose parameters are edited in place.
    classes : ndarray of shape (n_classes,)
        Its labels.
    inputs : callable
        ``inputs(X, device=..., dtype=...)``: the module's input tensor for
        raw rows ``X`` (the estimator's preprocessing applied).
    loss : callable
        ``loss(outputs, targets)``: the mean training loss of a batch.
    targets : callable
        ``targets(y, device)``: the loss's target tensor for labels ``y``;
        raises ValueError naming a label the model has no output for.
    refit_preprocessing : callable or None
        Recompute the preprocessing on given rows without changing the
        network's function (the package's ``UnlearnableMLPClassifier``).
    """

    module: Any
    classes: np.ndarray
    inputs: Callable
    loss: Callable
    targets: Callable
    refit_preprocessing: Any = None


def _unknown_labels(unknown, classes):
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    return (
        f"label {unknown[0]!r}{more} is not among the model's classes "
        f"{classes[:20]}: the model has no output for it."
    )


def _position_targets(classes):
    index = {c: i for i, c in enumerate(np.asarray(classes).tolist())}

    def targets(y, device):
        torch = import_torch()
        y = np.asarray(y).tolist()
        unknown = sorted({v for v in y if v not in index}, key=repr)
        if unknown:
            raise ValueError(_unknown_labels(unknown, list(index)))
        return torch.tensor([index[v] for v in y], dtype=torch.long, device=device)

    return targets


def _cross_entropy(outputs, targets):
    return import_torch().nn.functional.cross_entropy(outputs, targets)


def _is_skorch_classifier(estimator):
    # A skorch net exists only once skorch is imported: never import it here
    # (it is heavy, and optional).
    classifier = sys.modules.get("skorch.classifier")
    return classifier is not None and isinstance(
        estimator, classifier.NeuralNetClassifier
    )


def _skorch_view(net):
    torch = import_torch()
    known = set(np.asarray(net.classes_).tolist())

    def inputs(X, *, device, dtype):
        X = np.asarray(X)
        if X.dtype.kind in "iub":
            return torch.as_tensor(X.astype(np.int64), device=device)
        return torch.as_tensor(np.ascontiguousarray(X), dtype=dtype, device=device)

    def targets(y, device):
        # skorch passes the labels themselves to its criterion: they are the
        # output positions (0 .. n_outputs - 1).
        y = np.asarray(y)
        unknown = sorted(set(y.tolist()) - known, key=repr)
        if unknown:
            raise ValueError(_unknown_labels(unknown, sorted(known, key=repr)))
        if y.dtype.kind not in "iu":
            raise ValueError(
                "a skorch NeuralNetClassifier's labels are its output positions: "
                f"integers; got dtype {y.dtype}."
            )
        return torch.as_tensor(y.astype(np.int64), device=device)

    def loss(outputs, target):
        return net.get_loss(outputs, target, training=True)

    return TorchClassifierView(
        module=net.module_,
        classes=np.asarray(net.classes_),
        inputs=inputs,
        loss=loss,
        targets=targets,
    )


def _kind(estimator):
    """ "skorch", "adapter", "package" or None (nothing to edit)."""
    if _is_skorch_classifier(estimator):
        return "skorch"
    if isinstance(estimator, TorchModuleClassifier):
        return "adapter"
    if hasattr(estimator, "_module_inputs") and hasattr(estimator, "predict_proba"):
        return "package"
    return None


def check_torch_classifier(estimator):
    """Raise TypeError unless the view can read ``estimator`` once fitted.

    Parameters
    ----------
    estimator : object
        An estimator, fitted or not.

    Returns
    -------
    kind : {"skorch", "adapter", "package"}
        Which source the view reads.
    """
    kind = _kind(estimator)
    if kind is None:
        raise TypeError(
            f"{type(estimator).__name__} exposes no torch network to edit: pass "
            "a skorch NeuralNetClassifier, a torch classifier of sklearn_ext "
            "(e.g. UnlearnableMLPClassifier), or wrap a trained torch.nn.Module "
            "in sklearn_ext.utils.TorchModuleClassifier(module, classes, "
            "loss=...)."
        )
    return kind


def torch_classifier_view(estimator):
    """Read the network, inputs, loss and classes of a fitted torch classifier.

    The one path by which HAMU (and any method that edits a trained
    network's parameters) reaches a classifier; see the module docstring for
    what it accepts.

    Parameters
    ----------
    estimator : classifier
        Fitted: a :class:`TorchModuleClassifier`, a skorch
        ``NeuralNetClassifier``, a torch classifier of this package, or one
        of these in a ``FrozenEstimator``.

    Returns
    -------
    view : TorchClassifierView
        Its module (edited in place by the caller), classes, input builder,
        loss, targets and optional preprocessing refit.
    """
    from sklearn.frozen import FrozenEstimator

    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    kind = check_torch_classifier(estimator)
    check_is_fitted(estimator)
    if kind == "skorch":
        return _skorch_view(estimator)
    if kind == "adapter":
        return TorchClassifierView(
            module=estimator.module_,
            classes=estimator.classes_,
            inputs=estimator._module_inputs,
            loss=estimator._loss,
            targets=_position_targets(estimator.classes_),
        )
    return TorchClassifierView(
        module=estimator.module_,
        classes=np.asarray(estimator.classes_),
        inputs=estimator._module_inputs,
        loss=_cross_entropy,
        targets=_position_targets(estimator.classes_),
        refit_preprocessing=getattr(estimator, "_refit_preprocessing", None),
    )
