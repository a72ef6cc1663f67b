"""KR quantile regression and the risk-sensitive multi-objective agent."""

import copy
import pickle

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_param_validation

from sklearn_ext.rl import KRQuantileRegressor, MOQuantileAgent
from sklearn_ext.rl._kr_data import copula_bandit
from sklearn_ext.rl._kr_quantile import vector_risk_of_draws
from sklearn_ext.rl._rollouts import lockstep_episodes

RHO = 0.8


def _gaussian(n, rng, rho=RHO):
    X = rng.uniform(-1, 1, (n, 1))
    z1 = rng.normal(size=n)
    z2 = rho * z1 + np.sqrt(1 - rho**2) * rng.normal(size=n)
    return X, np.column_stack([X[:, 0] + 0.5 * z1, -X[:, 0] + 0.5 * z2])


@pytest.fixture(scope="module")
def gaussian_fit():
    X, Y = _gaussian(1500, np.random.default_rng(0))
    model = KRQuantileRegressor(ordering="fixed", max_iter=80, random_state=0)
    return model.fit(X, Y)


# --- the regressor ------------------------------------------------------------------


def test_kr_map_recovers_the_planted_gaussian_copula(gaussian_fit):
    X = np.array([[-0.5], [0.0], [0.5]])
    levels = np.array([[a, b] for a in (0.2, 0.5, 0.8) for b in (0.2, 0.5, 0.8)])
    q = gaussian_fit.predict_quantiles(X, levels)
    z1, z2 = norm.ppf(levels[:, 0]), norm.ppf(levels[:, 1])
    q1 = X + 0.5 * z1
    q2 = -X + 0.5 * (RHO * z1 + np.sqrt(1 - RHO**2) * z2)
    assert np.abs(q[..., 0] - q1).mean() < 0.08
    assert np.abs(q[..., 1] - q2).mean() < 0.12
    # The dependence: y2's median moves with y1's level (0.8 * 0.5 * 1.68 = 0.67).
    lift = q[:, 7, 1] - q[:, 1, 1]  # tau = (0.8, 0.5) against (0.2, 0.5)
    assert np.all(lift > 0.45)


def test_first_output_ignores_the_later_levels(gaussian_fit):
    q = gaussian_fit.predict_quantiles([[0.1], [0.7]], [[0.3, 0.05], [0.3, 0.95]])
    np.testing.assert_array_equal(q[:, 0, 0], q[:, 1, 0])
    assert np.all(q[:, 1, 1] > q[:, 0, 1])


def test_draws_keep_the_correlation(gaussian_fit):
    draws = gaussian_fit.sample([[0.0]], n_draws=3000, random_state=0)[0]
    assert np.corrcoef(draws.T)[0, 1] == pytest.approx(RHO, abs=0.1)


def test_vector_risk_separates_dependence_that_the_marginals_hide():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (1500, 1))
    x, other = rng.normal(size=1500), rng.normal(size=1500)
    fits = [
        KRQuantileRegressor(ordering="fixed", max_iter=60, random_state=0).fit(
            X, np.column_stack([x, y2])
        )
        for y2 in (x, other)  # comonotone, independent
    ]
    cvar = [m.vector_risk([[0.0]], alpha=0.2)[0] for m in fits]
    mean = [m.vector_risk([[0.0]], measure="expectation")[0] for m in fits]
    truth = -norm.pdf(norm.ppf(0.2)) / 0.2  # CVaR of N(0, 1); of N(0, 1/2) / sqrt 2
    assert cvar[0] == pytest.approx(truth, abs=0.25)
    assert cvar[1] == pytest.approx(truth / np.sqrt(2), abs=0.25)
    assert cvar[1] - cvar[0] > 0.2
    assert abs(mean[0] - mean[1]) < 0.15


def test_transformer_kr_cvar_does_not_depend_on_the_output_order():
    # y2 = 3 (0.9 y1 + 0.44 e): the KR vector CVaR of the order (y1, y2) is
    # -4.40 and of (y2, y1) -3.81 (alpha 0.1, equal weights). A network with
    # one order inherits the gap; the transformer, trained on every order and
    # averaging over them, does not.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (1000, 1))
    z = rng.normal(size=(1000, 2))
    Y = np.column_stack([z[:, 0], 3 * (0.9 * z[:, 0] + 0.436 * z[:, 1])])
    gaps = {}
    for ordering in ("transformer", "fixed"):
        model = KRQuantileRegressor(ordering=ordering, max_iter=60, random_state=0)
        risks = [
            clone(model).fit(X, Yo).vector_risk([[0.0]], "kr_cvar", 0.1)[0]
            for Yo in (Y, Y[:, ::-1])
        ]
        gaps[ordering] = abs(risks[0] - risks[1])
    assert gaps["fixed"] > 0.3
    assert gaps["transformer"] < 0.5 * gaps["fixed"]


def test_cycled_ranks_give_each_order_a_block_of_the_sobol_set():
    from sklearn_ext.rl._kr_quantile import kr_taus
    from sklearn_ext.rl._kr_quantile_nn import cycled_ranks

    ranks = cycled_ranks(8, 2).numpy()
    np.testing.assert_array_equal(ranks[:4], [[0, 1]] * 4)
    np.testing.assert_array_equal(ranks[4:], [[1, 0]] * 4)
    # Each block of a Sobol set covers the cube (every point of index j mod 2
    # would sit in one half of it).
    taus = kr_taus(64, 2)
    for block in (taus[:32], taus[32:]):
        assert np.histogram(block[:, 0], bins=4, range=(0, 1))[0].min() >= 6
    assert len(np.unique(cycled_ranks(24, 3).numpy(), axis=0)) == 6


def test_vector_risk_of_draws_follows_its_definition():
    draws = np.array([[[0.0, 2.0], [1.0, 1.0], [-4.0, 0.0], [3.0, 3.0]]])
    # Equal weights: scalars 1, 1, -2, 3; the lowest half is {-2, 1}.
    assert vector_risk_of_draws(draws, "cvar", 0.5)[0] == pytest.approx(-0.5)
    assert vector_risk_of_draws(draws, "expectation")[0] == pytest.approx(0.75)
    weighted = vector_risk_of_draws(draws, "cvar", 0.25, weights=[1.0, 0.0])
    assert weighted[0] == pytest.approx(-4.0)


def test_zero_weights_remove_rows():
    rng = np.random.default_rng(2)
    X, Y = _gaussian(800, rng)
    Y_bad = Y + 5.0
    Xs, Ys = np.vstack([X, X]), np.vstack([Y, Y_bad])
    w = np.r_[np.ones(len(X)), np.zeros(len(X))]
    model = KRQuantileRegressor(ordering="fixed", max_iter=60, random_state=0)
    pred = model.fit(Xs, Ys, sample_weight=w).predict([[0.0]])[0]
    assert np.abs(pred).max() < 0.2


def test_one_output_is_iqn():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (800, 1))
    y = 2 * X[:, 0] + rng.normal(size=800)
    model = KRQuantileRegressor(max_iter=60, random_state=0).fit(X, y)
    assert model.predict([[0.5]]).shape == (1,)
    q = model.predict_quantiles([[0.0]], [[0.1], [0.9]])[0, :, 0]
    assert q == pytest.approx(norm.ppf([0.1, 0.9]), abs=0.3)


@pytest.mark.parametrize(
    "taus, match",
    [
        ([[0.0, 0.5]], "strictly inside"),
        ([[0.5, 1.0]], "strictly inside"),
        ([[1.2, 0.5]], "strictly inside"),
        ([[0.5, 0.5, 0.5]], r"shape \(n_taus, 2\)"),
    ],
)
def test_bad_taus_are_named(gaussian_fit, taus, match):
    with pytest.raises(ValueError, match=match):
        gaussian_fit.predict_quantiles([[0.0]], taus)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"weights": [1.0]}, "weights must be 2"),
        ({"weights": [1.0, -1.0]}, "non-negative"),
        ({"measure": "var"}, "measure must be one of"),
        ({"alpha": 0.0}, r"alpha must be in \(0, 1\]"),
        ({"n_draws": 0}, "n_draws must be a positive integer; got 0"),
    ],
)
def test_bad_risk_arguments_are_named(gaussian_fit, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_fit.vector_risk([[0.0]], **kwargs)


@pytest.mark.parametrize(
    "draws, match",
    [
        (np.zeros(5), r"\(\.\.\., n_draws, n_outputs\).*got shape \(5,\)"),
        (np.zeros((0, 2)), r"n_draws >= 1; got shape \(0, 2\)"),
    ],
)
def test_bad_draws_are_named(draws, match):
    with pytest.raises(ValueError, match=match):
        vector_risk_of_draws(draws)


def _refit_one_column(X, Y):
    """A warm start on one column of y after a fit on two."""
    model = KRQuantileRegressor(max_iter=2, warm_start=True, device="cpu")
    return model.fit(X, Y).fit(X, Y[:, :1])


@pytest.mark.parametrize(
    "fit, match",
    [
        (
            lambda X, Y: KRQuantileRegressor(max_iter=2).fit(X, Y.astype(str)),
            "y must hold numbers.*got dtype <U",
        ),
        (_refit_one_column, r"n_outputs: 2 -> 1 changed since that fit"),
        (
            lambda X, Y: KRQuantileRegressor(max_iter=2).fit(X, Y[:, :, None]),
            "dim 3",
        ),
    ],
)
def test_regressor_bad_fit_input_is_named(fit, match):
    X, Y = _gaussian(40, np.random.default_rng(0))
    before = (X.copy(), Y.copy())
    with pytest.raises(ValueError, match=match):
        fit(X, Y)
    np.testing.assert_array_equal(X, before[0])
    np.testing.assert_array_equal(Y, before[1])


def test_a_single_column_is_the_single_output_case():
    """One column of y is IQN, as a 1-D y: scikit-learn's multi-output
    contract (check_supervised_y_2d) asks for the same predictions."""
    X, Y = _gaussian(60, np.random.default_rng(0))
    params = {"max_iter": 3, "random_state": 0, "device": "cpu"}
    flat = KRQuantileRegressor(**params).fit(X, Y[:, 0])
    column = KRQuantileRegressor(**params).fit(X, Y[:, :1])
    assert flat.n_outputs_ == column.n_outputs_ == 1
    assert flat.predict(X).shape == (60,) and column.predict(X).shape == (60, 1)
    np.testing.assert_allclose(column.predict(X)[:, 0], flat.predict(X))


# --- the agent ---------------------------------------------------------------


def _bandit(n=600, shift=0.2, seed=0):
    return copula_bandit(n, shift, random_state=seed)[0]


def test_joint_cvar_agent_picks_the_diversified_arm_and_marginals_cannot():
    """Arm 0: (x, x) + 0.2; arm 1: (x, x'). Exact CVaR_0.25 of the scalarised
    return (risk="cvar"): -1.07 vs -0.90."""
    data = _bandit()
    params = {
        "risk": "cvar",
        "alpha": 0.25,
        "max_iter": 1,
        "n_epochs": 12,
        "random_state": 0,
    }
    kr = MOQuantileAgent(**params).fit(data)
    independent = MOQuantileAgent(critic="independent", **params).fit(data)
    neutral = MOQuantileAgent(**{**params, "risk": "expectation"}).fit(data)
    assert kr.predict([0])[0] == 1
    assert independent.predict([0])[0] == 0
    assert neutral.predict([0])[0] == 0
    risk = kr.risk_values([0])[0]
    assert risk[1] - risk[0] > 0.1
    # The tails are learned, not shrunk to the centre: the critics' CVaR is
    # near the exact values, and the law of each objective has spread 1.
    np.testing.assert_allclose(risk, [0.2 - 1.271, -0.899], atol=0.2)
    draws = kr.sample_returns([0, 0], [0, 1], n_draws=1000, random_state=0)
    np.testing.assert_allclose(draws.std(axis=1), 1.0, atol=0.12)


def test_kr_cvar_agent_acts_on_the_kr_vector_cvar():
    """The default risk is the KR vector CVaR of the paper.

    Arm 1 pays (x, -x): objective 2 is high exactly when objective 1 is in its
    tail, so its KR corner mean is 0 against 0.2 - 1.27 for the comonotone
    arm 0 (``kr_copula_bandit_truth``). Critics of the product of the
    marginals see -1.27 for arm 1 and pick arm 0 (the risk-neutral agent
    too, as in the test above); the scalarised CVaR ranks the arms as KR
    does here, so the per-objective critic is the control.
    """
    from sklearn_ext.rl._kr_data import countermonotone_pulls, kr_copula_bandit_truth

    data = countermonotone_pulls()
    params = {"alpha": 0.25, "max_iter": 1, "n_epochs": 12, "random_state": 0}
    kr = MOQuantileAgent(**{**params, "n_epochs": 30}).fit(data)
    assert kr.risk == "kr_cvar"
    independent = MOQuantileAgent(critic="independent", **params).fit(data)
    assert kr.predict([0])[0] == 1
    assert independent.predict([0])[0] == 0
    truth = kr_copula_bandit_truth(0.2, 0.25)
    # The corner means converge on the exact ones (-0.30 for arm 1 after 12
    # epochs, -0.08 after 30, -0.05 after 60: the conditional law narrows).
    np.testing.assert_allclose(kr.risk_values([0])[0], truth, atol=0.15)
    assert independent.risk_values([0])[0][1] < truth[0]


def test_empirical_kr_tail_recovers_the_corner_means():
    """The score's estimate of the KR vector CVaR on the bandit's two arms."""
    from sklearn_ext.rl._kr_data import kr_copula_bandit_truth
    from sklearn_ext.rl._mo_agent import empirical_kr_tail

    x = np.random.default_rng(0).normal(size=40_000)
    w = np.array([0.5, 0.5])
    truth = kr_copula_bandit_truth(0.2, 0.25)
    comonotone = np.column_stack([x, x]) + 0.2
    counter = np.column_stack([x, -x])
    assert abs(empirical_kr_tail(comonotone, 0.25) @ w - truth[0]) < 0.02
    assert abs(empirical_kr_tail(counter, 0.25) @ w - truth[1]) < 0.02
    # Independent objectives: both corner means are the marginal tails.
    indep = np.column_stack([x, np.random.default_rng(1).normal(size=x.size)])
    np.testing.assert_allclose(empirical_kr_tail(indep, 0.25), -1.271, atol=0.05)


def test_truncation_lowers_the_bootstrapped_value():
    """A two-step chain: MO-TQC drops the top target draws, so values fall."""
    rng = np.random.default_rng(0)
    n = 400
    obs = np.r_[np.zeros(n, dtype=int), np.ones(n, dtype=int)]
    nxt = np.r_[np.ones(n, dtype=int), np.ones(n, dtype=int)]
    rewards = np.r_[np.zeros((n, 2)), rng.normal(size=(n, 2))]
    data = {
        "observations": obs,
        "actions": np.zeros(2 * n, dtype=int),
        "rewards": rewards,
        "next_observations": nxt,
        "terminals": np.r_[np.zeros(n, bool), np.ones(n, bool)],
    }
    values = []
    for drop in (0, 6):
        agent = MOQuantileAgent(
            risk="expectation",
            drop_top=drop,
            n_quantiles=8,
            gamma=0.99,
            max_iter=3,
            n_epochs=5,
            ordering="fixed",
            random_state=0,
        ).fit(data)
        values.append(agent.risk_values([0])[0, 0])
    assert values[0] == pytest.approx(0.0, abs=0.2)
    assert values[1] < values[0] - 0.3


def test_online_training_on_a_vector_reward_environment():
    mo_gym = pytest.importorskip("mo_gymnasium")
    env = mo_gym.make("fishwood-v0")
    agent = MOQuantileAgent(
        total_timesteps=150,
        n_episodes_per_round=3,
        max_episode_steps=30,
        hidden=16,
        n_quantiles=4,
        ordering="fixed",
        random_state=0,
    ).fit(env)
    # Fishwood's episodes run to the cap: 90 steps a round, so 2 rounds reach
    # the 150-step budget.
    assert agent.training_returns_.shape == (6, 2)
    assert agent.n_timesteps_ == 180
    np.testing.assert_array_equal(agent.training_timesteps_, [90] * 3 + [180] * 3)
    assert set(agent.predict(np.array([[0], [1]]))) <= {0, 1}
    assert agent.n_iter_ == 2 and len(agent.loss_curve_) == 2


def test_lockstep_episodes_returns_vector_returns():
    mo_gym = pytest.importorskip("mo_gymnasium")
    env = mo_gym.make("fishwood-v0")
    copies = [copy.deepcopy(env) for _ in range(3)]
    data, returns = lockstep_episodes(
        lambda obs: np.ones(len(obs), dtype=int), copies, [0, 1, 2], 10, 1.0
    )
    assert returns.shape == (3, 2)
    assert len(data["actions"]) == 30
    np.testing.assert_allclose(returns.sum(), np.sum(data["rewards"]))


def test_agent_contract_clone_pickle_params():
    agent = MOQuantileAgent(max_iter=1, n_epochs=2, hidden=8, random_state=0)
    check_param_validation("MOQuantileAgent", agent)
    data = _bandit(n=100)
    fitted = clone(agent).fit(data)
    assert not hasattr(clone(fitted), "module_")
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.risk_values([0]), fitted.risk_values([0]))
    again = clone(agent).fit(data)
    np.testing.assert_array_equal(again.risk_values([0]), fitted.risk_values([0]))


def _without(key):
    data = _bandit(n=20)
    del data[key]
    return data


@pytest.mark.parametrize(
    "data, error, match",
    [
        (
            {**_bandit(n=20), "rewards": np.zeros((20, 1))},
            ValueError,
            "at least 2 objectives",
        ),
        (
            {**_bandit(n=20), "rewards": np.zeros(20)},
            ValueError,
            "at least 2 objectives",
        ),
        (_without("terminals"), ValueError, "lacks the keys"),
        (
            {**_bandit(n=20), "actions": -np.ones(20)},
            ValueError,
            "non-negative integers",
        ),
        ({**_bandit(n=20), "actions": np.zeros(5)}, ValueError, "actions has 5 rows"),
        (np.zeros((20, 5)), TypeError, "dict of transition arrays"),
    ],
)
def test_agent_bad_fit_input_is_named(data, error, match):
    with pytest.raises(error, match=match):
        MOQuantileAgent(max_iter=1, n_epochs=1).fit(data)


def test_agent_refuses_a_scalar_reward_environment():
    gym = pytest.importorskip("gymnasium")
    with pytest.raises(ValueError, match="vector rewards"):
        MOQuantileAgent(max_iter=1).fit(gym.make("FrozenLake-v1"))


class _TwoObjectiveChain:
    """A tiny vector-reward environment: 3 steps, 2 actions, a chosen reward."""

    def __init__(self, reward=lambda t: np.array([1.0, -1.0])):
        import gymnasium as gym

        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(3)
        self.reward_space = gym.spaces.Box(-np.inf, np.inf, (2,))
        self.reward = reward
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return 0, {}

    def step(self, action):
        r = self.reward(self.t) * (1 + action)
        self.t += 1
        return self.t % 3, r, self.t >= 3, False, {}


_SMALL = {"hidden": 8, "embedding_dim": 4, "n_quantiles": 4, "n_epochs": 1}


def test_agent_family_interface_on_a_list_of_environments():
    pytest.importorskip("gymnasium")
    from sklearn.model_selection import GridSearchCV

    envs = [_TwoObjectiveChain(), _TwoObjectiveChain()]
    agent = MOQuantileAgent(
        total_timesteps=20, n_episodes_per_round=2, random_state=0, **_SMALL
    )
    fitted = clone(agent).fit(envs)
    # Rounds of 2 episodes of 3 steps until 20 steps: 4 rounds, 24 steps.
    assert fitted.n_timesteps_ == 24 and fitted.n_iter_ == 4
    assert fitted.training_returns_.shape == (8, 2)
    obs = np.zeros(200, dtype=int)
    np.testing.assert_array_equal(
        fitted.predict(obs), fitted.predict(obs, deterministic=True)
    )
    # The stochastic policy explores at epsilon / 20 with the fit's generator.
    draws = [clone(agent).fit(envs).predict(obs, deterministic=False) for _ in "ab"]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert 0 < np.mean(draws[0] != fitted.predict(obs)) < 0.2
    assert isinstance(fitted.score(envs, n_episodes=4), float)
    search = GridSearchCV(agent, {"alpha": [0.25, 0.5]}, cv=2).fit(envs * 2)
    assert search.best_params_["alpha"] in (0.25, 0.5)


@pytest.mark.parametrize(
    "reward, match",
    [
        (lambda t: np.ones(2) if t < 2 else np.ones(3), "changed shape"),
        (lambda t: np.array([1.0, np.nan]), "non-finite reward"),
    ],
)
def test_agent_names_bad_environment_rewards(reward, match):
    pytest.importorskip("gymnasium")
    agent = MOQuantileAgent(total_timesteps=6, n_episodes_per_round=1, **_SMALL)
    with pytest.raises(ValueError, match=match):
        agent.fit(_TwoObjectiveChain(reward))


# --- quantiles do not cross ------------------------------------------------------


def test_rearrangement_sorts_a_quantile_function_and_keeps_a_monotone_one():
    import torch

    from sklearn_ext.rl._kr_quantile_nn import rearrange, rearrangement_grid

    levels, mass = rearrangement_grid()
    assert float(mass.sum()) == pytest.approx(1.0)
    tau = torch.tensor([[0.05, 0.3], [0.5, 0.9]], dtype=torch.float64)
    exact = torch.as_tensor(norm.ppf(levels.numpy()))
    # A monotone function (the normal quantile) is read back at tau.
    values = exact[None, :, None].expand(2, -1, 2)
    got = rearrange(values, mass, tau).numpy()
    np.testing.assert_allclose(got, norm.ppf(tau.numpy()), atol=0.02)
    # Shuffled along the levels, the same values give the same function.
    perm = torch.randperm(len(levels), generator=torch.Generator().manual_seed(0))
    shuffled = rearrange(values[:, perm], mass[perm], tau).numpy()
    np.testing.assert_allclose(shuffled, got)


@pytest.mark.parametrize("ordering", ["transformer", "fixed"])
def test_predicted_quantiles_do_not_cross_where_the_network_does(ordering):
    X, Y = _gaussian(300, np.random.default_rng(4))
    model = KRQuantileRegressor(
        ordering=ordering, max_iter=5, hidden=16, random_state=0, device="cpu"
    ).fit(X, Y)
    Xt = np.array([[-0.8], [0.0], [0.6]])
    lv = np.linspace(0.02, 0.98, 15)
    taus = np.array([[a, b] for a in lv for b in lv])
    q = model.predict_quantiles(Xt, taus).reshape(3, 15, 15, 2)
    raw = model._kr_map(model._check_X(Xt), taus, monotone=False).reshape(q.shape)
    # The untrained network's quantile functions cross...
    assert (np.diff(raw[:, :, 0, 0], axis=1) < 0).any()
    assert (np.diff(raw[..., 1], axis=2) < 0).any()
    # ...the predicted ones do not: y1 in its level, y2 in its level given y1.
    assert (np.diff(q[:, :, 0, 0], axis=1) >= -1e-9).all()
    assert (np.diff(q[..., 1], axis=2) >= -1e-9).all()
    # The median is the rearranged map at (0.5, 0.5).
    np.testing.assert_allclose(
        model.predict(Xt), model.predict_quantiles(Xt, [[0.5, 0.5]])[:, 0]
    )
