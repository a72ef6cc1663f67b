"""The estimator contract of the reinforcement-learning agents.

Their ``fit`` takes episode returns, an environment, a transition table or
dataset, or a tabular (C)MDP, so scikit-learn's checks (which fit on generated
tables) skip them (``_skip_test``, see ``sklearn_ext/rl/_base.py``). This file
runs the contract of tests/contract_checks.py on each: clone, parameter
validation, pickling in a fresh process, skops, ``set_params`` then ``fit``, and
a table of bad inputs. (KRQuantileRegressor, a regressor of tables, goes through
scikit-learn's checks in tests/test_common.py.)
"""

import dataclasses

import numpy as np
from contract_checks import Bad, cases_of, contract_tests

from sklearn_ext.rl import (
    ConstrainedMaxMinMORL,
    LagrangianActorCritic,
    MOQuantileAgent,
    MultiTaskGuarantee,
    TabularCMDP,
    TabularLagrangian,
    TabularMaxMinMORL,
    TabularQLearning,
    make_random_cmdp,
    make_random_momdp,
)
from sklearn_ext.utils.discovery import all_estimators


def _args(*args, **kwargs):
    """A ``make`` for :class:`Bad` and a ``fit_input``: fixed arguments."""
    return lambda: (args, kwargs)


# --- the cases -------------------------------------------------------------------


def _transitions():
    """60 transitions of a 4-state ring: action 1 moves on, reaching 3 pays 1."""
    rng = np.random.RandomState(0)
    s, a = rng.randint(4, size=60), rng.randint(2, size=60)
    s2 = (s + a) % 4
    done = (s2 == 3).astype(float)
    return {
        "observations": s,
        "actions": a,
        "rewards": done,
        "next_observations": s2,
        "terminals": done,
    }


def _with(**changes):
    """The transitions with some arrays replaced (or removed, given None)."""
    out = {**T, **changes}
    return {k: v for k, v in out.items() if v is not None}


T = _transitions()
STATES = np.arange(4)

Q_LEARNING = cases_of(
    TabularQLearning,
    fit_input=_args(T),
    calls=lambda: [("q_values_", None), ("predict", (STATES,))],
    alt_params={"gamma": 0.5},
    bad=(
        Bad("missing-key", _args(_with(terminals=None)), ValueError, r"lacks the keys"),
        Bad(
            "negative-state",
            _args(_with(observations=T["observations"] - 1)),
            ValueError,
            r"non-negative integers",
        ),
        Bad(
            "terminated-half",
            _args(_with(terminals=np.full(60, 0.5))),
            ValueError,
            r"terminals must be booleans",
        ),
        Bad(
            "nan",
            _args(_with(rewards=np.where(T["rewards"] > 0, np.nan, 0.0))),
            ValueError,
            r"NaN",
        ),
        Bad("table", _args(np.zeros((3, 5))), TypeError, r"offline dataset"),
        Bad(
            "rows-differ",
            _args(_with(actions=T["actions"][:10])),
            ValueError,
            r"actions has 10 rows",
        ),
        Bad(
            "strings",
            _args(_with(rewards=np.full(60, "a"))),
            ValueError,
            r"numeric",
        ),
        Bad(
            "vector-reward",
            _args(_with(rewards=np.zeros((60, 2)))),
            ValueError,
            r"one scalar reward",
        ),
        Bad(
            "state-too-large",
            _args(np.array([4])),
            ValueError,
            r"integer states in \[0, 4\)",
            method="predict",
        ),
        Bad(
            "state-not-integer",
            _args(np.array([0.5])),
            ValueError,
            r"integer states",
            method="predict",
        ),
        Bad(
            "states-2-columns",
            _args(np.zeros((3, 2))),
            ValueError,
            r"1-D array of state indices",
            method="predict",
        ),
        Bad(
            "score-on-a-table",
            _args(T),
            TypeError,
            r"score needs a gymnasium environment",
            method="score",
        ),
    ),
)


def _bernoulli_returns():
    rng = np.random.default_rng(0)
    rate = rng.uniform(0.6, 1.0, size=30)
    return (rng.random((30, 20)) < rate[:, None]).astype(float)


R = _bernoulli_returns()
LEVELS = np.linspace(0.0, 1.0, 11)

GUARANTEE = cases_of(
    MultiTaskGuarantee,
    fit_input=_args(R),
    calls=lambda: [
        ("curve_", None),
        ("lower_bounds_", None),
        ("guarantee", (LEVELS,)),
        ("probability", (LEVELS,)),
    ],
    alt_params={"delta": 0.1},
    bad=(
        Bad("1d", _args(R[0]), ValueError, r"Expected 2D"),
        Bad("one-task", _args(R[:1]), ValueError, r"at least two sampled tasks"),
        Bad("outside-range", _args(R + 1), ValueError, r"outside return_range"),
        Bad("inf", _args(np.where(R == 1, np.inf, R)), ValueError, r"infinity"),
        Bad("strings", _args(np.full(R.shape, "a")), ValueError, r"numeric|convert"),
        Bad(
            "task-without-episodes",
            _args(np.vstack([R, np.full(20, np.nan)])),
            ValueError,
            r"have fewer than [12] episode",
        ),
        Bad(
            "not-success-failure",
            _args(R / 2),
            ValueError,
            r"clopper-pearson.*success/failure",
            params={"task_bound": "clopper-pearson"},
        ),
        Bad(
            "range-reversed",
            _args(R),
            ValueError,
            r"return_range must have low < high",
            params={"return_range": (1.0, 0.0)},
        ),
        Bad(
            "range-of-three",
            _args(R),
            ValueError,
            r"return_range must be two finite numbers",
            params={"return_range": (0.0, 1.0, 2.0)},
        ),
        Bad(
            "p-above-one",
            _args(1.5),
            ValueError,
            r"p must lie in \[0, 1\]",
            method="guarantee",
        ),
    ),
)


def _bandit():
    """Offline pulls of a two-armed bandit with 2 objectives (one state)."""
    return MOQuantileAgent()._make_test_data(40, random_state=0)[0]


def _bandit_with(**changes):
    return _args({**_bandit(), **changes})


def _bandit_without(key):
    data = _bandit()
    del data[key]
    return _args(data)


MO_QUANTILE = cases_of(
    MOQuantileAgent,
    fit_input=lambda: ((_bandit(),), {}),
    calls=lambda: [("predict", (np.array([0]),)), ("risk_values", (np.array([0]),))],
    alt_params={"alpha": 0.5},
    bad=(
        Bad("not-a-dict", _args(np.zeros((20, 5))), TypeError, r"dict of transition"),
        Bad("missing-key", _bandit_without("terminals"), ValueError, r"lacks the keys"),
        Bad(
            "one-objective",
            _bandit_with(rewards=np.zeros((40, 1))),
            ValueError,
            r"at least 2 objectives",
        ),
        Bad(
            "negative-actions",
            _bandit_with(actions=-np.ones(40)),
            ValueError,
            r"non-negative integers",
        ),
        Bad(
            "rows-differ",
            _bandit_with(actions=np.zeros(5)),
            ValueError,
            r"actions has 5 rows but observations has 40",
        ),
        Bad(
            "nan-rewards",
            _bandit_with(rewards=np.full((40, 2), np.nan)),
            ValueError,
            r"rewards contain NaN or infinity",
        ),
        Bad(
            "state-unseen",
            _args(np.array([5])),
            ValueError,
            r"integers in \[0, 1\)",
            method="predict",
        ),
        Bad(
            "state-not-integer",
            _args(np.array([0.5])),
            ValueError,
            r"integer states in \[0, 1\).*non-integer",
            method="risk_values",
        ),
        Bad(
            "two-values-per-state",
            _args(np.array([[0, 0]])),
            ValueError,
            r"one per observation; got shape \(1, 2\)",
            method="predict",
        ),
        Bad("nan-state", _args([np.nan]), ValueError, r"NaN", method="predict"),
    ),
)


def _grid():
    from sklearn_ext.rl import DistributionGridEnv

    return DistributionGridEnv()


def _grid_observations():
    space = _grid().observation_space
    space.seed(0)
    return np.stack([space.sample() for _ in range(5)])


def _cartpole():
    import gymnasium

    return gymnasium.make("CartPole-v1")


def _grid_calls():
    obs = _grid_observations()
    return [
        ("predict", (obs,)),
        ("sample", (obs, 0)),
        ("multipliers_", None),
        ("returns_", None),
    ]


ACTOR_CRITIC = cases_of(
    LagrangianActorCritic,
    fit_input=lambda: ((_grid(),), {}),
    calls=_grid_calls,
    alt_params={"hidden": 4},
    needs=("gymnasium",),
    bad=(
        Bad(
            "not-an-environment",
            _args(np.zeros((3, 3))),
            TypeError,
            r"takes a gymnasium environment",
        ),
        Bad(
            "no-costs-in-info",
            lambda: ((_cartpole(),), {}),
            ValueError,
            r"info has no 'costs'",
        ),
        Bad(
            "limits-count",
            lambda: ((_grid(),), {}),
            ValueError,
            r"cost_limits has 1 entries; the environment reports 2",
            params={"cost_limits": [1.0]},
        ),
        Bad(
            "limits-negative",
            lambda: ((_grid(),), {}),
            ValueError,
            r"cost_limits\[0\] = -1 is negative",
            params={"cost_limits": [-1.0, 2.0]},
        ),
        Bad(
            "limits-missing",
            lambda: ((_grid(),), {}),
            ValueError,
            r"needs cost_limits",
            params={"cost_limits": None},
        ),
        Bad(
            "limits-nan",
            lambda: ((_grid(),), {}),
            ValueError,
            r"cost_limits must be .*finite",
            params={"cost_limits": [np.nan, 1.0]},
        ),
        Bad(
            "observation-width",
            lambda: ((_grid_observations()[:, :-1],), {}),
            ValueError,
            r"8 values each; the agent was fitted on 9",
            method="predict",
        ),
        Bad(
            "observation-nan",
            lambda: ((np.full((2, 9), np.nan),), {}),
            ValueError,
            r"NaN",
            method="predict",
        ),
        Bad(
            "observation-strings",
            lambda: ((np.full((2, 9), "a"),), {}),
            ValueError,
            r"must be numeric",
            method="sample",
        ),
    ),
)


def _momdp():
    return make_random_momdp(random_state=0)


S10 = np.arange(10)

TABULAR_MAX_MIN = cases_of(
    TabularMaxMinMORL,
    fit_input=lambda: ((_momdp(),), {}),
    calls=lambda: [
        ("predict", (S10,)),
        ("weights_", None),
        ("worst_objective_", None),
    ],
    alt_params={"temperature": 0.1},
    bad=(
        Bad(
            "not-an-mdp",
            _args(np.zeros((3, 3))),
            TypeError,
            r"takes a TabularMOMDP",
        ),
        Bad(
            "limits-negative",
            lambda: ((dataclasses.replace(_momdp(), cost_limits=[-1.0]),), {}),
            ValueError,
            r"cost_limits\[0\] = -1 is negative",
        ),
        Bad(
            "weights-count",
            lambda: ((_momdp(),), {}),
            ValueError,
            r"weights has 2 entries; there are 3 objectives",
            params={"weights": [0.5, 0.5]},
        ),
        Bad(
            "weights-negative",
            lambda: ((_momdp(),), {}),
            ValueError,
            r"weights must be finite and non-negative",
            params={"weights": [-1.0, 1.0, 1.0]},
        ),
        Bad(
            "state-not-integer",
            _args(np.array([0.5])),
            ValueError,
            r"integer state indices",
            method="predict",
        ),
        Bad(
            "state-too-large",
            _args(np.array([10])),
            ValueError,
            r"must lie in \[0, 10\)",
            method="predict",
        ),
    ),
)


def _thermal():
    from sklearn_ext.rl import BuildingThermalEnv

    return BuildingThermalEnv()


def _thermal_calls():
    env = _thermal()
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    return [
        ("predict", (obs,)),
        ("weights_", None),
        ("multipliers_", None),
    ]


MAX_MIN = cases_of(
    ConstrainedMaxMinMORL,
    fit_input=lambda: ((_thermal(),), {}),
    calls=_thermal_calls,
    alt_params={"weights_lr": 0.1},
    needs=("gymnasium",),
    bad=(
        Bad(
            "not-an-environment",
            lambda: ((_momdp(),), {}),
            TypeError,
            r"takes a gymnasium environment with a vector reward",
        ),
        Bad(
            "limits-count",
            lambda: ((_thermal(),), {}),
            ValueError,
            r"cost_limits has 2 entries; the environment reports 1",
            params={"cost_limits": [1.0, 2.0]},
        ),
        Bad(
            "limits-nan",
            lambda: ((_thermal(),), {}),
            ValueError,
            r"cost_limits must be a 1-D list of finite numbers",
            params={"cost_limits": [np.nan]},
        ),
        Bad(
            "weights-count",
            lambda: ((_thermal(),), {}),
            ValueError,
            r"weights has 2 entries; there are 3 objectives",
            params={"weights": [0.5, 0.5]},
        ),
    ),
)


def _cmdp():
    return make_random_cmdp(random_state=0)


def _undiscounted_cmdp():
    c = _cmdp()
    return TabularCMDP(c.transitions, c.rewards, c.initial, 1.0, c.costs, c.cost_limits)


TABULAR_LAGRANGIAN = cases_of(
    TabularLagrangian,
    fit_input=lambda: ((_cmdp(),), {}),
    calls=lambda: [
        ("predict", (S10,)),
        ("policy_", None),
        ("multipliers_", None),
    ],
    alt_params={"lambda_lr": 0.5},
    bad=(
        Bad("not-a-cmdp", _args(np.zeros((3, 3))), TypeError, r"takes a TabularCMDP"),
        Bad(
            "undiscounted",
            lambda: ((_undiscounted_cmdp(),), {}),
            ValueError,
            r"discount gamma < 1",
        ),
        Bad(
            "state-not-integer",
            _args(np.array([0.5])),
            ValueError,
            r"integer state indices",
            method="predict",
        ),
        Bad(
            "state-too-large",
            _args(np.array([10])),
            ValueError,
            r"in \[0, 10\)",
            method="predict",
        ),
        Bad(
            "states-2d",
            _args(np.zeros((2, 2), dtype=int)),
            ValueError,
            r"1-D array",
            method="predict",
        ),
    ),
)

CASES = [
    *Q_LEARNING,
    *GUARANTEE,
    *MO_QUANTILE,
    *ACTOR_CRITIC,
    *MAX_MIN,
    *TABULAR_MAX_MIN,
    *TABULAR_LAGRANGIAN,
]


# --- the contract ----------------------------------------------------------------


def test_every_exempt_agent_has_a_case():
    """No agent of the family escapes both scikit-learn's checks and this file."""
    exempt = {
        cls
        for _, cls in all_estimators()
        if cls.__module__.startswith("sklearn_ext.rl.")
        and getattr(cls, "_not_a_data_estimator", None)
    }
    assert exempt == {type(case.estimator) for case in CASES}
    for cls in exempt:
        assert "tests/test_rl_contract.py" in cls._not_a_data_estimator, cls


globals().update(contract_tests(CASES))
