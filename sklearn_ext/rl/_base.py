"""What the reinforcement-learning family shares: tags, the optional gymnasium,
the one check of an environment and the encoding of its observations.

Objects of this family are scikit-learn estimators (parameters, ``clone``,
pickling, parameter validation) whose ``fit`` takes something other than a
feature table: episode returns bounded by a known range, a gymnasium
environment (or a list of them, one per task), a transition table or dataset,
or a tabular (C)MDP. They set scikit-learn's ``_skip_test`` tag (its checks fit
on generated tables), and ``tests/test_rl_contract.py`` runs the parts of the
estimator contract that apply to them: ``clone``, parameter validation, pickling
in a fresh process, skops, ``set_params`` then ``fit``, and a table of bad
inputs. (:class:`KRQuantileRegressor`, a regressor of tables, takes the
scikit-learn checks instead.)
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NOT_A_DATA_ESTIMATOR",
    "EnvSpec",
    "check_env",
    "check_observations",
    "encode_observations",
    "encoding_of_data",
    "encoding_of_space",
    "env_list",
    "episode_envs",
    "feature_dim",
    "is_env",
    "is_vector_env",
    "require_gymnasium",
    "rl_tags",
]

# Largest number of values per coordinate for which an integer Box
# observation is one-hot encoded coordinate by coordinate.
MAX_GRID_VALUES = 64

NOT_A_DATA_ESTIMATOR = (
    "fit takes episode returns in a known range, a gymnasium environment, a "
    "transition table or a tabular MDP, not arbitrary (X, y): scikit-learn's "
    "data checks do not apply; tests/test_rl_contract.py checks clone, "
    "parameter validation, pickling, skops, set_params and bad input"
)


def rl_tags(tags, *, allow_nan=False):
    """Tags of a family member: outside scikit-learn's data checks."""
    tags._skip_test = True
    tags.input_tags.allow_nan = allow_nan
    return tags


def require_gymnasium(what):
    """Import gymnasium, or say which extra to install."""
    try:
        import gymnasium
    except ImportError as exc:
        raise ImportError(
            f"{what} needs gymnasium, which is in sklearn_ext's optional extra "
            "'rl': pip install 'sklearn-ext[rl]'."
        ) from exc
    return gymnasium


# --- environments --------------------------------------------------------------


def is_env(obj):
    """Whether ``obj`` is used as a gymnasium environment (has reset and step)."""
    return hasattr(obj, "reset") and hasattr(obj, "step")


def is_vector_env(envs):
    """Whether ``envs`` is a ``gymnasium.vector`` environment (sync or async)."""
    return hasattr(envs, "num_envs") and hasattr(envs, "single_action_space")


def vector_info(info, i, n):
    """The info of sub-environment ``i`` of a vector environment's step."""
    out = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}", np.ones(n, dtype=bool))
        if mask[i]:
            out[key] = value[i]
    return out


def env_list(X, owner, method="fit"):
    """The environments of ``X`` as a list, or None if ``X`` holds none.

    The family's agents take an environment, a list (or tuple) of them (one
    per task, so that ``GridSearchCV`` can split them), or one
    ``gymnasium.vector`` environment (a list of one, whose sub-environments
    run the episodes of a round side by side: :func:`episode_envs`). A list
    mixing environments and other objects, or holding a vector environment,
    is a TypeError.
    """
    if is_env(X):
        return [X]
    if isinstance(X, (list, tuple)) and len(X) and any(is_env(e) for e in X):
        if not all(is_env(e) for e in X):
            raise TypeError(
                f"a list given to {owner}.{method} must hold only environments; "
                f"got {sorted({type(e).__name__ for e in X if not is_env(e)})} "
                "among them."
            )
        if any(is_vector_env(e) for e in X):
            raise TypeError(
                f"a list given to {owner}.{method} holds a vector environment; "
                "give the vector environment alone (its sub-environments run "
                "side by side) or a list of plain environments."
            )
        return list(X)
    return None


def episode_envs(envs, first, n, owner, parameter):
    """The environments that run ``n`` episodes side by side.

    ``envs`` is what :func:`env_list` returned. Plain environments are deep
    copied, episode ``first + i`` on ``envs[(first + i) % len(envs)]``, so
    that the given ones are never stepped. A vector environment (alone in
    ``envs``) is returned as it is: its sub-environments run the ``n``
    episodes, so it must have ``n`` of them; ``parameter`` names what sets
    ``n`` in the error.
    """
    if len(envs) == 1 and is_vector_env(envs[0]):
        vec = envs[0]
        if int(vec.num_envs) != n:
            raise ValueError(
                f"{owner} runs {n} episodes side by side here, and the vector "
                f"environment has {vec.num_envs} sub-environments: set "
                f"{parameter}={vec.num_envs}, or give a list of environments."
            )
        return vec
    return [copy.deepcopy(envs[(first + i) % len(envs)]) for i in range(n)]


@dataclass(frozen=True)
class EnvSpec:
    """What :func:`check_env` read off an environment (None: not asked for).

    Attributes
    ----------
    action_kind : {"Discrete", "MultiDiscrete", "Box"} or None
    n_actions : int or None
        Actions of a Discrete space, sub-actions of a MultiDiscrete one, the
        dimension of a Box.
    nvec : ndarray of int or None
        Sizes of a MultiDiscrete space's sub-actions.
    action_low, action_high : ndarray or None
        Bounds of a Box action space, flattened.
    n_states : int or None
        Size of a Discrete observation space.
    obs_encoding : tuple or None
        How observations become features (:func:`encoding_of_space`).
    reward_width : int or None
        Entries of the reward: 1 for a scalar.
    info : dict or None
        The info of the probing step.
    """

    action_kind: str = None
    n_actions: int = None
    nvec: np.ndarray = None
    action_low: np.ndarray = None
    action_high: np.ndarray = None
    n_states: int = None
    obs_encoding: tuple = None
    reward_width: int = None
    info: dict = None


def _kinds(kinds):
    kinds = sorted(kinds)
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"


def _space_kind(space, kinds, owner, what):
    """The gymnasium class name of ``space`` among ``kinds``, or a ValueError."""
    gym = require_gymnasium(owner)
    for kind in kinds:
        if isinstance(space, getattr(gym.spaces, kind)):
            return kind
    raise ValueError(
        f"{owner} needs a {_kinds(kinds)} {what} space; got {type(space).__name__}."
    )


def check_env(
    env,
    owner,
    *,
    method=None,
    takes="a gymnasium environment (with reset and step)",
    actions=None,
    observations=None,
    probe=False,
    info=None,
    vector_reward_space=False,
):
    """The family's one check of a gymnasium environment.

    A ``gymnasium.vector`` environment is read through its single
    sub-environment's spaces, and its probing step through sub-environment 0.
    Each part runs only when asked for, so that a rollout needs nothing but
    ``reset`` and ``step`` (and no gymnasium import), while an agent reads
    its spaces and probes a step.

    Parameters
    ----------
    env : object
        What was given as an environment.
    owner : str
        Who checks (a class or function name), named in every message.
    method : str, default=None
        The method that was given ``env`` (``"fit"``), for the TypeError.
    takes : str
        What ``owner`` takes, for the TypeError of a non-environment.
    actions : tuple of {"Discrete", "MultiDiscrete", "Box"}, default=None
        The action spaces ``owner`` handles; None does not read the space.
    observations : tuple of {"Discrete", "Box"}, default=None
        The observation spaces ``owner`` handles, and their encoding; None
        does not read the space.
    probe : bool, default=False
        Step a deep copy once (reset with seed 0, an action sampled with
        seed 0) to read the reward's width and the step's info; a vector
        environment is stepped itself.
    info : dict of str, default=None
        Keys the probing step's info must hold, each with what it holds
        (``{"costs": "one cost per constraint"}``).
    vector_reward_space : bool, default=False
        Read the reward's width off ``env.unwrapped.reward_space`` (as
        MO-Gymnasium's environments have), which must exist.

    Returns
    -------
    spec : EnvSpec

    Raises
    ------
    TypeError
        If ``env`` has no ``reset`` and ``step``.
    ValueError
        If a space is not one ``owner`` handles, the reward space is missing,
        or the probing step's info lacks a key.
    """
    if not is_env(env):
        who = owner if method is None else f"{owner}.{method}"
        raise TypeError(f"{who} takes {takes}; got {type(env).__name__}.")
    found = {}
    vector = is_vector_env(env)
    if actions is not None:
        space = env.single_action_space if vector else env.action_space
        kind = _space_kind(space, actions, owner, "action")
        found["action_kind"] = kind
        if kind == "Discrete":
            found["n_actions"] = int(space.n)
        elif kind == "MultiDiscrete":
            found["nvec"] = np.ravel(space.nvec).astype(np.int64)
            found["n_actions"] = int(found["nvec"].size)
        else:
            found["n_actions"] = int(np.prod(space.shape))
            found["action_low"] = np.ravel(space.low)
            found["action_high"] = np.ravel(space.high)
    if observations is not None:
        space = env.single_observation_space if vector else env.observation_space
        if _space_kind(space, observations, owner, "observation") == "Discrete":
            found["n_states"] = int(space.n)
        found["obs_encoding"] = encoding_of_space(space, owner)
    if vector_reward_space:
        reward_space = getattr(getattr(env, "unwrapped", env), "reward_space", None)
        if reward_space is None:
            raise ValueError(
                f"{owner} needs an environment with vector rewards (a "
                "reward_space, as MO-Gymnasium's environments have)."
            )
        found["reward_width"] = int(np.prod(reward_space.shape))
    if probe:
        # A vector environment is probed itself (an asynchronous one cannot
        # be copied); every rollout resets it with its own seeds.
        copied = env if vector else copy.deepcopy(env)
        copied.reset(seed=0)
        copied.action_space.seed(0)
        step = copied.step(copied.action_space.sample())
        if vector:
            n = int(env.num_envs)
            found["reward_width"] = int(np.size(step[1])) // n
            found["info"] = vector_info(step[-1], 0, n)
        else:
            found["reward_width"] = int(np.size(step[1]))
            found["info"] = step[-1]
        for key, holds in (info or {}).items():
            if key not in found["info"]:
                raise ValueError(
                    f"the environment's info has no '{key}': {owner} needs "
                    f"info['{key}'], {holds}, at every step."
                )
    return EnvSpec(**found)


# --- observations --------------------------------------------------------------


def encoding_of_space(space, owner="the agent"):
    """How observations of a Discrete or Box gymnasium space become features.

    ``("discrete", (n,))`` one-hot encodes a state index; ``("grid", (low,
    sizes))`` one-hot encodes each coordinate of an integer Box with at most
    ``MAX_GRID_VALUES`` values per coordinate; ``("raw", (dim,))`` flattens.
    """
    if hasattr(space, "n") and not hasattr(space, "low"):
        return ("discrete", (int(space.n),))
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if low is None:
        raise ValueError(
            f"{owner} needs a Discrete or Box observation space; got "
            f"{type(space).__name__}."
        )
    low, high = np.ravel(low), np.ravel(high)
    if (
        np.issubdtype(space.dtype, np.integer)
        and np.all(np.isfinite(low) & np.isfinite(high))
        and np.all(high - low + 1 <= MAX_GRID_VALUES)
    ):
        return ("grid", (low.astype(int), (high - low + 1).astype(int)))
    return ("raw", (low.size,))


def encoding_of_data(observations):
    """Encoding of offline observations: 1-D integers are discrete states."""
    if observations.ndim == 1:
        if not np.all(observations == np.round(observations)) or observations.min() < 0:
            raise ValueError(
                "1-D observations are read as discrete states and must be "
                "non-negative integers; pass a 2-D array of features otherwise."
            )
        return ("discrete", (int(observations.max()) + 1,))
    return ("raw", (int(np.prod(observations.shape[1:])),))


def feature_dim(encoding):
    """Width of the feature vectors of an encoding."""
    kind, info = encoding
    if kind == "grid":
        return int(info[1].sum())
    return int(info[0])


def check_observations(encoding, X):
    """Inference observations as a numeric array, one row per observation.

    Refuses non-numeric or non-finite values; a single feature observation
    (1-D, for a non-discrete encoding) becomes one row.
    """
    X = np.asarray(X)
    if X.dtype == object or not np.issubdtype(X.dtype, np.number):
        raise ValueError(f"observations must be numeric; got dtype {X.dtype}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("observations contain NaN or infinity.")
    if encoding[0] != "discrete" and X.ndim == 1:
        X = X[None, :]
    return X


def encode_observations(encoding, observations):
    """Feature matrix (n, feature_dim) of a batch of observations."""
    kind, info = encoding
    obs = np.asarray(observations)
    n = len(obs)
    if kind == "discrete":
        if obs.size != n or np.any(obs != np.round(obs)):
            what = "non-integer values" if obs.size == n else f"shape {obs.shape}"
            raise ValueError(
                f"discrete observations must be integer states in [0, {info[0]}), "
                f"one per observation; got {what}."
            )
        states = obs.reshape(n).astype(int)
        if np.any(states < 0) or np.any(states >= info[0]):
            raise ValueError(
                f"discrete observations must be integers in [0, {info[0]}); got "
                f"values in [{states.min()}, {states.max()}]."
            )
        out = np.zeros((n, info[0]))
        out[np.arange(n), states] = 1.0
        return out
    obs = obs.reshape(n, -1).astype(np.float64)
    if obs.shape[1] != (len(info[0]) if kind == "grid" else info[0]):
        raise ValueError(
            f"observations have {obs.shape[1]} values each; the agent was fitted "
            f"on {len(info[0]) if kind == 'grid' else info[0]}."
        )
    if kind == "raw":
        return obs
    low, sizes = info
    index = np.clip(obs.astype(int) - low, 0, sizes - 1)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = np.zeros((n, int(sizes.sum())))
    out[np.arange(n)[:, None], index + offsets] = 1.0
    return out
