"""Multi-task guarantees: soundness, tightness against Bonferroni + DKW, speed.

Part 1 (soundness and tightness, the closed-form family). The bridge family
(``BridgeTaskFamily()``: width 4, slip from the mixture 0.8 N(0.03, 0.01) +
0.2 N(0.10, 0.01)) gives the true share of tasks reaching every level. For
each setting, R independent draws of ``n`` tasks x ``m`` episodes; a run
*violates* when some certified point (g, p) has a true share below p. Curves:

- ours: ``MultiTaskGuarantee()`` (Clopper-Pearson per task; hybrid
  composition: bounds at ``task_delta=1e-3`` of which v may fail, plus bounds
  at 0.2 delta / n that must all hold for the top ranks; exact
  order-statistics band);
- ablation "binomial alone": the paper's composition without the top-rank
  bounds;
- ablation "bonferroni": every per-task bound must hold (v = 0, per-task level
  delta / (2n)), exact band;
- ablation "dkw band": binomial composition, DKW band across tasks;
- baseline "Bonferroni + DKW": both ablations at once (per-task bounds at
  delta / (2n), Massart's DKW band at delta / 2);
- plug-in: the empirical survival function of the task means (no confidence).

Violation rate with its exact 95% interval; area under each curve (the integral
of the certified probability over g in [0, 1]); the paired difference of areas
ours - baseline over runs (95% t interval); the area between the truth and our
curve; the level certified at p = 0.5, 0.8, 0.9, 0.95 (mean over runs).

Part 2 (a learned policy on the gridworld). ``TabularQLearning()`` trained on
``GoalGridWorld()`` (random goal on the far edges, slip uniform in [0, 0.3]).
The exact success probability of the policy on 20,000 tasks drawn from the
distribution forms the pool whose empirical distribution is the task
distribution of this part (so its survival function is the truth). One run
with real rollouts through ``collect_returns`` (200 tasks x 100 episodes)
and R runs with success/failure returns simulated from the exact per-task
rates (the same distribution, faster), as in part 1.

Part 3 (data it was not tuned on). Tasks are Gaussian pixel-noise levels on
scikit-learn's digits and the policy a logistic regression fitted on clean
digits; an episode classifies one image (see ``part_digits``).

Part 4 (per-task bounds). Each ``task_bound`` on the bridge returns (all four
are valid for success/failure returns): violation rate and area.

Part 5 (speed). Fit time of ours (cold: the band is computed once per (n,
delta) and then cached; warm) against the baseline, n = 200 and 500 tasks.

Run: ``python benchmarks/bench_rl_guarantee.py [--quick]``.
"""

import argparse
import sys
import time

import numpy as np
from _common import paired_interval, write_results
from scipy.stats import binomtest

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.rl import (
    BridgeTaskFamily,
    GoalGridWorld,
    MultiTaskGuarantee,
    TabularQLearning,
    _order_statistics,
    collect_returns,
)

GRID = np.linspace(0.0, 1.0, 2001)
LEVELS = (0.5, 0.8, 0.9, 0.95)

CURVES = {
    "ours": {},
    "ablation: binomial alone": {"composition": "binomial"},
    "ablation: bonferroni": {"composition": "bonferroni"},
    "ablation: dkw band": {"task_level": "dkw"},
    "baseline: Bonferroni + DKW": {"composition": "bonferroni", "task_level": "dkw"},
}


def _plug_in(returns):
    means = np.sort(returns.mean(axis=1))
    share = 1.0 - np.arange(len(means)) / len(means)
    return np.column_stack([means, share])


def _area(points):
    """Integral over [0, 1] of the step function p(g) of a curve's points."""
    g, p = points[:, 0], points[:, 1]
    idx = np.searchsorted(g, GRID, side="left")
    values = np.where(GRID <= 0.0, 1.0, np.append(p, 0.0)[idx])
    return np.trapezoid(values, GRID)


def _run(returns, survival, delta):
    out = {}
    for name, params in CURVES.items():
        cert = MultiTaskGuarantee(delta=delta, **params).fit(returns)
        g, p = cert.curve_.T
        out[name] = {
            "violates": bool(np.any(survival(g) < p - 1e-12)),
            "area": _area(cert.curve_),
            "levels": cert.guarantee(LEVELS),
        }
    pts = _plug_in(returns)
    out["plug-in (empirical means)"] = {
        "violates": bool(np.any(survival(pts[:, 0]) < pts[:, 1] - 1e-12)),
        "area": _area(pts),
        "levels": np.array([np.quantile(pts[:, 0], 1 - q) for q in LEVELS]),
    }
    return out


def _summarise(part, setting, runs, truth_area):
    rows = []
    ours = np.array([r["ours"]["area"] for r in runs])
    base = np.array([r["baseline: Bonferroni + DKW"]["area"] for r in runs])
    for name in runs[0]:
        viol = sum(r[name]["violates"] for r in runs)
        ci = binomtest(viol, len(runs)).proportion_ci(0.95)
        area = np.array([r[name]["area"] for r in runs])
        levels = np.mean([r[name]["levels"] for r in runs], axis=0)
        row = {
            "part": part,
            "setting": setting,
            "curve": name,
            "violation rate": f"{viol / len(runs):.3f} [{ci.low:.3f}, {ci.high:.3f}]",
            "area": round(float(area.mean()), 4),
            "gap to truth": round(float(truth_area - area.mean()), 4),
        }
        for q, g in zip(LEVELS, levels):
            row[f"g at p={q}"] = round(float(g), 3)
        if name == "ours" or name.startswith("ablation"):
            other = base if name == "ours" else area
            prefix = "" if name == "ours" else "ours "
            if len(runs) > 1:
                mean, lo, hi = paired_interval(ours, other)
                row["area - baseline"] = f"{prefix}{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]"
            else:
                row["area - baseline"] = f"{prefix}{np.mean(ours - other):+.4f} (1 run)"
        rows.append(row)
    return rows


def part_bridge(reps):
    family = BridgeTaskFamily()
    truth_area = np.trapezoid(family.survival(GRID), GRID)
    rows = []
    for n, m, delta in [(200, 100, 0.01), (100, 10, 0.1)]:
        runs = [
            _run(family.sample_returns(n, m, random_state=r), family.survival, delta)
            for r in range(reps)
        ]
        rows += _summarise(
            "bridge", f"n={n}, m={m}, delta={delta}, R={reps}", runs, truth_area
        )
    return rows


def part_gridworld(reps, pool_size):
    world = GoalGridWorld()
    agent = TabularQLearning(random_state=0).fit(world)
    rng = np.random.default_rng(1)
    tasks = [world.sample_task(rng) for _ in range(pool_size)]
    pool = np.array([world.success_probability(agent, t) for t in tasks])
    sorted_pool = np.sort(pool)

    def survival(g):
        g = np.asarray(g, dtype=float)
        return 1.0 - np.searchsorted(sorted_pool, g, side="left") / pool_size

    truth_area = np.trapezoid(survival(GRID), GRID)

    def make_task(task_rng):
        # A task drawn from the pool, whose empirical distribution is the
        # task distribution of this part.
        return GoalGridWorld(task=tasks[int(task_rng.integers(pool_size))])

    start = time.perf_counter()
    returns = collect_returns(agent, make_task, 200, 100, random_state=0, n_jobs=2)
    rollout_s = time.perf_counter() - start
    runs = [_run(returns, survival, 0.01)]
    rows = _summarise(
        "gridworld", "rollouts, n=200, m=100, delta=0.01", runs, truth_area
    )
    runs = []
    for r in range(reps):
        rr = np.random.default_rng(100 + r)
        J = pool[rr.integers(pool_size, size=200)]
        runs.append(
            _run((rr.random((200, 100)) < J[:, None]).astype(float), survival, 0.01)
        )
    rows += _summarise(
        "gridworld", f"simulated, n=200, m=100, delta=0.01, R={reps}", runs, truth_area
    )
    return rows, rollout_s, float(pool.mean())


def part_digits(reps, pool_size):
    """Data the method was not tuned on: a classifier on perturbed digits.

    A task is a noise level (uniform in [0, 8]) with its own fixed Gaussian
    pixel noise on scikit-learn's 1797 digits; the "policy" is a logistic
    regression fitted on the clean digits; an episode classifies one image
    drawn uniformly (return 1 if correct). A task's expected return is its
    exact accuracy on its 1797 noisy images, so the truth is the empirical
    distribution of a pool of tasks, as in part 2.
    """
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    X, y = load_digits(return_X_y=True)
    clf = LogisticRegression(max_iter=2000).fit(X, y)
    rng = np.random.default_rng(3)
    noise = rng.uniform(0.0, 8.0, size=pool_size)
    pool = np.array(
        [np.mean(clf.predict(X + rng.normal(0.0, sd, X.shape)) == y) for sd in noise]
    )
    sorted_pool = np.sort(pool)

    def survival(g):
        g = np.asarray(g, dtype=float)
        return 1.0 - np.searchsorted(sorted_pool, g, side="left") / pool_size

    truth_area = np.trapezoid(survival(GRID), GRID)
    runs = []
    for r in range(reps):
        rr = np.random.default_rng(500 + r)
        J = pool[rr.integers(pool_size, size=200)]
        runs.append(
            _run((rr.random((200, 100)) < J[:, None]).astype(float), survival, 0.01)
        )
    return _summarise(
        "digits",
        f"noisy-digit tasks, LogisticRegression, n=200, m=100, delta=0.01, R={reps}",
        runs,
        truth_area,
    )


def part_task_bounds(reps):
    """Each per-task bound on the same success/failure returns (all valid)."""
    family = BridgeTaskFamily()
    truth_area = np.trapezoid(family.survival(GRID), GRID)
    rows = []
    for bound in ("clopper-pearson", "empirical-bernstein", "hoeffding", "dkw"):
        areas, viol = [], 0
        for r in range(reps):
            returns = family.sample_returns(200, 100, random_state=r)
            cert = MultiTaskGuarantee(task_bound=bound).fit(returns)
            g, p = cert.curve_.T
            viol += bool(np.any(family.survival(g) < p - 1e-12))
            areas.append(_area(cert.curve_))
        ci = binomtest(viol, reps).proportion_ci(0.95)
        rows.append(
            {
                "part": "task bound",
                "setting": f"bridge, n=200, m=100, delta=0.01, R={reps}",
                "curve": f"ours, task_bound={bound!r}",
                "violation rate": f"{viol / reps:.3f} [{ci.low:.3f}, {ci.high:.3f}]",
                "area": round(float(np.mean(areas)), 4),
                "gap to truth": round(float(truth_area - np.mean(areas)), 4),
            }
        )
    return rows


def part_speed():
    rows = []
    family = BridgeTaskFamily()
    for n in (200, 500):
        returns = family.sample_returns(n, 100, random_state=0)
        _order_statistics.equal_level_band.cache_clear()
        _order_statistics.compose.cache_clear()
        start = time.perf_counter()
        MultiTaskGuarantee().fit(returns)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        MultiTaskGuarantee().fit(returns)
        warm = time.perf_counter() - start
        start = time.perf_counter()
        MultiTaskGuarantee(composition="bonferroni", task_level="dkw").fit(returns)
        base = time.perf_counter() - start
        rows.append(
            {
                "part": "speed",
                "setting": f"n={n}, m=100",
                "curve": "ours (cold / warm) vs baseline",
                "violation rate": (
                    f"{cold:.2f} s / {warm * 1e3:.1f} ms vs {base * 1e3:.1f} ms "
                    f"(cold x{cold / base:.0f}, warm x{warm / base:.1f})"
                ),
            }
        )
    return rows


_SETTINGS = {
    "bridge": ("bridge", "n=200, m=100, delta=0.01, R=500"),
    "bridge_small": ("bridge", "n=100, m=10, delta=0.1, R=500"),
    "grid": ("gridworld", "rollouts, n=200, m=100, delta=0.01"),
    "grid_sim": ("gridworld", "simulated, n=200, m=100, delta=0.01, R=200"),
    "digits": (
        "digits",
        "noisy-digit tasks, LogisticRegression, n=200, m=100, delta=0.01, R=200",
    ),
}
_CURVES = {
    "ours": "ours",
    "binomial": "ablation: binomial alone",
    "bonferroni": "ablation: bonferroni",
    "dkw_band": "ablation: dkw band",
    "baseline": "baseline: Bonferroni + DKW",
    "plug_in": "plug-in (empirical means)",
}


def _certified_violations(rows):
    """The highest violation rate of a certified curve (plug-in excluded)."""
    rates = [
        float(r["violation rate"].split()[0])
        for r in rows
        if r["part"] != "speed" and not r["curve"].startswith("plug-in")
    ]
    return max(rates), f"{max(rates):.3f}"


def _guarantee_claims():
    claims = [
        Claim(
            "certified_violation_max",
            0,
            "violation rate",
            compute=_certified_violations,
            metric="highest share of runs in which a certified curve (ours, an "
            "ablation, the baseline, any per-task bound) lies above the truth",
        )
    ]
    for skey, (part, setting) in _SETTINGS.items():
        for ckey, curve in _CURVES.items():
            row = {"part": part, "setting": setting, "curve": curve}
            claims += [
                Claim(f"{skey}_{ckey}_violation", row, "violation rate"),
                Claim(f"{skey}_{ckey}_area", row, "area", metric="certified area"),
                Claim(
                    f"{skey}_{ckey}_gap",
                    row,
                    "gap to truth",
                    metric="area of the truth minus the certified area",
                ),
            ]
            claims += [
                Claim(f"{skey}_{ckey}_g{str(q)[2:]}", row, f"g at p={q}")
                for q in LEVELS
            ]
            if ckey == "ours":
                claims.append(
                    Claim(
                        f"{skey}_ours_vs_baseline",
                        row,
                        "area - baseline",
                        metric="certified area, ours - Bonferroni + DKW",
                    )
                )
            elif ckey not in ("baseline", "plug_in"):
                claims.append(
                    Claim(
                        f"{skey}_ours_vs_{ckey}",
                        row,
                        "area - baseline",
                        metric=f"certified area, ours - {curve}",
                    )
                )
    for bound in ("clopper-pearson", "empirical-bernstein", "hoeffding", "dkw"):
        claims.append(
            Claim(
                f"task_bound_{bound.replace('-', '_')}_area",
                {"part": "task bound", "curve": f"ours, task_bound={bound!r}"},
                "area",
                metric="certified area",
            )
        )
    return claims


_BUDGET = {
    "ours": "MultiTaskGuarantee() at its defaults (hybrid composition, "
    "Clopper-Pearson per task, exact order-statistics band), no tuning",
    "peers": "Bonferroni per-task bounds with Massart's DKW band, each ablation "
    "(one part changed), and the plug-in curve of the task means; every curve "
    "on the same returns",
}
LEDGER = {
    name: Ledger(
        "MultiTaskGuarantee",
        "BridgeTaskFamily() (closed-form survival); GoalGridWorld() with "
        "TabularQLearning() (exact success on a pool of 20,000 tasks); "
        "noisy-digit tasks with LogisticRegression (a pool of 2,000 tasks)"
        + (" (quick run)" if quick else ""),
        "500 runs per bridge setting, 200 simulated runs on the gridworld and "
        "digits, 1 rollout run, 100 per task bound"
        if not quick
        else "40 / 20 runs (quick)",
        _BUDGET,
        [] if quick else _guarantee_claims(),
    )
    for name, quick in (("rl_guarantee", False), ("rl_guarantee_quick", True))
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    reps = 40 if args.quick else 500
    start = time.perf_counter()
    rows = part_bridge(reps)
    grid_rows, rollout_s, pool_mean = part_gridworld(
        20 if args.quick else 200, 2000 if args.quick else 20000
    )
    rows += grid_rows
    rows += part_digits(20 if args.quick else 200, 300 if args.quick else 2000)
    rows += part_task_bounds(20 if args.quick else 100)
    rows += part_speed()
    columns = [
        "part",
        "setting",
        "curve",
        "violation rate",
        "area",
        "area - baseline",
        "gap to truth",
        *[f"g at p={q}" for q in LEVELS],
    ]
    notes = (
        f"Gridworld: TabularQLearning() mean exact success {pool_mean:.3f} over the "
        f"task pool; the rollout run (200 x 100 episodes) took {rollout_s:.1f} s. "
        f"Whole benchmark {time.perf_counter() - start:.0f} s."
    )
    write_results(
        "rl_guarantee" + ("_quick" if args.quick else ""),
        rows,
        columns,
        title="Multi-task guarantees: soundness, tightness, speed",
        notes=notes,
    )


if __name__ == "__main__":
    sys.exit(main())
