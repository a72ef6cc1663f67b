"""Hyperparameter search: population-based training with restarts."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.model_selection._ipbt import IPBTSearchCV

__all__ = ["IPBTSearchCV"]
