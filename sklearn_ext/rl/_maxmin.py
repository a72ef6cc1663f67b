"""Constrained multi-objective RL with the max-min criterion, tabular part.

A multi-objective MDP has ``K`` reward tables and, optionally, ``L`` cost
tables. The max-min criterion asks for a policy that maximises the worst
objective, ``min_k J_k(pi)``, while every expected discounted cost stays
within its limit, ``J_c,l(pi) <= limit_l`` (Park, Nam, Byeon, Leshem and
Sung, ICML 2026).

Over discounted occupancy measures this is a linear program
(:func:`solve_maxmin_lp`): a variable ``t`` below every objective, maximised.
Its optimum is in general a *stochastic* policy that no linear scalarisation
``sum_k w_k J_k`` returns (:func:`solve_weighted_lp`, the utilitarian
baseline, whose LP optimum is a vertex). The Lagrangian dual of the problem,
``min over w in the simplex and u >= 0 of max over pi of sum_k w_k J_k(pi) -
sum_l u_l (J_c,l(pi) - limit_l)``, gives the learning algorithm
(:func:`maxmin_dual_descent`): an entropy-regularised best response of the
policy to the weights (:func:`soft_policy`), then projected gradient descent
of the weights on the simplex and of the multipliers on the non-negative
orthant.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from scipy.optimize import linprog
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext.rl._lagrangian_tabular import (
    _q_values,
    check_reachable_limits,
    multiplier_step,
)
from sklearn_ext.rl._mdp import TabularCMDP, TabularMDP, _as_array
from sklearn_ext.utils._messages import warn

__all__ = [
    "DualDescentResult",
    "MaxMinSolution",
    "TabularMOMDP",
    "make_random_momdp",
    "maxmin_dual_descent",
    "soft_policy",
    "solve_maxmin_lp",
    "solve_weighted_lp",
    "step_size",
]


@dataclass(frozen=True)
class TabularMOMDP:
    r"""Define a finite multi-objective MDP, optionally with cost tables.

    Parameters
    ----------
    transitions : array-like of shape (n_states, n_actions, n_states)
        ``transitions[s, a, t]`` is the probability of moving from ``s`` to
        ``t`` under ``a``, as in :class:`TabularMDP`.
    rewards : array-like of shape (n_objectives, n_states, n_actions)
        One reward table per objective (at least one).
    initial : array-like of shape (n_states,)
        Initial-state distribution.
    gamma : float, default=0.95
        Discount factor in (0, 1): every return here is discounted.
    costs : array-like of shape (n_constraints, n_states, n_actions), default=None
        One per-step cost table per constraint; None for none. The limits are
        not part of the MDP: the solvers take them.

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularMOMDP
    >>> # One state; action 0 serves objective 0, action 1 objective 1.
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]], [[0.0, 1.0]]],
    ...                    initial=[1.0], gamma=0.5)
    >>> mdp.n_objectives, mdp.n_constraints
    (2, 0)
    >>> mdp.evaluate([[0.5, 0.5]]).tolist()   # 0.5 / (1 - 0.5) each
    [1.0, 1.0]
    """

    transitions: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray
    gamma: float = 0.95
    costs: np.ndarray = None
    _base: TabularMDP = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        P = _as_array("transitions", self.transitions, 3)
        R = _as_array("rewards", self.rewards, 3)
        if R.shape[0] == 0:
            raise ValueError(
                "rewards must hold at least one objective: shape "
                f"(n_objectives >= 1, n_states, n_actions); got {R.shape}."
            )
        if R.shape[1:] != P.shape[:2]:
            raise ValueError(
                f"rewards must have shape (n_objectives, {P.shape[0]}, "
                f"{P.shape[1]}) to match transitions; got {R.shape}."
            )
        # TabularMDP checks the transitions, the initial distribution and gamma.
        base = TabularMDP(P, R[0], self.initial, self.gamma)
        if not 0 < self.gamma < 1:
            raise ValueError(
                f"TabularMOMDP needs a discount gamma in (0, 1); got {self.gamma!r}."
            )
        C = None
        if self.costs is not None:
            C = _as_array("costs", self.costs, 3)
            if C.shape[1:] != P.shape[:2]:
                raise ValueError(
                    f"costs must have shape (n_constraints, {P.shape[0]}, "
                    f"{P.shape[1]}); got {C.shape}."
                )
        object.__setattr__(self, "transitions", base.transitions)
        object.__setattr__(self, "rewards", R)
        object.__setattr__(self, "initial", base.initial)
        object.__setattr__(self, "costs", C)
        object.__setattr__(self, "_base", base)

    @property
    def n_states(self):
        """Number of states."""
        return self.transitions.shape[0]

    @property
    def n_actions(self):
        """Number of actions per state."""
        return self.transitions.shape[1]

    @property
    def n_objectives(self):
        """Number of reward tables (objectives)."""
        return self.rewards.shape[0]

    @property
    def n_constraints(self):
        """Number of cost tables (0 without costs)."""
        return 0 if self.costs is None else self.costs.shape[0]

    def _tables(self, rewards):
        """Validated (m, n_states, n_actions) stack, the objectives by default."""
        if rewards is None:
            return self.rewards
        R = _as_array("rewards", rewards, 3)
        if R.shape[1:] != (self.n_states, self.n_actions):
            raise ValueError(
                f"rewards must have shape (m, {self.n_states}, {self.n_actions}); "
                f"got {R.shape}."
            )
        return R

    def evaluate(self, policy, rewards=None):
        """Compute the exact discounted value of a policy for each reward table.

        Parameters
        ----------
        policy : array-like of shape (n_states,) or (n_states, n_actions)
            An action per state, or action probabilities per state.
        rewards : array-like of shape (m, n_states, n_actions), default=None
            Reward (or cost) tables to evaluate, e.g. ``mdp.costs``; the
            objectives by default.

        Returns
        -------
        values : ndarray of shape (m,)
            Expected discounted return of each table from the initial
            distribution.
        """
        pi = self._base._policy_matrix(policy)
        R = self._tables(rewards)
        if R.shape[0] == 0:
            return np.empty(0)
        Q = _q_values(self._base, pi, R)  # (S, A, m)
        return np.einsum("s,sa,sam->m", self.initial, pi, Q)


@dataclass(frozen=True)
class MaxMinSolution:
    """Hold a policy of a multi-objective MDP and what it achieves.

    Parameters
    ----------
    value : float
        The worst objective ``min_k J_k`` of the policy (for
        :func:`solve_maxmin_lp`, the LP's max-min value ``t*``).
    policy : ndarray of shape (n_states, n_actions)
        Action probabilities per state (uniform where never visited).
    occupancy : ndarray of shape (n_states, n_actions)
        Normalised discounted occupancy measure (sums to one).
    objective_values : ndarray of shape (n_objectives,)
        Expected discounted return of each objective.
    constraint_values : ndarray of shape (n_constraints,)
        Expected discounted cost of each constraint (empty without costs).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularMOMDP, solve_maxmin_lp
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]], [[0.0, 1.0]]],
    ...                    initial=[1.0], gamma=0.5)
    >>> sol = solve_maxmin_lp(mdp)
    >>> round(sol.value, 6), sol.constraint_values.shape
    (1.0, (0,))
    """

    value: float
    policy: np.ndarray
    occupancy: np.ndarray
    objective_values: np.ndarray
    constraint_values: np.ndarray


@dataclass(frozen=True)
class DualDescentResult:
    """Hold the outcome and the traces of :func:`maxmin_dual_descent`.

    Parameters
    ----------
    policy : ndarray of shape (n_states, n_actions)
        The last best-response policy (or the policy of the averaged
        occupancy with ``average=True``).
    objective_values : ndarray of shape (n_objectives,)
        Expected discounted return of each objective under ``policy``.
    constraint_values : ndarray of shape (n_constraints,)
        Expected discounted cost of each constraint under ``policy``.
    worst : ndarray of shape (n_iter,)
        ``min_k J_k`` of the best response at each iteration.
    violation : ndarray of shape (n_iter,)
        ``max(0, max_l (J_c,l - limit_l))`` of the best response at each
        iteration (0 without constraints).
    weights : ndarray of shape (n_iter, n_objectives)
        The objective weights that produced each iteration's best response.
    multipliers : ndarray of shape (n_iter, n_constraints)
        The cost multipliers that produced each iteration's best response.

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl._maxmin import TabularMOMDP, maxmin_dual_descent
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]], [[0.0, 1.0]]],
    ...                    initial=[1.0], gamma=0.5)
    >>> res = maxmin_dual_descent(mdp, n_iter=200)
    >>> res.weights.shape, res.multipliers.shape
    ((200, 2), (200, 0))
    """

    policy: np.ndarray
    objective_values: np.ndarray
    constraint_values: np.ndarray
    worst: np.ndarray
    violation: np.ndarray
    weights: np.ndarray
    multipliers: np.ndarray

    @property
    def value(self):
        """The worst objective ``min_k J_k`` of :attr:`policy`."""
        return float(self.objective_values.min())


# --- the linear programs -------------------------------------------------------


def _check_momdp(mdp):
    if not isinstance(mdp, TabularMOMDP):
        raise TypeError(f"mdp must be a TabularMOMDP; got {type(mdp).__name__}.")


def _check_limits(mdp, constraints):
    """The limits as an (n_constraints,) array, or None without costs."""
    L = mdp.n_constraints
    if constraints is None:
        if L:
            raise ValueError(
                f"the MDP has {L} cost table(s): pass constraints, one limit per "
                "cost table (or drop the costs for the unconstrained problem)."
            )
        return None
    if not L:
        raise ValueError(
            "constraints were given but the MDP has no cost tables (costs=None)."
        )
    limits = _as_array("constraints", np.atleast_1d(constraints), 1)
    if limits.shape != (L,):
        raise ValueError(
            f"constraints must give one limit per cost table ({L}); got "
            f"{limits.shape[0]}."
        )
    check_reachable_limits(
        limits,
        (mdp.costs >= 0).all(axis=(1, 2)),
        param="constraints",
        measure="expected discounted cost",
    )
    return limits


def _policy_from_occupancy(d):
    """Action probabilities of an occupancy measure, uniform where unvisited."""
    mass = d.sum(axis=1, keepdims=True)
    return np.where(mass > 1e-12, d / np.where(mass > 0, mass, 1), 1.0 / d.shape[1])


def _least_costs(mdp):
    """Least expected discounted cost of each cost table, alone."""
    P, mu, g = mdp.transitions, mdp.initial, mdp.gamma
    return np.array([-TabularMDP(P, -c, mu, g).solve_lp().value for c in mdp.costs])


def _infeasible(mdp, limits):
    parts = ", ".join(
        f"constraint {i}: limit {lim:.6g}, least achievable cost {low:.6g}"
        for i, (lim, low) in enumerate(zip(limits, _least_costs(mdp)))
    )
    return ValueError(
        "the constraints are infeasible: no policy keeps every expected "
        f"discounted cost within its limit ({parts})."
    )


def _solution(mdp, d, value=None):
    scale = 1.0 / (1.0 - mdp.gamma)
    J = scale * np.einsum("ksa,sa->k", mdp.rewards, d)
    Jc = (
        np.empty(0)
        if mdp.costs is None
        else scale * np.einsum("lsa,sa->l", mdp.costs, d)
    )
    return MaxMinSolution(
        value=float(J.min()) if value is None else float(value),
        policy=_policy_from_occupancy(d),
        occupancy=d,
        objective_values=J,
        constraint_values=Jc,
    )


def solve_maxmin_lp(mdp, constraints=None):
    r"""Solve the constrained max-min problem exactly by linear programming.

    Over the normalised discounted occupancy measure :math:`d \ge 0` (flow
    conservation as in :meth:`TabularMDP.solve_lp`) and a free variable
    :math:`t`, maximise :math:`t` subject to
    :math:`\sum_{s,a} d(s,a) r_k(s,a) / (1-\gamma) \ge t` for every objective
    and :math:`\sum_{s,a} d(s,a) c_l(s,a) / (1-\gamma) \le` ``constraints[l]``
    for every cost (scipy's HiGHS).

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP.
    constraints : array-like of shape (n_constraints,), default=None
        Limit of each expected discounted cost; required when ``mdp`` has
        costs, and only then.

    Returns
    -------
    solution : MaxMinSolution
        ``value`` is the max-min value ``t*``; the optimal policy may be
        stochastic.

    Raises
    ------
    ValueError
        When no policy meets the limits; the message gives, per constraint,
        its limit and the least expected cost any policy achieves.

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularMOMDP, solve_maxmin_lp
    >>> # Actions serve objective 0, objective 1, or both at 0.6 but cost 1.
    >>> R = [[[1.0, 0.0, 0.6]], [[0.0, 1.0, 0.6]]]
    >>> mdp = TabularMOMDP(np.ones((1, 3, 1)), R, initial=[1.0], gamma=0.5,
    ...                    costs=[[[0.0, 0.0, 1.0]]])
    >>> sol = solve_maxmin_lp(mdp, constraints=[1.0])  # action 2 half the time
    >>> round(sol.value, 6), np.round(sol.policy, 3).tolist()
    (1.1, [[0.25, 0.25, 0.5]])
    """
    _check_momdp(mdp)
    limits = _check_limits(mdp, constraints)
    S, A, K = mdp.n_states, mdp.n_actions, mdp.n_objectives
    scale = 1.0 / (1.0 - mdp.gamma)
    A_flow, b_eq = mdp._base._lp_constraints()
    A_eq = np.hstack([A_flow, np.zeros((S, 1))])
    # t - J_k(d) <= 0 for every objective, J_c,l(d) <= limit_l for every cost.
    rows = [np.hstack([-scale * mdp.rewards.reshape(K, S * A), np.ones((K, 1))])]
    b_ub = [np.zeros(K)]
    if limits is not None:
        L = mdp.n_constraints
        rows.append(np.hstack([scale * mdp.costs.reshape(L, S * A), np.zeros((L, 1))]))
        b_ub.append(limits)
    c = np.zeros(S * A + 1)
    c[-1] = -1.0
    res = linprog(
        c,
        A_ub=np.vstack(rows),
        b_ub=np.concatenate(b_ub),
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=[(0, None)] * (S * A) + [(None, None)],
        method="highs",
    )
    if res.status == 2:
        raise _infeasible(mdp, limits)
    if res.status != 0:
        raise RuntimeError(f"HiGHS did not solve the max-min LP: {res.message}")
    d = np.clip(res.x[:-1].reshape(S, A), 0.0, None)
    return _solution(mdp, d, value=res.x[-1])


def solve_weighted_lp(mdp, weights, constraints=None):
    """Solve the linearly scalarised (utilitarian) problem by linear programming.

    Maximises ``sum_k weights[k] * J_k`` under the same cost limits as
    :func:`solve_maxmin_lp`, by the occupancy LP of :class:`TabularCMDP` (or
    :class:`TabularMDP` without costs) on the weighted reward. The optimum
    is a vertex of the occupancy polytope, so, unlike the max-min optimum,
    it mixes actions only where a cost limit forces it.

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP.
    weights : array-like of shape (n_objectives,)
        Non-negative objective weights, not all zero.
    constraints : array-like of shape (n_constraints,), default=None
        Limit of each expected discounted cost; required when ``mdp`` has
        costs, and only then.

    Returns
    -------
    solution : MaxMinSolution
        The weighted optimum; ``value`` is its worst objective ``min_k J_k``.

    Raises
    ------
    ValueError
        When no policy meets the limits (as :func:`solve_maxmin_lp`).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import TabularMOMDP, solve_weighted_lp
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]], [[0.0, 1.0]]],
    ...                    initial=[1.0], gamma=0.5)
    >>> sol = solve_weighted_lp(mdp, [0.6, 0.4])   # all on objective 0
    >>> sol.objective_values.round(6).tolist(), round(sol.value, 6)
    ([2.0, 0.0], 0.0)
    """
    _check_momdp(mdp)
    limits = _check_limits(mdp, constraints)
    w = _as_array("weights", np.atleast_1d(weights), 1)
    if w.shape != (mdp.n_objectives,):
        raise ValueError(
            f"weights must give one weight per objective ({mdp.n_objectives}); "
            f"got {w.shape[0]}."
        )
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights must be non-negative and not all zero.")
    reward = np.tensordot(w, mdp.rewards, axes=1)
    P, mu, g = mdp.transitions, mdp.initial, mdp.gamma
    if limits is None:
        sol = TabularMDP(P, reward, mu, g).solve_lp()
    else:
        try:
            sol = TabularCMDP(
                P, reward, mu, g, costs=mdp.costs, cost_limits=limits
            ).solve_lp()
        except ValueError as exc:  # the inputs are checked: only infeasibility
            raise _infeasible(mdp, limits) from exc
    return _solution(mdp, sol.occupancy)


# --- random instances ----------------------------------------------------------


def make_random_momdp(
    n_states=10,
    n_actions=3,
    n_objectives=3,
    n_constraints=1,
    gamma=0.9,
    random_state=None,
):
    """Draw a random multi-objective MDP and cost limits that bind.

    Transitions are Dirichlet(1) draws per state-action pair, rewards and
    costs uniform on [0, 1], the initial distribution uniform. Each limit is
    ``least + share * (free - least)``, where ``least`` is the least cost any
    policy reaches for that constraint alone and ``free`` the cost of the
    unconstrained max-min LP optimum, with ``share = 0.3`` (raised by steps
    while the limits together are infeasible). Below the free optimum's
    cost, the limits cut it off, so the constrained max-min value is below
    the unconstrained one unless another policy reaches the same value
    within the limits.

    Parameters
    ----------
    n_states : int, default=10
        States.
    n_actions : int, default=3
        Actions per state.
    n_objectives : int, default=3
        Reward tables.
    n_constraints : int, default=1
        Cost tables; 0 gives an MDP without costs.
    gamma : float, default=0.9
        Discount factor.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    mdp : TabularMOMDP
        The multi-objective MDP.
    limits : ndarray of shape (n_constraints,) or None
        Limit of each expected discounted cost (None when
        ``n_constraints == 0``).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> from sklearn_ext.rl import make_random_momdp, solve_maxmin_lp
    >>> mdp, limits = make_random_momdp(random_state=0)
    >>> mdp.rewards.shape, mdp.costs.shape, limits.shape
    ((3, 10, 3), (1, 10, 3), (1,))
    >>> import dataclasses
    >>> free = dataclasses.replace(mdp, costs=None)
    >>> bool(solve_maxmin_lp(mdp, limits).value < solve_maxmin_lp(free).value)
    True
    """
    for name, value, low in (
        ("n_states", n_states, 1),
        ("n_actions", n_actions, 1),
        ("n_objectives", n_objectives, 1),
        ("n_constraints", n_constraints, 0),
    ):
        if not isinstance(value, Integral) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    rng = check_random_state(random_state)
    S, A = n_states, n_actions
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.uniform(size=(n_objectives, S, A))
    C = rng.uniform(size=(n_constraints, S, A))
    mu = np.full(S, 1.0 / S)
    free = TabularMOMDP(P, R, mu, gamma)
    if n_constraints == 0:
        return free, None
    mdp = TabularMOMDP(P, R, mu, gamma, costs=C)
    least = _least_costs(mdp)
    free_cost = mdp.evaluate(solve_maxmin_lp(free).policy, rewards=C)
    for share in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        limits = least + share * (free_cost - least)
        try:
            solve_maxmin_lp(mdp, limits)
        except ValueError:
            continue
        return mdp, limits
    return mdp, free_cost


# --- the dual algorithm --------------------------------------------------------


def _project_simplex(v):
    """Project a vector on the probability simplex (Euclidean distance).

    The sort-based algorithm: with ``u`` sorted in decreasing order, the
    largest ``rho`` with ``u_rho > (sum_{j <= rho} u_j - 1) / rho`` gives the
    shift ``theta`` and the projection ``max(v - theta, 0)``.

    Parameters
    ----------
    v : array-like of shape (n,)
        The point to project.

    Returns
    -------
    p : ndarray of shape (n,)
        The nearest point with ``p >= 0`` and ``p.sum() == 1``.
    """
    v = np.asarray(v, dtype=float)
    u = np.sort(v)[::-1]
    excess = np.cumsum(u) - 1.0
    ranks = np.arange(1, v.size + 1)
    rho = np.flatnonzero(u - excess / ranks > 0)[-1]
    theta = excess[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def _soft_iteration(mdp, reward, temperature, policy):
    """Soft policy iteration from ``policy``; the soft-optimal policy.

    Each step evaluates the entropy-regularised value of the policy exactly
    (a linear solve) and moves to the softmax of its Q-function. The soft
    Bellman residual ``max |T V - V|`` at the evaluated value goes to zero
    (the values increase monotonically); the loop stops when it is below
    ``1e-10`` (relative to the value's scale).
    """
    P, g, tau = mdp.transitions, mdp.gamma, temperature
    eye = np.eye(P.shape[0])
    log_pi = np.log(np.clip(policy, 1e-300, None))
    for _ in range(1000):
        pi = np.exp(log_pi)
        P_pi = np.einsum("sa,sat->st", pi, P)
        r_pi = np.sum(pi * (reward - tau * log_pi), axis=1)
        V = np.linalg.solve(eye - g * P_pi, r_pi)
        Q = reward + g * P @ V
        V_new = tau * logsumexp(Q / tau, axis=1)
        log_pi = (Q - V_new[:, None]) / tau
        if np.abs(V_new - V).max() <= 1e-10 * max(1.0, np.abs(V).max()):
            break
    else:
        warn(
            "soft policy iteration did not reach its tolerance in 1000 steps; "
            "the temperature may be too low for double precision.",
            ConvergenceWarning,
        )
    pi = np.exp(log_pi)
    return pi / pi.sum(axis=1, keepdims=True)


def _check_temperature(temperature):
    if (
        not isinstance(temperature, Real)
        or not np.isfinite(temperature)
        or temperature <= 0
    ):
        raise ValueError(f"temperature must be a positive float; got {temperature!r}.")


def soft_policy(mdp, reward, temperature):
    r"""Compute the soft-optimal (entropy-regularised) policy of one reward table.

    The policy maximises the discounted return of ``reward`` plus
    ``temperature`` times the discounted entropy of the policy; it is
    :math:`\pi(a|s) \propto \exp(Q_\tau(s,a)/\tau)`, with :math:`Q_\tau` the
    fixed point of the soft Bellman operator :math:`Q = r + \gamma P\,
    \tau \log \sum_a \exp(Q/\tau)`. It is computed by soft policy iteration
    (exact evaluation, softmax improvement) until the soft Bellman residual
    is below ``1e-10``. Its return is within ``temperature * log(n_actions)
    / (1 - gamma)`` of the optimal return.

    Parameters
    ----------
    mdp : TabularMOMDP or TabularMDP
        Gives the transitions and the discount (``gamma < 1``).
    reward : array-like of shape (n_states, n_actions)
        The reward table.
    temperature : float
        Entropy weight, positive; the policy tends to a greedy optimal one
        as it tends to zero.

    Returns
    -------
    policy : ndarray of shape (n_states, n_actions)
        The soft-optimal action probabilities (all positive).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.
    .. [2] T. Haarnoja, H. Tang, P. Abbeel, S. Levine, "Reinforcement
       Learning with Deep Energy-Based Policies", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl._maxmin import TabularMOMDP, soft_policy
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]]], initial=[1.0],
    ...                    gamma=0.5)
    >>> # One state: the soft policy is the softmax of the rewards.
    >>> np.round(soft_policy(mdp, [[1.0, 0.0]], temperature=1.0), 4).tolist()
    [[0.7311, 0.2689]]
    """
    if not isinstance(mdp, TabularMOMDP | TabularMDP):
        raise TypeError(
            f"mdp must be a TabularMOMDP or a TabularMDP; got {type(mdp).__name__}."
        )
    if mdp.gamma >= 1:
        raise ValueError("soft_policy needs a discount gamma < 1.")
    _check_temperature(temperature)
    S, A = mdp.n_states, mdp.n_actions
    R = _as_array("reward", reward, 2)
    if R.shape != (S, A):
        raise ValueError(f"reward must have shape {(S, A)}; got {R.shape}.")
    return _soft_iteration(mdp, R, temperature, np.full((S, A), 1.0 / A))


def step_size(lr, step, schedule):
    """Return the dual step size of an iteration under a schedule.

    Parameters
    ----------
    lr : float
        Base step size.
    step : int
        Iteration index, from 0.
    schedule : {"sqrt_inverse", "constant"}
        ``lr / sqrt(step + 1)`` or ``lr``.

    Returns
    -------
    eta : float
        The step size of iteration ``step``.

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> from sklearn_ext.rl._maxmin import step_size
    >>> step_size(2.0, 3, "sqrt_inverse"), step_size(2.0, 3, "constant")
    (1.0, 2.0)
    """
    if schedule == "sqrt_inverse":
        return float(lr / np.sqrt(step + 1.0))
    if schedule == "constant":
        return float(lr)
    raise ValueError(
        f"schedule must be 'sqrt_inverse' or 'constant'; got {schedule!r}."
    )


def maxmin_dual_descent(
    mdp,
    constraints=None,
    *,
    temperature=0.01,
    lr=5.0,
    n_iter=2000,
    schedule="sqrt_inverse",
    weights_init=None,
    average=False,
    update_weights=True,
):
    r"""Solve the constrained max-min problem by dual descent on the weights.

    The Lagrangian :math:`\mathcal{L}(\pi, w, u) = \sum_k w_k J_k(\pi) -
    \sum_l u_l (J_{c,l}(\pi) - b_l)`, with :math:`w` in the simplex and
    :math:`u \ge 0`, has the max-min value as its saddle value. Each
    iteration takes the entropy-regularised best response
    :math:`\pi_t` = :func:`soft_policy` of the reward :math:`\sum_k w_k r_k -
    \sum_l u_l c_l` (unique, so the dual function is differentiable), its
    exact returns :math:`J(\pi_t)` and costs :math:`J_c(\pi_t)`, then a
    projected gradient step on the dual:
    :math:`w \leftarrow \Pi_\Delta(w - \eta_t s J(\pi_t))` and
    :math:`u \leftarrow \max(0, u + \eta_t s (J_c(\pi_t) - b))`
    (:func:`multiplier_step` without its PID terms).

    The gradients are scaled by :math:`s = (1 - \gamma) / \max(\max|r|,
    \max|c|)`, which maps every discounted return into [-1, 1], so that
    ``lr`` does not depend on the scale of the rewards or on the horizon.
    The entropy regularisation biases the answer by at most
    ``temperature * log(n_actions) / (1 - gamma)``.

    The last iterate converges to the regularised optimum: with constant
    steps below the stability limit, the measured gap falls geometrically
    (``exp(-c t)``); with ``lr / sqrt(t + 1)`` steps, as ``exp(-c sqrt(t))``
    once the step is below that limit (large early steps cycle first, then
    settle). On ten random instances of :func:`make_random_momdp`
    (``benchmarks/bench_maxmin_morl.py``), the defaults come within 0.01 of
    the LP value after 7 to 187 iterations, and within 0.0004 to 0.007 after
    the default 2000.

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP.
    constraints : array-like of shape (n_constraints,), default=None
        Limit of each expected discounted cost; required when ``mdp`` has
        costs, and only then.
    temperature : float, default=0.01
        Entropy weight of the best response, positive.
    lr : float, default=5.0
        Dual step size (on the scaled gradients), positive. With the
        ``"constant"`` schedule, steps above a stability limit, which
        depends on the instance and shrinks with the temperature, make the
        iterates cycle instead of converging (with ``lr=0.2`` the
        benchmark's constant-step runs converge on all its instances at the
        default temperature: their fitted log-log rate is at most
        :claim:`maxmin_morl_tabular.rate_constant_max`).
    n_iter : int, default=2000
        Iterations.
    schedule : {"sqrt_inverse", "constant"}, default="sqrt_inverse"
        Step size :math:`\eta_t` = ``lr / sqrt(t + 1)`` or ``lr``.
    weights_init : array-like of shape (n_objectives,), default=None
        Initial objective weights (non-negative, normalised to sum to one);
        uniform by default. The multipliers start at zero.
    average : bool, default=False
        Return the policy of the running average of the best responses'
        occupancy measures instead of the last best response. Meant for
        constant steps too large to converge, where the last iterate cycles;
        the average is then often, not always, near the optimum, and it
        carries the early, far-from-optimal iterates.
    update_weights : bool, default=True
        False keeps the objective weights at ``weights_init``: the
        constrained linear scalarisation (utilitarian) baseline, with the
        same best response and multipliers.

    Returns
    -------
    result : DualDescentResult
        The final policy, its returns and costs, and the per-iteration
        traces (worst objective, violation, weights, multipliers).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> from sklearn_ext.rl._maxmin import (
    ...     make_random_momdp, maxmin_dual_descent, solve_maxmin_lp)
    >>> mdp, limits = make_random_momdp(random_state=0)
    >>> res = maxmin_dual_descent(mdp, limits)
    >>> lp = solve_maxmin_lp(mdp, limits)
    >>> bool(abs(res.value - lp.value) < 0.01), bool(res.violation[-1] < 0.01)
    (True, True)
    """
    _check_momdp(mdp)
    limits = _check_limits(mdp, constraints)
    if limits is not None:
        # Infeasible limits make the multipliers grow without bound: the LP
        # detects them (jointly, not only one constraint at a time) and
        # raises the error that names each constraint's least cost.
        solve_maxmin_lp(mdp, limits)
    _check_temperature(temperature)
    if isinstance(lr, bool) or not isinstance(lr, Real) or not 0 < lr < np.inf:
        raise ValueError(f"lr must be a positive float; got {lr!r}.")
    if isinstance(n_iter, bool) or not isinstance(n_iter, Integral) or n_iter < 1:
        raise ValueError(f"n_iter must be a positive integer; got {n_iter!r}.")
    step_size(lr, 0, schedule)  # checks the schedule
    S, A, K, L = mdp.n_states, mdp.n_actions, mdp.n_objectives, mdp.n_constraints
    if weights_init is None:
        w = np.full(K, 1.0 / K)
    else:
        w = _as_array("weights_init", np.atleast_1d(weights_init), 1)
        if w.shape != (K,) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(
                f"weights_init must be {K} non-negative weights, not all zero; "
                f"got {w.tolist()}."
            )
        w = w / w.sum()
    R = mdp.rewards
    C = mdp.costs if L else np.zeros((0, S, A))
    b = limits if L else np.zeros(0)
    stack = np.concatenate([R, C])  # (K + L, S, A)
    scale = (1.0 - mdp.gamma) / max(np.abs(stack).max(), 1e-12)
    pid = {"integral": np.zeros(L), "previous": np.zeros(L)}
    u = np.zeros(L)
    pi = np.full((S, A), 1.0 / A)
    occupancy_sum = np.zeros((S, A))
    worst, violation = np.empty(n_iter), np.empty(n_iter)
    weights, multipliers = np.empty((n_iter, K)), np.empty((n_iter, L))
    for t in range(n_iter):
        weights[t], multipliers[t] = w, u
        reward = np.einsum("k,ksa->sa", w, R) - np.einsum("l,lsa->sa", u, C)
        pi = _soft_iteration(mdp, reward, temperature, pi)  # warm start
        # The exact values of every table (mdp.evaluate without its checks).
        Q = _q_values(mdp._base, pi, stack)
        values = np.einsum("s,sa,sam->m", mdp.initial, pi, Q)
        J, Jc = values[:K], values[K:]
        worst[t] = J.min()
        violation[t] = max(0.0, (Jc - b).max()) if L else 0.0
        if average:
            occupancy_sum += _occupancy(mdp, pi)
        eta = step_size(lr, t, schedule)
        if update_weights:
            w = _project_simplex(w - eta * scale * J)
        if L:
            u = multiplier_step(scale * (Jc - b), pid, lr=eta, kp=0.0, kd=0.0)
    if average:
        pi = _policy_from_occupancy(occupancy_sum / n_iter)
    values = mdp.evaluate(pi, rewards=stack)
    return DualDescentResult(
        policy=pi,
        objective_values=values[:K],
        constraint_values=values[K:],
        worst=worst,
        violation=violation,
        weights=weights,
        multipliers=multipliers,
    )


def _occupancy(mdp, pi):
    """Normalised discounted occupancy measure of a policy."""
    P_pi = np.einsum("sa,sat->st", pi, mdp.transitions)
    # d_S^T (I - g P_pi) = (1 - g) mu^T
    d_s = np.linalg.solve((np.eye(mdp.n_states) - mdp.gamma * P_pi).T, mdp.initial)
    return (1.0 - mdp.gamma) * d_s[:, None] * pi
