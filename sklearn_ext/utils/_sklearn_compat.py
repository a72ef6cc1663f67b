"""The one place where sklearn_ext touches scikit-learn's private API.

Everything private that the package needs from scikit-learn is imported here and
only here, so that an upgrade of scikit-learn changes this file and no other;
the one exception is ``_sklearn_compat_mlp``, which reaches the private
optimiser of scikit-learn's MLPs for the IPBT driver alone (a module of its
own, so that the code measured by every other benchmark does not change with
it).
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
