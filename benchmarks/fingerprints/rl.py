"""Fingerprints of the rl family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def rl_guarantee():
    """``bench_rl_guarantee``: every curve of the benchmark, a learned policy.

    The bridge family's returns (200 tasks x 100 episodes, ``delta=0.01``)
    certified by the default and by each ablation and baseline, and by each
    per-task bound; ``TabularQLearning`` on ``GoalGridWorld`` (fewer
    episodes than its default), its exact success on drawn tasks and a few
    rollouts through ``collect_returns``.
    """
    import numpy as np

    from sklearn_ext.rl import (
        BridgeTaskFamily,
        GoalGridWorld,
        MultiTaskGuarantee,
        TabularQLearning,
        collect_returns,
    )

    family = BridgeTaskFamily()
    returns = family.sample_returns(200, 100, random_state=0)
    out = []
    for params in (
        {},
        {"composition": "binomial"},
        {"composition": "bonferroni"},
        {"task_level": "dkw"},
        {"composition": "bonferroni", "task_level": "dkw"},
        {"task_bound": "empirical-bernstein"},
        {"task_bound": "hoeffding"},
        {"task_bound": "dkw"},
    ):
        cert = MultiTaskGuarantee(delta=0.01, **params).fit(returns)
        out += [cert.guarantee([0.5, 0.8, 0.9, 0.95]), cert.curve_[::7]]
    world = GoalGridWorld()
    agent = TabularQLearning(total_timesteps=10000, random_state=0).fit(world)
    rng = np.random.default_rng(1)
    tasks = [world.sample_task(rng) for _ in range(20)]
    out.append([world.success_probability(agent, task) for task in tasks])

    def make_task(task_rng):
        return GoalGridWorld(task=tasks[int(task_rng.integers(len(tasks)))])

    out.append(collect_returns(agent, make_task, 6, 5, random_state=0, n_jobs=1))
    return _concat(*out)


def kr_morl():
    """``bench_kr_morl``: the regressor in both orderings, the agent offline and online.

    ``KRQuantileRegressor`` (transformer and ``ordering="fixed"``, short
    training) on a copula whose correlation changes sign: quantiles on the
    benchmark's grid of levels, joint draws and the KR vector CVaR;
    ``MOQuantileAgent`` (the KR vector CVaR by default, the scalarised CVaR,
    per-objective and risk-neutral critics) on offline pulls of the copula
    bandit, and a short online fit on MO-Gymnasium's ``fishwood-v0`` when it
    is installed (the benchmark's part 3).
    """
    import numpy as np

    from sklearn_ext.rl import KRQuantileRegressor, MOQuantileAgent

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 2))
    rho = 0.8 * np.sign(X[:, 1])
    z1, z2 = rng.normal(size=(2, 300))
    Y = np.column_stack(
        [
            X[:, 0] + 0.5 * z1,
            -X[:, 0] + (1 + 0.5 * X[:, 1]) * (rho * z1 + np.sqrt(1 - rho**2) * z2),
        ]
    )
    levels = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    grid = np.array([[a, b] for a in levels for b in levels])
    Xt = X[:8]
    out = []
    for ordering in ("transformer", "fixed"):
        model = KRQuantileRegressor(ordering=ordering, max_iter=15, random_state=0).fit(
            X, Y
        )
        out += [
            model.predict_quantiles(Xt, grid),
            model.sample(Xt, 20, random_state=0),
            model.vector_risk(Xt, "kr_cvar", 0.25),
        ]
    # The copula bandit (bench part 2), written out: arm 0 comonotone and
    # shifted up, arm 1 independent.
    x = rng.normal(size=200)
    arms = rng.integers(0, 2, 200)
    second = np.where(arms == 0, x, rng.normal(size=200))
    data = {
        "observations": np.zeros(200, dtype=int),
        "actions": arms,
        "rewards": np.column_stack([x, second])
        + np.where(arms == 0, 0.2, 0.0)[:, None],
        "next_observations": np.zeros(200, dtype=int),
        "terminals": np.ones(200, dtype=bool),
    }
    for params in (
        {},
        {"risk": "cvar"},
        {"critic": "independent"},
        {"risk": "expectation"},
    ):
        agent = MOQuantileAgent(
            alpha=0.25, max_iter=1, n_epochs=3, random_state=0, device="cpu", **params
        ).fit(data)
        out += [agent.predict([0]), agent.loss_curve_]
    try:
        import mo_gymnasium
    except ImportError:  # pragma: no cover - the rl extra is missing
        return _concat(*out)
    agent = MOQuantileAgent(
        weights=[0.92, 0.08],
        total_timesteps=120,
        n_episodes_per_round=2,
        n_epochs=1,
        max_episode_steps=30,
        random_state=0,
        device="cpu",
    ).fit(mo_gymnasium.make("fishwood-v0"))
    out += [agent.training_returns_, agent.loss_curve_]
    return _concat(*out)


def safe_rl():
    """``bench_safe_rl``: the tabular agent in the benchmark's modes, the PPO agent.

    ``TabularLagrangian`` with dedicated and mixed critics on a random
    constrained MDP (the fixed policy under dual ascent of part 1a, the
    defaults of 1b with fast critics, plain dual ascent of 1c; fewer
    iterations); ``LagrangianActorCritic`` with both critics on the
    distribution grid for a few updates, and its sampled and mean actions.
    """
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_ext.rl import (
        DistributionGridEnv,
        LagrangianActorCritic,
        TabularLagrangian,
        make_random_cmdp,
    )

    cmdp = make_random_cmdp(n_constraints=2, random_state=0)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for critic in ("dedicated", "mixed"):
            for params in (
                {"actor_lr": 0.0, "multiplier": "gradient", "lambda_lr": 0.1},
                {},
                {"critic_lr": 0.5, "lambda_lr": 0.05},
                {"multiplier": "gradient", "lambda_lr": 0.02},
            ):
                agent = TabularLagrangian(critic=critic, max_iter=300, **params)
                agent.fit(cmdp)
                out += [
                    agent.returns_[::30],
                    agent.constraint_values_[::30],
                    agent.critic_bias_[::30],
                    agent.multipliers_[::30],
                    agent.policy_,
                ]
    obs, _ = DistributionGridEnv().reset(seed=10_000)
    for critic in ("dedicated", "mixed"):
        agent = LagrangianActorCritic(
            critic=critic,
            cost_limits=[2.0, 4.0],
            total_timesteps=2 * 2 * 48,
            n_episodes_per_update=2,
            random_state=0,
            device="cpu",
        ).fit(DistributionGridEnv())
        out += [
            agent.returns_,
            agent.constraint_values_,
            agent.multipliers_,
            agent.predict(obs),
            agent.sample(obs, np.random.RandomState(0)),
        ]
    return _concat(*out)


def maxmin_morl():
    """``bench_maxmin_morl``: the tabular solver and the environment agent.

    ``TabularMaxMinMORL`` on a random MO-CMDP against its LP (the defaults
    with fewer iterations, fixed equal weights, unconstrained, the sampled
    soft-Q mode), the utilitarian LP and the convex solver's regularised
    optimum; ``ConstrainedMaxMinMORL`` on ``BuildingThermalEnv`` with the
    budget, with the paper's dual step and with the soft minimum and PI
    multipliers, for a few updates, and its sampled actions.
    """
    import dataclasses

    import numpy as np

    from sklearn_ext.rl import (
        BuildingThermalEnv,
        ConstrainedMaxMinMORL,
        TabularMaxMinMORL,
        make_random_momdp,
        solve_maxmin_lp,
        solve_weighted_lp,
    )
    from sklearn_ext.rl._maxmin import solve_regularised_maxmin

    mdp = make_random_momdp(random_state=0)
    free = dataclasses.replace(mdp, costs=None, cost_limits=None)
    out = [
        solve_maxmin_lp(mdp).value,
        solve_weighted_lp(mdp, np.full(3, 1 / 3)).value,
        np.round(solve_regularised_maxmin(mdp, 0.01)[0].policy, 6),
    ]
    for data, params in (
        (mdp, {}),
        (mdp, {"weights": [1.0, 1.0, 1.0]}),
        (free, {}),
        (mdp, {"evaluation": "sampled", "random_state": 0}),
    ):
        agent = TabularMaxMinMORL(max_iter=200, **params).fit(data)
        out += [
            agent.worst_objective_[::10],
            agent.objective_values_,
            agent.weights_,
            agent.policy_,
        ]
    env = BuildingThermalEnv()
    obs, _ = env.reset(seed=10_000)
    for params in (
        {},
        {"weights_update": "softmin", "multiplier_update": "pi", "lambda_lr": 0.2},
    ):
        agent = ConstrainedMaxMinMORL(
            cost_limits=[290.0],
            total_timesteps=2 * 2 * env.horizon,
            n_episodes_per_update=2,
            max_episode_steps=env.horizon,
            random_state=0,
            device="cpu",
            **params,
        ).fit(env)
        out += [
            agent.returns_,
            agent.weights_path_,
            agent.multipliers_,
            agent.predict(obs, deterministic=False),
        ]
    return _concat(*out)


FINGERPRINTS = {
    "rl_guarantee": rl_guarantee,
    "kr_morl": kr_morl,
    "safe_rl": safe_rl,
    "maxmin_morl": maxmin_morl,
}
