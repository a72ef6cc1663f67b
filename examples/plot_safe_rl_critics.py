"""
=========================================================================
Why dedicated critics: target drift of the multipliers in Lagrangian RL
=========================================================================

A constrained MDP asks for the best return while each expected cost stays
below its limit. Lagrangian methods trade the two with multipliers that grow
while a constraint is violated; the actor then needs the value of the mixed
reward ``r - lambda . c``. One critic can learn that mixed value directly,
or one critic per signal (reward, each cost) can be combined with the
current multipliers. On a random constrained MDP with exact evaluation,
:class:`~sklearn_ext.rl.TabularLagrangian` shows the difference: when the
multipliers move, the mixed critic's target moves with them.
"""

# %%
import warnings

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning

from sklearn_ext.rl import TabularLagrangian, make_random_cmdp

cmdp = make_random_cmdp(n_constraints=2, random_state=2)
lp = cmdp.solve_lp()
print(f"LP optimum {lp.value:.3f}, limits {cmdp.cost_limits.round(3)}")


def fit(**params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return TabularLagrangian(**params).fit(cmdp)


# %%
# First the bias alone: the policy is held fixed (``actor_lr=0``) and the
# multipliers climb, since the uniform policy violates the limits. The
# dedicated critics converge to the true values whatever the multipliers do;
# the mixed critic stays behind its moving target, the more so the faster
# the multipliers move.

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for lr, style in [(0.03, ":"), (0.3, "-")]:
    for critic, color in [("dedicated", "tab:blue"), ("mixed", "tab:red")]:
        agent = fit(critic=critic, actor_lr=0.0, multiplier="gradient",
                    lambda_lr=lr, max_iter=3000)  # fmt: skip
        ax1.semilogy(agent.critic_bias_ + 1e-12, style, color=color,
                     label=f"{critic}, dual step {lr}")  # fmt: skip
ax1.set_xlabel("iteration")
ax1.set_ylabel("critic error vs true Q (mean |.|)")
ax1.legend(fontsize=8)

# %%
# Then the full actor-critic, with critics that follow their targets slowly
# (TD steps ``critic_lr=0.05``, the default) and PID multipliers. The
# dedicated agent settles on the LP optimum; the mixed one acts on a stale
# penalty and keeps overshooting its limits.

for critic, color in [("dedicated", "tab:blue"), ("mixed", "tab:red")]:
    agent = fit(critic=critic)
    excess = agent.constraint_values_ / cmdp.cost_limits - 1
    ax2.plot(excess.max(axis=1), color=color, label=critic)
    gap = (lp.value - agent.returns_[-1]) / abs(lp.value)
    print(f"{critic:9s}: final return gap {gap:+.4f}, worst cost excess "
          f"{excess[-1].max():+.4f}")  # fmt: skip
ax2.axhline(0, color="k", lw=0.8)
ax2.set_ylim(-0.3, 0.5)
ax2.set_xlabel("iteration")
ax2.set_ylabel("worst cost / limit - 1")
ax2.legend()
fig.tight_layout()
plt.show()

# %%
# On :class:`~sklearn_ext.rl.DistributionGridEnv`, a distribution feeder
# whose voltage and line-rating limits the deep
# :class:`~sklearn_ext.rl.LagrangianActorCritic` must respect, the contrast
# does not carry over once the deep agent is set up as PPO implementations
# usually are. A mixed critic used to fail there, but through the gradient
# clip: its targets ``r - lambda . c`` grow with the multipliers, and one
# clip over actor and critic shrank the actor's step with the critic's. With
# actor and critic clipped separately and the value targets standardised
# per head (the defaults, ``grad_clip="separate"`` and
# ``normalize_targets=True``), the mixed critic keeps the costs within the
# limits as dedicated critics do (see ``benchmarks/bench_safe_rl.py`` and the
# user guide).
