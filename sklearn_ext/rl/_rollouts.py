"""Rolling policies out on gymnasium environments: the family's one episode loop.

:func:`run_episodes` steps environments through episodes; everything else that
runs episodes calls it: :func:`episode_returns` (and so :func:`collect_returns`
and :meth:`TabularQLearning.score`), :func:`lockstep_episodes` (the data of the
deep agents' updates, their scores, the thermal evaluations) and
:class:`TabularQLearning`'s online learning, which updates its table at every
step through ``on_step``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np
from joblib import Parallel, delayed

from sklearn_ext.rl._base import check_env, is_vector_env, vector_info
from sklearn_ext.utils._sklearn_compat import Interval, validate_params
from sklearn_ext.utils._torch import child_seeds

__all__ = [
    "actions_of",
    "check_transitions",
    "collect_returns",
    "episode_returns",
    "is_vector_env",
    "lockstep_episodes",
    "run_episodes",
]

# Keys of an offline transition dataset (as d4rl and minari name them).
TRANSITION_KEYS = (
    "observations",
    "actions",
    "rewards",
    "next_observations",
    "terminals",
)


def check_transitions(data, owner, *, discrete=False, costs=False):
    """The family's one check of an offline dataset.

    Every agent that learns from logged data takes the same form, a dict of
    arrays keyed as d4rl and minari name them: ``observations``,
    ``actions``, ``rewards`` (a scalar or a vector per row),
    ``next_observations``, ``terminals`` (terminated, not merely truncated)
    and, for constrained agents, ``costs`` (one per constraint per row).

    Parameters
    ----------
    data : dict of array-like
    owner : str
        Who checks (named in every message).
    discrete : bool, default=False
        Observations and actions must be non-negative integers (one per row).
    costs : bool, default=False
        The dataset must hold ``costs``.

    Returns
    -------
    checked : dict of ndarray
        New arrays (the caller's are never modified): ``rewards`` and
        ``costs`` 2-D (one column per entry), ``terminals`` boolean,
        ``actions`` 1-D integers where ``discrete``.

    Raises
    ------
    TypeError
        If ``data`` is not a dict.
    ValueError
        On a missing key, rows that disagree in number, non-finite values,
        or (``discrete``) observations or actions that are not non-negative
        integers.
    """
    keys = (*TRANSITION_KEYS, "costs") if costs else TRANSITION_KEYS
    if not isinstance(data, dict):
        raise TypeError(
            f"{owner}.fit takes an offline dataset as a dict of arrays with keys "
            f"{keys}; got {type(data).__name__}."
        )
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"the dataset given to {owner} lacks the keys {missing}.")
    out = {}
    for key in keys:
        value = np.array(data[key], copy=True)
        if value.dtype == object or not (
            np.issubdtype(value.dtype, np.number) or value.dtype == bool
        ):
            raise ValueError(f"{key} must be numeric; got dtype {value.dtype}.")
        if value.ndim == 0 or len(value) == 0:
            raise ValueError(f"{key} must hold one entry per transition; got none.")
        if not np.all(np.isfinite(value.astype(np.float64))):
            raise ValueError(f"{key} contain NaN or infinity.")
        out[key] = value
    n = len(out["observations"])
    for key in keys[1:]:
        if len(out[key]) != n:
            raise ValueError(
                f"{key} has {len(out[key])} rows but observations has {n}."
            )
    for key in ("rewards", "costs"):
        if key in out:
            out[key] = out[key].reshape(n, -1).astype(np.float64)
    if out["observations"].shape[1:] != out["next_observations"].shape[1:]:
        raise ValueError(
            f"observations {out['observations'].shape} and next_observations "
            f"{out['next_observations'].shape} differ in shape."
        )
    if not np.all(np.isin(out["terminals"], (0, 1))):
        raise ValueError("terminals must be booleans (or 0 and 1).")
    out["terminals"] = out["terminals"].astype(bool)
    if discrete:
        for key in ("observations", "actions", "next_observations"):
            v = out[key]
            if v.ndim != 1 or np.any(v < 0) or np.any(v != np.round(v)):
                raise ValueError(
                    f"{owner} needs {key} as non-negative integers, one per transition."
                )
            out[key] = v.astype(np.int64)
    return out


def actions_of(policy, observations):
    """Actions of ``policy`` for a batch of observations.

    ``policy`` is an object with ``predict(observations)`` (the family's
    agents, any fitted scikit-learn estimator) or a callable mapping one
    observation to one action.
    """
    if hasattr(policy, "predict"):
        return np.asarray(policy.predict(np.asarray(observations)))
    if callable(policy):
        return np.asarray([policy(o) for o in observations])
    raise TypeError(
        "policy must have a predict(observations) method or be a callable "
        f"observation -> action; got {type(policy).__name__}."
    )


def run_episodes(act, envs, seeds, max_episode_steps, *, gamma=1.0, on_step=None):
    """Run one episode on each environment, all advancing together.

    The family's one episode loop. ``act(observations) -> actions`` is called
    once per time step on the stacked observations of the episodes still
    running (one row per episode), so that a policy network evaluates them as
    one batch; a sequential caller passes one environment. An episode ends
    when its environment says terminated or truncated, or after
    ``max_episode_steps`` steps. Rewards may be vectors, of the same width at
    every step; a non-finite reward is refused.

    Parameters
    ----------
    act : callable
        ``act(observations) -> actions``, one action per row.
    envs : list of gymnasium.Env, or gymnasium.vector.VectorEnv
        One independent environment per episode (the same object twice would
        be stepped twice per time step), or a vector environment of
        gymnasium (``SyncVectorEnv``, or ``AsyncVectorEnv`` to step the
        environments in parallel processes), one episode per
        sub-environment. A vector environment must not reset a finished
        sub-environment within the step that finished it (gymnasium's
        default ``autoreset_mode`` "NextStep", or "Disabled"); the steps
        after a sub-environment's episode ended are not recorded.
    seeds : list of int or None
        Seed of each environment's reset (None continues its random stream).
    max_episode_steps : int
    gamma : float, default=1.0
        Discount of the returned returns.
    on_step : callable, default=None
        ``on_step(i, observation, action, reward, next_observation,
        terminated, info)`` after every step of episode ``i``, in time order:
        the hook of a recorder (:func:`lockstep_episodes`) or of an agent
        that learns while it acts. Scalar actions arrive as Python numbers,
        others as arrays; rewards as float64 arrays.

    Returns
    -------
    returns : ndarray of shape (n_episodes,) or (n_episodes, n_rewards)
        Discounted sum of each episode's rewards.
    """
    vector = is_vector_env(envs)
    if vector:
        check_env(envs, "run_episodes")
        mode = str(getattr(envs, "metadata", {}).get("autoreset_mode", "NextStep"))
        if "SameStep" in mode or "SAME_STEP" in mode:
            raise ValueError(
                "run_episodes needs a vector environment that does not reset a "
                "sub-environment in the step that ends its episode; this one "
                f"has autoreset_mode={mode}: use NextStep (gymnasium's default) "
                "or Disabled."
            )
        n = int(envs.num_envs)
        if len(seeds) != n:
            raise ValueError(
                f"{len(seeds)} seeds for a vector environment of {n} sub-environments."
            )
        batch = envs.reset(seed=list(seeds))[0]
        obs = [np.asarray(batch[i]) for i in range(n)]
    else:
        for env in envs:
            check_env(env, "run_episodes")
        n = len(envs)
        obs = [np.asarray(env.reset(seed=s)[0]) for env, s in zip(envs, seeds)]
    running = list(range(n))
    returns = [0.0] * n
    discount = [1.0] * n
    shape = None
    for _ in range(max_episode_steps):
        if not running:
            break
        actions = np.asarray(act(np.array([obs[i] for i in running])))
        if vector:
            # Finished sub-environments step too (their output is ignored):
            # they take the first running episode's action.
            full = np.stack([actions[0]] * n)
            full[running] = actions
            out = envs.step(full)
            steps = {
                i: (
                    out[0][i],
                    out[1][i],
                    out[2][i],
                    out[3][i],
                    vector_info(out[4], i, n),
                )
                for i in running
            }
        else:
            steps = {i: envs[i].step(_one_action(a)) for i, a in zip(running, actions)}
        still = []
        for i, a in zip(running, actions):
            a = _one_action(a)
            nxt, reward, terminated, truncated, info = steps[i]
            nxt, reward = np.asarray(nxt), np.asarray(reward, dtype=np.float64)
            if not np.all(np.isfinite(reward)):
                raise ValueError(
                    f"the environment returned a non-finite reward {reward!r}: "
                    "rewards must be finite numbers."
                )
            if shape is None:
                shape = reward.shape
            elif reward.shape != shape:
                raise ValueError(
                    f"the environment's reward changed shape from {shape} to "
                    f"{reward.shape}: rewards must have the same width at every "
                    "step."
                )
            if on_step is not None:
                on_step(i, obs[i], a, reward, nxt, bool(terminated), info)
            returns[i] = returns[i] + discount[i] * reward
            discount[i] *= gamma
            obs[i] = nxt
            if not (terminated or truncated):
                still.append(i)
        running = still
    return np.asarray(returns, dtype=np.float64)


def _one_action(a):
    """An action as an environment takes it: a Python number or an array."""
    return a.item() if np.ndim(a) == 0 else np.asarray(a)


def episode_returns(policy, env, n_episodes, seed, max_episode_steps=1000):
    """Undiscounted returns of ``n_episodes`` episodes of ``policy`` on ``env``.

    The episodes run one after the other on ``env`` (:func:`run_episodes` on
    the one environment): the first ``reset`` is seeded with ``seed``; later
    ones continue the environment's random stream. An episode ends when the
    environment says terminated or truncated, or after ``max_episode_steps``
    steps.

    Returns
    -------
    returns : ndarray of shape (n_episodes,)
    """
    check_env(env, "episode_returns")

    def act(observations):
        return actions_of(policy, observations)

    returns = np.concatenate(
        [
            run_episodes(act, [env], [seed if e == 0 else None], max_episode_steps)
            for e in range(n_episodes)
        ]
    )
    if returns.ndim != 1:
        if returns.shape[1] != 1:
            raise ValueError(
                "episode_returns sums scalar rewards; the environment's reward "
                f"has {returns.shape[1]} entries."
            )
        returns = returns[:, 0]
    return returns


def _one_task(policy, make_task, seed, n_episodes, max_episode_steps):
    # Separate streams for the task draw and the episodes: with one seed for
    # both, an environment seeded like the task's generator would replay its
    # numbers, and the episodes would depend on how the task was drawn.
    task_rng = np.random.default_rng([seed, 0])
    episode_seed = int(np.random.default_rng([seed, 1]).integers(2**31 - 1))
    env = make_task(task_rng)
    try:
        return episode_returns(policy, env, n_episodes, episode_seed, max_episode_steps)
    finally:
        if hasattr(env, "close"):
            env.close()


@validate_params(
    {
        "n_tasks": [Interval(Integral, 1, None, closed="left")],
        "n_episodes": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "max_episode_steps": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def collect_returns(
    policy,
    make_task,
    n_tasks,
    n_episodes,
    random_state=None,
    *,
    n_jobs=None,
    max_episode_steps=1000,
):
    """Roll a policy out on freshly sampled tasks: the input of a guarantee.

    Each task gets its own seed from ``random_state``, from which two
    independent streams derive: ``make_task`` draws the task from a
    ``numpy.random.Generator`` of the first and returns a gymnasium
    environment, on which ``n_episodes`` episodes run (the first ``reset``
    seeded from the second). Tasks run in parallel through joblib; the result
    does not depend on ``n_jobs``.

    Parameters
    ----------
    policy : object with ``predict(observations)``, or callable
        The multi-task policy (e.g. a fitted :class:`TabularQLearning`), or a
        function of one observation.
    make_task : callable
        ``make_task(rng) -> gymnasium.Env``, e.g.
        :meth:`GoalGridWorld.make_task` or :meth:`BridgeTaskFamily.make_task`.
    n_tasks : int
        Number of tasks to draw.
    n_episodes : int
        Episodes per task.
    random_state : int, RandomState instance or None, default=None
        Seeds the tasks and their episodes.
    n_jobs : int, default=None
        Parallel workers (joblib's convention).
    max_episode_steps : int, default=1000
        Safety cap on an episode's length.

    Returns
    -------
    returns : ndarray of shape (n_tasks, n_episodes)
        Undiscounted episode returns, one row per task: the input of
        :meth:`MultiTaskGuarantee.fit`.

    Examples
    --------
    >>> from sklearn_ext.rl import BridgeTaskFamily, collect_returns
    >>> forward = lambda obs: 0
    >>> returns = collect_returns(forward, BridgeTaskFamily().make_task,
    ...                           n_tasks=4, n_episodes=10, random_state=0)
    >>> returns.shape
    (4, 10)
    """
    if not callable(make_task):
        raise TypeError(
            "make_task must be a callable rng -> gymnasium environment; got "
            f"{type(make_task).__name__}."
        )
    seeds = child_seeds(random_state, n_tasks)
    rows = Parallel(n_jobs=n_jobs)(
        delayed(_one_task)(policy, make_task, s, n_episodes, max_episode_steps)
        for s in seeds
    )
    return np.vstack(rows)


def lockstep_episodes(act, envs, seeds, max_episode_steps, gamma=1.0, info_key=None):
    """Run one episode on each environment copy, all advancing together.

    :func:`run_episodes` with every transition recorded. ``act(observations)
    -> actions`` is called once per time step on the observations of the
    episodes still running, so that a policy network evaluates them as one
    batch. Rewards may be vectors.

    Parameters
    ----------
    act : callable
    envs : list of gymnasium.Env, or gymnasium.vector.VectorEnv
        One independent copy per episode, or a vector environment (as
        :func:`run_episodes` takes it).
    seeds : list of int or None
        Seed of each copy's reset.
    max_episode_steps : int
    gamma : float, default=1.0
        Discount of the returned returns.
    info_key : str, default=None
        Also collect ``info[info_key]`` of every step (e.g. ``"costs"``), under
        the key ``"info"``.

    Returns
    -------
    transitions : dict of list
        ``observations``, ``actions`` (ints for scalar integer actions, arrays
        otherwise), ``rewards``, ``next_observations``, ``terminals``
        (terminated, not merely truncated) and ``episodes`` (the index of the
        episode of each step), in time order; ``info`` with ``info_key``.
    returns : ndarray of shape (n_episodes,) or (n_episodes, n_rewards)
        Discounted sum of each episode's rewards.
    """
    out = {k: [] for k in (*TRANSITION_KEYS, "episodes")}
    if info_key is not None:
        out["info"] = []

    def record(i, observation, action, reward, next_observation, terminated, info):
        values = (observation, action, reward, next_observation, terminated)
        for key, value in zip(TRANSITION_KEYS, values):
            out[key].append(value)
        out["episodes"].append(i)
        if info_key is not None:
            try:
                value = np.asarray(info[info_key], dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"the environment's info['{info_key}'] must hold numbers at "
                    f"every step; got {info[info_key]!r}."
                ) from None
            if not np.all(np.isfinite(value)):
                raise ValueError(
                    f"the environment's info['{info_key}'] is not finite "
                    f"({value!r}): it must hold finite numbers at every step."
                )
            out["info"].append(info[info_key])

    returns = run_episodes(
        act, envs, seeds, max_episode_steps, gamma=gamma, on_step=record
    )
    return out, returns
