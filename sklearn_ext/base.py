"""Mixins shared by sklearn_ext estimators: the torch backend and multi-view input."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions
from sklearn_ext.utils._torch import (
    DeviceConstraint,
    ModuleState,
    import_torch,
    make_generator,
    module_from_bytes,
    module_to_bytes,
    resolve_device,
    to_numpy,
    to_tensor,
    train_loop,
)
from sklearn_ext.utils._views import check_views, observed_views

__all__ = ["MultiViewMixin", "TorchMixin", "is_torch_estimator", "supports_gpu"]


@dataclass
class _TorchContext:
    device: object
    generator: object
    dtype: object


class TorchMixin:
    """Mixin for estimators that compute with PyTorch.

    It supplies what every torch estimator shares, so that each method writes only
    its model and its loss:

    - ``_parameter_constraints`` for the common parameters ``batch_size``,
      ``learning_rate_init``, ``max_iter``, ``tol``, ``n_iter_no_change``,
      ``warm_start``, ``device``, ``random_state`` and ``verbose``;
    - :meth:`_torch_context`: the device resolved from ``device`` (a ValueError
      names the parameter when it is absent) and a ``torch.Generator`` seeded from
      ``random_state``; computation is in float32;
    - :meth:`_train`: the package's single minibatch loop, setting ``n_iter_``,
      ``loss_curve_`` and ``device_``, and continuing both under ``warm_start``;
    - :meth:`_predict_batches`: inference in evaluation mode, without gradients,
      returning float64 numpy arrays;
    - portable pickling: each fitted module named in ``_module_attributes`` is
      stored as a CPU state dict and rebuilt on unpickling by the estimator's
      ``_build_module(attr)`` (called after the other fitted attributes are
      restored), then loaded with ``weights_only=True``. A model fitted on a GPU
      thus unpickles and predicts on a machine without one.

    Fitted modules are kept on the CPU between calls; inference copies them to the
    device (in float64 on the CPU, see :meth:`_predict_batches`). A model whose
    ``device`` is missing at inference time (e.g. unpickled on a machine without
    CUDA) runs on the CPU with a warning.

    Place it left of ``BaseEstimator``:
    ``class Est(RegressorMixin, TorchMixin, BaseEstimator)``.
    """

    _module_attributes = ("module_",)

    _parameter_constraints: dict = {
        "batch_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "device": [DeviceConstraint()],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _torch_context(self):
        """Resolve the device (strictly) and seed a generator from random_state."""
        torch = import_torch()
        device = resolve_device(self.device)
        return _TorchContext(
            device=device,
            generator=make_generator(self.random_state),
            dtype=torch.float32,
        )

    def _batch_size(self, n_samples):
        if self.batch_size == "auto":
            return min(200, n_samples)
        return min(self.batch_size, n_samples)

    def _hidden_layer_sizes(self):
        """The ``hidden_layer_sizes`` parameter as a tuple of ints (may be empty)."""
        hidden = tuple(self.hidden_layer_sizes)
        if not all(isinstance(h, Integral) and h >= 1 for h in hidden):
            raise ValueError(
                "hidden_layer_sizes must be a tuple of positive integers; got "
                f"{self.hidden_layer_sizes!r}."
            )
        return tuple(int(h) for h in hidden)

    def _fitted_module(self, attr="module_"):
        """The module fitted before, when ``warm_start`` asks to continue from it."""
        if self.warm_start and hasattr(self, attr):
            return getattr(self, attr)
        return None

    def _train(self, modules, batch_loss, n_samples, context, optimizer=None):
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
        """
        torch = import_torch()
        warm = self.warm_start and hasattr(self, "loss_curve_")
        if optimizer is None:
            params = [p for m in modules.values() for p in m.parameters()]
            optimizer = torch.optim.Adam(params, lr=self.learning_rate_init)
        for module in modules.values():
            module.train()
        result = train_loop(
            batch_loss,
            n_samples,
            optimizer,
            batch_size=self._batch_size(n_samples),
            max_iter=self.max_iter,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            generator=context.generator,
            device=context.device,
            verbose=self.verbose,
            best_loss=min(self.loss_curve_) if warm else None,
            estimator_name=type(self).__name__,
        )
        for attr, module in modules.items():
            setattr(self, attr, module.to("cpu").eval())
        self.loss_curve_ = (self.loss_curve_ if warm else []) + result.loss_curve
        self.n_iter_ = (self.n_iter_ if warm else 0) + result.n_iter
        self.device_ = str(context.device)
        return result

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
            for start in range(0, max(X.shape[0], 1), batch_size):
                chunk = X[start : start + batch_size]
                if sp.issparse(chunk):  # densified one batch at a time
                    chunk = chunk.toarray()
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
            for attr in list(state)
            if isinstance(state[attr], ModuleState)
        }
        super().__setstate__(state)
        for attr, blob in stored.items():
            setattr(self, attr, module_from_bytes(self._build_module(attr), blob.data))


def is_torch_estimator(estimator):
    """Return True if ``estimator`` (an instance or a class) computes with torch.

    Parameters
    ----------
    estimator : estimator instance or class
        The estimator to test.

    Returns
    -------
    bool
        Whether the estimator derives from :class:`TorchMixin`.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ext.base import is_torch_estimator
    >>> is_torch_estimator(Ridge())
    False
    """
    cls = estimator if isinstance(estimator, type) else type(estimator)
    return issubclass(cls, TorchMixin)


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

    def _validate_views(self, X, *, reset, require_one=True):
        """Parse ``views`` (in fit) and return the (n_samples, n_views) observed mask.

        ``reset=True`` stores the parsed views as ``views_``; later calls reuse them.
        """
        if reset:
            self.views_ = check_views(self.views, X.shape[1])
        return observed_views(X, self.views_, require_one=require_one)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags
