"""Model selection: population-based training with restarts, Pareto fronts."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.model_selection._ipbt import IPBTSearchCV
from sklearn_ext.model_selection._pareto import hypervolume, pareto_mask
from sklearn_ext.model_selection._plotting import plot_schedules

__all__ = ["IPBTSearchCV", "hypervolume", "pareto_mask", "plot_schedules"]
