"""Find the public estimators of sklearn_ext."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import pkgutil
from importlib import import_module
from operator import itemgetter
from pathlib import Path

from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClusterMixin,
    RegressorMixin,
    TransformerMixin,
)

__all__ = ["all_estimators"]

_TYPE_MIXINS = {
    "classifier": ClassifierMixin,
    "regressor": RegressorMixin,
    "transformer": TransformerMixin,
    "cluster": ClusterMixin,
}

# Public modules that are not families of estimators.
_NOT_FAMILIES = {"__main__", "base", "datasets", "utils"}


def all_estimators(type_filter=None):
    """Return every public estimator of sklearn_ext.

    An estimator is public when a public (non-underscore) module re-exports it,
    as each family's ``__init__`` does for the classes of its private modules.

    Parameters
    ----------
    type_filter : {"classifier", "regressor", "transformer", "cluster"} or list \
            of those, default=None
        Keep only estimators of these kinds; None keeps all.

    Returns
    -------
    estimators : list of (str, type)
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_ext.utils.discovery import all_estimators
    >>> estimators = all_estimators()
    >>> all(isinstance(name, str) for name, _ in estimators)
    True
    """
    import sklearn_ext

    root = str(Path(sklearn_ext.__file__).parent)
    found = set()
    for _, module_name, _ in pkgutil.walk_packages([root], prefix="sklearn_ext."):
        parts = module_name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or "tests" in parts:
            continue
        if parts[1] in _NOT_FAMILIES:
            continue
        module = import_module(module_name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                not name.startswith("_")
                and issubclass(cls, BaseEstimator)
                and cls.__module__.startswith("sklearn_ext.")
                and not inspect.isabstract(cls)
            ):
                found.add((name, cls))

    estimators = sorted(found, key=itemgetter(0))
    if type_filter is None:
        return estimators
    filters = [type_filter] if isinstance(type_filter, str) else list(type_filter)
    unknown = [f for f in filters if f not in _TYPE_MIXINS]
    if unknown:
        raise ValueError(
            f"type_filter must be None or among {sorted(_TYPE_MIXINS)}; got {unknown}."
        )
    mixins = tuple(_TYPE_MIXINS[f] for f in filters)
    return [(n, c) for n, c in estimators if issubclass(c, mixins)]
