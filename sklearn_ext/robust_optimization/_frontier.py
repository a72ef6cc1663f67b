"""The miscoverage-regret frontier: normalised regret, Pareto levels, selection.

The pieces of :class:`~sklearn_ext.robust_optimization.ConformalRobustOptimizer`
that work on a problem and a fitted frontier only, without the estimator: the
normalised regret of decisions, the robust decisions of every level in one
batched call, the Pareto mask, and the rule that picks a level.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["normalised_regret", "pareto_mask", "robust_regret", "select_level"]


def normalised_regret(problem, C, W, cost_range=None):
    """Regret of decisions ``W`` under ``C``, divided by the problem's cost range.

    It lies in [0, 1] by construction; the clip only absorbs solver round-off,
    and a zero range (every decision costs the same) counts as zero regret.
    """
    best, worst = problem.cost_range(C) if cost_range is None else cost_range
    span = worst - best
    excess = problem.cost(C, W) - best
    with np.errstate(divide="ignore", invalid="ignore"):
        regret = np.where(span > 0, excess / span, 0.0)
    return np.clip(regret, 0.0, 1.0)


def robust_regret(problem, levels, Y, center, scale, norm, shape=None):
    """Normalised regret (n_samples, n_levels) of the robust decisions.

    The decision of level ``k`` for sample ``i`` hedges against the set of
    radius ``levels[k]`` around ``center[i]`` with per-coordinate ``scale[i]``
    (rotated by ``shape`` when given: ``problem.solve_robust``'s argument).
    """
    n, n_levels = Y.shape[0], levels.size
    best, worst = problem.cost_range(Y)
    # One batched call for all levels: rows are (level, sample) pairs.
    half_widths = (levels[:, None, None] * scale[None]).reshape(n * n_levels, -1)
    decisions = problem.solve_robust(
        np.tile(center, (n_levels, 1)), half_widths, norm, shape
    )
    regret = normalised_regret(
        problem,
        np.tile(Y, (n_levels, 1)),
        decisions,
        (np.tile(best, n_levels), np.tile(worst, n_levels)),
    )
    return regret.reshape(n_levels, n).T


def pareto_mask(first, second):
    """Points not dominated in (first, second), both to be minimised."""
    le = (first[None, :] <= first[:, None]) & (second[None, :] <= second[:, None])
    lt = (first[None, :] < first[:, None]) | (second[None, :] < second[:, None])
    return ~np.any(le & lt, axis=1)


def select_level(
    front, with_problem, max_miscoverage, max_regret, tradeoff, certified=None
):
    """Index of the level chosen by the rule of ``ConformalRobustOptimizer.select``.

    ``certified`` (boolean, one per level), when given, replaces the
    frontier's bounds as the test of the constraints (the levels certified
    by fixed-sequence testing). Returns None when no level meets the
    constraints. The arguments are checked by the caller.
    """
    mis = front["miscoverage_upper"]
    reg = front["regret_upper"] if with_problem else np.zeros_like(mis)
    feasible = np.ones(mis.shape, dtype=bool)
    if certified is not None:
        feasible &= certified
    else:
        if max_miscoverage is not None:
            feasible &= mis <= max_miscoverage
        if max_regret is not None:
            feasible &= reg <= max_regret
    if not feasible.any():
        return None
    if tradeoff is None and max_miscoverage is None and max_regret is None:
        tradeoff = 1.0
    if tradeoff is not None:
        keys = (tradeoff * mis + reg, np.zeros_like(mis))
    elif max_miscoverage is not None:
        # Without a problem every feasible level ties on regret: the
        # smallest radius (the tightest valid set) wins.
        keys = (reg, mis if with_problem else np.zeros_like(mis))
    else:
        keys = (mis, reg)
    index = np.arange(mis.size)[feasible]
    order = np.lexsort((index, keys[1][feasible], keys[0][feasible]))
    return int(index[order[0]])
