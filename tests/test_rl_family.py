"""The rl family: tabular (C)MDPs and their LP, environments, rollouts, Q-learning."""

import importlib
import itertools
import pickle
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import check_param_validation

from sklearn_ext.rl import (
    BridgeTaskFamily,
    BridgeWorld,
    GoalGridWorld,
    TabularCMDP,
    TabularMDP,
    TabularQLearning,
    collect_returns,
)
from sklearn_ext.rl._base import check_env
from sklearn_ext.rl._qlearning import _planner_success
from sklearn_ext.rl._rollouts import lockstep_episodes, run_episodes


def _random_mdp(rng, S=3, A=2, gamma=0.9):
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.random((S, A))
    return TabularMDP(P, R, initial=rng.dirichlet(np.ones(S)), gamma=gamma)


def _deterministic_policies(S, A):
    return [np.array(p) for p in itertools.product(range(A), repeat=S)]


# --- tabular MDPs and the occupancy LP -------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_lp_value_is_the_best_deterministic_policy(seed):
    mdp = _random_mdp(np.random.default_rng(seed))
    sol = mdp.solve_lp()
    best = max(mdp.evaluate(p) for p in _deterministic_policies(3, 2))
    assert sol.value == pytest.approx(best, rel=1e-7)
    assert mdp.evaluate(sol.policy) == pytest.approx(sol.value, rel=1e-7)
    assert sol.occupancy.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_cmdp_lp_respects_limits_and_beats_feasible_deterministic_policies(seed):
    rng = np.random.default_rng(seed)
    base = _random_mdp(rng)
    costs = rng.random((2, 3, 2))
    policies = _deterministic_policies(3, 2)
    cost_values = np.array(
        [[base.evaluate(p, rewards=c) for c in costs] for p in policies]
    )
    limits = np.median(cost_values, axis=0)
    cmdp = TabularCMDP(
        base.transitions, base.rewards, base.initial, base.gamma, costs, limits
    )
    sol = cmdp.solve_lp()
    assert np.all(sol.constraint_values <= limits + 1e-7)
    for c, value in zip(costs, sol.constraint_values):
        assert cmdp.evaluate(sol.policy, rewards=c) == pytest.approx(value, rel=1e-6)
    feasible = [
        base.evaluate(p) for p, cv in zip(policies, cost_values) if (cv <= limits).all()
    ]
    assert sol.value >= max(feasible) - 1e-9
    assert sol.value <= base.solve_lp().value + 1e-9


def test_infeasible_cmdp_is_reported():
    P = np.ones((1, 2, 1))
    cmdp = TabularCMDP(
        P, [[0.0, 1.0]], [1.0], 0.5, costs=[[[1.0, 1.0]]], cost_limits=[0.5]
    )
    with pytest.raises(ValueError, match="infeasible"):
        cmdp.solve_lp()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"transitions": np.ones((2, 2, 2))}, "probability distribution"),
        ({"transitions": np.ones((2, 2, 3)) / 3}, "n_states"),
        ({"rewards": np.zeros((3, 2))}, "rewards must have shape"),
        ({"initial": [0.5, 0.6]}, "initial must be a probability"),
        ({"gamma": 1.5}, "gamma"),
        ({"rewards": [[np.nan, 0], [0, 0]]}, "NaN"),
    ],
)
def test_bad_mdps_are_named(kwargs, match):
    P = np.zeros((2, 2, 2))
    P[:, :, 0] = 1
    args = {"transitions": P, "rewards": np.zeros((2, 2)), "initial": [1.0, 0.0]}
    with pytest.raises(ValueError, match=match):
        TabularMDP(**{**args, **kwargs})


def test_mdp_keeps_a_copy_of_its_arrays():
    P = np.zeros((2, 2, 2))
    P[:, :, 0] = 1
    R = np.zeros((2, 2))
    mdp = TabularMDP(P, R, initial=[1.0, 0.0])
    R[0, 0] = 5.0
    assert mdp.rewards[0, 0] == 0.0
    with pytest.raises(ValueError):
        mdp.rewards[0, 0] = 1.0


# --- environments and the closed-form family ---------------------------------------


def test_bridge_family_survival_matches_sampled_tasks():
    family = BridgeTaskFamily()
    J = family.expected_return(family.sample_tasks(200_000, random_state=0))
    for g in [0.5, 0.7, 0.8, 0.85, 0.9, 0.95]:
        assert family.survival(g) == pytest.approx((J >= g).mean(), abs=0.004)
    assert family.survival(0.0) == 1.0 and family.survival(1.01) == 0.0


def test_bridge_environment_has_the_closed_form_success_rate():
    env = BridgeWorld(width=4, slip=0.1)
    returns = collect_returns(
        lambda obs: 0, lambda rng: env, n_tasks=1, n_episodes=4000, random_state=0
    )[0]
    p = 0.9**3
    lo, hi = binom.ppf([0.0005, 0.9995], 4000, p) / 4000
    assert lo <= returns.mean() <= hi


def test_gridworld_model_matches_rollouts():
    world = GoalGridWorld()
    task = {"goal": 2, "slip": 0.2}
    env = GoalGridWorld(task=task)
    mdp_policy = world.to_mdp(task, gamma=0.95).solve_lp().policy.argmax(axis=1)
    size2 = world.size**2

    def policy(obs):
        return int(mdp_policy[obs % size2])

    exact = world.success_probability(policy, task)
    returns = collect_returns(policy, lambda rng: env, 1, 3000, random_state=0)[0]
    lo, hi = binom.ppf([0.0005, 0.9995], 3000, exact) / 3000
    assert lo <= returns.mean() <= hi
    assert 0.3 < exact < 1.0


def test_gridworld_draws_tasks_from_its_distribution():
    env = GoalGridWorld(goals=[(4, 4), (0, 4)], goal_weights=[0.25, 0.75])
    rng = np.random.default_rng(0)
    tasks = [env.sample_task(rng) for _ in range(4000)]
    goals = np.array([t["goal"] for t in tasks])
    slips = np.array([t["slip"] for t in tasks])
    assert goals.mean() == pytest.approx(0.75, abs=0.03)
    assert slips.min() >= 0.0 and slips.max() <= 0.3
    _, info = env.reset(seed=1)
    assert set(info["task"]) == {"goal", "slip"}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"holes": [(0, 0)]}, "holes"),
        ({"goals": [(1, 1)]}, "goals"),
        ({"goal_weights": [1.0]}, "goal_weights"),
        ({"slip_range": (0.2, 0.1)}, "slip_range"),
    ],
)
def test_bad_gridworlds_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GoalGridWorld(**kwargs)


def test_missing_gymnasium_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    monkeypatch.delitem(sys.modules, "sklearn_ext.rl._environments")
    with pytest.raises(ImportError, match=r"sklearn-ext\[rl\]"):
        importlib.import_module("sklearn_ext.rl._environments")


# --- the one environment check --------------------------------------------------


def test_rl_family_imports_and_checks_environments_without_gymnasium():
    """Only the environments need gymnasium: the agents, the checker and the
    rollouts import without it, and a rollout's check reads no space."""
    code = (
        "import sys; sys.modules['gymnasium'] = None\n"
        "import sklearn_ext.rl\n"
        "from sklearn_ext.rl._base import check_env\n"
        "class Env:\n"
        "    def reset(self, seed=None): return 0, {}\n"
        "    def step(self, action): return 0, 1.0, True, False, {}\n"
        "from sklearn_ext.rl._rollouts import episode_returns\n"
        "print(episode_returns(lambda o: 0, Env(), 3, 0).tolist())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[1.0, 1.0, 1.0]"


def test_check_env_reads_the_spaces_and_probes_a_copy():
    env = BridgeWorld(width=3, slip=0.0)
    env.reset(seed=0)
    env.step(0)
    before = pickle.dumps(env)
    spec = check_env(
        env, "Agent", actions=("Discrete",), observations=("Discrete",), probe=True
    )
    assert (spec.action_kind, spec.n_actions, spec.n_states) == ("Discrete", 2, 3)
    assert spec.obs_encoding == ("discrete", (3,))
    assert spec.reward_width == 1 and spec.info == {}
    assert pickle.dumps(env) == before  # the probe stepped a copy


class _BoxWorld(BridgeWorld):
    def __init__(self):
        super().__init__()
        import gymnasium

        self.observation_space = gymnasium.spaces.Box(0, 1, (2,))
        self.action_space = gymnasium.spaces.MultiBinary(2)


@pytest.mark.parametrize(
    "env, kwargs, error, match",
    [
        (
            np.zeros(3),
            {"method": "fit", "takes": "an environment with costs"},
            TypeError,
            r"Agent\.fit takes an environment with costs; got ndarray\.",
        ),
        (
            BridgeWorld(),
            {"actions": ("Box", "MultiDiscrete")},
            ValueError,
            r"Agent needs a Box or MultiDiscrete action space; got Discrete\.",
        ),
        (
            _BoxWorld(),
            {"actions": ("Box", "Discrete", "MultiDiscrete")},
            ValueError,
            "needs a Box, Discrete or MultiDiscrete action space; got MultiBinary",
        ),
        (
            _BoxWorld(),
            {"observations": ("Discrete",)},
            ValueError,
            r"Agent needs a Discrete observation space; got Box\.",
        ),
        (
            BridgeWorld(),
            {"probe": True, "info": {"costs": "one cost per constraint"}},
            ValueError,
            r"info has no 'costs': Agent needs info\['costs'\], one cost per",
        ),
        (
            BridgeWorld(),
            {"vector_reward_space": True},
            ValueError,
            r"Agent needs an environment with vector rewards \(a reward_space",
        ),
    ],
)
def test_check_env_names_what_is_wrong(env, kwargs, error, match):
    with pytest.raises(error, match=match):
        check_env(env, "Agent", **kwargs)


# --- rollouts -------------------------------------------------------------------


def test_run_episodes_batches_the_running_episodes_and_reports_each_step():
    """One call of the policy per time step on the episodes still running; the
    hook sees every transition once, in time order; the returns are the
    discounted sums of the rewards it saw; lockstep_episodes records them."""
    batches, steps = [], []

    def act(observations):
        batches.append(len(observations))
        return np.zeros(len(observations), dtype=int)

    def envs():
        return [BridgeWorld(width=w, slip=0.1) for w in (2, 4, 6)]

    returns = run_episodes(
        act, envs(), [0, 1, 2], 50, gamma=0.5, on_step=lambda *t: steps.append(t)
    )
    assert batches[0] == 3 and batches == sorted(batches, reverse=True)
    assert len(steps) == sum(batches)
    for i in range(3):
        mine = [t for t in steps if t[0] == i]
        rewards = np.array([float(t[3]) for t in mine])
        assert returns[i] == pytest.approx(
            np.sum(rewards * 0.5 ** np.arange(len(mine)))
        )
        # Each transition starts where the previous one ended.
        for before, after in itertools.pairwise(mine):
            assert before[4] == after[1]
        assert all(isinstance(t[2], int) for t in mine)
    data, again = lockstep_episodes(act, envs(), [0, 1, 2], 50, gamma=0.5)
    np.testing.assert_array_equal(again, returns)
    assert data["episodes"] == [t[0] for t in steps]
    assert data["terminals"] == [t[5] for t in steps]


def test_collect_returns_is_reproducible_and_independent_of_n_jobs():
    family = BridgeTaskFamily()
    a = collect_returns(lambda o: 0, family.make_task, 6, 30, random_state=3)
    b = collect_returns(lambda o: 0, family.make_task, 6, 30, random_state=3, n_jobs=2)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (6, 30) and set(np.unique(a)) <= {0.0, 1.0}
    # Different tasks: their success rates differ.
    assert len(set(a.mean(axis=1))) > 1


def test_task_draw_and_episodes_use_independent_streams():
    """A task's episodes must not replay the numbers that drew the task."""
    seen = {}

    class Probe(BridgeWorld):
        def reset(self, *, seed=None, options=None):
            out = super().reset(seed=seed, options=options)
            if seed is not None:
                seen["episode"] = self.np_random.random()
            return out

    def make_task(rng):
        seen["task"] = rng.random()
        return Probe()

    collect_returns(lambda o: 0, make_task, 1, 1, random_state=0)
    assert seen["task"] != seen["episode"]


def test_collect_returns_names_bad_arguments():
    with pytest.raises(TypeError, match="make_task"):
        collect_returns(lambda o: 0, "not callable", 2, 2)
    with pytest.raises(TypeError, match="predict"):
        collect_returns(object(), BridgeTaskFamily().make_task, 2, 2)
    with pytest.raises(ValueError, match="n_tasks"):
        collect_returns(lambda o: 0, BridgeTaskFamily().make_task, 0, 2)


# --- Q-learning -----------------------------------------------------------------


def test_online_q_learning_generalises_across_gridworld_tasks():
    """A multi-task policy close to the per-task LP optimum on unseen tasks."""
    world = GoalGridWorld()
    agent = TabularQLearning(random_state=0).fit(world)
    rng = np.random.default_rng(5)
    tasks = [world.sample_task(rng) for _ in range(30)]
    learned = np.mean([world.success_probability(agent, t) for t in tasks])
    optimal = np.mean([_planner_success(world, t) for t in tasks])
    untrained = TabularQLearning(total_timesteps=1, random_state=0).fit(world)
    baseline = np.mean([world.success_probability(untrained, t) for t in tasks])
    assert learned > optimal - 0.05
    assert learned > baseline + 0.3


def test_offline_q_learning_recovers_the_lp_policy():
    rng = np.random.default_rng(0)
    mdp = _random_mdp(rng, S=4, A=3)
    s = rng.integers(4, size=40_000)
    a = rng.integers(3, size=40_000)
    s2 = np.array([rng.choice(4, p=mdp.transitions[i, j]) for i, j in zip(s, a)])
    r = mdp.rewards[s, a]
    X = {
        "observations": s,
        "actions": a,
        "rewards": r,
        "next_observations": s2,
        "terminals": np.zeros(len(s), dtype=bool),
    }
    agent = TabularQLearning(gamma=mdp.gamma).fit(X)
    lp = mdp.solve_lp().policy.argmax(axis=1)
    np.testing.assert_array_equal(agent.predict(np.arange(4)), lp)


def test_offline_non_convergence_warns():
    X = {
        "observations": [0, 0],
        "actions": [0, 1],
        "rewards": [1.0, 0.0],
        "next_observations": [0, 0],
        "terminals": [False, False],
    }
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        TabularQLearning(max_iter=3).fit(X)


def test_grid_search_over_held_out_tasks():
    family = BridgeTaskFamily(means=(0.05, 0.2))
    rng = np.random.default_rng(0)
    envs = [family.make_task(rng) for _ in range(4)]
    search = GridSearchCV(
        TabularQLearning(total_timesteps=700, random_state=0),
        {"epsilon": [0.0, 0.5]},
        cv=2,
        n_jobs=2,
        error_score="raise",
    ).fit(envs)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_estimator_.predict([0, 1, 2]).tolist() == [0, 0, 0]


def test_agent_contract_clone_pickle_params():
    agent = TabularQLearning(total_timesteps=1400, random_state=0)
    check_param_validation("TabularQLearning", agent)
    fitted = clone(agent).fit(BridgeWorld())
    assert not hasattr(clone(fitted), "q_values_")
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.predict([0, 1, 2]), fitted.predict([0, 1, 2]))
    again = clone(agent).fit(BridgeWorld())
    np.testing.assert_array_equal(again.q_values_, fitted.q_values_)


@pytest.mark.parametrize(
    "X, error, match",
    [
        (np.zeros((3, 5)), TypeError, "offline dataset"),
        ([BridgeWorld(), np.zeros(5)], TypeError, "only environments"),
        ([BridgeWorld(width=3), BridgeWorld(width=4)], ValueError, "spaces differ"),
    ],
)
def test_agent_bad_fit_input_is_named(X, error, match):
    with pytest.raises(error, match=match):
        TabularQLearning(total_timesteps=35).fit(X)


def test_agent_bad_inference_input_is_named():
    agent = TabularQLearning(total_timesteps=140, random_state=0).fit(BridgeWorld())
    with pytest.raises(ValueError, match="integer states"):
        agent.predict([0, 7])
    with pytest.raises(ValueError, match="integer states"):
        agent.predict([0.5])
    with pytest.raises(TypeError, match="environment"):
        agent.score(np.zeros((3, 5)))


def test_continuous_spaces_are_refused():
    gym = pytest.importorskip("gymnasium")

    class Box(BridgeWorld):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Box(0, 1, (2,))

    with pytest.raises(ValueError, match="Discrete"):
        TabularQLearning(total_timesteps=35).fit(Box())


# --- other environment conventions ----------------------------------------------


class _SafetyStyle:
    """A DistributionGridEnv stepping as Safety-Gymnasium does: six values.

    The cost is the step's two constraint costs, moved out of the info.
    """

    def __init__(self, env):
        self.inner = env
        self.action_space = env.action_space
        self.observation_space = env.observation_space

    def reset(self, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.inner.step(action)
        info = dict(info)
        cost = info.pop("costs")
        return obs, reward, cost, terminated, truncated, info


def test_safety_gymnasium_steps_become_the_family_form():
    pytest.importorskip("gymnasium")
    from sklearn_ext.rl import DistributionGridEnv, SafetyGymnasiumWrapper

    def act(observations):
        return np.tile([0.3, -0.2, 0.1, 0.5], (len(observations), 1))

    native = lockstep_episodes(
        act,
        [DistributionGridEnv(), DistributionGridEnv()],
        [1, 2],
        48,
        info_key="costs",
    )
    wrapped = [
        SafetyGymnasiumWrapper(_SafetyStyle(DistributionGridEnv())) for _ in range(2)
    ]
    again = lockstep_episodes(act, wrapped, [1, 2], 48, info_key="costs")
    np.testing.assert_array_equal(native[1], again[1])
    np.testing.assert_array_equal(
        np.asarray(native[0]["info"]), np.asarray(again[0]["info"])
    )
    # Copies (as the agents make for their rollouts) and pickles keep working.
    copied = pickle.loads(pickle.dumps(wrapped[0]))
    assert copied.action_space == wrapped[0].action_space
    # A scalar cost becomes one entry; a five-value step without a cost is named.
    single = SafetyGymnasiumWrapper(BridgeWorld())
    with pytest.raises(ValueError, match=r"no info\['cost'\]"):
        single.reset(seed=0), single.step(0)
    with pytest.raises(TypeError, match="reset and step"):
        SafetyGymnasiumWrapper(object())


def test_non_finite_rewards_and_costs_are_named():
    class Bad(BridgeWorld):
        def __init__(self, reward=1.0, cost=0.0):
            super().__init__()
            self.bad_reward, self.bad_cost = reward, cost

        def step(self, action):
            obs, _, terminated, truncated, info = super().step(action)
            return (
                obs,
                self.bad_reward,
                terminated,
                truncated,
                {"costs": [self.bad_cost]},
            )

    with pytest.raises(ValueError, match="non-finite reward"):
        run_episodes(lambda o: [0] * len(o), [Bad(reward=np.nan)], [0], 5)
    with pytest.raises(ValueError, match=r"info\['costs'\] must hold numbers"):
        lockstep_episodes(
            lambda o: [0] * len(o), [Bad(cost="high")], [0], 5, info_key="costs"
        )
    with pytest.raises(ValueError, match=r"info\['costs'\] is not finite"):
        lockstep_episodes(
            lambda o: [0] * len(o), [Bad(cost=np.inf)], [0], 5, info_key="costs"
        )


def test_gymnasium_vector_environments_run_the_same_episodes():
    gym = pytest.importorskip("gymnasium")
    from sklearn_ext.rl import DistributionGridEnv

    def act(observations):
        # A policy that depends on the observation, so that a wrong row
        # order would change the episodes.
        o = np.asarray(observations, dtype=float)
        return np.column_stack([np.tanh(o[:, :4].sum(axis=1, keepdims=True))] * 4)

    seeds = [3, 4, 5]
    listed = lockstep_episodes(
        act,
        [DistributionGridEnv() for _ in seeds],
        seeds,
        30,
        gamma=0.9,
        info_key="costs",
    )
    vector = gym.vector.SyncVectorEnv([DistributionGridEnv for _ in seeds])
    again = lockstep_episodes(act, vector, seeds, 30, gamma=0.9, info_key="costs")
    np.testing.assert_array_equal(listed[1], again[1])
    for key in ("rewards", "episodes", "info"):
        np.testing.assert_array_equal(
            np.asarray(listed[0][key]), np.asarray(again[0][key])
        )
    # Episodes of different lengths: the finished ones stop being recorded.
    bridges = gym.vector.SyncVectorEnv([lambda: BridgeWorld(width=3)] * 2)
    out = lockstep_episodes(lambda o: [0] * len(o), bridges, [0, 1], 50)
    single = [
        lockstep_episodes(lambda o: [0] * len(o), [BridgeWorld(width=3)], [s], 50)
        for s in (0, 1)
    ]
    np.testing.assert_array_equal(out[1], [r[1][0] for r in single])
    assert len(out[0]["rewards"]) == sum(len(r[0]["rewards"]) for r in single)
    same_step = gym.vector.SyncVectorEnv(
        [BridgeWorld] * 2, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    with pytest.raises(ValueError, match="autoreset_mode"):
        run_episodes(lambda o: [0] * len(o), same_step, [0, 1], 5)
    with pytest.raises(ValueError, match="2 sub-environments"):
        run_episodes(lambda o: [0] * len(o), bridges, [0], 5)
