"""How the Lagrangian agents are judged: a solved CMDP, the worst cost excess.

Shared by the demos, ``benchmarks/bench_safe_rl.py`` and the tests.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["GRID_LIMITS", "solves", "worst_excess"]

# Episode-cost limits of the grid: about a quarter of what a uniformly random
# policy incurs (voltage 7.7, line rating 16.7 per day).
GRID_LIMITS = (2.0, 4.0)


def solves(agent, cmdp, lp, tol=0.01):
    """Whether the agent's last policy is LP-optimal and feasible within ``tol``.

    Its return is within ``tol`` (relative) of the LP optimum and no
    constraint value exceeds its limit by more than ``tol`` (relative).
    """
    gap = abs(lp.value - agent.returns_[-1]) / abs(lp.value)
    excess = np.max(
        (agent.constraint_values_[-1] - cmdp.cost_limits) / cmdp.cost_limits
    )
    return bool(gap <= tol and excess <= tol)


def worst_excess(agent, limits, last=10):
    """Largest mean cost of the last updates, relative to its limit."""
    costs = agent.constraint_values_[-last:].mean(axis=0)
    return float(np.max(costs / np.asarray(limits)))
