"""The CLI demo of ConstrainedMaxMinMORL and the evaluation of thermal policies."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np

from sklearn_ext.rl._rollouts import lockstep_episodes

__all__ = ["evaluate_policy", "setback_thermostat", "tabular_demo"]


def evaluate_policy(env, act, seeds):
    """Mean episode return per objective and mean episode cost of a policy.

    ``act(observations) -> actions`` on a batch; one episode per seed, all
    run in lockstep on copies of ``env``.
    """
    envs = [copy.deepcopy(env) for _ in seeds]
    data, returns = lockstep_episodes(
        act, envs, [int(s) for s in seeds], 10**6, info_key="costs"
    )
    episodes = np.asarray(data["episodes"])
    costs = np.stack([np.ravel(c) for c in data["info"]])
    per_episode = np.stack(
        [costs[episodes == e].sum(axis=0) for e in range(len(seeds))]
    )
    return returns.mean(axis=0), per_episode.mean(axis=0)


SETBACKS = np.arange(0.0, 8.01, 0.25)


def setback_thermostat(env, limit, seeds, setbacks=SETBACKS):
    """The thermostat of ``env`` with the smallest uniform setback within a limit.

    Every zone's setpoint is lowered by the same amount, the smallest of
    ``setbacks`` (K) whose mean daily energy on ``seeds`` is within
    ``limit``. Returns ``(setback, returns, energy)``.
    """
    for setback in setbacks:
        setpoint = env.target - setback

        def act(obs, setpoint=setpoint):
            return env.thermostat(obs, setpoint=setpoint)

        returns, energy = evaluate_policy(env, act, seeds)
        if energy[0] <= limit:
            return float(setback), returns, float(energy[0])
    raise ValueError(f"no setback up to {setbacks[-1]} K meets {limit} kWh.")


def tabular_demo(cls):
    from sklearn_ext.rl._maxmin import (
        make_random_momdp,
        solve_maxmin_lp,
        solve_weighted_lp,
    )

    ours, utilitarian = [], []
    for seed in range(4):
        mdp, limits = make_random_momdp(random_state=seed)
        lp = solve_maxmin_lp(mdp, limits)
        agent = cls(constraints=limits).fit(mdp)
        feasible = agent.violation_[-1] <= 0.01
        ours.append(float(agent.objective_values_.min() / lp.value) * feasible)
        weights = np.full(mdp.n_objectives, 1.0 / mdp.n_objectives)
        utilitarian.append(solve_weighted_lp(mdp, weights, limits).value / lp.value)
    return {
        "data": "make_random_momdp: 4 random constrained MDPs, 10 states, 3 "
        "actions, 3 objectives, 1 binding constraint",
        "metric": "worst objective / the LP's max-min optimum (0 if a "
        "constraint is exceeded by more than 0.01)",
        "score": float(np.mean(ours)),
        "baseline": "constrained utilitarian policy (equal weights, exact LP); "
        "no plain scikit-learn baseline for MDPs",
        "baseline_score": float(np.mean(utilitarian)),
        "greater_is_better": True,
    }
