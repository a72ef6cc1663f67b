"""TabularLagrangian: dedicated against mixed critics on a tabular constrained MDP.

The Lagrangian of a constrained MDP, ``J_r(pi) - lambda . (J_c(pi) - d)``, is
maximised by a policy-gradient actor and minimised by dual ascent on the
multipliers. The actor needs the Q-function of the mixed reward
``r - lambda . c`` under the current multipliers. A *mixed* critic learns it
as one function by temporal differences on the mixed reward; a *dedicated*
structure learns ``Q_r`` and one ``Q_c`` per constraint and combines them
with the current multipliers. When the multipliers move, the mixed critic's
target moves with them and it lags (target drift); the dedicated critics'
targets do not depend on the multipliers.

Everything here is exact or expected: the critics take expected TD steps
(the Bellman operator of the current policy, with a step size), the true
Q-functions come from linear solves, and the dual step uses the exact
constraint values, so that the two structures differ only by their critic
and its bias can be measured against the truth at every iteration.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_ext.rl._base import rl_tags
from sklearn_ext.rl._mdp import TabularCMDP
from sklearn_ext.utils._messages import warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)

__all__ = ["TabularLagrangian", "make_random_cmdp", "multiplier_step"]

NOT_A_TABLE = (
    "fit takes a TabularCMDP, not (X, y): scikit-learn's data checks do not "
    "apply; tests/test_rl_contract.py checks clone, parameter validation, "
    "pickling, skops, set_params and bad input"
)


def multiplier_step(violation, state, *, lr, kp, kd):
    """One projected PID step of the Lagrange multipliers.

    ``violation`` is ``J_c - limit`` per constraint. The integral term is the
    projected dual ascent ``I <- max(0, I + lr * violation)``; with ``kp =
    kd = 0`` the multipliers are exactly that (gradient ascent). The
    proportional and derivative terms (Stooke, Achiam and Abbeel, 2020) add
    ``kp * violation + kd * (violation - previous violation)``, and the sum
    is projected on ``lambda >= 0``.

    Parameters
    ----------
    violation : ndarray of shape (n_constraints,)
        Constraint value minus its limit.
    state : dict
        ``{"integral": ndarray, "previous": ndarray}`` (start them at the
        initial multipliers and at zero), updated in place.
    lr : float
        Integral gain (the dual step size).
    kp : float
        Proportional gain.
    kd : float
        Derivative gain.

    Returns
    -------
    lam : ndarray of shape (n_constraints,)
        The new multipliers.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import multiplier_step
    >>> state = {"integral": np.zeros(2), "previous": np.zeros(2)}
    >>> multiplier_step(np.array([1.0, -1.0]), state, lr=0.5, kp=0.0, kd=0.0)
    array([0.5, 0. ])
    """
    violation = np.asarray(violation, dtype=np.float64)
    state["integral"] = np.maximum(0.0, state["integral"] + lr * violation)
    derivative = violation - state["previous"]
    state["previous"] = violation.copy()
    return np.maximum(0.0, state["integral"] + kp * violation + kd * derivative)


def check_reachable_limits(limits, nonnegative, *, param, measure):
    """Refuse a negative limit on a cost that no policy can bring below zero.

    Parameters
    ----------
    limits : ndarray of shape (n_constraints,)
        The limits as given.
    nonnegative : ndarray of bool of shape (n_constraints,)
        Where the constraint's per-step costs are known to be non-negative.
    param : str
        The name the user gave the limits (``"cost_limits"``, ...).
    measure : str
        What the limit bounds (``"expected discounted cost"``, ...).

    Raises
    ------
    ValueError
        Naming the first such limit: under non-negative costs the constrained
        quantity is at least 0 for every policy, so a negative limit is
        infeasible (a dual ascent on it would raise its multiplier forever).
    """
    bad = np.flatnonzero(np.asarray(nonnegative, dtype=bool) & (limits < 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{param}[{k}] = {limits[k]:.6g} is negative, but the costs of "
            f"constraint {k} are non-negative, so its {measure} is at least 0 "
            "under every policy and no policy can meet a negative limit; pass "
            "limits >= 0 (0 allows no cost at all)."
        )


def _q_values(cmdp, pi, rewards):
    """Exact Q^pi of one reward table (or a stack of them)."""
    g, P = cmdp.gamma, cmdp.transitions
    P_pi = np.einsum("sa,sat->st", pi, P)
    R = np.atleast_3d(np.moveaxis(np.asarray(rewards), 0, -1))  # (S, A, m)
    r_pi = np.einsum("sa,sam->sm", pi, R)
    V = np.linalg.solve(np.eye(cmdp.n_states) - g * P_pi, r_pi)  # (S, m)
    return R + g * np.einsum("sat,tm->sam", P, V)


def _softmax(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class TabularLagrangian(BaseEstimator):
    r"""Lagrangian actor-critic on a tabular constrained MDP, dedicated or mixed.

    Each iteration (i) takes ``n_critic_steps`` expected TD steps of size
    ``critic_lr`` for the critic(s), (ii) moves the softmax policy's logits
    by a natural policy-gradient step ``actor_lr * A / (1 - gamma)`` on the
    critic's advantage of the mixed reward, and (iii) moves the multipliers
    on the exact constraint values (:func:`multiplier_step`).

    Parameters
    ----------
    critic : {"dedicated", "mixed"}, default="dedicated"
        ``"dedicated"``: critics ``Q_r`` and ``Q_c`` per constraint, combined
        as ``Q_r - lambda . Q_c`` with the current multipliers.
        ``"mixed"``: one critic learned by TD on ``r - lambda . c``, with the
        multipliers of the moment of each step.
    multiplier : {"pid", "gradient"}, default="pid"
        The PID Lagrangian, or projected dual gradient ascent (its integral
        term alone). Gradient ascent makes the last iterates cycle around the
        optimum (on random constrained MDPs none settled within 5000
        iterations); the proportional term damps the cycle.
    lambda_lr : float, default=0.1
        Dual step size (the integral gain).
    pid_kp : float, default=1.0
        Proportional gain of ``multiplier="pid"``.
    pid_kd : float, default=0.0
        Derivative gain of ``multiplier="pid"``.
    actor_lr : float, default=0.1
        Natural policy-gradient step size; 0 keeps the initial uniform policy
        (the critics then evaluate a fixed policy while the multipliers
        move: the setting of the target-drift bias alone).
    critic_lr : float, default=0.05
        Size of each expected TD step, in (0, 1]: 1 is a full Bellman backup.
        Small values are the regime of learned critics, which follow their
        targets slowly.
    n_critic_steps : int, default=1
        TD steps per iteration.
    max_iter : int, default=5000
        Iterations.
    tol : float, default=1e-5
        Stop when, over the last 50 iterations, the policy and the
        multipliers moved by less than ``tol`` (largest change per
        iteration).
    lambda_init : float, default=0.0
        Initial multipliers.
    random_state : int, RandomState instance or None, default=None
        Seeds the action draws of ``predict(..., deterministic=False)`` (the
        iterations themselves are exact and deterministic).

    Attributes
    ----------
    policy_ : ndarray of shape (n_states, n_actions)
        The last policy.
    multipliers_ : ndarray of shape (n_iter + 1, n_constraints)
        The multipliers at every iteration (initial first).
    constraint_values_ : ndarray of shape (n_iter, n_constraints)
        Exact expected discounted cost of each constraint per iteration.
    returns_ : ndarray of shape (n_iter,)
        Exact expected discounted return per iteration.
    critic_bias_ : ndarray of shape (n_iter,)
        Mean absolute error, over state-action pairs, of the critic's
        mixed Q-function against the true ``Q_r - lambda . Q_c`` of the
        current policy and multipliers (after the critic's steps).
    n_iter_ : int
        Iterations run.

    See Also
    --------
    TabularCMDP : The constrained MDP and its LP optimum.
    make_random_cmdp : Random constrained MDPs with binding constraints.

    References
    ----------
    .. [1] "Why Dedicated Critics: Eliminating Target Drift in Multi-Constraint
       RL", ICML 2026.
    .. [2] A. Stooke, J. Achiam, P. Abbeel, "Responsive Safety in Reinforcement
       Learning by PID Lagrangian Methods", ICML 2020.

    Examples
    --------
    >>> from sklearn_ext.rl import TabularLagrangian, make_random_cmdp
    >>> cmdp = make_random_cmdp(random_state=0)
    >>> agent = TabularLagrangian().fit(cmdp)
    >>> lp = cmdp.solve_lp()
    >>> bool(abs(agent.returns_[-1] - lp.value) < 0.05 * abs(lp.value))
    True
    """

    _parameter_constraints: dict = {
        "critic": [StrOptions({"dedicated", "mixed"})],
        "multiplier": [StrOptions({"gradient", "pid"})],
        "lambda_lr": [Interval(Real, 0, None, closed="neither")],
        "pid_kp": [Interval(Real, 0, None, closed="left")],
        "pid_kd": [Interval(Real, 0, None, closed="left")],
        "actor_lr": [Interval(Real, 0, None, closed="left")],
        "critic_lr": [Interval(Real, 0, 1, closed="right")],
        "n_critic_steps": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "lambda_init": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    _paper = "Dedicated vs mixed critics in multi-constraint Lagrangian RL, ICML 2026"
    _bench_name = "safe_rl"
    _not_a_data_estimator = NOT_A_TABLE

    def __init__(
        self,
        *,
        critic="dedicated",
        multiplier="pid",
        lambda_lr=0.1,
        pid_kp=1.0,
        pid_kd=0.0,
        actor_lr=0.1,
        critic_lr=0.05,
        n_critic_steps=1,
        max_iter=5000,
        tol=1e-5,
        lambda_init=0.0,
        random_state=None,
    ):
        self.critic = critic
        self.multiplier = multiplier
        self.lambda_lr = lambda_lr
        self.pid_kp = pid_kp
        self.pid_kd = pid_kd
        self.actor_lr = actor_lr
        self.critic_lr = critic_lr
        self.n_critic_steps = n_critic_steps
        self.max_iter = max_iter
        self.tol = tol
        self.lambda_init = lambda_init
        self.random_state = random_state

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__())

    @classmethod
    def _get_test_params(cls):
        return {"max_iter": 50}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, cmdp, y=None):
        """Run the primal-dual iterations on a constrained MDP.

        Parameters
        ----------
        cmdp : TabularCMDP
            The constrained MDP (``gamma < 1``).
        y : None
            Ignored.

        Returns
        -------
        self : TabularLagrangian
            Fitted agent.
        """
        cmdp = self._check_cmdp(cmdp, "fit")
        if cmdp.gamma >= 1:
            raise ValueError("TabularLagrangian needs a discount gamma < 1.")
        check_reachable_limits(
            cmdp.cost_limits,
            (cmdp.costs >= 0).all(axis=(1, 2)),
            param="cmdp.cost_limits",
            measure="expected discounted cost",
        )
        S, A, K = cmdp.n_states, cmdp.n_actions, len(cmdp.cost_limits)
        g, P, mu = cmdp.gamma, cmdp.transitions, cmdp.initial
        R, C, d = cmdp.rewards, cmdp.costs, cmdp.cost_limits
        stack = np.concatenate([R[None], C])  # (1 + K, S, A)
        logits = np.zeros((S, A))
        lam = np.full(K, float(self.lambda_init))
        pid = {"integral": lam.copy(), "previous": np.zeros(K)}
        kp, kd = (self.pid_kp, self.pid_kd) if self.multiplier == "pid" else (0, 0)
        # Critic tables: (S, A, 1 + K) dedicated, (S, A) mixed.
        Q = np.zeros((S, A, 1 + K)) if self.critic == "dedicated" else np.zeros((S, A))
        lams, costs, returns, biases = [lam.copy()], [], [], []
        still = 0
        for it in range(self.max_iter):  # noqa: B007 - read after the loop
            pi = _softmax(logits)
            for _ in range(self.n_critic_steps):
                if self.critic == "dedicated":
                    V = np.einsum("sa,sam->sm", pi, Q)
                    target = np.moveaxis(stack, 0, -1) + g * np.einsum(
                        "sat,tm->sam", P, V
                    )
                else:
                    V = np.sum(pi * Q, axis=1)
                    target = R - np.tensordot(lam, C, axes=1) + g * P @ V
                Q = Q + self.critic_lr * (target - Q)
            true = _q_values(cmdp, pi, stack)  # (S, A, 1 + K)
            true_mixed = true[..., 0] - true[..., 1:] @ lam
            Q_mixed = Q[..., 0] - Q[..., 1:] @ lam if Q.ndim == 3 else Q
            biases.append(float(np.mean(np.abs(Q_mixed - true_mixed))))
            values = np.einsum("s,sa,sam->m", mu, pi, true)
            returns.append(float(values[0]))
            costs.append(values[1:])
            adv = Q_mixed - np.sum(pi * Q_mixed, axis=1, keepdims=True)
            step = self.actor_lr * adv / (1 - g)
            logits = logits + step
            logits -= logits.max(axis=1, keepdims=True)
            new_lam = multiplier_step(
                values[1:] - d, pid, lr=self.lambda_lr, kp=kp, kd=kd
            )
            moved = max(
                np.abs(_softmax(logits) - pi).max(), np.abs(new_lam - lam).max()
            )
            lam = new_lam
            lams.append(lam.copy())
            still = still + 1 if moved < self.tol else 0
            if still >= 50:
                break
        self.n_iter_ = it + 1
        self.policy_ = _softmax(logits)
        self.multipliers_ = np.array(lams)
        self.constraint_values_ = np.array(costs)
        self.returns_ = np.array(returns)
        self.critic_bias_ = np.array(biases)
        self._policy_rng_ = np.random.RandomState(
            check_random_state(self.random_state).randint(2**31 - 1)
        )
        if still < 50:
            warn(
                f"TabularLagrangian did not settle within max_iter={self.max_iter} "
                "iterations (policy or multipliers still moving); increase "
                "max_iter or lower lambda_lr.",
                ConvergenceWarning,
            )
        return self

    @staticmethod
    def _check_cmdp(cmdp, method):
        # A one-item list is what GridSearchCV's indexing makes of [cmdp].
        if isinstance(cmdp, (list, tuple)) and len(cmdp) == 1:
            cmdp = cmdp[0]
        if not isinstance(cmdp, TabularCMDP):
            raise TypeError(
                f"TabularLagrangian.{method} takes a TabularCMDP (transitions, "
                "rewards, costs and cost_limits), or a list holding one; got "
                f"{type(cmdp).__name__}."
            )
        return cmdp

    def score(self, X, y=None):
        """Exact return of the last policy on a constrained MDP, feasibility first.

        A policy whose expected discounted cost exceeds a limit by more than
        ``1e-4`` of it (the primal-dual iterations approach the limits from
        either side) scores below every feasible policy: the
        least possible return, ``min(rewards) / (1 - gamma)``, minus one
        plus its largest relative excess. ``GridSearchCV`` thus prefers any
        feasible candidate, then the higher return.

        Parameters
        ----------
        X : TabularCMDP or list of one TabularCMDP
            The problem to score on (the one fitted on, or one of the same
            size).
        y : None
            Ignored.

        Returns
        -------
        score : float
            The exact discounted return of ``policy_`` on ``X`` if it meets
            the limits; below every feasible score otherwise.
        """
        check_is_fitted(self, "policy_")
        X = self._check_cmdp(X, "score")
        if (X.n_states, X.n_actions) != self.policy_.shape:
            raise ValueError(
                f"the CMDP has {X.n_states} states and {X.n_actions} actions; "
                f"the policy was fitted on {self.policy_.shape[0]} and "
                f"{self.policy_.shape[1]}."
            )
        value = float(X.evaluate(self.policy_))
        costs = np.array([X.evaluate(self.policy_, rewards=c) for c in X.costs])
        limits = X.cost_limits
        excess = np.max((costs - limits) / np.maximum(np.abs(limits), 1e-12))
        if excess <= 1e-4:
            return value
        floor = float(X.rewards.min()) / (1.0 - X.gamma)
        return floor - 1.0 - float(excess)

    def predict(self, states, deterministic=True):
        """Most probable action of the last policy in each state.

        Parameters
        ----------
        states : array-like of shape (n_samples,)
            State indices.

        deterministic : bool, default=True
            True: the action of highest probability. False: a draw from the
            last policy, from a generator that ``fit`` seeds from
            ``random_state``. The constrained optimum is in general a
            mixture: its cost guarantee holds for the draws, not for the
            most probable action.

        Returns
        -------
        actions : ndarray of shape (n_samples,)
            The action of each state.
        """
        check_is_fitted(self, "policy_")
        states = np.asarray(states)
        if states.ndim != 1 or not np.issubdtype(states.dtype, np.integer):
            raise ValueError("states must be a 1-D array of integer state indices.")
        if ((states < 0) | (states >= len(self.policy_))).any():
            raise ValueError(
                f"state indices must lie in [0, {len(self.policy_)}); got "
                f"{states.min()} to {states.max()}."
            )
        probs = self.policy_[states]
        if deterministic:
            return probs.argmax(axis=1)
        u = self._policy_rng_.random_sample(len(states))[:, None]
        cdf = np.cumsum(probs, axis=1)
        return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)


def make_random_cmdp(
    n_states=10, n_actions=3, n_constraints=2, *, gamma=0.9, random_state=None
):
    """A random constrained MDP whose constraints all bind.

    Transitions are Dirichlet(1) draws per state-action pair, rewards and
    costs uniform on [0, 1], the initial distribution uniform. Each limit
    lies halfway between the least cost any policy reaches for that
    constraint alone and the cost of the unconstrained optimum (moved
    towards the latter, by steps of a tenth, while the limits together are
    infeasible), so that the constraints restrict the optimum.

    Parameters
    ----------
    n_states : int, default=10
        States.
    n_actions : int, default=3
        Actions per state.
    n_constraints : int, default=2
        Cost constraints.
    gamma : float, default=0.9
        Discount factor.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    cmdp : TabularCMDP
        The constrained MDP.

    Examples
    --------
    >>> from sklearn_ext.rl import make_random_cmdp
    >>> cmdp = make_random_cmdp(random_state=0)
    >>> cmdp.costs.shape, cmdp.cost_limits.shape
    ((2, 10, 3), (2,))
    """
    rng = check_random_state(random_state)
    P = rng.dirichlet(np.ones(n_states), size=(n_states, n_actions))
    R = rng.uniform(size=(n_states, n_actions))
    C = rng.uniform(size=(n_constraints, n_states, n_actions))
    mu = np.full(n_states, 1.0 / n_states)
    free = TabularCMDP(
        P, R, mu, gamma, costs=C, cost_limits=np.full(n_constraints, 1e9)
    )
    best = free.solve_lp()
    least = np.empty(n_constraints)
    for k in range(n_constraints):
        alone = TabularCMDP(P, -C[k], mu, gamma, costs=C, cost_limits=free.cost_limits)
        least[k] = -alone.solve_lp().value
    # Halfway between the least and the unconstrained optimum's cost, or as
    # near the latter as joint feasibility needs.
    for share in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        limits = least + share * (best.constraint_values - least)
        cmdp = TabularCMDP(P, R, mu, gamma, costs=C, cost_limits=limits)
        try:
            cmdp.solve_lp()
        except ValueError:
            continue
        return cmdp
    return TabularCMDP(P, R, mu, gamma, costs=C, cost_limits=best.constraint_values)
