"""The rl family's one interface: every agent through the same calls.

Each agent (environment agents and tabular solvers alike) is fitted, asked
for greedy and sampled actions, scored, cloned, pickled, re-parametrised and
tuned by ``GridSearchCV`` the same way (``docs/user_guide/rl.rst``, "The
family's conventions"). Budgets are tiny: this checks the interface, not
learning (each method's own test file checks that).
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sklearn_ext.rl import (
    BridgeWorld,
    ConstrainedMaxMinMORL,
    LagrangianActorCritic,
    MOQuantileAgent,
    TabularLagrangian,
    TabularMaxMinMORL,
    TabularQLearning,
    make_random_cmdp,
    make_random_momdp,
)


def _grid():
    from sklearn_ext.rl import DistributionGridEnv

    return DistributionGridEnv()


def _thermal():
    from sklearn_ext.rl import BuildingThermalEnv

    return BuildingThermalEnv(horizon=8)


def _fishwood():
    mo_gym = pytest.importorskip("mo_gymnasium")
    return mo_gym.make("fishwood-v0")


def _observations(env, n=6):
    space = env.observation_space
    space.seed(0)
    return np.array([space.sample() for _ in range(n)])


# (id, agent, make the training input, make the scoring input, observations,
#  a parameter grid for GridSearchCV, whether the input is an environment)
AGENTS = [
    (
        "TabularQLearning",
        lambda: TabularQLearning(total_timesteps=300, random_state=0),
        lambda: BridgeWorld(width=3),
        np.array([0, 1, 2]),
        {"epsilon": [0.1, 0.5]},
    ),
    (
        "LagrangianActorCritic",
        lambda: LagrangianActorCritic(
            cost_limits=[2.0, 4.0],
            total_timesteps=96,
            n_episodes_per_update=2,
            n_epochs=1,
            hidden=8,
            random_state=0,
            device="cpu",
        ),
        _grid,
        None,
        {"clip": [0.1, 0.2]},
    ),
    (
        "ConstrainedMaxMinMORL",
        lambda: ConstrainedMaxMinMORL(
            cost_limits=[290.0],
            total_timesteps=32,
            n_episodes_per_update=2,
            max_episode_steps=8,
            n_epochs=1,
            hidden=8,
            random_state=0,
            device="cpu",
        ),
        _thermal,
        None,
        {"clip": [0.1, 0.2]},
    ),
    (
        "MOQuantileAgent",
        lambda: MOQuantileAgent(
            total_timesteps=60,
            n_episodes_per_round=2,
            max_episode_steps=30,
            hidden=8,
            n_quantiles=4,
            ordering="fixed",
            random_state=0,
            device="cpu",
        ),
        _fishwood,
        None,
        {"alpha": [0.25, 0.5]},
    ),
    (
        "TabularLagrangian",
        lambda: TabularLagrangian(max_iter=200, random_state=0),
        lambda: make_random_cmdp(random_state=0),
        np.arange(10),
        {"lambda_lr": [0.05, 0.1]},
    ),
    (
        "TabularMaxMinMORL",
        lambda: TabularMaxMinMORL(max_iter=100, random_state=0),
        lambda: make_random_momdp(random_state=0),
        np.arange(10),
        {"temperature": [0.01, 0.05]},
    ),
]
IDS = [a[0] for a in AGENTS]


def _is_env(x):
    return hasattr(x, "reset") and hasattr(x, "step")


@pytest.mark.parametrize("name, make, data, observations, grid", AGENTS, ids=IDS)
def test_every_agent_fits_predicts_scores_clones_and_pickles(
    name, make, data, observations, grid
):
    pytest.importorskip("gymnasium")
    X = data()
    obs = _observations(X) if observations is None else observations
    agent = make().fit(X)
    greedy = agent.predict(obs)
    assert len(greedy) == len(obs)
    np.testing.assert_array_equal(agent.predict(obs, deterministic=True), greedy)
    # Sampled actions: valid, and the same after the same fit.
    drawn = make().fit(data()).predict(obs, deterministic=False)
    again = make().fit(data()).predict(obs, deterministic=False)
    np.testing.assert_array_equal(drawn, again)
    assert np.shape(drawn) == np.shape(greedy)
    kwargs = {"n_episodes": 2} if _is_env(X) else {}
    score = agent.score(X, **kwargs)
    assert isinstance(score, float) and np.isfinite(score)
    if _is_env(X):
        assert np.isfinite(agent.score([X, data()], **kwargs))
    # clone, pickle, set_params then fit.
    fresh = clone(agent)
    assert fresh.get_params() == agent.get_params()
    loaded = pickle.loads(pickle.dumps(agent))
    np.testing.assert_array_equal(loaded.predict(obs), greedy)
    param, values = next(iter(grid.items()))
    fresh.set_params(**{param: values[0]}).fit(data())
    assert len(fresh.predict(obs)) == len(obs)


@pytest.mark.parametrize("name, make, data, observations, grid", AGENTS, ids=IDS)
def test_grid_search_tunes_every_agent(name, make, data, observations, grid):
    pytest.importorskip("gymnasium")
    first = data()
    if _is_env(first):
        X, cv = [first, data()], 2
    else:
        # A tabular solver tunes on its one problem (exact scores in-sample).
        X, cv = [first], [([0], [0])]
    search = GridSearchCV(make(), grid, cv=cv, error_score="raise").fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 2 and np.all(np.isfinite(scores))
    assert search.best_params_[next(iter(grid))] in next(iter(grid.values()))


class _Broken:
    """An environment whose reward goes wrong from its third step on.

    ``"width"`` appends an entry to the reward, ``"nan"`` makes it NaN.
    """

    def __init__(self, env, mode):
        self.env, self.mode, self.t = env, mode, 0
        self.action_space = env.action_space
        self.observation_space = env.observation_space
        self.unwrapped = getattr(env, "unwrapped", env)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        if self.t >= 3:
            reward = np.asarray(reward, dtype=float)
            reward = np.append(reward, 0.0) if self.mode == "width" else reward * np.nan
        return obs, reward, terminated, truncated, info


ENV_AGENTS = [
    a for a in AGENTS if a[0] not in ("TabularLagrangian", "TabularMaxMinMORL")
]


@pytest.mark.parametrize(
    "mode, match", [("width", "changed shape"), ("nan", "non-finite")]
)
@pytest.mark.parametrize(
    "name, make, data, observations, grid", ENV_AGENTS, ids=[a[0] for a in ENV_AGENTS]
)
def test_every_environment_agent_names_a_bad_reward(
    name, make, data, observations, grid, mode, match
):
    pytest.importorskip("gymnasium")
    with pytest.raises(ValueError, match=match):
        make().fit(_Broken(data(), mode))


@pytest.mark.parametrize(
    "make, n_costs",
    [
        (lambda limits: LagrangianActorCritic(cost_limits=limits), 2),
        (lambda limits: ConstrainedMaxMinMORL(cost_limits=limits), 1),
    ],
    ids=["LagrangianActorCritic", "ConstrainedMaxMinMORL"],
)
def test_constrained_agents_name_cost_limits_of_the_wrong_length(make, n_costs):
    pytest.importorskip("gymnasium")
    env = _grid() if n_costs == 2 else _thermal()
    wrong = [1.0] * (n_costs + 1)
    with pytest.raises(ValueError, match=rf"cost_limits has {n_costs + 1} entries"):
        make(wrong).fit(env)


def _sync_vector(make_env, n=2):
    """gymnasium's SyncVectorEnv, MO-Gymnasium's for vector rewards."""
    gym = pytest.importorskip("gymnasium")
    if make_env is _grid:
        return gym.vector.SyncVectorEnv([make_env] * n)
    vector = pytest.importorskip("mo_gymnasium.wrappers.vector")
    return vector.MOSyncVectorEnv([make_env] * n)


DEEP_AGENTS = [a for a in ENV_AGENTS if a[0] != "TabularQLearning"]


@pytest.mark.parametrize(
    "name, make, data, observations, grid", DEEP_AGENTS, ids=[a[0] for a in DEEP_AGENTS]
)
def test_deep_agents_fit_and_score_a_vector_environment(
    name, make, data, observations, grid
):
    """A gymnasium.vector environment runs a round's episodes side by side.

    The fit equals the fit on a list of as many plain environments (the same
    episodes, seeded the same), and a round size other than the number of
    sub-environments is named.
    """
    vec = _sync_vector(data)
    on_vector = make().fit(vec)
    on_list = make().fit([data(), data()])
    obs = _observations(data())
    np.testing.assert_array_equal(on_vector.predict(obs), on_list.predict(obs))
    for key in ("training_returns_", "loss_curve_"):
        if hasattr(on_list, key):
            np.testing.assert_allclose(getattr(on_vector, key), getattr(on_list, key))
    assert on_vector.score(vec, n_episodes=2) == on_list.score(
        [data(), data()], n_episodes=2
    )
    with pytest.raises(ValueError, match="vector environment has 2 sub-environments"):
        on_vector.score(vec, n_episodes=3)


def test_tabular_q_learning_names_a_vector_environment():
    gym = pytest.importorskip("gymnasium")
    vec = gym.vector.SyncVectorEnv([lambda: BridgeWorld(width=3)] * 2)
    with pytest.raises(TypeError, match="takes no vector environment"):
        TabularQLearning(total_timesteps=50).fit(vec)
    with pytest.raises(TypeError, match="holds a vector environment"):
        TabularQLearning(total_timesteps=50).fit([vec, BridgeWorld(width=3)])
