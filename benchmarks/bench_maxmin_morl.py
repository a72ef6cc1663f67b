"""Constrained max-min multi-objective RL: convergence and the thermal model.

Parts
-----
1. Random tabular MO-CMDPs (``make_random_momdp``: 10 states, 3 actions, 3
   objectives, 1 binding constraint, gamma 0.9; 10 seeds):
   ``TabularMaxMinMORL`` at its defaults (exact evaluation, entropy
   temperature 0.01, steps ``5 / sqrt(t + 1)``, 2000 iterations) against
   two references that do not use the iteration: the HiGHS occupancy LP
   (``solve_maxmin_lp``, the unregularised optimum) and the
   entropy-regularised optimum solved by Clarabel on the convex primal
   (``solve_regularised_maxmin``). Per iteration: the gap of the best
   response's worst objective to each, and the constraint excess; the decay
   of the gap to the regularised optimum is fitted against ``t`` and
   ``sqrt(t)`` (slopes and R^2; plotted to ``results/maxmin_morl_gap.png``),
   also for constant steps 0.2. The model-free sampled soft-Q mode
   (``evaluation="sampled"``) at 1000, 3000 and 10,000 iterations
   (``maxmin_morl_sampled``). Also the constrained utilitarian (equal
   weights) LP's worst objective.
2. ``BuildingThermalEnv`` (3 zones, 96 quarter-hours of a cold day), an
   energy budget of 290 kWh/day (the thermostat uses about 370): the
   constrained max-min agent ``ConstrainedMaxMinMORL`` (the paper's
   projected dual steps on weights and multipliers) against unconstrained
   max-min (``cost_limits=None``), linear scalarisation (equal fixed
   weights, no constraint) and the constrained utilitarian agent (equal
   fixed weights, the budget), all the same PPO with the same budget of
   300 updates of 8 days (``total_timesteps=230400``), 5 seeds; each
   learned stochastic policy (``predict(..., deterministic=False)``) is
   evaluated on 20 fresh days. The variant with soft-minimum weights and PI
   multipliers (the former default) is a row of its own.
   Training runs two at a time (``--n-jobs``), one torch thread each.
   Reported: worst-zone comfort (the day's return of the worst zone, in
   degree-hours), each zone's return, energy, violation (kWh above the
   budget), with 95% paired intervals of ours minus each baseline. The
   thermostat (no budget) and the best uniform-setback thermostat within
   the budget are the plain references.
3. The defaults on problems they were not tuned on: random MO-CMDPs of 20
   states, 5 actions, 4 objectives and 2 constraints (gamma 0.95), and the
   thermal model at 30-minute steps with a 270 kWh budget (3 seeds each).
4. The dual step on the one-step problem of the tests whose constrained
   max-min optimum is a mixture of actions: the paper's projected steps
   against the soft minimum (with the dual or the PI multiplier step) and
   fixed equal weights (5 seeds).

``--quick`` runs 2 seeds and fewer iterations; ``--parts`` picks parts
(e.g. ``--parts 13``).
"""

import argparse
import re
import time

import numpy as np
from _common import RESULTS, paired_interval, write_results

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.rl import (
    BuildingThermalEnv,
    ConstrainedMaxMinMORL,
    TabularMaxMinMORL,
    make_random_momdp,
    solve_maxmin_lp,
    solve_weighted_lp,
)
from sklearn_ext.rl._maxmin import maxmin_dual_descent, solve_regularised_maxmin
from sklearn_ext.rl._maxmin_eval import evaluate_policy, setback_thermostat

LIMIT = 290.0


# The convex reference agrees with the dual iteration to about 1e-8 (its
# solver's tolerance): gaps are fitted only above this floor.
FLOOR = 1e-7


def _fit(x, gap, floor=FLOOR):
    """Slope and R^2 of log(gap) against ``x`` while the gap is above ``floor``."""
    keep = gap > floor
    if keep.sum() < 3:
        return float("nan"), float("nan")
    y = np.log(gap[keep])
    slope, intercept = np.polyfit(x[keep], y, 1)
    resid = y - (slope * x[keep] + intercept)
    r2 = 1.0 - resid.var() / y.var() if y.var() > 0 else float("nan")
    return float(slope), float(r2)


SAMPLED_ITERS = (1000, 3000, 10000)


def part_tabular(seeds, n_iter, sampled_iters=SAMPLED_ITERS):
    """Gap to the LP and to the independent regularised optimum, per iteration.

    The regularised optimum is computed by Clarabel on the convex primal
    (``solve_regularised_maxmin``), not by the iteration under test. The
    sampled (model-free) mode runs at ``sampled_iters`` iterations.
    """
    rows, sampled_rows = [], []
    curves = {"lp": [], "regularised": [], "constant": []}
    t = np.arange(1, n_iter + 1)
    for seed in seeds:
        mdp = make_random_momdp(random_state=seed)
        lp = solve_maxmin_lp(mdp)
        util = solve_weighted_lp(mdp, np.full(3, 1 / 3))
        reg, w_ref, u_ref = solve_regularised_maxmin(mdp, 0.01)
        start = time.perf_counter()
        agent = TabularMaxMinMORL(max_iter=n_iter).fit(mdp)
        seconds = time.perf_counter() - start
        const = maxmin_dual_descent(mdp, lr=0.2, schedule="constant", n_iter=n_iter)
        curves["lp"].append(np.abs(agent.worst_objective_ - lp.value))
        curves["regularised"].append(np.abs(agent.worst_objective_ - reg.value))
        curves["constant"].append(np.abs(const.worst - reg.value))
        settle = np.flatnonzero(curves["lp"][-1] > 0.01)
        settle_reg = np.flatnonzero(curves["regularised"][-1] > 1e-6)
        rate_sqrt, r2_sqrt = _fit(np.sqrt(t), curves["regularised"][-1])
        rate_t, r2_t = _fit(t, curves["regularised"][-1])
        rate_const, r2_const = _fit(t, curves["constant"][-1])
        rows.append(
            {
                "seed": seed,
                "LP t*": lp.value,
                "regularised optimum (Clarabel)": reg.value,
                "entropy bias (LP - reg.)": float(lp.value - reg.value),
                "bound tau log|A|/(1-g)": 0.01
                * np.log(mdp.n_actions)
                / (1 - mdp.gamma),
                "gap to LP": float(curves["lp"][-1][-1]),
                "gap to reg.": float(curves["regularised"][-1][-1]),
                "weights vs solver duals": float(np.abs(agent.weights_ - w_ref).max()),
                "excess": float(agent.violation_[-1]),
                "iterations to 0.01 of LP": int(settle[-1] + 2) if settle.size else 1,
                "iterations to 1e-6 of reg.": int(settle_reg[-1] + 2)
                if settle_reg.size
                else 1,
                "slope vs sqrt(t)": rate_sqrt,
                "R2 vs sqrt(t)": r2_sqrt,
                "slope vs t": rate_t,
                "R2 vs t": r2_t,
                "slope vs t (constant 0.2)": rate_const,
                "R2 (constant)": r2_const,
                "utilitarian worst": util.value,
                "seconds": seconds,
            }
        )
        for n in sampled_iters:
            start = time.perf_counter()
            model_free = TabularMaxMinMORL(
                evaluation="sampled", max_iter=n, random_state=seed
            ).fit(mdp)
            seconds = time.perf_counter() - start
            excess = float(np.max(model_free.constraint_values_ - mdp.cost_limits))
            sampled_rows.append(
                {
                    "seed": seed,
                    "iterations": n,
                    "sampled transitions": n * model_free.n_samples * 30,
                    "gap to LP": float(lp.value - model_free.objective_values_.min()),
                    "gap to reg.": float(
                        reg.value - model_free.objective_values_.min()
                    ),
                    "excess": excess,
                    "seconds": seconds,
                }
            )
    _plot(t, curves, sampled_rows, RESULTS / "maxmin_morl_gap.png")
    return rows, sampled_rows


def _plot(t, curves, sampled_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4))
    for ax, x, xlabel in ((ax1, t, "iteration t"), (ax2, np.sqrt(t), r"$\sqrt{t}$")):
        for name, label in (
            ("lp", "gap to the LP optimum (HiGHS)"),
            ("regularised", "gap to the regularised optimum (Clarabel)"),
            ("constant", "constant steps 0.2, to the regularised optimum"),
        ):
            gaps = np.maximum(np.array(curves[name]), 1e-16)
            ax.semilogy(x, np.median(gaps, axis=0), label=label)
            ax.fill_between(
                x,
                np.quantile(gaps, 0.25, axis=0),
                np.quantile(gaps, 0.75, axis=0),
                alpha=0.2,
            )
        ax.axhline(FLOOR, color="k", lw=0.6, ls=":")
        ax.set_xlabel(xlabel)
    ax1.set_xscale("log")
    ax1.set_ylabel(r"$|\min_k J_k(\pi_t) - $ optimum$|$ (median, quartiles)")
    ax1.set_title("exact mode, steps 5/sqrt(t+1) unless stated")
    ax2.set_xlim(0, 40)
    ax2.set_title(r"the same against $\sqrt{t}$ (dotted: fit floor)")
    ax1.legend(fontsize=8)
    n = np.array([r["sampled transitions"] for r in sampled_rows])
    for column, label in (("gap to LP", "|gap to the LP|"), ("excess", "excess")):
        v = np.maximum(np.abs([r[column] for r in sampled_rows]), 1e-6)
        if column == "excess":
            v = np.maximum([r[column] for r in sampled_rows], 1e-6)
        ax3.loglog(n, v, "o", alpha=0.4, label=label)
        sizes = np.unique(n)
        ax3.loglog(sizes, [np.median(v[n == m]) for m in sizes], "-")
    ax3.set_xlabel("sampled transitions")
    ax3.set_title("sampled soft-Q mode, returned policy (median line)")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


METHODS = {
    "constrained max-min (ours)": {"cost_limits": [LIMIT]},
    "ours with soft-minimum weights and PI multipliers": {
        "cost_limits": [LIMIT],
        "weights_update": "softmin",
        "multiplier_update": "pi",
        "lambda_lr": 0.2,
    },
    "unconstrained max-min": {},
    "linear scalarisation": {"weights": [1.0, 1.0, 1.0]},
    "constrained utilitarian": {"weights": [1.0, 1.0, 1.0], "cost_limits": [LIMIT]},
}
EPISODES_PER_UPDATE = 8


def _train_and_evaluate(name, params, seed, n_updates, eval_seeds):
    import torch

    torch.set_num_threads(1)
    env = BuildingThermalEnv()
    start = time.perf_counter()
    agent = ConstrainedMaxMinMORL(
        total_timesteps=n_updates * EPISODES_PER_UPDATE * env.horizon,
        n_episodes_per_update=EPISODES_PER_UPDATE,
        max_episode_steps=env.horizon,
        random_state=seed,
        device="cpu",
        **params,
    ).fit(env)
    seconds = time.perf_counter() - start

    def act(obs):
        return agent.predict(obs, deterministic=False)

    returns, energy = evaluate_policy(env, act, eval_seeds)
    print(name, seed, np.round(returns, 1), round(float(energy[0]), 1), flush=True)
    return name, {"returns": returns, "energy": float(energy[0]), "seconds": seconds}


def part_thermal(seeds, n_updates, n_eval, n_jobs):
    from joblib import Parallel, delayed

    env = BuildingThermalEnv()
    eval_seeds = 10_000 + np.arange(n_eval)
    results = {name: [] for name in METHODS}
    done = Parallel(n_jobs=n_jobs)(
        delayed(_train_and_evaluate)(name, params, seed, n_updates, eval_seeds)
        for name, params in METHODS.items()
        for seed in seeds
    )
    for name, result in done:
        results[name].append(result)
    rows = []
    ours = results["constrained max-min (ours)"]
    worst_ours = np.array([r["returns"].min() for r in ours])
    excess_ours = np.array([max(r["energy"] - LIMIT, 0.0) for r in ours])
    for name, runs in results.items():
        worst = np.array([r["returns"].min() for r in runs])
        excess = np.array([max(r["energy"] - LIMIT, 0.0) for r in runs])
        zones = np.mean([r["returns"] for r in runs], axis=0)
        row = {
            "policy": name,
            "worst zone": float(worst.mean()),
            "zones": " / ".join(f"{z:.0f}" for z in zones),
            "energy kWh": float(np.mean([r["energy"] for r in runs])),
            "violation kWh": float(excess.mean()),
            "feasible seeds": f"{int(np.sum(excess <= 0.01 * LIMIT))}/{len(runs)}",
            "train s": float(np.mean([r["seconds"] for r in runs])),
        }
        if runs is not ours:
            mean, lo, hi = paired_interval(worst_ours, worst)
            row["ours - it, worst zone"] = f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]"
            mean, lo, hi = paired_interval(excess_ours, excess)
            row["ours - it, violation"] = f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]"
        rows.append(row)
    thermo = evaluate_policy(env, env.thermostat, eval_seeds)
    setback, sb_returns, sb_energy = setback_thermostat(env, LIMIT, eval_seeds)
    for name, returns, energy in (
        ("thermostat 21 C (no budget)", thermo[0], float(thermo[1][0])),
        (f"thermostat, uniform setback {setback:g} K", sb_returns, sb_energy),
    ):
        rows.append(
            {
                "policy": name,
                "worst zone": float(returns.min()),
                "zones": " / ".join(f"{z:.0f}" for z in returns),
                "energy kWh": energy,
                "violation kWh": max(energy - LIMIT, 0.0),
            }
        )
    return rows


def part_choice(seeds):
    """The weight rule on the one-step problem whose optimum is a mixture.

    The environment of ``tests/test_rl_maxmin.py``: action 0 pays (1, 0) and
    costs 1, action 1 pays (0, 1), action 2 pays (0.4, 0.4); with a cost
    limit of 0.25 the constrained max-min policy is (0.25, 0.25, 0.5),
    worth 0.45 on both objectives, and no deterministic policy is.
    """
    from test_rl_maxmin import _CHOICE, _Choice

    rows = []
    for name, params in (
        ("projected dual steps (default, the paper's)", {}),
        ("soft minimum", {"weights_update": "softmin"}),
        (
            "soft minimum, PI multipliers",
            {"weights_update": "softmin", "multiplier_update": "pi", "lambda_lr": 0.2},
        ),
        ("equal fixed weights", {"weights": [1.0, 1.0]}),
    ):
        worst, cost, swing = [], [], []
        for seed in seeds:
            agent = ConstrainedMaxMinMORL(
                cost_limits=[0.25],
                **{
                    **_CHOICE,
                    # 80 updates of 64 episodes (the tests run 32 a update)
                    "total_timesteps": 80 * 64,
                    "n_episodes_per_update": 64,
                    "random_state": seed,
                    **params,
                },
            ).fit(_Choice())
            worst.append(agent.returns_[-20:].mean(axis=0).min())
            cost.append(agent.constraint_values_[-20:, 0].mean())
            swing.append(np.ptp(agent.weights_path_[-20:, 0]))
        rows.append(
            {
                "weights": name,
                "worst objective": float(np.mean(worst)),
                "min over seeds": float(np.min(worst)),
                "cost (limit 0.25)": float(np.mean(cost)),
                "weight swing": float(np.mean(swing)),
                "worst per seed": " ".join(f"{w:.2f}" for w in worst),
            }
        )
    return rows


def part_untuned(seeds, n_updates):
    """The defaults on problems they were not tuned on."""
    rows = []
    for seed in seeds:
        mdp = make_random_momdp(
            n_states=20,
            n_actions=5,
            n_objectives=4,
            n_constraints=2,
            gamma=0.95,
            random_state=100 + seed,
        )
        lp = solve_maxmin_lp(mdp)
        agent = TabularMaxMinMORL().fit(mdp)
        util = solve_weighted_lp(mdp, np.full(4, 1 / 4))
        rows.append(
            {
                "problem": f"MO-CMDP 20x5, 4 objectives, 2 constraints, seed {seed}",
                "ours worst": float(agent.objective_values_.min()),
                "reference": f"LP {lp.value:.3f}",
                "gap": float(lp.value - agent.objective_values_.min()),
                "excess": float(agent.violation_[-1]),
                "utilitarian worst": util.value,
            }
        )
    # The thermal model at half-hour steps and a tighter budget.
    env, limit = BuildingThermalEnv(horizon=48), 270.0
    eval_seeds = 20_000 + np.arange(20)
    setback, sb_returns, sb_energy = setback_thermostat(env, limit, eval_seeds)
    for seed in seeds:
        results = {}
        for name, params in (
            ("ours", {}),
            ("utilitarian", {"weights": [1.0, 1.0, 1.0]}),
        ):
            agent = ConstrainedMaxMinMORL(
                cost_limits=[limit],
                total_timesteps=n_updates * EPISODES_PER_UPDATE * env.horizon,
                n_episodes_per_update=EPISODES_PER_UPDATE,
                max_episode_steps=env.horizon,
                random_state=seed,
                device="cpu",
                **params,
            ).fit(env)
            results[name] = evaluate_policy(
                env, lambda obs, a=agent: a.predict(obs, deterministic=False),
                eval_seeds,
            )  # fmt: skip
        returns, energy = results["ours"]
        rows.append(
            {
                "problem": f"thermal, 30-min steps, {limit:g} kWh, seed {seed}",
                "ours worst": float(returns.min()),
                "reference": f"setback thermostat {sb_returns.min():.1f} "
                f"({setback:g} K, {sb_energy:.0f} kWh)",
                "excess": float(energy[0] - limit),
                "utilitarian worst": float(results["utilitarian"][0].min()),
            }
        )
    return rows


# --- the claims ledger ---------------------------------------------------------------


def _over(column, pick, fmt, transform=None):
    """``pick`` (min or max) of a column over the rows, displayed with ``fmt``."""

    def compute(rows):
        values = [
            transform(r) if transform else float(r[column])
            for r in rows
            if column in r and r[column] != ""
        ]
        value = pick(values)
        return value, format(value, fmt)

    return compute


def _lp_minus_utilitarian(row):
    return row["LP t*"] - row["utilitarian worst"]


def _tabular_claims():
    claims = []
    for name, pick in (("min", min), ("max", max)):
        for key, column, fmt, metric in (
            ("gap", "gap to LP", ".1g", "the gap to the LP optimum after 2000 "
             "iterations"),
            ("gap_reg", "gap to reg.", ".1g", "the gap to the regularised "
             "optimum of the independent convex solver after 2000 iterations"),
            ("entropy_bias", "entropy bias (LP - reg.)", ".1g", "the LP optimum "
             "minus the convex solver's regularised optimum"),
            ("iterations", "iterations to 0.01 of LP", ".0f", "the iterations "
             "to come within 0.01 of the LP optimum for good"),
            ("iterations_reg", "iterations to 1e-6 of reg.", ".0f", "the "
             "iterations to come within 1e-6 of the regularised optimum for good"),
            ("rate_sqrt", "slope vs sqrt(t)", ".2f", "slope of log(gap to the "
             "regularised optimum) against sqrt(t), default steps"),
            ("r2_sqrt", "R2 vs sqrt(t)", ".2f", "R^2 of that fit"),
            ("rate_t", "slope vs t", ".3f", "slope of log(gap to the "
             "regularised optimum) against t, default steps"),
            ("r2_t", "R2 vs t", ".2f", "R^2 of that fit"),
            ("rate_constant", "slope vs t (constant 0.2)", ".3f", "slope of "
             "log(gap) against t, constant steps 0.2"),
            ("r2_constant", "R2 (constant)", ".2f", "R^2 of that fit"),
        ):  # fmt: skip
            claims.append(
                Claim(
                    f"{key}_{name}",
                    0,
                    column,
                    compute=_over(column, pick, fmt),
                    metric=f"{name} over instances of {metric}",
                )
            )
        claims.append(
            Claim(
                f"utilitarian_below_{name}",
                0,
                "utilitarian worst",
                compute=_over("utilitarian worst", pick, ".2f", _lp_minus_utilitarian),
                metric=f"{name} over instances of the LP optimum minus the "
                "equal-weights LP's worst objective",
            )
        )
    claims += [
        Claim(
            "excess_max",
            0,
            "excess",
            compute=_over("excess", max, ".0e"),
            metric="largest constraint excess after 2000 iterations",
        ),
        Claim(
            "duals_max",
            0,
            "weights vs solver duals",
            compute=_over("weights vs solver duals", max, ".0e"),
            metric="largest distance of the final weights to the convex "
            "solver's dual weights",
        ),
        Claim(
            "entropy_bound",
            0,
            "bound tau log|A|/(1-g)",
            fmt=".2f",
            metric="the entropy bias's bound",
        ),
    ]
    return claims


def _sampled_over(n, column, reduce, fmt):
    def compute(rows):
        values = [abs(r[column]) if column == "gap to LP" else r[column]
                  for r in rows if r["iterations"] == n]  # fmt: skip
        value = float(reduce(values))
        return value, format(value, fmt)

    return compute


def _sampled_claims():
    claims = []
    for n in SAMPLED_ITERS:
        claims += [
            Claim(
                f"gap_median_{n}",
                0,
                "gap to LP",
                compute=_sampled_over(n, "gap to LP", np.median, ".2g"),
                metric=f"median over instances of |gap to the LP| after {n} "
                "sampled iterations",
            ),
            Claim(
                f"gap_max_{n}",
                0,
                "gap to LP",
                compute=_sampled_over(n, "gap to LP", np.max, ".2g"),
                metric=f"largest |gap to the LP| after {n} sampled iterations",
            ),
            Claim(
                f"excess_max_{n}",
                0,
                "excess",
                compute=_sampled_over(n, "excess", np.max, ".2g"),
                metric=f"largest constraint excess after {n} sampled iterations",
            ),
        ]
    return claims


_POLICIES = {
    "ours": "constrained max-min (ours)",
    "softmin": "ours with soft-minimum weights and PI multipliers",
    "unconstrained": "unconstrained max-min",
    "linear": "linear scalarisation",
    "utilitarian": "constrained utilitarian",
}


def _feasible(label):
    def compute(rows):
        (row,) = [r for r in rows if r["policy"] == label]
        k, n = (int(v) for v in row["feasible seeds"].split("/"))
        return k, f"{k} of {n}"

    return compute


def _zone(label, index):
    def compute(rows):
        (row,) = [r for r in rows if r["policy"] == label]
        return row["zones"].split(" / ")[index]

    return compute


def _setback(rows):
    for row in rows:
        found = re.search(r"uniform setback ([\d.]+) K", row["policy"])
        if found:
            return float(found.group(1)), found.group(1)
    raise ValueError("no setback thermostat row")


def _thermal_claims():
    claims = []
    for key, label in _POLICIES.items():
        claims += [
            Claim(f"{key}_worst", label, "worst zone", fmt=".0f"),
            Claim(f"{key}_energy", label, "energy kWh", fmt=".0f"),
            Claim(f"{key}_violation", label, "violation kWh", fmt=".0f"),
            Claim(
                f"{key}_feasible",
                label,
                "feasible seeds",
                compute=_feasible(label),
                metric="seeds whose energy is within 1% of the budget",
            ),
        ]
        claims += [
            Claim(
                f"{key}_zone{i + 1}",
                label,
                "zones",
                compute=_zone(label, i),
                metric=f"comfort of zone {i + 1}",
            )
            for i in range(3)
        ]
        if key != "ours":
            claims += [
                Claim(
                    f"vs_{key}_worst",
                    label,
                    "ours - it, worst zone",
                    metric="worst zone, ours - it (paired over seeds)",
                ),
                Claim(
                    f"vs_{key}_violation",
                    label,
                    "ours - it, violation",
                    metric="violation, ours - it (paired over seeds)",
                ),
            ]
    thermostat = "thermostat 21 C (no budget)"
    claims += [
        Claim("thermostat_energy", thermostat, "energy kWh", fmt=".0f"),
        Claim("thermostat_worst", thermostat, "worst zone", fmt=".0f"),
        Claim(
            "setback_kelvin",
            None,
            "policy",
            compute=_setback,
            metric="smallest uniform setback that meets the budget (K)",
        ),
    ]
    for column, key, fmt in (
        ("worst zone", "worst", ".0f"),
        ("energy kWh", "energy", ".0f"),
    ):
        claims.append(
            Claim(
                f"setback_{key}",
                0,
                column,
                compute=lambda rows, c=column, f=fmt: next(
                    (float(r[c]), format(r[c], f))
                    for r in rows
                    if r["policy"].startswith("thermostat, uniform setback")
                ),
                metric=f"{column} of the setback thermostat",
            )
        )
    return claims


_CHOICES = {
    "dual": "projected dual steps (default, the paper's)",
    "soft": "soft minimum",
    "soft_pi": "soft minimum, PI multipliers",
    "equal": "equal fixed weights",
}


def _choice_claims():
    return (
        [
            Claim(f"{key}_worst", label, "worst objective", fmt=".2f")
            for key, label in _CHOICES.items()
        ]
        + [
            Claim(f"{key}_cost", label, "cost (limit 0.25)", fmt=".2f")
            for key, label in _CHOICES.items()
        ]
        + [
            Claim(f"{key}_min", label, "min over seeds", fmt=".2f")
            for key, label in _CHOICES.items()
        ]
    )


def _untuned_claims():
    claims = []
    for seed in range(3):
        tabular = f"MO-CMDP 20x5, 4 objectives, 2 constraints, seed {seed}"
        thermal = f"thermal, 30-min steps, 270 kWh, seed {seed}"
        claims += [
            Claim(f"tabular_{seed}_excess", tabular, "excess", fmt=".2g"),
            Claim(f"tabular_{seed}_gap", tabular, "gap", fmt=".2g"),
            Claim(f"thermal_{seed}_excess", thermal, "excess", fmt=".0f"),
            Claim(f"thermal_{seed}_worst", thermal, "ours worst", fmt=".0f"),
            Claim(
                f"thermal_{seed}_utilitarian",
                thermal,
                "utilitarian worst",
                fmt=".0f",
            ),
        ]
    claims.append(
        Claim(
            "thermal_setback_worst",
            "thermal, 30-min steps, 270 kWh, seed 0",
            "reference",
            fmt=".0f",
            metric="worst zone of the setback thermostat within the budget",
        )
    )
    return claims


_BUDGET = {
    "ours": "ConstrainedMaxMinMORL at its defaults (tabular: temperature 0.01, "
    "steps 5/sqrt(t+1), 2000 iterations; environment: 300 PPO updates, soft "
    "minimum), no tuning",
    "peers": "the HiGHS occupancy LP (exact optimum); the same PPO with fixed "
    "equal weights, without the constraint, or with projected dual weight "
    "steps, same updates and seeds; the thermostat and the best uniform "
    "setback within the budget",
}
_SPECS = {
    "maxmin_morl_tabular": (
        "random MO-CMDPs (make_random_momdp: 10 states, 3 actions, 3 objectives, "
        "1 binding constraint, gamma 0.9), exact evaluation",
        10,
        _tabular_claims,
    ),
    "maxmin_morl_sampled": (
        "the same random MO-CMDPs, the model-free sampled soft-Q mode "
        "(TabularMaxMinMORL(evaluation='sampled'), 4 next states drawn per "
        "state-action pair and iteration)",
        10,
        _sampled_claims,
    ),
    "maxmin_morl_thermal": (
        "BuildingThermalEnv (3 zones, 96 quarter-hours), budget 290 kWh a day, "
        "20 evaluation days",
        5,
        _thermal_claims,
    ),
    "maxmin_morl_choice": (
        "the one-step problem of tests/test_rl_maxmin.py whose constrained "
        "max-min optimum mixes two actions (cost limit 0.25)",
        5,
        _choice_claims,
    ),
    "maxmin_morl_untuned": (
        "random MO-CMDPs of 20 states, 5 actions, 4 objectives, 2 constraints "
        "(gamma 0.95); BuildingThermalEnv(horizon=48) with a 270 kWh budget",
        3,
        _untuned_claims,
    ),
}
LEDGER = {
    name + ("_quick" if quick else ""): Ledger(
        "ConstrainedMaxMinMORL",
        data + (" (quick run)" if quick else ""),
        2 if quick else seeds,
        _BUDGET,
        [] if quick else claims(),
    )
    for name, (data, seeds, claims) in _SPECS.items()
    for quick in (False, True)
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="1234")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    suffix = "_quick" if args.quick else ""
    if "1" in args.parts:
        seeds = range(3) if args.quick else range(10)
        n_iter = 500 if args.quick else 2000
        sampled_iters = (300, 1000) if args.quick else SAMPLED_ITERS
        rows, sampled = part_tabular(seeds, n_iter, sampled_iters)
        write_results(
            "maxmin_morl_tabular" + suffix,
            rows,
            list(rows[0]),
            title="Constrained max-min on random MO-CMDPs (10 states, 3 actions, "
            f"3 objectives, 1 binding constraint): {n_iter} iterations at the "
            "defaults, against the LP and an independent convex solver",
            notes="Gap to LP: |min_k J_k - t*| of the last best response (HiGHS "
            "LP). Regularised optimum: min_k J_k of the entropy-regularised "
            "optimum (temperature 0.01) computed by Clarabel on the convex "
            "primal over occupancy measures (solve_regularised_maxmin), not by "
            "the iteration; entropy bias: LP minus it (proven bound: tau "
            "log|A|/(1-g)). Weights vs solver duals: largest distance of the "
            "final weights to the solver's dual variables. Slopes: least-squares "
            "fit of log(gap to the regularised optimum) against sqrt(t) and "
            "against t for the default steps 5/sqrt(t+1), and against t for "
            "constant steps 0.2, over the iterations where the gap is above "
            f"{FLOOR:g} (the solver's agreement floor), with R^2 of each fit. "
            "Excess: largest constraint value above its limit (0: satisfied). "
            "Utilitarian worst: min_k J_k of the equal-weights LP optimum under "
            "the same constraint. Plot: maxmin_morl_gap.png.",
        )
        write_results(
            "maxmin_morl_sampled" + suffix,
            sampled,
            list(sampled[0]),
            title="The model-free sampled soft-Q mode on the same MO-CMDPs",
            notes="TabularMaxMinMORL(evaluation='sampled'): 4 next states drawn "
            "per state-action pair and iteration (sampled transitions = "
            "iterations x 4 x 30 pairs), soft Q-learning and TD evaluation with "
            "steps 0.3/(1 + t/1000), dual steps 5/sqrt(t+1); the returned "
            "policy averages the last half of the iterates. Gap: LP (or "
            "regularised optimum) minus the policy's exact worst objective "
            "(negative: above it, possible while the limit is exceeded). "
            "Excess: largest exact discounted cost above its limit (negative: "
            "slack).",
        )
    if "2" in args.parts:
        seeds = range(2) if args.quick else range(5)
        n_updates = 60 if args.quick else 300
        rows = part_thermal(seeds, n_updates, n_eval=20, n_jobs=args.n_jobs)
        write_results(
            "maxmin_morl_thermal" + suffix,
            rows,
            [
                "policy",
                "worst zone",
                "zones",
                "energy kWh",
                "violation kWh",
                "feasible seeds",
                "ours - it, worst zone",
                "ours - it, violation",
                "train s",
            ],
            title=f"BuildingThermalEnv, energy budget {LIMIT:g} kWh/day: "
            f"{len(seeds)} seeds x {n_updates} PPO updates, 20 evaluation days",
            notes="Worst zone and zones: the day's comfort return "
            "(-sum |T - 21| dt, degree-hours; higher is better). Feasible: "
            "energy within 1% of the budget.",
        )
    if "4" in args.parts:
        rows = part_choice(range(5))
        write_results(
            "maxmin_morl_choice" + suffix,
            rows,
            list(rows[0]),
            title="The weight rule on a one-step problem whose constrained "
            "max-min optimum is a mixture (optimum 0.45, cost limit 0.25)",
            notes="Mean over the last 20 of 80 updates (64 episodes each), 5 "
            "seeds. Weight swing: range of the first weight over the last 20 "
            "updates.",
        )
    if "3" in args.parts:
        rows = part_untuned(range(2) if args.quick else range(3), 300)
        write_results(
            "maxmin_morl_untuned" + suffix,
            rows,
            [
                "problem",
                "ours worst",
                "reference",
                "gap",
                "excess",
                "utilitarian worst",
            ],
            title="TabularMaxMinMORL (MO-CMDP rows) and ConstrainedMaxMinMORL "
            "(thermal rows) at their defaults on problems they were not tuned on",
            notes="Tabular: larger random MO-CMDPs with two constraints (gap: LP "
            "minus ours; excess: largest discounted cost above its limit). "
            "Thermal: BuildingThermalEnv(horizon=48) with a 270 kWh budget, 300 "
            "PPO updates, 20 evaluation days (excess: kWh above the budget; "
            "negative is unused budget). Utilitarian: equal fixed weights under "
            "the same constraints (the exact LP on the tabular problems, the "
            "same PPO on the thermal one).",
        )


if __name__ == "__main__":
    main()
