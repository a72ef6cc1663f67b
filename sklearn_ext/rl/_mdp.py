"""Tabular MDPs and constrained MDPs, solved exactly by linear programming."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

__all__ = ["LPSolution", "TabularCMDP", "TabularMDP"]


@dataclass(frozen=True)
class LPSolution:
    """An optimal policy of a tabular (C)MDP and what it achieves.

    Parameters
    ----------
    value : float
        Expected discounted return from the initial distribution.
    policy : ndarray of shape (n_states, n_actions)
        Action probabilities per state (uniform where the state is never
        visited).
    occupancy : ndarray of shape (n_states, n_actions)
        Normalised discounted occupancy measure ``d(s, a)`` (sums to one).
    constraint_values : ndarray of shape (n_constraints,)
        Expected discounted cost of each constraint (empty for an MDP).
    """

    value: float
    policy: np.ndarray
    occupancy: np.ndarray
    constraint_values: np.ndarray = field(default_factory=lambda: np.empty(0))


def _as_array(name, value, ndim):
    arr = np.array(value, dtype=float)  # a copy: the caller's array is kept
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity.")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class TabularMDP:
    r"""A finite Markov decision process.

    Parameters
    ----------
    transitions : array-like of shape (n_states, n_actions, n_states)
        ``transitions[s, a, t]`` is the probability of moving from ``s`` to
        ``t`` under ``a``; each ``transitions[s, a]`` sums to one.
    rewards : array-like of shape (n_states, n_actions)
        Expected reward of taking ``a`` in ``s``.
    initial : array-like of shape (n_states,)
        Initial-state distribution.
    gamma : float, default=0.95
        Discount factor in (0, 1]; 1 only for finite-horizon evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularMDP
    >>> # Two states; action 1 moves to state 1, which pays 1 per step.
    >>> P = np.zeros((2, 2, 2)); P[:, 0, 0] = 1; P[:, 1, 1] = 1
    >>> R = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> mdp = TabularMDP(P, R, initial=[1.0, 0.0], gamma=0.5)
    >>> round(mdp.solve_lp().value, 6)   # 0 + 0.5 * 1 / (1 - 0.5)
    1.0
    """

    transitions: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray
    gamma: float = 0.95

    def __post_init__(self):
        P = _as_array("transitions", self.transitions, 3)
        R = _as_array("rewards", self.rewards, self._reward_ndim)
        mu = _as_array("initial", self.initial, 1)
        S, A, S2 = P.shape
        if S2 != S:
            raise ValueError(
                f"transitions must have shape (n_states, n_actions, n_states); "
                f"got {P.shape}."
            )
        self._check_reward_shape(R.shape, S, A)
        if mu.shape != (S,):
            raise ValueError(f"initial must have shape {(S,)}; got {mu.shape}.")
        if (P < 0).any() or not np.allclose(P.sum(axis=2), 1.0, atol=1e-8):
            raise ValueError(
                "each transitions[s, a] must be a probability distribution "
                "(non-negative, summing to one)."
            )
        if (mu < 0).any() or not np.isclose(mu.sum(), 1.0, atol=1e-8):
            raise ValueError("initial must be a probability distribution.")
        if not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must lie in (0, 1]; got {self.gamma!r}.")
        object.__setattr__(self, "transitions", P)
        object.__setattr__(self, "rewards", R)
        object.__setattr__(self, "initial", mu)

    # The reward table's dimension: (n_states, n_actions) here, one more
    # leading axis (objectives) in TabularMOMDP.
    _reward_ndim = 2

    def _check_reward_shape(self, shape, S, A):
        if shape != (S, A):
            raise ValueError(f"rewards must have shape {(S, A)}; got {shape}.")

    @property
    def n_states(self):
        return self.transitions.shape[0]

    @property
    def n_actions(self):
        return self.transitions.shape[1]

    def _policy_matrix(self, policy):
        """(n_states, n_actions) probabilities from actions or probabilities."""
        policy = np.asarray(policy)
        S, A = self.n_states, self.n_actions
        if policy.shape == (S,):
            if (
                not np.issubdtype(policy.dtype, np.integer)
                or ((policy < 0) | (policy >= A)).any()
            ):
                raise ValueError(
                    f"a deterministic policy gives one action in [0, {A}) per "
                    "state, as integers."
                )
            return np.eye(A)[policy]
        if policy.shape == (S, A):
            policy = policy.astype(float)
            if (policy < 0).any() or not np.allclose(policy.sum(axis=1), 1.0):
                raise ValueError("each row of a stochastic policy must sum to one.")
            return policy
        raise ValueError(
            f"policy must have shape ({S},) (actions) or ({S}, {A}) "
            f"(probabilities); got {policy.shape}."
        )

    def evaluate(self, policy, *, rewards=None, horizon=None):
        """Exact expected return of a policy from the initial distribution.

        Parameters
        ----------
        policy : array-like of shape (n_states,) or (n_states, n_actions)
            An action per state, or action probabilities per state.
        rewards : array-like of shape (n_states, n_actions), default=None
            Another reward (e.g. a constraint cost); the MDP's by default.
        horizon : int, default=None
            Finite horizon (sum of the first ``horizon`` discounted rewards);
            None is the infinite discounted sum, which needs ``gamma < 1``.

        Returns
        -------
        value : float
            The expected (discounted) return.
        """
        pi = self._policy_matrix(policy)
        R = self.rewards if rewards is None else _as_array("rewards", rewards, 2)
        P_pi = np.einsum("sa,sat->st", pi, self.transitions)
        r_pi = np.sum(pi * R, axis=1)
        if horizon is None:
            if self.gamma >= 1:
                raise ValueError("an infinite-horizon value needs gamma < 1.")
            V = np.linalg.solve(np.eye(self.n_states) - self.gamma * P_pi, r_pi)
        else:
            V = np.zeros(self.n_states)
            for _ in range(int(horizon)):
                V = r_pi + self.gamma * P_pi @ V
        return float(self.initial @ V)

    def _lp_constraints(self):
        """Flow conservation of the normalised discounted occupancy."""
        S, A = self.n_states, self.n_actions
        g = self.gamma
        # sum_a d(t, a) - g sum_{s,a} P(t | s, a) d(s, a) = (1 - g) mu(t)
        A_eq = (
            np.repeat(np.eye(S), A, axis=1) - g * self.transitions.reshape(S * A, S).T
        )
        return A_eq, (1 - g) * self.initial

    def _solve(self, costs=None, limits=None):
        if self.gamma >= 1:
            raise ValueError("the occupancy LP needs gamma < 1.")
        S, A = self.n_states, self.n_actions
        A_eq, b_eq = self._lp_constraints()
        scale = 1.0 / (1.0 - self.gamma)
        A_ub = b_ub = None
        if costs is not None:
            A_ub = scale * costs.reshape(len(costs), S * A)
            b_ub = limits
        res = linprog(
            -scale * self.rewards.ravel(),
            A_ub=A_ub,
            b_ub=b_ub,
            A_eq=A_eq,
            b_eq=b_eq,
            bounds=(0, None),
            method="highs",
        )
        if res.status == 2:
            raise ValueError(
                "the constraints are infeasible: no policy keeps every expected "
                f"discounted cost within its limit {np.asarray(limits).tolist()}."
            )
        if res.status != 0:
            raise RuntimeError(f"HiGHS did not solve the occupancy LP: {res.message}")
        d = np.clip(res.x.reshape(S, A), 0.0, None)
        mass = d.sum(axis=1, keepdims=True)
        policy = np.where(mass > 1e-12, d / np.where(mass > 0, mass, 1), 1.0 / A)
        values = (
            np.empty(0) if costs is None else scale * np.einsum("ksa,sa->k", costs, d)
        )
        return LPSolution(
            value=float(scale * np.sum(d * self.rewards)),
            policy=policy,
            occupancy=d,
            constraint_values=values,
        )

    def solve_lp(self):
        """Optimal policy by the occupancy-measure LP (scipy's HiGHS).

        Maximises :math:`\\sum_{s,a} d(s,a) r(s,a) / (1-\\gamma)` over
        :math:`d \\ge 0` with :math:`\\sum_a d(t,a) = (1-\\gamma)\\mu(t) +
        \\gamma \\sum_{s,a} P(t|s,a) d(s,a)`.

        Returns
        -------
        solution : LPSolution
            The optimal value, policy and occupancy measure.
        """
        return self._solve()


@dataclass(frozen=True)
class TabularCMDP(TabularMDP):
    """A finite constrained MDP: an MDP and expected-cost limits.

    Parameters
    ----------
    transitions : array-like of shape (n_states, n_actions, n_states)
        Transition probabilities, as in :class:`TabularMDP`.
    rewards : array-like of shape (n_states, n_actions)
        Expected rewards.
    initial : array-like of shape (n_states,)
        Initial-state distribution.
    gamma : float, default=0.95
        Discount factor in (0, 1); the LP needs it below 1.
    costs : array-like of shape (n_constraints, n_states, n_actions)
        Per-step cost of each constraint.
    cost_limits : array-like of shape (n_constraints,)
        Upper limit of each expected discounted cost.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularCMDP
    >>> # One state, two actions: action 1 pays 1 and costs 1, action 0 neither.
    >>> P = np.ones((1, 2, 1)); R = np.array([[0.0, 1.0]])
    >>> cmdp = TabularCMDP(P, R, initial=[1.0], gamma=0.5,
    ...                    costs=[[[0.0, 1.0]]], cost_limits=[1.0])
    >>> sol = cmdp.solve_lp()      # the cost budget allows action 1 half the time
    >>> round(sol.value, 6), np.round(sol.policy, 3).tolist()
    (1.0, [[0.5, 0.5]])
    """

    costs: np.ndarray = None
    cost_limits: np.ndarray = None

    # TabularMOMDP allows no costs at all (unconstrained max-min); a
    # TabularCMDP needs both.
    _costs_optional = False

    def __post_init__(self):
        super().__post_init__()
        if self.costs is None and self.cost_limits is None and self._costs_optional:
            return
        if self.costs is None or self.cost_limits is None:
            raise ValueError(
                f"a {type(self).__name__} needs costs and cost_limits together"
                + (" (or neither)." if self._costs_optional else ".")
            )
        C = _as_array("costs", self.costs, 3)
        L = _as_array("cost_limits", self.cost_limits, 1)
        if C.shape[1:] != (self.n_states, self.n_actions):
            raise ValueError(
                f"costs must have shape (n_constraints, {self.n_states}, "
                f"{self.n_actions}); got {C.shape}."
            )
        if L.shape != (C.shape[0],):
            raise ValueError(
                f"cost_limits must have one entry per constraint ({C.shape[0]}); "
                f"got shape {L.shape}."
            )
        object.__setattr__(self, "costs", C)
        object.__setattr__(self, "cost_limits", L)

    def solve_lp(self):
        """Optimal policy under the cost limits, by the occupancy-measure LP.

        The MDP's LP with, for each constraint ``k``,
        :math:`\\sum_{s,a} d(s,a) c_k(s,a) / (1-\\gamma) \\le` ``cost_limits[k]``.
        The optimum may be stochastic.

        Returns
        -------
        solution : LPSolution
            The optimal value, policy, occupancy and constraint values.

        Raises
        ------
        ValueError
            When no policy satisfies the limits (HiGHS reports the LP
            infeasible).
        """
        return self._solve(self.costs, self.cost_limits)
