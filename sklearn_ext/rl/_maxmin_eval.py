"""Evaluation of thermal policies, and the setback thermostat within a limit.

Shared by ``benchmarks/bench_maxmin_morl.py`` and anything else that judges a
policy of the thermal environment.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np

from sklearn_ext.rl._rollouts import lockstep_episodes

__all__ = ["SETBACKS", "evaluate_policy", "setback_thermostat"]


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
