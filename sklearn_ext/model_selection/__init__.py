"""Model selection: population-based training with restarts, Pareto model selection
with landmark evaluations (LAMPS)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.model_selection._allocation import MetaAllocationPolicy
from sklearn_ext.model_selection._ipbt import IPBTSearchCV
from sklearn_ext.model_selection._lamps import ParetoModelSelector
from sklearn_ext.model_selection._landmarks import LandmarkProblem, SearchResult
from sklearn_ext.model_selection._pareto import hypervolume, pareto_mask
from sklearn_ext.model_selection._plotting import plot_schedules

__all__ = [
    "IPBTSearchCV",
    "LandmarkProblem",
    "MetaAllocationPolicy",
    "ParetoModelSelector",
    "SearchResult",
    "hypervolume",
    "pareto_mask",
    "plot_schedules",
]
