"""ConstrainedMaxMinMORL: the estimator, tabular and with function approximation."""

import dataclasses
import pickle

import numpy as np
import pytest

from sklearn_ext.rl import (
    ConstrainedMaxMinMORL,
    TabularMaxMinMORL,
    make_random_momdp,
    solve_maxmin_lp,
    solve_weighted_lp,
)

gym = pytest.importorskip("gymnasium")

from sklearn_ext.rl import BuildingThermalEnv  # noqa: E402

# --- tabular -------------------------------------------------------------------


def test_tabular_solver_reaches_the_lp_max_min_within_its_entropy_bias():
    mdp = make_random_momdp(random_state=1)
    lp = solve_maxmin_lp(mdp)
    agent = TabularMaxMinMORL().fit(mdp)
    bias = agent.temperature * np.log(mdp.n_actions) / (1 - mdp.gamma)
    assert abs(agent.objective_values_.min() - lp.value) <= bias + 0.01
    assert np.all(agent.constraint_values_ <= mdp.cost_limits + 0.01)
    assert agent.worst_objective_.shape == agent.violation_.shape == (2000,)
    np.testing.assert_allclose(agent.weights_.sum(), 1.0)
    # The exact values of the learned policy are what the solver reports,
    # and score is its worst objective on the data (it is feasible).
    np.testing.assert_allclose(
        mdp.evaluate(agent.policy_), agent.objective_values_, atol=1e-8
    )
    assert agent.score(mdp) == pytest.approx(agent.objective_values_.min())


def test_tabular_fixed_weights_are_the_utilitarian_baseline_and_lose():
    """Equal fixed weights: the solver solves the constrained utilitarian
    problem and falls short of the max-min optimum on the worst objective."""
    mdp = make_random_momdp(random_state=3)
    lp = solve_maxmin_lp(mdp)
    util_lp = solve_weighted_lp(mdp, np.full(3, 1 / 3))
    assert util_lp.value < lp.value - 0.05  # the planted gap is real
    ours = TabularMaxMinMORL(max_iter=500).fit(mdp)
    util = TabularMaxMinMORL(weights=[1, 1, 1], max_iter=500).fit(mdp)
    np.testing.assert_allclose(util.weights_, np.full(3, 1 / 3))
    assert util.objective_values_.min() < ours.objective_values_.min() - 0.05
    assert util.score(mdp) < ours.score(mdp) - 0.05
    assert np.all(util.constraint_values_ <= mdp.cost_limits + 0.01)


def test_tabular_without_limits_is_unconstrained_max_min():
    mdp = make_random_momdp(random_state=2)
    free = dataclasses.replace(mdp, costs=None, cost_limits=None)
    lp_free = solve_maxmin_lp(free)
    agent = TabularMaxMinMORL(max_iter=500).fit(free)
    bias = agent.temperature * np.log(mdp.n_actions) / (1 - mdp.gamma)
    assert abs(agent.objective_values_.min() - lp_free.value) <= bias + 0.01
    assert agent.objective_values_.min() > solve_maxmin_lp(mdp).value
    # Scored on the constrained MDP, the free policy breaks the limit: it
    # scores below every feasible policy, even the utilitarian one.
    util = TabularMaxMinMORL(weights=[1, 1, 1], max_iter=200).fit(mdp)
    floor = mdp.rewards.min() / (1 - mdp.gamma)
    assert agent.score(mdp) < floor <= util.score(mdp)


def test_tabular_sampled_mode_is_seeded_and_differs_from_the_exact_one():
    # Its convergence is tested on maxmin_dual_descent; here, the wiring.
    mdp = make_random_momdp(n_states=6, n_actions=2, random_state=4)
    params = {"evaluation": "sampled", "max_iter": 100, "random_state": 0}
    agent = TabularMaxMinMORL(**params).fit(mdp)
    again = TabularMaxMinMORL(**params).fit(mdp)
    np.testing.assert_array_equal(agent.policy_, again.policy_)
    exact = TabularMaxMinMORL(max_iter=100).fit(mdp)
    assert not np.allclose(agent.weights_path_, exact.weights_path_)
    np.testing.assert_allclose(
        mdp.evaluate(agent.policy_), agent.objective_values_, atol=1e-8
    )


def test_tabular_solver_predicts_draws_and_pickles():
    mdp = make_random_momdp(random_state=0)
    agent = TabularMaxMinMORL(max_iter=200, random_state=0).fit(mdp)
    states = np.arange(mdp.n_states)
    np.testing.assert_array_equal(agent.predict(states), agent.policy_.argmax(1))
    many = np.repeat(states, 2000)
    draws = agent.predict(many, deterministic=False).reshape(-1, 2000)
    freq = np.stack([(draws == a).mean(axis=1) for a in range(mdp.n_actions)], 1)
    np.testing.assert_allclose(freq, agent.policy_, atol=0.05)
    # The draws after a fit are reproducible given random_state.
    again = TabularMaxMinMORL(max_iter=200, random_state=0).fit(mdp)
    np.testing.assert_array_equal(
        again.predict(many, deterministic=False), draws.ravel()
    )
    back = pickle.loads(pickle.dumps(agent))
    np.testing.assert_array_equal(back.predict(states), agent.predict(states))
    with pytest.raises(ValueError, match="integer state indices"):
        agent.predict(np.array([0.5]))
    with pytest.raises(ValueError, match=r"state indices must lie in \[0, 10\)"):
        agent.predict(np.array([10]))
    with pytest.raises(ValueError, match="the policy was fitted on 10"):
        agent.score(make_random_momdp(n_states=5, random_state=0))


def test_tabular_grid_search_tunes_the_temperature_by_score():
    from sklearn.model_selection import GridSearchCV

    mdp = make_random_momdp(random_state=0)
    # A solver's data is one MDP: GridSearchCV passes it as a one-item list,
    # fits on it and scores on it exactly; a high temperature loses.
    search = GridSearchCV(
        TabularMaxMinMORL(max_iter=200), {"temperature": [0.01, 3.0]}, cv=[([0], [0])]
    ).fit([mdp])
    assert search.best_params_ == {"temperature": 0.01}
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] > scores[1] + 0.05
    assert scores[0] == pytest.approx(
        TabularMaxMinMORL(max_iter=200).fit(mdp).score(mdp)
    )


def test_tabular_infeasible_limits_are_reported_by_the_lp():
    mdp = dataclasses.replace(make_random_momdp(random_state=0), cost_limits=[0.0])
    with pytest.raises(ValueError, match="infeasible.*least"):
        TabularMaxMinMORL().fit(mdp)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"weights": [1.0, 1.0]}, "weights has 2 entries"),
        ({"weights": [1.0, -1.0, 1.0]}, "non-negative"),
    ],
)
def test_tabular_bad_parameters_are_named(params, match):
    mdp = make_random_momdp(random_state=0)
    with pytest.raises(ValueError, match=match):
        TabularMaxMinMORL(**params).fit(mdp)


def test_tabular_negative_limit_is_named():
    mdp = dataclasses.replace(make_random_momdp(random_state=0), cost_limits=[-1.0])
    with pytest.raises(ValueError, match=r"cost_limits\[0\] = -1 is negative, but"):
        TabularMaxMinMORL().fit(mdp)


# --- environments ----------------------------------------------------------------


class _Choice(gym.Env):
    """One-step choice with a vector reward and a cost.

    Action 0 pays (1, 0) and costs 1; action 1 pays (0, 1); action 2 pays
    (0.4, 0.4). With a cost limit of 0.25 the max-min policy is (0.25,
    0.25, 0.5), worth 0.45 on both objectives; the utilitarian policy under
    the same limit is (0.25, 0.75, 0), whose worst objective is 0.25.
    """

    observation_space = gym.spaces.Box(-1, 1, shape=(2,))
    action_space = gym.spaces.Discrete(3)
    payoffs = np.array([[1.0, 0.0], [0.0, 1.0], [0.4, 0.4]])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        cost = [1.0 if action == 0 else 0.0]
        obs = np.zeros(2, dtype=np.float32)
        return obs, self.payoffs[int(action)].copy(), True, False, {"costs": cost}


_CHOICE = {
    "total_timesteps": 80 * 32,  # 80 updates of 32 one-step episodes
    "n_episodes_per_update": 32,
    "hidden": 16,
    "learning_rate_init": 3e-3,
    "random_state": 0,
    "device": "cpu",
}


SOFT_PI = {"weights_update": "softmin", "multiplier_update": "pi", "lambda_lr": 0.2}
# The fixture's agents: 5 PPO epochs an update (the cost of an update).
_FIXTURE = {**_CHOICE, "n_epochs": 5}


@pytest.fixture(scope="module")
def choice_agents():
    env = _Choice()
    return {
        "maxmin": ConstrainedMaxMinMORL(cost_limits=[0.25], **_FIXTURE).fit(env),
        "soft_pi": ConstrainedMaxMinMORL(cost_limits=[0.25], **SOFT_PI, **_FIXTURE).fit(
            env
        ),
        "utilitarian": ConstrainedMaxMinMORL(
            cost_limits=[0.25], weights=[1, 1], **_FIXTURE
        ).fit(env),
        "free": ConstrainedMaxMinMORL(**_FIXTURE).fit(env),
    }


def _last(agent, attr, n=20):
    return getattr(agent, attr)[-n:].mean(axis=0)


def test_env_paper_dual_step_keeps_the_limit_and_beats_fixed_weights(choice_agents):
    agent, util = choice_agents["maxmin"], choice_agents["utilitarian"]
    assert _last(agent, "constraint_values_")[0] < 0.3  # limit 0.25
    # Its worst objective is above the utilitarian optimum (0.25) by a
    # margin, short of the max-min optimum 0.45 (measured in the benchmark).
    assert _last(agent, "returns_").min() > _last(util, "returns_").min() + 0.05
    # The paper's step: projected steps whose size decays as 1/sqrt(t).
    steps = np.abs(np.diff(agent.weights_path_[:, 0]))
    half = len(steps) // 2
    assert steps.max() > 0 and steps[half:].max() <= steps[:half].max()


def test_env_soft_minimum_finds_the_constrained_max_min_mixture(choice_agents):
    agent = choice_agents["soft_pi"]
    assert _last(agent, "returns_").min() > 0.38  # optimum 0.45
    assert _last(agent, "constraint_values_")[0] < 0.3  # limit 0.25
    assert agent.multipliers_.max() > 0  # the budget binds


def test_env_fixed_weights_lose_on_the_worst_objective(choice_agents):
    util = choice_agents["utilitarian"]
    assert _last(util, "returns_").min() < 0.33  # its optimum is 0.25
    assert _last(util, "constraint_values_")[0] < 0.3


def test_env_without_constraints_spends_above_the_limit(choice_agents):
    free = choice_agents["free"]
    assert _last(free, "constraint_values_")[0] > 0.35  # the free optimum: 0.5
    np.testing.assert_array_equal(free.multipliers_, 0.0)
    # score: the worst expected return of the stochastic policy (no limits),
    # here known from its action frequencies on the one state.
    draws = free.predict(np.zeros((4000, 2), dtype=np.float32), deterministic=False)
    freq = np.bincount(draws, minlength=3) / draws.size
    worst = (freq @ _Choice.payoffs).min()
    assert free.score(_Choice(), n_episodes=400) == pytest.approx(worst, abs=0.06)


def test_env_agent_on_the_thermal_model_has_factorised_actions_and_pickles():
    env = BuildingThermalEnv()
    agent = ConstrainedMaxMinMORL(
        cost_limits=[290.0], total_timesteps=3 * 2 * env.horizon,
        n_episodes_per_update=2, hidden=8, max_episode_steps=env.horizon,
        random_state=0, device="cpu",
    ).fit(env)  # fmt: skip
    assert agent.n_iter_ == 3 and agent.n_timesteps_ == 3 * 2 * env.horizon
    assert agent.n_objectives_ == 3 and agent.n_constraints_ == 1
    assert agent.weights_path_.shape == (4, 3)
    assert agent.multipliers_.shape == (4, 1)
    assert agent.returns_.shape == (3, 3)
    assert agent.constraint_values_.shape == (3, 1)
    obs = np.stack([env.reset(seed=s)[0] for s in range(5)])
    actions = agent.predict(obs)
    assert actions.shape == (5, 3) and set(np.unique(actions)) <= {0, 1, 2}
    back = pickle.loads(pickle.dumps(agent))
    np.testing.assert_array_equal(back.predict(obs), actions)
    # The draws continue the fit's generator: a copy draws the same.
    many = np.repeat(obs, 50, axis=0)
    np.testing.assert_array_equal(
        back.predict(many, deterministic=False),
        agent.predict(many, deterministic=False),
    )
    assert not np.array_equal(
        agent.predict(many, deterministic=False), np.repeat(actions, 50, axis=0)
    )
    score = agent.score(env, n_episodes=2)
    assert isinstance(score, float)


class _Scalar(_Choice):
    def step(self, action):
        obs, reward, *rest = super().step(action)
        return obs, float(reward[0]), *rest


class _Ragged(_Choice):
    """The reward gains an entry after the first episode."""

    calls = 0

    def step(self, action):
        obs, reward, *rest = super().step(action)
        _Ragged.calls += 1
        return obs, np.r_[reward, [0.0] * (_Ragged.calls > 2)], *rest


class _NaNReward(_Choice):
    def step(self, action):
        obs, reward, *rest = super().step(action)
        return obs, np.array([np.nan, 0.0]), *rest


class _NaNCost(_Choice):
    def step(self, action):
        obs, reward, term, trunc, info = super().step(action)
        return obs, reward, term, trunc, {"costs": [np.inf]}


def test_env_non_finite_rewards_and_costs_are_named():
    params = {"cost_limits": [0.5], "total_timesteps": 4, "n_episodes_per_update": 2}
    with pytest.raises(ValueError, match="non-finite reward"):
        ConstrainedMaxMinMORL(**params).fit(_NaNReward())
    with pytest.raises(ValueError, match="non-finite cost"):
        ConstrainedMaxMinMORL(**params).fit(_NaNCost())


def test_each_agent_refuses_the_other_ones_data():
    mdp = make_random_momdp(random_state=0)
    with pytest.raises(TypeError, match="takes a gymnasium environment with a vec"):
        ConstrainedMaxMinMORL().fit(mdp)
    with pytest.raises(TypeError, match="takes a gymnasium environment with a vec"):
        ConstrainedMaxMinMORL().fit(np.zeros((3, 2)))
    with pytest.raises(TypeError, match="TabularMaxMinMORL.fit takes a TabularMOMDP"):
        TabularMaxMinMORL().fit(_Choice())


def test_env_bad_rewards_and_limits_are_named():
    with pytest.raises(ValueError, match="needs a vector reward"):
        ConstrainedMaxMinMORL(cost_limits=[0.5], total_timesteps=1).fit(_Scalar())
    with pytest.raises(ValueError, match="changed shape|width"):
        ConstrainedMaxMinMORL(
            cost_limits=[0.5], total_timesteps=10, n_episodes_per_update=2
        ).fit(_Ragged())
    with pytest.raises(ValueError, match="cost_limits has 2 entries"):
        ConstrainedMaxMinMORL(cost_limits=[0.5, 1.0], total_timesteps=1).fit(_Choice())
    with pytest.raises(ValueError, match="weights has 3 entries"):
        ConstrainedMaxMinMORL(weights=[1, 1, 1], total_timesteps=1).fit(_Choice())
    with pytest.raises(ValueError, match=r"cost_limits\[0\] = -0.5 is negative.*"
                       "mean episode cost is at least 0"):  # fmt: skip
        ConstrainedMaxMinMORL(cost_limits=[-0.5], total_timesteps=1).fit(_Choice())
