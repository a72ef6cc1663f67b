"""LagrangianActorCritic: PPO-Lagrangian with dedicated or mixed critics."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.rl._base import (
    NOT_A_DATA_ESTIMATOR,
    check_env,
    check_observations,
    encode_observations,
    env_list,
    episode_envs,
    feature_dim,
    rl_tags,
)
from sklearn_ext.rl._lagrangian_tabular import (
    check_reachable_limits,
    multiplier_step,
)
from sklearn_ext.rl._rollouts import lockstep_episodes
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)
from sklearn_ext.utils._torch import (
    child_seeds,
    import_torch,
    init_parameters,
    make_generator,
    to_tensor,
    train_loop,
)

__all__ = ["LagrangianActorCritic"]


def _gae(rewards, values, gamma, lam):
    """Generalised advantages and value targets of one episode.

    ``rewards`` (T, m), ``values`` (T + 1, m) with the bootstrap value last
    (0 after a terminal state).
    """
    T = len(rewards)
    adv = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    for t in range(T - 1, -1, -1):
        delta = rewards[t] + gamma * values[t + 1] - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + values[:-1]


class _RunningMoments:
    """Running mean and variance of each column (the value targets per head).

    Batches are merged exactly (Chan et al.'s parallel update), so after any
    number of updates the moments are those of every target seen so far, as
    the value normalisation of common PPO implementations keeps them.
    """

    def __init__(self, width):
        self.count = 0
        self.mean = np.zeros(width)
        self.var = np.ones(width)

    def update(self, x):
        n = len(x)
        if n == 0:
            return
        mean, var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
        self.mean = self.mean + delta * n / total
        self.var = m2 / total
        self.count = total

    @property
    def std(self):
        return np.sqrt(np.maximum(self.var, 1e-8))


# Penalty of a candidate that breaks a cost limit in :meth:`score`.
INFEASIBLE_SCORE = -1e12


class LagrangianActorCritic(TorchDeviceMixin, BaseEstimator):
    """PPO-Lagrangian for constrained environments, with dedicated or mixed critics.

    The environment reports one cost per constraint in ``info["costs"]`` at
    every step; the constraint is that the mean episode cost (undiscounted
    sum over the episode) of constraint ``k`` stays below
    ``cost_limits[k]``. Each update collects ``n_episodes_per_update``
    episodes, takes ``n_epochs`` of clipped PPO steps on the Lagrangian
    advantage ``A_r - lambda . A_c`` (normalised), then moves the multipliers
    on the episodes' mean costs (:func:`multiplier_step`, the same rule as
    :class:`TabularLagrangian`). Updates run until ``total_timesteps``
    environment steps were taken.

    The actor and the critic are separate networks. By default their
    gradients are clipped separately (``grad_clip="separate"``) and each value
    head learns its targets standardised by their running mean and standard
    deviation (``normalize_targets=True``), so that the scale of the value
    targets (for a mixed critic, ``r - lambda . c`` grows with the
    multipliers) neither shrinks the actor's step through a shared clip nor
    sets the critic's step size. ``grad_clip="joint"`` with
    ``normalize_targets=False`` is the configuration before these fixes (one
    clip over both networks, raw targets), kept as a control.

    Parameters
    ----------
    critic : {"dedicated", "mixed"}, default="dedicated"
        ``"dedicated"``: value heads for the reward and each cost, their GAE
        advantages combined with the current multipliers. ``"mixed"``: one
        value head trained on ``r - lambda . c`` with the multipliers of each
        update, its advantage computed on the current mixed reward.
    cost_limits : array-like of shape (n_costs,)
        Limit of each constraint's mean episode cost (non-negative: costs are
        non-negative), one per cost the environment reports. Required.
    multiplier : {"pid", "gradient"}, default="pid"
        PID Lagrangian or projected dual gradient ascent.
    lambda_lr : float, default=0.05
        Dual step (integral gain), per unit of cost above the limit.
    pid_kp : float, default=0.05
        Proportional gain (``multiplier="pid"``).
    pid_kd : float, default=0.0
        Derivative gain (``multiplier="pid"``).
    lambda_init : float, default=0.0
        Initial multipliers.
    total_timesteps : int, default=23040
        Training budget in environment steps: updates run until at least this
        many steps were taken. The default is 60 updates of 8 days of
        :class:`DistributionGridEnv` (48 steps a day), the budget of the
        former default ``n_updates=60``.
    n_episodes_per_update : int, default=8
        Episodes collected per update.
    max_episode_steps : int, default=200
        Episodes are cut after this many steps.
    n_epochs : int, default=10
        Passes over each update's data.
    batch_size : int, default=128
        Minibatch size of the PPO steps.
    learning_rate_init : float, default=3e-4
        Adam's step size (one optimiser for the whole run).
    gamma : float, default=0.99
        Discount of the advantages.
    gae_lambda : float, default=0.95
        GAE's bias-variance parameter.
    clip : float, default=0.2
        PPO's ratio clip.
    entropy_coef : float, default=0.0
        Weight of the policy entropy bonus.
    max_grad_norm : float, default=0.5
        Largest Euclidean norm of a minibatch's gradient (see ``grad_clip``).
    grad_clip : {"separate", "joint"}, default="separate"
        ``"separate"``: the actor's gradient and the critic's are each clipped
        to ``max_grad_norm``. ``"joint"``: one clip over both networks, so a
        large critic gradient also shrinks the actor's step.
    normalize_targets : bool, default=True
        Train each value head on its targets standardised by their running
        mean and standard deviation (over all updates so far); the values
        enter the advantages de-standardised.
    hidden : int, default=64
        Width of the two hidden layers of the actor and of the critic.
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
        The actor and critic networks.
    multipliers_ : ndarray of shape (n_iter_ + 1, n_constraints)
        The multipliers before each update and at the end.
    constraint_values_ : ndarray of shape (n_iter_, n_constraints)
        Mean episode cost of each constraint in each update's episodes.
    returns_ : ndarray of shape (n_iter_,)
        Mean undiscounted episode return in each update's episodes.
    actor_clip_scale_ : ndarray of shape (n_iter_,)
        Mean factor by which the gradient clip scaled the actor's gradient in
        each update's minibatch steps (1: not clipped).
    target_scale_ : ndarray of shape (n_iter_, n_heads)
        Standard deviation of each value head's targets in each update.
    n_iter_ : int
        Updates run.
    n_timesteps_ : int
        Environment steps taken (at least ``total_timesteps``).
    n_constraints_ : int
    device_ : str

    See Also
    --------
    TabularLagrangian : The two critic structures on a tabular CMDP, exactly.
    DistributionGridEnv : A power grid with voltage and line-rating costs.

    Notes
    -----
    The constraints hold (on average) for the stochastic policy, which
    ``predict(observations, deterministic=False)`` samples; the deterministic
    action is a different policy whose costs may differ.

    References
    ----------
    .. [1] "Why Dedicated Critics: Eliminating Target Drift in Multi-Constraint
       RL", ICML 2026.
    .. [2] A. Ray, J. Achiam, D. Amodei, "Benchmarking Safe Exploration in Deep
       Reinforcement Learning", 2019 (PPO-Lagrangian).

    Examples
    --------
    >>> from sklearn_ext.rl import DistributionGridEnv, LagrangianActorCritic
    >>> agent = LagrangianActorCritic(cost_limits=[2.0, 4.0], total_timesteps=192,
    ...                               n_episodes_per_update=2, random_state=0)
    >>> agent = agent.fit(DistributionGridEnv())
    >>> agent.multipliers_.shape
    (3, 2)
    >>> agent.n_timesteps_
    192
    """

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "critic": [StrOptions({"dedicated", "mixed"})],
        "cost_limits": ["array-like", None],
        "multiplier": [StrOptions({"gradient", "pid"})],
        "lambda_lr": [Interval(Real, 0, None, closed="neither")],
        "pid_kp": [Interval(Real, 0, None, closed="left")],
        "pid_kd": [Interval(Real, 0, None, closed="left")],
        "lambda_init": [Interval(Real, 0, None, closed="left")],
        "total_timesteps": [Interval(Integral, 1, None, closed="left")],
        "n_episodes_per_update": [Interval(Integral, 1, None, closed="left")],
        "max_episode_steps": [Interval(Integral, 1, None, closed="left")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "gamma": [Interval(Real, 0, 1, closed="both")],
        "gae_lambda": [Interval(Real, 0, 1, closed="both")],
        "clip": [Interval(Real, 0, None, closed="neither")],
        "entropy_coef": [Interval(Real, 0, None, closed="left")],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "grad_clip": [StrOptions({"separate", "joint"})],
        "normalize_targets": ["boolean"],
        "hidden": [Interval(Integral, 1, None, closed="left")],
    }

    _paper = "Dedicated vs mixed critics in multi-constraint Lagrangian RL, ICML 2026"
    _bench_name = "safe_rl"
    _not_a_data_estimator = NOT_A_DATA_ESTIMATOR

    # Defaults of the gradient clip and the target normalisation for
    # subclasses whose constructor does not take them (ConstrainedMaxMinMORL).
    max_grad_norm = 0.5
    grad_clip = "separate"
    normalize_targets = True

    def __init__(
        self,
        *,
        critic="dedicated",
        cost_limits=None,
        multiplier="pid",
        lambda_lr=0.05,
        pid_kp=0.05,
        pid_kd=0.0,
        lambda_init=0.0,
        total_timesteps=23_040,
        n_episodes_per_update=8,
        max_episode_steps=200,
        n_epochs=10,
        batch_size=128,
        learning_rate_init=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip=0.2,
        entropy_coef=0.0,
        max_grad_norm=0.5,
        grad_clip="separate",
        normalize_targets=True,
        hidden=64,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.critic = critic
        self.cost_limits = cost_limits
        self.multiplier = multiplier
        self.lambda_lr = lambda_lr
        self.pid_kp = pid_kp
        self.pid_kd = pid_kd
        self.lambda_init = lambda_init
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
        self.max_grad_norm = max_grad_norm
        self.grad_clip = grad_clip
        self.normalize_targets = normalize_targets
        self.hidden = hidden
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__())

    @classmethod
    def _get_test_params(cls):
        return {
            "cost_limits": [2.0, 4.0],
            "total_timesteps": 192,
            "n_episodes_per_update": 2,
            "n_epochs": 1,
            "hidden": 8,
            "device": "cpu",
            "random_state": 0,
        }

    def _build_module(self, attr="module_"):
        from sklearn_ext.rl._lagrangian_nn import ActorCritic

        return ActorCritic(
            feature_dim(self.obs_encoding_),
            self.n_actions_,
            self.continuous_,
            self._n_heads(),
            self.hidden,
            nvec=self.nvec_,
        )

    def _n_heads(self):
        if self.critic == "dedicated":
            return self.n_rewards_ + self.n_constraints_
        return 1

    # Hooks of the reward side, overridden by agents with vector rewards
    # (ConstrainedMaxMinMORL): the name of the limits parameter, what fit
    # takes (for the message of a non-environment), the reward width the
    # environment must have, the reward weights and their update.
    _limits_param = "cost_limits"
    _limits_required = True
    _env_takes = (
        "a gymnasium environment whose info['costs'] holds the constraint "
        "costs, or a list of them"
    )

    def _check_reward_width(self, width):
        if width != 1:
            raise ValueError(
                f"{type(self).__name__} needs a scalar reward; the environment "
                f"returns a vector of {width} (ConstrainedMaxMinMORL takes "
                "vector rewards)."
            )

    def _initial_weights(self):
        return np.ones(1)

    def _weights_step(self, weights, returns, step):
        return weights

    def _violation(self, costs, limits):
        return costs - limits

    def _scale_signals(self, signals):
        """The per-step signals the critics learn, before any normalisation.

        The parent passes them as they come: the scale of the value targets
        is handled by ``normalize_targets`` (running statistics per head) and
        the actor is protected from the critic's gradient by
        ``grad_clip="separate"``. Subclasses may rescale them.
        """
        return signals

    def _record_weights(self, weights):
        """Store the reward weights of each update (nothing to store here)."""

    def _more_updates(self, n_updates, n_steps):
        """Whether fit runs another update, given the updates and steps so far.

        The budget is ``total_timesteps`` environment steps; a subclass that
        counts updates instead (an ``n_updates`` parameter and no
        ``total_timesteps``) runs that many updates.
        """
        total = getattr(self, "total_timesteps", None)
        if total is None:
            return n_updates < self.n_updates
        return n_steps < total

    def _score_objective(self, mean_returns):
        """What :meth:`score` reports of the mean episode return(s).

        The return itself for a scalar reward; for a vector reward, its worst
        entry (the max-min objective of :class:`ConstrainedMaxMinMORL`).
        """
        return float(np.min(mean_returns))

    def _as_envs(self, X, method):
        """An environment or a non-empty list of them, as a list."""
        if isinstance(X, (list, tuple)) and len(X) == 0:
            raise ValueError(
                f"{type(self).__name__}.{method} was given an empty list of "
                "environments."
            )
        envs = env_list(X, type(self).__name__, method)
        if envs is None:
            return list(X) if isinstance(X, (list, tuple)) else [X]
        return envs

    def _check_env(self, env):
        name, param = type(self).__name__, self._limits_param
        spec = check_env(
            env,
            name,
            method="fit",
            takes=self._env_takes,
            actions=("Box", "Discrete", "MultiDiscrete"),
            observations=("Box", "Discrete"),
            probe=True,
            info={"costs": "one cost per constraint"},
        )
        limits = getattr(self, param)
        if limits is None and self._limits_required:
            raise ValueError(
                f"{name} needs {param}: one limit per constraint "
                "cost the environment reports in info['costs']."
            )
        unconstrained = limits is None
        given = limits
        try:
            limits = np.asarray([] if unconstrained else limits, dtype=np.float64)
        except (TypeError, ValueError):
            limits = None
        if limits is None or limits.ndim != 1 or not np.all(np.isfinite(limits)):
            raise ValueError(
                f"{param} must be a 1-D list of finite numbers, one limit per "
                f"constraint; got {given!r}."
            )
        # The environment's costs must be non-negative (checked below and at
        # every step), so a negative limit on a mean episode cost is unmeetable.
        check_reachable_limits(
            limits,
            np.ones(limits.shape, dtype=bool),
            param=param,
            measure="mean episode cost",
        )
        self.continuous_ = spec.action_kind == "Box"
        self.n_actions_, self.nvec_ = spec.n_actions, spec.nvec
        self._low, self._high = spec.action_low, spec.action_high
        self.obs_encoding_ = spec.obs_encoding
        self._check_reward_width(spec.reward_width)
        self.n_rewards_ = spec.reward_width
        try:
            costs = np.ravel(np.asarray(spec.info["costs"], dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(
                "info['costs'] must hold numbers, one cost per constraint; got "
                f"{spec.info['costs']!r}."
            ) from None
        if unconstrained:
            # No limits (where the agent allows it): every cost is unbounded,
            # so its multiplier stays at zero.
            limits = np.full(costs.shape, np.inf)
        if costs.shape != limits.shape:
            raise ValueError(
                f"{param} has {limits.size} entries; the environment reports "
                f"{costs.size} costs per step."
            )
        _check_costs(costs[None, :], costs.size)
        return limits

    def _check_envs(self, envs):
        """Check every environment of a fit; they must agree on their spaces."""
        limits = self._check_env(envs[0])
        first = (
            self.continuous_,
            self.n_actions_,
            None if self.nvec_ is None else tuple(self.nvec_),
            repr(self.obs_encoding_),
            self.n_rewards_,
        )
        for i, env in enumerate(envs[1:], start=1):
            self._check_env(env)
            seen = (
                self.continuous_,
                self.n_actions_,
                None if self.nvec_ is None else tuple(self.nvec_),
                repr(self.obs_encoding_),
                self.n_rewards_,
            )
            if seen != first:
                raise ValueError(
                    f"environment {i} of the list differs from environment 0 in "
                    "its action space, observation space or reward width; "
                    f"{type(self).__name__} fits one policy for all of them."
                )
        if len(envs) > 1:
            self._check_env(envs[0])  # the attributes of the first
        return limits

    def _act(self, net, context, generator, deterministic=False, record=None):
        torch = import_torch()

        def act(observations):
            x = to_tensor(
                encode_observations(self.obs_encoding_, observations),
                dtype=context.dtype,
                device=context.device,
            )
            with torch.no_grad():
                dist = net.distribution(x)
                if deterministic:
                    a = dist.mean if self.continuous_ else dist.probs.argmax(-1)
                elif self.continuous_:
                    noise = torch.randn(dist.mean.shape, generator=generator)
                    a = dist.mean + dist.stddev * noise.to(dist.mean)
                else:
                    probs = dist.probs.cpu()
                    a = torch.multinomial(
                        probs.reshape(-1, probs.shape[-1]), 1, generator=generator
                    )
                    a = a.reshape(probs.shape[:-1])
            a = a.cpu().numpy().astype(np.float64)
            if self.continuous_:
                if record is not None:
                    record.append(a.copy())  # the draw, before the clip
                return np.clip(a, self._low, self._high)
            return a.astype(int)

        return act

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train on an environment (or a list of them) that reports costs.

        Parameters
        ----------
        X : gymnasium.Env or list of gymnasium.Env
            Box, Discrete or MultiDiscrete actions (a factorised policy);
            ``info["costs"]`` at every step, one non-negative finite cost per
            constraint. A list (tasks, e.g. the folds GridSearchCV makes) must
            share their spaces; the episodes cycle through it.
        y : None
            Ignored.

        Returns
        -------
        self : LagrangianActorCritic
            Fitted agent.
        """
        envs = self._as_envs(X, "fit")
        limits = self._check_envs(envs)
        import_torch()
        K = limits.size
        self.n_constraints_ = K
        context = self._torch_context()
        rng = check_random_state(self.random_state)
        net = init_parameters(self._build_module(), context.generator)
        net = net.to(device=context.device, dtype=context.dtype)
        from sklearn_ext.rl._lagrangian_nn import GroupClippedAdam

        actor = [p for n, p in net.named_parameters() if not n.startswith("critic.")]
        groups = (
            [{"params": actor}, {"params": list(net.critic.parameters())}]
            if self.grad_clip == "separate"
            else [{"params": actor + list(net.critic.parameters())}]
        )
        optimizer = GroupClippedAdam(
            groups, lr=self.learning_rate_init, max_norm=self.max_grad_norm
        )
        moments = _RunningMoments(self._n_heads()) if self.normalize_targets else None
        lam = np.full(K, float(self.lambda_init))
        pid = {"integral": lam.copy(), "previous": np.zeros(K)}
        kp, kd = (self.pid_kp, self.pid_kd) if self.multiplier == "pid" else (0, 0)
        lams, costs, returns = [lam.copy()], [], []
        clip_scales, target_scales = [], []
        w = self._initial_weights()
        weights = [w.copy()]
        step, n_steps, n_episodes = 0, 0, 0
        while self._more_updates(step, n_steps):
            seeds = child_seeds(rng, self.n_episodes_per_update)
            copies = episode_envs(
                envs,
                n_episodes,
                len(seeds),
                f"{type(self).__name__}.fit",
                "n_episodes_per_update",
            )
            n_episodes += len(seeds)
            raw = []
            net.eval()
            data, ep_returns = lockstep_episodes(
                self._act(net, context, context.generator, record=raw),
                copies,
                [int(s) for s in seeds],
                self.max_episode_steps,
                info_key="costs",
            )
            n_steps += len(data["episodes"])
            batch = self._batch(data, raw, net, context, lam, w, K, moments)
            mean_return = np.mean(ep_returns, axis=0)
            returns.append(mean_return)
            costs.append(batch.pop("episode_costs"))
            target_scales.append(batch.pop("target_scale"))
            net.train()
            optimizer.scales = []
            self._ppo(net, optimizer, batch, context)
            clip_scales.append(float(np.mean([s[0] for s in optimizer.scales])))
            lam = multiplier_step(
                self._violation(costs[-1], limits),
                pid,
                lr=self.lambda_lr,
                kp=kp,
                kd=kd,
            )
            lams.append(lam.copy())
            w = self._weights_step(w, mean_return, step)
            weights.append(w.copy())
            step += 1
        self.module_ = net.to("cpu").eval()
        self._record_device(context)
        self.multipliers_ = np.array(lams)
        self.constraint_values_ = np.array(costs)
        self.returns_ = np.array(returns)
        self.actor_clip_scale_ = np.array(clip_scales)
        self.target_scale_ = np.array(target_scales)
        self._record_weights(np.array(weights))
        self.n_iter_ = step
        self.n_timesteps_ = n_steps
        self._fitted_limits = limits
        # The draws of predict(..., deterministic=False) after this fit.
        self._draws = np.random.RandomState(child_seeds(rng))
        return self

    def _batch(self, data, raw, net, context, lam, w, K, moments=None):
        """Tensors of one update: observations, actions, advantages, targets.

        ``w`` weighs the reward columns (one column for a scalar reward),
        ``lam`` the costs; ``moments`` (or None) the running statistics of
        the value targets, updated here.
        """
        torch = import_torch()
        obs = encode_observations(self.obs_encoding_, np.stack(data["observations"]))
        nxt = encode_observations(
            self.obs_encoding_, np.stack(data["next_observations"])
        )
        episodes = np.asarray(data["episodes"])
        terminal = np.asarray(data["terminals"], dtype=bool)
        r = np.asarray(data["rewards"], dtype=np.float64).reshape(len(episodes), -1)
        if r.shape[1] != self.n_rewards_:
            raise ValueError(
                f"the environment's reward has width {r.shape[1]}; it had "
                f"{self.n_rewards_} when fit began."
            )
        c = _stacked_costs(data["info"], K)
        # Continuous draws before the clip, in the order the episodes stepped
        # (lockstep_episodes records transitions in the order of the batch).
        actions = np.concatenate(raw) if self.continuous_ else data["actions"]
        signals = self._scale_signals(
            np.column_stack([r, c])
            if self.critic == "dedicated"
            else ((r @ w - c @ lam)[:, None])
        )
        with torch.no_grad():
            x = to_tensor(obs, dtype=context.dtype, device=context.device)
            xn = to_tensor(nxt, dtype=context.dtype, device=context.device)
            v = net.values(x).cpu().double().numpy()
            vn = net.values(xn).cpu().double().numpy()
        if moments is not None:  # the heads predict standardised values
            v = v * moments.std + moments.mean
            vn = vn * moments.std + moments.mean
        adv = np.zeros_like(signals)
        target = np.zeros_like(signals)
        episode_costs = []
        for e in np.unique(episodes):
            idx = np.flatnonzero(episodes == e)
            boot = np.where(terminal[idx[-1]], 0.0, vn[idx[-1]])
            values = np.vstack([v[idx], boot[None, :]])
            adv[idx], target[idx] = _gae(
                signals[idx], values, self.gamma, self.gae_lambda
            )
            episode_costs.append(c[idx].sum(axis=0))
        target_scale = target.std(axis=0)
        if moments is not None:
            moments.update(target)
            target = (target - moments.mean) / moments.std
        m = r.shape[1]
        combined = (
            adv[:, :m] @ w - adv[:, m:] @ lam
            if self.critic == "dedicated"
            else adv[:, 0]
        )
        combined = (combined - combined.mean()) / (combined.std() + 1e-8)
        with torch.no_grad():
            a_t = torch.as_tensor(
                np.asarray(actions),
                dtype=context.dtype if self.continuous_ else torch.long,
                device=context.device,
            )
            old = net.log_prob(net.distribution(x), a_t)
        return {
            "obs": x,
            "actions": a_t,
            "old_log_prob": old,
            "advantage": to_tensor(
                combined, dtype=context.dtype, device=context.device
            ),
            "target": to_tensor(target, dtype=context.dtype, device=context.device),
            "episode_costs": np.mean(episode_costs, axis=0),
            "target_scale": target_scale,
        }

    def _ppo(self, net, optimizer, batch, context):
        torch = import_torch()
        clip = self.clip

        def batch_loss(idx):
            dist = net.distribution(batch["obs"][idx])
            log_prob = net.log_prob(dist, batch["actions"][idx])
            ratio = torch.exp(log_prob - batch["old_log_prob"][idx])
            adv = batch["advantage"][idx]
            policy = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
            value = (net.values(batch["obs"][idx]) - batch["target"][idx]) ** 2
            entropy = net.entropy(dist)
            return (
                policy.mean()
                + 0.5 * value.sum(-1).mean()
                - self.entropy_coef * entropy.mean()
            )

        n = len(batch["obs"])
        # The optimiser clips the actor's and the critic's gradients (or
        # both together, grad_clip="joint") before each step.
        train_loop(
            batch_loss,
            n,
            optimizer,
            batch_size=min(self.batch_size, n),
            max_iter=self.n_epochs,
            tol=-np.inf,
            n_iter_no_change=self.n_epochs + 1,
            generator=context.generator,
            device=context.device,
            estimator_name=type(self).__name__,
            phase="PPO update",
            verbose=0,
            warn_at_max_iter=False,
        )

    def _inference(self, X, random_state=None, deterministic=True):
        check_is_fitted(self, "module_")
        X = check_observations(self.obs_encoding_, X)
        context = self._torch_context()
        generator = None
        if not deterministic:
            seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
            generator = make_generator(int(seed))
        net = self.module_.to(device=context.device, dtype=context.dtype)
        try:
            act = self._act(net, context, generator, deterministic=deterministic)
            return act(X)
        finally:
            self.module_ = net.to("cpu")

    def sample(self, X, random_state=None):
        """Draw actions from the learned (stochastic) policy.

        The constraints hold for this policy: the deterministic
        :meth:`predict` is a different policy, whose costs may differ.

        Parameters
        ----------
        X : array-like
            Observations, one per row.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        actions : ndarray
            Clipped to the action box, or action indices.
        """
        return self._inference(X, random_state, deterministic=False)

    def predict(self, observations, deterministic=True):
        """One action per observation: the most probable, or a draw.

        Parameters
        ----------
        observations : array-like
            Observations, one per row (or state indices for a Discrete
            observation space).
        deterministic : bool, default=True
            True: the mean (continuous) or most probable (discrete) action.
            False: a draw from the learned stochastic policy, from a
            generator the fit seeded from ``random_state`` (the draws after a
            fit are reproducible). The constraints hold for the stochastic
            policy, not necessarily for the deterministic one.

        Returns
        -------
        actions : ndarray
            ``(n, action_dim)`` clipped to the action box, or ``(n,)`` action
            indices.
        """
        if deterministic:
            return self._inference(observations)
        check_is_fitted(self, "module_")
        return self._inference(observations, self._draws, deterministic=False)

    def score(self, X, y=None, *, n_episodes=10, random_state=0):
        """Mean episode return of the stochastic policy, feasible ones first.

        Runs ``n_episodes`` episodes of the learned stochastic policy (the
        policy the constraints hold for), cycling through the environments.
        If every constraint's mean episode cost is within its limit, the
        score is the mean episode return (for a vector reward, its worst
        entry). Otherwise it is ``-1e12 * (1 + excess)``, ``excess`` the sum
        over constraints of the mean episode cost above its limit: below
        every feasible candidate whose mean return is above -1e12 (as on
        any environment of this package), and lower the larger the excess.
        This is what GridSearchCV ranks.

        Parameters
        ----------
        X : gymnasium.Env or list of gymnasium.Env
            With the spaces and costs of the fit.
        y : None
            Ignored.
        n_episodes : int, default=10
            Episodes evaluated (each up to ``max_episode_steps`` steps).
        random_state : int, RandomState instance or None, default=0
            Seeds the episodes' resets and the policy's draws.

        Returns
        -------
        score : float
            The objective of the stochastic policy's mean returns (the mean
            return; the worst objective for a vector reward), or, if a mean
            cost exceeds its limit, a value below every feasible score.
        """
        check_is_fitted(self, "module_")
        if not isinstance(n_episodes, Integral) or n_episodes < 1:
            raise ValueError(
                f"n_episodes must be a positive integer; got {n_episodes!r}."
            )
        envs = self._as_envs(X, "score")
        for env in envs:
            check_env(env, type(self).__name__, method="score", takes=self._env_takes)
        K = self.n_constraints_
        rng = check_random_state(random_state)
        seeds = child_seeds(rng, n_episodes)
        context = self._torch_context()
        generator = make_generator(int(child_seeds(rng)))
        net = self.module_.to(device=context.device, dtype=context.dtype)
        try:
            data, ep_returns = lockstep_episodes(
                self._act(net, context, generator),
                episode_envs(
                    envs, 0, n_episodes, f"{type(self).__name__}.score", "n_episodes"
                ),
                [int(s) for s in seeds],
                self.max_episode_steps,
                info_key="costs",
            )
        finally:
            self.module_ = net.to("cpu")
        c = _stacked_costs(data["info"], K)
        episodes = np.asarray(data["episodes"])
        mean_costs = np.array(
            [c[episodes == e].sum(axis=0) for e in range(n_episodes)]
        ).mean(axis=0)
        mean_returns = np.atleast_1d(np.mean(ep_returns, axis=0))
        limits = self._fitted_limits
        excess = float(np.sum(np.maximum(mean_costs - limits, 0.0)))
        if excess > 0:
            return INFEASIBLE_SCORE * (1.0 + excess)
        return self._score_objective(mean_returns)


def _stacked_costs(infos, K):
    """The recorded ``info["costs"]`` of every step as an (n_steps, K) array.

    Non-finite costs never reach here: the one episode loop names them.
    """
    try:
        c = np.stack([np.ravel(np.asarray(v, dtype=np.float64)) for v in infos])
    except (TypeError, ValueError):
        raise ValueError(
            f"info['costs'] must hold {K} numbers at every step."
        ) from None
    _check_costs(c, K)
    return c


def _check_costs(c, K):
    """Costs of shape (n_steps, K): K finite non-negative numbers per step."""
    if c.ndim != 2 or c.shape[1] != K:
        raise ValueError(
            f"info['costs'] must hold {K} costs at every step; got "
            f"{c.shape[-1] if c.ndim == 2 else c.size}."
        )
    if not np.all(np.isfinite(c)):
        raise ValueError(
            "the environment reported a non-finite cost (NaN or infinity) in "
            "info['costs']; costs must be finite."
        )
    if np.any(c < 0):
        raise ValueError(
            "the environment reported negative costs; costs must be "
            "non-negative (shift or split them)."
        )
