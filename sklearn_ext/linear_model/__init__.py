"""Linear models: graph-guided multi-task regression and classification."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.linear_model._graph_guided import (
    GraphGuidedClassifier,
    GraphGuidedRegressor,
)
from sklearn_ext.linear_model._graph_guided_cv import (
    GraphGuidedClassifierCV,
    GraphGuidedRegressorCV,
)

__all__ = [
    "GraphGuidedClassifier",
    "GraphGuidedClassifierCV",
    "GraphGuidedRegressor",
    "GraphGuidedRegressorCV",
]
