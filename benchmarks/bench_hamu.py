"""HAMU: constrained unlearning against gradient ascent, NegGrad+ and retraining.

Parts
-----
1. Digits and a generated 5-class set (make_classification, 3000 rows), an
   MLP with one hidden layer of 64: forget a random 10% of the training rows,
   or a whole class. Every unlearner stops when its accuracy on the forget
   set reaches that of the model retrained without it (matched forget
   quality); its step size is the one of a small grid that keeps the retain
   accuracy highest (the retain set is the unlearner's to use). Reported:
   forget, retain and test accuracy, the loss-threshold membership attack's
   AUC (forget rows against test rows), and HAMU's retain accuracy minus
   each baseline's, paired over seeds.
2. The per-step guarantee on a convex model (multinomial logistic
   regression, one class forgotten, full batches): the share of steps whose
   realised rise of the forget loss is at least 95% of the required one.
3. Hardness against planted similarity: the forget set is one class with a
   share rho of it swapped for random rows of the other classes; Spearman
   correlation of rho and HAMU's mean hardness over rho in {0, .25, .5, .75,
   1}, per seed.
4. The per-step guarantee on the MLP (64 hidden units, 100 steps, no stop):
   the share of steps whose realised rise of the batch's forget loss reaches
   the required one (all of it), with verified steps (``max_step_retries=3``)
   and without (0), per forget set and batch size.
5. The stopping signal (``stop_on_infeasible``) on the MLP: the absolute
   requirement (``c`` nats per step) and the relative one, the stop on and
   off, a random 10% (hard) and a class (easy); each run stops at the
   retrained model's forget accuracy at the latest. Reported: how often and
   when the signal stopped the run, and the accuracies reached.
6. Membership inference with power: digits, 450 training rows (150 of them
   forgotten, a random third), 150 held-out rows, an MLP with 256 hidden
   units, no weight decay, 200 epochs (it memorises). Online LiRA with 16
   shadow models (``lira_membership_auc``) scores the forget rows against the
   held-out rows for the original model, HAMU, gradient ascent, NegGrad+
   (each at matched forget quality, as in part 1) and the retrained model;
   AUC with a 95% t interval over seeds, and the loss threshold beside it.

7. Models that are not MLPs (``_hamu_models.py``, results ``hamu_models``):
   a CNN on the digit images and a transformer on the docstring topics, both
   trained by skorch and unlearned through ``FrozenEstimator``, as part 6:
   HAMU, HAMU-U, gradient ascent, NegGrad+, SCRUB and fine-tuning on the
   retain rows at matched forget accuracy (grids of 5), the retrained
   model, LiRA with 16 shadows.

``--quick`` runs 2 seeds.
"""

import argparse
import copy
import functools
import re
import sys
import time
import warnings

import _hamu_models
import numpy as np
import torch
from _common import paired_interval, write_results
from scipy.stats import spearmanr
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.unlearning import (
    HAMUUnlearner,
    UnlearnableMLPClassifier,
    forget_retain_similarity,
    membership_inference_auc,
)

GRIDS = {
    "HAMU": ("hamu", (0.05, 0.2, 0.5)),
    "gradient ascent": ("gradient_ascent", (0.01, 0.05, 0.2)),
    "NegGrad+": ("neggrad_plus", (0.01, 0.05, 0.2)),
}
COLUMNS = [
    "part",
    "setting",
    "method",
    "forget acc",
    "retain acc",
    "test acc",
    "MIA AUC",
    "value",
]


def _data(name, seed):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = make_classification(
            3000,
            20,
            n_informative=10,
            n_classes=5,
            n_clusters_per_class=1,
            random_state=seed,
        )
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def _scores(model, X, y, forget, Xt, yt):
    return (
        model.score(X[forget], y[forget]),
        model.score(X[~forget], y[~forget]),
        model.score(Xt, yt),
        membership_inference_auc(model, X[forget], y[forget], Xt, yt),
    )


def _forget_setup(name, kind, seed):
    """Data, forget mask, base MLP, the retrained model and its forget accuracy."""
    X, Xt, y, yt = _data(name, seed)
    rng = np.random.default_rng(seed)
    forget = rng.random(len(y)) < 0.1 if kind == "random 10%" else y == y[0]
    base = UnlearnableMLPClassifier((64,), random_state=seed)
    gold = copy.deepcopy(base).fit(X[~forget], y[~forget])
    return X, Xt, y, yt, forget, base, gold, gold.score(X[forget], y[forget])


def part_matched(seeds, datasets):
    rows = []
    for name in datasets:
        for kind in ("random 10%", "one class"):
            results = {}
            for seed in seeds:
                X, Xt, y, yt, forget, base, gold, target = _forget_setup(
                    name, kind, seed
                )
                results.setdefault("retrained (gold)", []).append(
                    _scores(gold, X, y, forget, Xt, yt)
                )
                fitted = HAMUUnlearner(
                    base, max_steps=400, batch_size=256, random_state=seed
                ).fit(X, y)
                results.setdefault("original", []).append(
                    _scores(fitted, X, y, forget, Xt, yt)
                )
                for label, (method, grid) in GRIDS.items():
                    best = None
                    for step in grid:
                        u = copy.deepcopy(fitted).set_params(
                            method=method,
                            step_size=step,
                            target_forget_accuracy=target,
                            stop_on_infeasible=False,
                        )
                        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
                        s = _scores(u, X, y, forget, Xt, yt)
                        reached = s[0] <= target + 0.02
                        key = (reached, s[1])
                        if best is None or key > best[0]:
                            best = (key, s)
                    results.setdefault(label, []).append(best[1])
            hamu = np.array(results["HAMU"])
            for label, vals in results.items():
                vals = np.array(vals)
                row = {
                    "part": "1 matched forget quality",
                    "setting": f"{name}, {kind}, {len(seeds)} seeds",
                    "method": label,
                    "forget acc": f"{vals[:, 0].mean():.3f}",
                    "retain acc": f"{vals[:, 1].mean():.3f}",
                    "test acc": f"{vals[:, 2].mean():.3f}",
                    "MIA AUC": f"{vals[:, 3].mean():.3f}",
                }
                if label in ("gradient ascent", "NegGrad+"):
                    m, lo, hi = paired_interval(hamu[:, 1], vals[:, 1])
                    row["value"] = (
                        f"HAMU - this, retain acc {m:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                    )
                rows.append(row)
    return rows


def part_guarantee(seeds, datasets):
    rows = []
    for name in datasets:
        shares = []
        for seed in seeds:
            X, _, y, _ = _data(name, seed)
            forget = y == y[0]
            u = HAMUUnlearner(
                UnlearnableMLPClassifier((), random_state=seed),
                step_size=0.05,
                max_steps=60,
                batch_size=10_000,
                stop_on_infeasible=False,
                random_state=seed,
            ).fit(X, y)
            u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
            rise = np.array(u.history_["batch_forget_rise"])
            required = np.array(u.history_["required_rise"])
            shares.append(np.mean(rise >= 0.95 * required))
        rows.append(
            {
                "part": "2 per-step guarantee (convex)",
                "setting": f"{name}, one class, 60 steps, {len(seeds)} seeds",
                "method": "HAMU on logistic regression",
                "value": f"steps meeting 95% of the required rise: "
                f"{np.mean(shares):.3f} (min {np.min(shares):.3f})",
            }
        )
    return rows


def part_hardness(seeds, datasets, levels=(0.0, 0.25, 0.5, 0.75, 1.0)):
    rows = []
    for name in datasets:
        rhos, means, sim_rhos, sims = [], [], [], []
        for seed in seeds:
            X, _, y, _ = _data(name, seed)
            fitted = HAMUUnlearner(
                UnlearnableMLPClassifier((), random_state=seed),
                step_size=0.05,
                max_steps=5,
                batch_size=10_000,
                stop_on_infeasible=False,
                random_state=seed,
            ).fit(X, y)
            rng = np.random.default_rng(seed)
            cls, others = np.flatnonzero(y == y[0]), np.flatnonzero(y != y[0])
            hardness, similarity = [], []
            for rho in levels:
                k = int(rho * len(cls))
                chosen = np.r_[
                    rng.choice(cls, len(cls) - k, replace=False),
                    rng.choice(others, k, replace=False),
                ]
                mask = np.isin(np.arange(len(y)), chosen)
                u = copy.deepcopy(fitted)
                u.unlearn(X[mask], y[mask], X[~mask], y[~mask])
                hardness.append(u.cosine_[0])
                similarity.append(
                    forget_retain_similarity(
                        fitted.estimator_, X[mask], y[mask], X[~mask], y[~mask]
                    )
                )
            rhos.append(spearmanr(levels, hardness).statistic)
            means.append(hardness)
            sim_rhos.append(spearmanr(levels, similarity).statistic)
            sims.append(similarity)
        rows.append(
            {
                "part": "3 hardness vs similarity",
                "setting": f"{name}, rho in {list(levels)}, {len(seeds)} seeds",
                "method": "HAMU on logistic regression",
                "value": f"Spearman(rho, cosine of g_r and g_f) {np.mean(rhos):.2f} "
                f"(min {np.min(rhos):.2f}); mean cosine by rho "
                + " / ".join(f"{v:+.3f}" for v in np.mean(means, axis=0)),
            }
        )
        rows.append(
            {
                "part": "3 hardness vs similarity",
                "setting": f"{name}, rho in {list(levels)}, {len(seeds)} seeds",
                "method": "forget_retain_similarity (per-sample gradients)",
                "value": f"Spearman(rho, similarity) {np.mean(sim_rhos):.2f} "
                f"(min {np.min(sim_rhos):.2f}); mean by rho "
                + " / ".join(f"{v:.3f}" for v in np.mean(sims, axis=0)),
            }
        )
    return rows


def _share_meeting(history):
    rise = np.array(history["batch_forget_rise"])
    return float(np.mean(rise >= np.array(history["required_rise"])))


def part_guarantee_mlp(seeds, datasets):
    rows = []
    for name in datasets:
        for kind in ("random 10%", "one class"):
            for batch_size in (64, 256):
                shares = {0: [], 3: []}
                retries_used = []
                for seed in seeds:
                    X, _, y, _ = _data(name, seed)
                    rng = np.random.default_rng(seed)
                    forget = (
                        rng.random(len(y)) < 0.1 if kind == "random 10%" else y == y[0]
                    )
                    fitted = HAMUUnlearner(
                        UnlearnableMLPClassifier((64,), random_state=seed),
                        random_state=seed,
                    ).fit(X, y)
                    for retries in (0, 3):
                        u = copy.deepcopy(fitted).set_params(
                            step_size=0.2,
                            max_steps=100,
                            batch_size=batch_size,
                            max_step_retries=retries,
                            stop_on_infeasible=False,
                        )
                        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
                        shares[retries].append(_share_meeting(u.history_))
                        if retries:
                            retries_used.append(np.mean(u.history_["retries"]))
                rows.append(
                    {
                        "part": "4 per-step guarantee (MLP)",
                        "setting": f"{name}, {kind}, batch {batch_size}, R 0.2, "
                        f"100 steps, {len(seeds)} seeds",
                        "method": "HAMU, MLP (64,)",
                        "value": "steps whose realised rise reaches the required "
                        f"one: verified {np.mean(shares[3]):.3f} (min "
                        f"{np.min(shares[3]):.3f}), first order only "
                        f"{np.mean(shares[0]):.3f} (min {np.min(shares[0]):.3f}); "
                        f"retries per step {np.mean(retries_used):.2f}",
                    }
                )
    return rows


REQUIREMENT_GRID = (
    ("absolute", 0.002),
    ("absolute", 0.01),
    ("absolute", 0.05),
    ("relative", 0.5),
)


def _flagged(shares):
    """Mean share of flagged steps over the runs that took a step."""
    shares = shares[np.isfinite(shares)]
    return f"{shares.mean():.2f}" if len(shares) else "n/a (no step taken)"


def part_stopping(seeds, datasets):
    rows = []
    for name in datasets:
        for kind in ("random 10%", "one class"):
            runs = {}
            for seed in seeds:
                X, Xt, y, yt, forget, base, gold, target = _forget_setup(
                    name, kind, seed
                )
                fitted = HAMUUnlearner(base, random_state=seed).fit(X, y)
                for requirement, c in REQUIREMENT_GRID:
                    for stop in (True, False):
                        u = copy.deepcopy(fitted).set_params(
                            requirement=requirement,
                            forget_improvement=c,
                            step_size=0.2,
                            max_steps=400,
                            stop_on_infeasible=stop,
                            target_forget_accuracy=target,
                        )
                        u.unlearn(X[forget], y[forget], X[~forget], y[~forget])
                        flagged = u.history_["degradation_unavoidable"]
                        runs.setdefault((requirement, c, stop), []).append(
                            (
                                u.stopped_reason_.startswith("degradation"),
                                len(u.history_["forget_loss"]),
                                np.mean(flagged) if flagged else np.nan,
                                *_scores(u, X, y, forget, Xt, yt)[:3],
                                target,
                            )
                        )
            for (requirement, c, stop), vals in runs.items():
                vals = np.array(vals, dtype=float)
                unit = " nats" if requirement == "absolute" else " of the reach"
                rows.append(
                    {
                        "part": "5 stopping signal (MLP)",
                        "setting": f"{name}, {kind}, R 0.2, {len(seeds)} seeds "
                        f"(retrained forget acc {vals[:, 6].mean():.3f})",
                        "method": f"HAMU, {requirement} c={c}{unit}, "
                        f"stop_on_infeasible={stop}",
                        "forget acc": f"{vals[:, 3].mean():.3f}",
                        "retain acc": f"{vals[:, 4].mean():.3f}",
                        "test acc": f"{vals[:, 5].mean():.3f}",
                        "value": f"stopped by the signal in {int(vals[:, 0].sum())}"
                        f"/{len(vals)} runs; steps taken {vals[:, 1].mean():.1f} "
                        f"(min {vals[:, 1].min():.0f}); share of steps taken "
                        f"flagged {_flagged(vals[:, 2])}",
                    }
                )
    return rows


def _interval(values):
    m, lo, hi = paired_interval(values, np.zeros(len(values)))
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


# The memorising network's forget gradient is tiny: the gradient baselines
# need larger learning rates than in part 1 to reach the forget accuracy.
MIA_GRIDS = {
    "HAMU": ("hamu", (0.05, 0.2, 0.5)),
    "gradient ascent": ("gradient_ascent", (0.2, 1.0, 5.0)),
    "NegGrad+": ("neggrad_plus", (0.2, 1.0, 5.0)),
}


def _mia_unlearn(fitted, method, target, X, y, forget, step):
    """A copy of ``fitted`` unlearned at ``step`` until the forget accuracy
    reaches ``target`` (part 6)."""
    u = copy.deepcopy(fitted).set_params(
        method=method,
        step_size=step,
        max_steps=400,
        target_forget_accuracy=target,
        stop_on_infeasible=False,
    )
    return u.unlearn(X[forget], y[forget], X[~forget], y[~forget])


def part_membership(seeds, n_shadow=16):
    X_all, y_all = load_digits(return_X_y=True)
    labels = ["original", "HAMU", "gradient ascent", "NegGrad+", "retrained (gold)"]
    lira, loss, acc = {k: [] for k in labels}, {k: [] for k in labels}, {}
    reached = {}
    for seed in seeds:
        rows = np.random.default_rng(seed).permutation(len(y_all))
        r, f, h = rows[:300], rows[300:450], rows[450:600]
        X, y = X_all[np.r_[r, f]], y_all[np.r_[r, f]]
        forget = np.r_[np.zeros(len(r), bool), np.ones(len(f), bool)]
        recipe = UnlearnableMLPClassifier(
            (256,), alpha=0.0, max_iter=200, n_iter_no_change=200, random_state=seed
        )
        gold = copy.deepcopy(recipe).fit(X[~forget], y[~forget])
        target = gold.score(X[forget], y[forget])
        fitted = HAMUUnlearner(recipe, random_state=seed).fit(X, y)
        models = {"original": fitted}
        for label, (method, grid) in MIA_GRIDS.items():
            unlearn = functools.partial(
                _mia_unlearn, fitted, method, target, X, y, forget
            )
            models[label], matched, _ = _hamu_models.best_matched(
                unlearn, grid, X, y, forget, target
            )
            reached.setdefault(label, []).append(matched)
        models["retrained (gold)"] = gold
        aucs = _hamu_models.lira(
            models, recipe, X, y, forget, X_all[h], y_all[h], n_shadow, seed
        )
        for label, auc in zip(models, aucs):
            m = models[label]
            lira[label].append(auc)
            loss[label].append(
                membership_inference_auc(m, X[forget], y[forget], X_all[h], y_all[h])
            )
            acc.setdefault(label, []).append(
                (
                    m.score(X[forget], y[forget]),
                    m.score(X[~forget], y[~forget]),
                    m.score(X_all[h], y_all[h]),
                )
            )
    out = []
    for label in labels:
        a = np.array(acc[label])
        value = f"loss-threshold AUC {_interval(loss[label])}"
        if label in reached:
            value += f"; forget acc matched in {sum(reached[label])}/{len(seeds)} seeds"
        if label != "retrained (gold)":
            d, lo, hi = paired_interval(lira[label], lira["retrained (gold)"])
            value += f"; LiRA minus retrained {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        out.append(
            {
                "part": "6 membership inference (LiRA)",
                "setting": f"digits, 300 retain + 150 forget, 150 held out, MLP "
                f"(256,) no decay, {n_shadow} shadows, {len(seeds)} seeds",
                "method": label,
                "forget acc": f"{a[:, 0].mean():.3f}",
                "retain acc": f"{a[:, 1].mean():.3f}",
                "test acc": f"{a[:, 2].mean():.3f}",
                "MIA AUC": f"LiRA {_interval(lira[label])}",
                "value": value,
            }
        )
    return out


def part_models(seeds, n_shadow=16):
    """Part 7: the CNN and the transformer (see ``_hamu_models.py``)."""
    rows = []
    for name, (X, y, recipe) in _hamu_models.datasets().items():
        per_seed = [
            _hamu_models.run_seed(name, recipe, X, y, seed, n_shadow=n_shadow)
            for seed in seeds
        ]
        rows += _hamu_models.table(name, per_seed, n_shadow, paired_interval)
    return rows


# --- the claims ledger ---------------------------------------------------------------

_DATASETS = {"digits": "digits", "generated": "make_classification"}
_KINDS = {"random": "random 10%", "class": "one class"}
_METHODS = {
    "gold": "retrained (gold)",
    "original": "original",
    "hamu": "HAMU",
    "ga": "gradient ascent",
    "neggrad": "NegGrad+",
}
_N_SEEDS = 5
_FIGURE = r"([+\-]?[\d.]+(?: \[[^\]]*\])?)"


def _find(rows, row):
    (found,) = [r for r in rows if all(r.get(k) == v for k, v in row.items())]
    return found


def _match(row, column, pattern):
    """The first group of ``pattern`` in a cell (a figure, maybe its interval)."""

    def compute(rows):
        return re.search(pattern, _find(rows, row)[column]).group(1)

    return compute


def _count(row, column, pattern):
    """A count "k/n" written in a cell, displayed "k of n"."""

    def compute(rows):
        found = re.search(pattern, _find(rows, row)[column])
        k, n = int(found.group(1)), int(found.group(2))
        return k, f"{k} of {n}"

    return compute


def _matched_comparisons(significant):
    """Comparisons of part 1 where HAMU's retain accuracy is not below (or,
    ``significant``, whose interval lies above zero), as "k of n"."""

    def compute(rows):
        cells = [
            re.search(_FIGURE, r["value"].split("retain acc")[1]).group(1)
            for r in rows
            if r["part"].startswith("1") and r.get("value", "")
        ]
        values = [
            float(c.split()[0])
            if not significant
            else float(re.search(r"\[([+\-]?[\d.]+),", c).group(1))
            for c in cells
        ]
        k = sum(v > 0 if significant else v >= 0 for v in values)
        return k, f"{k} of {len(values)}"

    return compute


def _first_order_over(pick, key):
    """Over the eight settings of part 4: the mean (``key="mean"``) or worst-run
    (``"min"``) share of steps meeting the requirement by first order alone."""
    pattern = {
        "mean": r"first order only ([\d.]+)",
        "min": r"first order only [\d.]+ \(min ([\d.]+)\)",
        "verified": r"verified [\d.]+ \(min ([\d.]+)\)",
        "retries": r"retries per step ([\d.]+)",
    }[key]

    def compute(rows):
        values = [
            re.search(pattern, r["value"]).group(1)
            for r in rows
            if r["part"].startswith("4")
        ]
        return min(values, key=float) if pick is min else max(values, key=float)

    return compute


def _hamu_claims():
    claims = [
        Claim(
            "matched_not_below",
            0,
            "value",
            compute=_matched_comparisons(False),
            metric="comparisons (4 settings x 2 baselines) where HAMU's retain "
            "accuracy at matched forget quality is at least the baseline's",
        ),
        Claim(
            "matched_significant",
            0,
            "value",
            compute=_matched_comparisons(True),
            metric="comparisons where the paired interval of HAMU - baseline lies "
            "above zero",
        ),
    ]
    for dkey, data in _DATASETS.items():
        for kkey, kind in _KINDS.items():
            setting = f"{data}, {kind}, {_N_SEEDS} seeds"
            for mkey, method in _METHODS.items():
                row = {"setting": setting, "method": method}
                claims += [
                    Claim(f"{dkey}_{kkey}_{mkey}_{col.split()[0].lower()}", row, col)
                    for col in ("forget acc", "retain acc", "test acc", "MIA AUC")
                ]
                if mkey in ("ga", "neggrad"):
                    claims.append(
                        Claim(
                            f"{dkey}_{kkey}_vs_{mkey}",
                            row,
                            "value",
                            metric="retain accuracy, HAMU - this (paired over seeds)",
                        )
                    )
        convex = {
            "part": "2 per-step guarantee (convex)",
            "setting": f"{data}, one class, 60 steps, {_N_SEEDS} seeds",
        }
        claims += [
            Claim(
                f"convex_{dkey}_share",
                convex,
                "value",
                compute=_match(convex, "value", r"rise: ([\d.]+)"),
                metric="share of steps meeting 95% of the required rise",
            ),
            Claim(
                f"convex_{dkey}_min",
                convex,
                "value",
                compute=_match(convex, "value", r"\(min ([\d.]+)\)"),
                metric="lowest share of a run",
            ),
        ]
        levels = "[0.0, 0.25, 0.5, 0.75, 1.0]"
        setting = f"{data}, rho in {levels}, {_N_SEEDS} seeds"
        cosine = {"setting": setting, "method": "HAMU on logistic regression"}
        similarity = {
            "setting": setting,
            "method": "forget_retain_similarity (per-sample gradients)",
        }
        claims += [
            Claim(
                f"hardness_{dkey}_spearman",
                cosine,
                "value",
                compute=_match(cosine, "value", r"g_f\) ([+\-]?[\d.]+)"),
                metric="Spearman correlation of rho and the first step's cosine",
            ),
            Claim(
                f"similarity_{dkey}_spearman",
                similarity,
                "value",
                compute=_match(similarity, "value", r"similarity\) ([\d.]+)"),
                metric="Spearman correlation of rho and forget_retain_similarity",
            ),
            Claim(
                f"similarity_{dkey}_rho0",
                similarity,
                "value",
                compute=_match(similarity, "value", r"by rho ([\d.]+)"),
                metric="forget_retain_similarity at rho 0",
            ),
            Claim(
                f"similarity_{dkey}_rho1",
                similarity,
                "value",
                compute=_match(similarity, "value", r"/ ([\d.]+)$"),
                metric="forget_retain_similarity at rho 1",
            ),
        ]
        for kkey, kind in _KINDS.items():
            for batch in (64, 256):
                row = {
                    "part": "4 per-step guarantee (MLP)",
                    "setting": f"{data}, {kind}, batch {batch}, R 0.2, 100 steps, "
                    f"{_N_SEEDS} seeds",
                }
                for key, pattern in (
                    ("verified", r"verified ([\d.]+)"),
                    ("verified_min", r"verified [\d.]+ \(min ([\d.]+)\)"),
                    ("first_order", r"first order only ([\d.]+)"),
                    ("first_order_min", r"first order only [\d.]+ \(min ([\d.]+)\)"),
                    ("retries", r"retries per step ([\d.]+)"),
                ):
                    claims.append(
                        Claim(
                            f"mlp_{dkey}_{kkey}_{batch}_{key}",
                            row,
                            "value",
                            compute=_match(row, "value", pattern),
                            metric=f"per-step guarantee on the MLP: {key}",
                        )
                    )
            for requirement, c in REQUIREMENT_GRID:
                unit = " nats" if requirement == "absolute" else " of the reach"
                ckey = f"{requirement}_{str(c).replace('.', '')}"
                for stop in (True, False):
                    method = (
                        f"HAMU, {requirement} c={c}{unit}, stop_on_infeasible={stop}"
                    )
                    where = (f"{data}, {kind}, R 0.2, ", method)
                    key = f"stop_{dkey}_{kkey}_{ckey}_{'on' if stop else 'off'}"
                    claims += [
                        Claim(
                            f"{key}_stopped",
                            None,
                            "value",
                            compute=_stopping(where, "value", r"in (\d+)/(\d+) runs"),
                            metric=f"{data}, {kind}, {method}: runs stopped by the "
                            "infeasibility signal",
                        ),
                        Claim(
                            f"{key}_forget",
                            None,
                            "forget acc",
                            compute=_stopping(where, "forget acc"),
                            metric=f"{data}, {kind}, {method}: forget accuracy",
                        ),
                        Claim(
                            f"{key}_retain",
                            None,
                            "retain acc",
                            compute=_stopping(where, "retain acc"),
                            metric=f"{data}, {kind}, {method}: retain accuracy",
                        ),
                    ]
    for name, key, pick, metric in (
        ("first_order_mean_min", "mean", min, "lowest mean share, first order alone"),
        ("first_order_mean_max", "mean", max, "highest mean share, first order alone"),
        ("first_order_worst_run", "min", min, "lowest share of one run, first order"),
        ("verified_worst_run", "verified", min, "lowest share of one run, verified"),
        ("retries_min", "retries", min, "fewest retries per step"),
        ("retries_max", "retries", max, "most retries per step"),
    ):
        claims.append(
            Claim(
                f"mlp_{name}",
                0,
                "value",
                compute=_first_order_over(pick, key),
                metric=f"over the eight MLP settings: {metric}",
            )
        )
    lira = {"part": "6 membership inference (LiRA)"}
    for mkey, method in _METHODS.items():
        row = dict(lira, method=method)
        claims += [
            Claim(
                f"lira_{mkey}",
                row,
                "MIA AUC",
                metric="LiRA AUC, forget rows against held-out rows",
            ),
            Claim(
                f"lira_{mkey}_loss_auc",
                row,
                "value",
                compute=_match(row, "value", r"loss-threshold AUC " + _FIGURE),
                metric="loss-threshold attack AUC",
            ),
            Claim(f"lira_{mkey}_retain", row, "retain acc"),
            Claim(f"lira_{mkey}_forget", row, "forget acc"),
        ]
        if mkey != "gold":
            claims.append(
                Claim(
                    f"lira_{mkey}_vs_gold",
                    row,
                    "value",
                    compute=_match(row, "value", r"retrained " + _FIGURE),
                    metric="LiRA AUC, this - retrained (paired over seeds)",
                )
            )
        if mkey in ("hamu", "ga", "neggrad"):
            claims.append(
                Claim(
                    f"lira_{mkey}_matched",
                    row,
                    "value",
                    compute=_count(row, "value", r"matched in (\d+)/(\d+) seeds"),
                    metric="seeds where the forget accuracy reached the retrained "
                    "model's",
                )
            )
    return claims


def _stopping(where, column, pattern=None):
    """A cell of part 5, whose setting also names the retrained forget accuracy:
    ``where`` is (the setting's beginning, the method); with ``pattern``, a
    count "k/n" in the cell, displayed "k of n"."""
    prefix, method = where

    def compute(rows):
        (row,) = [
            r
            for r in rows
            if r["part"].startswith("5")
            and r["setting"].startswith(prefix)
            and r["method"] == method
        ]
        if pattern is None:
            return row[column]
        found = re.search(pattern, row[column])
        k, n = int(found.group(1)), int(found.group(2))
        return k, f"{k} of {n}"

    return compute


_BUDGET = {
    "ours": "HAMUUnlearner at its defaults except the step size, picked per setting "
    "from a grid of 3 on the retain accuracy (as for every unlearner); the "
    "guarantee and stopping parts at the stated step size",
    "peers": "gradient ascent and NegGrad+ through the same unlearner, each with "
    "its step size picked from its own grid of 3 the same way, all stopping at "
    "the retrained model's forget accuracy; the model retrained without the "
    "forget rows is the reference",
}
LEDGER = {
    "hamu": Ledger(
        "HAMUUnlearner, UnlearnableMLPClassifier, lira_membership_auc",
        "scikit-learn's digits and make_classification (3000 rows, 5 classes), "
        "70/30 splits; forget a random 10% or one class; LiRA on 450 digits "
        "(150 forgotten) and 150 held out",
        _N_SEEDS,
        _BUDGET,
        _hamu_claims(),
    ),
    "hamu_models": Ledger(
        "HAMUUnlearner (HAMU and HAMU-U) on skorch nets through FrozenEstimator, "
        "lira_membership_auc",
        "scikit-learn's digits (8x8 images) for a CNN; the docstring topics "
        "(load_docstring_retrieval, 7 subpackages, 1074 texts) for a "
        "transformer; 300 retain, 150 forget (random), 150 held-out rows per seed",
        _N_SEEDS,
        {
            "ours": "HAMU and HAMU-U, each with its radius picked from a grid of 5 "
            "on the retain accuracy among runs that match the retrained forget "
            "accuracy, 250 steps at most",
            "peers": "gradient ascent, NegGrad+ and SCRUB (alpha 0.001, gamma 0.99), "
            "each with its learning rate picked from a grid of 5 the same way, 250 "
            "steps at most; the retrained model is the reference",
        },
        _hamu_models.claims(Claim, _match, _count, _FIGURE, n_seeds=_N_SEEDS),
    ),
    "hamu_models_quick": Ledger(
        "HAMUUnlearner on skorch nets",
        "as hamu_models (quick run, not quoted)",
        2,
        {"ours": "as hamu_models", "peers": "as hamu_models"},
        [],
    ),
    "hamu_quick": Ledger(
        "HAMUUnlearner, UnlearnableMLPClassifier, lira_membership_auc",
        "as hamu (quick run, not quoted)",
        2,
        _BUDGET,
        [],
    ),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds")
    parser.add_argument(
        "--parts", default="1,2,3,4,5,6", help="comma-separated parts to run"
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    # One thread: the machine's cores are shared; timings are not the point.
    torch.set_num_threads(1)
    start = time.perf_counter()
    seeds = range(2) if args.quick else range(5)
    datasets = ("digits", "make_classification")
    parts = {
        "1": lambda: part_matched(seeds, datasets),
        "2": lambda: part_guarantee(seeds, datasets),
        "3": lambda: part_hardness(seeds, datasets),
        "4": lambda: part_guarantee_mlp(seeds, datasets),
        "5": lambda: part_stopping(seeds, datasets),
        "6": lambda: part_membership(seeds),
        "7": lambda: part_models(seeds),
    }
    rows = []
    suffix = "_quick" if args.quick else ""
    for key in args.parts.split(","):
        if key == "7":  # its own results file
            write_results(
                "hamu_models" + suffix,
                parts[key](),
                COLUMNS,
                title="HAMU on a CNN and a transformer: matched forget accuracy "
                "and LiRA against gradient ascent, NegGrad+, SCRUB and retraining",
                notes=f"{time.perf_counter() - start:.0f} s so far. Intervals: "
                "paired 95% t over seeds.",
            )
            continue
        rows += parts[key]()
        write_results(
            "hamu" + suffix,
            rows,
            COLUMNS,
            title="HAMU: unlearning at matched forget quality, guarantee, "
            "stopping signal, membership inference",
            notes=f"{time.perf_counter() - start:.0f} s so far. Intervals: paired "
            "95% t over seeds.",
        )


if __name__ == "__main__":
    sys.exit(main())
