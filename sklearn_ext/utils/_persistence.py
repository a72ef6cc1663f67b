"""Secure persistence with skops: the package's types that a loader may trust."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
from importlib import import_module

__all__ = ["skops_trusted_types"]


def skops_trusted_types():
    """Return the names of the sklearn_ext types that skops files of estimators hold.

    ``skops.io.load(file, trusted=skops_trusted_types())`` loads any fitted
    sklearn_ext estimator without trusting anything outside this package (and
    the numpy, scipy and scikit-learn types that skops trusts by default), but
    for one plain container that fitted state holds and skops does not trust
    by default: scikit-learn's ``TreePredictor`` (the arrays of the trees of a
    ``HistGradientBoostingRegressor``, which ``MetaAllocationPolicy`` fits).
    Torch modules are stored as CPU state dicts in bytes
    (``sklearn_ext.utils._torch.ModuleState``), which ``torch.load`` reads with
    ``weights_only=True``; so no pickled code runs on loading.

    The list holds every public class of every family (the estimators, the
    problem classes of ``robust_optimization``, ...), the package's private
    containers of fitted state (``ModuleState``, ``TaskVectorTransporter``'s
    ``Chain``) and that scikit-learn type.

    Returns
    -------
    list of str
        Fully qualified type names, sorted.

    Examples
    --------
    >>> from sklearn_ext.utils import skops_trusted_types
    >>> "sklearn_ext.utils._torch.ModuleState" in skops_trusted_types()
    True
    """
    from sklearn_ext import _submodules

    names = {
        "sklearn_ext.utils._torch.ModuleState",
        "sklearn_ext.transfer._models.Chain",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    }
    for sub in _submodules:
        if sub in ("base", "datasets", "utils"):
            continue
        module = import_module(f"sklearn_ext.{sub}")
        for public in getattr(module, "__all__", ()):
            obj = getattr(module, public)
            if inspect.isclass(obj):
                names.add(f"{obj.__module__}.{obj.__qualname__}")
    return sorted(names)
