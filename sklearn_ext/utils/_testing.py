"""Helpers of the common test harness, shared by tests/ and benchmarks/gpu_check.py.

Each estimator carries what the harness needs, beside its own code:

- ``_get_test_params()`` (classmethod): the small constructor parameters used by
  the common checks, a dict or a list of dicts (one instance each). This is the
  one place where test parameters live.
- ``_expected_failed_checks`` (class attribute, in the estimator's module):
  ``{check_name: reason}`` for scikit-learn checks that cannot apply. Entries
  are strict: a listed check that passes fails the suite.
- ``_paper``: the citation shown by ``python -m sklearn_ext list``.
- ``_bench_name``: the stem ``<name>`` of ``benchmarks/bench_<name>.py``.

Its demo is not on the class: ``demo_<ClassName>()`` in the family's
``sklearn_ext/<family>/_demo.py``, with the demo's seconds on one core in that
module's ``SECONDS`` dict. Only the command line and the harness test that runs
the demos import a ``_demo.py``; what a demo shares with a benchmark, an
example or the estimator (its data, how a policy is judged) lives in an
ordinary private module of the family. See
:func:`sklearn_ext.__main__.demo_function` and
:func:`sklearn_ext.__main__.run_demo`.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import inspect
import pkgutil
from importlib import import_module

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.datasets import make_blobs, make_classification, make_regression
from sklearn.utils import get_tags

from sklearn_ext.utils.discovery import _NOT_FAMILIES, all_estimators

__all__ = [
    "METHOD_CONTRACT",
    "expected_failed_checks",
    "make_test_data",
    "predictions",
    "instances_of",
    "estimators_to_check",
    "unregistered_estimators",
]

# Class attributes every registered estimator must define (see module docstring).
METHOD_CONTRACT = ("_get_test_params", "_paper", "_bench_name")


def instances_of(cls):
    """Instances of ``cls`` built from its ``_get_test_params()``."""
    params = cls._get_test_params()
    for p in [params] if isinstance(params, dict) else list(params):
        yield cls(**p)


def estimators_to_check(estimators=None):
    """Yield the instances of every registered estimator that the checks run on.

    Estimators whose class declares ``_not_a_data_estimator`` (a reason: their
    ``fit`` takes an environment, bounded returns, learning curves or models,
    not ``(X, y)``) are left to the contract tests of tests/test_rl_contract.py
    and tests/test_family_contracts.py.
    """
    for _, cls in all_estimators() if estimators is None else estimators:
        if not getattr(cls, "_not_a_data_estimator", None):
            yield from instances_of(cls)


def expected_failed_checks(estimator):
    """The ``{check: reason}`` list declared in the estimator's module.

    One entry depends on the installed scikit-learn rather than on the
    estimator: see :func:`_positive_only_check_breaks_integer_codes`.
    """
    expected = dict(getattr(type(estimator), "_expected_failed_checks", {}))
    tags = get_tags(estimator).input_tags
    if tags.categorical and not tags.allow_nan:
        if _positive_only_check_breaks_integer_codes():
            expected["check_positive_only_tag_during_fit"] = (
                "this scikit-learn's check subtracts the float mean of X in "
                "place from the integer codes its categorical tag makes, a "
                "casting error raised before fit runs (later versions keep "
                "X's dtype, and the check passes)"
            )
    return expected


@functools.cache
def _positive_only_check_breaks_integer_codes():
    """Whether scikit-learn's positive-only check fails on integer-coded X.

    ``check_positive_only_tag_during_fit`` of scikit-learn 1.6 computes
    ``X -= X.mean()`` on the int32 array that ``_enforce_estimator_tags_X``
    makes for an estimator with the ``categorical`` input tag, which numpy
    refuses; later versions cast the mean to X's dtype first. Read from the
    installed check's source, so that the declared failure stays strict on
    every version.
    """
    from sklearn.utils import estimator_checks

    source = inspect.getsource(estimator_checks.check_positive_only_tag_during_fit)
    return "X -= X.mean()\n" in source


def make_test_data(estimator, n_samples=60, n_features=4, random_state=0):
    """Small data suited to the estimator's kind: ``(X, y)``.

    An estimator whose input has a special layout provides
    ``_make_test_data(n_samples, random_state)`` returning ``(X, y)``.
    """
    if hasattr(estimator, "_make_test_data"):
        return estimator._make_test_data(n_samples, random_state)
    kind = get_tags(estimator).estimator_type
    if kind == "classifier":
        X, y = make_classification(
            n_samples=n_samples,
            n_features=n_features,
            n_informative=2,
            n_redundant=0,
            random_state=random_state,
        )
    elif kind == "regressor":
        X, y = make_regression(
            n_samples=n_samples,
            n_features=n_features,
            noise=0.1,
            random_state=random_state,
        )
    else:
        X, y = make_blobs(
            n_samples=n_samples,
            n_features=n_features,
            centers=3,
            random_state=random_state,
        )
    return X, y


def _family_modules(package="sklearn_ext"):
    """Every module, private ones included, of every family subpackage."""
    root = import_module(package)
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        parts = info.name.split(".")
        if parts[1] in _NOT_FAMILIES or "tests" in parts:
            continue
        yield import_module(info.name)


def unregistered_estimators(package="sklearn_ext", registered=None):
    """Public-named estimator classes defined in ``package`` but not registered.

    Scans private modules too, so that a method whose class is not re-exported by
    its family's ``__init__`` (and hence invisible to :func:`all_estimators`) is
    reported instead of silently escaping the common checks.
    """
    if registered is None:
        registered = {cls for _, cls in all_estimators()}
    missing = []
    for module in _family_modules(package):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and not name.startswith("_")
                and issubclass(cls, BaseEstimator)
                and not inspect.isabstract(cls)
                and cls not in registered
            ):
                missing.append(f"{module.__name__}.{name}")
    return sorted(missing)


def predictions(estimator, X):
    """Outputs of every inference method the fitted estimator has, by name."""
    out = {}
    for method in ("predict", "predict_proba", "decision_function", "transform"):
        if hasattr(estimator, method):
            out[method] = np.asarray(getattr(estimator, method)(X))
    return out
