"""Tabular Q-learning: the family's reference agent."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext.rl._base import (
    NOT_A_DATA_ESTIMATOR,
    check_env,
    env_list,
    is_vector_env,
    rl_tags,
)
from sklearn_ext.rl._rollouts import (
    TRANSITION_KEYS,
    check_transitions,
    episode_returns,
    run_episodes,
)
from sklearn_ext.utils._messages import warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    _fit_context,
    check_is_fitted,
)
from sklearn_ext.utils._torch import child_seeds

__all__ = ["TabularQLearning"]


class TabularQLearning(BaseEstimator):
    r"""Q-learning for finite state and action spaces, online or offline.

    ``fit`` takes either

    - a gymnasium environment with ``Discrete`` observation and action spaces,
      or a list of them (tasks; each episode picks one at random): online
      Q-learning with :math:`\varepsilon`-greedy exploration for
      ``total_timesteps`` environment steps, the step size of a state-action
      pair visited
      :math:`n` times being ``learning_rate`` :math:`/ n^{0.6}` (a polynomial
      schedule under which tabular Q-learning converges, Even-Dar and Mansour
      2003);
    - or an offline dataset, the family's one form: a dict of arrays with
      keys ``observations``, ``actions``, ``rewards``,
      ``next_observations`` and ``terminals`` (as d4rl and minari name them;
      here integer states and actions, scalar rewards): offline, Q-value
      iteration on the empirical model of the data (the fixed point that
      repeated Q-learning sweeps over it converge to), until the largest
      change is below ``tol`` or ``max_iter`` sweeps. State-action pairs
      absent from the data keep the value 0.

    A multi-task environment whose observation carries the task (as
    :class:`GoalGridWorld`'s does) makes the fitted greedy policy a
    multi-task policy, whose performance on unseen tasks
    :class:`MultiTaskGuarantee` certifies.

    Parameters
    ----------
    gamma : float, default=0.95
        Discount factor in [0, 1).
    learning_rate : float, default=1.0
        Scale of the step size ``learning_rate / n**0.6`` (online), in (0, 1].
    epsilon : float, default=0.3
        Probability of a random action during online training.
    total_timesteps : int, default=70000
        Online training budget in environment steps (the family's name for
        an environment agent's budget); the last episode stops when the
        budget is spent. The default is about 10,000 episodes of
        :class:`GoalGridWorld`.
    max_iter : int, default=1000
        Offline sweeps at most.
    tol : float, default=1e-8
        Offline stopping threshold on the largest change of a Q-value.
    max_episode_steps : int, default=1000
        Safety cap on an online episode's length.
    random_state : int, RandomState instance or None, default=None
        Seeds exploration and the environments' resets.

    Attributes
    ----------
    q_values_ : ndarray of shape (n_states, n_actions)
    n_states_ : int
    n_actions_ : int
    training_returns_ : ndarray of shape (n_training_episodes,)
        Return of each online training episode (empty offline).
    n_timesteps_ : int
        Environment steps taken (``total_timesteps`` online, 0 offline).
    n_iter_ : int
        Online episodes run, or offline sweeps.

    References
    ----------
    .. [1] C. J. C. H. Watkins and P. Dayan, "Q-learning", Machine Learning
       8, 279-292, 1992.
    .. [2] E. Even-Dar and Y. Mansour, "Learning Rates for Q-learning",
       JMLR 5, 1-25, 2003.

    Examples
    --------
    >>> from sklearn_ext.rl import BridgeWorld, TabularQLearning
    >>> agent = TabularQLearning(total_timesteps=1000, random_state=0)
    >>> agent = agent.fit(BridgeWorld(width=4, slip=0.05))
    >>> agent.predict([0, 1, 2]).tolist()        # always step forward
    [0, 0, 0]
    """

    _parameter_constraints = {
        "gamma": [Interval(Real, 0, 1, closed="left")],
        "learning_rate": [Interval(Real, 0, 1, closed="right")],
        "epsilon": [Interval(Real, 0, 1, closed="both")],
        "total_timesteps": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_episode_steps": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    _paper = "Watkins & Dayan, Machine Learning 1992 (the family's reference agent)"
    _bench_name = "rl_guarantee"
    _not_a_data_estimator = NOT_A_DATA_ESTIMATOR

    def __init__(
        self,
        *,
        gamma=0.95,
        learning_rate=1.0,
        epsilon=0.3,
        total_timesteps=70000,
        max_iter=1000,
        tol=1e-8,
        max_episode_steps=1000,
        random_state=None,
    ):
        self.gamma = gamma
        self.learning_rate = learning_rate
        self.epsilon = epsilon
        self.total_timesteps = total_timesteps
        self.max_iter = max_iter
        self.tol = tol
        self.max_episode_steps = max_episode_steps
        self.random_state = random_state

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__())

    @classmethod
    def _get_test_params(cls):
        return {"total_timesteps": 1400, "random_state": 0}

    # --- fitting -------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn Q-values from an environment, a list of them, or transitions.

        Parameters
        ----------
        X : gymnasium.Env, list of gymnasium.Env, or dict of array-like
            Environment(s) with ``Discrete`` spaces for online learning, or
            an offline dataset (a dict with keys ``observations``,
            ``actions``, ``rewards``, ``next_observations``, ``terminals``).

        y : None
            Ignored.

        Returns
        -------
        self : TabularQLearning
            The fitted agent.
        """
        envs = env_list(X, "TabularQLearning")
        if envs is not None:
            self._fit_online(envs)
        else:
            self._fit_offline(self._check_transitions(X))
        self._policy_rng_ = np.random.RandomState(
            check_random_state(self.random_state).randint(2**31 - 1)
        )
        return self

    @staticmethod
    def _discrete_sizes(env):
        spec = check_env(
            env, "TabularQLearning", actions=("Discrete",), observations=("Discrete",)
        )
        return spec.n_states, spec.n_actions

    @staticmethod
    def _refuse_vector(envs, method):
        if is_vector_env(envs[0]):
            raise TypeError(
                f"TabularQLearning.{method} updates its table after every step "
                "of one episode at a time, so it takes no vector environment; "
                "give its sub-environments as a list."
            )

    def _fit_online(self, envs):
        self._refuse_vector(envs, "fit")
        sizes = {self._discrete_sizes(env) for env in envs}
        if len(sizes) != 1:
            raise ValueError(
                f"the environments' spaces differ: {sorted(sizes)}; a tabular "
                "agent needs one observation and one action space."
            )
        (S, A) = sizes.pop()
        rng = check_random_state(self.random_state)
        seeds = child_seeds(rng, len(envs))
        Q = np.zeros((S, A))
        visits = np.zeros((S, A))
        returns = []
        started = [False] * len(envs)
        steps = 0

        def act(observations):
            # epsilon-greedy, ties broken at random
            if rng.random_sample() < self.epsilon:
                return [int(rng.randint(A))]
            q = Q[int(observations[0])]
            best = np.flatnonzero(q == q.max())
            return [int(best[rng.randint(len(best))])]

        def learn(i, obs, action, reward, nxt, terminated, info):
            nonlocal steps
            steps += 1
            if np.size(reward) != 1:
                raise ValueError(
                    "TabularQLearning needs a scalar reward; the environment "
                    f"returned {np.size(reward)} values."
                )
            obs, nxt = int(obs), int(nxt)
            visits[obs, action] += 1
            step = self.learning_rate / visits[obs, action] ** 0.6
            target = reward + (0.0 if terminated else self.gamma * Q[nxt].max())
            Q[obs, action] += step * (target - Q[obs, action])

        while steps < self.total_timesteps:
            i = int(rng.randint(len(envs)))
            seed = None if started[i] else seeds[i]
            started[i] = True
            length = min(self.max_episode_steps, self.total_timesteps - steps)
            returns.append(
                float(run_episodes(act, [envs[i]], [seed], length, on_step=learn)[0])
            )
        self.q_values_ = Q
        self.n_states_, self.n_actions_ = S, A
        self.training_returns_ = np.asarray(returns)
        self.n_timesteps_ = steps
        self.n_iter_ = len(returns)

    def _check_transitions(self, X):
        if not isinstance(X, dict):
            raise TypeError(
                "TabularQLearning.fit takes a gymnasium environment, a list of "
                f"them, or an offline dataset (a dict with keys {TRANSITION_KEYS}); "
                f"got {type(X).__name__}."
            )
        data = check_transitions(X, "TabularQLearning", discrete=True)
        if data["rewards"].shape[1] != 1:
            raise ValueError(
                "TabularQLearning needs one scalar reward per transition; got "
                f"{data['rewards'].shape[1]} per row."
            )
        return data

    def _fit_offline(self, data):
        s, a, s2 = data["observations"], data["actions"], data["next_observations"]
        r, done = data["rewards"][:, 0], data["terminals"]
        S = int(max(s.max(), s2.max())) + 1
        A = int(a.max()) + 1
        counts = np.zeros((S, A))
        np.add.at(counts, (s, a), 1.0)
        seen = counts > 0
        safe = np.where(seen, counts, 1.0)
        mean_r = np.zeros((S, A))
        np.add.at(mean_r, (s, a), r)
        mean_r /= safe
        P = np.zeros((S, A, S))  # continuation probabilities (not terminated)
        np.add.at(P, (s[~done], a[~done], s2[~done]), 1.0)
        P /= safe[:, :, None]
        Q = np.zeros((S, A))
        n_iter, change = 0, np.inf
        while n_iter < self.max_iter and change > self.tol:
            new = np.where(seen, mean_r + self.gamma * P @ Q.max(axis=1), 0.0)
            change = np.abs(new - Q).max()
            Q, n_iter = new, n_iter + 1
        if change > self.tol:
            warn(
                f"TabularQLearning did not converge in max_iter={self.max_iter} "
                f"sweeps (last change {change:.2e} > tol={self.tol}).",
                ConvergenceWarning,
            )
        self.q_values_ = Q
        self.n_states_, self.n_actions_ = S, A
        self.training_returns_ = np.empty(0)
        self.n_timesteps_ = 0
        self.n_iter_ = n_iter

    # --- acting --------------------------------------------------------------

    def predict(self, observations, deterministic=True):
        """Greedy actions (lowest index among ties), or exploring draws.

        Parameters
        ----------
        observations : array-like of shape (n_observations,) or \
                (n_observations, 1)
            State indices.
        deterministic : bool, default=True
            True: the greedy action. False: the epsilon-greedy policy the
            agent trained with (a uniformly random action with probability
            ``epsilon``), drawn from a generator that ``fit`` seeds from
            ``random_state``, so the draws after a fit are reproducible.

        Returns
        -------
        actions : ndarray of shape (n_observations,)
            The action of each observation.
        """
        check_is_fitted(self)
        obs = np.asarray(observations)
        if obs.ndim == 2 and obs.shape[1] == 1:
            obs = obs[:, 0]
        if obs.ndim != 1:
            raise ValueError(
                "observations must be a 1-D array of state indices (or one "
                f"column); got shape {obs.shape}."
            )
        if obs.size and (
            not np.all(np.isfinite(obs.astype(float)))
            or (obs != np.round(obs)).any()
            or (obs < 0).any()
            or (obs >= self.n_states_).any()
        ):
            raise ValueError(
                f"observations must be integer states in [0, {self.n_states_})."
            )
        greedy = np.argmax(self.q_values_[obs.astype(int)], axis=1)
        if deterministic:
            return greedy
        rng = self._policy_rng_
        explore = rng.random_sample(len(greedy)) < self.epsilon
        return np.where(explore, rng.randint(self.n_actions_, size=len(greedy)), greedy)

    def score(self, X, y=None, *, n_episodes=100, random_state=0):
        """Mean undiscounted return of the greedy policy.

        Parameters
        ----------
        X : gymnasium.Env or list of gymnasium.Env
            Environment(s); with a list, the mean over them (each run for
            ``n_episodes`` episodes), so that a search over a list of tasks
            scores on held-out tasks.
        y : None
            Ignored.
        n_episodes : int, default=100
            Episodes per environment.
        random_state : int, default=0
            Seeds the environments' first resets.

        Returns
        -------
        score : float
            The mean return.
        """
        check_is_fitted(self)
        envs = env_list(X, "TabularQLearning", "score")
        if envs is None:
            raise TypeError(
                "score needs a gymnasium environment or a list of them (a mean "
                "return); a transition table cannot score a policy."
            )
        self._refuse_vector(envs, "score")
        seeds = child_seeds(random_state, len(envs))
        return float(
            np.mean(
                [
                    episode_returns(self, e, n_episodes, s, self.max_episode_steps)
                    for e, s in zip(envs, seeds)
                ]
            )
        )


def _planner_success(world, task):
    """Success probability of the discounted LP optimum of one task's model."""
    policy = world.to_mdp(task, gamma=0.95).solve_lp().policy
    return world.to_mdp(task).evaluate(policy, horizon=world.horizon)
