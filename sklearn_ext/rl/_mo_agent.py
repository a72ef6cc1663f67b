"""Risk-sensitive multi-objective agent with KR quantile critics (MO-TQC)."""

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
    encoding_of_data,
    env_list,
    episode_envs,
    feature_dim,
    is_env,
    rl_tags,
)
from sklearn_ext.rl._kr_quantile import (
    RISK_MEASURES,
    _check_weights,
    kr_taus,
    vector_risk_of_draws,
)
from sklearn_ext.rl._rollouts import (
    TRANSITION_KEYS,
    check_transitions,
    lockstep_episodes,
)
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)
from sklearn_ext.utils._torch import (
    adam,
    child_seeds,
    import_torch,
    init_parameters,
    to_tensor,
    train_loop,
)

__all__ = ["MOQuantileAgent", "empirical_kr_tail"]


def empirical_kr_tail(Y, alpha):
    """The KR corner mean of the empirical law of the rows of ``Y`` (n, d).

    Objective 1's lower ``alpha`` fraction of the rows; those rows, in order of
    objective 1, are split into about ``sqrt`` of their number of bins of
    neighbouring values (the conditioning on objective 1), and each bin's
    objectives 2..d take the corner mean of the bin recursively. Returns the
    mean vector (d,); ``weights`` times it is the empirical KR vector CVaR.
    """
    Y = np.asarray(Y, dtype=np.float64)
    n, d = Y.shape
    m = max(1, int(np.ceil(alpha * n)))
    low = Y[np.argsort(Y[:, 0], kind="stable")[:m]]
    if d == 1:
        return low.mean(0)
    bins = np.array_split(low, max(1, int(round(np.sqrt(m)))))
    rest = sum(len(b) * empirical_kr_tail(b[:, 1:], alpha) for b in bins) / m
    return np.r_[low[:, 0].mean(), rest]


# Quantile-Huber threshold, as a fraction of the spread (standard deviation)
# of the rewards in the buffer. IQN's kappa=1 on unscaled returns biases the
# tail quantiles towards the centre (the minimiser of the Huberised loss is
# not the quantile): on N(0, 1) rewards the learned law's spread was 0.8, and
# CVaR_0.25 came out near -0.8 instead of -1.27. A small threshold keeps the
# loss smooth at zero while its minimiser stays close to the quantile.
KAPPA = 0.05


class MOQuantileAgent(TorchDeviceMixin, BaseEstimator):
    r"""Risk-sensitive multi-objective agent with Knothe-Rosenblatt quantile critics.

    Each critic is a network of the *joint* law of the discounted return
    vector :math:`Z(s, a) \in \mathbb{R}^d` through its Knothe-Rosenblatt map
    (see :class:`KRQuantileRegressor`): the quantile function of objective 1,
    then of objective 2 given objective 1's value, and so on. The agent acts
    greedily with respect to a vector-risk of that law (by default the
    conditional value at risk of the weighted return ``weights @ Z``, which
    depends on how the objectives move together).

    Training is fitted distributional iteration, the sample form of the
    distributional Bellman operator: each round freezes the critics, computes
    for every stored transition draws of the target law
    :math:`r + \gamma Z(s', a^*)` with :math:`a^*` the risk-greedy next
    action, and trains the critics for ``n_epochs`` epochs of quantile-Huber
    regression on those draws (the KR networks are fed the target draws'
    earlier objectives). MO-TQC truncation: the critics' draws at ``s'`` are
    pooled and the ``drop_top`` draws per critic with the largest weighted
    return are dropped, against the overestimation a maximum over noisy
    critics causes (Kuznetsov et al. 2020).

    ``fit`` takes either a gymnasium environment with a ``Discrete`` action
    space and vector rewards (e.g. MO-Gymnasium's, optional extra ``rl``), or
    a list of them (tasks: the episodes cycle through the list): online, each
    round collects ``n_episodes_per_round`` episodes with an
    :math:`\varepsilon`-greedy policy (:math:`\varepsilon` decays linearly
    in the steps taken, from ``epsilon`` to ``epsilon / 20``) into a buffer of
    the last ``buffer_size`` transitions, then runs one fitted iteration;
    rounds go on until ``total_timesteps`` environment steps were taken. Or
    an offline transition dataset (the family's one dataset form), a dict
    with keys ``observations``, ``actions``, ``rewards`` (n, d),
    ``next_observations`` and ``terminals``: ``max_iter`` fitted iterations
    on it. Observations are encoded as one-hot vectors when they
    are discrete states (a ``Discrete`` space, or 1-D integer arrays offline),
    one-hot per coordinate for a small integer ``Box`` (a grid position), and
    as raw numbers otherwise.

    Parameters
    ----------
    risk : {"kr_cvar", "cvar", "expectation"}, default="kr_cvar"
        What the greedy policy maximises. ``"kr_cvar"``: the KR vector CVaR
        of the return law, ``weights`` times the mean of the critics' KR map
        over the corner ``(0, alpha]^d`` of the cube (objective 1 in its
        lower tail, objective 2 in its lower tail given objective 1, ...), the
        vector-risk measure of the paper. ``"cvar"``: the CVaR of the
        scalarised return ``weights @ Z`` under the joint law.
        ``"expectation"`` is risk-neutral (the expected weighted return).
    alpha : float, default=0.25
        Tail fraction of ``"cvar"``.
    weights : array-like of shape (n_objectives,), default=None
        Non-negative objective weights; equal by default.
    critic : {"kr", "independent"}, default="kr"
        ``"kr"``: joint KR critics. ``"independent"``: each objective's
        quantiles ignore the others (the per-objective baseline: the joint
        law the risk is computed on is the product of the marginals).
    ordering : {"transformer", "fixed"}, default="transformer"
        The KR networks' form, see :class:`KRQuantileRegressor`.
    n_critics : int, default=2
        Critics whose target draws are pooled.
    drop_top : int, default=1
        Target draws dropped per critic (MO-TQC); 0 turns truncation off.
    n_quantiles : int, default=16
        Target draws per critic and transition.
    n_taus : int, default=8
        Target draws (each with its own level) each critic regresses on per
        transition and training step, a random subset of the kept ones.
    gamma : float, default=0.9
        Discount factor in [0, 1).
    embedding_dim : int, default=32
        Cosines in the embedding of a quantile level.
    hidden : int, default=64
        Width of every layer.
    total_timesteps : int, default=48000
        Online budget, in environment steps: rounds of
        ``n_episodes_per_round`` episodes (each followed by a fitted
        iteration) run until at least ``total_timesteps`` steps were taken.
        The default is the budget of 30 rounds of 8 full-length (200-step)
        episodes. Unused offline.
    max_iter : int, default=30
        Fitted distributional iterations of an offline fit. Unused online.
    n_episodes_per_round : int, default=8
        Episodes collected per online round.
    n_epochs : int, default=2
        Epochs over the buffer per round.
    batch_size : int, default=128
        Transitions per minibatch.
    learning_rate_init : float, default=1e-3
        Adam's step size; one optimiser is kept across rounds.
    epsilon : float, default=1.0
        Exploration rate of the first round (all random by default), decaying
        linearly in the steps taken to ``epsilon / 20`` at
        ``total_timesteps``. ``predict(..., deterministic=False)`` explores at
        the final rate ``epsilon / 20``.
    max_episode_steps : int, default=200
        Cap on an episode's length.
    buffer_size : int, default=10000
        Most recent transitions kept online.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, the exploration, the levels, the resets and the
        generator of ``predict(..., deterministic=False)``.
    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where to train; "auto" takes CUDA for large buffers.
    verbose : int, default=0
        ``>= 1`` shows a progress bar for each round's epochs.

    Attributes
    ----------
    module_ : torch.nn.Module
        The critics (on the CPU).
    n_actions_ : int
    n_objectives_ : int
    training_returns_ : ndarray of shape (n_episodes, n_objectives)
        Discounted return vectors of the online training episodes, in the
        order they were run (empty offline): the learning curve.
    training_timesteps_ : ndarray of shape (n_episodes,)
        Environment steps taken when each training episode's round ended.
    loss_curve_ : list of float
        Mean loss of each round's last epoch.
    n_iter_ : int
        Fitted iterations run (online: rounds).
    n_timesteps_ : int
        Environment steps taken (0 offline).
    device_ : str

    See Also
    --------
    KRQuantileRegressor : The same KR quantile networks as a regressor.

    References
    ----------
    .. [1] "Knothe-Rosenblatt Quantile Regression for Risk-sensitive
       Multi-objective Reinforcement Learning", ICML 2026.
    .. [2] A. Kuznetsov, P. Shvechikov, A. Grishin and D. Vetrov, "Controlling
       Overestimation Bias with Truncated Mixture of Continuous
       Distributional Quantile Critics", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import MOQuantileAgent
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=600)
    >>> arms = rng.integers(0, 2, 600)   # arm 0: (x, x); arm 1: (x, -x)
    >>> rewards = np.column_stack([x, np.where(arms == 0, x, -x)])
    >>> data = {"observations": np.zeros(600, dtype=int), "actions": arms,
    ...         "rewards": rewards, "next_observations": np.zeros(600, dtype=int),
    ...         "terminals": np.ones(600, dtype=bool)}
    >>> agent = MOQuantileAgent(max_iter=1, n_epochs=30, random_state=0)
    >>> agent.fit(data).predict([0])   # hedged arm: better KR vector CVaR
    array([1])
    """

    _parameter_constraints = {
        **TorchDeviceMixin._parameter_constraints,
        "risk": [StrOptions({*RISK_MEASURES, "kr_cvar"})],
        "alpha": [Interval(Real, 0, 1, closed="right")],
        "weights": ["array-like", None],
        "critic": [StrOptions({"kr", "independent"})],
        "ordering": [StrOptions({"transformer", "fixed"})],
        "n_critics": [Interval(Integral, 1, None, closed="left")],
        "drop_top": [Interval(Integral, 0, None, closed="left")],
        "n_quantiles": [Interval(Integral, 1, None, closed="left")],
        "n_taus": [Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, 1, closed="left")],
        "embedding_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden": [Interval(Integral, 1, None, closed="left")],
        "total_timesteps": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_episodes_per_round": [Interval(Integral, 1, None, closed="left")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, 1, closed="both")],
        "max_episode_steps": [Interval(Integral, 1, None, closed="left")],
        "buffer_size": [Interval(Integral, 1, None, closed="left")],
    }

    _paper = "KR quantile regression for risk-sensitive MORL, ICML 2026"
    _bench_name = "kr_morl"
    _not_a_data_estimator = NOT_A_DATA_ESTIMATOR

    def __init__(
        self,
        *,
        risk="kr_cvar",
        alpha=0.25,
        weights=None,
        critic="kr",
        ordering="transformer",
        n_critics=2,
        drop_top=1,
        n_quantiles=16,
        n_taus=8,
        gamma=0.9,
        embedding_dim=32,
        hidden=64,
        total_timesteps=48_000,
        max_iter=30,
        n_episodes_per_round=8,
        n_epochs=2,
        batch_size=128,
        learning_rate_init=1e-3,
        epsilon=1.0,
        max_episode_steps=200,
        buffer_size=10000,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.risk = risk
        self.alpha = alpha
        self.weights = weights
        self.critic = critic
        self.ordering = ordering
        self.n_critics = n_critics
        self.drop_top = drop_top
        self.n_quantiles = n_quantiles
        self.n_taus = n_taus
        self.gamma = gamma
        self.embedding_dim = embedding_dim
        self.hidden = hidden
        self.total_timesteps = total_timesteps
        self.max_iter = max_iter
        self.n_episodes_per_round = n_episodes_per_round
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.epsilon = epsilon
        self.max_episode_steps = max_episode_steps
        self.buffer_size = buffer_size
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__())

    @classmethod
    def _gpu_check_params(cls):
        # Offline bandit pulls: 256-wide critics in batches of 1024.
        params = {"hidden": 256, "batch_size": 1024, "max_iter": 2, "n_epochs": 2}
        return params, 20_000

    @classmethod
    def _get_test_params(cls):
        return {
            "max_iter": 2,
            "total_timesteps": 60,
            "n_episodes_per_round": 2,
            "n_epochs": 1,
            "hidden": 16,
            "embedding_dim": 8,
            "n_quantiles": 4,
            "max_episode_steps": 20,
            "device": "cpu",
            "random_state": 0,
        }

    def _build_module(self, attr="module_"):
        from sklearn_ext.rl._kr_quantile_nn import MOCriticEnsemble

        return MOCriticEnsemble(
            self.n_critics,
            feature_dim(self.obs_encoding_),
            self.n_actions_,
            self.n_objectives_,
            self.embedding_dim,
            self.hidden,
            self.ordering,
            self.critic == "kr",
        )

    # --- checks ----------------------------------------------------------------

    def _check_objectives(self, n_objectives, where):
        if n_objectives < 2:
            raise ValueError(
                f"MOQuantileAgent needs vector rewards with at least 2 objectives; "
                f"{where} has {n_objectives}. For one objective use a scalar "
                "distributional agent."
            )
        if self.drop_top * self.n_critics >= self.n_critics * self.n_quantiles:
            raise ValueError(
                f"drop_top={self.drop_top} drops every one of the n_quantiles="
                f"{self.n_quantiles} target draws per critic; lower drop_top."
            )
        self._weights = _check_weights(self.weights, n_objectives)

    def _check_dataset(self, data):
        """The family's dataset form (:func:`check_transitions`), integer actions."""
        if not isinstance(data, dict):
            raise TypeError(
                "MOQuantileAgent.fit takes a gymnasium environment or a dict of "
                f"transition arrays with keys {TRANSITION_KEYS}; got "
                f"{type(data).__name__}."
            )
        data = check_transitions(data, "MOQuantileAgent")
        actions = data["actions"]
        if (
            actions.ndim != 1
            or not np.all(actions == np.round(actions))
            or (actions.min() < 0)
        ):
            raise ValueError("actions must be a 1-D array of non-negative integers.")
        self._check_objectives(data["rewards"].shape[1], "rewards")
        return (
            data["observations"],
            actions.astype(int),
            data["rewards"],
            data["next_observations"],
            data["terminals"],
        )

    # --- fitting ---------------------------------------------------------------

    def _check_envs(self, X, method="fit"):
        """An environment or a non-empty list of them, with one spec."""
        envs = env_list(X, "MOQuantileAgent", method)
        if envs is None:
            envs = list(X) if isinstance(X, (list, tuple)) else [X]
        if not envs:
            raise ValueError(
                f"MOQuantileAgent.{method} got an empty list of environments."
            )
        specs = [
            check_env(
                env,
                "MOQuantileAgent",
                method=method,
                takes="a gymnasium environment, a list of them or a dict of "
                f"transition arrays with keys {TRANSITION_KEYS}"
                if method == "fit"
                else "a gymnasium environment or a list of them",
                actions=("Discrete",),
                observations=("Discrete", "Box"),
                vector_reward_space=True,
            )
            for env in envs
        ]
        first = specs[0]
        for i, spec in enumerate(specs[1:], 1):
            if (spec.n_actions, spec.reward_width) != (
                first.n_actions,
                first.reward_width,
            ) or spec.obs_encoding != first.obs_encoding:
                raise ValueError(
                    f"environment {i} of the list has {spec.n_actions} actions and "
                    f"{spec.reward_width} objectives; environment 0 has "
                    f"{first.n_actions} and {first.reward_width} (and the same "
                    "observation space is needed)."
                )
        return envs, first

    def _check_rewards(self, rewards, where):
        """Rewards of width n_objectives_, all finite, or a ValueError."""
        if rewards.ndim != 2 or rewards.shape[1] != self.n_objectives_:
            width = rewards.shape[1] if rewards.ndim == 2 else rewards.shape[1:]
            raise ValueError(
                f"{where} gave rewards of width {width}; the environment's "
                f"reward space has {self.n_objectives_} objectives (the reward "
                "width must not change)."
            )
        if not np.all(np.isfinite(rewards)):
            raise ValueError(
                f"{where} gave non-finite rewards (NaN or inf); MOQuantileAgent "
                "needs finite rewards."
            )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the critics online on environments or offline on transitions.

        Parameters
        ----------
        X : gymnasium.Env, list of gymnasium.Env or dict of array-like
            An environment with a ``Discrete`` action space and vector rewards,
            a list of such environments with the same spaces (the episodes
            cycle through the list; this lets ``GridSearchCV`` split them),
            or a transition dataset (see the class description).
        y : None
            Ignored.

        Returns
        -------
        self : MOQuantileAgent
            The fitted agent.

        Raises
        ------
        ValueError
            If the rewards have fewer than 2 objectives, change width, or are
            not finite.
        """
        rng = check_random_state(self.random_state)
        online = not isinstance(X, dict) and (
            is_env(X) or (isinstance(X, (list, tuple)) and len(X) > 0)
        )
        if online:
            envs, spec = self._check_envs(X)
            self._check_objectives(spec.reward_width, "the environment")
            self.obs_encoding_ = spec.obs_encoding
            self.n_actions_ = spec.n_actions
            self.n_objectives_ = spec.reward_width
            buffer = None
        else:
            obs, actions, rewards, nxt, terminals = self._check_dataset(X)
            self.obs_encoding_ = encoding_of_data(np.concatenate([obs, nxt]))
            self.n_actions_ = int(actions.max()) + 1
            self.n_objectives_ = rewards.shape[1]
            buffer = (
                encode_observations(self.obs_encoding_, obs),
                actions,
                rewards,
                encode_observations(self.obs_encoding_, nxt),
                terminals,
            )
        torch = import_torch()
        context = self._torch_context(
            size=self.buffer_size * self.n_quantiles, min_size=1e7
        )
        net = init_parameters(self._build_module(), context.generator)
        net = net.to(device=context.device, dtype=context.dtype)
        optimizer = adam(net.parameters(), lr=self.learning_rate_init)
        returns, ends, self.loss_curve_ = [], [], []
        steps, n_iter, episode = 0, 0, 0
        while (steps < self.total_timesteps) if online else (n_iter < self.max_iter):
            if online:
                frac = min(1.0, steps / self.total_timesteps)
                eps = self.epsilon * (1 - 0.95 * frac)
                seeds = child_seeds(rng, self.n_episodes_per_round)
                copies = episode_envs(
                    envs,
                    episode,
                    len(seeds),
                    "MOQuantileAgent.fit",
                    "n_episodes_per_round",
                )
                episode += len(seeds)
                act = self._epsilon_greedy(net, context, eps, rng)
                data, ret = lockstep_episodes(
                    act,
                    copies,
                    [int(s) for s in seeds],
                    self.max_episode_steps,
                    self.gamma,
                )
                n_new = len(data["actions"])
                new_rewards = np.stack(data["rewards"]).reshape(n_new, -1)
                self._check_rewards(new_rewards, "the environment")
                steps += n_new
                returns.append(ret.reshape(len(seeds), -1))
                ends += [steps] * len(seeds)
                new = (
                    encode_observations(
                        self.obs_encoding_, np.stack(data["observations"])
                    ),
                    np.asarray(data["actions"], dtype=int),
                    new_rewards,
                    encode_observations(
                        self.obs_encoding_, np.stack(data["next_observations"])
                    ),
                    np.asarray(data["terminals"], dtype=bool),
                )
                buffer = (
                    new
                    if buffer is None
                    else tuple(
                        np.concatenate([b, n])[-self.buffer_size :]
                        for b, n in zip(buffer, new)
                    )
                )
            self.loss_curve_.append(
                self._fitted_iteration(net, optimizer, buffer, context, torch)
            )
            n_iter += 1
        self.training_returns_ = (
            np.concatenate(returns) if returns else np.empty((0, self.n_objectives_))
        )
        self.training_timesteps_ = np.asarray(ends, dtype=np.int64)
        self.n_timesteps_ = steps
        self.n_iter_ = n_iter
        self.module_ = net.to("cpu").eval()
        # The generator of predict(..., deterministic=False), seeded by the fit.
        self._predict_rng = np.random.RandomState(rng.randint(np.iinfo(np.int32).max))
        self._record_device(context)
        return self

    def _ranks(self, m, device, generator=None):
        """KR orders of ``m`` levels: None (one order) unless the critics are
        order-free transformers; then random (``generator``) or cycled."""
        if self.critic != "kr" or self.ordering != "transformer":
            return None
        from sklearn_ext.rl._kr_quantile_nn import cycled_ranks, random_ranks

        d = self.n_objectives_
        if generator is None:
            return cycled_ranks(m, d, device)
        return random_ranks(m, d, generator, device)

    def _epsilon_greedy(self, net, context, eps, rng):
        torch = import_torch()
        taus = to_tensor(
            kr_taus(self.n_quantiles, self.n_objectives_),
            dtype=context.dtype,
            device=context.device,
        )
        ranks = self._ranks(len(taus), context.device)

        def act(observations):
            # One decision per distinct observation.
            distinct, inverse = np.unique(
                encode_observations(self.obs_encoding_, observations),
                axis=0,
                return_inverse=True,
            )
            inverse = inverse.reshape(-1)
            feats = to_tensor(
                distinct,
                dtype=context.dtype,
                device=context.device,
            )
            net.eval()
            with torch.no_grad():
                greedy = self._critic_risk(net, feats, taus, ranks)
                greedy = greedy.argmax(1).cpu().numpy()
            greedy = greedy[inverse]
            explore = rng.random_sample(len(greedy)) < eps
            return np.where(
                explore, rng.randint(0, self.n_actions_, len(greedy)), greedy
            )

        return act

    def _risk(self, draws):
        return vector_risk_of_draws(draws, self.risk, self.alpha, self._weights)

    def _critic_risk(self, net, feats, taus, ranks, draws=None):
        """Risk of every action at ``feats``: (b, A).

        ``"kr_cvar"`` pushes the corner ``alpha * taus`` through the critics'
        KR maps and averages; the other risks use ``draws`` (the draws at
        ``taus``, computed here when not given).
        """
        if self.risk == "kr_cvar":
            corner = net.draws(feats, self.alpha * taus, ranks)
            w = corner.new_tensor(self._weights)
            return corner.mean(-2) @ w
        if draws is None:
            draws = net.draws(feats, taus, ranks)
        return self._risk(draws)

    def _fitted_iteration(self, net, optimizer, buffer, context, torch):
        """One round: targets from the frozen critics, then n_epochs of regression."""
        from sklearn_ext.rl._kr_quantile_nn import quantile_huber_loss

        obs, actions, rewards, nxt, terminals = (
            to_tensor(a, dtype=context.dtype, device=context.device) for a in buffer
        )
        actions = actions.long()
        spread = float(rewards.std()) if rewards.numel() > 1 else 0.0
        kappa = KAPPA * (spread if spread > 0 else 1.0)
        m, C = self.n_quantiles, self.n_critics
        keep = C * (m - self.drop_top)
        w = torch.as_tensor(self._weights, dtype=context.dtype, device=context.device)
        # Next states repeat (a grid world has few): the frozen critics' target
        # law is computed once per distinct next state.
        distinct, inverse = np.unique(buffer[3], axis=0, return_inverse=True)
        distinct = to_tensor(distinct, dtype=context.dtype, device=context.device)
        net.eval()
        kept = []
        with torch.no_grad():
            taus = torch.rand(m, self.n_objectives_, generator=context.generator)
            taus = taus.to(device=context.device, dtype=context.dtype)
            ranks = self._ranks(m, context.device, context.generator)
            for start in range(0, len(distinct), 512):
                # (b, A, C*m, d)
                feats = distinct[start : start + 512]
                draws = net.draws(feats, taus, ranks)
                best = self._critic_risk(net, feats, taus, ranks, draws).argmax(1)
                chosen = draws[torch.arange(len(best), device=best.device), best]
                # MO-TQC: drop the draws with the largest weighted return.
                order = (chosen @ w).argsort(dim=1)[:, :keep]
                kept.append(
                    torch.gather(
                        chosen, 1, order[..., None].expand(-1, -1, chosen.shape[-1])
                    )
                )
        kept = torch.cat(kept)[
            torch.as_tensor(inverse.reshape(-1), device=context.device)
        ]
        alive = (1 - terminals)[:, None, None]
        targets = rewards[:, None, :] + self.gamma * alive * kept  # (N, keep, d)
        net.train()
        d, n_taus = self.n_objectives_, self.n_taus

        def batch_loss(idx):
            # n_taus of the kept target draws per transition (a random subset).
            pick = torch.randint(keep, (len(idx), n_taus), generator=context.generator)
            pick = pick.to(device=targets.device)
            target = targets[idx[:, None], pick].reshape(-1, d)
            total = 0.0
            for critic in net.critics:
                ctx = critic.context(obs[idx], actions[idx]).repeat_interleave(
                    n_taus, dim=0
                )
                tau = torch.rand(len(target), d, generator=context.generator).to(
                    device=target.device, dtype=target.dtype
                )
                rank = self._ranks(len(target), target.device, context.generator)
                q = critic.kr(ctx, tau, target, rank)
                total = total + quantile_huber_loss(target, q, tau, kappa).sum(1).mean()
            return total

        result = train_loop(
            batch_loss,
            len(obs),
            optimizer,
            batch_size=min(self.batch_size, len(obs)),
            max_iter=self.n_epochs,
            tol=-np.inf,
            n_iter_no_change=self.n_epochs + 1,
            generator=context.generator,
            device=context.device,
            estimator_name=type(self).__name__,
            phase="fitted distributional iteration",
            verbose=self.verbose,
            warn_at_max_iter=False,
        )
        return result.loss_curve[-1]

    # --- inference -------------------------------------------------------------

    def _features(self, X):
        check_is_fitted(self)
        return encode_observations(
            self.obs_encoding_, check_observations(self.obs_encoding_, X)
        )

    def _draws(self, X, taus):
        torch = import_torch()

        def forward(net, batch):
            t = torch.as_tensor(taus, dtype=batch.dtype, device=batch.device)
            return net.draws(batch, t, self._ranks(len(t), batch.device))

        # Observations repeat (grid worlds, many episodes in the same state):
        # each distinct one is evaluated once.
        distinct, inverse = np.unique(self._features(X), axis=0, return_inverse=True)
        draws = self._predict_batches(forward, distinct, batch_size=256)
        return draws[inverse.reshape(-1)]

    def risk_values(self, X):
        """Vector-risk of every action's return law at each observation.

        Parameters
        ----------
        X : array-like of shape (n_observations, ...)
            Observations (1-D discrete states, or one row per observation).

        Returns
        -------
        risk : ndarray of shape (n_observations, n_actions)
            Higher is better.
        """
        taus = kr_taus(4 * self.n_quantiles, self.n_objectives_)
        if self.risk == "kr_cvar":
            w = _check_weights(self.weights, self.n_objectives_)
            return self._draws(X, self.alpha * taus).mean(-2) @ w
        draws = self._draws(X, taus)
        return vector_risk_of_draws(draws, self.risk, self.alpha, self.weights)

    def predict(self, observations, deterministic=True):
        """Risk-greedy actions, or draws of the exploring policy.

        Parameters
        ----------
        observations : array-like of shape (n_observations, ...)
            Observations.
        deterministic : bool, default=True
            True: the action of highest vector-risk at each observation (the
            policy the agent learns). False: the epsilon-greedy policy at the
            final exploration rate ``epsilon / 20``, drawn from a generator
            that ``fit`` seeds from ``random_state`` (so the draws after a
            fit are reproducible).

        Returns
        -------
        actions : ndarray of shape (n_observations,)
            One action per observation row.
        """
        greedy = self.risk_values(observations).argmax(1)
        if deterministic:
            return greedy
        rng = self._predict_rng
        explore = rng.random_sample(len(greedy)) < self.epsilon / 20
        return np.where(explore, rng.randint(0, self.n_actions_, len(greedy)), greedy)

    def sample_returns(self, X, actions, n_draws=64, random_state=None):
        """Draw the return vector of taking ``actions`` at ``X``.

        Every critic is pushed through the same uniform levels; their draws
        are pooled.

        Parameters
        ----------
        X : array-like of shape (n_observations, ...)
            Observations.
        actions : array-like of shape (n_observations,)
            One action per observation.
        n_draws : int, default=64
            Levels per critic.
        random_state : int, RandomState instance or None, default=None
            Seeds the uniform levels.

        Returns
        -------
        draws : ndarray of shape (n_observations, n_critics * n_draws, n_objectives)
            Pooled draws of the critics.
        """
        rng = check_random_state(random_state)
        taus = rng.uniform(1e-6, 1 - 1e-6, (n_draws, self.n_objectives_))
        draws = self._draws(X, taus)
        actions = np.asarray(actions, dtype=int).reshape(-1)
        if (
            len(actions) != len(draws)
            or actions.min() < 0
            or (actions.max() >= self.n_actions_)
        ):
            raise ValueError(
                f"actions must be {len(draws)} integers in [0, {self.n_actions_})."
            )
        return draws[np.arange(len(draws)), actions]

    def score(self, X, y=None, *, n_episodes=100, random_state=0):
        """Empirical vector-risk of the greedy policy's returns on environments.

        Runs ``n_episodes`` episodes (at most ``max_episode_steps`` steps) of
        the risk-greedy policy (cycling through a list of environments) and
        applies the agent's own ``risk``, ``alpha`` and ``weights`` to their
        discounted return vectors, so that ``GridSearchCV`` with a list of
        environments ranks candidates by what they optimise. ``"kr_cvar"``
        is estimated by :func:`empirical_kr_tail` (the lower ``alpha`` of the
        episodes by objective 1, split into bins of neighbouring values, the
        lower ``alpha`` of each bin by objective 2, and so on).

        Parameters
        ----------
        X : gymnasium.Env or list of gymnasium.Env
            Environments with the fitted spaces and vector rewards.
        y : None
            Ignored.
        n_episodes : int, default=100
            Evaluation episodes.
        random_state : int, default=0
            Seeds the episodes' resets.

        Returns
        -------
        score : float
            Higher is better.
        """
        check_is_fitted(self)
        envs, spec = self._check_envs(X, method="score")
        if (spec.n_actions, spec.reward_width) != (self.n_actions_, self.n_objectives_):
            raise ValueError(
                f"the environment has {spec.n_actions} actions and "
                f"{spec.reward_width} objectives; the agent was fitted with "
                f"{self.n_actions_} and {self.n_objectives_}."
            )
        seeds = child_seeds(check_random_state(random_state), n_episodes)
        copies = episode_envs(
            envs, 0, len(seeds), "MOQuantileAgent.score", "n_episodes"
        )
        _, returns = lockstep_episodes(
            self.predict,
            copies,
            [int(s) for s in seeds],
            self.max_episode_steps,
            self.gamma,
        )
        returns = returns.reshape(n_episodes, -1)
        self._check_rewards(returns, "the environment")
        if self.risk == "kr_cvar":
            w = _check_weights(self.weights, self.n_objectives_)
            return float(empirical_kr_tail(returns, self.alpha) @ w)
        return float(vector_risk_of_draws(returns, self.risk, self.alpha, self.weights))

    def _make_test_data(self, n_samples, random_state):
        """Offline pulls of the copula bandit (for the GPU check)."""
        from sklearn_ext.rl._kr_data import copula_bandit

        return copula_bandit(n_samples, random_state=random_state)[0], None
