"""
==================================================================
Certifying a multi-task policy on tasks it has never seen
==================================================================

A delivery robot learns one policy for a family of tasks: reach a goal on the
far edge of a slippery 5x5 floor with four holes, within 12 steps. The goal
changes from task to task and is part of what the robot observes; how slippery
the floor is changes too, and the robot cannot see it. Before deploying the
policy on new floors, we want a statement that holds with high confidence:
*on a new task, the robot succeeds with probability at least g, for at least
a share p of tasks*.

:class:`~sklearn_ext.rl.MultiTaskGuarantee` computes the whole curve of such
(g, p) pairs from a finite test campaign: a number of freshly sampled tasks,
and a number of episodes on each. The curve holds at every point at once with
probability ``1 - delta``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# A generalist policy
# -------------------
# Tabular Q-learning trains on the task distribution itself: every episode
# of :class:`~sklearn_ext.rl.GoalGridWorld` draws a new goal and slip.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_ext.rl import (
    GoalGridWorld,
    MultiTaskGuarantee,
    TabularQLearning,
    collect_returns,
)

world = GoalGridWorld()
agent = TabularQLearning(random_state=0).fit(world)

# %%
# A test campaign: 200 new tasks, 100 episodes each
# -------------------------------------------------
# ``collect_returns`` draws each task from its own seed and rolls the policy
# out (1 for reaching the goal in time, 0 otherwise), in parallel.
returns = collect_returns(
    agent, GoalGridWorld.make_task, n_tasks=200, n_episodes=100, random_state=1
)
print("returns:", returns.shape, "mean success:", returns.mean().round(3))

cert = MultiTaskGuarantee(delta=0.01).fit(returns)
baseline = MultiTaskGuarantee(delta=0.01, composition="bonferroni", task_level="dkw")
baseline.fit(returns)
for p in (0.5, 0.8, 0.9, 0.95):
    print(
        f"with 99% confidence, {p:.0%} of new tasks succeed with probability >= "
        f"{cert.guarantee(p):.3f} (Bonferroni + DKW: {baseline.guarantee(p):.3f})"
    )

# %%
# The truth, for once
# -------------------
# The gridworld's model gives each task's exact success probability, so the
# true share of tasks above every level can be computed on many tasks; a real
# campaign never sees this. The curve of the task means (plug-in) looks
# tighter, but it is no guarantee: it lies above the truth.
rng = np.random.default_rng(2)
truth = np.sort(
    [world.success_probability(agent, world.sample_task(rng)) for _ in range(3000)]
)
grid = np.linspace(0, 1, 501)
true_share = 1 - np.searchsorted(truth, grid, side="left") / len(truth)
means = np.sort(returns.mean(axis=1))
plug_in = 1 - np.searchsorted(means, grid, side="left") / len(means)

fig, ax = plt.subplots(figsize=(6.5, 4.2))
ax.plot(grid, true_share, color="black", lw=2, label="truth (3000 tasks, exact)")
ax.step(grid, plug_in, where="post", ls=":", color="tab:red", label="plug-in means")
ax.step(
    grid,
    cert.probability(grid),
    where="post",
    color="tab:blue",
    label="MultiTaskGuarantee (99%)",
)
ax.step(
    grid,
    baseline.probability(grid),
    where="post",
    color="tab:gray",
    label="Bonferroni + DKW (99%)",
)
ax.set_xlabel("success probability g on a new task")
ax.set_ylabel("share p of new tasks reaching g")
ax.set_title("Certified (g, p) curve of a Q-learning policy")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Reading the curve
# -----------------
# The certified curve stays below the truth (as the theorem guarantees with
# probability 0.99), and above the classical Bonferroni + DKW curve: the
# per-task bounds may fail a few at a time (counted with a binomial tail)
# instead of all being forced to hold, and the band across tasks is exact
# rather than Dvoretzky-Kiefer-Wolfowitz. More tasks move the curve towards
# the truth at high p; more episodes per task move it to the right.
