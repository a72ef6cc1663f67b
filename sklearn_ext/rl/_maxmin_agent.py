"""ConstrainedMaxMinMORL: max-min multi-objective RL with explicit constraints."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import dataclasses
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

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

__all__ = ["ConstrainedMaxMinMORL"]

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


class ConstrainedMaxMinMORL(LagrangianActorCritic):
    r"""Max-min multi-objective RL under explicit constraints, by primal-dual descent.

    The problem: maximise the worst objective :math:`\min_k J_k(\pi)` over
    policies whose constraint costs stay within their limits,
    :math:`J_{c,l}(\pi) \le C_l`. Writing the minimum over objectives as a
    minimum over weights :math:`w` on the simplex and dualising the
    constraints with multipliers :math:`u \ge 0`,

    .. math::

        \max_\pi \min_{w \in \Delta_K,\, u \ge 0}
        L(\pi, w, u) = \sum_k w_k J_k(\pi) - \sum_l u_l (J_{c,l}(\pi) - C_l),

    which is concave in the occupancy measure of :math:`\pi` and linear in
    :math:`(w, u)`, so the max and the min exchange (strong duality, given a
    strictly feasible policy) and the problem is solved on the dual. Each
    iteration :math:`t`:

    1. the policy responds to the current weights: the entropy-regularised
       optimum of the scalar reward :math:`\sum_k w_k r_k - \sum_l u_l c_l`
       (temperature ``temperature``; unique, and a smooth function of
       :math:`(w, u)`);
    2. its values give the dual gradient, and
       :math:`w \leftarrow \Pi_\Delta(w - \eta_t J / s)`,
       :math:`u \leftarrow \max(0, u + \eta_t (J_c - C) / s)`, where
       :math:`\Pi_\Delta` projects onto the simplex, :math:`s` makes the
       step scale-free (the largest absolute reward or cost over
       :math:`1 - \gamma` on a tabular MDP) and :math:`\eta_t` is
       ``weights_lr`` / :math:`\sqrt{t+1}` (``schedule="sqrt_inverse"``,
       the paper's) or constant.

    **Convergence** (tabular, exact evaluation): the regularised dual
    function is convex and smooth in :math:`(w, u)`, so projected gradient
    steps below its stability limit converge to its minimum, and the
    measured rate is the paper's linear one: the gap of the best response
    to the regularised optimum falls as :math:`e^{-ct}` with constant steps
    and as :math:`e^{-c\sqrt{t}}` with :math:`\eta_t \propto 1/\sqrt{t}`
    (large early steps cycle first, then settle). The regularised optimum
    is within :math:`\tau \log|A| / (1-\gamma)` of the exact LP optimum
    (:func:`solve_maxmin_lp`), and the constraint violation vanishes.
    ``benchmarks/bench_maxmin_morl.py`` plots the gap (measured on ten
    random MO-CMDPs: within ``0.01`` of the LP after
    :claim:`maxmin_morl_tabular.iterations_min` to
    :claim:`maxmin_morl_tabular.iterations_max` iterations, and within
    :claim:`maxmin_morl_tabular.gap_min` to :claim:`maxmin_morl_tabular.gap_max`
    after the default ``max_iter=2000``).

    Two inputs:

    * a :class:`TabularMOMDP` (``fit(mdp)``): the exact iteration above,
      ``max_iter`` times;
    * a gymnasium environment with a **vector reward** (one entry per
      objective, the MO-Gymnasium convention) and ``info["costs"]``:
      function approximation in torch. The best response becomes
      ``n_epochs`` of PPO steps (the actor-critic of
      :class:`LagrangianActorCritic`, one value head per objective and per
      cost) on the advantage :math:`\sum_k w_k A_k - \sum_l u_l A_{c,l}`;
      after each update the weights respond to the mean episode returns
      :math:`J` (``weights_update``: by default the soft minimum
      :math:`w = \mathrm{softmax}(-J/(\tau_w s))`, :math:`s` the largest
      return magnitude, or the projected step above) and ``u`` takes a
      projected proportional-integral step (:func:`multiplier_step`,
      integral gain ``lambda_lr``, proportional gain 3, which damps the
      overshoot of plain dual ascent under a lagging policy) on the
      relative excess :math:`(J_c - C)/C`. Objectives and costs are
      undiscounted episode sums; before the critics learn them, each reward
      and cost is divided by its mean magnitude per step over
      :math:`1-\gamma` (fixed at the first update), so that the weights and
      the multipliers act on advantages of one scale. The environment's
      action space may be Discrete, MultiDiscrete (a factorised policy,
      one categorical per sub-action) or Box.

    Parameters
    ----------
    constraints : array-like of shape (n_constraints,), default=None
        Limit of each constraint: the expected discounted cost on a
        :class:`TabularMOMDP`, the mean episode cost on an environment.
        None ignores the costs: unconstrained max-min (the ICML 2024
        formulation).
    weights : array-like of shape (n_objectives,), default=None
        None learns the max-min weights. Fixed non-negative weights
        (normalised to sum to one) turn the agent into the linear
        scalarisation it is compared with: the constrained utilitarian
        baseline, or with ``constraints=None`` plain linear scalarisation.
    temperature : float, default=0.01
        Entropy temperature of the tabular best response (smaller is closer
        to the unregularised optimum, and slower).
    weights_lr : float, default=5.0
        Step size of the dual weights, before the schedule (on the scaled
        gradient, whose entries lie in [-1, 1]).
    schedule : {"sqrt_inverse", "constant"}, default="sqrt_inverse"
        Step-size schedule of the dual weights.
    weights_update : {"auto", "dual", "softmin"}, default="auto"
        How the objective weights move. ``"dual"``: the projected dual
        gradient step above. ``"softmin"``: the weight player's
        entropy-regularised exact minimisation,
        :math:`w = \mathrm{softmax}(-J / (\tau_w s))`, so that the policy
        ascends the soft minimum of the objectives (environments only).
        ``"auto"`` is ``"dual"`` on a tabular MDP and ``"softmin"`` on an
        environment, where the dual step makes a policy that responds by
        gradient steps cycle between objectives (see Notes).
    weights_temperature : float, default=0.02
        :math:`\tau_w` of ``"softmin"``, relative to the largest return
        magnitude :math:`s`: the soft minimum lies within
        :math:`\tau_w s \log K` below the minimum.
    max_iter : int, default=2000
        Dual iterations on a tabular MDP.
    lambda_lr : float, default=0.2
        Integral gain of the constraint multipliers on an environment, per
        unit of relative excess cost.
    n_updates : int, default=300
        PPO updates on an environment.
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
        Discount of the advantages (environments only; a tabular MDP has its
        own).
    gae_lambda : float, default=0.95
        GAE's bias-variance parameter.
    clip : float, default=0.2
        PPO's ratio clip.
    entropy_coef : float, default=0.01
        Weight of the policy entropy bonus.
    hidden : int, default=64
        Width of the hidden layers of the actor and of the critic.
    random_state : int, RandomState instance or None, default=None
        Seeds the network, the episodes and the minibatches.
    device : str, default="auto"
        Torch device (environments only).
    verbose : int, default=0
        Progress of the updates.

    Attributes
    ----------
    policy_ : ndarray of shape (n_states, n_actions)
        The learned stochastic policy (tabular fits).
    module_ : torch.nn.Module
        The actor and critics (environment fits).
    weights_ : ndarray of shape (n_objectives,)
        The final dual weights on the objectives.
    weights_path_ : ndarray
        Tabular: shape (max_iter, n_objectives), the weights of each
        iteration's best response. Environment: shape (n_updates + 1,
        n_objectives), the weights before each update and at the end.
    multipliers_ : ndarray
        The constraint multipliers, likewise (n_constraints columns).
    objective_values_ : ndarray of shape (n_objectives,)
        The objectives of the final policy: exact discounted values on a
        tabular MDP, the mean episode returns of the last update on an
        environment.
    constraint_values_ : ndarray
        Tabular: shape (n_constraints,), the final policy's exact discounted
        costs. Environment: shape (n_updates, n_constraints), the mean
        episode cost of each update.
    returns_ : ndarray of shape (n_updates, n_objectives)
        Mean episode return of each objective in each update (environments).
    worst_objective_ : ndarray of shape (n_iterations,)
        :math:`\min_k J_k` of each iteration's policy.
    violation_ : ndarray of shape (n_iterations,)
        Largest constraint excess :math:`\max_l (J_{c,l} - C_l)` of each
        iteration's policy (0 without constraints).
    n_objectives_ : int
    n_constraints_ : int
    n_iter_ : int
    device_ : str

    See Also
    --------
    solve_maxmin_lp : The exact occupancy-measure LP, the reference.
    BuildingThermalEnv : A three-zone building with an energy budget.
    LagrangianActorCritic : PPO-Lagrangian for a scalar reward.

    Notes
    -----
    Why the environment default is the soft minimum: a policy that moves by
    gradient steps does not respond to the weights as the exact best
    response does, and the projected dual step then drives the weights to
    whichever objective is worst while the policy lags, which cycles. On a
    one-step problem whose constrained max-min optimum mixes two actions,
    the soft minimum ends closer to the optimum than the projected step
    (``benchmarks/bench_maxmin_morl.py``; the figures are in the user
    guide).

    The learned policy is stochastic: the constraints and the max-min value
    hold for :meth:`sample`, not for the most probable action that
    :meth:`predict` returns.

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
    >>> from sklearn_ext.rl import (ConstrainedMaxMinMORL, make_random_momdp,
    ...                             solve_maxmin_lp)
    >>> mdp, limits = make_random_momdp(random_state=0)
    >>> lp = solve_maxmin_lp(mdp, limits)
    >>> agent = ConstrainedMaxMinMORL(constraints=limits).fit(mdp)
    >>> bool(abs(agent.worst_objective_[-1] - lp.value) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        **{
            k: v
            for k, v in LagrangianActorCritic._parameter_constraints.items()
            if k in _PPO_PARAMS or k in ("n_updates", "lambda_lr")
        },
        "constraints": ["array-like", None],
        "weights": ["array-like", None],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "weights_lr": [Interval(Real, 0, None, closed="neither")],
        "schedule": [StrOptions({"sqrt_inverse", "constant"})],
        "weights_update": [StrOptions({"auto", "dual", "softmin"})],
        "weights_temperature": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    _paper = (
        "Park, Nam, Byeon, Leshem, Sung, Constrained Multi-Objective "
        "Reinforcement Learning with Max-Min Criterion, ICML 2026"
    )
    _bench_name = "maxmin_morl"
    # The actor-critic of the parent, fixed: one value head per signal and
    # projected gradient steps on the multipliers.
    critic = "dedicated"
    multiplier = "pid"
    pid_kp = 3.0
    pid_kd = 0.0
    lambda_init = 0.0
    _limits_param = "constraints"
    _limits_required = False
    _env_takes = (
        "a TabularMOMDP or a gymnasium environment with a vector reward and "
        "info['costs']"
    )

    def __init__(
        self,
        *,
        constraints=None,
        weights=None,
        temperature=0.01,
        weights_lr=5.0,
        schedule="sqrt_inverse",
        weights_update="auto",
        weights_temperature=0.02,
        max_iter=2000,
        lambda_lr=0.2,
        n_updates=300,
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
        self.constraints = constraints
        self.weights = weights
        self.temperature = temperature
        self.weights_lr = weights_lr
        self.schedule = schedule
        self.weights_update = weights_update
        self.weights_temperature = weights_temperature
        self.max_iter = max_iter
        self.lambda_lr = lambda_lr
        self.n_updates = n_updates
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
        return {"max_iter": 50, "n_updates": 2, "hidden": 8, "random_state": 0}

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
        if self._weights_rule() == "softmin":
            z = (returns.min() - returns) / (self.weights_temperature * scale)
            return np.exp(z) / np.exp(z).sum()
        eta = step_size(self.weights_lr, step, self.schedule)
        return _project_simplex(weights - eta * returns / scale)

    def _weights_rule(self, tabular=False):
        rule = self.weights_update
        if rule == "auto":
            return "dual" if tabular else "softmin"
        if rule == "softmin" and tabular:
            raise ValueError(
                "weights_update='softmin' needs an environment: on a tabular MDP "
                "the exact best response would jump with the weights; use 'dual' "
                "or 'auto'."
            )
        return rule

    def _scale_signals(self, signals):
        # Each reward and cost column is divided by its mean magnitude per
        # step over 1 - gamma (fixed at the first update of a fit), so that
        # every value head learns returns of order one. Unscaled, the cost
        # heads' errors (hundreds of kWh on the thermal model) dominate the
        # gradient norm that PPO clips, the actor barely moves, and the
        # policy stopped responding to the multiplier.
        if self._signal_scales is None:
            magnitude = np.abs(signals).mean(axis=0)
            self._signal_scales = np.maximum(magnitude, 1e-8) / (1.0 - self.gamma)
        return signals / self._signal_scales

    def _violation(self, costs, limits):
        finite = np.isfinite(limits)
        safe = np.where(finite, np.maximum(limits, 1e-12), 1.0)
        return np.where(finite, (costs - limits) / safe, -1.0)

    def _record_weights(self, weights):
        self.weights_path_ = weights
        self.weights_ = weights[-1].copy()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, env, y=None):
        """Learn the constrained max-min policy of a tabular MDP or environment.

        Parameters
        ----------
        env : TabularMOMDP or gymnasium.Env
            A tabular multi-objective MDP, or an environment whose reward is
            a vector (one entry per objective) and whose ``info["costs"]``
            holds one non-negative cost per constraint at every step.
        y : None
            Ignored.

        Returns
        -------
        self : ConstrainedMaxMinMORL
            Fitted agent.
        """
        if isinstance(env, TabularMOMDP):
            return self._fit_tabular(env)
        # What is not an environment is refused by LagrangianActorCritic's
        # check, with _env_takes in its message.
        for attr in ("policy_",):
            self.__dict__.pop(attr, None)
        self._signal_scales = None
        super().fit(env)
        self.n_objectives_ = self.n_rewards_
        self.objective_values_ = self.returns_[-1].copy()
        self.worst_objective_ = self.returns_.min(axis=1)
        if self.constraints is None:
            self.violation_ = np.zeros(self.n_iter_)
        else:
            limits = np.asarray(self.constraints, dtype=np.float64).reshape(-1)
            self.violation_ = np.max(self.constraint_values_ - limits, axis=1)
        return self

    def _fit_tabular(self, mdp):
        self._weights_rule(tabular=True)
        for attr in ("module_", "returns_", "n_rewards_", "obs_encoding_"):
            self.__dict__.pop(attr, None)
        if self.constraints is None and mdp.n_constraints:
            mdp = dataclasses.replace(mdp, costs=None)  # unconstrained max-min
        fixed = self.weights is not None
        result = maxmin_dual_descent(
            mdp,
            self.constraints,
            temperature=self.temperature,
            lr=self.weights_lr,
            n_iter=self.max_iter,
            schedule=self.schedule,
            weights_init=_fixed_weights(self.weights, mdp.n_objectives)
            if fixed
            else None,
            update_weights=not fixed,
        )
        self.policy_ = result.policy
        self.weights_path_ = result.weights
        self.weights_ = result.weights[-1].copy()
        self.multipliers_ = result.multipliers
        self.objective_values_ = result.objective_values
        self.constraint_values_ = result.constraint_values
        self.worst_objective_ = result.worst
        self.violation_ = result.violation
        self.n_objectives_ = mdp.n_objectives
        self.n_constraints_ = mdp.n_constraints
        self.n_iter_ = self.max_iter
        return self

    def _check_states(self, X):
        check_is_fitted(self)
        if not hasattr(self, "policy_"):
            return None
        S = self.policy_.shape[0]
        X = np.asarray(X)
        if not np.issubdtype(X.dtype, np.integer) or X.ndim != 1:
            raise ValueError(
                "a tabular agent takes a 1-D array of integer state indices; got "
                f"dtype {X.dtype} and shape {X.shape}."
            )
        if X.size and (X.min() < 0 or X.max() >= S):
            raise ValueError(f"state indices must lie in [0, {S}).")
        return X

    def sample(self, X, random_state=None):
        """Draw actions from the learned stochastic policy.

        The constraints and the max-min value hold for this policy, not for
        the deterministic :meth:`predict`.

        Parameters
        ----------
        X : array-like
            State indices (tabular fits) or observations, one per row.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        actions : ndarray
            One action per row.
        """
        states = self._check_states(X)
        if states is None:
            return super().sample(X, random_state)
        rng = check_random_state(random_state)
        cum = np.cumsum(self.policy_[states], axis=1)
        u = rng.random_sample((len(states), 1))
        return np.minimum((u > cum).sum(axis=1), self.policy_.shape[1] - 1)

    def predict(self, X):
        """Return the most probable action of the learned policy.

        Parameters
        ----------
        X : array-like
            State indices (tabular fits) or observations, one per row.

        Returns
        -------
        actions : ndarray
            One action per row (a row of sub-actions for a MultiDiscrete
            action space).
        """
        states = self._check_states(X)
        if states is None:
            return super().predict(X)
        return self.policy_[states].argmax(axis=1)
