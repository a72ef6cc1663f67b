"""Constrained multi-objective RL with the max-min criterion, tabular part."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_ext.rl import TabularMDP
from sklearn_ext.rl._maxmin import (
    TabularMOMDP,
    _project_simplex,
    make_random_momdp,
    maxmin_dual_descent,
    soft_policy,
    solve_maxmin_lp,
    solve_regularised_maxmin,
    solve_weighted_lp,
)
from sklearn_ext.rl._mdp import TabularCMDP

GAMMA = 0.5


def _one_state(rewards, costs=None, limits=None):
    """A one-state MOMDP: occupancy and policy coincide."""
    n_actions = np.shape(rewards)[-1]
    return TabularMOMDP(
        np.ones((1, n_actions, 1)),
        rewards,
        initial=[1.0],
        gamma=GAMMA,
        costs=costs,
        cost_limits=limits,
    )


def _limited(mdp, limits):
    return dataclasses.replace(mdp, cost_limits=limits)


# Two objectives, each served by one action only.
SPLIT = [[[1.0, 0.0]], [[0.0, 1.0]]]
# Actions 0 and 1 serve one objective each, action 2 serves both at 0.6 and
# is the only one that costs.
SHARED = [[[1.0, 0.0, 0.6]], [[0.0, 1.0, 0.6]]]
SHARED_COST = [[[0.0, 0.0, 1.0]]]


# --- the LPs on constructed instances -------------------------------------------


def test_maxmin_optimum_is_a_mixture_that_no_weighted_lp_reaches():
    mdp = _one_state(SPLIT)
    sol = solve_maxmin_lp(mdp)
    # pi = (p, 1 - p) gives J = (p, 1 - p) / (1 - gamma): best at p = 1/2.
    assert sol.value == pytest.approx(0.5 / (1 - GAMMA))
    np.testing.assert_allclose(sol.policy, [[0.5, 0.5]], atol=1e-9)
    np.testing.assert_allclose(sol.objective_values, [1.0, 1.0], atol=1e-9)
    for w0 in np.linspace(0.0, 1.0, 11):
        weighted = solve_weighted_lp(mdp, [w0, 1.0 - w0])
        # A vertex of the occupancy polytope: one objective gets nothing.
        assert weighted.value < sol.value - 0.5
        assert weighted.value == pytest.approx(weighted.objective_values.min())


@pytest.mark.parametrize("budget", [0.1, 0.5, 0.9])
def test_binding_cost_limit_lowers_the_maxmin_value_in_closed_form(budget):
    scale = 1 / (1 - GAMMA)
    mdp = _one_state(SHARED, SHARED_COST, [budget * scale])
    free = solve_maxmin_lp(dataclasses.replace(mdp, costs=None, cost_limits=None))
    assert free.value == pytest.approx(0.6 * scale)  # action 2 alone
    # Action 2 at most `budget` of the time, the rest split evenly.
    sol = solve_maxmin_lp(mdp)
    assert sol.value == pytest.approx((0.6 * budget + (1 - budget) / 2) * scale)
    assert sol.value < free.value - 1e-3
    half = (1 - budget) / 2
    np.testing.assert_allclose(sol.policy, [[half, half, budget]], atol=1e-8)
    np.testing.assert_allclose(sol.constraint_values, [budget * scale], atol=1e-8)


def test_infeasible_limits_name_the_least_achievable_cost():
    # least cost 0.2 / (1 - gamma)
    mdp = _one_state(SHARED, [[[0.2, 0.5, 1.0]]], [0.3])
    with pytest.raises(ValueError, match="infeasible") as info:
        solve_maxmin_lp(mdp)
    assert "limit 0.3" in str(info.value)
    assert "least achievable cost 0.4" in str(info.value)
    for solve in (
        lambda m: solve_weighted_lp(m, [0.5, 0.5]),
        lambda m: solve_regularised_maxmin(m, 0.1),
        maxmin_dual_descent,
    ):
        with pytest.raises(ValueError, match="least achievable cost 0.4"):
            solve(mdp)
    # Exactly the least cost is feasible.
    assert solve_maxmin_lp(_limited(mdp, [0.4])).value == pytest.approx(0.0)


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "limits, match",
    [
        (None, "needs costs and cost_limits together"),
        ([1.0, 1.0], r"cost_limits must have one entry per constraint \(1\)"),
        ([np.nan], "cost_limits contains NaN"),
    ],
)
def test_wrong_limits_are_refused_by_the_data(limits, match):
    with pytest.raises(ValueError, match=match):
        _one_state(SHARED, SHARED_COST, limits)


def test_a_negative_limit_on_non_negative_costs_is_refused_by_every_solver():
    # Non-negative costs: no policy's expected cost is below 0.
    mdp = _one_state(SHARED, SHARED_COST, [-0.1])
    match = r"cost_limits\[0\] = -0.1 is negative, but the costs of constr"
    for solve in (
        solve_maxmin_lp,
        maxmin_dual_descent,
        lambda m: solve_weighted_lp(m, [0.5, 0.5]),
        lambda m: solve_regularised_maxmin(m, 0.1),
    ):
        with pytest.raises(ValueError, match=match):
            solve(mdp)


def test_a_negative_limit_is_a_real_constraint_where_costs_can_be_negative():
    # Action 2 earns a cost of -1 (a credit): a limit of -0.5 on the expected
    # discounted cost (-2 for action 2 always) is met by the LP, not refused.
    sol = solve_maxmin_lp(_one_state(SHARED, [[[0.0, 0.0, -1.0]]], [-0.5]))
    assert sol.constraint_values[0] <= -0.5 + 1e-9


def test_limits_without_costs_raise():
    with pytest.raises(ValueError, match="needs costs and cost_limits together"):
        _one_state(SPLIT, limits=[1.0])


def test_the_momdp_is_a_cmdp_whose_limits_live_in_the_data():
    mdp = make_random_momdp(random_state=0)
    assert isinstance(mdp, TabularCMDP)
    assert mdp.cost_limits.shape == (1,) and not mdp.cost_limits.flags.writeable
    assert mdp.solve_lp().value == pytest.approx(solve_maxmin_lp(mdp).value)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rewards": [[[np.nan, 0.0]]]}, "rewards contains NaN"),
        ({"rewards": [[1.0, 0.0]]}, "rewards must be 3-D"),
        ({"rewards": np.zeros((0, 1, 2))}, "at least one objective"),
        ({"rewards": np.zeros((2, 1, 3))}, r"rewards must have shape \(n_objectives"),
        (
            {"costs": np.zeros((1, 2, 2)), "cost_limits": [1.0]},
            r"costs must have shape \(n_constraints",
        ),
        (
            {"costs": [[[np.inf, 0.0]]], "cost_limits": [1.0]},
            "costs contains NaN or infinity",
        ),
        ({"transitions": np.full((1, 2, 1), 0.5)}, "probability distribution"),
        ({"initial": [0.5, 0.5]}, "initial must have shape"),
        ({"gamma": 1.0}, r"gamma in \(0, 1\)"),
    ],
)
def test_bad_momdp_raises(kwargs, match):
    args = {
        "transitions": np.ones((1, 2, 1)),
        "rewards": SPLIT,
        "initial": [1.0],
        "gamma": GAMMA,
    }
    with pytest.raises(ValueError, match=match):
        TabularMOMDP(**{**args, **kwargs})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": np.nan}, "temperature"),
        ({"lr": -1.0}, "lr"),
        ({"n_iter": 0}, "n_iter"),
        ({"n_iter": 2.5}, "n_iter"),
        ({"schedule": "harmonic"}, "schedule"),
        ({"evaluation": "monte-carlo"}, "evaluation"),
        ({"q_lr": 1.5}, r"q_lr must lie in \(0, 1\]"),
        ({"n_samples": 0}, "n_samples"),
        ({"weights_init": [1.0, 0.0, 0.0]}, "weights_init"),
        ({"weights_init": [-1.0, 2.0]}, "weights_init"),
    ],
)
def test_bad_dual_descent_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maxmin_dual_descent(_one_state(SPLIT), **kwargs)


def test_bad_weights_and_evaluation_inputs_raise():
    mdp = _one_state(SPLIT)
    with pytest.raises(ValueError, match=r"one weight per objective \(2\)"):
        solve_weighted_lp(mdp, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="non-negative"):
        solve_weighted_lp(mdp, [-1.0, 2.0])
    with pytest.raises(ValueError, match=r"rewards must have shape \(m, 1, 2\)"):
        mdp.evaluate([[0.5, 0.5]], rewards=np.zeros((1, 1, 3)))
    with pytest.raises(ValueError, match="reward must have shape"):
        soft_policy(mdp, np.zeros((2, 2)), temperature=0.1)
    with pytest.raises(TypeError, match="TabularMOMDP"):
        solve_maxmin_lp(TabularMDP(np.ones((1, 2, 1)), [[1.0, 0.0]], [1.0]))


def test_inputs_are_not_modified():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=(4, 2))
    R = rng.uniform(size=(2, 4, 2))
    C = rng.uniform(size=(1, 4, 2))
    mu = np.full(4, 0.25)
    limits = np.array([6.0])
    copies = [a.copy() for a in (P, R, C, mu, limits)]
    mdp = TabularMOMDP(P, R, mu, gamma=0.9, costs=C, cost_limits=limits)
    solve_maxmin_lp(mdp)
    solve_weighted_lp(mdp, np.array([0.5, 0.5]))
    solve_regularised_maxmin(mdp, 0.1)
    maxmin_dual_descent(mdp, n_iter=5)
    maxmin_dual_descent(mdp, n_iter=5, evaluation="sampled", random_state=0)
    for original, copy in zip((P, R, C, mu, limits), copies):
        np.testing.assert_array_equal(original, copy)
    R[0, 0, 0] = 99.0  # the MDP holds its own read-only copy
    assert mdp.rewards[0, 0, 0] != 99.0
    assert not mdp.rewards.flags.writeable


# --- random instances ----------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_lp_solution_is_consistent_and_constrained(seed):
    mdp = make_random_momdp(n_constraints=2, random_state=seed)
    limits = mdp.cost_limits
    sol = solve_maxmin_lp(mdp)
    assert np.all(sol.constraint_values <= limits + 1e-7)
    assert sol.value == pytest.approx(sol.objective_values.min(), abs=1e-7)
    np.testing.assert_allclose(sol.policy.sum(axis=1), 1.0)
    # The policy reproduces the occupancy's returns and costs exactly.
    np.testing.assert_allclose(mdp.evaluate(sol.policy), sol.objective_values)
    np.testing.assert_allclose(
        mdp.evaluate(sol.policy, rewards=mdp.costs), sol.constraint_values
    )
    unconstrained = dataclasses.replace(mdp, costs=None, cost_limits=None)
    free = solve_maxmin_lp(unconstrained)
    assert sol.value < free.value  # the generator's limits bind
    # No linear scalarisation does better on the worst objective.
    for w in np.random.default_rng(seed).dirichlet(np.ones(3), size=5):
        assert solve_weighted_lp(mdp, w).value <= sol.value + 1e-7
        assert solve_weighted_lp(unconstrained, w).value <= free.value + 1e-7


def test_random_momdp_is_reproducible_and_sized():
    a = make_random_momdp(6, 2, 4, 3, random_state=7)
    b = make_random_momdp(6, 2, 4, 3, random_state=7)
    np.testing.assert_array_equal(a.transitions, b.transitions)
    np.testing.assert_array_equal(a.cost_limits, b.cost_limits)
    assert (a.n_states, a.n_actions, a.n_objectives, a.n_constraints) == (6, 2, 4, 3)
    free = make_random_momdp(n_constraints=0, random_state=0)
    assert free.cost_limits is None and free.n_constraints == 0


@pytest.mark.parametrize("seed", [2])
def test_dual_descent_reaches_the_lp_optimum(seed):
    mdp = make_random_momdp(random_state=seed)
    limits = mdp.cost_limits
    lp = solve_maxmin_lp(mdp)
    res = maxmin_dual_descent(mdp, temperature=0.01)
    bias = 0.01 * np.log(mdp.n_actions) / (1 - mdp.gamma)
    assert abs(res.value - lp.value) <= bias + 0.01
    assert res.violation[-1] <= 0.01
    assert np.all(res.constraint_values <= limits + 0.01)
    # Traces: weights on the simplex, multipliers non-negative and active.
    np.testing.assert_allclose(res.weights.sum(axis=1), 1.0)
    assert (res.weights >= 0).all() and (res.multipliers >= 0).all()
    assert res.multipliers[-1].max() > 0  # the constraint binds
    assert res.worst[-1] == pytest.approx(res.value)


def test_dual_descent_without_costs_reaches_the_mixture():
    res = maxmin_dual_descent(_one_state(SPLIT), temperature=0.01, n_iter=300)
    np.testing.assert_allclose(res.policy, [[0.5, 0.5]], atol=1e-3)
    np.testing.assert_allclose(res.weights[-1], [0.5, 0.5], atol=1e-3)
    assert res.multipliers.shape == (300, 0)
    assert (res.violation == 0).all()


def test_averaged_occupancy_is_a_valid_near_optimal_policy():
    mdp = make_random_momdp(random_state=0)
    lp = solve_maxmin_lp(mdp)
    res = maxmin_dual_descent(mdp, n_iter=400, average=True)
    np.testing.assert_allclose(res.policy.sum(axis=1), 1.0)
    assert abs(res.value - lp.value) <= 0.05
    np.testing.assert_allclose(mdp.evaluate(res.policy), res.objective_values)


# --- the soft best response and the simplex projection -----------------------------


def test_soft_policy_tends_to_the_optimal_value():
    mdp = make_random_momdp(n_constraints=0, random_state=3)
    reward = mdp.rewards[0]
    best = TabularMDP(mdp.transitions, reward, mdp.initial, mdp.gamma).solve_lp()
    gaps = []
    for tau in (1.0, 0.1, 0.01, 0.001):
        pi = soft_policy(mdp, reward, tau)
        gap = best.value - mdp.evaluate(pi, rewards=reward[None])[0]
        # The entropy bonus is at most tau log(A) / (1 - gamma).
        assert -1e-9 <= gap <= tau * np.log(mdp.n_actions) / (1 - mdp.gamma) + 1e-9
        gaps.append(gap)
    assert np.all(np.diff(gaps) <= 1e-12) and gaps[-1] < 1e-3 < gaps[0]


def test_soft_policy_is_the_soft_bellman_fixed_point():
    mdp = make_random_momdp(n_states=5, n_constraints=0, random_state=1)
    reward, tau, g = mdp.rewards[1], 0.2, mdp.gamma
    V = np.zeros(mdp.n_states)
    for _ in range(600):  # plain soft value iteration as the reference
        Q = reward + g * mdp.transitions @ V
        V = tau * np.log(np.exp(Q / tau).sum(axis=1))
    expected = np.exp((Q - V[:, None]) / tau)
    np.testing.assert_allclose(soft_policy(mdp, reward, tau), expected, atol=1e-9)
    # One state: the softmax of the rewards.
    pi = soft_policy(_one_state(SPLIT), [[1.0, 0.0]], temperature=0.5)
    np.testing.assert_allclose(pi, [[1, np.exp(-2.0)] / (1 + np.exp(-2.0))])


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-10, 10)))
def test_project_simplex_lands_on_the_simplex_and_is_nearest(v):
    p = _project_simplex(v)
    assert (p >= 0).all() and p.sum() == pytest.approx(1.0)
    # Nearest: no vertex and no random simplex point is closer.
    rng = np.random.default_rng(0)
    others = np.vstack([np.eye(v.size), rng.dirichlet(np.ones(v.size), size=20)])
    dist = np.linalg.norm(v - p)
    assert np.all(np.linalg.norm(others - v, axis=1) >= dist - 1e-9)
    # Projecting twice changes nothing.
    np.testing.assert_allclose(_project_simplex(p), p, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_project_simplex_is_the_identity_on_the_simplex(n, seed):
    p = np.random.default_rng(seed).dirichlet(np.ones(n))
    np.testing.assert_allclose(_project_simplex(p), p, atol=1e-12)
    np.testing.assert_array_equal(_project_simplex(np.eye(n)[0]), np.eye(n)[0])


# --- against an independent solver, and the model-free mode -----------------------


def test_regularised_reference_on_a_one_state_problem_in_closed_form():
    # One state, two actions serving one objective each: the regularised
    # max-min policy is (1/2, 1/2) for every temperature, with weights 1/2.
    sol, w, u = solve_regularised_maxmin(_one_state(SPLIT), temperature=0.3)
    np.testing.assert_allclose(sol.policy, [[0.5, 0.5]], atol=1e-6)
    np.testing.assert_allclose(w, [0.5, 0.5], atol=1e-6)
    assert u.shape == (0,)
    # A binding cost: the entropy pulls the mixture towards uniform, so the
    # costly action is used less than the LP's `budget`, never more.
    scale = 1 / (1 - GAMMA)
    mdp = _one_state(SHARED, SHARED_COST, [0.5 * scale])
    reg, _, u = solve_regularised_maxmin(mdp, temperature=0.01)
    assert reg.constraint_values[0] <= 0.5 * scale + 1e-7
    assert u[0] > 0
    assert solve_maxmin_lp(mdp).value - reg.value <= 0.01 * np.log(3) * scale


@pytest.mark.parametrize("seed", [0, 1])
def test_dual_descent_converges_to_the_independent_regularised_optimum(seed):
    """The iteration's answer against Clarabel's on the convex primal.

    The regularised optimum (entropy-regularised max-min over occupancy
    measures, an exponential-cone program) is computed by another algorithm
    on another formulation; the dual iteration must land on it, not merely
    near the LP, and its weights and multipliers on the solver's duals.
    """
    mdp = make_random_momdp(random_state=seed)
    tau = 0.01
    reg, w, u = solve_regularised_maxmin(mdp, tau)
    lp = solve_maxmin_lp(mdp)
    bias_bound = tau * np.log(mdp.n_actions) / (1 - mdp.gamma)
    assert lp.value - bias_bound <= reg.value <= lp.value + 1e-7
    res = maxmin_dual_descent(mdp, temperature=tau)
    assert abs(res.value - reg.value) < 1e-6
    np.testing.assert_allclose(res.policy, reg.policy, atol=1e-4)
    np.testing.assert_allclose(res.weights[-1], w, atol=1e-4)
    np.testing.assert_allclose(res.multipliers[-1], u, atol=1e-3 * max(1, u.max()))


def test_sampled_soft_q_reaches_the_lp_without_reading_the_transitions(monkeypatch):
    mdp = make_random_momdp(n_states=6, n_actions=2, random_state=4)
    lp = solve_maxmin_lp(mdp)
    # The model-free iteration reads the transitions only to draw next
    # states: replace the exact solvers it must not call by failures.
    import sklearn_ext.rl._maxmin as module

    def forbidden(*args, **kwargs):
        raise AssertionError("the sampled mode called the exact best response")

    monkeypatch.setattr(module, "_soft_iteration", forbidden)
    res = maxmin_dual_descent(mdp, evaluation="sampled", n_iter=3000, random_state=0)
    assert abs(res.value - lp.value) < 0.05
    assert np.all(res.constraint_values <= mdp.cost_limits + 0.05)
    np.testing.assert_allclose(res.policy.sum(axis=1), 1.0)
    # Reproducible given the seed, and not a copy of the exact mode.
    again = maxmin_dual_descent(mdp, evaluation="sampled", n_iter=50, random_state=0)
    other = maxmin_dual_descent(mdp, evaluation="sampled", n_iter=50, random_state=1)
    np.testing.assert_array_equal(again.weights, res.weights[:50])
    assert not np.array_equal(other.weights, again.weights)
