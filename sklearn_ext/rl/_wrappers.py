"""Environments of other conventions, in the family's form."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.rl._base import is_env

__all__ = ["SafetyGymnasiumWrapper"]


class SafetyGymnasiumWrapper:
    """Turn a Safety-Gymnasium environment's step into the family's form.

    Safety-Gymnasium steps return six values, ``(observation, reward, cost,
    terminated, truncated, info)``; the family's constrained agents
    (:class:`LagrangianActorCritic`, :class:`ConstrainedMaxMinMORL`) read
    gymnasium's five, with the costs of the step in ``info["costs"]`` (one
    per constraint). This wrapper returns ``(observation, reward, terminated,
    truncated, info)`` with ``info["costs"]`` the step's cost as a 1-D
    float64 array (a scalar cost becomes one entry), leaving the wrapped
    environment's info untouched. An environment already converted to five
    values with the cost in ``info["cost"]`` (Safety-Gymnasium's
    ``SafetyGymnasium2Gymnasium``) is read the same way. Everything else
    (spaces, ``reset``, ``render``, ``close``, ``unwrapped``) is the wrapped
    environment's.

    It is plain Python, not a ``gymnasium.Wrapper``: safety-gymnasium 1.0
    pins an older gymnasium than the family's extra, so the wrapper relies
    only on the step convention, which its tests check with a stand-in.

    Parameters
    ----------
    env : object
        An environment with ``reset`` and a six-value ``step``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import SafetyGymnasiumWrapper
    >>> class Stand:   # a one-step stand-in with Safety-Gymnasium's step
    ...     action_space = observation_space = None
    ...     def reset(self, seed=None, options=None):
    ...         return 0, {}
    ...     def step(self, action):
    ...         return 0, 1.0, 0.5, True, False, {}
    >>> env = SafetyGymnasiumWrapper(Stand())
    >>> env.reset(seed=0)
    (0, {})
    >>> obs, reward, terminated, truncated, info = env.step(0)
    >>> info["costs"]
    array([0.5])
    """

    def __init__(self, env):
        if not is_env(env):
            raise TypeError(
                "SafetyGymnasiumWrapper wraps an environment with reset and step; "
                f"got {type(env).__name__}."
            )
        self.env = env

    def __getattr__(self, name):
        # Only reached for names the wrapper lacks; "env" itself missing (as
        # during unpickling) must not recurse.
        if name == "env" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self):
        return getattr(self.env, "unwrapped", self.env)

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        out = self.env.step(action)
        if len(out) == 6:
            obs, reward, cost, terminated, truncated, info = out
        elif len(out) == 5 and "cost" in out[-1]:
            obs, reward, terminated, truncated, info = out
            cost = info["cost"]
        else:
            raise ValueError(
                "SafetyGymnasiumWrapper needs a step returning (observation, "
                "reward, cost, terminated, truncated, info), or five values with "
                f"info['cost']; got {len(out)} values"
                + ("" if len(out) != 5 else " and no info['cost']")
                + "."
            )
        info = dict(info)
        info["costs"] = np.atleast_1d(np.asarray(cost, dtype=np.float64)).ravel()
        return obs, reward, terminated, truncated, info

    def __repr__(self):
        return f"SafetyGymnasiumWrapper({self.env!r})"
