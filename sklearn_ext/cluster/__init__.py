"""Clustering: incomplete multi-view clustering."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.cluster._correlated_imvc import CorrelatedVariationalIMVC

__all__ = ["CorrelatedVariationalIMVC"]
