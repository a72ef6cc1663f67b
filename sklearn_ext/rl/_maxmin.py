"""Constrained multi-objective RL with the max-min criterion, tabular part.

A multi-objective MDP (:class:`TabularMOMDP`, a :class:`TabularCMDP` with
one reward table per objective) has ``K`` reward tables and, optionally,
``L`` cost tables with their limits. The max-min criterion asks for a
policy that maximises the worst objective, ``min_k J_k(pi)``, while every
expected discounted cost stays within its limit, ``J_c,l(pi) <= limit_l``
(Park, Nam, Byeon, Leshem and Sung, ICML 2026).

Over discounted occupancy measures this is a linear program
(:func:`solve_maxmin_lp`): a variable ``t`` below every objective, maximised.
Its optimum is in general a *stochastic* policy that no linear scalarisation
``sum_k w_k J_k`` returns (:func:`solve_weighted_lp`, the utilitarian
baseline, whose LP optimum is a vertex). The Lagrangian dual of the problem,
``min over w in the simplex and u >= 0 of max over pi of sum_k w_k J_k(pi) -
sum_l u_l (J_c,l(pi) - limit_l)``, gives the learning algorithm
(:func:`maxmin_dual_descent`): an entropy-regularised best response of the
policy to the weights (:func:`soft_policy`, or soft Q-learning on sampled
transitions), then projected gradient descent of the weights on the simplex
and of the multipliers on the non-negative orthant. The entropy-regularised
problem it converges to is solved independently, by a conic solver on the
primal, in :func:`solve_regularised_maxmin`.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from dataclasses import dataclass
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
    "solve_regularised_maxmin",
    "solve_weighted_lp",
    "step_size",
]


@dataclass(frozen=True)
class TabularMOMDP(TabularCMDP):
    r"""Define a finite multi-objective MDP, optionally with costs and their limits.

    A :class:`TabularCMDP` whose reward is a stack of tables, one per
    objective, and whose costs are optional: the data class of the tabular
    max-min problem. The cost limits are part of the data, as in
    :class:`TabularCMDP`, so that every solver reads them from one place.

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
        One per-step cost table per constraint; None for none.
    cost_limits : array-like of shape (n_constraints,), default=None
        Upper limit of each expected discounted cost; given with ``costs``
        and only then. ``dataclasses.replace(mdp, costs=None,
        cost_limits=None)`` is the same MDP without its constraints.

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

    _reward_ndim = 3
    _costs_optional = True

    def _check_reward_shape(self, shape, S, A):
        if shape[0] == 0:
            raise ValueError(
                "rewards must hold at least one objective: shape "
                f"(n_objectives >= 1, n_states, n_actions); got {shape}."
            )
        if shape[1:] != (S, A):
            raise ValueError(
                f"rewards must have shape (n_objectives, {S}, {A}) to match "
                f"transitions; got {shape}."
            )

    def __post_init__(self):
        super().__post_init__()
        if not 0 < self.gamma < 1:
            raise ValueError(
                f"TabularMOMDP needs a discount gamma in (0, 1); got {self.gamma!r}."
            )

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
        pi = self._policy_matrix(policy)
        R = self._tables(rewards)
        if R.shape[0] == 0:
            return np.empty(0)
        Q = _q_values(self, pi, R)  # (S, A, m)
        return np.einsum("s,sa,sam->m", self.initial, pi, Q)

    def solve_lp(self):
        """Solve the constrained max-min problem exactly (:func:`solve_maxmin_lp`).

        Returns
        -------
        solution : MaxMinSolution
            The max-min value ``t*``, an optimal (possibly stochastic)
            policy, its occupancy measure, objectives and costs.
        """
        return solve_maxmin_lp(self)


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


def _check_limits(mdp):
    """The MDP's cost limits as an (n_constraints,) array, or None without costs."""
    if not mdp.n_constraints:
        return None
    check_reachable_limits(
        mdp.cost_limits,
        (mdp.costs >= 0).all(axis=(1, 2)),
        param="cost_limits",
        measure="expected discounted cost",
    )
    return mdp.cost_limits


def _policy_from_occupancy(d):
    """Action probabilities of an occupancy measure, uniform where unvisited."""
    mass = d.sum(axis=1, keepdims=True)
    return np.where(mass > 1e-12, d / np.where(mass > 0, mass, 1), 1.0 / d.shape[1])


def _least_costs(mdp, costs=None):
    """Least expected discounted cost of each cost table, alone."""
    P, mu, g = mdp.transitions, mdp.initial, mdp.gamma
    costs = mdp.costs if costs is None else costs
    return np.array([-TabularMDP(P, -c, mu, g).solve_lp().value for c in costs])


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


def solve_maxmin_lp(mdp):
    r"""Solve the constrained max-min problem exactly by linear programming.

    Over the normalised discounted occupancy measure :math:`d \ge 0` (flow
    conservation as in :meth:`TabularMDP.solve_lp`) and a free variable
    :math:`t`, maximise :math:`t` subject to
    :math:`\sum_{s,a} d(s,a) r_k(s,a) / (1-\gamma) \ge t` for every objective
    and :math:`\sum_{s,a} d(s,a) c_l(s,a) / (1-\gamma) \le`
    ``mdp.cost_limits[l]`` for every cost (scipy's HiGHS).

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP, with its cost limits (if any).

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
    ...                    costs=[[[0.0, 0.0, 1.0]]], cost_limits=[1.0])
    >>> sol = solve_maxmin_lp(mdp)  # action 2 half the time
    >>> round(sol.value, 6), np.round(sol.policy, 3).tolist()
    (1.1, [[0.25, 0.25, 0.5]])
    """
    _check_momdp(mdp)
    limits = _check_limits(mdp)
    S, A, K = mdp.n_states, mdp.n_actions, mdp.n_objectives
    scale = 1.0 / (1.0 - mdp.gamma)
    A_flow, b_eq = mdp._lp_constraints()
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


def solve_weighted_lp(mdp, weights):
    """Solve the linearly scalarised (utilitarian) problem by linear programming.

    Maximises ``sum_k weights[k] * J_k`` under the same cost limits as
    :func:`solve_maxmin_lp`, by the occupancy LP of :class:`TabularCMDP` (or
    :class:`TabularMDP` without costs) on the weighted reward. The optimum
    is a vertex of the occupancy polytope, so, unlike the max-min optimum,
    it mixes actions only where a cost limit forces it.

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP, with its cost limits (if any).
    weights : array-like of shape (n_objectives,)
        Non-negative objective weights, not all zero.

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
    limits = _check_limits(mdp)
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


def solve_regularised_maxmin(mdp, temperature):
    r"""Solve the entropy-regularised constrained max-min problem by a convex solver.

    The problem the dual iteration (:func:`maxmin_dual_descent`) converges
    to: over the normalised discounted occupancy measure :math:`d \ge 0`
    (flow conservation as in :func:`solve_maxmin_lp`) and a free :math:`t`,
    maximise :math:`t + \tau H(d)` subject to :math:`J_k(d) \ge t` for every
    objective and :math:`J_{c,l}(d) \le` ``mdp.cost_limits[l]``, where
    :math:`H(d) = -\sum_{s,a} d(s,a) \log(d(s,a) / \sum_{a'} d(s,a')) /
    (1-\gamma)` is the discounted causal entropy of the policy of :math:`d`
    (concave in :math:`d`: a sum of negative relative entropies). It is not
    a linear program: cvxpy poses it with exponential cones and Clarabel's
    interior-point method solves it, independently of the dual iteration
    (another algorithm, on the primal, in the occupancy measure).

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP, with its cost limits (if any).
    temperature : float
        The entropy weight :math:`\tau`, positive.

    Returns
    -------
    solution : MaxMinSolution
        The regularised optimum: its policy, occupancy, exact objectives and
        costs (evaluated from the policy by linear solves); ``value`` is its
        worst objective :math:`\min_k J_k`, not the regularised objective.
    weights : ndarray of shape (n_objectives,)
        The optimal objective weights (the solver's dual variables of the
        constraints :math:`J_k \ge t`, summing to one).
    multipliers : ndarray of shape (n_constraints,)
        The optimal cost multipliers (the dual variables of the limits).

    Raises
    ------
    ImportError
        Without cvxpy (``pip install cvxpy``, in the extras ``test`` and
        ``optimization``).
    ValueError
        When no policy meets the limits (found by :func:`solve_maxmin_lp`).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl._maxmin import TabularMOMDP, solve_regularised_maxmin
    >>> mdp = TabularMOMDP(np.ones((1, 2, 1)), [[[1.0, 0.0]], [[0.0, 1.0]]],
    ...                    initial=[1.0], gamma=0.5)
    >>> sol, w, u = solve_regularised_maxmin(mdp, temperature=0.1)
    >>> np.round(sol.policy, 4).tolist(), np.round(w, 4).tolist()
    ([[0.5, 0.5]], [0.5, 0.5])
    """
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - cvxpy is in the test extra
        raise ImportError(
            "solve_regularised_maxmin needs cvxpy: pip install cvxpy"
        ) from exc
    _check_momdp(mdp)
    _check_temperature(temperature)
    limits = _check_limits(mdp)
    if limits is not None:
        solve_maxmin_lp(mdp)  # names the least costs of infeasible limits
    S, A, K, L = mdp.n_states, mdp.n_actions, mdp.n_objectives, mdp.n_constraints
    scale = 1.0 / (1.0 - mdp.gamma)
    A_flow, b_eq = mdp._lp_constraints()
    d = cp.Variable(S * A, nonneg=True)
    t = cp.Variable()
    block = np.repeat(np.eye(S), A, axis=1)  # (S, S * A): d -> state marginal
    entropy = -cp.sum(cp.rel_entr(d, block.T @ block @ d))
    objectives = scale * mdp.rewards.reshape(K, S * A) @ d
    cons = [A_flow @ d == b_eq, objectives >= t]
    if L:
        cons.append(scale * mdp.costs.reshape(L, S * A) @ d <= limits)
    problem = cp.Problem(cp.Maximize(t + temperature * scale * entropy), cons)
    with warnings.catch_warnings():
        # Tolerances near double precision: Clarabel may stop just short of
        # them ("optimal_inaccurate"); its answer then still agrees with the
        # dual iteration's to about 1e-8 (benchmarks/bench_maxmin_morl.py).
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(
            solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11
        )
    if problem.status not in ("optimal", "optimal_inaccurate") or d.value is None:
        raise RuntimeError(
            f"the convex solver did not solve the regularised problem: "
            f"{problem.status}."
        )
    occupancy = np.clip(d.value.reshape(S, A), 0.0, None)
    occupancy /= occupancy.sum()
    policy = _policy_from_occupancy(occupancy)
    stack = mdp.rewards if not L else np.concatenate([mdp.rewards, mdp.costs])
    values = mdp.evaluate(policy, rewards=stack)
    weights = np.clip(np.asarray(cons[1].dual_value, dtype=float), 0.0, None)
    multipliers = (
        np.clip(np.asarray(cons[2].dual_value, dtype=float), 0.0, None)
        if L
        else np.empty(0)
    )
    solution = MaxMinSolution(
        value=float(values[:K].min()),
        policy=policy,
        occupancy=occupancy,
        objective_values=values[:K],
        constraint_values=values[K:],
    )
    return solution, weights / weights.sum(), multipliers


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
        The multi-objective MDP, its ``cost_limits`` set (None when
        ``n_constraints == 0``).

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.

    Examples
    --------
    >>> from sklearn_ext.rl import make_random_momdp, solve_maxmin_lp
    >>> mdp = make_random_momdp(random_state=0)
    >>> mdp.rewards.shape, mdp.costs.shape, mdp.cost_limits.shape
    ((3, 10, 3), (1, 10, 3), (1,))
    >>> import dataclasses
    >>> free = dataclasses.replace(mdp, costs=None, cost_limits=None)
    >>> bool(solve_maxmin_lp(mdp).value < solve_maxmin_lp(free).value)
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
        return free
    least = _least_costs(free, C)
    free_cost = free.evaluate(solve_maxmin_lp(free).policy, rewards=C)
    for share in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        mdp = TabularMOMDP(
            P, R, mu, gamma, costs=C, cost_limits=least + share * (free_cost - least)
        )
        try:
            solve_maxmin_lp(mdp)
        except ValueError:
            continue
        return mdp
    return TabularMOMDP(P, R, mu, gamma, costs=C, cost_limits=free_cost)


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
    *,
    temperature=0.01,
    lr=5.0,
    n_iter=2000,
    schedule="sqrt_inverse",
    weights_init=None,
    average=False,
    update_weights=True,
    evaluation="exact",
    q_lr=0.3,
    n_samples=4,
    random_state=None,
):
    r"""Solve the constrained max-min problem by dual descent on the weights.

    The Lagrangian :math:`\mathcal{L}(\pi, w, u) = \sum_k w_k J_k(\pi) -
    \sum_l u_l (J_{c,l}(\pi) - b_l)`, with :math:`w` in the simplex,
    :math:`u \ge 0` and :math:`b` = ``mdp.cost_limits``, has the max-min
    value as its saddle value. Each iteration takes the entropy-regularised
    best response :math:`\pi_t` of the reward :math:`\sum_k w_k r_k -
    \sum_l u_l c_l`, its returns :math:`J(\pi_t)` and costs
    :math:`J_c(\pi_t)`, then a projected gradient step on the dual:
    :math:`w \leftarrow \Pi_\Delta(w - \eta_t s J(\pi_t))` and
    :math:`u \leftarrow \max(0, u + \eta_t s (J_c(\pi_t) - b))`
    (:func:`multiplier_step` without its PID terms).

    Two modes (``evaluation``):

    * ``"exact"``: the best response is :func:`soft_policy` (soft policy
      iteration on the known transitions, warm-started) and the returns are
      exact linear solves.
    * ``"sampled"``: model-free, the paper's sampled soft-Q variant. The
      transitions are only sampled: each iteration draws ``n_samples`` next
      states for every state-action pair (a generative model) and takes one
      soft Q-learning step of size ``q_lr / (1 + t / 1000)`` towards
      :math:`r_{w,u}(s,a) + \gamma\,\tau \log \sum_{a'} e^{Q(s',a')/\tau}`;
      the policy is :math:`\mathrm{softmax}(Q/\tau)`; one TD(0) step on the
      same samples updates a Q-table per objective and per cost of that
      policy, whose values at the initial distribution are the dual
      gradient. The returned policy is the state-wise average of the last
      half of the iterates' policies (the last iterate carries the
      sampling noise). The exact values reported in the traces are
      computed for the record only; the iteration never reads the
      transition table.

    The gradients are scaled by :math:`s = (1 - \gamma) / \max(\max|r|,
    \max|c|)`, which maps every discounted return into [-1, 1], so that
    ``lr`` does not depend on the scale of the rewards or on the horizon.

    What is proven and what is measured. The regularised best response is
    unique, so the dual function (the regularised optimum of the
    Lagrangian) is convex and differentiable, and by strong duality its
    minimum is the regularised max-min value
    :math:`\max_\pi \min_k J_k(\pi) + \tau H(\pi)` under the limits
    (:math:`H` the discounted causal entropy). That optimum's worst
    objective lies within ``temperature * log(n_actions) / (1 - gamma)``
    below the LP value (proven: :math:`H \le \log|A|/(1-\gamma)`). Projected
    gradient descent with steps :math:`\propto 1/\sqrt{t}` converges in
    dual value by the standard subgradient argument; no rate for the last
    iterate is proven here (the paper states a linear rate for its
    iteration). The rate is measured instead:
    ``benchmarks/bench_maxmin_morl.py`` compares the iterates with the
    regularised optimum computed by an independent convex solver
    (:func:`solve_regularised_maxmin`, interior point on the occupancy
    measure) and fits the decay of the gap.

    Parameters
    ----------
    mdp : TabularMOMDP
        The multi-objective MDP, with its cost limits (if any).
    temperature : float, default=0.01
        Entropy weight of the best response, positive.
    lr : float, default=5.0
        Dual step size (on the scaled gradients), positive. With the
        ``"constant"`` schedule, steps above a stability limit, which
        depends on the instance and shrinks with the temperature, make the
        iterates cycle instead of converging.
    n_iter : int, default=2000
        Iterations.
    schedule : {"sqrt_inverse", "constant"}, default="sqrt_inverse"
        Step size :math:`\eta_t` = ``lr / sqrt(t + 1)`` or ``lr``.
    weights_init : array-like of shape (n_objectives,), default=None
        Initial objective weights (non-negative, normalised to sum to one);
        uniform by default. The multipliers start at zero.
    average : bool, default=False
        Exact mode: return the policy of the running average of the best
        responses' occupancy measures instead of the last best response,
        meant for constant steps too large to converge.
    update_weights : bool, default=True
        False keeps the objective weights at ``weights_init``: the
        constrained linear scalarisation (utilitarian) baseline, with the
        same best response and multipliers.
    evaluation : {"exact", "sampled"}, default="exact"
        Exact soft policy iteration, or the model-free sampled soft-Q mode.
    q_lr : float, default=0.3
        Sampled mode: initial step size of the soft Q-learning and TD
        steps, in (0, 1]; iteration ``t`` uses ``q_lr / (1 + t / 1000)``.
    n_samples : int, default=4
        Sampled mode: next states drawn per state-action pair and iteration.
    random_state : int, RandomState instance or None, default=None
        Sampled mode: seeds the draws.

    Returns
    -------
    result : DualDescentResult
        The final policy, its exact returns and costs, and the
        per-iteration traces (worst objective, violation, weights,
        multipliers) of the iterates.

    References
    ----------
    .. [1] G. Park, H. Nam, W. Byeon, A. Leshem, Y. Sung, "Constrained
       Multi-Objective Reinforcement Learning with Max-Min Criterion",
       ICML 2026.
    .. [2] G. Park, W. Byeon, S. Kim, E. Havakuk, A. Leshem, Y. Sung, "The
       Max-Min Formulation of Multi-Objective Reinforcement Learning: From
       Theory to a Model-Free Algorithm", ICML 2024.

    Examples
    --------
    >>> from sklearn_ext.rl._maxmin import (
    ...     make_random_momdp, maxmin_dual_descent, solve_maxmin_lp)
    >>> mdp = make_random_momdp(random_state=0)
    >>> res = maxmin_dual_descent(mdp)
    >>> lp = solve_maxmin_lp(mdp)
    >>> bool(abs(res.value - lp.value) < 0.01), bool(res.violation[-1] < 0.01)
    (True, True)
    """
    _check_momdp(mdp)
    limits = _check_limits(mdp)
    if limits is not None:
        # Infeasible limits make the multipliers grow without bound: the LP
        # detects them (jointly, not only one constraint at a time) and
        # raises the error that names each constraint's least cost.
        solve_maxmin_lp(mdp)
    _check_temperature(temperature)
    for name, value in (("lr", lr), ("q_lr", q_lr)):
        if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value:
            raise ValueError(f"{name} must be a positive float; got {value!r}.")
    if q_lr > 1:
        raise ValueError(f"q_lr must lie in (0, 1]; got {q_lr!r}.")
    for name, value in (("n_iter", n_iter), ("n_samples", n_samples)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}.")
    if evaluation not in ("exact", "sampled"):
        raise ValueError(
            f"evaluation must be 'exact' or 'sampled'; got {evaluation!r}."
        )
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
    sampled = evaluation == "sampled"
    if sampled:
        rng = check_random_state(random_state)
        cum_P = np.cumsum(mdp.transitions, axis=2)
        Q = np.zeros((S, A))
        G = np.zeros((S, A, K + L))
        pi_sum = np.zeros((S, A))
    pid = {"integral": np.zeros(L), "previous": np.zeros(L)}
    u = np.zeros(L)
    pi = np.full((S, A), 1.0 / A)
    occupancy_sum = np.zeros((S, A))
    worst, violation = np.empty(n_iter), np.empty(n_iter)
    weights, multipliers = np.empty((n_iter, K)), np.empty((n_iter, L))
    for t in range(n_iter):
        weights[t], multipliers[t] = w, u
        reward = np.einsum("k,ksa->sa", w, R) - np.einsum("l,lsa->sa", u, C)
        if sampled:
            alpha = q_lr / (1.0 + t / 1000.0)
            pi, grad = _sampled_step(
                mdp, reward, stack, temperature, Q, G, cum_P, rng, alpha, n_samples
            )
            if t >= n_iter // 2:
                pi_sum += pi
        else:
            pi = _soft_iteration(mdp, reward, temperature, pi)  # warm start
        # The exact values of every table (mdp.evaluate without its checks).
        Q_exact = _q_values(mdp, pi, stack)
        values = np.einsum("s,sa,sam->m", mdp.initial, pi, Q_exact)
        if not sampled:
            grad = values
        J, Jc = grad[:K], grad[K:]
        worst[t] = values[:K].min()
        violation[t] = max(0.0, (values[K:] - b).max()) if L else 0.0
        if average and not sampled:
            occupancy_sum += _occupancy(mdp, pi)
        eta = step_size(lr, t, schedule)
        if update_weights:
            w = _project_simplex(w - eta * scale * J)
        if L:
            u = multiplier_step(scale * (Jc - b), pid, lr=eta, kp=0.0, kd=0.0)
    if sampled:
        pi = pi_sum / pi_sum.sum(axis=1, keepdims=True)
    elif average:
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


def _sampled_step(mdp, reward, stack, tau, Q, G, cum_P, rng, lr, n_samples):
    """One model-free step: soft Q-learning and TD evaluation on sampled moves.

    Updates ``Q`` (the soft Q-table of ``reward``) and ``G`` (the Q-tables of
    the policy for every table of ``stack``) in place from ``n_samples``
    next states per state-action pair; returns the softmax policy and the
    estimated values of ``stack`` at the initial distribution.
    """
    S, A = reward.shape
    g = mdp.gamma
    draws = rng.random_sample((n_samples, S, A, 1))
    nxt = np.minimum((draws > cum_P[None]).sum(axis=-1), S - 1)  # (n, S, A)
    soft_v = tau * logsumexp(Q / tau, axis=1)  # (S,)
    Q += lr * (reward + g * soft_v[nxt].mean(axis=0) - Q)
    pi = np.exp((Q - tau * logsumexp(Q / tau, axis=1, keepdims=True)) / tau)
    pi /= pi.sum(axis=1, keepdims=True)
    V = np.einsum("sa,sam->sm", pi, G)  # (S, m)
    G += lr * (np.moveaxis(stack, 0, -1) + g * V[nxt].mean(axis=0) - G)
    return pi, np.einsum("s,sa,sam->m", mdp.initial, pi, G)


def _occupancy(mdp, pi):
    """Normalised discounted occupancy measure of a policy."""
    P_pi = np.einsum("sa,sat->st", pi, mdp.transitions)
    # d_S^T (I - g P_pi) = (1 - g) mu^T
    d_s = np.linalg.solve((np.eye(mdp.n_states) - mdp.gamma * P_pi).T, mdp.initial)
    return (1.0 - mdp.gamma) * d_s[:, None] * pi
