"""Clustering: incomplete, federated and language-informed multi-view clustering."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.cluster._correlated_imvc import CorrelatedVariationalIMVC
from sklearn_ext.cluster._fedmvc import FederatedMultiViewClustering
from sklearn_ext.cluster._magic import MAGICClustering
from sklearn_ext.cluster._superpixels import SuperpixelFeaturizer

__all__ = [
    "CorrelatedVariationalIMVC",
    "FederatedMultiViewClustering",
    "MAGICClustering",
    "SuperpixelFeaturizer",
]
