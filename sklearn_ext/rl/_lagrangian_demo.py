"""The CLI demo of the Lagrangian critics, and the criterion of a solved CMDP."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["GRID_LIMITS", "grid_demo", "solves", "tabular_demo", "worst_excess"]


def solves(agent, cmdp, lp, tol=0.01):
    """Whether the agent's last policy is LP-optimal and feasible within ``tol``.

    Its return is within ``tol`` (relative) of the LP optimum and no
    constraint value exceeds its limit by more than ``tol`` (relative).
    """
    gap = abs(lp.value - agent.returns_[-1]) / abs(lp.value)
    excess = np.max((agent.constraint_values_[-1] - cmdp.limits) / cmdp.limits)
    return bool(gap <= tol and excess <= tol)


def tabular_demo(cls):
    from sklearn_ext.rl._lagrangian_tabular import make_random_cmdp

    solved = {"dedicated": [], "mixed": []}
    for seed in range(4):
        cmdp = make_random_cmdp(n_constraints=2 + seed % 2, random_state=seed)
        lp = cmdp.solve_lp()
        for critic in solved:
            with warnings.catch_warnings():
                # A mixed critic that keeps cycling is the point of the demo.
                warnings.simplefilter("ignore", ConvergenceWarning)
                agent = cls(critic=critic).fit(cmdp)
            solved[critic].append(solves(agent, cmdp, lp))
    return {
        "data": "make_random_cmdp: 4 random CMDPs, 10 states, 3 actions, "
        "2-3 binding constraints",
        "metric": "share solved (return within 1% of the LP optimum, costs "
        "within 1% of their limits)",
        "score": float(np.mean(solved["dedicated"])),
        "baseline": "the same agent with a mixed critic (no plain scikit-learn "
        "baseline for constrained MDPs)",
        "baseline_score": float(np.mean(solved["mixed"])),
        "greater_is_better": True,
    }


def worst_excess(agent, limits, last=10):
    """Largest mean cost of the last updates, relative to its limit."""
    costs = agent.constraint_values_[-last:].mean(axis=0)
    return float(np.max(costs / np.asarray(limits)))


def grid_demo(cls):
    from sklearn_ext.rl._grid_env import DistributionGridEnv

    limits = GRID_LIMITS
    scores = {}
    for critic in ("dedicated", "mixed"):
        agent = cls(critic=critic, cost_limits=limits, n_updates=40, random_state=0)
        scores[critic] = worst_excess(agent.fit(DistributionGridEnv()), limits)
    return {
        "data": "DistributionGridEnv (6-bus feeder, voltage and line-rating "
        f"costs, limits {limits}), 40 PPO updates",
        "metric": "largest mean episode cost of the last 10 updates / its limit",
        "score": scores["dedicated"],
        "baseline": "the same agent with a mixed critic (no plain scikit-learn "
        "baseline for constrained control)",
        "baseline_score": scores["mixed"],
        "greater_is_better": False,
    }


# Episode-cost limits of the grid: about a quarter of what a uniformly random
# policy incurs (voltage 7.7, line rating 16.7 per day).
GRID_LIMITS = (2.0, 4.0)
