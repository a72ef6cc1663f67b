"""
=================================================================
Fair heating under an energy budget: constrained max-min MORL
=================================================================

A multi-objective agent that maximises the *worst* of its objectives treats
them fairly; an energy budget on top makes the fairness cost something.
Both agents below solve

    max over policies of min_k J_k, subject to J_cost <= budget,

by descending on the dual: weights on the objectives (on the simplex) and a
multiplier on the budget. First :class:`~sklearn_ext.rl.TabularMaxMinMORL`
on small random MDPs, where the exact answer is a linear program, then
:class:`~sklearn_ext.rl.ConstrainedMaxMinMORL` (PPO) on a three-zone
building.
"""

# %%
# Tabular: convergence to the LP optimum
# --------------------------------------
# :func:`~sklearn_ext.rl.solve_maxmin_lp` solves the occupancy-measure LP
# with HiGHS; the cost limits are part of the MDP (``mdp.cost_limits``). The
# solver, with exact policy evaluation, moves its weights by projected
# gradient steps of size ``dual_lr / sqrt(t + 1)``; the gap between its
# worst objective and the LP optimum shrinks to the entropy bias, and the
# budget is met. ``evaluation="sampled"`` is the model-free mode: it only
# draws transitions (soft Q-learning), and needs more iterations.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_ext.rl import (
    BuildingThermalEnv,
    ConstrainedMaxMinMORL,
    TabularMaxMinMORL,
    make_random_momdp,
    solve_maxmin_lp,
    solve_weighted_lp,
)

fig, ax = plt.subplots(figsize=(6, 3.8))
for seed in range(4):
    mdp = make_random_momdp(random_state=seed)
    lp = solve_maxmin_lp(mdp)
    agent = TabularMaxMinMORL().fit(mdp)
    gap = np.abs(agent.worst_objective_ - lp.value)
    ax.loglog(np.arange(1, gap.size + 1), gap, label=f"MDP {seed}")
    equal = solve_weighted_lp(mdp, np.full(3, 1 / 3))
    model_free = TabularMaxMinMORL(evaluation="sampled", max_iter=3000,
                                   random_state=0).fit(mdp)  # fmt: skip
    print(
        f"MDP {seed}: LP max-min {lp.value:.3f}, solver {agent.score(mdp):.3f} "
        f"(cost {agent.constraint_values_[0]:.3f} <= {mdp.cost_limits[0]:.3f}), "
        f"sampled soft-Q {model_free.objective_values_.min():.3f}; "
        f"equal-weights policy {equal.value:.3f}"
    )
ax.set_xlabel("iteration")
ax.set_ylabel("|worst objective - LP optimum|")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# A building on a cold day
# ------------------------
# :class:`~sklearn_ext.rl.BuildingThermalEnv` has three zones in a row,
# from a well-insulated sunny one to a leaky shaded one; the reward is a
# vector, minus each zone's distance to 21 °C, and ``info["costs"]`` is the
# energy. A thermostat keeps every zone near 21 °C for
# :claim:`maxmin_morl_thermal.thermostat_energy` kWh a day (in
# ``benchmarks/bench_maxmin_morl.py``); the budget is 290. The agent learns
# with PPO; we compare it with the same PPO on fixed equal weights (the
# utilitarian choice) under the same budget.
env = BuildingThermalEnv()
common = {
    "cost_limits": [290.0],
    "total_timesteps": 200 * 8 * env.horizon,  # 200 updates of 8 days
    "max_episode_steps": env.horizon,
    "random_state": 0,
    "device": "cpu",
}
fair = ConstrainedMaxMinMORL(**common).fit(env)
utilitarian = ConstrainedMaxMinMORL(weights=[1, 1, 1], **common).fit(env)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for agent, name, style in [(fair, "max-min", "-"), (utilitarian, "equal weights", ":")]:
    worst = agent.returns_.min(axis=1)
    ax1.plot(worst, style, label=name)
    ax2.plot(agent.constraint_values_[:, 0], style, label=name)
    last = agent.returns_[-10:].mean(axis=0)
    print(f"{name:13s}: zones {np.round(last, 1)} degree-hours, "
          f"energy {agent.constraint_values_[-10:, 0].mean():.0f} kWh")  # fmt: skip
ax1.set_xlabel("PPO update")
ax1.set_ylabel("worst zone comfort (degree-hours)")
ax1.legend()
ax2.axhline(290, color="k", lw=0.8)
ax2.set_xlabel("PPO update")
ax2.set_ylabel("energy per day (kWh)")
fig.tight_layout()
plt.show()

# %%
# The equal-weights agent meets the budget too, but by letting some zones
# go colder than others; the max-min agent spreads the shortfall. The
# comparison over seeds, with unconstrained baselines and the thermostats,
# is in ``benchmarks/bench_maxmin_morl.py``.
