"""Lagrangian safe RL: dedicated against mixed critics, tabular and deep."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_ext.rl import (
    TabularCMDP,
    TabularLagrangian,
    make_random_cmdp,
    multiplier_step,
)
from sklearn_ext.rl._lagrangian_eval import GRID_LIMITS, solves
from sklearn_ext.utils._sklearn_compat import InvalidParameterError

gym = pytest.importorskip("gymnasium")

from sklearn_ext.rl import DistributionGridEnv, LagrangianActorCritic  # noqa: E402


def _fit(cmdp, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return TabularLagrangian(**params).fit(cmdp)


# --- the multiplier rule and the random CMDPs ----------------------------------


def test_multiplier_step_is_projected_dual_ascent_without_pid_terms():
    state = {"integral": np.array([0.5, 0.0]), "previous": np.zeros(2)}
    lam = multiplier_step(np.array([1.0, -2.0]), state, lr=0.1, kp=0.0, kd=0.0)
    np.testing.assert_allclose(lam, [0.6, 0.0])  # projected on lambda >= 0
    lam = multiplier_step(np.array([1.0, 1.0]), state, lr=0.1, kp=2.0, kd=1.0)
    # integral 0.7 / 0.1, proportional 2, derivative (1 - 1) and (1 + 2)
    np.testing.assert_allclose(lam, [2.7, 5.1])


@pytest.mark.parametrize("seed", range(4))
def test_random_cmdps_are_feasible_and_their_constraints_bind(seed):
    cmdp = make_random_cmdp(n_constraints=2 + seed % 2, random_state=seed)
    lp = cmdp.solve_lp()
    free = TabularCMDP(
        cmdp.transitions, cmdp.rewards, cmdp.initial, cmdp.gamma,
        costs=cmdp.costs, cost_limits=np.full(len(cmdp.cost_limits), 1e9),
    ).solve_lp()  # fmt: skip
    assert lp.value < free.value - 1e-6
    assert np.all(lp.constraint_values <= cmdp.cost_limits + 1e-7)
    assert np.any(np.isclose(lp.constraint_values, cmdp.cost_limits, rtol=1e-6))


# --- the target-drift bias -----------------------------------------------------


@pytest.mark.parametrize("lr", [0.03, 0.3])
def test_only_the_mixed_critic_drifts_with_the_multipliers(lr):
    """A fixed policy, moving multipliers: the dedicated critics converge to the
    truth, the mixed critic stays behind its moving target, more so the faster
    the multipliers move."""
    cmdp = make_random_cmdp(random_state=0)
    params = {
        "actor_lr": 0.0,
        "multiplier": "gradient",
        "lambda_lr": lr,
        "max_iter": 4000,
    }
    dedicated = _fit(cmdp, critic="dedicated", **params).critic_bias_[-500:].mean()
    mixed = _fit(cmdp, critic="mixed", **params).critic_bias_[-500:].mean()
    assert dedicated < 1e-3 * mixed
    assert mixed > 100 * lr


def test_mixed_bias_grows_with_the_multiplier_step():
    cmdp = make_random_cmdp(random_state=1)
    bias = [
        _fit(
            cmdp, critic="mixed", actor_lr=0.0, multiplier="gradient",
            lambda_lr=lr, max_iter=3000,
        ).critic_bias_[-500:].mean()
        for lr in (0.01, 0.1, 1.0)
    ]  # fmt: skip
    assert bias[0] < bias[1] < bias[2]


# --- reaching the LP optimum ---------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dedicated_critics_reach_the_lp_optimum(seed):
    cmdp = make_random_cmdp(n_constraints=2 + seed % 2, random_state=seed)
    agent = _fit(cmdp)
    assert solves(agent, cmdp, cmdp.solve_lp())


def test_a_slow_mixed_critic_misses_the_optimum_where_dedicated_ones_reach_it():
    cmdp = make_random_cmdp(random_state=2)
    lp = cmdp.solve_lp()
    assert solves(_fit(cmdp, critic="dedicated"), cmdp, lp)
    assert not solves(_fit(cmdp, critic="mixed"), cmdp, lp)


def test_plain_gradient_multipliers_keep_cycling():
    cmdp = make_random_cmdp(random_state=0)
    with pytest.warns(ConvergenceWarning, match="did not settle"):
        agent = TabularLagrangian(multiplier="gradient", max_iter=1500).fit(cmdp)
    assert np.ptp(agent.multipliers_[-200:], axis=0).max() > 1e-2


def test_tabular_agent_predicts_and_pickles():
    cmdp = make_random_cmdp(random_state=0)
    agent = _fit(cmdp, max_iter=100)
    back = pickle.loads(pickle.dumps(agent))
    np.testing.assert_array_equal(
        back.predict(np.arange(10)), agent.predict(np.arange(10))
    )
    assert clone(agent).get_params() == agent.get_params()
    with pytest.raises(ValueError, match=r"in \[0, 10\)"):
        agent.predict(np.array([10]))
    with pytest.raises(ValueError, match="integer state indices"):
        agent.predict(np.array([0.5]))


def test_tabular_score_is_the_exact_return_and_ranks_feasibility_first():
    cmdp = make_random_cmdp(random_state=0)
    agent = TabularLagrangian(random_state=0).fit(cmdp)
    lp = cmdp.solve_lp()
    assert agent.score(cmdp) == pytest.approx(lp.value, rel=1e-3)
    assert agent.score([cmdp]) == agent.score(cmdp)  # what GridSearchCV passes
    # Free of its limits the agent's policy breaks them: it scores below the
    # least return any policy can have.
    free = TabularCMDP(
        cmdp.transitions, cmdp.rewards, cmdp.initial, cmdp.gamma,
        costs=cmdp.costs, cost_limits=np.full(len(cmdp.cost_limits), 1e9),
    )  # fmt: skip
    greedy = TabularLagrangian(random_state=0).fit(free)
    floor = cmdp.rewards.min() / (1 - cmdp.gamma)
    assert greedy.score(cmdp) < floor < agent.score(cmdp)
    # The draws follow the mixed policy, reproducibly after the same fit.
    states = np.repeat(np.arange(10), 400)
    drawn = agent.predict(states, deterministic=False)
    again = TabularLagrangian(random_state=0).fit(cmdp).predict(states, False)
    np.testing.assert_array_equal(drawn, again)
    freq = np.array(
        [np.bincount(drawn[states == s], minlength=3) / 400 for s in range(10)]
    )
    np.testing.assert_allclose(freq, agent.policy_, atol=0.1)


def test_tabular_bad_input_is_named():
    with pytest.raises(TypeError, match="takes a TabularCMDP"):
        TabularLagrangian().fit(np.zeros((3, 3)))
    with pytest.raises(InvalidParameterError, match="critic"):
        TabularLagrangian(critic="shared").fit(make_random_cmdp(random_state=0))
    with pytest.raises(InvalidParameterError, match="critic_lr"):
        TabularLagrangian(critic_lr=1.5).fit(make_random_cmdp(random_state=0))
    # Costs uniform on [0, 1]: a negative limit can never be met.
    cmdp = make_random_cmdp(random_state=0)
    negative = TabularCMDP(
        cmdp.transitions, cmdp.rewards, cmdp.initial, cmdp.gamma,
        costs=cmdp.costs, cost_limits=[1.0, -0.2],
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"cmdp.cost_limits\[1\] = -0.2 is negative"):
        TabularLagrangian(max_iter=5).fit(negative)
    # Where a cost can be negative (a credit), a negative limit is a real one.
    credit = TabularCMDP(
        cmdp.transitions, cmdp.rewards, cmdp.initial, cmdp.gamma,
        costs=cmdp.costs - 0.5, cost_limits=[-1.0, -1.0],
    )  # fmt: skip
    assert _fit(credit, max_iter=5).n_iter_ == 5


# --- the grid and the deep agent -----------------------------------------------


def test_grid_costs_rise_when_every_renewable_kilowatt_is_injected():
    env = DistributionGridEnv()

    def day(action):
        env.reset(seed=3)
        ret, costs, done = 0.0, np.zeros(2), False
        while not done:
            _, r, term, trunc, info = env.step(action)
            ret, costs, done = ret + r, costs + info["costs"], term or trunc
        return ret, costs

    full, half = day(np.array([1, 1, 0, 0.0])), day(np.array([0, 0, 0, 0.0]))
    assert full[0] > half[0]  # less energy lost
    assert np.all(full[1] > half[1])  # but both limits strained
    assert full[1][1] > GRID_LIMITS[1] and half[1][1] <= GRID_LIMITS[1]


def test_grid_power_flow_has_no_drop_without_injections():
    env = DistributionGridEnv()
    voltage, apparent, losses = env.power_flow(np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(voltage, 1.0)
    assert losses == 0 and np.all(apparent == 0)
    # a load far down the feeder lowers every voltage on its path
    p = np.zeros(6)
    p[3] = -0.3
    voltage, _, losses = env.power_flow(p, np.zeros(6))
    assert voltage[3] < voltage[2] < voltage[1] < 1.0 and losses > 0


def test_grid_rejects_bad_actions():
    env = DistributionGridEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="4 finite numbers"):
        env.step(np.ones(3))


# The configuration before issue 59: one gradient clip over actor and critic,
# raw value targets.
OLD = {"grad_clip": "joint", "normalize_targets": False}
GRID_UPDATE = 8 * 48  # environment steps of one update: 8 days of 48 steps


@pytest.fixture(scope="module")
def grid_agents():
    """20 updates on the grid: the mixed critic before the fixes, the mixed
    critic with only its actor clipped apart (raw targets, which drift with
    the multipliers), and the dedicated critics with both fixes."""
    configs = {
        "mixed, joint clip": {"critic": "mixed", **OLD},
        "mixed, separate clip": {"critic": "mixed", "normalize_targets": False},
        "dedicated": {"critic": "dedicated"},
    }
    return {
        name: LagrangianActorCritic(
            cost_limits=GRID_LIMITS,
            total_timesteps=20 * GRID_UPDATE,
            random_state=0,
            **params,
        ).fit(DistributionGridEnv())
        for name, params in configs.items()
    }


def test_a_joint_clip_starves_the_actor_of_a_mixed_critic():
    """At large multipliers the mixed critic's raw targets r - lambda . c make
    its gradient so large that one clip over both networks shrinks the
    actor's step by about 1e-4, a hundred times more than with dedicated
    critics (issue 59's measurement); clipped apart, the actor keeps its
    step."""

    def scale(critic, **params):
        agent = LagrangianActorCritic(
            critic=critic, cost_limits=GRID_LIMITS, lambda_init=100.0,
            total_timesteps=3 * 2 * 48, n_episodes_per_update=2,
            random_state=0, **params,
        ).fit(DistributionGridEnv())  # fmt: skip
        return agent.actor_clip_scale_[-1]

    mixed, dedicated = scale("mixed", **OLD), scale("dedicated", **OLD)
    assert mixed < 1e-3 and dedicated > 20 * mixed
    assert scale("mixed", normalize_targets=False) > 0.5


def test_the_mixed_failure_is_the_shared_clip_not_target_drift(grid_agents):
    """The attribution. Under the old configuration the mixed critic's costs
    stay several times over the limits. Clipping its actor apart, with its
    raw targets still drifting with the multipliers (their spread grows
    several-fold), brings its costs down as far as the dedicated critics
    bring theirs: the failure was the clip, not target drift."""
    limits = np.asarray(GRID_LIMITS)
    old = grid_agents["mixed, joint clip"]
    apart = grid_agents["mixed, separate clip"]
    dedicated = grid_agents["dedicated"]

    def last(agent):
        return agent.constraint_values_[-10:].mean(axis=0)

    assert np.all(last(old) > 3 * limits)
    assert old.actor_clip_scale_.mean() < 0.05 < 0.5 < apart.actor_clip_scale_.mean()
    # the drift is still there: the mixed targets spread as lambda grows
    # from 0
    assert apart.target_scale_[-5:, 0].mean() > 5 * apart.target_scale_[0, 0]
    assert np.all(last(apart) < 0.5 * last(old))
    assert np.all(last(apart) < 1.5 * last(dedicated))
    lam = old.multipliers_
    assert np.all(lam[-1] > lam[10])  # the old agent's multipliers keep climbing


def test_running_target_moments_are_those_of_all_targets_so_far():
    from sklearn_ext.rl._lagrangian_ppo import _RunningMoments

    rng = np.random.RandomState(0)
    batches = [
        rng.normal(m, s, size=(n, 3))
        for m, s, n in [(0, 1, 5), (5, 3, 40), (-2, 0.5, 17)]
    ]
    moments = _RunningMoments(3)
    for b in batches:
        moments.update(b)
    every = np.vstack(batches)
    np.testing.assert_allclose(moments.mean, every.mean(axis=0))
    np.testing.assert_allclose(moments.std, every.std(axis=0))


def test_deep_agent_acts_within_the_action_box_and_pickles(grid_agents):
    agent = grid_agents["dedicated"]
    obs = np.stack([DistributionGridEnv().reset(seed=s)[0] for s in range(5)])
    det = agent.predict(obs)
    drawn = agent.sample(obs, random_state=0)
    assert det.shape == drawn.shape == (5, 4)
    assert np.all(np.abs(drawn) <= 1) and np.all(np.abs(det) <= 1)
    np.testing.assert_array_equal(agent.sample(obs, random_state=0), drawn)
    back = pickle.loads(pickle.dumps(agent))
    np.testing.assert_allclose(back.predict(obs), det)
    # draws of predict(deterministic=False) come from the fit's generator
    again = pickle.loads(pickle.dumps(agent))
    first = agent.predict(obs, deterministic=False)
    np.testing.assert_array_equal(again.predict(obs, deterministic=False), first)
    assert not np.allclose(first, det)
    assert agent.multipliers_.shape == (21, 2)
    assert agent.n_iter_ == 20 and agent.n_timesteps_ == 20 * GRID_UPDATE


class _CostsEnv(gym.Env):
    """One-step environment with a configurable info."""

    def __init__(self, info):
        self.info = info
        self.observation_space = gym.spaces.Box(-1, 1, shape=(2,))
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, True, False, dict(self.info)


@pytest.mark.parametrize(
    "info, limits, match",
    [
        ({"costs": [0.1, 0.2]}, [1.0], "cost_limits has 1 entries; the environment"),
        (
            {"costs": [0.1]},
            [-1.0],
            r"cost_limits\[0\] = -1 is negative, but the costs of constraint 0 "
            "are non-negative, so its mean episode cost is at least 0",
        ),
        ({"costs": [0.1]}, [[1.0]], r"1-D list of finite numbers.*got \[\[1.0\]\]"),
        ({"costs": [0.1]}, [np.nan], "cost_limits must be a 1-D list of finite"),
        ({"costs": [0.1]}, ["a"], r"one limit per constraint; got \['a'\]"),
        ({}, [1.0], "no 'costs'"),
        ({"costs": [-0.5]}, [1.0], "negative costs"),
        ({"costs": [0.1]}, None, "needs cost_limits"),
        ({"costs": [np.nan]}, [1.0], r"non-finite cost \(NaN or infinity\)"),
        ({"costs": [0.1, np.inf]}, [1.0, 1.0], r"non-finite cost"),
        ({"costs": ["a"]}, [1.0], r"info\['costs'\] must hold numbers"),
    ],
)
def test_deep_agent_names_bad_costs_and_limits(info, limits, match):
    with pytest.raises(ValueError, match=match):
        LagrangianActorCritic(cost_limits=limits, total_timesteps=1).fit(
            _CostsEnv(info)
        )


class _LateNaN(_CostsEnv):
    """Finite costs at the probing step, NaN afterwards."""

    calls = [0]  # shared by the deep copies the agent steps

    def step(self, action):
        self.calls[0] += 1
        cost = 0.1 if self.calls[0] == 1 else np.nan
        return np.zeros(2, dtype=np.float32), 0.0, True, False, {"costs": [cost]}


def test_deep_agent_names_a_non_finite_cost_during_training():
    _LateNaN.calls[0] = 0
    agent = LagrangianActorCritic(cost_limits=[1.0], total_timesteps=4)
    # The one episode loop names it before the agent reads the costs.
    with pytest.raises(ValueError, match=r"info\['costs'\] is not finite"):
        agent.fit(_LateNaN({}))


def test_deep_agent_refuses_what_is_not_an_environment():
    with pytest.raises(TypeError, match="gymnasium environment"):
        LagrangianActorCritic(cost_limits=[1.0]).fit(np.zeros((3, 2)))


class _Choice(_CostsEnv):
    """Action 1 pays 1 and costs 1, action 0 neither (one-step episodes)."""

    def step(self, action):
        a = float(action)
        return np.zeros(2, dtype=np.float32), a, True, False, {"costs": [a]}


CHOICE = {"n_episodes_per_update": 32, "lambda_lr": 0.5, "pid_kp": 0.5}
CHOICE.update(entropy_coef=0.01, random_state=0)


def test_deep_agent_learns_a_discrete_constrained_choice():
    """With a loose limit the agent takes action 1; with a limit of 0.3 its
    multiplier rises past 1, the price at which action 1 stops paying, and
    the agent turns to action 0. Fitted on a list of environments, the
    episodes cycle through it. Its score ranks the feasible agent above one
    that violates the limit, though the latter earns more."""
    params = {"total_timesteps": 45 * 32, **CHOICE}
    loose = LagrangianActorCritic(cost_limits=[1.0], **params).fit(_Choice({}))
    tight = LagrangianActorCritic(cost_limits=[0.3], **params).fit(
        [_Choice({}), _Choice({})]
    )
    assert loose.n_iter_ == 45 and loose.n_timesteps_ == 45 * 32
    assert loose.constraint_values_[-15:].mean() > 0.9
    assert tight.multipliers_.max() > 1.0
    assert tight.constraint_values_[-15:].mean() < 0.3
    # deterministic: the most probable action of each agent
    assert loose.predict(np.zeros((3, 2))).tolist() == [1, 1, 1]
    assert tight.predict(np.zeros((3, 2))).tolist() == [0, 0, 0]
    # the score: the mean return if feasible, else below every feasible one
    feasible = tight.score(_Choice({}), n_episodes=200)
    assert 0 <= feasible < 0.3
    assert feasible == tight.score([_Choice({}), _Choice({})], n_episodes=200)
    early = LagrangianActorCritic(cost_limits=[0.3], total_timesteps=32, **CHOICE)
    early.fit(_Choice({}))  # one update: action 1 about half the time
    violating = early.score(_Choice({}), n_episodes=200)
    assert violating < -1e12 < feasible
    assert loose.score(_Choice({}), n_episodes=200) > 0.9  # limit 1: feasible


def test_grid_search_tunes_the_deep_agent_on_a_list_of_environments():
    from sklearn.model_selection import GridSearchCV

    params = {"total_timesteps": 2 * 32, "cost_limits": [0.3], **CHOICE}
    search = GridSearchCV(
        LagrangianActorCritic(**params),
        {"lambda_lr": [0.5, 1.0]},
        cv=2,
    ).fit([_Choice({}) for _ in range(4)])
    assert search.best_params_["lambda_lr"] in (0.5, 1.0)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
