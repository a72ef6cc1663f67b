"""Recent machine-learning methods as scikit-learn estimators."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib

__version__ = "0.1.0.dev0"

# Subpackages load on first attribute access so that ``import sklearn_ext`` stays
# cheap and never imports torch.
_submodules = [
    "base",
    "cluster",
    "coordination",
    "datasets",
    "linear_model",
    "model_selection",
    "multilabel",
    "network",
    "recommendation",
    "retrieval",
    "robust_optimization",
    "transfer",
    "unlearning",
    "rl",
    "utils",
]

__all__ = [*_submodules, "__version__"]


def __dir__():
    return __all__


def __getattr__(name):
    if name in _submodules:
        return importlib.import_module(f"sklearn_ext.{name}")
    raise AttributeError(f"module 'sklearn_ext' has no attribute {name!r}")
