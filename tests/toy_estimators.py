"""A small torch regressor built only from the shared backend.

It is not part of the package: it exists so that the backend (device, seeding,
training loop, pickling) and the common harness are exercised before, and
independently of, the methods.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    import_torch,
    init_parameters,
    to_tensor,
    weighted_mean,
)

_SAMPLE_WEIGHT_REASON = (
    "minibatch Adam from a random start: weights of 2 and repeated rows give "
    "fits that agree in distribution, not exactly (tests/test_utils_torch.py "
    "checks that statistically)"
)


class ToyTorchRegressor(RegressorMixin, TorchMixin, BaseEstimator):
    """One-hidden-layer perceptron for (multi-output) regression."""

    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": _SAMPLE_WEIGHT_REASON,
    }

    _parameter_constraints = {
        **TorchMixin._parameter_constraints,
        "hidden": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        hidden=16,
        *,
        batch_size="auto",
        learning_rate_init=1e-2,
        max_iter=200,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.hidden = hidden
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @classmethod
    def _get_test_params(cls):
        return {"max_iter": 60, "device": "cpu"}

    @classmethod
    def _gpu_check_params(cls):
        params = {"hidden": 512, "batch_size": 1024, "max_iter": 10, "tol": 0.0}
        return {**params, "n_iter_no_change": 11}, 50_000

    def _build_module(self, attr):
        nn = import_torch().nn
        return nn.Sequential(
            nn.Linear(self.n_features_in_, self.hidden),
            nn.Tanh(),
            nn.Linear(self.hidden, self.n_outputs_),
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            multi_output=True,
            y_numeric=True,
            ensure_min_samples=2,
        )
        Y = y.reshape(len(y), -1).astype(np.float64)
        self.n_outputs_ = Y.shape[1]
        self._y_1d = y.ndim == 1
        self.y_mean_ = Y.mean(axis=0)
        self.y_scale_ = np.where(Y.std(axis=0) > 0, Y.std(axis=0), 1.0)
        ctx = self._torch_context()
        module = self._fitted_module(
            {"n_features": X.shape[1], "n_outputs": Y.shape[1], "hidden": self.hidden}
        )
        if module is None:
            module = init_parameters(self._build_module("module_"), ctx.generator)
        module = module.to(ctx.device)
        Xt = to_tensor(X, device=ctx.device)
        Yt = to_tensor((Y - self.y_mean_) / self.y_scale_, device=ctx.device)
        weights = self._sample_weight(sample_weight, X, ctx)

        def batch_loss(idx):
            errors = ((module(Xt[idx]) - Yt[idx]) ** 2).mean(dim=1)
            return weighted_mean(errors, None if weights is None else weights[idx])

        self._train({"module_": module}, batch_loss, X.shape[0], ctx)
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        out = self._predict_batches(lambda m, xb: m(xb), X)
        out = out * self.y_scale_ + self.y_mean_
        return out.ravel() if self._y_1d else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
