"""Conformal robust predict-then-optimize: validity, usefulness and speed.

The problem is the 5x5 grid shortest path of the predict-then-optimize
literature (40 edges, 70 paths) with the polynomial costs of
``make_shortest_path`` (5 features, noise half-width 0.5). The model is Ridge,
fitted once per setting on 1000 samples (``fit`` on 1500 with a 500-sample
calibration split); the ground truth of every level (true miscoverage and true
mean normalised regret) comes from 1e5 fresh samples.

Part 1, validity (the headline claim). 200 independent calibration draws of
500 fresh samples each (``calibrate``); a draw violates a frontier when some
level's bound lies below the truth. Four frontiers are compared, at
delta = 0.1: ours at the defaults (``bound="simultaneous"``: one simultaneous
Clopper-Pearson band on the miscoverage curve, the betting bound for the
regret split over the levels), ours with the
Hoeffding-Bentkus regret bound (``regret_bound="hoeffding_bentkus"``),
Clopper-Pearson and Hoeffding-Bentkus without the correction (pointwise, each
at level delta), and the naive empirical frontier. Also the mean gap between
the simultaneous bounds and the truth (tightness).

Part 2, usefulness at a target miscoverage of 0.1, on the same 200 draws: the
level we select (``select(max_miscoverage=0.1)``) against the robust policy
with a coverage level fixed a priori from MAPIE's split-conformal regressor
(one ``SplitConformalRegressor`` per edge on the same prefit Ridge and the same
calibration draw; box = the per-edge intervals at 1 - 0.1/40, Bonferroni, so
that the box covers all 40 costs jointly with probability >= 0.9; also the
per-edge 0.9 intervals, which do not cover jointly), the standard conformal
l2 ball at the split-conformal quantile (a priori 1 - alpha, no frontier), and
the nominal policy. True regret and true miscoverage on the 1e5 samples.

Part 3, speed: robust decisions for 1e4 contexts, ours (one batched call)
against solving each robust program with cvxpy one at a time (a compiled,
parametrised problem; box sets are an LP whose solution is an exact path, l2
sets an SOCP over the path polytope -- its relaxation, for timing only).

Part 4, the sharper frontier (``--frontier-only`` runs it alone): the three
``bound`` options over 500 calibration draws, on the shortest path (degree 2
and 4), a 10-asset portfolio and a 10-variable allocation LP solved by the
batched primal-dual interior point (l2 sets, Ridge, 1000 training samples).
The losses of every
level are computed once on a pool of 20,000 fresh samples (4,000 for the
LP); each draw takes ``n_cal`` (500, and 100) samples from the pool with
replacement, so the draws are i.i.d. from the pool's distribution and the
true curves are the pool's means, exactly. Per option: the rate of draws with
some bound below the truth, the mean gap of the bounds to the truth (paired
against LTT-Bonferroni, with a 95% t interval), and at a target miscoverage
of 0.1 the chosen level's true miscoverage and true regret, against the
split-conformal l2 ball of the same shape fixed a priori, with the
training-conditional guarantee (miscoverage <= 0.1 with probability 0.9) and
with the marginal one (expected miscoverage <= 0.1). The balls' regret is
read off the regret curve on 100 radii between the pool's 50% and 99.9%
score quantiles. Regret in this part is PyEPO's normalised regret,
``sum(regret) / sum(|z*|)``, of the chosen policy on the pool. The
fixed-sequence choice returns the PAC ball's radius by construction (its
regret column differs from the ball's only through that interpolation); the
default choice's difference with the ball is the comparison that is not by
construction. Also, per level, the default bounds minus LTT-Bonferroni's
(``conformal_robust_band_levels``: never positive), and the default's budget
split, computed (``conformal_robust_allocation``).

Part 5, LP speed (``--lp-speed-only``, timing): per seed (5) a random
polytope and the 22,500 l2-robust programs of a fit with 450 calibration
rows and 50 levels: the batched primal-dual path (default), the earlier
batched barrier, one stacked SOCP in Clarabel (called directly), per-row
cvxpy; then one such fit. Targets: fit <= 1 s, >= 50x per-row cvxpy.

Run ``python benchmarks/bench_conformal_robust.py`` (``--quick`` for a smoke run;
``--frontier-only`` (with the budget table), ``--allocation-only``,
``--lp-speed-only``, ``--validity-only`` and ``--speed-only`` run part 4,
the budget table, part 5, parts 1 and 2, or part 3 alone).
"""

import argparse
import time

import numpy as np
from _common import paired_interval, write_results
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

from sklearn_ext._claims import Claim, Ledger, parse_cell
from sklearn_ext.datasets import make_shortest_path
from sklearn_ext.robust_optimization import (
    ConformalRobustOptimizer,
    PortfolioProblem,
    ShortestPathProblem,
)
from sklearn_ext.robust_optimization._bounds import (
    binomial_upper_bound,
    hoeffding_bentkus_upper_bound,
)
from sklearn_ext.robust_optimization._frontier import normalised_regret

GRID = ShortestPathProblem((5, 5))
DELTA, ALPHA = 0.1, 0.1
# One cost model for every part that draws from the shortest-path generator.
_SP_COEF = make_shortest_path(1, 5, return_coef=True, random_state=0)[2]


def _data(n, coef, seed, degree):
    return make_shortest_path(
        n, 5, degree=degree, noise=0.5, coef=coef, random_state=seed
    )


def _true_frontier(model, X, C):
    center = model.estimator_.predict(X)
    scale = model._scale(X)
    scores = model._scores(C - center, scale)
    best_worst = GRID.cost_range(C)
    mis, reg = [], []
    for r in model.levels_:
        mis.append(np.mean(scores > r))
        paths = GRID.solve_robust(center, r * scale, model.norm)
        reg.append(normalised_regret(GRID, C, paths, best_worst).mean())
    return np.array(mis), np.array(reg)


class _Column(RegressorMixin, BaseEstimator):
    """Column ``j`` of a fitted multi-output regressor (for MAPIE's 1-D API)."""

    def __init__(self, model=None, j=0):
        self.model = model
        self.j = j

    def fit(self, X, y):
        self.fitted_ = True
        return self

    def predict(self, X):
        return self.model.predict(X)[:, self.j]


def _mapie_half_widths(model, X_cal, C_cal, confidence):
    from mapie.regression import SplitConformalRegressor

    half = np.empty(C_cal.shape[1])
    x0 = X_cal[:1]
    for j in range(C_cal.shape[1]):
        scr = SplitConformalRegressor(
            _Column(model, j).fit(None, None), confidence_level=confidence, prefit=True
        ).conformalize(X_cal, C_cal[:, j])
        pred, pis = scr.predict_interval(x0)
        half[j] = pis[0, 1, 0] - pred[0]
    return half


def _box_policy(model, half, X_test, C_test, best_worst):
    center = model.estimator_.predict(X_test)
    paths = GRID.solve_robust(center, np.broadcast_to(half, center.shape), "linf")
    covered = np.all(np.abs(C_test - center) <= half, axis=1)
    regret = normalised_regret(GRID, C_test, paths, best_worst).mean()
    return 1 - covered.mean(), regret


def validity_and_usefulness(degree, n_reps, n_test, n_cal):
    X, C, coef = make_shortest_path(
        1000 + n_cal, 5, degree=degree, noise=0.5, return_coef=True, random_state=0
    )
    model = ConformalRobustOptimizer(
        Ridge(), GRID, calibration_size=n_cal, delta=DELTA, random_state=0
    ).fit(X, C)
    X_test, C_test = _data(n_test, coef, 1, degree)
    true_mis, true_reg = _true_frontier(model, X_test, C_test)
    best_worst = GRID.cost_range(C_test)
    center_test = model.estimator_.predict(X_test)
    scale_test = model._scale(X_test)
    test_scores = model._scores(C_test - center_test, scale_test)

    fails = {"ours": 0, "ours, Hoeffding-Bentkus regret": 0, "pointwise": 0, "naive": 0}
    gaps = {"ours": [], "ours, Hoeffding-Bentkus regret": []}
    delta_k = DELTA / (2 * model.levels_.size)
    picked = {k: [] for k in ("ours", "mapie_bonf", "mapie_marg", "conformal_l2")}
    for rep in range(n_reps):
        X_cal, C_cal = _data(n_cal, coef, 1000 + rep, degree)
        front = model.calibrate(X_cal, C_cal).frontier_
        mis_pw = binomial_upper_bound(
            np.round(front["miscoverage"] * n_cal), n_cal, DELTA
        )
        reg_pw = hoeffding_bentkus_upper_bound(front["regret"], n_cal, DELTA)
        reg_hb = hoeffding_bentkus_upper_bound(front["regret"], n_cal, delta_k)
        for name, (m, r) in {
            "ours": (front["miscoverage_upper"], front["regret_upper"]),
            "ours, Hoeffding-Bentkus regret": (front["miscoverage_upper"], reg_hb),
            "pointwise": (mis_pw, reg_pw),
            "naive": (front["miscoverage"], front["regret"]),
        }.items():
            fails[name] += bool(np.any(m < true_mis) or np.any(r < true_reg))
        gaps["ours"].append(
            (front["miscoverage_upper"] - true_mis, front["regret_upper"] - true_reg)
        )
        gaps["ours, Hoeffding-Bentkus regret"].append(
            (front["miscoverage_upper"] - true_mis, reg_hb - true_reg)
        )

        model.select(max_miscoverage=ALPHA)
        picked["ours"].append((true_mis[model.level_], true_reg[model.level_]))
        for key, conf in (("mapie_bonf", 1 - ALPHA / 40), ("mapie_marg", 1 - ALPHA)):
            half = _mapie_half_widths(model.estimator_, X_cal, C_cal, conf)
            picked[key].append(_box_policy(model, half, X_test, C_test, best_worst))
        # Standard split-conformal l2 ball at 1 - alpha, fixed a priori.
        cal_scores = np.sort(
            model._scores(C_cal - model.estimator_.predict(X_cal), model._scale(X_cal))
        )
        k = int(np.ceil((n_cal + 1) * (1 - ALPHA))) - 1
        radius = cal_scores[min(k, n_cal - 1)]
        paths = GRID.solve_robust(center_test, radius * scale_test, "l2")
        picked["conformal_l2"].append(
            (
                np.mean(test_scores > radius),
                normalised_regret(GRID, C_test, paths, best_worst).mean(),
            )
        )
    slack = DELTA + 3 * np.sqrt(DELTA * (1 - DELTA) / n_reps)
    validity = [
        {
            "degree": degree,
            "frontier": name,
            "violation rate": fails[name] / n_reps,
            "allowed (delta + 3 sd)": slack,
            "mean gap, miscoverage": (
                float(np.mean([g[0] for g in gaps[name]])) if name in gaps else ""
            ),
            "mean gap, regret": (
                float(np.mean([g[1] for g in gaps[name]])) if name in gaps else ""
            ),
        }
        for name in fails
    ]
    labels = {
        "ours": "frontier, select(max_miscoverage=0.1)",
        "mapie_bonf": "MAPIE box, a priori 1-0.1/40 per edge (joint 0.9)",
        "mapie_marg": "MAPIE box, a priori 0.9 per edge (not joint)",
        "conformal_l2": "split-conformal l2 ball at 0.9, a priori",
    }
    useful = []
    for key, label in labels.items():
        arr = np.array(picked[key])
        useful.append(
            {
                "degree": degree,
                "policy": label,
                "true miscoverage (mean)": float(arr[:, 0].mean()),
                "draws with miscoverage > 0.1": float(np.mean(arr[:, 0] > ALPHA)),
                "true regret (mean)": float(arr[:, 1].mean()),
                "regret / ours": float(
                    arr[:, 1].mean() / np.mean(picked["ours"], 0)[1]
                ),
            }
        )
    useful.append(
        {
            "degree": degree,
            "policy": "nominal (radius 0)",
            "true miscoverage (mean)": float(true_mis[0]),
            "draws with miscoverage > 0.1": 1.0,
            "true regret (mean)": float(true_reg[0]),
            "regret / ours": float(true_reg[0] / np.mean(picked["ours"], 0)[1]),
        }
    )
    return validity, useful


def _portfolio_data(n, seed, n_assets=10, n_features=5):
    """Asset returns: linear in the context plus noise growing with the asset."""
    coef = np.random.default_rng(0).normal(scale=0.1, size=(n_features, n_assets))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    noise = np.linspace(0.05, 1.0, n_assets)
    drift = 0.05 * np.arange(n_assets)
    C = X @ coef + drift + rng.normal(size=(n, n_assets)) * noise
    return X, C


def _allocation_lp(n_variables=10, n_constraints=6, n_features=5):
    """An allocation LP (3 units over 10 activities, 6 resource rows) and its data.

    Costs are linear in the context plus noise with a common component.
    """
    from sklearn_ext.robust_optimization import LinearProblem

    rng = np.random.default_rng(0)
    A_ub = rng.uniform(0, 1, (n_constraints, n_variables))
    problem = LinearProblem(
        A_ub=A_ub,
        b_ub=0.5 * A_ub.sum(1),
        A_eq=np.ones((1, n_variables)),
        b_eq=[0.3 * n_variables],
        bounds=(0, 1),
    )
    coef = rng.normal(size=(n_features, n_variables))

    def make(n, seed):
        r = np.random.default_rng(seed)
        X = r.normal(size=(n, n_features))
        noise = r.normal(size=(n, n_variables)) + 0.5 * r.normal(size=(n, 1))
        return X, X @ coef + 2.0 + noise

    return problem, make


def _pyepo_regret(problem, C, W):
    """PyEPO's normalised regret: sum of regrets over the sum of |optimal cost|."""
    best = problem.cost(C, problem.solve(C))
    return float(np.sum(problem.cost(C, W) - best) / np.sum(np.abs(best)))


def frontier_draws(name, problem, make, n_cal, n_draws, n_pool=20_000, n_fine=100):
    """The three bound options over calibration draws from a fixed pool."""
    from scipy.stats import binom

    X, C = make(1000 + n_cal, 0)
    model = ConformalRobustOptimizer(
        Ridge(), problem, calibration_size=n_cal, delta=DELTA, random_state=0
    ).fit(X, C)
    Xp, Cp = make(n_pool, 1)
    center, scale = model.estimator_.predict(Xp), model._scale(Xp)
    scores = model._scores(Cp - center, scale)
    levels = model.levels_
    mis = scores[:, None] > levels[None, :]
    best, worst = problem.cost_range(Cp)
    scale_pyepo = np.sum(np.abs(best))
    reg = np.empty(mis.shape)
    pyepo_levels = np.empty(levels.size)
    for k, r in enumerate(levels):  # one robust solve per level serves both
        W = problem.solve_robust(center, r * scale, model.norm)
        reg[:, k] = normalised_regret(problem, Cp, W, (best, worst))
        pyepo_levels[k] = np.sum(problem.cost(Cp, W) - best) / scale_pyepo
    true_mis, true_reg = mis.mean(0), reg.mean(0)

    def pyepo_at(radius):
        W = problem.solve_robust(center, radius * scale, model.norm)
        return float(np.sum(problem.cost(Cp, W) - best) / scale_pyepo)

    fine = np.unique(np.quantile(scores, np.linspace(0.5, 0.999, n_fine)))
    pyepo_fine = np.array([pyepo_at(r) for r in fine])
    in_band = true_mis <= 0.5
    rng = np.random.default_rng(0)
    options = ("ltt-bonferroni", "simultaneous", "fixed-sequence")
    out = {
        b: {"fail": 0, "gap_band": [], "gap_all": [], "gap_reg": [], "pick": []}
        for b in options
    }
    balls = {"pac": [], "marginal": []}
    uppers = {b: ([], []) for b in options}
    for _ in range(n_draws):
        idx = rng.integers(n_pool, size=n_cal)
        for b in options:
            model.set_params(bound=b)
            front = model._frontier_from(mis[idx], reg[idx], scores[idx]).frontier_
            m_up, r_up = front["miscoverage_upper"], front["regret_upper"]
            uppers[b][0].append(m_up)
            uppers[b][1].append(r_up)
            rec = out[b]
            rec["fail"] += bool(np.any(m_up < true_mis) or np.any(r_up < true_reg))
            rec["gap_band"].append(float(np.mean((m_up - true_mis)[in_band])))
            rec["gap_all"].append(float(np.mean(m_up - true_mis)))
            rec["gap_reg"].append(float(np.mean(r_up - true_reg)))
            try:
                k = model.select(max_miscoverage=ALPHA).level_
                r = model.radius_
                if r == levels[k]:
                    rec["pick"].append((true_mis[k], pyepo_levels[k]))
                else:  # fixed-sequence at the edge of the certified radii
                    rec["pick"].append(
                        (
                            float(np.mean(scores > r)),
                            float(np.interp(r, fine, pyepo_fine)),
                        )
                    )
            except ValueError:
                rec["pick"].append((np.nan, np.nan))
        cal = np.sort(scores[idx])
        misses = np.flatnonzero(binom.cdf(np.arange(n_cal), n_cal, ALPHA) <= DELTA)
        pac = cal[n_cal - 1 - misses[-1]] if misses.size else np.inf
        marginal = cal[min(int(np.ceil((n_cal + 1) * (1 - ALPHA))) - 1, n_cal - 1)]
        for key, radius in (("pac", pac), ("marginal", marginal)):
            balls[key].append(
                (
                    float(np.mean(scores > radius)),
                    float(np.interp(radius, fine, pyepo_fine)),
                )
            )
    # Per level: the default bounds minus LTT-Bonferroni's, over the draws.
    per_level = []
    d_mis = np.array(uppers["simultaneous"][0]) - np.array(uppers["ltt-bonferroni"][0])
    d_reg = np.array(uppers["simultaneous"][1]) - np.array(uppers["ltt-bonferroni"][1])
    for k in range(levels.size):
        per_level.append(
            {
                "problem": name,
                "n_cal": n_cal,
                "level": k,
                "true miscoverage": float(true_mis[k]),
                "miscoverage bound - LTT, mean": float(d_mis[:, k].mean()),
                "miscoverage bound - LTT, max": float(d_mis[:, k].max()),
                "regret bound - LTT, mean": float(d_reg[:, k].mean()),
                "regret bound - LTT, max": float(d_reg[:, k].max()),
            }
        )
    slack = DELTA + 3 * np.sqrt(DELTA * (1 - DELTA) / n_draws)
    base_gap = np.array(out["ltt-bonferroni"]["gap_band"])
    pac = np.array(balls["pac"])
    rows = []
    for b in options:
        rec = out[b]
        pick = np.array(rec["pick"])
        ok = ~np.isnan(pick[:, 0])
        gap = np.array(rec["gap_band"])
        d, lo, hi = paired_interval(gap, base_gap)
        dr, rlo, rhi = paired_interval(pick[ok, 1], pac[ok, 1])
        dg, glo, ghi = paired_interval(rec["gap_reg"], out["ltt-bonferroni"]["gap_reg"])
        rows.append(
            {
                "problem": name,
                "n_cal": n_cal,
                "policy": f'frontier, bound="{b}"',
                "violation rate": rec["fail"] / n_draws,
                "allowed": round(slack, 3),
                "gap, miscoverage (levels with alpha <= 0.5)": float(gap.mean()),
                "gap vs ltt-bonferroni [95% CI]": (
                    "-" if b == "ltt-bonferroni" else f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                ),
                "gap, miscoverage (all levels)": float(np.mean(rec["gap_all"])),
                "gap, regret": float(np.mean(rec["gap_reg"])),
                "regret gap vs ltt-bonferroni [95% CI]": (
                    "-"
                    if b == "ltt-bonferroni"
                    else f"{dg:+.4f} [{glo:+.4f}, {ghi:+.4f}]"
                ),
                "select(0.1) succeeds": float(ok.mean()),
                "true miscoverage": float(np.nanmean(pick[:, 0])),
                "draws with miscoverage > 0.1": float(np.mean(pick[ok, 0] > ALPHA)),
                "regret (PyEPO)": float(np.nanmean(pick[:, 1])),
                "regret - PAC ball [95% CI]": f"{dr:+.4f} [{rlo:+.4f}, {rhi:+.4f}]",
            }
        )
    for key, label in (
        ("pac", "l2 ball a priori, P(miscoverage <= 0.1) >= 0.9"),
        ("marginal", "l2 ball a priori, E[miscoverage] <= 0.1"),
    ):
        arr = np.array(balls[key])
        rows.append(
            {
                "problem": name,
                "n_cal": n_cal,
                "policy": label,
                "violation rate": "",
                "allowed": "",
                "gap, miscoverage (levels with alpha <= 0.5)": "",
                "gap vs ltt-bonferroni [95% CI]": "",
                "gap, miscoverage (all levels)": "",
                "gap, regret": "",
                "regret gap vs ltt-bonferroni [95% CI]": "",
                "select(0.1) succeeds": "",
                "true miscoverage": float(arr[:, 0].mean()),
                "draws with miscoverage > 0.1": float(np.mean(arr[:, 0] > ALPHA)),
                "regret (PyEPO)": float(arr[:, 1].mean()),
                "regret - PAC ball [95% CI]": "",
            }
        )
    return rows, per_level


def _write_frontier(quick):
    n_draws = 20 if quick else 500
    problems = [
        (
            f"shortest path, degree {deg}",
            GRID,
            lambda n, seed, deg=deg: _data(n, _SP_COEF, seed, deg),
        )
        for deg in ((2,) if quick else (2, 4))
    ]
    problems.append(("portfolio, 10 assets", PortfolioProblem(10), _portfolio_data))
    problems.append(("LP, 10 variables (batched interior point)", *_allocation_lp()))
    rows, per_level = [], []
    for name, problem, make in problems:
        # The LP's robust decisions cost most: a smaller pool and fine grid.
        lp = name.startswith("LP")
        n_pool = 2000 if quick else (4000 if lp else 20_000)
        for n_cal in (500, 100):
            start = time.perf_counter()
            summary, levels = frontier_draws(
                name, problem, make, n_cal, n_draws, n_pool, 40 if lp else 100
            )
            rows += summary
            per_level += levels
            print(
                f"{name}, n_cal {n_cal}: {time.perf_counter() - start:.1f} s",
                flush=True,
            )
    write_results(
        "conformal_robust_frontier",
        rows,
        list(rows[0]),
        title=f"The sharper frontier: three certifications over {n_draws} "
        "calibration draws (delta = 0.1, 50 levels, l2 sets)",
        notes="Violation: some level's bound below the truth (the pool's mean). "
        "Gaps are bound minus truth, averaged over levels and draws; paired "
        "differences over draws against LTT-Bonferroni. At target 0.1 the "
        "frontier picks select(max_miscoverage=0.1); regret is PyEPO's "
        "normalised regret on the pool; the PAC ball has the same guarantee as "
        "the frontier's choice, the marginal ball a weaker one. The fixed-sequence "
        "choice certifies the PAC ball's radius by construction (its regret "
        "differs from the ball's only by the interpolation on the fine grid); "
        "the default choice's comparison with the ball is not by construction.",
    )
    write_results(
        "conformal_robust_band_levels",
        per_level,
        list(per_level[0]),
        title=f'Default ("simultaneous") bounds minus LTT-Bonferroni\'s, per level, '
        f"over {n_draws} calibration draws",
        notes="Negative: the default is tighter. The maximum over draws is at "
        "most 0 at every level (never looser), including the levels whose true "
        "miscoverage is above 1/2.",
    )


def speed(n_contexts, n_cvxpy):
    import cvxpy as cp

    X, C, coef = make_shortest_path(3000, 5, degree=2, return_coef=True, random_state=0)
    model = ConformalRobustOptimizer(Ridge(), GRID, random_state=0).fit(X, C)
    model.select(max_miscoverage=ALPHA)
    X_new, _ = _data(n_contexts, coef, 5, 2)
    center = model.estimator_.predict(X_new)
    half = model.radius_ * model._scale(X_new)

    n_nodes = 25
    incidence = np.zeros((n_nodes, GRID.n_params))
    for e, (a, b) in enumerate(GRID.edges_):
        incidence[a, e], incidence[b, e] = -1.0, 1.0
    supply = np.zeros(n_nodes)
    supply[0], supply[-1] = -1.0, 1.0
    rows = []
    for norm in ("linf", "l2"):
        start = time.perf_counter()
        ours = GRID.solve_robust(center, half, norm)
        t_ours = time.perf_counter() - start
        w = cp.Variable(GRID.n_params)
        c_par = cp.Parameter(GRID.n_params)
        h_par = cp.Parameter(GRID.n_params, nonneg=True)
        if norm == "linf":
            objective = (c_par + h_par) @ w
        else:
            objective = c_par @ w + cp.norm(cp.multiply(h_par, w), 2)
        prob = cp.Problem(
            cp.Minimize(objective), [incidence @ w == supply, w >= 0, w <= 1]
        )
        m = min(n_cvxpy, n_contexts)
        agree = 0
        start = time.perf_counter()
        solver = cp.HIGHS if norm == "linf" else cp.CLARABEL
        for i in range(m):
            c_par.value, h_par.value = center[i], half[i]
            prob.solve(solver=solver)
            agree += np.array_equal(np.round(w.value), ours[i]) and np.allclose(
                w.value, np.round(w.value), atol=1e-5
            )
        t_cvx = (time.perf_counter() - start) * n_contexts / m
        rows.append(
            {
                "set": "box (LP, exact)" if norm == "linf" else "l2 (SOCP relaxation)",
                "contexts": n_contexts,
                "sklearn_ext s": t_ours,
                "cvxpy s (one at a time)": t_cvx,
                "cvxpy contexts timed": m,
                "speed-up": t_cvx / t_ours,
                "cvxpy integral and equal": agree / m,
            }
        )
    return rows


def _stacked_clarabel(problem, C, H):
    """All rows' l2-robust programs as one block-diagonal SOCP, in Clarabel.

    Clarabel is cvxpy's default conic solver, called here without cvxpy:
    per row the variables ``(w, t)``, the rows of ``A_eq`` (zero cone), of
    ``A_ub`` and the bounds (nonnegative cone) and the cone ``(t, h * w)``.
    """
    import clarabel
    import scipy.sparse as sp

    R, n = C.shape
    G = [problem.A_ub] if problem.A_ub is not None else []
    h = [problem.b_ub] if problem.A_ub is not None else []
    up, low = np.isfinite(problem.upper_), np.isfinite(problem.lower_)
    G += [np.eye(n)[up], -np.eye(n)[low]]
    h += [problem.upper_[up], -problem.lower_[low]]
    G = np.hstack([np.vstack(G), np.zeros((sum(len(x) for x in h), 1))])
    h = np.concatenate(h)
    E = np.hstack([problem.A_eq, np.zeros((problem.A_eq.shape[0], 1))])
    eye = sp.identity(R, format="csr")
    blocks = np.arange(R)[:, None]
    rows = blocks * (n + 1) + np.arange(n + 1)
    cols = blocks * (n + 1) + np.r_[n, np.arange(n)]
    cone = sp.csr_matrix(
        (np.hstack([-np.ones((R, 1)), -H]).ravel(), (rows.ravel(), cols.ravel())),
        shape=(R * (n + 1), R * (n + 1)),
    )
    A = sp.vstack(
        [sp.kron(eye, sp.csr_matrix(E)), sp.kron(eye, sp.csr_matrix(G)), cone]
    ).tocsc()
    b = np.concatenate([np.tile(problem.b_eq, R), np.tile(h, R), np.zeros(R * (n + 1))])
    q = np.hstack([C, np.ones((R, 1))]).ravel()
    cones = [
        clarabel.ZeroConeT(R * E.shape[0]),
        clarabel.NonnegativeConeT(R * G.shape[0]),
    ] + [clarabel.SecondOrderConeT(n + 1)] * R
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solution = clarabel.DefaultSolver(
        sp.csc_matrix((R * (n + 1), R * (n + 1))), q, A, b, cones, settings
    ).solve()
    return np.asarray(solution.x).reshape(R, n + 1)[:, :n], str(solution.status)


def _random_allocation_lp(seed, n_variables=10, n_constraints=6, solver="primal-dual"):
    from sklearn_ext.robust_optimization import LinearProblem

    rng = np.random.default_rng(seed)
    A_ub = rng.uniform(0, 1, (n_constraints, n_variables))
    return LinearProblem(
        A_ub=A_ub,
        b_ub=0.5 * A_ub.sum(1),
        A_eq=np.ones((1, n_variables)),
        b_eq=[0.3 * n_variables],
        bounds=(0, 1),
        l2_solver=solver,
    )


def lp_speed(n_seeds=5, n_cal=450, n_levels=50, n_cvxpy=1000, n_variables=10):
    """l2-robust LP decisions at the size of a fit, four ways, over seeds.

    Per seed: a random bounded polytope (6 inequalities, one equality, bounds
    [0, 1], 10 variables) and the robust programs of a calibration set:
    ``n_cal`` centres and half-widths, each at ``n_levels`` radii from 0 to 3
    (``n_cal * n_levels`` rows, as ``fit`` solves them). Timed: the default
    batched primal-dual path, the earlier batched barrier
    (``l2_solver="barrier"``), the stacked SOCP in Clarabel without cvxpy,
    and per-row cvxpy/Clarabel (a compiled parametrised problem; ``n_cvxpy``
    random rows timed, extrapolated linearly). Then one ``fit`` of the
    optimiser on this LP with ``n_cal`` calibration rows and ``n_levels``
    levels (a fresh data set per seed; the first fit of the process also
    simulates the band, once per calibration size).
    """
    import cvxpy as cp

    rows = []
    for seed in range(n_seeds):
        problem = _random_allocation_lp(seed, n_variables)
        barrier = _random_allocation_lp(seed, n_variables, solver="barrier")
        rng = np.random.default_rng(100 + seed)
        centre = rng.normal(size=(n_cal, n_variables))
        scale = rng.uniform(0.1, 1.0, size=centre.shape)
        levels = np.linspace(0.0, 3.0, n_levels)
        C = np.tile(centre, (n_levels, 1))
        H = (levels[:, None, None] * scale[None]).reshape(-1, n_variables)
        times = {}
        for name, solve, args in (
            ("pd", problem.solve_robust, (C, H, "l2")),
            ("barrier", barrier.solve_robust, (C, H, "l2")),
            ("clarabel", _stacked_clarabel, (problem, C, H)),
        ):
            start = time.perf_counter()
            out = solve(*args)
            times[name] = time.perf_counter() - start
            if name == "pd":
                W = out
            elif name == "clarabel":
                W_clarabel, status = out
        value = problem.cost(C, W) + np.linalg.norm(H * W, axis=1)
        w = cp.Variable(n_variables)
        c_par = cp.Parameter(n_variables)
        h_par = cp.Parameter(n_variables, nonneg=True)
        prob = cp.Problem(
            cp.Minimize(c_par @ w + cp.norm(cp.multiply(h_par, w), 2)),
            [
                problem.A_ub @ w <= problem.b_ub,
                problem.A_eq @ w == problem.b_eq,
                w >= 0,
                w <= 1,
            ],
        )
        timed = rng.choice(C.shape[0], size=min(n_cvxpy, C.shape[0]), replace=False)
        gap = decision_gap = 0.0
        start = time.perf_counter()
        for i in timed:
            c_par.value, h_par.value = C[i], H[i]
            ref = prob.solve(solver=cp.CLARABEL)
            gap = max(gap, abs(value[i] - ref) / max(1.0, abs(ref)))
            if H[i].min() >= 0.1:  # strictly convex along the polytope
                decision_gap = max(decision_gap, np.abs(W[i] - w.value).max())
        times["cvxpy"] = (time.perf_counter() - start) * C.shape[0] / timed.size
        clarabel_value = problem.cost(C, W_clarabel) + np.linalg.norm(
            H * W_clarabel, axis=1
        )
        X = rng.normal(size=(1500, 5))
        Y = X @ rng.normal(size=(5, n_variables)) + 2.0
        Y = Y + rng.normal(size=Y.shape)
        model = ConformalRobustOptimizer(
            Ridge(), problem, calibration_size=n_cal, levels=n_levels, random_state=0
        )
        start = time.perf_counter()
        model.fit(X, Y)
        t_fit = time.perf_counter() - start
        rows.append(
            {
                "seed": seed,
                "rows": C.shape[0],
                "primal-dual s": times["pd"],
                "barrier s": times["barrier"],
                "stacked Clarabel s": times["clarabel"],
                "per-row cvxpy s": times["cvxpy"],
                "cvxpy rows timed": int(timed.size),
                "speed-up vs per-row cvxpy": times["cvxpy"] / times["pd"],
                "speed-up vs barrier": times["barrier"] / times["pd"],
                "max relative objective gap vs cvxpy": gap,
                "max decision gap vs cvxpy": decision_gap,
                "max objective gap vs stacked Clarabel": float(
                    np.max(np.abs(value - clarabel_value) / np.maximum(1.0, abs(value)))
                ),
                "Clarabel status": status,
                "fit s": t_fit,
            }
        )
    return rows


def _ratio_interval(numerator, denominator):
    """Geometric mean ratio and its 95% interval (paired over seeds, in logs)."""
    d, lo, hi = paired_interval(np.log(numerator), np.log(denominator))
    return f"{np.exp(d):.1f} [{np.exp(lo):.1f}, {np.exp(hi):.1f}]"


def _write_lp_speed(n_seeds, n_cvxpy):
    rows = lp_speed(n_seeds=n_seeds, n_cvxpy=n_cvxpy)
    col = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    fit = col["fit s"]
    _, lo, hi = paired_interval(fit, np.zeros_like(fit))
    summary = dict.fromkeys(rows[0], "") | {
        "seed": f"all {len(rows)}",
        "rows": rows[0]["rows"],
        "primal-dual s": float(col["primal-dual s"].mean()),
        "barrier s": float(col["barrier s"].mean()),
        "stacked Clarabel s": float(col["stacked Clarabel s"].mean()),
        "per-row cvxpy s": float(col["per-row cvxpy s"].mean()),
        "speed-up vs per-row cvxpy": _ratio_interval(
            col["per-row cvxpy s"], col["primal-dual s"]
        ),
        "speed-up vs barrier": _ratio_interval(col["barrier s"], col["primal-dual s"]),
        "max relative objective gap vs cvxpy": float(
            col["max relative objective gap vs cvxpy"].max()
        ),
        "max decision gap vs cvxpy": float(col["max decision gap vs cvxpy"].max()),
        "max objective gap vs stacked Clarabel": float(
            col["max objective gap vs stacked Clarabel"].max()
        ),
        "fit s": f"{fit.mean():.2f} [{lo:.2f}, {hi:.2f}], max {fit.max():.2f}",
    }
    rows.append(summary)
    write_results(
        "conformal_robust_lp_speed",
        rows,
        list(rows[0]),
        title="l2-robust LP decisions at 450 calibration rows x 50 levels: the "
        "batched primal-dual path against the barrier, a stacked Clarabel SOCP "
        "and per-row cvxpy (targets: fit <= 1 s, >= 50x per-row cvxpy)",
        notes="Per seed a random polytope and 22,500 robust programs; the last "
        "row: means, geometric-mean speed-ups with 95% t intervals paired over "
        "the seeds (in logs), and the fit's mean with its 95% interval. "
        "Per-row cvxpy solves a compiled parametrised problem with Clarabel; its "
        "time is extrapolated linearly from the rows timed. The first fit of "
        "the process (seed 0) includes the one-time simulation of the band.",
    )


def band_allocations(n_cals=(50, 100, 200, 300, 450, 500, 1000), n_levels=50):
    """The default frontier's error budget, and the calibration sizes quoted
    in the user guide: computed, not measured."""
    from scipy.stats import binom

    from sklearn_ext.robust_optimization._bounds import (
        _BAND_HIGH,
        _band_delta,
        _ltt_floor,
        _per_level_delta,
        band_allocation,
        band_range,
        min_calibration_size,
    )

    rows = []
    for n in n_cals:
        level = _per_level_delta(DELTA, n_levels, True)
        share = band_allocation(n, n_levels, DELTA, True)
        low, high = band_range(n, _ltt_floor(n, level), _BAND_HIGH)
        band = _band_delta(n, share * n_levels * level, low, high)
        full = _band_delta(n, n_levels * level, low, high)
        # Fixed-sequence at target 0.1: certifies something iff some count m
        # has P(Binomial(n, 0.1) <= m) <= delta.
        fixed = bool(binom.cdf(0, n, ALPHA) <= DELTA)
        rows.append(
            {
                "n_cal": n,
                "levels": n_levels,
                "LTT-Bonferroni level delta/(2K)": level,
                "band share": share,
                "band level (all levels certified)": band,
                "band level, whole budget to the band": full,
                "whole-budget band / LTT level": full / level,
                "regret level (all levels certified)": level
                + (1 - share) * n_levels * level / n_levels,
                "min calibration size": min_calibration_size(DELTA, n_levels, True),
                "fixed-sequence certifies 0.1": fixed,
            }
        )
    smallest = int(np.ceil(np.log(DELTA) / np.log(1 - ALPHA)))
    return rows, smallest


def _write_band_allocations():
    rows, smallest = band_allocations()
    for r in rows:
        r["smallest n for fixed-sequence at 0.1"] = smallest
    write_results(
        "conformal_robust_allocation",
        rows,
        list(rows[0]),
        title="The default frontier's budget at delta = 0.1, 50 levels "
        "(computed from n, K and delta alone)",
        notes="Band levels are the simulated per-count Clopper-Pearson levels "
        "(4000 seeded simulations); 'all levels certified' is the largest "
        "budget the default can free. The band is used only when its level "
        "is at least LTT-Bonferroni's.",
    )


# --- the claims ledger ----------------------------------------------------------

_BOUNDS = {
    "ltt": 'frontier, bound="ltt-bonferroni"',
    "simultaneous": 'frontier, bound="simultaneous"',
    "fixed": 'frontier, bound="fixed-sequence"',
    "marginal_ball": "l2 ball a priori, E[miscoverage] <= 0.1",
}


def _over(column, pick, policy=None, n_cal=None, sign=1.0, transform=None):
    """``pick`` over the frontier rows (of ``policy``, at ``n_cal``) of a column."""

    def compute(rows):
        values = []
        for r in rows:
            if policy is None and not r["policy"].startswith("frontier"):
                continue
            if policy is not None and r["policy"] != _BOUNDS[policy]:
                continue
            if n_cal is not None and r["n_cal"] != n_cal:
                continue
            value = r[column]
            if isinstance(value, str):
                value = parse_cell(value)[0]
            values.append(sign * value if transform is None else transform(value))
        return float(pick(values))

    return compute


def _cell(problem, n_cal, policy, column, name, fmt=None):
    return Claim(
        name,
        {"problem": problem, "n_cal": n_cal, "policy": _BOUNDS[policy]},
        column,
        fmt=fmt,
    )


def _gap_difference(rows):
    """Simultaneous minus LTT-Bonferroni, mean miscoverage gap over all levels
    (shortest path, degree 2, 500 samples)."""
    cells = {
        r["policy"]: r["gap, miscoverage (all levels)"]
        for r in rows
        if r["problem"] == "shortest path, degree 2" and r["n_cal"] == 500
    }
    return cells[_BOUNDS["simultaneous"]] - cells[_BOUNDS["ltt"]]


def _regret_gap_ratio(pick):
    def compute(rows):
        gap = {
            (r["degree"], r["frontier"]): r["mean gap, regret"]
            for r in rows
            if r["frontier"].startswith("ours")
        }
        degrees = sorted({d for d, _ in gap})
        return float(
            pick(
                [
                    gap[(d, "ours, Hoeffding-Bentkus regret")] / gap[(d, "ours")]
                    for d in degrees
                ]
            )
        )

    return compute


_SP2, _SP4 = "shortest path, degree 2", "shortest path, degree 4"
_LP = "LP, 10 variables (batched interior point)"
_GAP = "gap, miscoverage (levels with alpha <= 0.5)"
_GAP_ALL = "gap, miscoverage (all levels)"
_MISSES = "draws with miscoverage > 0.1"
_PROTOCOL = {
    "ours": "ConformalRobustOptimizer(Ridge(), problem, delta=0.1) over its default "
    "grid of 50 levels, each bound option; select(max_miscoverage=0.1)",
    "peers": "the split-conformal l2 ball of the same shape with its radius fixed "
    "a priori (training-conditional and marginal guarantees); LTT-Bonferroni is "
    "the baseline of the bounds; every policy on the same calibration draws",
}

LEDGER = {
    "conformal_robust_frontier": Ledger(
        "ConformalRobustOptimizer",
        "shortest path 5x5 (degree 2 and 4), a 10-asset portfolio and a "
        "10-variable allocation LP; Ridge on 1000 training samples; calibration "
        "draws of 500 and 100 samples from a pool of 20,000 (4,000 for the LP) "
        "whose means are the truth",
        "500 calibration draws per setting",
        _PROTOCOL,
        [
            Claim(
                "violation_min",
                0,
                "violation rate",
                fmt=".1%",
                compute=_over("violation rate", min),
                metric="lowest rate of draws with some bound below the truth",
            ),
            Claim(
                "violation_max",
                0,
                "violation rate",
                fmt=".1%",
                compute=_over("violation rate", max),
                metric="highest rate of draws with some bound below the truth",
            ),
            Claim(
                "allowed",
                0,
                "allowed",
                fmt=".0%",
                metric="violation rate allowed (delta + 3 standard errors)",
            ),
            Claim(
                "tighter_500_min",
                0,
                "gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "gap vs ltt-bonferroni [95% CI]", min, "simultaneous", 500, -1.0
                ),
                metric="miscoverage gap, LTT-Bonferroni minus simultaneous, "
                "smallest setting (500 samples)",
            ),
            Claim(
                "tighter_500_max",
                0,
                "gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "gap vs ltt-bonferroni [95% CI]", max, "simultaneous", 500, -1.0
                ),
                metric="miscoverage gap, LTT-Bonferroni minus simultaneous, "
                "largest setting (500 samples)",
            ),
            Claim(
                "tighter_100_min",
                0,
                "gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "gap vs ltt-bonferroni [95% CI]", min, "simultaneous", 100, -1.0
                ),
                metric="miscoverage gap, LTT-Bonferroni minus simultaneous, "
                "smallest setting (100 samples)",
            ),
            Claim(
                "tighter_100_max",
                0,
                "gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "gap vs ltt-bonferroni [95% CI]", max, "simultaneous", 100, -1.0
                ),
                metric="miscoverage gap, LTT-Bonferroni minus simultaneous, "
                "largest setting (100 samples)",
            ),
            _cell(_SP2, 500, "simultaneous", _GAP, "sp2_gap_simultaneous", ".4f"),
            _cell(_SP2, 500, "ltt", _GAP, "sp2_gap_ltt", ".4f"),
            _cell(
                _SP2, 500, "simultaneous", _GAP_ALL, "sp2_gap_all_simultaneous", ".4f"
            ),
            _cell(_SP2, 500, "ltt", _GAP_ALL, "sp2_gap_all_ltt", ".4f"),
            Claim(
                "sp2_gap_all_looser",
                0,
                _GAP_ALL,
                fmt=".3f",
                compute=_gap_difference,
                metric="miscoverage gap over all levels, simultaneous minus "
                "LTT-Bonferroni (shortest path, degree 2, 500 samples)",
            ),
            Claim(
                "fixed_vs_ball_min",
                0,
                "regret - PAC ball [95% CI]",
                fmt="+.4f",
                compute=_over("regret - PAC ball [95% CI]", min, "fixed"),
                metric="regret of the fixed-sequence choice minus the PAC "
                "ball's, smallest setting",
            ),
            Claim(
                "fixed_vs_ball_max",
                0,
                "regret - PAC ball [95% CI]",
                fmt="+.4f",
                compute=_over("regret - PAC ball [95% CI]", max, "fixed"),
                metric="regret of the fixed-sequence choice minus the PAC "
                "ball's, largest setting",
            ),
            Claim(
                "default_vs_ball_min",
                0,
                "regret - PAC ball [95% CI]",
                fmt="+.4f",
                compute=_over("regret - PAC ball [95% CI]", min, "simultaneous"),
                metric="regret of the default choice minus the PAC ball's, "
                "smallest setting (not by construction)",
            ),
            Claim(
                "default_vs_ball_max",
                0,
                "regret - PAC ball [95% CI]",
                fmt="+.4f",
                compute=_over("regret - PAC ball [95% CI]", max, "simultaneous"),
                metric="regret of the default choice minus the PAC ball's, "
                "largest setting (not by construction)",
            ),
            Claim(
                "regret_tighter_500_min",
                0,
                "regret gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "regret gap vs ltt-bonferroni [95% CI]",
                    min,
                    "simultaneous",
                    500,
                    -1.0,
                ),
                metric="regret gap, LTT-Bonferroni minus default, smallest "
                "setting (500 samples)",
            ),
            Claim(
                "regret_tighter_500_max",
                0,
                "regret gap vs ltt-bonferroni [95% CI]",
                fmt=".4f",
                compute=_over(
                    "regret gap vs ltt-bonferroni [95% CI]",
                    max,
                    "simultaneous",
                    500,
                    -1.0,
                ),
                metric="regret gap, LTT-Bonferroni minus default, largest "
                "setting (500 samples)",
            ),
            Claim(
                "fixed_misses_min",
                0,
                _MISSES,
                fmt=".1%",
                compute=_over(_MISSES, min, "fixed"),
            ),
            Claim(
                "fixed_misses_max",
                0,
                _MISSES,
                fmt=".1%",
                compute=_over(_MISSES, max, "fixed"),
            ),
            Claim(
                "marginal_misses_min",
                0,
                _MISSES,
                fmt=".1%",
                compute=_over(_MISSES, min, "marginal_ball"),
            ),
            Claim(
                "marginal_misses_max",
                0,
                _MISSES,
                fmt=".1%",
                compute=_over(_MISSES, max, "marginal_ball"),
            ),
            Claim(
                "select_simultaneous_100",
                0,
                "select(0.1) succeeds",
                fmt=".0%",
                compute=_over("select(0.1) succeeds", min, "simultaneous", 100),
                metric="lowest share of draws where select(max_miscoverage=0.1) "
                "succeeds, default bound, 100 samples",
            ),
            Claim(
                "select_ltt_fails_100",
                0,
                "select(0.1) succeeds",
                fmt=".1%",
                compute=_over(
                    "select(0.1) succeeds", max, "ltt", 100, transform=lambda v: 1.0 - v
                ),
                metric="highest share of draws where select(max_miscoverage=0.1) "
                "fails, LTT-Bonferroni, 100 samples",
            ),
        ]
        + [
            _cell(problem, n_cal, policy, "regret (PyEPO)", f"{key}_{n_cal}_{policy}")
            for key, problem in (("sp4", _SP4), ("lp", _LP))
            for n_cal in (500, 100)
            for policy in ("ltt", "simultaneous", "fixed")
        ],
    ),
    "conformal_robust_validity": Ledger(
        "ConformalRobustOptimizer",
        "shortest path 5x5 of degree 1, 2 and 4 (Ridge, 1000 training samples); "
        "calibration draws of 500 fresh samples; the truth from 1e5 fresh samples",
        "200 calibration draws per degree",
        {
            "ours": "ConformalRobustOptimizer at its defaults (delta=0.1, 50 levels, "
            "l2 sets), betting and Hoeffding-Bentkus regret bounds",
            "peers": "pointwise Clopper-Pearson and Hoeffding-Bentkus bounds "
            "(no correction), the naive empirical frontier",
        },
        [
            Claim(
                "betting_closer_min",
                0,
                "mean gap, regret",
                fmt=".1f",
                compute=_regret_gap_ratio(min),
                metric="Hoeffding-Bentkus regret gap over the betting bound's, "
                "smallest over degrees",
            ),
            Claim(
                "betting_closer_max",
                0,
                "mean gap, regret",
                fmt=".1f",
                compute=_regret_gap_ratio(max),
                metric="Hoeffding-Bentkus regret gap over the betting bound's, "
                "largest over degrees",
            ),
        ],
    ),
    "conformal_robust_usefulness": Ledger(
        "ConformalRobustOptimizer",
        "shortest path 5x5 of degree 1, 2 and 4 (Ridge, 1000 training samples); "
        "calibration draws of 500 fresh samples; the truth from 1e5 fresh samples",
        "200 calibration draws per degree",
        {
            "ours": "ConformalRobustOptimizer at its defaults, "
            "select(max_miscoverage=0.1)",
            "peers": "MAPIE split-conformal boxes fixed a priori (Bonferroni over "
            "the edges, and per edge), the split-conformal l2 ball, the nominal "
            "policy; same draws",
        },
        [],
    ),
    "conformal_robust_speed": Ledger(
        "ConformalRobustOptimizer",
        "shortest path 5x5 (degree 2), robust decisions for 1e4 contexts",
        "one run",
        {
            "ours": "ShortestPathProblem.solve_robust, one batched call",
            "peers": "cvxpy with a compiled parametrised problem per context (HiGHS "
            "for the box LP, Clarabel for the l2 SOCP relaxation), 1000 timed and "
            "extrapolated",
        },
        [],
    ),
    "conformal_robust_lp_speed": Ledger(
        "ConformalRobustOptimizer",
        "random bounded polytopes of 10 variables (6 inequalities, one equality, "
        "bounds [0, 1]); per seed 450 calibration rows x 50 levels = 22,500 "
        "l2-robust programs, and one fit of that size",
        "5 seeds",
        {
            "ours": "LinearProblem.solve_robust(..., 'l2'), the batched primal-dual "
            "interior point (default), one call; a fit with 450 calibration rows "
            "and 50 levels",
            "peers": "the earlier batched barrier (l2_solver='barrier'), the "
            "stacked SOCP in Clarabel called directly, and cvxpy/Clarabel with a "
            "compiled parametrised problem per row (1000 rows timed, extrapolated)",
        },
        [
            Claim("pd_seconds", {"seed": "all 5"}, "primal-dual s", fmt=".2f"),
            Claim("barrier_seconds", {"seed": "all 5"}, "barrier s", fmt=".2f"),
            Claim(
                "clarabel_seconds", {"seed": "all 5"}, "stacked Clarabel s", fmt=".1f"
            ),
            Claim("cvxpy_seconds", {"seed": "all 5"}, "per-row cvxpy s", fmt=".1f"),
            Claim("speed_up", {"seed": "all 5"}, "speed-up vs per-row cvxpy"),
            Claim("speed_up_barrier", {"seed": "all 5"}, "speed-up vs barrier"),
            Claim(
                "max_gap",
                {"seed": "all 5"},
                "max relative objective gap vs cvxpy",
                fmt=".1e",
            ),
            Claim("fit_seconds", {"seed": "all 5"}, "fit s"),
        ],
    ),
    "conformal_robust_band_levels": Ledger(
        "ConformalRobustOptimizer",
        "the four problems of the frontier benchmark, per level of the grid",
        "500 calibration draws per setting",
        _PROTOCOL,
        [
            Claim(
                "never_looser_mis",
                0,
                "miscoverage bound - LTT, max",
                fmt=".1e",
                compute=lambda rows: max(
                    r["miscoverage bound - LTT, max"] for r in rows
                ),
                metric="largest excess of a default miscoverage bound over "
                "LTT-Bonferroni's, any level, draw and setting",
            ),
            Claim(
                "never_looser_reg",
                0,
                "regret bound - LTT, max",
                fmt=".1e",
                compute=lambda rows: max(r["regret bound - LTT, max"] for r in rows),
                metric="largest excess of a default regret bound over "
                "LTT-Bonferroni's, any level, draw and setting",
            ),
            Claim(
                "above_half_mis_mean",
                0,
                "miscoverage bound - LTT, mean",
                fmt="+.4f",
                compute=lambda rows: float(
                    np.mean(
                        [
                            r["miscoverage bound - LTT, mean"]
                            for r in rows
                            if r["true miscoverage"] > 0.5
                        ]
                    )
                ),
                metric="mean difference on levels with true miscoverage above 1/2",
            ),
        ],
    ),
    "conformal_robust_allocation": Ledger(
        "ConformalRobustOptimizer",
        "the default frontier's budget at delta = 0.1 and 50 levels, computed",
        "deterministic (seeded simulation)",
        {
            "ours": "bound='simultaneous': band and regret levels",
            "peers": "LTT-Bonferroni's per-level level delta / (2K)",
        },
        [
            Claim("ltt_level", 0, "LTT-Bonferroni level delta/(2K)", fmt=".3f"),
            Claim("min_size", 0, "min calibration size", fmt="d"),
            Claim("fixed_smallest", 0, "smallest n for fixed-sequence at 0.1", fmt="d"),
            Claim(
                "band_ratio_100",
                {"n_cal": 100},
                "whole-budget band / LTT level",
                fmt=".2f",
            ),
            Claim(
                "band_ratio_500",
                {"n_cal": 500},
                "whole-budget band / LTT level",
                fmt=".2f",
            ),
            Claim("share_100", {"n_cal": 100}, "band share", fmt=".1f"),
            Claim("share_500", {"n_cal": 500}, "band share", fmt=".1f"),
        ],
    ),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--frontier-only", action="store_true", help="only part 4")
    parser.add_argument("--lp-speed-only", action="store_true", help="only LP speed")
    parser.add_argument(
        "--validity-only",
        action="store_true",
        help="only parts 1 and 2 (validity and usefulness), no timing",
    )
    parser.add_argument(
        "--speed-only", action="store_true", help="only part 3 (shortest-path speed)"
    )
    parser.add_argument(
        "--allocation-only",
        action="store_true",
        help="only the computed budget table (no timing)",
    )
    args = parser.parse_args()
    n_ctx, n_cvx = (1000, 100) if args.quick else (10_000, 1000)
    n_seeds = 2 if args.quick else 5
    if args.lp_speed_only:
        _write_lp_speed(n_seeds, n_cvx)
        return
    if args.allocation_only:
        _write_band_allocations()
        return
    if args.frontier_only:
        _write_band_allocations()
        _write_frontier(args.quick)
        return
    if args.speed_only:
        _write_speed(n_ctx, n_cvx)
        return
    n_reps, n_test = (10, 5000) if args.quick else (200, 100_000)
    degrees = (2,) if args.quick else (1, 2, 4)
    validity, useful = [], []
    for degree in degrees:
        start = time.perf_counter()
        v, u = validity_and_usefulness(degree, n_reps, n_test, 500)
        validity += v
        useful += u
        print(f"degree {degree}: {time.perf_counter() - start:.1f} s", flush=True)
    write_results(
        "conformal_robust_validity",
        validity,
        list(validity[0]),
        title=f"Validity of the frontier bounds over {n_reps} calibration draws "
        "(500 samples each, delta = 0.1, 50 levels, l2 sets)",
        notes="A draw violates a frontier when some level's bound (miscoverage or "
        f"regret) is below the truth measured on {n_test} fresh samples. Mean "
        "gap: average over levels and draws of bound minus truth.",
    )
    write_results(
        "conformal_robust_usefulness",
        useful,
        list(useful[0]),
        title="Policies at a target miscoverage of 0.1 (true values on "
        f"{n_test} fresh samples, mean over {n_reps} calibration draws)",
        notes="Regret is normalised per sample by the range of path costs; "
        "'regret / ours' divides by the mean regret of the level chosen from the "
        "frontier.",
    )
    if args.validity_only:
        return
    _write_band_allocations()
    _write_frontier(args.quick)
    _write_lp_speed(n_seeds, n_cvx)
    _write_speed(n_ctx, n_cvx)


def _write_speed(n_contexts, n_cvxpy):
    rows = speed(n_contexts, n_cvxpy)
    write_results(
        "conformal_robust_speed",
        rows,
        list(rows[0]),
        title="Robust shortest paths for many contexts: one batched call vs cvxpy",
        notes="cvxpy solves a compiled parametrised problem per context (HiGHS "
        "for the LP, Clarabel for the SOCP); when fewer contexts than requested "
        "are timed the time is extrapolated linearly.",
    )


if __name__ == "__main__":
    main()
