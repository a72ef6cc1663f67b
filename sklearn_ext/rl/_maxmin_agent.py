"""ConstrainedMaxMinMORL: max-min multi-objective RL with explicit constraints."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from sklearn_ext.rl._base import NOT_A_DATA_ESTIMATOR, rl_tags
from sklearn_ext.rl._lagrangian_ppo import LagrangianActorCritic
from sklearn_ext.rl._maxmin import (
    TabularMOMDP,
    _project_simplex,
    maxmin_dual_descent,
    step_size,
)
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)

__all__ = ["ConstrainedMaxMinMORL", "TabularMaxMinMORL"]

_PPO_PARAMS = (
    "n_episodes_per_update",
    "max_episode_steps",
    "n_epochs",
    "batch_size",
    "learning_rate_init",
    "gamma",
    "gae_lambda",
    "clip",
    "entropy_coef",
    "hidden",
    "random_state",
    "device",
    "verbose",
)


def _fixed_weights(weights, n_objectives):
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.size != n_objectives:
        raise ValueError(
            f"weights has {w.size} entries; there are {n_objectives} objectives."
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(
            "weights must be finite and non-negative, with a positive sum; got "
            f"{w.tolist()}."
        )
    return w / w.sum()


def _check_state_indices(X, n_states):
    X = np.asarray(X)
    if not np.issubdtype(X.dtype, np.integer) or X.ndim != 1:
        raise ValueError(
            "a tabular agent takes a 1-D array of integer state indices; got "
            f"dtype {X.dtype} and shape {X.shape}."
        )
    if X.size and (X.min() < 0 or X.max() >= n_states):
        raise ValueError(f"state indices must lie in [0, {n_states}).")
    return X


class TabularMaxMinMORL(BaseEstimator):
    r"""Constrained max-min policy of a tabular multi-objective MDP, by dual descent.

    The problem: maximise the worst objective :math:`\min_k J_k(\pi)` over
    policies whose expected discounted costs stay within
    ``mdp.cost_limits`` (the limits are part of the data,
    :class:`TabularMOMDP`). Writing the minimum over objectives as a minimum
    over weights :math:`w` on the simplex and dualising the constraints with
    multipliers :math:`u \ge 0`,

    .. math::

        \max_\pi \min_{w \in \Delta_K,\, u \ge 0}
        \sum_k w_k J_k(\pi) - \sum_l u_l (J_{c,l}(\pi) - C_l),

    concave in the occupancy measure and linear in :math:`(w, u)`. Each
    iteration :math:`t` (:func:`maxmin_dual_descent`):

    1. the policy responds to the current weights: the entropy-regularised
       optimum (temperature ``temperature``) of the scalar reward
       :math:`\sum_k w_k r_k - \sum_l u_l c_l`;
    2. its returns :math:`J` and costs :math:`J_c` give the dual gradient:
       :math:`w \leftarrow \Pi_\Delta(w - \eta_t s J)`,
       :math:`u \leftarrow \max(0, u + \eta_t s (J_c - C))`, with
       :math:`s = (1-\gamma)/\max(|r|, |c|)` and
       :math:`\eta_t` = ``dual_lr`` / :math:`\sqrt{t+1}` (the paper's
       schedule) or constant.

    ``evaluation="exact"`` computes the best response by soft policy
    iteration and the returns by linear solves, on the known transitions.
    ``evaluation="sampled"`` is the model-free mode (the paper's sampled
    soft-Q variant): the transitions are only sampled, the best response is
    tracked by soft Q-learning and the returns by TD evaluation on the same
    samples; it needs more iterations (the benchmark runs 10,000).

    **What is proven, what is measured.** The worst objective of the
    regularised optimum is within :math:`\tau \log|A| / (1-\gamma)` below
    the exact LP optimum (:func:`solve_maxmin_lp`), and the dual iteration
    converges to the regularised optimum in dual value (the regularised
    dual function is convex and differentiable; steps
    :math:`\propto 1/\sqrt{t}`). No rate is proven here for the iterates;
    ``benchmarks/bench_maxmin_morl.py`` measures it against the regularised
    optimum computed by an independent convex solver
    (:func:`~sklearn_ext.rl._maxmin.solve_regularised_maxmin`). On ten random
    MO-CMDPs the exact mode comes within ``0.01`` of the LP after
    :claim:`maxmin_morl_tabular.iterations_min` to
    :claim:`maxmin_morl_tabular.iterations_max` iterations, and within
    :claim:`maxmin_morl_tabular.gap_min` to :claim:`maxmin_morl_tabular.gap_max`
    of it after the default ``max_iter=2000``.

    Parameters
    ----------
    weights : array-like of shape (n_objectives,), default=None
        None learns the max-min weights. Fixed non-negative weights
        (normalised to sum to one) give the constrained linear
        scalarisation (utilitarian) baseline with the same iteration.
    temperature : float, default=0.01
        Entropy temperature :math:`\tau` of the best response (smaller is
        closer to the unregularised optimum, and slower).
    dual_lr : float, default=5.0
        Step size of the dual variables before the schedule (on the scaled
        gradient, whose entries lie in [-1, 1]).
    schedule : {"sqrt_inverse", "constant"}, default="sqrt_inverse"
        Step-size schedule of the dual variables.
    max_iter : int, default=2000
        Dual iterations.
    evaluation : {"exact", "sampled"}, default="exact"
        Exact best responses and returns, or the model-free sampled soft-Q
        mode.
    q_lr : float, default=0.3
        Sampled mode: initial step of the soft Q-learning and TD steps, in
        (0, 1], decaying as ``q_lr / (1 + t / 1000)``.
    n_samples : int, default=4
        Sampled mode: next states drawn per state-action pair and iteration.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampled mode's draws and the draws of
        ``predict(..., deterministic=False)`` after the fit.

    Attributes
    ----------
    policy_ : ndarray of shape (n_states, n_actions)
        The learned stochastic policy (the sampled mode: the average of the
        last half of the iterates' policies).
    weights_ : ndarray of shape (n_objectives,)
        The final dual weights on the objectives.
    weights_path_ : ndarray of shape (n_iter_, n_objectives)
        The weights of each iteration's best response.
    multipliers_ : ndarray of shape (n_iter_, n_constraints)
        The cost multipliers of each iteration's best response.
    objective_values_ : ndarray of shape (n_objectives,)
        Exact discounted return of each objective under ``policy_``.
    constraint_values_ : ndarray of shape (n_constraints,)
        Exact discounted cost of each constraint under ``policy_``.
    worst_objective_ : ndarray of shape (n_iter_,)
        :math:`\min_k J_k` of each iteration's policy (exact values).
    violation_ : ndarray of shape (n_iter_,)
        Largest constraint excess :math:`\max(0, \max_l J_{c,l} - C_l)` of
        each iteration's policy.
    n_objectives_ : int
    n_constraints_ : int
    n_iter_ : int

    See Also
    --------
    solve_maxmin_lp : The exact occupancy-measure LP, the reference.
    ConstrainedMaxMinMORL : The same problem on a gymnasium environment.

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
    >>> from sklearn_ext.rl import (TabularMaxMinMORL, make_random_momdp,
    ...                             solve_maxmin_lp)
    >>> mdp = make_random_momdp(random_state=0)
    >>> agent = TabularMaxMinMORL().fit(mdp)
    >>> bool(abs(agent.score(mdp) - solve_maxmin_lp(mdp).value) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "weights": ["array-like", None],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "dual_lr": [Interval(Real, 0, None, closed="neither")],
        "schedule": [StrOptions({"sqrt_inverse", "constant"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "evaluation": [StrOptions({"exact", "sampled"})],
        "q_lr": [Interval(Real, 0, 1, closed="right")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    _paper = (
        "Park, Nam, Byeon, Leshem, Sung, Constrained Multi-Objective "
        "Reinforcement Learning with Max-Min Criterion, ICML 2026"
    )
    _bench_name = "maxmin_morl"
    _not_a_data_estimator = NOT_A_DATA_ESTIMATOR

    def __init__(
        self,
        *,
        weights=None,
        temperature=0.01,
        dual_lr=5.0,
        schedule="sqrt_inverse",
        max_iter=2000,
        evaluation="exact",
        q_lr=0.3,
        n_samples=4,
        random_state=None,
    ):
        self.weights = weights
        self.temperature = temperature
        self.dual_lr = dual_lr
        self.schedule = schedule
        self.max_iter = max_iter
        self.evaluation = evaluation
        self.q_lr = q_lr
        self.n_samples = n_samples
        self.random_state = random_state

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__())

    @classmethod
    def _get_test_params(cls):
        return {"max_iter": 50, "random_state": 0}

    @staticmethod
    def _check_mdp(mdp, method):
        # A one-item list is what GridSearchCV's indexing makes of [mdp].
        if isinstance(mdp, list | tuple) and len(mdp) == 1:
            mdp = mdp[0]
        if not isinstance(mdp, TabularMOMDP):
            raise TypeError(
                f"TabularMaxMinMORL.{method} takes a TabularMOMDP (transitions, "
                "reward tables, costs and their limits), or a list holding "
                f"one; got {type(mdp).__name__}."
            )
        return mdp

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Run the dual iteration on a tabular multi-objective MDP.

        Parameters
        ----------
        X : TabularMOMDP or list of one TabularMOMDP
            The MDP; its ``cost_limits`` (if any) are the constraints. A
            one-item list (what GridSearchCV passes of ``[mdp]``) is the MDP
            it holds.
        y : None
            Ignored.

        Returns
        -------
        self : TabularMaxMinMORL
            Fitted solver.
        """
        X = self._check_mdp(X, "fit")
        fixed = self.weights is not None
        rng = check_random_state(self.random_state)
        result = maxmin_dual_descent(
            X,
            temperature=self.temperature,
            lr=self.dual_lr,
            n_iter=self.max_iter,
            schedule=self.schedule,
            weights_init=_fixed_weights(self.weights, X.n_objectives)
            if fixed
            else None,
            update_weights=not fixed,
            evaluation=self.evaluation,
            q_lr=self.q_lr,
            n_samples=self.n_samples,
            random_state=rng,
        )
        self.policy_ = result.policy
        self.weights_path_ = result.weights
        self.weights_ = result.weights[-1].copy()
        self.multipliers_ = result.multipliers
        self.objective_values_ = result.objective_values
        self.constraint_values_ = result.constraint_values
        self.worst_objective_ = result.worst
        self.violation_ = result.violation
        self.n_objectives_ = X.n_objectives
        self.n_constraints_ = X.n_constraints
        self.n_iter_ = self.max_iter
        self._draws = np.random.RandomState(rng.randint(np.iinfo(np.int32).max))
        return self

    def predict(self, observations, deterministic=True):
        """Return an action of the learned policy in each state.

        Parameters
        ----------
        observations : array-like of shape (n_samples,)
            State indices.
        deterministic : bool, default=True
            True: the most probable action. False: a draw from the learned
            stochastic policy (a generator seeded by the fit's
            ``random_state``). The max-min value and the cost limits hold
            for the stochastic policy, not for the most probable action.

        Returns
        -------
        actions : ndarray of shape (n_samples,)
            One action per state.
        """
        check_is_fitted(self, "policy_")
        states = _check_state_indices(observations, self.policy_.shape[0])
        if deterministic:
            return self.policy_[states].argmax(axis=1)
        cum = np.cumsum(self.policy_[states], axis=1)
        u = self._draws.random_sample((len(states), 1))
        return np.minimum((u > cum).sum(axis=1), self.policy_.shape[1] - 1)

    def score(self, X, y=None):
        """Worst objective of the learned policy on an MDP, exactly.

        A policy that exceeds a cost limit of ``X`` (by more than ``1e-8``
        relative to the limit) scores below every feasible policy: the
        least possible worst objective, ``min(rewards) / (1 - gamma)``, minus
        one plus its largest excess.

        Parameters
        ----------
        X : TabularMOMDP or list of one TabularMOMDP
            The MDP to score on, with its cost limits (the one fitted on, or
            one of the same size).
        y : None
            Ignored.

        Returns
        -------
        score : float
            :math:`\\min_k J_k` of ``policy_`` on ``X`` if it meets the
            limits; below every feasible score otherwise.
        """
        check_is_fitted(self, "policy_")
        X = self._check_mdp(X, "score")
        if X.rewards.shape[1:] != self.policy_.shape:
            raise ValueError(
                f"the MDP has {X.n_states} states and {X.n_actions} actions; "
                f"the policy was fitted on {self.policy_.shape[0]} and "
                f"{self.policy_.shape[1]}."
            )
        worst = float(X.evaluate(self.policy_).min())
        if not X.n_constraints:
            return worst
        excess = X.evaluate(self.policy_, rewards=X.costs) - X.cost_limits
        excess = float(np.max(excess - 1e-8 * np.maximum(1.0, np.abs(X.cost_limits))))
        if excess <= 0:
            return worst
        return float(X.rewards.min() / (1.0 - X.gamma)) - 1.0 - excess


class ConstrainedMaxMinMORL(LagrangianActorCritic):
    r"""Max-min multi-objective RL under explicit constraints, on an environment.

    The problem: maximise the worst objective :math:`\min_k J_k(\pi)` over
    policies whose mean episode costs stay within ``cost_limits``,
    :math:`J_{c,l}(\pi) \le C_l`, by the primal-dual scheme of
    :class:`TabularMaxMinMORL` with function approximation: the primal
    player is the PPO actor-critic of :class:`LagrangianActorCritic` (one
    value head per objective and per cost), the dual players are the
    objective weights :math:`w` on the simplex and the cost multipliers
    :math:`u \ge 0`. Each update collects ``n_episodes_per_update``
    episodes, takes ``n_epochs`` of PPO steps on the advantage
    :math:`\sum_k w_k A_k - \sum_l u_l A_{c,l}`, and then takes the dual
    step on the episodes' mean returns :math:`J` and costs :math:`J_c`.

    The dual step is the paper's projected gradient step with steps
    :math:`\eta_t \propto 1/\sqrt{t+1}` (``schedule="sqrt_inverse"``):

    * ``weights_update="dual"``: :math:`w \leftarrow \Pi_\Delta(w - \eta_t
      J / \max_k |J_k|)` with :math:`\eta_t` = ``weights_lr`` /
      :math:`\sqrt{t+1}`;
    * ``multiplier_update="dual"``: :math:`u \leftarrow \max(0, u +
      \eta'_t (J_c - C) / C)` with :math:`\eta'_t` = ``lambda_lr`` /
      :math:`\sqrt{t+1}` (the relative excess, so that ``lambda_lr`` does
      not depend on the cost's unit).

    Two alternatives, measured against it in the benchmark:
    ``weights_update="softmin"`` sets :math:`w = \mathrm{softmax}(-J /
    (\tau_w \max_k |J_k|))`, the weight player's entropy-regularised exact
    minimisation; ``multiplier_update="pi"`` is a proportional-integral
    controller on the relative excess (integral gain ``lambda_lr``,
    constant, proportional gain 3), which damps the overshoot of the dual
    step under a policy that lags.

    This is the environment agent; a tabular MDP with known transitions is
    solved by :class:`TabularMaxMinMORL` (exact or sampled soft-Q
    iteration). No convergence guarantee carries over to the PPO player:
    the guarantees of the tabular solver need exact (or consistent)
    best responses.

    Objectives and costs are undiscounted episode sums. The reward must be
    a vector (one entry per objective, the MO-Gymnasium convention), and
    ``info["costs"]`` must hold one non-negative cost per constraint at
    every step. Before the critics learn them, the reward columns are
    divided by their common mean magnitude per step and each cost column by
    its own, over :math:`1-\gamma` (fixed at the first update of a fit), so
    that the weights act on the objectives as given and the multipliers on
    advantages of one scale. The action space may be Discrete,
    MultiDiscrete (a factorised policy, one categorical per sub-action) or
    Box.

    Parameters
    ----------
    cost_limits : array-like of shape (n_costs,), default=None
        Limit of each mean episode cost, one per cost the environment
        reports. None ignores the costs: unconstrained max-min (the ICML
        2024 formulation).
    weights : array-like of shape (n_objectives,), default=None
        None learns the max-min weights. Fixed non-negative weights
        (normalised to sum to one) give the linear scalarisation it is
        compared with: the constrained utilitarian baseline, or with
        ``cost_limits=None`` plain linear scalarisation.
    weights_update : {"dual", "softmin"}, default="dual"
        The paper's projected dual step, or the soft minimum (see above).
    weights_lr : float, default=0.5
        Step of the dual weights before the schedule.
    schedule : {"sqrt_inverse", "constant"}, default="sqrt_inverse"
        Schedule of the dual steps (weights, and multipliers with
        ``multiplier_update="dual"``).
    weights_temperature : float, default=0.02
        :math:`\tau_w` of ``weights_update="softmin"``.
    multiplier_update : {"dual", "pi"}, default="dual"
        The paper's projected dual step, or the PI controller (see above).
    lambda_lr : float, default=1.0
        Step of the multipliers per unit of relative excess cost (before
        the schedule with ``"dual"``; the integral gain with ``"pi"``).
    total_timesteps : int, default=230_400
        Training budget in environment steps: updates run until at least
        this many steps were taken. The default is 300 updates of 8 days of
        :class:`BuildingThermalEnv` (96 steps a day), the budget of the
        former default ``n_updates=300``.
    n_episodes_per_update : int, default=8
        Episodes collected per update.
    max_episode_steps : int, default=200
        Episodes are cut after this many steps.
    n_epochs : int, default=10
        Passes over each update's data.
    batch_size : int, default=256
        Minibatch size of the PPO steps.
    learning_rate_init : float, default=1e-3
        Adam's step size.
    gamma : float, default=0.99
        Discount of the advantages.
    gae_lambda : float, default=0.95
        GAE's bias-variance parameter.
    clip : float, default=0.2
        PPO's ratio clip.
    entropy_coef : float, default=0.01
        Weight of the policy entropy bonus.
    hidden : int, default=64
        Width of the hidden layers of the actor and of the critic.
    random_state : int, RandomState instance or None, default=None
        Seeds the network, the episodes, the minibatches and the draws of
        ``predict(..., deterministic=False)`` after the fit.
    device : str, default="auto"
        Torch device.
    verbose : int, default=0
        Progress of the updates.

    Attributes
    ----------
    module_ : torch.nn.Module
        The actor and critics.
    n_timesteps_ : int
        Environment steps taken (at least ``total_timesteps``).
    weights_ : ndarray of shape (n_objectives,)
        The final dual weights on the objectives.
    weights_path_ : ndarray of shape (n_iter_ + 1, n_objectives)
        The weights before each update and at the end.
    multipliers_ : ndarray of shape (n_iter_ + 1, n_constraints)
        The multipliers, likewise.
    objective_values_ : ndarray of shape (n_objectives,)
        Mean episode returns of the last update.
    constraint_values_ : ndarray of shape (n_iter_, n_constraints)
        Mean episode cost of each update.
    returns_ : ndarray of shape (n_iter_, n_objectives)
        Mean episode return of each objective in each update.
    worst_objective_ : ndarray of shape (n_iter_,)
        :math:`\min_k J_k` of each update's episodes.
    violation_ : ndarray of shape (n_iter_,)
        Largest excess :math:`\max_l (J_{c,l} - C_l)` of each update (0
        without limits).
    n_objectives_ : int
    n_constraints_ : int
    n_iter_ : int
    device_ : str

    See Also
    --------
    TabularMaxMinMORL : The tabular solver, with its guarantees.
    solve_maxmin_lp : The exact occupancy-measure LP.
    BuildingThermalEnv : A three-zone building with an energy budget.
    LagrangianActorCritic : PPO-Lagrangian for a scalar reward.

    Notes
    -----
    The learned policy is stochastic: the constraints and the max-min value
    hold for the stochastic policy (``predict(..., deterministic=False)``),
    not for the most probable action (``predict(observations)``).
    :meth:`score` runs the stochastic policy and returns its worst mean
    episode return over the objectives (the max-min objective); a policy
    whose mean episode cost exceeds a limit scores below every feasible
    one (see :meth:`LagrangianActorCritic.score`).

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
    >>> from sklearn_ext.rl import BuildingThermalEnv, ConstrainedMaxMinMORL
    >>> env = BuildingThermalEnv()
    >>> agent = ConstrainedMaxMinMORL(cost_limits=[290.0], total_timesteps=384,
    ...                               n_episodes_per_update=2,
    ...                               max_episode_steps=env.horizon,
    ...                               random_state=0).fit(env)
    >>> agent.n_iter_, agent.n_timesteps_, agent.weights_path_.shape
    (2, 384, (3, 3))
    """

    _parameter_constraints: dict = {
        **{
            k: v
            for k, v in LagrangianActorCritic._parameter_constraints.items()
            if k in _PPO_PARAMS or k in ("total_timesteps", "lambda_lr", "cost_limits")
        },
        "weights": ["array-like", None],
        "weights_update": [StrOptions({"dual", "softmin"})],
        "weights_lr": [Interval(Real, 0, None, closed="neither")],
        "schedule": [StrOptions({"sqrt_inverse", "constant"})],
        "weights_temperature": [Interval(Real, 0, None, closed="neither")],
        "multiplier_update": [StrOptions({"dual", "pi"})],
    }

    _paper = (
        "Park, Nam, Byeon, Leshem, Sung, Constrained Multi-Objective "
        "Reinforcement Learning with Max-Min Criterion, ICML 2026"
    )
    _bench_name = "maxmin_morl"
    # The actor-critic of the parent, fixed: one value head per signal; the
    # multiplier rule is chosen by multiplier_update (see _violation).
    critic = "dedicated"
    multiplier = "pid"
    pid_kd = 0.0
    lambda_init = 0.0
    _limits_required = False
    _env_takes = "a gymnasium environment with a vector reward and info['costs']"

    def __init__(
        self,
        *,
        cost_limits=None,
        weights=None,
        weights_update="dual",
        weights_lr=0.5,
        schedule="sqrt_inverse",
        weights_temperature=0.02,
        multiplier_update="dual",
        lambda_lr=1.0,
        total_timesteps=230_400,
        n_episodes_per_update=8,
        max_episode_steps=200,
        n_epochs=10,
        batch_size=256,
        learning_rate_init=1e-3,
        gamma=0.99,
        gae_lambda=0.95,
        clip=0.2,
        entropy_coef=0.01,
        hidden=64,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.cost_limits = cost_limits
        self.weights = weights
        self.weights_update = weights_update
        self.weights_lr = weights_lr
        self.schedule = schedule
        self.weights_temperature = weights_temperature
        self.multiplier_update = multiplier_update
        self.lambda_lr = lambda_lr
        self.total_timesteps = total_timesteps
        self.n_episodes_per_update = n_episodes_per_update
        self.max_episode_steps = max_episode_steps
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.clip = clip
        self.entropy_coef = entropy_coef
        self.hidden = hidden
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    @classmethod
    def _get_test_params(cls):
        return {
            "total_timesteps": 192,
            "n_episodes_per_update": 2,
            "hidden": 8,
            "device": "cpu",
            "random_state": 0,
        }

    @property
    def pid_kp(self):
        # The proportional gain of the parent's multiplier_step: 3 for the
        # PI controller, 0 for the paper's dual step.
        return 3.0 if self.multiplier_update == "pi" else 0.0

    # -- the vector-reward hooks of LagrangianActorCritic -------------------
    def _check_reward_width(self, width):
        if width < 2:
            raise ValueError(
                "ConstrainedMaxMinMORL needs a vector reward with one entry per "
                f"objective (at least 2); the environment returns {width}."
            )

    def _initial_weights(self):
        if self.weights is not None:
            return _fixed_weights(self.weights, self.n_rewards_)
        return np.full(self.n_rewards_, 1.0 / self.n_rewards_)

    def _weights_step(self, weights, returns, step):
        if self.weights is not None:
            return weights
        scale = max(float(np.max(np.abs(returns))), 1e-12)
        if self.weights_update == "softmin":
            z = (returns.min() - returns) / (self.weights_temperature * scale)
            return np.exp(z) / np.exp(z).sum()
        eta = step_size(self.weights_lr, step, self.schedule)
        return _project_simplex(weights - eta * returns / scale)

    def _scale_signals(self, signals):
        # The reward columns share one scale (so that the weights act on the
        # objectives as given), each cost column has its own: the mean
        # magnitude per step over 1 - gamma, fixed at the first update of a
        # fit, so that every value head learns returns of order one.
        if self._signal_scales is None:
            magnitude = np.maximum(np.abs(signals).mean(axis=0), 1e-8)
            m = self.n_rewards_
            magnitude[:m] = magnitude[:m].mean()
            self._signal_scales = magnitude / (1.0 - self.gamma)
        return signals / self._signal_scales

    def _violation(self, costs, limits):
        # What the parent's multiplier_step integrates: the relative excess,
        # times the schedule's 1/sqrt(t+1) for the paper's dual step (the
        # parent's step lambda_lr is constant).
        finite = np.isfinite(limits)
        safe = np.where(finite, np.maximum(limits, 1e-12), 1.0)
        excess = np.where(finite, (costs - limits) / safe, -1.0)
        if self.multiplier_update == "dual":
            excess = excess * step_size(1.0, self._dual_step, self.schedule)
            self._dual_step += 1
        return excess

    def _record_weights(self, weights):
        self.weights_path_ = weights
        self.weights_ = weights[-1].copy()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the constrained max-min policy of an environment.

        Parameters
        ----------
        X : gymnasium.Env
            An environment whose reward is a vector (one entry per
            objective) and whose ``info["costs"]`` holds one non-negative
            cost per constraint at every step.
        y : None
            Ignored.

        Returns
        -------
        self : ConstrainedMaxMinMORL
            Fitted agent.
        """
        self._signal_scales = None
        self._dual_step = 0
        super().fit(X)
        self.n_objectives_ = self.n_rewards_
        self.objective_values_ = self.returns_[-1].copy()
        self.worst_objective_ = self.returns_.min(axis=1)
        if self.cost_limits is None:
            self.violation_ = np.zeros(self.n_iter_)
        else:
            limits = np.asarray(self.cost_limits, dtype=np.float64).reshape(-1)
            self.violation_ = np.max(self.constraint_values_ - limits, axis=1)
        return self
