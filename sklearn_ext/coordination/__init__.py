"""Coordination: agents that solve local problems and agree through a sheaf."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.coordination._sheaf_admm import SheafADMMClassifier, patch_grid

__all__ = ["SheafADMMClassifier", "patch_grid"]
