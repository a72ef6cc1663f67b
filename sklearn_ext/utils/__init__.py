"""Utilities: estimator discovery, the multi-view column parser, clustering ACC,
skops persistence, the CPU thread setting of torch fits, and the adapter and
view through which methods that edit a trained network take the user's own
torch classifier."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.utils._clustering import clustering_accuracy
from sklearn_ext.utils._persistence import skops_trusted_types
from sklearn_ext.utils._torch import cpu_threads
from sklearn_ext.utils._torch_classifier import (
    TorchModuleClassifier,
    torch_classifier_view,
)
from sklearn_ext.utils._views import check_views, observed_views

__all__ = [
    "check_views",
    "clustering_accuracy",
    "cpu_threads",
    "observed_views",
    "skops_trusted_types",
    "torch_classifier_view",
    "TorchModuleClassifier",
]
