"""Recommenders: multi-behaviour graph recommendation."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.recommendation._gcib import GCIBRecommender

__all__ = ["GCIBRecommender"]
