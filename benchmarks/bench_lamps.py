"""LAMPS: Pareto model selection with landmarks and a meta-learned policy.

Parts
-----
1. LCDB replay. The 248 data sets are split 70/30 (by data set) per seed;
   ``MetaAllocationPolicy`` learns its predictors and, by policy search on 3
   folds of the meta-training data sets, its optimism quantile and stopping
   threshold; every search then runs on the held-out data sets (20 learners
   each, objectives validation error and fit time; landmarks 5/10/25% of the
   training set). Reported per method: mean hypervolume ratio to the
   exhaustive front, mean share of the exhaustive fit time saved, share of
   data sets with a ratio >= 0.99. Baselines: multi-objective successive
   halving at its own cost and at equal cost, Hyperband's brackets (the most
   exploratory first) and random order, the last three each given exactly
   the cost LAMPS spent on that data set: no evaluation takes them over it
   (the replay knows every cost in advance, which favours them), a capped
   search keeps back the price of a final full fit of its best, and what a
   search leaves goes to full fits of the candidates it saw at landmarks,
   best first, skipping one that does not fit (random order skips for the
   next candidate, which reads each fit's cost in advance; a second random
   row stops at the first fit that would go over, as a search that cannot
   know costs would). The hypervolume-versus-cost curve of each:
   LAMPS at budgets 0.05 to 1.0 of its predicted full cost, every baseline
   at the cost LAMPS spent at each, and the area under the ratio against
   the cost's share of the exhaustive cost. Ablations: no
   learned predictor (constant per-landmark mean and quantile of the change
   to the full set),
   no optimism (the median instead of the lower quantile), no intermediate
   landmarks (advanced candidates go straight to the full set), and, under a
   budget of 30% of the predicted exhaustive cost (where the order of the
   actions decides what gets done), no cost awareness (``cost_exponent=0``)
   against LAMPS at the same budget. Paired 95% intervals over the seeds
   (each ablation against LAMPS at its budget).
2. Live mode: ``ParetoModelSelector`` on digits and breast cancer with 8
   scikit-learn classifiers (3-fold CV, objectives error and fit time),
   against the exhaustive search and successive halving; the hypervolume
   ratio uses the exhaustive run's scaling, the time saved is wall time of
   all evaluations and of the front's refits on all the data. Fit times are
   measured, so ratios carry timing noise. Breast cancer's training folds
   are under ``exhaustive_below`` (1000 rows), so the default search falls
   back to the exhaustive one there; a row runs the landmarks anyway
   (``exhaustive_below=None``).

3. Hypervolume (``--part hv``): the exact hypervolume at the sizes model
   selection uses (8, 20 and 100 points of 2, 3 and 4 objectives, uniform
   in the unit cube, reference 1.1 per objective): moocore's (what
   ``hypervolume`` calls), pymoo's ``HV`` indicator, and the exact slicing
   algorithm (HSO) the package used before, written out here as the peer.
   The median time of a call over repeats, on one idle thread, and the
   largest difference between their values.

4. The shipped policy's parameters (``--part policy``): the policy search
   of ``MetaAllocationPolicy(random_state=0)`` on the CLI demo's 70%
   meta-training split without scikit-learn's own data sets; the pair it
   picks is ``DEFAULT_PAIR`` of the selector's default policy.

5. A learned allocation policy (``--part learned``): fitted Q-iteration
   over allocation actions against the hand-written rule as its ablation
   (see ``learned_part``).

``--quick`` runs 2 seeds.
"""

import argparse
import time
import warnings

import numpy as np
from _common import paired_interval, write_results
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.dummy import DummyRegressor

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.datasets import load_lcdb_curves
from sklearn_ext.model_selection import (
    MetaAllocationPolicy,
    ParetoModelSelector,
    pareto_mask,
)
from sklearn_ext.model_selection._allocation import (
    _replay,
    _training_rows,
    hyperband,
    random_search,
    successive_halving,
)
from sklearn_ext.model_selection._lamps import DEFAULT_PAIR, default_meta_policy
from sklearn_ext.model_selection._lamps_candidates import eight_candidates, hv_ratio


def constant_models(problems, policy):
    """The predictor ablation: per landmark, the mean and the policy's
    quantile of the change to the full set, whatever the features."""
    models = []
    for level in range(len(policy.landmarks)):
        _, Y, _ = _training_rows(problems, level)

        def fit(strategy, k, Y=Y, **kw):
            return DummyRegressor(strategy=strategy, **kw).fit(Y[:, :1], Y[:, k])

        models.append(
            {
                "mean": [fit("mean", k) for k in range(2)],
                policy.quantile_: [
                    fit("quantile", k, quantile=policy.quantile_) for k in range(2)
                ],
            }
        )
    return models


# LAMPS' budgets (fractions of its predicted full cost) at which the
# hypervolume-versus-budget curves are read; every baseline gets the cost
# LAMPS actually spent at each.
CURVE_BUDGETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)


def _budget_curves(problem, policy, seed, curves):
    """Each method's hypervolume ratio at LAMPS' spent cost of each budget.

    The area is the trapezoid under the curve of the ratio against the cost
    spent as a share of the exhaustive cost, from (0, 0) to the largest
    budget's cost: the same abscissae for every method on a data set.
    """
    full = problem.exhaustive_cost()
    spent, hv = [0.0], {name: [0.0] for name in CURVE_METHODS}
    for budget in CURVE_BUDGETS:
        ours = policy.search(problem, budget=budget)
        spent.append(ours.spent / full)
        hv["LAMPS (meta-learned)"].append(ours.hv_ratio)
        hv["successive halving (equal cost)"].append(
            successive_halving(problem, cost=ours.spent).hv_ratio
        )
        hv["Hyperband brackets (equal cost)"].append(
            hyperband(problem, ours.spent, random_state=seed).hv_ratio
        )
        hv["random (equal cost)"].append(
            random_search(problem, ours.spent, random_state=seed).hv_ratio
        )
        hv["random (equal cost, stops at the first fit past it)"].append(
            random_search(problem, ours.spent, random_state=seed, skip=False).hv_ratio
        )
    order = np.argsort(spent, kind="stable")
    x = np.asarray(spent)[order]
    for name, values in hv.items():
        y = np.asarray(values)[order]
        curves.setdefault(name, []).append(float(np.trapezoid(y, x)))


CURVE_METHODS = (
    "LAMPS (meta-learned)",
    "successive halving (equal cost)",
    "Hyperband brackets (equal cost)",
    "random (equal cost)",
    "random (equal cost, stops at the first fit past it)",
)


def lcdb_part(seeds):
    lcdb = load_lcdb_curves()
    per_seed, area_per_seed = {}, {}
    chosen = []
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(len(lcdb.final_error))
        cut = int(0.7 * len(order))
        start = time.perf_counter()
        policy = MetaAllocationPolicy(random_state=seed).fit(lcdb, datasets=order[:cut])
        meta_seconds = time.perf_counter() - start
        chosen.append((policy.quantile_, policy.threshold_, policy.search_results_))
        train = [policy.problem(lcdb, d) for d in order[:cut]]
        train = [p for p in train if p is not None]
        const = constant_models(train, policy)
        median = MetaAllocationPolicy(
            quantiles=(0.5,), thresholds=(policy.threshold_,), random_state=seed
        ).fit(train)
        test = [policy.problem(lcdb, d) for d in order[cut:]]
        test = [p for p in test if p is not None]
        rows, curves = {}, {}

        def add(name, result, rows=rows):
            rows.setdefault(name, []).append((result.hv_ratio, result.time_saved))

        q, tau, c = policy.quantile_, policy.threshold_, policy.cost_exponent
        start = time.perf_counter()
        for p in test:
            ours = policy.search(p)
            add("LAMPS (meta-learned)", ours)
            add("successive halving (own cost)", successive_halving(p))
            add(
                "successive halving (equal cost)",
                successive_halving(p, cost=ours.spent),
            )
            add(
                "Hyperband brackets (equal cost)",
                hyperband(p, ours.spent, random_state=seed),
            )
            add("random (equal cost)", random_search(p, ours.spent, random_state=seed))
            add(
                "random (equal cost, stops at the first fit past it)",
                random_search(p, ours.spent, random_state=seed, skip=False),
            )
            _budget_curves(p, policy, seed, curves)
            add("ablation: no learned predictor", _replay(p, const, q, tau, c))
            add("ablation: no optimism (median)", median.search(p))
            add(
                "ablation: no intermediate landmarks",
                _replay(p, policy.models_, q, tau, c, refine=False),
            )
            add("LAMPS at budget 0.3", policy.search(p, budget=0.3))
            add(
                "ablation: no cost awareness (budget 0.3)",
                _replay(p, policy.models_, q, tau, 0.0, budget=0.3),
            )
        search_seconds = (time.perf_counter() - start) / len(test)
        for name, v in rows.items():
            per_seed.setdefault(name, []).append(np.array(v))
        for name, areas in curves.items():
            area_per_seed.setdefault(name, []).append(float(np.mean(areas)))
        print(
            f"seed {seed}: {len(test)} held-out data sets; quantile {q}, threshold "
            f"{tau}; meta-learning {meta_seconds:.0f} s; "
            f"{search_seconds * 1e3:.0f} ms per data set for all methods",
            flush=True,
        )
    table = []
    for name, runs in per_seed.items():
        hv = np.array([r[:, 0].mean() for r in runs])
        saved = np.array([r[:, 1].mean() for r in runs])
        share = np.array([np.mean(r[:, 0] >= 0.99) for r in runs])
        row = {
            "method": name,
            "hv_ratio": float(hv.mean()),
            "time_saved": float(saved.mean()),
            "median_saved": float(np.mean([np.median(r[:, 1]) for r in runs])),
            "share_hv_0.99": float(share.mean()),
        }
        if name not in ("LAMPS (meta-learned)", "LAMPS at budget 0.3"):
            ours = per_seed[
                "LAMPS at budget 0.3"
                if "budget 0.3" in name
                else "LAMPS (meta-learned)"
            ]
            d, lo, hi = paired_interval(
                [r[:, 0].mean() for r in ours], [r[:, 0].mean() for r in runs]
            )
            row["LAMPS_minus_hv"] = f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
            d, lo, hi = paired_interval(
                [r[:, 1].mean() for r in ours], [r[:, 1].mean() for r in runs]
            )
            row["LAMPS_minus_saved"] = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        if name in area_per_seed:
            row["hv_budget_area"] = float(np.mean(area_per_seed[name]))
            if name != "LAMPS (meta-learned)":
                d, lo, hi = paired_interval(
                    area_per_seed["LAMPS (meta-learned)"], area_per_seed[name]
                )
                row["LAMPS_minus_area"] = f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
        table.append(row)
    return table, chosen


def policy_part():
    """The shipped policy's optimism quantile and threshold, and what it learns on.

    The policy search of ``MetaAllocationPolicy(random_state=0)`` (its default
    3 x 3 grid, 3 folds by data set) on the meta-training split of the CLI
    demo (70% of the LCDB data sets, ``default_rng(0)``), without the data
    sets scikit-learn ships: the pair it picks is the one
    ``default_meta_policy`` uses, so that neither the demo's held-out 30% nor
    scikit-learn's data chose it.
    """
    from sklearn_ext.model_selection._lamps import demo_split

    lcdb = load_lcdb_curves()
    train, _ = demo_split(lcdb)
    policy = MetaAllocationPolicy(random_state=0).fit(lcdb, datasets=train)
    print(policy.quantile_, policy.threshold_, policy.search_results_, flush=True)
    rows = [
        {
            **r,
            "chosen": "yes"
            if (r["quantile"], r["threshold"]) == (policy.quantile_, policy.threshold_)
            else "",
        }
        for r in policy.search_results_
    ]
    write_results(
        "lamps_policy",
        rows,
        ["quantile", "threshold", "hv_ratio", "time_saved", "chosen"],
        title="The shipped policy's parameters: policy search on the demo's "
        f"meta-training split ({policy.n_problems_} LCDB data sets)",
        notes=(
            "MetaAllocationPolicy(random_state=0) on the 70% meta-training split "
            "of the CLI demo without scikit-learn's own data sets (OpenML 28 and "
            "61); mean held-out hypervolume ratio and time saved over 3 folds by "
            "data set; the pair kept saves the most among those reaching a ratio "
            f"of 0.99. Chosen: quantile {policy.quantile_}, threshold "
            f"{policy.threshold_}."
        ),
    )
    return policy


LAMBDA = 0.02  # return = HV ratio - LAMBDA x share of the exhaustive cost spent
LAMBDAS_TRAIN = (0.05, 0.2, 0.5)
MARGINS = (0.0, 0.001, 0.002)  # the learned stop's: stop when going on is worth less


def _return(results):
    from sklearn_ext.model_selection._allocation_rl import search_return

    return np.array([search_return(r, LAMBDA) for r in results])


def _learned_seed(seed):
    """One seed of :func:`learned_part`: per policy (return, HV ratio, saved)."""
    from sklearn_ext.model_selection._allocation_rl import (
        fit_q_policy,
        fit_stop_policy,
        hindsight_stop,
        q_search,
        stop_search,
    )

    warnings.simplefilter("ignore", category=UserWarning)
    lcdb = load_lcdb_curves()
    order = np.random.default_rng(seed).permutation(len(lcdb.final_error))
    cut = int(0.7 * len(order))
    half = cut // 2
    parts = [order[:half], order[half:cut]]

    def policy(datasets, q, t, seed=seed):
        return MetaAllocationPolicy(
            quantiles=(q,), thresholds=(t,), random_state=seed
        ).fit(lcdb, datasets=datasets)

    def problems(datasets):
        out = [MetaAllocationPolicy().problem(lcdb, d) for d in datasets]
        return [p for p in out if p is not None]

    halves = [problems(parts[k]) for k in (0, 1)]
    # the rule: its grid, each half's predictors scored on the other half
    grid = MetaAllocationPolicy()
    best_rule, best_val = None, -np.inf
    for q in grid.quantiles:
        fitted = [policy(parts[k], q, grid.thresholds[0]) for k in (0, 1)]
        for t in grid.thresholds:
            score = 0.0
            for k in (0, 1):
                fitted[k].threshold_ = t
                score += _return([fitted[k].search(p) for p in halves[1 - k]]).sum()
            if score > best_val:
                best_rule, best_val = (q, t), score
    # the learned policy: its cost price; Q trained on half k's episodes
    # (replayed with half 1-k's predictors), scored on half 1-k (with half
    # k's predictors): every feature carries out-of-sample prediction errors
    q0, t0 = DEFAULT_PAIR
    fitted = [policy(parts[k], q0, t0) for k in (0, 1)]
    best_lam, best_lval = None, -np.inf
    for lam in LAMBDAS_TRAIN:
        score = 0.0
        for k in (0, 1):
            qf = fit_q_policy(
                [(halves[k], fitted[1 - k].models_)],
                q0,
                t0,
                lam=lam,
                random_state=seed,
            )
            score += _return(
                [q_search(p, fitted[k].models_, q0, qf) for p in halves[1 - k]]
            ).sum()
        if score > best_lval:
            best_lam, best_lval = lam, score
    # the final policies learn from both halves, each with the other's predictors
    both = [(halves[0], fitted[1].models_), (halves[1], fitted[0].models_)]
    q_final = fit_q_policy(both, q0, t0, lam=best_lam, random_state=seed)
    # the learned stop: its margin, chosen the same way
    values = [
        fit_stop_policy(
            [(halves[k], fitted[1 - k].models_)], q0, t0, lam=LAMBDA, random_state=seed
        )
        for k in (0, 1)
    ]
    best_margin, best_mval = None, -np.inf
    for margin in MARGINS:
        score = sum(
            _return(
                [
                    stop_search(p, fitted[k].models_, q0, t0, values[k], margin)
                    for p in halves[1 - k]
                ]
            ).sum()
            for k in (0, 1)
        )
        if score > best_mval:
            best_margin, best_mval = margin, score
    v_final = fit_stop_policy(both, q0, t0, lam=LAMBDA, random_state=seed)
    rule = policy(order[:cut], *best_rule)
    learned = policy(order[:cut], q0, t0)
    test = problems(order[cut:])
    res = {
        "rule": [rule.search(p) for p in test],
        "learned": [q_search(p, learned.models_, q0, q_final) for p in test],
        "stop": [
            stop_search(p, learned.models_, q0, t0, v_final, best_margin) for p in test
        ],
    }
    out = {
        name: (
            float(_return(r).mean()),
            float(np.mean([x.hv_ratio for x in r])),
            float(np.mean([x.time_saved for x in r])),
        )
        for name, r in res.items()
    }
    # the bound of any stop on the same ranking: the best one in hindsight
    bound = [hindsight_stop(p, learned.models_, q0, t0, lam=LAMBDA) for p in test]
    out["hindsight"] = (float(np.mean(bound)), np.nan, np.nan)
    print(
        f"seed {seed}: rule pair {best_rule}, learned lam {best_lam}, "
        f"stop margin {best_margin};",
        {k: np.round(v, 4).tolist() for k, v in out.items()},
        flush=True,
    )
    return out


def learned_part(seeds, jobs=2):
    """Two learned allocation policies against the rule.

    The first, fitted Q-iteration over every allocation action; the second,
    a learned stop on the rule's own ranking (the rule's score over the
    candidates whose optimistic gain clears 0.002, a tenth of the rule's
    threshold, so that it can go on past where the rule stops; a regressor
    of the value of going on decides when to stop;
    see :func:`~sklearn_ext.model_selection._allocation_rl.fit_stop_policy`).
    The stop's variant (its target and floor) was chosen on development
    seeds 10 to 13; two earlier probes (a first stop, and a cross-entropy
    policy search) had also run on the benchmark's seeds 0 and 1. A bound
    row: on the same ranking, the best stop chosen in hindsight on each
    held-out set (what a perfect learned stop would reach).

    Per seed, the split of the LCDB part (70% of the data sets meta-train).
    The meta-training sets are halved: predictors are fitted on each half,
    and each side's choices are scored on the other half (validation). Both
    policies are tuned there on the same metric, the return (hypervolume
    ratio minus 0.02 times the share of the exhaustive cost spent: saving
    half the cost is worth 0.01 of ratio, the paper's target): the rule over
    its 3 x 3 grid of optimism quantiles and thresholds, the learned policy
    over its reward's cost price (0.05, 0.2, 0.5), the learned stop over its
    margin (0, 0.001, 0.002). Then the predictors are
    refitted on all meta-training sets, the learned policies on episodes of
    both halves (each replayed with the other half's predictors), and both
    run on the held-out sets. Seeds run in ``jobs`` processes.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx) as ex:
        outs = list(ex.map(_learned_seed, list(seeds)))
    per_seed = {
        name: np.array([o[name] for o in outs])
        for name in ("learned", "stop", "hindsight", "rule")
    }
    rule = per_seed["rule"]
    rows = []
    for name, label in (
        ("learned", "learned policy (fitted Q-iteration)"),
        ("stop", "learned stop on the rule's ranking"),
        ("hindsight", "bound: the best stop on that ranking, in hindsight"),
        ("rule", "hand-written rule (ablation)"),
    ):
        v = per_seed[name]
        row = {"policy": label}
        for j, col in enumerate(("return", "hv_ratio", "time_saved")):
            row[col] = "" if np.isnan(v[0, j]) else float(v[:, j].mean())
        for j, col in enumerate(("return", "hv_ratio", "time_saved")):
            mean, lo, hi = paired_interval(v[:, j], rule[:, j])
            row[f"{col} − rule"] = (
                ""
                if name == "rule" or np.isnan(mean)
                else f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]"
            )
        rows.append(row)
    met = any(
        paired_interval(per_seed[name][:, 0], rule[:, 0])[1] > 0
        for name in ("learned", "stop")
    )
    write_results(
        "lamps_learned",
        rows,
        list(rows[0]),
        title="Learned allocation policies against the hand-written rule, LCDB "
        f"held-out data sets, {len(outs)} seeds",
        notes=(
            "Return: hypervolume ratio minus 0.02 x the share of the exhaustive "
            "cost spent, mean over the held-out data sets; paired 95% intervals "
            "over the seeds of each learned policy minus the rule. Target: a "
            "learned policy's return beats the rule's with an interval excluding 0: "
            + ("met." if met else "NOT MET.")
        ),
    )


def live_part(seeds):
    table = []
    for data, loader in (
        ("digits", load_digits),
        ("breast cancer", load_breast_cancer),
    ):
        X, y = loader(return_X_y=True)
        res = {
            "LAMPS (meta)": [],
            "LAMPS, no small-data fallback": [],
            "successive halving": [],
        }
        for seed in seeds:
            runs = {
                policy: ParetoModelSelector(
                    eight_candidates(seed), policy=policy, random_state=seed
                ).fit(X, y)
                for policy in ("exhaustive", "meta", "successive_halving")
            }
            runs["no fallback"] = (
                ParetoModelSelector(
                    eight_candidates(seed), exhaustive_below=None, random_state=seed
                ).fit(X, y)
                if runs["meta"].fallback_
                else runs["meta"]  # the same search where it does not fall back
            )
            ex = runs["exhaustive"]
            for name, policy in (
                ("LAMPS (meta)", "meta"),
                ("LAMPS, no small-data fallback", "no fallback"),
                ("successive halving", "successive_halving"),
            ):
                r = runs[policy]
                res[name].append(
                    (
                        hv_ratio(r, ex),
                        1 - r.spent_ / ex.spent_,
                        set(r.pareto_front_["candidates"])
                        == set(ex.pareto_front_["candidates"]),
                    )
                )
            print(
                f"{data} seed {seed}: exhaustive front "
                f"{ex.pareto_front_['candidates']}, "
                f"LAMPS {runs['meta'].pareto_front_['candidates']} "
                f"(levels {runs['meta'].levels_}), {ex.spent_:.1f} s exhaustive",
                flush=True,
            )
        for name, v in res.items():
            v = np.array(v, dtype=float)
            table.append(
                {
                    "data": data,
                    "method": name,
                    "hv_ratio": float(v[:, 0].mean()),
                    "time_saved": float(v[:, 1].mean()),
                    "same_front": f"{int(v[:, 2].sum())}/{len(v)}",
                }
            )
    return table


# --- part 3: hypervolume --------------------------------------------------------


def _slicing_hypervolume(P, ref):
    """The exact slicing algorithm (HSO) ``hypervolume`` used before moocore."""
    if len(P) == 0:
        return 0.0
    if P.shape[1] == 1:
        return float(ref[0] - P[:, 0].min())
    P = P[np.argsort(P[:, -1], kind="stable")]
    levels = np.append(P[:, -1], ref[-1])
    total = 0.0
    for k in range(len(P)):
        depth = levels[k + 1] - levels[k]
        if depth > 0:
            front = P[: k + 1, :-1]
            total += depth * _slicing_hypervolume(front[pareto_mask(front)], ref[:-1])
    return total


def _median_seconds(fn, budget=0.5):
    """Median seconds of a call, over batches filling about ``budget`` seconds."""
    fn()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < budget / 10:
        fn()
        n += 1
    reps = max(1, n)
    times = []
    for _ in range(10):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - start) / reps)
    return float(np.median(times))


def hypervolume_part():
    import moocore
    from pymoo.indicators.hv import HV

    rng = np.random.default_rng(0)
    rows = []
    for d in (2, 3, 4):
        for n in (8, 20, 100):
            P = rng.random((n, d))
            ref = np.full(d, 1.1)
            values = {
                "moocore": moocore.hypervolume(P, ref=ref),
                "pymoo": HV(ref_point=ref)(P),
                "slicing": _slicing_hypervolume(P[pareto_mask(P)], ref),
            }
            calls = {
                "moocore": lambda P=P, ref=ref: moocore.hypervolume(P, ref=ref),
                "pymoo": lambda P=P, ref=ref: HV(ref_point=ref)(P),
                "slicing": lambda P=P, ref=ref: _slicing_hypervolume(
                    P[pareto_mask(P)], ref
                ),
            }
            seconds = {k: _median_seconds(f) for k, f in calls.items()}
            spread = max(values.values()) - min(values.values())
            rows.append(
                {
                    "objectives": d,
                    "points": n,
                    "on the front": int(pareto_mask(P).sum()),
                    "moocore us": f"{seconds['moocore'] * 1e6:.1f}",
                    "pymoo us": f"{seconds['pymoo'] * 1e6:.1f}",
                    "slicing us": f"{seconds['slicing'] * 1e6:.1f}",
                    "slicing / moocore": (
                        f"{seconds['slicing'] / seconds['moocore']:.0f}x"
                    ),
                    "pymoo / moocore": f"{seconds['pymoo'] / seconds['moocore']:.1f}x",
                    "largest value difference": f"{spread:.1e}",
                }
            )
            print(rows[-1], flush=True)
    write_results(
        "lamps_hypervolume",
        rows,
        list(rows[0]),
        title="Exact hypervolume at model-selection sizes: moocore, pymoo, slicing",
        notes=(
            "Points uniform in the unit cube, reference 1.1 per objective; the "
            "median time of a call over 10 batches, one thread. The slicing "
            "algorithm is the package's former implementation (HSO), kept in "
            "this benchmark as the peer."
        ),
    )


def _ratio_range(column, pick):
    def compute(rows):
        values = [float(r[column].rstrip("x")) for r in rows]
        return pick(values), f"{pick(values):.0f}x"

    return compute


# --- the claims ledger ---------------------------------------------------------

_OURS = "LAMPS (meta-learned)"
_LCDB_ROWS = {
    "sh": "successive halving (own cost)",
    "sh_equal": "successive halving (equal cost)",
    "hb": "Hyperband brackets (equal cost)",
    "random": "random (equal cost)",
    "random_stop": "random (equal cost, stops at the first fit past it)",
    "no_predictor": "ablation: no learned predictor",
    "no_optimism": "ablation: no optimism (median)",
    "no_landmarks": "ablation: no intermediate landmarks",
    "budget": "LAMPS at budget 0.3",
    "no_cost": "ablation: no cost awareness (budget 0.3)",
}


def _lcdb_claims(key, label):
    claims = [
        Claim(f"{key}_hv", label, "hv_ratio", fmt=".3f"),
        Claim(f"{key}_saved", label, "time_saved", fmt=".1%"),
        Claim(f"{key}_share", label, "share_hv_0.99", fmt=".0%"),
    ]
    if label in CURVE_METHODS:
        claims.append(Claim(f"{key}_area", label, "hv_budget_area", fmt=".3f"))
        if label != _OURS:
            claims.append(
                Claim(
                    f"vs_{key}_area",
                    label,
                    "LAMPS_minus_area",
                    peer=_OURS,
                    peer_column="hv_budget_area",
                    metric="area under the hypervolume-versus-cost curve, LAMPS - it",
                )
            )
    if label not in (_OURS, _LCDB_ROWS["budget"]):
        peer = _LCDB_ROWS["budget"] if "budget 0.3" in label else _OURS
        claims += [
            Claim(
                f"vs_{key}_hv",
                label,
                "LAMPS_minus_hv",
                peer=peer,
                peer_column="hv_ratio",
                metric="hypervolume ratio, LAMPS - it",
            ),
            Claim(
                f"vs_{key}_saved",
                label,
                "LAMPS_minus_saved",
                peer=peer,
                peer_column="time_saved",
                metric="time saved, LAMPS - it",
            ),
        ]
    return claims


def _share_below(rows):
    row = next(r for r in rows if r["method"] == _OURS)
    return 1.0 - row["share_hv_0.99"]


LEDGER = {
    "lamps_hypervolume": Ledger(
        "hypervolume",
        "random points in the unit cube: 8, 20 and 100 points of 2, 3 and 4 "
        "objectives, reference 1.1",
        1,
        {
            "ours": "moocore.hypervolume, what hypervolume calls",
            "peers": "pymoo's HV indicator; the exact slicing algorithm the "
            "package used before (in the benchmark)",
        },
        [
            Claim(
                "slicing_ratio_min",
                0,
                "slicing / moocore",
                compute=_ratio_range("slicing / moocore", min),
                metric="time of the slicing algorithm over moocore's, smallest",
                timing=True,
            ),
            Claim(
                "slicing_ratio_max",
                0,
                "slicing / moocore",
                compute=_ratio_range("slicing / moocore", max),
                metric="time of the slicing algorithm over moocore's, largest",
                timing=True,
            ),
        ],
    ),
    "lamps": Ledger(
        "MetaAllocationPolicy",
        "LCDB 1.0 learning curves (load_lcdb_curves): per seed a 70/30 split of "
        "the 248 data sets; every search on a held-out data set's 20 learners, "
        "landmarks 5/10/25% of the training rows, objectives validation error "
        "and fit time",
        5,
        {
            "ours": "MetaAllocationPolicy meta-learned on the seed's 70% (predictors; "
            "quantile and threshold by policy search on 3 folds of it), no budget",
            "peers": "successive halving (eta=2) at its own cost; successive "
            "halving, Hyperband's brackets (the most exploratory first) and "
            "random order each given exactly what LAMPS spent on that data "
            "set (no evaluation over it; a capped search ends with a full fit "
            "of its best), and on the curves the cost LAMPS spent at each of "
            "its budgets 0.05-1.0; "
            "ablations: the policy with one part removed; at budget 0.3 LAMPS "
            "and the no-cost-awareness ablation are both capped at 30% of the "
            "predicted exhaustive cost",
        },
        _lcdb_claims("lamps", _OURS)
        + [c for key, label in _LCDB_ROWS.items() for c in _lcdb_claims(key, label)]
        + [
            Claim("lamps_median_saved", _OURS, "median_saved", fmt=".0%"),
            Claim(
                "lamps_share_below",
                _OURS,
                "share_hv_0.99",
                fmt=".0%",
                metric="share of held-out data sets with a ratio below 0.99",
                compute=_share_below,
            ),
        ],
    ),
    "lamps_policy": Ledger(
        "MetaAllocationPolicy",
        "LCDB, the CLI demo's 70% meta-training split without OpenML 28 and 61; "
        "3 folds by data set",
        1,
        {
            "ours": "MetaAllocationPolicy(random_state=0): its 3 x 3 grid of "
            "optimism quantiles and stopping thresholds",
            "peers": "none (the policy search that sets the shipped policy)",
        },
        [
            Claim("quantile", {"chosen": "yes"}, "quantile", fmt="g"),
            Claim("threshold", {"chosen": "yes"}, "threshold", fmt="g"),
            Claim(
                "hv_ratio",
                {"chosen": "yes"},
                "hv_ratio",
                metric="held-out mean hypervolume ratio of the chosen pair",
                fmt=".3f",
            ),
            Claim(
                "time_saved",
                {"chosen": "yes"},
                "time_saved",
                metric="held-out mean share of the exhaustive cost saved by the "
                "chosen pair",
                fmt=".1%",
            ),
        ],
    ),
    "lamps_learned": Ledger(
        "MetaAllocationPolicy",
        "LCDB, 70/30 split by data set per seed (the LCDB part's), held-out data sets",
        5,
        {
            "ours": "an allocation policy learned by fitted Q-iteration on "
            "exploring episodes of the meta-training sets (reward: hypervolume "
            "ratio gained minus a price on cost; the price chosen across halves "
            "of the meta-training sets); a learned stop on the rule's ranking "
            "(value of going on regressed on the state; its margin chosen "
            "across the same halves)",
            "peers": "the hand-written rule, its quantile and threshold chosen "
            "over its 3 x 3 grid across the same halves on the same return",
        },
        [
            Claim(f"{key}_{short}", {"policy": label}, column, fmt=fmt)
            for key, label in (
                ("learned", "learned policy (fitted Q-iteration)"),
                ("stop", "learned stop on the rule's ranking"),
                ("rule", "hand-written rule (ablation)"),
            )
            for short, column, fmt in (
                ("return", "return", ".4f"),
                ("hv", "hv_ratio", ".3f"),
                ("saved", "time_saved", ".1%"),
            )
        ]
        + [
            Claim(
                f"{prefix}vs_rule_{short}",
                {"policy": label},
                f"{column} − rule",
            )
            for prefix, label in (
                ("", "learned policy (fitted Q-iteration)"),
                ("stop_", "learned stop on the rule's ranking"),
            )
            for short, column in (
                ("return", "return"),
                ("hv", "hv_ratio"),
                ("saved", "time_saved"),
            )
        ]
        + [
            Claim(
                "hindsight_return",
                {"policy": "bound: the best stop on that ranking, in hindsight"},
                "return",
                fmt=".4f",
            ),
            Claim(
                "hindsight_vs_rule_return",
                {"policy": "bound: the best stop on that ranking, in hindsight"},
                "return − rule",
            ),
        ],
    ),
    "lamps_live": Ledger(
        "ParetoModelSelector",
        "digits and breast cancer, 8 scikit-learn classifiers, 3-fold CV, "
        "objectives error and measured fit time",
        5,
        {
            "ours": "ParetoModelSelector(policy='meta'): the default policy fitted "
            "on the LCDB curves without OpenML 28 and 61, no budget; training "
            "folds under 1000 rows searched exhaustively (and a row without "
            "that fallback)",
            "peers": "policy='successive_halving' at its own cost; the exhaustive "
            "search is the reference of the ratio and of the time saved",
        },
        [
            Claim(
                f"{key}_{name}_{short}",
                {"data": data, "method": method},
                column,
                fmt=fmt,
            )
            for key, data in (("digits", "digits"), ("bc", "breast cancer"))
            for name, method in (
                ("lamps", "LAMPS (meta)"),
                ("sh", "successive halving"),
            )
            for short, column, fmt in (
                ("hv", "hv_ratio", ".3f"),
                ("saved", "time_saved", ".1%"),
                ("front", "same_front", None),
            )
        ]
        + [
            Claim(
                f"bc_nofb_{short}",
                {"data": "breast cancer", "method": "LAMPS, no small-data fallback"},
                column,
                fmt=fmt,
            )
            for short, column, fmt in (
                ("hv", "hv_ratio", ".3f"),
                ("saved", "time_saved", ".1%"),
            )
        ],
    ),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--part",
        choices=("all", "lcdb", "live", "hv", "policy", "learned"),
        default="all",
    )
    args = parser.parse_args()
    seeds = range(2) if args.quick else range(5)
    warnings.simplefilter("ignore", category=UserWarning)
    if args.part in ("all", "policy"):
        policy_part()
    if args.part == "policy":
        return
    if args.part in ("all", "learned"):
        learned_part(seeds)
    if args.part == "learned":
        return
    if args.part in ("all", "hv"):
        hypervolume_part()
    if args.part == "hv":
        return
    if args.part != "live":
        lcdb_results(seeds)
    if args.part != "lcdb":
        live = live_part(seeds)
        write_results(
            "lamps_live",
            live,
            ["data", "method", "hv_ratio", "time_saved", "same_front"],
            title="ParetoModelSelector live, 8 classifiers, 3-fold CV (vs exhaustive)",
            notes=(
                f"Default policy (quantile {default_meta_policy().quantile_}, "
                f"threshold {default_meta_policy().threshold_}; learned on LCDB "
                "without scikit-learn's own data sets, OpenML 28 and 61). Spent: "
                "wall time of all evaluations and of the front's refits on all "
                "the data. The HV ratio uses the exhaustive scaling. The meta "
                "policy searches training folds under 1000 rows exhaustively "
                "(exhaustive_below): breast cancer's are; the row without that "
                "fallback runs the landmarks there anyway."
            ),
        )


def lcdb_results(seeds):
    start = time.perf_counter()
    table, chosen = lcdb_part(seeds)
    write_results(
        "lamps",
        table,
        [
            "method",
            "hv_ratio",
            "time_saved",
            "median_saved",
            "share_hv_0.99",
            "LAMPS_minus_hv",
            "LAMPS_minus_saved",
            "hv_budget_area",
            "LAMPS_minus_area",
        ],
        title="LAMPS on held-out LCDB data sets (target: HV >= 0.99, >= 50% saved)",
        notes=(
            "Per seed: 70/30 split of the 248 LCDB data sets; policy search chose "
            + "; ".join(f"(q={q}, tau={t})" for q, t, _ in chosen)
            + ". Paired 95% t intervals over seeds. "
            f"Total {time.perf_counter() - start:.0f} s."
        ),
    )


if __name__ == "__main__":
    main()
