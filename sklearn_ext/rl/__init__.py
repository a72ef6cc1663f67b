"""Reinforcement learning: agents, tabular (C)MDPs, task families, guarantees.

The environments (:class:`GoalGridWorld`, :class:`BridgeWorld`,
:class:`DistributionGridEnv`, :class:`BuildingThermalEnv`) and rolling
policies out need gymnasium, in the optional extra ``rl``
(``pip install 'sklearn-ext[rl]'``); the rest needs only numpy and scipy.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib

from sklearn_ext.rl._guarantee import MultiTaskGuarantee
from sklearn_ext.rl._kr_quantile import KRQuantileRegressor
from sklearn_ext.rl._lagrangian_ppo import LagrangianActorCritic
from sklearn_ext.rl._lagrangian_tabular import (
    TabularLagrangian,
    make_random_cmdp,
    multiplier_step,
)
from sklearn_ext.rl._maxmin import (
    MaxMinSolution,
    TabularMOMDP,
    make_random_momdp,
    solve_maxmin_lp,
    solve_weighted_lp,
)
from sklearn_ext.rl._maxmin_agent import ConstrainedMaxMinMORL, TabularMaxMinMORL
from sklearn_ext.rl._mdp import LPSolution, TabularCMDP, TabularMDP
from sklearn_ext.rl._mo_agent import MOQuantileAgent
from sklearn_ext.rl._plotting import plot_guarantee
from sklearn_ext.rl._qlearning import TabularQLearning
from sklearn_ext.rl._rollouts import collect_returns
from sklearn_ext.rl._task_families import BridgeTaskFamily
from sklearn_ext.rl._wrappers import SafetyGymnasiumWrapper

# The environments subclass gymnasium.Env: they load on first access, so that
# the family imports without the optional extra.
_ENVIRONMENTS = {
    "BridgeWorld": "_environments",
    "BuildingThermalEnv": "_thermal_env",
    "DistributionGridEnv": "_grid_env",
    "GoalGridWorld": "_environments",
}

__all__ = [
    "BridgeTaskFamily",
    "ConstrainedMaxMinMORL",
    "KRQuantileRegressor",
    "LagrangianActorCritic",
    "LPSolution",
    "MaxMinSolution",
    "MOQuantileAgent",
    "MultiTaskGuarantee",
    "SafetyGymnasiumWrapper",
    "TabularCMDP",
    "TabularLagrangian",
    "TabularMDP",
    "TabularMaxMinMORL",
    "TabularMOMDP",
    "TabularQLearning",
    "collect_returns",
    "make_random_cmdp",
    "make_random_momdp",
    "multiplier_step",
    "plot_guarantee",
    "solve_maxmin_lp",
    "solve_weighted_lp",
    *_ENVIRONMENTS,
]


def __getattr__(name):
    if name in _ENVIRONMENTS:
        module = importlib.import_module(f"sklearn_ext.rl.{_ENVIRONMENTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'sklearn_ext.rl' has no attribute {name!r}")


def __dir__():
    return __all__
