"""The ``python -m sklearn_ext demo`` demos of the reinforcement-learning family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first). What
the demos share with the benchmarks and tests (their data, how a policy is
judged) lives in the family's modules: ``_kr_data``, ``_lagrangian_eval``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

SECONDS = {
    "ConstrainedMaxMinMORL": 6,
    "KRQuantileRegressor": 9,
    "LagrangianActorCritic": 6,
    "MOQuantileAgent": 5,
    "MultiTaskGuarantee": 1,
    "TabularLagrangian": 2,
    "TabularMaxMinMORL": 2,
    "TabularQLearning": 1,
}


def demo_TabularQLearning():
    """GoalGridWorld, 100 unseen tasks.

    Against the LP-optimal planner of each task, which knows the goal and
    the slip probability.
    """
    from sklearn_ext.rl import GoalGridWorld, TabularQLearning
    from sklearn_ext.rl._qlearning import _planner_success

    world = GoalGridWorld()
    agent = TabularQLearning(random_state=0).fit(world)
    rng = np.random.default_rng(1)
    tasks = [world.sample_task(rng) for _ in range(100)]
    learned = np.mean([world.success_probability(agent, t) for t in tasks])
    planner = np.mean([_planner_success(world, t) for t in tasks])
    return {
        "data": "GoalGridWorld, 100 unseen tasks (exact success probability)",
        "metric": "success probability",
        "score": learned,
        "baseline": "LP-optimal planner per task (knows goal and slip)",
        "baseline_score": planner,
        "greater_is_better": True,
    }


def demo_MultiTaskGuarantee():
    """Bridge task family, 200 tasks x 100 episodes.

    Against the Bonferroni + DKW composition of the same guarantee.
    """
    from sklearn_ext.rl import BridgeTaskFamily, MultiTaskGuarantee

    family = BridgeTaskFamily()
    returns = family.sample_returns(200, 100, random_state=0)
    ours = MultiTaskGuarantee().fit(returns)
    baseline = MultiTaskGuarantee(composition="bonferroni", task_level="dkw")
    baseline.fit(returns)
    return {
        "data": "bridge task family (200 tasks x 100 episodes)",
        "metric": "return certified for 80% of new tasks (delta=0.01)",
        "score": ours.guarantee(0.8),
        "baseline": "Bonferroni + DKW",
        "baseline_score": baseline.guarantee(0.8),
        "greater_is_better": True,
    }


def demo_KRQuantileRegressor():
    """Two outputs whose correlation flips sign with a feature.

    1,000 samples to train, 300 to test; against Ridge and a bootstrap of
    its joint residuals.
    """
    from sklearn.linear_model import Ridge

    from sklearn_ext.rl import KRQuantileRegressor
    from sklearn_ext.rl._kr_data import energy_score, sign_switch_copula

    X, Y = sign_switch_copula(1000, random_state=0)
    Xt, Yt = sign_switch_copula(300, random_state=1)
    model = KRQuantileRegressor(random_state=0).fit(X, Y)
    draws = model.sample(Xt, n_draws=100, random_state=0)
    ridge = Ridge().fit(X, Y)
    residuals = Y - ridge.predict(X)
    pick = np.random.default_rng(0).integers(0, len(X), 100)
    base = ridge.predict(Xt)[:, None, :] + residuals[pick][None]
    return {
        "data": "two outputs whose correlation flips sign with a feature (1000/300)",
        "metric": "held-out energy score of 100 joint draws",
        "score": energy_score(draws, Yt),
        "baseline": "Ridge + bootstrap of its joint residuals",
        "baseline_score": energy_score(base, Yt),
        "greater_is_better": False,
    }


def demo_MOQuantileAgent():
    """Copula bandit, 400 offline pulls, on the KR vector CVaR.

    Arm 1 hedges (x, -x), arm 0 is comonotone and shifted up. Against the
    strongest plain baseline: the arm with the best empirical KR vector CVaR
    of its own pulls (``empirical_kr_tail``, no critic), which a one-state
    problem allows.
    """
    from sklearn_ext.rl import MOQuantileAgent
    from sklearn_ext.rl._kr_data import countermonotone_pulls, kr_copula_bandit_truth
    from sklearn_ext.rl._mo_agent import empirical_kr_tail

    data = countermonotone_pulls(400, random_state=0)
    truth = kr_copula_bandit_truth(0.2, 0.25)
    agent = MOQuantileAgent(alpha=0.25, max_iter=1, n_epochs=30, random_state=0)
    ours = truth[agent.fit(data).predict([0])[0]]
    rewards, arms = data["rewards"], data["actions"]
    empirical = [empirical_kr_tail(rewards[arms == arm], 0.25).mean() for arm in (0, 1)]
    return {
        "data": "copula bandit: (x, x) + 0.2 vs (x, -x), 400 pulls",
        "metric": "exact KR vector CVaR_0.25 of the arm chosen",
        "score": ours,
        "baseline": "arm with the best empirical KR vector CVaR_0.25",
        "baseline_score": truth[int(np.argmax(empirical))],
        "greater_is_better": True,
    }


def demo_TabularLagrangian():
    """4 random CMDPs with 2-3 binding constraints.

    Dedicated critics against the same agent with a mixed critic (no plain
    scikit-learn baseline for constrained MDPs).
    """
    from sklearn_ext.rl import TabularLagrangian, make_random_cmdp
    from sklearn_ext.rl._lagrangian_eval import solves

    solved = {"dedicated": [], "mixed": []}
    for seed in range(4):
        cmdp = make_random_cmdp(n_constraints=2 + seed % 2, random_state=seed)
        lp = cmdp.solve_lp()
        for critic in solved:
            with warnings.catch_warnings():
                # A mixed critic that keeps cycling is the point of the demo.
                warnings.simplefilter("ignore", ConvergenceWarning)
                agent = TabularLagrangian(critic=critic).fit(cmdp)
            solved[critic].append(solves(agent, cmdp, lp))
    return {
        "data": "make_random_cmdp: 4 random CMDPs, 10 states, 3 actions, "
        "2-3 binding constraints",
        "metric": "share solved (return within 1% of the LP optimum, costs "
        "within 1% of their limits)",
        "score": float(np.mean(solved["dedicated"])),
        "baseline": "the same agent with a mixed critic (no plain scikit-learn "
        "baseline for constrained MDPs)",
        "baseline_score": float(np.mean(solved["mixed"])),
        "greater_is_better": True,
    }


def demo_LagrangianActorCritic():
    """6-bus distribution grid, 40 PPO updates.

    Dedicated critics against the same agent with a mixed critic (no plain
    scikit-learn baseline for constrained control). With actor and critic
    clipped apart and targets standardised, the two are expected to be
    close on this grid (``benchmarks/results/safe_rl.md``).
    """
    from sklearn_ext.rl import DistributionGridEnv, LagrangianActorCritic
    from sklearn_ext.rl._lagrangian_eval import GRID_LIMITS, worst_excess

    limits = GRID_LIMITS
    scores = {}
    for critic in ("dedicated", "mixed"):
        agent = LagrangianActorCritic(
            critic=critic,
            cost_limits=limits,
            total_timesteps=40 * 8 * 48,  # 40 updates of 8 days
            random_state=0,
        )
        scores[critic] = worst_excess(agent.fit(DistributionGridEnv()), limits)
    return {
        "data": "DistributionGridEnv (6-bus feeder, voltage and line-rating "
        f"costs, limits {limits}), 40 PPO updates",
        "metric": "largest mean episode cost of the last 10 updates / its limit",
        "score": scores["dedicated"],
        "baseline": "the same agent with a mixed critic (no plain scikit-learn "
        "baseline for constrained control)",
        "baseline_score": scores["mixed"],
        "greater_is_better": False,
    }


def demo_TabularMaxMinMORL():
    """4 random constrained multi-objective MDPs.

    Against the exact constrained utilitarian policy (equal weights, LP).
    """
    from sklearn_ext.rl import (
        TabularMaxMinMORL,
        make_random_momdp,
        solve_maxmin_lp,
        solve_weighted_lp,
    )

    ours, utilitarian = [], []
    for seed in range(4):
        mdp = make_random_momdp(random_state=seed)
        lp = solve_maxmin_lp(mdp)
        # score: the exact worst objective, below every feasible policy's if
        # a limit is exceeded (then counted as 0 here).
        score = TabularMaxMinMORL().fit(mdp).score(mdp)
        ours.append(max(score, 0.0) / lp.value)
        weights = np.full(mdp.n_objectives, 1.0 / mdp.n_objectives)
        utilitarian.append(solve_weighted_lp(mdp, weights).value / lp.value)
    return {
        "data": "make_random_momdp: 4 random constrained MDPs, 10 states, 3 "
        "actions, 3 objectives, 1 binding constraint",
        "metric": "worst objective / the LP's max-min optimum (0 if a "
        "constraint is exceeded)",
        "score": float(np.mean(ours)),
        "baseline": "constrained utilitarian policy (equal weights, exact LP); "
        "no plain scikit-learn baseline for MDPs",
        "baseline_score": float(np.mean(utilitarian)),
        "greater_is_better": True,
    }


def demo_ConstrainedMaxMinMORL():
    """BuildingThermalEnv, a 290 kWh budget, 25 PPO updates.

    Against the same agent with fixed equal weights (the constrained
    utilitarian agent).
    """
    from sklearn_ext.rl import BuildingThermalEnv, ConstrainedMaxMinMORL
    from sklearn_ext.rl._maxmin_eval import evaluate_policy

    env = BuildingThermalEnv()
    worst, energy = {}, {}
    for name, params in (("ours", {}), ("utilitarian", {"weights": [1, 1, 1]})):
        agent = ConstrainedMaxMinMORL(
            cost_limits=[290.0],
            total_timesteps=25 * 8 * env.horizon,
            max_episode_steps=env.horizon,
            random_state=0,
            **params,
        ).fit(env)
        returns, costs = evaluate_policy(
            env, lambda obs, a=agent: a.predict(obs, deterministic=False), range(10)
        )
        worst[name], energy[name] = float(returns.min()), float(costs[0])
    return {
        "data": "BuildingThermalEnv (3 zones, a cold day), energy budget 290 "
        f"kWh, 25 PPO updates of 8 days; energy used: ours {energy['ours']:.0f}, "
        f"utilitarian {energy['utilitarian']:.0f} kWh",
        "metric": "worst zone's comfort (degree-hours) of the stochastic policy "
        "on 10 days",
        "score": worst["ours"],
        "baseline": "the same agent with fixed equal weights (no plain "
        "scikit-learn baseline for constrained control)",
        "baseline_score": worst["utilitarian"],
        "greater_is_better": True,
    }
