"""Retrieval: compression of late-interaction (multi-vector) indexes and search."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.retrieval._crossq import CrossQCompressor
from sklearn_ext.retrieval._late_interaction import LateInteractionIndex

__all__ = ["CrossQCompressor", "LateInteractionIndex"]
