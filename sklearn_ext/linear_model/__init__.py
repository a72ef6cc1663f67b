"""Linear models: graph-guided multi-task regression and classification."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.linear_model._graph_guided import (
    GraphGuidedClassifier,
    GraphGuidedRegressor,
)

__all__ = ["GraphGuidedClassifier", "GraphGuidedRegressor"]
