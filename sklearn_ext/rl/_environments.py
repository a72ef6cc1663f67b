"""Gymnasium environments that ship with the package (extra ``rl``).

Both have a tabular model (:meth:`to_mdp`) so that a policy's expected return
on a task can be computed exactly, and the value of sampled returns checked.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.rl._base import require_gymnasium
from sklearn_ext.rl._mdp import TabularMDP

gym = require_gymnasium("sklearn_ext.rl's environments")
spaces = gym.spaces

__all__ = ["BridgeWorld", "GoalGridWorld"]

# up, right, down, left as (row, column) moves
_MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])


class BridgeWorld(gym.Env):
    """A bridge of ``width`` cells: each step forward slips off with ``slip``.

    Observation: the current cell (``Discrete(width)``). Actions: 0 steps
    forward, 1 steps back (towards cell 0, staying there at the start); either
    move slips off the bridge with probability ``slip``, ending the episode
    with return 0. Reaching the last cell ends it with return 1. Episodes are
    truncated after ``4 * (width - 1)`` steps.

    Parameters
    ----------
    width : int, default=4
        Cells of the bridge (at least 2).
    slip : float, default=0.05
        Probability that a move slips off the bridge.

    Examples
    --------
    >>> from sklearn_ext.rl import BridgeWorld
    >>> env = BridgeWorld(width=3, slip=0.0)
    >>> obs, _ = env.reset(seed=0)
    >>> env.step(0)[:3], env.step(0)[:3]
    ((1, 0.0, False), (2, 1.0, True))
    """

    metadata = {"render_modes": []}

    def __init__(self, width=4, slip=0.05):
        if int(width) != width or width < 2:
            raise ValueError(f"width must be an integer >= 2; got {width!r}.")
        if not 0 <= slip <= 1:
            raise ValueError(f"slip must lie in [0, 1]; got {slip!r}.")
        self.width = int(width)
        self.slip = float(slip)
        self.horizon = 4 * (self.width - 1)
        self.observation_space = spaces.Discrete(self.width)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        """Start an episode at cell 0.

        Parameters
        ----------
        seed : int, default=None
            Seeds the environment's generator (gymnasium's convention).
        options : dict, default=None
            Unused.

        Returns
        -------
        observation : int
            The cell, 0.
        info : dict
            Empty.
        """
        super().reset(seed=seed)
        self._cell, self._t = 0, 0
        return self._cell, {}

    def step(self, action):
        """Move forward (0) or back (1); either may slip off the bridge.

        Parameters
        ----------
        action : int
            0 or 1.

        Returns
        -------
        observation : int
            The new cell.
        reward : float
            1 on reaching the last cell, else 0.
        terminated : bool
            Reached the last cell or slipped off.
        truncated : bool
            The step limit ``4 * (width - 1)`` was reached.
        info : dict
            ``{"slipped": True}`` after a slip.
        """
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 or 1; got {action!r}.")
        self._t += 1
        if self.np_random.random() < self.slip:
            return self._cell, 0.0, True, False, {"slipped": True}
        self._cell = (
            min(self._cell + 1, self.width - 1)
            if action == 0
            else max(self._cell - 1, 0)
        )
        done = self._cell == self.width - 1
        truncated = not done and self._t >= self.horizon
        return self._cell, float(done), done, truncated, {}


class GoalGridWorld(gym.Env):
    """A slippery grid with holes and a goal that changes from task to task.

    The agent starts in the top-left cell of a ``size x size`` grid and must
    reach the task's goal within ``horizon`` steps (return 1) without falling
    into a hole (return 0). With probability ``slip`` the chosen move is
    replaced by a uniformly random one; moves off the grid stay put.

    A task is a goal (index into ``goals``) and a slip probability. When
    ``task`` is None each ``reset`` draws a new task: the goal with
    ``goal_weights``, the slip uniformly in ``slip_range``. The observation
    encodes the cell and the goal, ``goal * size**2 + cell``, so one tabular
    policy serves every task; the slip is not observed.

    Parameters
    ----------
    size : int, default=5
        Side of the grid.
    goals : sequence of (row, col), default=None
        Possible goals; None takes every cell of the last row and last column
        that is not a hole.
    goal_weights : sequence of float, default=None
        Probability of each goal; None is uniform.
    slip_range : (float, float), default=(0.0, 0.3)
        Range of the task's slip probability (drawn uniformly).
    holes : sequence of (row, col), default=((1, 1), (1, 3), (3, 1), (3, 3))
        Cells that end the episode with return 0.
    horizon : int, default=None
        Steps before truncation; None is ``2 * (size - 1) + 4``.
    task : dict, default=None
        ``{"goal": int, "slip": float}`` to fix the task.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import GoalGridWorld
    >>> env = GoalGridWorld.make_task(np.random.default_rng(0))
    >>> sorted(env.task)
    ['goal', 'slip']
    >>> obs, _ = env.reset(seed=0)
    >>> env.observation_space.contains(obs)
    True
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        size=5,
        goals=None,
        goal_weights=None,
        slip_range=(0.0, 0.3),
        holes=((1, 1), (1, 3), (3, 1), (3, 3)),
        horizon=None,
        task=None,
    ):
        if int(size) != size or size < 2:
            raise ValueError(f"size must be an integer >= 2; got {size!r}.")
        self.size = int(size)
        self.holes = tuple(tuple(int(c) for c in h) for h in holes)
        cells = {(r, c) for r in range(size) for c in range(size)}
        if not set(self.holes) <= cells or (0, 0) in self.holes:
            raise ValueError("holes must be cells of the grid other than (0, 0).")
        if goals is None:
            goals = [
                (r, c)
                for r in range(size)
                for c in range(size)
                if (r == size - 1 or c == size - 1) and (r, c) not in self.holes
            ]
        self.goals = tuple(tuple(int(c) for c in g) for g in goals)
        if not self.goals or not set(self.goals) <= cells - set(self.holes) - {(0, 0)}:
            raise ValueError(
                "goals must be cells of the grid, neither holes nor the start."
            )
        if goal_weights is None:
            goal_weights = np.full(len(self.goals), 1.0 / len(self.goals))
        self.goal_weights = np.asarray(goal_weights, dtype=float)
        if self.goal_weights.shape != (len(self.goals),) or not np.isclose(
            self.goal_weights.sum(), 1.0
        ):
            raise ValueError("goal_weights must give one probability per goal.")
        lo, hi = slip_range
        if not 0 <= lo <= hi <= 1:
            raise ValueError(f"slip_range must lie in [0, 1]; got {slip_range!r}.")
        self.slip_range = (float(lo), float(hi))
        self.horizon = int(2 * (size - 1) + 4 if horizon is None else horizon)
        self.task = None if task is None else self._check_task(task)
        self.observation_space = spaces.Discrete(len(self.goals) * self.size**2)
        self.action_space = spaces.Discrete(4)

    def _check_task(self, task):
        goal, slip = int(task["goal"]), float(task["slip"])
        if not 0 <= goal < len(self.goals) or not 0 <= slip <= 1:
            raise ValueError(f"invalid task {task!r}.")
        return {"goal": goal, "slip": slip}

    def sample_task(self, rng):
        """Draw a task from the task distribution.

        Parameters
        ----------
        rng : int, RandomState or numpy Generator
            Source of randomness.

        Returns
        -------
        task : dict
            ``{"goal": int, "slip": float}``.
        """
        rng = (
            check_random_state(rng) if not isinstance(rng, np.random.Generator) else rng
        )
        goal = int(rng.choice(len(self.goals), p=self.goal_weights))
        slip = float(rng.uniform(*self.slip_range))
        return {"goal": goal, "slip": slip}

    @classmethod
    def make_task(cls, rng, **params):
        """Build an environment fixed to one task drawn with ``rng``.

        Parameters
        ----------
        rng : int, RandomState or numpy Generator
            Draws the task.
        **params
            Constructor parameters of the environment (not ``task``).

        Returns
        -------
        env : GoalGridWorld
            The environment of the drawn task.
        """
        sampler = cls(**params)
        return cls(**params, task=sampler.sample_task(rng))

    def _cell_index(self, rc):
        return rc[0] * self.size + rc[1]

    def reset(self, *, seed=None, options=None):
        """Start an episode in the top-left cell, drawing a task unless fixed.

        Parameters
        ----------
        seed : int, default=None
            Seeds the environment's generator (gymnasium's convention).
        options : dict, default=None
            Unused.

        Returns
        -------
        observation : int
            ``goal * size**2 + cell``.
        info : dict
            ``{"task": {"goal": int, "slip": float}}``.
        """
        super().reset(seed=seed)
        self._current = self.task or self.sample_task(self.np_random)
        self._cell, self._t = 0, 0
        return self._obs(), {"task": dict(self._current)}

    def _obs(self):
        return self._current["goal"] * self.size**2 + self._cell

    def step(self, action):
        """Move up, right, down or left; the move may slip.

        Parameters
        ----------
        action : int
            0 (up), 1 (right), 2 (down) or 3 (left).

        Returns
        -------
        observation : int
            ``goal * size**2 + cell``.
        reward : float
            1 on entering the goal, else 0.
        terminated : bool
            Reached the goal or fell into a hole.
        truncated : bool
            The horizon was reached.
        info : dict
            Empty.
        """
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in 0..3; got {action!r}.")
        self._t += 1
        if self.np_random.random() < self._current["slip"]:
            action = int(self.np_random.integers(4))
        row, col = divmod(self._cell, self.size)
        r, c = np.clip(np.array([row, col]) + _MOVES[action], 0, self.size - 1)
        self._cell = int(r * self.size + c)
        goal = self._cell_index(self.goals[self._current["goal"]])
        hole = (int(r), int(c)) in self.holes
        success = self._cell == goal
        truncated = not (success or hole) and self._t >= self.horizon
        return self._obs(), float(success), success or hole, truncated, {}

    def to_mdp(self, task=None, gamma=1.0):
        """The tabular model of one task (states are cells).

        The goal and the holes are absorbing with no reward; entering the goal
        pays 1. With ``gamma=1`` and ``horizon=self.horizon``,
        :meth:`TabularMDP.evaluate` gives a policy's exact success probability.

        Parameters
        ----------
        task : dict, default=None
            The fixed task by default.
        gamma : float, default=1.0
            Discount factor of the model.

        Returns
        -------
        mdp : TabularMDP
            The task's model over the grid's cells.
        """
        task = self._check_task(task if task is not None else self.task)
        S, n = self.size**2, self.size
        goal = self._cell_index(self.goals[task["goal"]])
        absorbing = {goal, *(self._cell_index(h) for h in self.holes)}
        P = np.zeros((S, 4, S))
        for s in range(S):
            if s in absorbing:
                P[s, :, s] = 1.0
                continue
            row, col = divmod(s, n)
            dest = [
                int(r * n + c)
                for r, c in np.clip(np.array([row, col]) + _MOVES, 0, n - 1)
            ]
            for a in range(4):
                P[s, a, dest[a]] += 1.0 - task["slip"]
                for b in range(4):
                    P[s, a, dest[b]] += task["slip"] / 4.0
        R = P[:, :, goal].copy()
        R[list(absorbing)] = 0.0
        initial = np.eye(S)[0]
        return TabularMDP(P, R, initial=initial, gamma=gamma)

    def task_policy(self, policy, task=None):
        """The actions a policy over observations takes in each cell of a task.

        Parameters
        ----------
        policy : object with ``predict(observations)``, or callable
            The policy over observations.
        task : dict, default=None
            The fixed task by default.

        Returns
        -------
        actions : ndarray of shape (size**2,)
            The action in each cell.
        """
        from sklearn_ext.rl._rollouts import actions_of

        task = self._check_task(task if task is not None else self.task)
        obs = task["goal"] * self.size**2 + np.arange(self.size**2)
        return np.asarray(actions_of(policy, obs), dtype=int)

    def success_probability(self, policy, task=None):
        """Compute the exact probability of reaching the goal within the horizon.

        Parameters
        ----------
        policy : object with ``predict(observations)``, or callable
            The policy over observations.
        task : dict, default=None
            The fixed task by default.

        Returns
        -------
        probability : float
            Success probability of ``policy`` on the task.
        """
        mdp = self.to_mdp(task, gamma=1.0)
        return mdp.evaluate(self.task_policy(policy, task), horizon=self.horizon)
