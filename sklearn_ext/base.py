"""Mixins shared by sklearn_ext estimators: the torch backend and multi-view input."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import functools
import math
import sys
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions
from sklearn_ext.utils._torch import (
    DeviceConstraint,
    ModuleState,
    adam,
    cpu_thread_limit,
    import_torch,
    iter_batches,
    make_generator,
    module_from_bytes,
    module_to_bytes,
    resolve_device,
    restore_training_state,
    to_numpy,
    to_tensor,
    train_loop,
    training_state_to_bytes,
)
from sklearn_ext.utils._validation import check_sample_weight
from sklearn_ext.utils._views import check_views, observed_views

__all__ = [
    "MultiViewMixin",
    "TorchDeviceMixin",
    "TorchMixin",
    "is_torch_estimator",
    "supports_gpu",
]


@dataclass
class _TorchContext:
    device: object
    generator: object
    dtype: object


# Public methods that run inside the CPU-thread policy (see TorchDeviceMixin).
_THREAD_SCOPED_METHODS = (
    "fit",
    "partial_fit",
    "fit_predict",
    "fit_transform",
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "transform",
    "inverse_transform",
    "score",
    "score_samples",
)


def _thread_scoped(method):
    """Run ``method`` inside :func:`~sklearn_ext.utils._torch.cpu_thread_limit`.

    One torch thread for the call, whatever the machine's load.
    """

    @functools.wraps(method)
    def scoped(self, *args, **kwargs):
        if self._torch_optional and "torch" not in sys.modules:
            return method(self, *args, **kwargs)
        with cpu_thread_limit():
            return method(self, *args, **kwargs)

    scoped._thread_scoped = True
    return scoped


class TorchDeviceMixin:
    """Mixin for every estimator that computes with PyTorch: the device part.

    It supplies what every torch estimator shares, whatever its optimiser:

    - ``_parameter_constraints`` for ``device``, ``random_state`` and ``verbose``;
    - :meth:`_torch_context`: the device resolved from ``device`` (strictly: a
      ValueError names the parameter when it is absent; with ``size`` and
      ``min_size``, ``device="auto"`` keeps small problems on the CPU), a
      ``torch.Generator`` seeded from ``random_state`` and the compute dtype
      (float32 unless the estimator asks otherwise, e.g. float64 on the CPU
      through ``cpu_dtype``);
      :meth:`_record_device` stores ``device_``;
    - :meth:`_fitted_module`: the module to continue under ``warm_start``, with
      the one check (and the one message) that the architecture is unchanged;
    - :meth:`_predict_batches`: inference in evaluation mode, without
      gradients, one (densified) batch at a time, returning float64 numpy
      arrays;
    - the CPU-thread policy: every public fit/inference method of a subclass
      runs inside :func:`~sklearn_ext.utils._torch.cpu_thread_limit`, on one
      torch intra-op thread, and restores the previous setting on return. The
      count never depends on the load of the machine (nor on torch's own
      setting, which it only lowers), so a fixed ``random_state`` gives the
      same floats on a busy and on an idle machine;
    - portable pickling: each fitted module named in ``_module_attributes`` is
      stored as a CPU state dict and rebuilt on unpickling by the estimator's
      ``_build_module(attr)`` (called after the other fitted attributes are
      restored), then loaded with ``weights_only=True``. A model fitted on a GPU
      thus unpickles and predicts on a machine without one.

    Fitted modules are kept on the CPU between calls; inference copies them to
    the device (in float64 on the CPU, see :meth:`_predict_batches`). A model
    whose ``device`` is missing at inference time (e.g. unpickled on a machine
    without CUDA) runs on the CPU with a warning.

    Estimators that train by minibatches use :class:`TorchMixin`, built on this
    one. Place the mixin left of ``BaseEstimator``:
    ``class Est(RegressorMixin, TorchDeviceMixin, BaseEstimator)``.
    """

    _module_attributes = ("module_",)
    # True for estimators whose numpy path does not need torch: the thread
    # policy then applies only once torch has been imported.
    _torch_optional = False

    _parameter_constraints: dict = {
        "device": [DeviceConstraint()],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _THREAD_SCOPED_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_thread_scoped", False):
                setattr(cls, name, _thread_scoped(method))

    def _torch_context(self, *, size=None, min_size=None, dtype=None, cpu_dtype=None):
        """Resolve the device (strictly) and seed a generator from random_state.

        Parameters
        ----------
        size, min_size : float, default=None
            See :func:`~sklearn_ext.utils._torch.resolve_device`.
        dtype : torch.dtype, default=None
            The compute dtype; float32 by default.
        cpu_dtype : torch.dtype, default=None
            The compute dtype when the device is the CPU (e.g. float64 for a
            second-order solver, keeping float32 on a GPU); ``dtype`` if None.
        """
        torch = import_torch()
        device = resolve_device(self.device, size=size, min_size=min_size)
        dtype = torch.float32 if dtype is None else dtype
        if cpu_dtype is not None and device.type == "cpu":
            dtype = cpu_dtype
        return _TorchContext(
            device=device, generator=make_generator(self.random_state), dtype=dtype
        )

    def _hidden_layer_sizes(self):
        """The ``hidden_layer_sizes`` parameter as a tuple of ints (may be empty)."""
        hidden = tuple(self.hidden_layer_sizes)
        if not all(isinstance(h, Integral) and h >= 1 for h in hidden):
            raise ValueError(
                "hidden_layer_sizes must be a tuple of positive integers; got "
                f"{self.hidden_layer_sizes!r}."
            )
        return tuple(int(h) for h in hidden)

    def _record_device(self, context):
        """Store the device the fit ran on as ``device_``."""
        device = context.device if isinstance(context, _TorchContext) else context
        self.device_ = "cpu" if device is None else str(device)

    def _fitted_module(self, architecture=None, attr="module_"):
        """The module fitted before, when ``warm_start`` asks to continue it.

        Parameters
        ----------
        architecture : dict, default=None
            What the fitted network's shape depends on (``n_features``, layer
            sizes, ...), as comparable values. Under ``warm_start`` it must
            equal the first fit's, else a ValueError names what changed;
            otherwise it is stored for the next warm start.
        attr : str, default="module_"

        Returns
        -------
        torch.nn.Module or None
            None when the fit starts anew.
        """
        architecture = dict(architecture or {})
        if getattr(self, "warm_start", False) and hasattr(self, attr):
            stored = getattr(self, "_architecture", {})
            changed = sorted(
                k
                for k in architecture
                if k not in stored or stored[k] != architecture[k]
            )
            if changed:
                what = "; ".join(
                    f"{k}: {stored.get(k)!r} -> {architecture[k]!r}" for k in changed
                )
                raise ValueError(
                    f"warm_start=True continues the fitted model, but {what} "
                    "changed since that fit; set warm_start=False to fit anew."
                )
            return getattr(self, attr)
        self._architecture = architecture
        return None

    def _predict_batches(self, forward, X, attrs=("module_",), batch_size=1024):
        """Apply ``forward(*modules, X_batch)`` to X in batches, without gradients.

        Returns a float64 numpy array. On the CPU, inference runs in float64 on a
        float64 copy of the fitted float32 weights, so that each row's output does
        not depend on which other rows share its batch (float32 matrix kernels
        round differently for different batch shapes); on a GPU it runs in
        float32. ``X`` may be a scipy sparse matrix, densified one batch at a
        time. ``forward`` must create any tensor it needs with the dtype and
        device of its input.
        """
        torch = import_torch()
        device = resolve_device(self.device, strict=False)
        dtype = torch.float64 if device.type == "cpu" else torch.float32
        # Copies, so that the fitted modules (and the estimator) stay unchanged.
        modules = [
            copy.deepcopy(getattr(self, attr)).to(device=device, dtype=dtype).eval()
            for attr in attrs
        ]
        outputs = []
        with torch.inference_mode():
            for _, _, chunk in iter_batches(X, batch_size):
                batch = to_tensor(chunk, dtype=dtype, device=device)
                outputs.append(to_numpy(forward(*modules, batch)))
        return np.concatenate(outputs, axis=0)

    def __getstate__(self):
        # A copy: on Python >= 3.11 object.__getstate__ returns __dict__ itself.
        state = dict(super().__getstate__())
        for attr in self._module_attributes:
            if attr in state:
                state[attr] = ModuleState(module_to_bytes(state[attr]))
        return state

    def __setstate__(self, state):
        stored = {
            attr: state.pop(attr)
            for attr in self._module_attributes
            if isinstance(state.get(attr), ModuleState)
        }
        super().__setstate__(state)
        for attr, blob in stored.items():
            setattr(self, attr, module_from_bytes(self._build_module(attr), blob.data))


class TorchMixin(TorchDeviceMixin):
    """Mixin for torch estimators that train by minibatches.

    On top of :class:`TorchDeviceMixin` (device, seeding, thread policy,
    pickling) it adds:

    - ``_parameter_constraints`` for ``batch_size``, ``learning_rate_init``,
      ``max_iter``, ``tol``, ``n_iter_no_change`` and ``warm_start``;
    - :meth:`_train`: the package's single minibatch loop, setting
      ``n_iter_``, ``loss_curve_`` and ``device_`` and continuing them under
      ``warm_start``, together with the optimiser's state (momentum buffers,
      Adam moments) and the shuffling generator, so that ``k`` warm-started
      fits of one epoch train as one fit of ``k`` epochs; hyperparameters
      changed in between (``learning_rate_init``, ``alpha``) act on the
      continued optimiser; a preliminary phase (e.g. pretraining) runs through the
      same loop with its own ``max_iter`` and label;
    - :meth:`_sample_weight`: ``sample_weight`` checked and scaled to mean one,
      for :func:`~sklearn_ext.utils._torch.weighted_mean` in the batch loss.

    Place it left of ``BaseEstimator``:
    ``class Est(RegressorMixin, TorchMixin, BaseEstimator)``.
    """

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "batch_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def _batch_size(self, n_samples):
        if self.batch_size == "auto":
            return min(200, n_samples)
        return min(self.batch_size, n_samples)

    @staticmethod
    def _sample_weight(sample_weight, X, context):
        """``sample_weight`` as a tensor on the device with mean one, or None."""
        weights = check_sample_weight(sample_weight, X)
        if weights is None:
            return None
        return to_tensor(weights, dtype=context.dtype, device=context.device)

    def _best_loss(self, warm, validation):
        """Best watched loss of the fit a warm start continues (None if cold)."""
        if not warm:
            return None
        if validation:
            curve = getattr(self, "validation_loss_curve_", [])
            return min(curve) if curve else None
        return min(self.loss_curve_)

    def _train(
        self,
        modules,
        batch_loss,
        n_samples,
        context,
        optimizer=None,
        *,
        phase="training",
        max_iter=None,
        max_iter_param="max_iter",
        fixed_epochs=False,
        validation_loss=None,
        tol=None,
        max_grad_norm=None,
    ):
        """Train ``modules`` with the shared loop and record the fitted state.

        Parameters
        ----------
        modules : dict of str to torch.nn.Module
            The modules being trained, by the fitted attribute they are stored
            under; they must already be on ``context.device``.
        batch_loss : callable
            ``batch_loss(idx) -> scalar tensor``, see
            :func:`sklearn_ext.utils._torch.train_loop`.
        n_samples : int
        context : _TorchContext
        optimizer : torch.optim.Optimizer, default=None
            Defaults to Adam over all parameters of ``modules`` with
            ``learning_rate_init``.
        phase : str, default="training"
            ``"training"`` is the estimator's main fit: it sets (or, under
            ``warm_start``, extends) ``loss_curve_``, ``n_iter_`` and
            ``device_``. Any other phase (e.g. ``"pretraining"``) labels the
            progress bar and its warnings and stores its curve as
            ``<phase>_loss_curve_``.
        max_iter : int, default=None
            Epochs of this phase; ``self.max_iter`` by default.
        max_iter_param : str, default="max_iter"
            The parameter that sets ``max_iter``, named by the warnings.
        fixed_epochs : bool, default=False
            Run exactly ``max_iter`` epochs (no early stopping and hence no
            ConvergenceWarning), as for a pretraining budget.
        validation_loss : callable, default=None
            Early stopping on held-out samples (see
            :func:`~sklearn_ext.utils._torch.train_loop`); the main phase then
            stores the curve as ``validation_loss_curve_``.
        tol : float, default=None
            The stopping tolerance; ``self.tol`` by default (an estimator whose
            ``tol`` is "auto" passes the value it resolved).
        max_grad_norm : float, default=None
            Clip each minibatch gradient to this norm (see
            :func:`~sklearn_ext.utils._torch.train_loop`).
        """
        main = phase == "training"
        warm = main and self.warm_start and hasattr(self, "loss_curve_")
        max_iter = self.max_iter if max_iter is None else max_iter
        if optimizer is None:
            params = [p for m in modules.values() for p in m.parameters()]
            optimizer = adam(params, lr=self.learning_rate_init)
        continued = warm and getattr(self, "_training_state", None) is not None
        if continued:
            restore_training_state(
                optimizer, context.generator, self._training_state.data
            )
        for module in modules.values():
            module.train()
        result = train_loop(
            batch_loss,
            n_samples,
            optimizer,
            batch_size=self._batch_size(n_samples),
            max_iter=max_iter,
            tol=-math.inf if fixed_epochs else (self.tol if tol is None else tol),
            n_iter_no_change=max_iter + 1 if fixed_epochs else self.n_iter_no_change,
            generator=context.generator,
            device=context.device,
            verbose=self.verbose,
            best_loss=self._best_loss(warm, validation_loss is not None),
            estimator_name=type(self).__name__,
            phase=phase,
            max_iter_param=max_iter_param,
            warn_at_max_iter=not fixed_epochs,
            validation_loss=validation_loss,
            max_grad_norm=max_grad_norm,
        )
        if main:
            for attr, module in modules.items():
                setattr(self, attr, module.to("cpu").eval())
            self.loss_curve_ = (self.loss_curve_ if warm else []) + result.loss_curve
            self.n_iter_ = (self.n_iter_ if warm else 0) + result.n_iter
            if validation_loss is not None:
                self.validation_loss_curve_ = (
                    self.validation_loss_curve_
                    if warm and hasattr(self, "validation_loss_curve_")
                    else []
                ) + result.validation_curve
            self._record_device(context)
            # Under warm_start the next fit continues the optimiser and the
            # shuffling stream, so that k fits of one epoch train as one of k.
            self._training_state = (
                ModuleState(training_state_to_bytes(optimizer, context.generator))
                if self.warm_start
                else None
            )
        else:
            setattr(self, f"{phase}_loss_curve_", result.loss_curve)
        return result


def is_torch_estimator(estimator):
    """Return True if ``estimator`` (an instance or a class) computes with torch.

    Parameters
    ----------
    estimator : estimator instance or class
        The estimator to test.

    Returns
    -------
    bool
        Whether the estimator derives from :class:`TorchDeviceMixin` (and
        computes with torch whenever it fits).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ext.base import is_torch_estimator
    >>> is_torch_estimator(Ridge())
    False
    """
    cls = estimator if isinstance(estimator, type) else type(estimator)
    return issubclass(cls, TorchDeviceMixin) and not cls._torch_optional


def supports_gpu(estimator):
    """Return True if ``estimator`` (an instance or a class) can run on a GPU.

    That is, if it takes a ``device`` parameter: every torch estimator does, and
    so do estimators whose numpy solver has a torch path for CUDA.

    Parameters
    ----------
    estimator : estimator instance or class
        The estimator to test.

    Returns
    -------
    bool
        Whether the estimator has a ``device`` parameter.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ext.base import supports_gpu
    >>> supports_gpu(Ridge)
    False
    """
    cls = estimator if isinstance(estimator, type) else type(estimator)
    return "device" in cls._get_param_names()


class MultiViewMixin:
    """Mixin for estimators whose columns are grouped into views.

    The estimator has a ``views`` parameter (sizes, or column indices per view; see
    :func:`sklearn_ext.utils.check_views`). A view that a sample lacks is an
    all-NaN block in that view's columns, so the ``allow_nan`` input tag is set;
    a view that is only partly NaN is an error.
    """

    @staticmethod
    def _refuse_view_list(X):
        """A clear error for mvlearn-style input: a list of per-view arrays.

        Called before ``validate_data``, which would otherwise fail on the
        ragged list with numpy's message about inhomogeneous shapes.
        """
        if not isinstance(X, (list, tuple)) or len(X) < 2:
            return
        shapes = [getattr(x, "shape", None) for x in X]
        if all(shape is not None and len(shape) == 2 for shape in shapes):
            widths = [shape[1] for shape in shapes]
            raise ValueError(
                f"X is a list of {len(X)} per-view arrays (mvlearn style, "
                f"widths {widths}); this estimator takes one 2-D array with "
                "the views side by side. Stack them: X = np.hstack(Xs) and "
                f"views={widths}, with a missing view as NaN in its columns."
            )

    def _validate_views(self, X, *, reset, require_one=True):
        """Parse ``views`` (in fit) and return the (n_samples, n_views) observed mask.

        ``reset=True`` stores the parsed views as ``views_``; later calls reuse them.
        """
        if reset:
            # After validate_data, whose feature_names_in_ lets views name
            # DataFrame columns.
            self.views_ = check_views(
                self.views,
                X.shape[1],
                feature_names=getattr(self, "feature_names_in_", None),
            )
        return observed_views(X, self.views_, require_one=require_one)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags
