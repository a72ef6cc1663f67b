"""Clustering: incomplete and federated multi-view clustering, superpixels."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.cluster._correlated_imvc import CorrelatedVariationalIMVC
from sklearn_ext.cluster._fedmvc import FederatedMultiViewClustering
from sklearn_ext.cluster._superpixels import SuperpixelFeaturizer

__all__ = [
    "CorrelatedVariationalIMVC",
    "FederatedMultiViewClustering",
    "SuperpixelFeaturizer",
]
