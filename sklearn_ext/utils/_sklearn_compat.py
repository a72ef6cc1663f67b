"""The one place where sklearn_ext touches scikit-learn's private API.

Everything private that the package needs from scikit-learn is imported here and
only here, so that an upgrade of scikit-learn changes this file and no other.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect

import sklearn
from sklearn.base import _fit_context
from sklearn.metrics._scorer import _check_multimetric_scoring, _MultimetricScorer
from sklearn.model_selection._search import BaseSearchCV
from sklearn.neural_network._base import ACTIVATIONS as MLP_ACTIVATIONS
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    generate_invalid_param_val,
    make_constraint,
    validate_params,
)
from sklearn.utils.estimator_checks import parametrize_with_checks as _pwc
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

SKLEARN_VERSION = sklearn.__version__

__all__ = [
    "SKLEARN_VERSION",
    "BaseSearchCV",
    "HasMethods",
    "Hidden",
    "Interval",
    "InvalidParameterError",
    "MLP_ACTIVATIONS",
    "Options",
    "RealNotInt",
    "StrOptions",
    "_MultimetricScorer",
    "_check_multimetric_scoring",
    "_check_sample_weight",
    "_safe_indexing",
    "_fit_context",
    "check_is_fitted",
    "generate_invalid_param_val",
    "make_constraint",
    "parametrize_with_checks",
    "sync_mlp_optimizer",
    "validate_data",
    "validate_params",
]


def parametrize_with_checks(estimators, *, expected_failed_checks=None):
    """Parametrize a test over scikit-learn's checks, with strict expected failures.

    ``xfail_strict=True`` (scikit-learn >= 1.8) makes a check listed as an expected
    failure that starts to pass fail the run, so that its entry must be removed.
    On older scikit-learn the failures are expected but not strict.
    """
    kwargs = {"expected_failed_checks": expected_failed_checks}
    if "xfail_strict" in inspect.signature(_pwc).parameters:
        kwargs["xfail_strict"] = True
    return _pwc(estimators, **kwargs)


# The attributes of scikit-learn's MLP optimisers (sklearn.neural_network.
# _stochastic_optimizers) that sync_mlp_optimizer sets, by optimiser class.
_MLP_OPTIMIZER_FIELDS = {
    "SGDOptimizer": (
        "learning_rate",
        "learning_rate_init",
        "lr_schedule",
        "momentum",
        "nesterov",
        "power_t",
    ),
    "AdamOptimizer": ("learning_rate_init", "beta_1", "beta_2", "epsilon"),
}


def sync_mlp_optimizer(mlp):
    """Hand a fitted scikit-learn MLP's running optimiser its current hyperparameters.

    ``MLPClassifier``/``MLPRegressor`` build their optimiser (the private
    ``_optimizer``) at the first ``partial_fit`` from ``learning_rate_init``,
    ``momentum``, ... and keep it, so a later ``set_params`` would not reach
    it. This sets them on the optimiser and keeps its state (velocities, Adam
    moments, step count): a new ``learning_rate_init`` rescales an adaptive
    SGD rate and restarts an inverse-scaling one at the current step.

    Returns
    -------
    synced : bool
        False when ``mlp`` has no optimiser yet (not trained, or trained by
        ``fit`` with ``solver="lbfgs"``).

    Raises
    ------
    RuntimeError
        If the optimiser lacks an attribute this function sets: the installed
        scikit-learn changed its MLP internals.
    """
    opt = vars(mlp).get("_optimizer")
    if opt is None:
        return False
    fields = _MLP_OPTIMIZER_FIELDS.get(type(opt).__name__)
    if fields is None:
        return False
    missing = [f for f in fields if not hasattr(opt, f)]
    if missing:
        raise RuntimeError(
            f"scikit-learn {SKLEARN_VERSION}'s {type(opt).__name__} has no "
            f"{missing}; sklearn_ext.utils._sklearn_compat.sync_mlp_optimizer "
            "needs updating for this version."
        )
    lr = float(mlp.learning_rate_init)
    if type(opt).__name__ == "SGDOptimizer":
        schedule = mlp.learning_rate
        if schedule == "adaptive" and opt.lr_schedule == "adaptive":
            opt.learning_rate *= lr / float(opt.learning_rate_init)
        elif schedule == "invscaling":
            opt.learning_rate = lr / (mlp.t_ + 1) ** mlp.power_t
        else:
            opt.learning_rate = lr
        opt.lr_schedule = schedule
        opt.learning_rate_init = lr
        opt.momentum = mlp.momentum
        opt.nesterov = mlp.nesterovs_momentum
        opt.power_t = mlp.power_t
    else:
        opt.learning_rate_init = lr
        opt.beta_1, opt.beta_2 = mlp.beta_1, mlp.beta_2
        opt.epsilon = mlp.epsilon
    return True
