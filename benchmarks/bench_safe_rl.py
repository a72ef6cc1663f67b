"""Dedicated against mixed critics in Lagrangian safe RL with several constraints.

Parts
-----
1. Random tabular constrained MDPs (``make_random_cmdp``: 10 states, 3
   actions, gamma 0.9, 2 or 3 binding constraints; 10 seeds), exact
   evaluation, expected TD critics (``TabularLagrangian``):

   a. target drift alone: the uniform policy held fixed (``actor_lr=0``),
      the multipliers moved by dual gradient ascent at several step sizes;
      the critic's mean absolute error against the true ``Q_r - lambda .
      Q_c`` over the last 1000 of 4000 iterations (the multipliers of a
      violating fixed policy grow without bound; the dedicated critics' error
      from their zero start has decayed by then, the mixed critic's lag
      behind its moving target has not);
   b. the full actor-critic at its defaults (PID multipliers), over the
      multiplier step size, with slow critics (TD step 0.05, the default)
      and fast ones (0.5): the share of seeds whose last policy is
      LP-optimal and feasible (return within 1% of the HiGHS optimum, every
      cost within 1% of its limit), the largest relative excess of a cost,
      and the critic's error over the first 500 iterations;
   c. the same with plain dual gradient ascent.
2. The power-distribution grid (``DistributionGridEnv``, episode-cost limits
   2 for voltage and 4 for line rating), PPO-Lagrangian
   (``LagrangianActorCritic`` at its defaults, 200 updates of 8 days) in four
   configurations: dedicated and mixed critics with the agent's defaults
   (actor and critic gradients clipped separately, value targets
   standardised per head; the mixed critic so configured is the control
   that leaves target drift as the only difference), and both under the
   configuration before issue 59 (one clip over actor and critic, raw value
   targets). Reported: the return and costs of the learned (stochastic)
   policy and of its mean action on 20 fresh days, the share of seeds whose
   policy keeps both costs within their limits, the worst cost relative to
   its limit (mean and 95% t interval over seeds), paired differences
   (mixed - dedicated with the fixes, the same before them, and the old
   mixed critic - the fixed one); the best feasible constant action of a
   9 x 9 grid of solar and wind shares is the reference.

   2s. The gradient-scale measurement of issue 59: with multipliers started
   at 100, the factor by which the clip scales the actor's gradient in the
   3rd update (mean over its minibatch steps), per configuration, and the
   ratio dedicated / mixed (geometric mean of the per-seed ratios).

``--quick`` runs 3 seeds; ``--parts 1`` or ``2`` runs one part; ``--n-jobs``
runs the fits of part 2 in parallel processes (the results do not depend
on it).
"""

import argparse
import re
import time
import warnings

import numpy as np
from _common import paired_interval, write_results
from joblib import Parallel, delayed
from scipy import stats
from sklearn.exceptions import ConvergenceWarning

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.rl import (
    DistributionGridEnv,
    LagrangianActorCritic,
    TabularLagrangian,
    make_random_cmdp,
)
from sklearn_ext.rl._lagrangian_eval import GRID_LIMITS, solves

COLUMNS = ["part", "setting", "critic", "solved", "max excess", "bias", "value"]


def _cmdps(seeds):
    out = []
    for seed in seeds:
        cmdp = make_random_cmdp(n_constraints=2 + seed % 2, random_state=seed)
        out.append((cmdp, cmdp.solve_lp()))
    return out


def _fit(cmdp, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return TabularLagrangian(**params).fit(cmdp)


def drift_part(rows, problems):
    for lr in (0.01, 0.03, 0.1, 0.3):
        bias = {}
        for critic in ("dedicated", "mixed"):
            bias[critic] = [
                _fit(
                    cmdp,
                    critic=critic,
                    actor_lr=0.0,
                    multiplier="gradient",
                    lambda_lr=lr,
                    max_iter=4000,
                )
                .critic_bias_[3000:]
                .mean()
                for cmdp, _ in problems
            ]
        d, lo, hi = paired_interval(bias["mixed"], bias["dedicated"])
        for critic in ("dedicated", "mixed"):
            rows.append(
                {
                    "part": "1a",
                    "setting": f"fixed policy, dual step {lr}",
                    "critic": critic,
                    "bias": float(np.mean(bias[critic])),
                    "value": ""
                    if critic == "dedicated"
                    else f"mixed - dedicated: {d:+.3g} [{lo:+.3g}, {hi:+.3g}]",
                }
            )
        print(rows[-2]["setting"], rows[-2]["bias"], rows[-1]["bias"], flush=True)


def agent_part(rows, problems, label, configs):
    for setting, params in configs:
        for critic in ("dedicated", "mixed"):
            solved, excess, bias = [], [], []
            for cmdp, lp in problems:
                agent = _fit(cmdp, critic=critic, **params)
                solved.append(solves(agent, cmdp, lp))
                excess.append(
                    np.max(
                        (agent.constraint_values_[-1] - cmdp.cost_limits)
                        / cmdp.cost_limits
                    )
                )
                bias.append(agent.critic_bias_[:500].mean())
            rows.append(
                {
                    "part": label,
                    "setting": setting,
                    "critic": critic,
                    "solved": float(np.mean(solved)),
                    "max excess": float(np.max(excess)),
                    "bias": float(np.mean(bias)),
                }
            )
            print(label, setting, critic, rows[-1]["solved"], flush=True)


N_UPDATES = 200
DAY = 48  # steps of one grid episode
EVAL_EPISODES = 20
# Before issue 59: one gradient clip over actor and critic, raw value targets.
OLD = {"grad_clip": "joint", "normalize_targets": False}
# The critic structures on the grid: the agent's defaults (actor and critic
# clipped separately, value targets standardised per head), the mixed critic
# with the same fixes (the control that leaves target drift as the only
# difference), and both under the configuration before the fixes.
GRID_CONFIGS = (
    ("dedicated", {"critic": "dedicated"}),
    ("mixed", {"critic": "mixed"}),
    ("dedicated, joint clip, raw targets", {"critic": "dedicated", **OLD}),
    ("mixed, joint clip, raw targets", {"critic": "mixed", **OLD}),
)
PAIRS = (
    ("mixed - dedicated", "mixed", "dedicated"),
    (
        "mixed - dedicated, joint clip, raw targets",
        "mixed, joint clip, raw targets",
        "dedicated, joint clip, raw targets",
    ),
    (
        "mixed, joint clip, raw targets - mixed",
        "mixed, joint clip, raw targets",
        "mixed",
    ),
)


def evaluate(policy, episodes=EVAL_EPISODES):
    """Mean return and mean costs of a policy over fresh days of the grid."""
    env = DistributionGridEnv()
    ret, cost = [], []
    for e in range(episodes):
        obs, _ = env.reset(seed=10_000 + e)
        total, costs, done = 0.0, np.zeros(2), False
        while not done:
            obs, r, term, trunc, info = env.step(policy(obs))
            total += r
            costs += info["costs"]
            done = term or trunc
        ret.append(total)
        cost.append(costs)
    return float(np.mean(ret)), np.mean(cost, axis=0)


def best_constant_policy():
    """The best feasible constant action of a grid (no reactive power, storage)."""
    best = (-np.inf, None, None)
    for s_share in np.linspace(-1, 1, 9):
        for w_share in np.linspace(-1, 1, 9):
            action = np.array([s_share, w_share, 0.0, 0.0])
            ret, cost = evaluate(lambda obs, a=action: a, episodes=5)
            if np.all(cost <= GRID_LIMITS) and ret > best[0]:
                best = (ret, action, cost)
    return best[1]


def _ci(values):
    v = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return f"{v.mean():.3f} [{v.mean() - half:.3f}, {v.mean() + half:.3f}]"


def _grid_run(label, params, seed, n_updates):
    limits = np.asarray(GRID_LIMITS)
    start = time.perf_counter()
    agent = LagrangianActorCritic(
        cost_limits=limits,
        total_timesteps=n_updates * 8 * DAY,
        random_state=seed,
        **params,
    ).fit(DistributionGridEnv())
    rng = np.random.RandomState(seed)
    ret, cost = evaluate(lambda obs, a=agent, g=rng: a.sample(obs, g)[0])
    d_ret, d_cost = evaluate(lambda obs, a=agent: a.predict(obs)[0])
    out = {
        "return": ret,
        "ratio": float(np.max(cost / limits)),
        "costs": cost,
        "satisfied": bool(np.all(cost <= limits)),
        "det_return": d_ret,
        "det_ratio": float(np.max(d_cost / limits)),
        "det_satisfied": bool(np.all(d_cost <= limits)),
        "lambda": agent.multipliers_[-1],
        "seconds": time.perf_counter() - start,
    }
    print(label, seed, out, flush=True)
    return out


def _clip_scale(params, seed):
    """The factor the clip applied to the actor's gradient in the 3rd update
    of a run whose multipliers start at 100 (issue 59's measurement)."""
    agent = LagrangianActorCritic(
        cost_limits=GRID_LIMITS,
        lambda_init=100.0,
        total_timesteps=3 * 8 * DAY,
        random_state=seed,
        **params,
    ).fit(DistributionGridEnv())
    return float(agent.actor_clip_scale_[-1])


def _g(values):
    """Mean and 95% t interval, in two significant figures."""
    v = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return f"{v.mean():.2g} [{v.mean() - half:.2g}, {v.mean() + half:.2g}]"


def clip_part(rows, seeds, n_jobs):
    scales = dict(
        zip(
            [label for label, _ in GRID_CONFIGS],
            np.array(
                Parallel(n_jobs=n_jobs)(
                    delayed(_clip_scale)(params, seed)
                    for _, params in GRID_CONFIGS
                    for seed in seeds
                )
            ).reshape(len(GRID_CONFIGS), len(seeds)),
        )
    )
    setting = "grid, multipliers from 100, 3rd update"
    for label, values in scales.items():
        rows.append(
            {
                "part": "2s",
                "setting": setting,
                "critic": label,
                "value": f"actor gradient scale {_g(values)}",
            }
        )
    for name, a, b in (
        ("dedicated / mixed, joint clip, raw targets",) + PAIRS[1][2:0:-1],
        ("dedicated / mixed",) + PAIRS[0][2:0:-1],
    ):
        d, lo, hi = paired_interval(np.log(scales[a]), np.log(scales[b]))
        rows.append(
            {
                "part": "2s",
                "setting": setting,
                "critic": name,
                "value": f"actor gradient scale ratio: {np.exp(d):.3g} "
                f"[{np.exp(lo):.3g}, {np.exp(hi):.3g}] (geometric mean over "
                "seeds)",
            }
        )
    print(*rows[-6:], sep="\n", flush=True)


def grid_part(rows, seeds, n_updates, n_jobs):
    runs = Parallel(n_jobs=n_jobs)(
        delayed(_grid_run)(label, params, seed, n_updates)
        for seed in seeds
        for label, params in GRID_CONFIGS
    )
    per = {label: [] for label, _ in GRID_CONFIGS}
    for (label, _), run in zip(
        [(label, seed) for seed in seeds for label, _ in GRID_CONFIGS], runs
    ):
        per[label].append(run)
    for critic, runs in per.items():
        for mode, pre in (("learned policy", ""), ("its mean action", "det_")):
            detail = ""
            if not pre:
                costs = np.mean([r["costs"] for r in runs], axis=0).round(2)
                lams = np.mean([r["lambda"] for r in runs], axis=0).round(1)
                secs = np.mean([r["seconds"] for r in runs])
                detail = (
                    f"; costs {costs.tolist()}; final multipliers {lams.tolist()}"
                    f"; {secs:.0f} s per fit"
                )
            rows.append(
                {
                    "part": 2,
                    "setting": f"grid, {n_updates} updates, {mode}",
                    "critic": critic,
                    "solved": float(np.mean([r[pre + "satisfied"] for r in runs])),
                    "max excess": float(np.mean([r[pre + "ratio"] for r in runs])) - 1,
                    "value": f"return {_ci([r[pre + 'return'] for r in runs])}; "
                    f"worst cost / limit {_ci([r[pre + 'ratio'] for r in runs])}"
                    + detail,
                }
            )
    for name, a, b in PAIRS:
        d, lo, hi = paired_interval(
            [r["ratio"] for r in per[a]], [r["ratio"] for r in per[b]]
        )
        dr, lor, hir = paired_interval(
            [r["return"] for r in per[a]], [r["return"] for r in per[b]]
        )
        rows.append(
            {
                "part": 2,
                "setting": "grid, learned policy",
                "critic": name,
                "value": f"worst cost / limit: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]; "
                f"return: {dr:+.3f} [{lor:+.3f}, {hir:+.3f}]",
            }
        )
    action = best_constant_policy()
    ret, cost = evaluate(lambda obs: action)
    rows.append(
        {
            "part": 2,
            "setting": "grid",
            "critic": "best feasible constant action (reference)",
            "value": f"action {action.tolist()}: return {ret:.3f}, costs "
            f"{cost.round(2).tolist()}",
        }
    )


# --- the claims ledger ---------------------------------------------------------------


def _find(rows, row):
    (found,) = [r for r in rows if all(r.get(k) == v for k, v in row.items())]
    return found


def _match(row, column, pattern):
    """The first group of ``pattern`` in a cell (a figure and its interval)."""

    def compute(rows):
        return re.search(pattern, str(_find(rows, row)[column])).group(1)

    return compute


def _seeds(row):
    """Seeds whose run was solved (or feasible), from the share and the seed count."""

    def compute(rows):
        k = round(float(_find(rows, row)["solved"]) * _N_SEEDS)
        return k, f"{k}"

    return compute


def _over(part, column, pick, critic=None, setting=""):
    def compute(rows):
        values = [
            float(r[column])
            for r in rows
            if r["part"] == part
            and (critic is None or r["critic"] == critic)
            and setting in r["setting"]
        ]
        value = pick(values)
        if column == "solved":
            value = round(value * _N_SEEDS)
            return value, f"{value}"
        return value, f"{value:.1g}"

    return compute


_N_SEEDS = 10
_FIGURE = r"([+\-]?[\d.]+ \[[^\]]*\])"


def _safe_rl_claims(parts):
    claims = []
    if "1" in parts:
        for lr in (0.01, 0.03, 0.1, 0.3):
            key = str(lr).replace(".", "")
            setting = f"fixed policy, dual step {lr}"
            for critic in ("dedicated", "mixed"):
                row = {"part": "1a", "setting": setting, "critic": critic}
                claims.append(
                    Claim(
                        f"drift_{key}_{critic}",
                        row,
                        "bias",
                        fmt=".2g" if critic == "dedicated" else ".3g",
                        metric="critic error over the last 1000 of 4000 iterations",
                    )
                )
            claims.append(
                Claim(
                    f"drift_{key}_diff",
                    {"part": "1a", "setting": setting, "critic": "mixed"},
                    "value",
                    metric="critic error, mixed - dedicated (paired over seeds)",
                )
            )
        claims += [
            Claim(
                f"drift_dedicated_{name}",
                0,
                "bias",
                compute=_over("1a", "bias", pick, "dedicated"),
                metric=f"{name} critic error of the dedicated critics over the "
                "dual steps",
            )
            for name, pick in (("min", min), ("max", max))
        ]
        for speed, c in (("slow", 0.05), ("fast", 0.5)):
            for lr in (0.02, 0.05, 0.1, 0.2):
                key = str(lr).replace(".", "")
                for critic in ("dedicated", "mixed"):
                    row = {
                        "part": "1b",
                        "setting": f"PID, dual step {lr}, critic step {c}",
                        "critic": critic,
                    }
                    claims += [
                        Claim(f"pid_{speed}_{key}_{critic}", row, "solved"),
                        Claim(
                            f"pid_{speed}_{key}_{critic}_seeds",
                            row,
                            "solved",
                            compute=_seeds(row),
                            metric="seeds of 10 whose last policy is LP-optimal "
                            "and feasible (within 1%)",
                        ),
                    ]
            claims += [
                Claim(
                    f"pid_{speed}_{critic}_seeds_{name}",
                    0,
                    "solved",
                    compute=_over("1b", "solved", pick, critic, f"critic step {c}"),
                    metric=f"{name} over the dual steps of the seeds of 10 solved",
                )
                for critic in ("dedicated", "mixed")
                for name, pick in (("min", min), ("max", max))
            ]
        claims.append(
            Claim(
                "gradient_seeds_max",
                0,
                "solved",
                compute=_over("1c", "solved", max),
                metric="most seeds of 10 solved with plain dual ascent, either "
                "critic, either step",
            )
        )
    if "2" in parts:
        keys = {
            "dedicated": "dedicated",
            "mixed": "mixed",
            "dedicated, joint clip, raw targets": "dedicated_old",
            "mixed, joint clip, raw targets": "mixed_old",
        }
        for critic, key in keys.items():
            row = {
                "part": 2,
                "setting": f"grid, {N_UPDATES} updates, learned policy",
                "critic": critic,
            }
            mean = {
                "part": 2,
                "setting": f"grid, {N_UPDATES} updates, its mean action",
                "critic": critic,
            }
            scale = {"part": "2s", "critic": critic}
            claims += [
                Claim(
                    f"grid_{key}_seeds",
                    row,
                    "solved",
                    compute=_seeds(row),
                    metric="seeds of 10 whose learned policy keeps both costs "
                    "within their limits",
                ),
                Claim(
                    f"grid_{key}_return",
                    row,
                    "value",
                    compute=_match(row, "value", r"return " + _FIGURE),
                    metric="return of the learned policy",
                ),
                Claim(
                    f"grid_{key}_ratio",
                    row,
                    "value",
                    compute=_match(row, "value", r"worst cost / limit " + _FIGURE),
                    metric="worst cost / limit of the learned policy",
                ),
                Claim(
                    f"grid_{key}_voltage_multiplier",
                    row,
                    "value",
                    compute=_match(row, "value", r"final multipliers \[([\d.]+),"),
                    metric="final voltage multiplier (mean over seeds)",
                ),
                Claim(
                    f"grid_{key}_line_multiplier",
                    row,
                    "value",
                    compute=_match(
                        row, "value", r"final multipliers \[[\d.]+, ([\d.]+)"
                    ),
                    metric="final line-rating multiplier (mean over seeds)",
                ),
                Claim(
                    f"grid_{key}_mean_action_seeds",
                    mean,
                    "solved",
                    compute=_seeds(mean),
                    metric="seeds whose mean action keeps both costs within limits",
                ),
                Claim(
                    f"grid_{key}_mean_action_ratio",
                    mean,
                    "value",
                    compute=_match(mean, "value", r"worst cost / limit " + _FIGURE),
                    metric="worst cost / limit of the mean action",
                ),
                Claim(
                    f"grid_{key}_actor_scale",
                    scale,
                    "value",
                    compute=_match(scale, "value", r"scale (\S+ \[[^\]]*\])"),
                    metric="factor the gradient clip applies to the actor's "
                    "gradient, 3rd update, multipliers from 100",
                ),
            ]
        for name, (label, _, _) in zip(("", "_old", "_artefact"), PAIRS):
            diff = {"part": 2, "critic": label}
            claims += [
                Claim(
                    f"grid_ratio_diff{name}",
                    diff,
                    "value",
                    compute=_match(diff, "value", r"limit: " + _FIGURE),
                    metric=f"worst cost / limit, {label} (paired over seeds)",
                ),
                Claim(
                    f"grid_return_diff{name}",
                    diff,
                    "value",
                    compute=_match(diff, "value", r"return: " + _FIGURE),
                    metric=f"return, {label} (paired over seeds)",
                ),
            ]
        for name, label in (
            ("old", "dedicated / mixed, joint clip, raw targets"),
            ("fixed", "dedicated / mixed"),
        ):
            ratio = {"part": "2s", "critic": label}
            claims.append(
                Claim(
                    f"grid_actor_scale_ratio_{name}",
                    ratio,
                    "value",
                    compute=_match(ratio, "value", r"ratio: " + _FIGURE),
                    metric=f"actor gradient scale, {label} (geometric mean of "
                    "the per-seed ratios)",
                )
            )
        best = {"part": 2, "critic": "best feasible constant action (reference)"}
        claims.append(
            Claim(
                "grid_best_constant_return",
                best,
                "value",
                compute=_match(best, "value", r"return (-?[\d.]+),"),
                metric="return of the best feasible constant action",
            ),
        )
    return claims


_BUDGET = {
    "ours": "dedicated critics: TabularLagrangian and LagrangianActorCritic at "
    "their defaults (PID multipliers; the step sizes swept are stated per row; "
    "the deep agent's actor and critic clipped separately, value targets "
    "standardised per head), no tuning",
    "peers": "the mixed critic with the same parameters, iterations, updates and "
    "seeds (on the grid with the same gradient clip and target normalisation: "
    "the control), both critics under the configuration before issue 59 (one "
    "clip over actor and critic, raw targets); the HiGHS LP optimum (tabular) "
    "and the best feasible constant action of a 9 x 9 grid (power grid) as "
    "references",
}
_DATA = {
    "1": "random constrained MDPs (make_random_cmdp: 10 states, 3 actions, "
    "gamma 0.9, 2 or 3 binding constraints), exact evaluation",
    "2": "DistributionGridEnv (cost limits 2 and 4 per day), 20 evaluation days",
}
LEDGER = {
    ("safe_rl" if parts == "12" else f"safe_rl_parts{parts}")
    + ("_quick" if quick else ""): Ledger(
        "TabularLagrangian, LagrangianActorCritic",
        "; ".join(_DATA[p] for p in parts) + (" (quick run)" if quick else ""),
        3 if quick else _N_SEEDS,
        _BUDGET,
        [] if quick else _safe_rl_claims(parts),
    )
    for parts in ("1", "2", "12")
    for quick in (False, True)
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="12")
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()
    seeds = range(3 if args.quick else 10)
    rows = []
    start = time.perf_counter()
    if "1" in args.parts:
        problems = _cmdps(seeds)
        drift_part(rows, problems)
        agent_part(
            rows,
            problems,
            "1b",
            [
                (
                    f"PID, dual step {lr}, critic step {c}",
                    {"lambda_lr": lr, "critic_lr": c},
                )
                for c in (0.05, 0.5)
                for lr in (0.02, 0.05, 0.1, 0.2)
            ],
        )
        agent_part(
            rows,
            problems,
            "1c",
            [
                (
                    f"gradient, dual step {lr}",
                    {"multiplier": "gradient", "lambda_lr": lr},
                )
                for lr in (0.02, 0.1)
            ],
        )
    if "2" in args.parts:
        clip_part(rows, seeds, args.n_jobs)
        grid_part(
            rows, seeds, n_updates=80 if args.quick else N_UPDATES, n_jobs=args.n_jobs
        )
    write_results(
        ("safe_rl" if args.parts == "12" else f"safe_rl_parts{args.parts}")
        + ("_quick" if args.quick else ""),
        rows,
        COLUMNS,
        title="Dedicated vs mixed critics in Lagrangian safe RL",
        notes=f"{len(seeds)} seeds; {time.perf_counter() - start:.0f} s "
        f"({args.n_jobs} process{'es' if args.n_jobs > 1 else ''}).",
    )


if __name__ == "__main__":
    main()
