"""Theseus: task vectors moved across widths, against the baselines.

Parts
-----
1. Exact sanity: the source moved onto itself (maps are the identity, the
   task vector comes back unchanged), and onto a copy with its hidden units
   permuted (the maps recover the permutation; the moved model computes what
   the fine-tuned source computes).
2. Digits, two MLPs trained on upright digits (hidden 64-64 and 96-96,
   different seeds); the 64-wide one is fine-tuned on shifted digits
   (rotated 30 degrees; Gaussian noise of sd 4) and its task vector moved to
   the 96-wide one with 256 unlabelled shifted calibration rows. Every
   transport's scale alpha is chosen on a shifted validation split from one
   grid. Reported: shifted test accuracy, the share of the direct fine-tune
   gap closed ((moved - target) / (fine-tuned target - target)), clean test
   accuracy (the base task), and Theseus minus each baseline paired over
   seeds; the time of fit + transform against the direct fine-tune's.
   Functional matching (``align="functional"``, ridge 0.1 as in part 5;
   added after part 5's first run) is reported against its two ablations,
   least squares and Theseus.
3. Sensitivity to the number of calibration rows (rotated digits).
4. Data the method was not tuned on: breast cancer (standardised), with
   scikit-learn MLPs of hidden 32-32 and 48-48 (the transporter's
   scikit-learn path); the shifted task flips the sign of a random 30% of the
   features and adds noise of 0.5 standard deviations; fine-tuning is 100
   epochs of ``partial_fit``.

5. Models that are not chains (``_theseus_graphs.py``, results
   ``theseus_graphs``): a residual CNN (8 to 16 channels) on rotated digits
   and a transformer (width 16 to 32, two heads) on the docstring topics with
   60% of the words replaced, both trained by skorch; Theseus and its
   functional matching (least squares anchored on the Procrustes update)
   against least squares (every layer, convolutions on their input patches), Hungarian
   matching, truncation and a random map; and a CNN and a transformer moved
   to ones with a block removed.

``--quick`` runs 2 seeds.
"""

import argparse
import copy
import re
import time
import warnings

import _theseus_graphs
import numpy as np
import torch
from _common import paired_interval, write_results
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.transfer import TaskVectorTransporter, task_vector
from sklearn_ext.transfer._digits_task import digits_transfer_task, fine_tune
from sklearn_ext.unlearning import UnlearnableMLPClassifier

FINE_TUNE_EPOCHS = 100
FLIP_SHARE = 0.3
ALPHAS = (0.5, 1.0, 1.5, 2.0, 3.0)
# The methods and baselines of part 5, with the MLPs' least-squares ridge.
METHODS = {
    **_theseus_graphs.METHODS,
    "least squares (no orthogonality)": {"align": "lstsq", "ridge": 0.1},
}
BASELINES = _theseus_graphs.BASELINES
COLUMNS = ["part", "setting", "method", "shifted acc", "gap closed", "clean acc"]


def accuracy(model, X, y):
    return float(np.mean(model.predict(X) == y))


def best_alpha_model(transporter, target, update, X_val, y_val):
    """The moved model at the alpha of ALPHAS best on validation."""
    scored = []
    for alpha in ALPHAS:
        model = transporter.set_params(alpha=alpha).apply(target, update)
        scored.append((accuracy(model, X_val, y_val), -alpha, model))
    return max(scored, key=lambda t: t[:2])[2]


def mlp(hidden, seed):
    return UnlearnableMLPClassifier(hidden, max_iter=100, random_state=seed)


def sanity(rows):
    task = digits_transfer_task(0)
    source = mlp((64, 64), 0).fit(task["X_train"], task["y_train"])
    tuned = fine_tune(source, task["S_train"], task["y_train"])
    tau = task_vector(tuned, source)
    calib = task["S_train"][:256]
    same = TaskVectorTransporter().fit(calib, source_base=source, target_base=source)
    map_err = max(np.abs(m - np.eye(len(m))).max() for m in same.maps_)
    moved = same.transform(tau)
    tau_err = max(float((moved[k] - tau[k]).abs().max()) for k in tau)
    rows.append(
        {
            "part": 1,
            "setting": "source = target",
            "method": "Theseus",
            "value": f"max |map - I| {map_err:.1e}; max |moved - tau| {tau_err:.1e}",
        }
    )
    # A copy with both hidden layers' units permuted.
    rng = np.random.default_rng(0)
    twin = copy.deepcopy(source)
    net = twin.module_
    perms = [torch.as_tensor(rng.permutation(64)) for _ in range(2)]
    with torch.no_grad():
        for i, (lin, nxt) in enumerate(((net[0], net[2]), (net[2], net[4]))):
            p = perms[i]
            lin.weight.copy_(lin.weight[p])
            lin.bias.copy_(lin.bias[p])
            nxt.weight.copy_(nxt.weight[:, p])
    fitted = TaskVectorTransporter().fit(calib, source_base=source, target_base=twin)
    recovered = [
        float(np.mean(fitted.maps_[k + 1].argmax(axis=1) == np.argsort(p.numpy())))
        for k, p in enumerate(perms)
    ]
    moved_model = fitted.apply(twin, fitted.transform(tau))
    S = task["S_test"]
    gap = np.abs(moved_model.predict_proba(S) - tuned.predict_proba(S)).max()
    rows.append(
        {
            "part": 1,
            "setting": "permuted hidden units",
            "method": "Theseus",
            "value": f"units recovered {recovered}; max |proba - fine-tuned "
            f"source's| {gap:.1e}",
        }
    )
    print(rows[-2]["value"], "|", rows[-1]["value"], flush=True)


def digits_part(rows, shift, seeds):
    per = {m: [] for m in [*METHODS, "target (no update)", "fine-tuned target"]}
    times = []
    for seed in seeds:
        task = digits_transfer_task(seed, shift)
        X, y, S = task["X_train"], task["y_train"], task["S_train"]
        source = mlp((64, 64), seed).fit(X, y)
        target = mlp((96, 96), seed + 100).fit(X, y)
        tau = task_vector(fine_tune(source, S, y), source)
        start = time.perf_counter()
        target_ft = fine_tune(target, S, y)
        t_ft = time.perf_counter() - start

        def score(model, task=task):
            return (
                accuracy(model, task["S_test"], task["y_test"]),
                accuracy(model, task["X_test"], task["y_test"]),
            )

        base, full = score(target), score(target_ft)
        per["target (no update)"].append((*base, 0.0))
        per["fine-tuned target"].append((*full, 1.0))
        for name, params in METHODS.items():
            start = time.perf_counter()
            tr = TaskVectorTransporter(random_state=seed, **params)
            update = tr.fit(S[:256], source_base=source, target_base=target).transform(
                tau
            )
            if name.startswith("Theseus (P"):
                times.append((time.perf_counter() - start) / t_ft)
            model = best_alpha_model(tr, target, update, task["S_val"], task["y_val"])
            s = score(model)
            per[name].append((*s, (s[0] - base[0]) / (full[0] - base[0])))
        print(
            f"{shift} seed {seed}: target {base[0]:.3f} fine-tuned {full[0]:.3f}"
            f" Theseus {per['Theseus (Procrustes)'][-1][0]:.3f}",
            flush=True,
        )
    for name, vals in per.items():
        v = np.array(vals)
        row = {
            "part": 2,
            "setting": shift,
            "method": name,
            "shifted acc": float(v[:, 0].mean()),
            "gap closed": float(v[:, 2].mean()),
            "clean acc": float(v[:, 1].mean()),
        }
        if name in BASELINES:
            d, lo, hi = paired_interval(
                np.array(per["Theseus (Procrustes)"])[:, 2], v[:, 2]
            )
            row["value"] = (
                f"Theseus - this, gap closed: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            )
        if name == _theseus_graphs.FUNCTIONAL:  # against its two ablations
            row["value"] = "; ".join(
                "this - {}, gap closed: {:+.3f} [{:+.3f}, {:+.3f}]".format(
                    label, *paired_interval(v[:, 2], np.array(per[other])[:, 2])
                )
                for label, other in (
                    ("least squares", "least squares (no orthogonality)"),
                    ("Theseus", "Theseus (Procrustes)"),
                )
            )
        rows.append(row)
    rows.append(
        {
            "part": 2,
            "setting": shift,
            "method": "time",
            "value": f"Theseus fit + transform / direct fine-tune of the target: "
            f"{np.mean(times):.3f}",
        }
    )


def calibration_part(rows, seeds, sizes=(16, 32, 64, 128, 256, 512)):
    closed = {n: [] for n in sizes}
    for seed in seeds:
        task = digits_transfer_task(seed)
        X, y, S = task["X_train"], task["y_train"], task["S_train"]
        source = mlp((64, 64), seed).fit(X, y)
        target = mlp((96, 96), seed + 100).fit(X, y)
        tau = task_vector(fine_tune(source, S, y), source)
        base = accuracy(target, task["S_test"], task["y_test"])
        full = accuracy(fine_tune(target, S, y), task["S_test"], task["y_test"])
        for n in sizes:
            tr = TaskVectorTransporter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                tr.fit(S[:n], source_base=source, target_base=target)
            model = best_alpha_model(
                tr, target, tr.transform(tau), task["S_val"], task["y_val"]
            )
            acc = accuracy(model, task["S_test"], task["y_test"])
            closed[n].append((acc - base) / (full - base))
    for n, v in closed.items():
        rows.append(
            {
                "part": 3,
                "setting": f"{n} calibration rows",
                "method": "Theseus",
                "gap closed": float(np.mean(v)),
            }
        )


def breast_cancer_part(rows, seeds):
    X, y = load_breast_cancer(return_X_y=True)
    per = {m: [] for m in ["Theseus (Procrustes)", *BASELINES[1:]]}
    for seed in seeds:
        X_tr, X_rest, y_tr, y_rest = train_test_split(
            X, y, test_size=0.5, random_state=seed, stratify=y
        )
        X_va, X_te, y_va, y_te = train_test_split(
            X_rest, y_rest, test_size=0.6, random_state=seed, stratify=y_rest
        )
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_va, X_te = (scaler.transform(a) for a in (X_tr, X_va, X_te))
        rng = np.random.default_rng(seed)
        flip = np.where(rng.random(X.shape[1]) < FLIP_SHARE, -1.0, 1.0)
        S_tr, S_va, S_te = (
            a * flip + rng.normal(0, 0.5, a.shape) for a in (X_tr, X_va, X_te)
        )

        def make(hidden, s):
            return MLPClassifier(hidden, max_iter=300, random_state=s)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            source = make((32, 32), seed).fit(X_tr, y_tr)
            target = make((48, 48), seed + 100).fit(X_tr, y_tr)
            tuned, target_ft = copy.deepcopy(source), copy.deepcopy(target)
            # partial_fit: a warm-started fit would stop early against the
            # best loss of the first task.
            for _ in range(FINE_TUNE_EPOCHS):
                tuned.partial_fit(S_tr, y_tr)
                target_ft.partial_fit(S_tr, y_tr)
        tau = task_vector(tuned, source)
        base, full = accuracy(target, S_te, y_te), accuracy(target_ft, S_te, y_te)
        for name in per:
            tr = TaskVectorTransporter(random_state=seed, **METHODS[name])
            update = tr.fit(S_tr, source_base=source, target_base=target).transform(tau)
            model = best_alpha_model(tr, target, update, S_va, y_va)
            acc = accuracy(model, S_te, y_te)
            per[name].append((acc, (acc - base) / max(full - base, 1e-9), base, full))
    ours = np.array(per["Theseus (Procrustes)"])
    for name, vals in per.items():
        v = np.array(vals)
        row = {
            "part": 4,
            "setting": "breast cancer, 30% of features sign-flipped + noise",
            "method": name,
            "shifted acc": float(v[:, 0].mean()),
            "gap closed": float(v[:, 1].mean()),
        }
        if name != "Theseus (Procrustes)":
            d, lo, hi = paired_interval(ours[:, 0], v[:, 0])
            row["value"] = f"Theseus - this, accuracy: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        rows.append(row)
    rows.append(
        {
            "part": 4,
            "setting": "breast cancer, 30% of features sign-flipped + noise",
            "method": "target / fine-tuned target",
            "shifted acc": f"{ours[:, 2].mean():.3f} / {ours[:, 3].mean():.3f}",
        }
    )


# --- the claims ledger ---------------------------------------------------------------

_SHIFTS = {"rotate30": "rotated 30 degrees", "noise4": "Gaussian noise of sd 4"}
_KEYS = {
    "Theseus (Procrustes)": "theseus",
    "Theseus, whiten 0.5": "whiten",
    "least squares (no orthogonality)": "lstsq",
    _theseus_graphs.FUNCTIONAL: "functional",
    "Hungarian matching": "hungarian",
    "truncate / zero-pad": "truncate",
    "random semi-orthogonal": "random",
    "target (no update)": "target",
    "fine-tuned target": "fine_tuned",
}
_CANCER = "breast cancer, 30% of features sign-flipped + noise"
_FIGURE = r"([+\-]?[\d.]+(?:e[+\-]\d+)? \[[^\]]*\]|[+\-]?[\d.]+(?:e[+\-]\d+)?)"


def _match(row, column, pattern, fmt=None):
    """The first group of ``pattern`` in a cell (a figure, maybe its interval)."""

    def compute(rows):
        (found,) = [r for r in rows if all(r.get(k) == v for k, v in row.items())]
        text = re.search(pattern, str(found[column])).group(1)
        return (float(text), format(float(text), fmt)) if fmt else text

    return compute


def _digits_comparisons(significant):
    """Comparisons of part 2 (2 shifts x 4 baselines) where Theseus closes more
    of the gap (or, ``significant``, whose paired interval lies above zero)."""

    def compute(rows):
        cells = [
            r["value"]
            for r in rows
            if r["part"] == 2 and r.get("value", "").startswith("Theseus - this")
        ]
        bounds = [
            float(re.search(r"\[([+\-]?[\d.]+),", c).group(1))
            if significant
            else float(re.search(r": ([+\-]?[\d.]+)", c).group(1))
            for c in cells
        ]
        k = sum(b > 0 for b in bounds)
        return k, f"{k} of {len(bounds)}"

    return compute


def _time_ratio(pick):
    def compute(rows):
        values = [
            float(re.search(r": ([\d.]+)", r["value"]).group(1))
            for r in rows
            if r["part"] == 2 and r["method"] == "time"
        ]
        return pick(values), f"{pick(values):.2f}"

    return compute


def _theseus_claims(parts):
    claims = []
    if "1" in parts:
        same = {"part": 1, "setting": "source = target"}
        permuted = {"part": 1, "setting": "permuted hidden units"}
        claims += [
            Claim(
                "identity_map_error",
                same,
                "value",
                compute=_match(same, "value", r"map - I\| (\S+);", ".1g"),
                metric="largest entry of map - identity, source onto itself",
            ),
            Claim(
                "identity_tau_error",
                same,
                "value",
                compute=_match(same, "value", r"moved - tau\| (\S+)$", ".1g"),
                metric="largest change of the task vector, source onto itself",
            ),
            Claim(
                "permuted_proba_gap",
                permuted,
                "value",
                compute=_match(permuted, "value", r"source's\| (\S+)$", ".1g"),
                metric="largest gap to the fine-tuned source's probabilities",
            ),
        ]
    if "2" in parts:
        claims += [
            Claim(
                "digits_ahead",
                0,
                "value",
                compute=_digits_comparisons(False),
                metric="comparisons (2 shifts x 4 baselines) where Theseus closes "
                "more of the gap on average",
            ),
            Claim(
                "digits_significant",
                0,
                "value",
                compute=_digits_comparisons(True),
                metric="comparisons whose paired interval lies above zero",
            ),
            Claim(
                "time_ratio_min",
                0,
                "value",
                compute=_time_ratio(min),
                metric="fit + transform time / direct fine-tune time, lower shift",
            ),
            Claim(
                "time_ratio_max",
                0,
                "value",
                compute=_time_ratio(max),
                metric="fit + transform time / direct fine-tune time, higher shift",
            ),
        ]
        for shift in _SHIFTS:
            for method, key in _KEYS.items():
                row = {"part": 2, "setting": shift, "method": method}
                claims += [
                    Claim(f"{shift}_{key}_gap", row, "gap closed", fmt=".3f"),
                    Claim(f"{shift}_{key}_shifted", row, "shifted acc", fmt=".3f"),
                    Claim(f"{shift}_{key}_clean", row, "clean acc", fmt=".3f"),
                ]
                if method in BASELINES:
                    claims.append(
                        Claim(
                            f"{shift}_vs_{key}",
                            row,
                            "value",
                            compute=_match(row, "value", r"closed: " + _FIGURE),
                            metric="gap closed, Theseus - this (paired over seeds)",
                        )
                    )
                if method == _theseus_graphs.FUNCTIONAL:
                    claims += [
                        Claim(
                            f"{shift}_functional_vs_{okey}",
                            row,
                            "value",
                            compute=_match(
                                row, "value", rf"this - {other}, gap closed: " + _FIGURE
                            ),
                            metric=f"gap closed, functional matching - {other} "
                            "(paired over seeds)",
                        )
                        for other, okey in (
                            ("least squares", "lstsq"),
                            ("Theseus", "theseus"),
                        )
                    ]
    if "3" in parts:
        claims += [
            Claim(
                f"calibration_{n}",
                {"part": 3, "setting": f"{n} calibration rows"},
                "gap closed",
                fmt=".2f",
            )
            for n in (16, 32, 64, 128, 256, 512)
        ]
    if "4" in parts:
        for method in ("Theseus (Procrustes)", *BASELINES[1:]):
            key = _KEYS[method]
            row = {"part": 4, "setting": _CANCER, "method": method}
            claims += [
                Claim(f"cancer_{key}_gap", row, "gap closed", fmt=".2f"),
                Claim(f"cancer_{key}_acc", row, "shifted acc", fmt=".3f"),
            ]
            if key != "theseus":
                claims.append(
                    Claim(
                        f"cancer_vs_{key}",
                        row,
                        "value",
                        compute=_match(row, "value", r"accuracy: " + _FIGURE),
                        metric="accuracy, Theseus - this (paired over seeds)",
                    )
                )
        ends = {"part": 4, "setting": _CANCER, "method": "target / fine-tuned target"}
        claims += [
            Claim(
                "cancer_target_acc",
                ends,
                "shifted acc",
                compute=_match(ends, "shifted acc", r"^([\d.]+) /"),
                metric="accuracy of the wide base on the shifted task",
            ),
            Claim(
                "cancer_fine_tuned_acc",
                ends,
                "shifted acc",
                compute=_match(ends, "shifted acc", r"/ ([\d.]+)$"),
                metric="accuracy of the wide base fine-tuned on the shifted task",
            ),
        ]
    return claims


_BUDGET = {
    "ours": "TaskVectorTransporter() (orthogonal Procrustes, whiten=0, "
    "ridge=1e-3) on 256 unlabelled calibration rows (the training rows on breast "
    "cancer); alpha picked on a validation split from (0.5, 1, 1.5, 2, 3)",
    "peers": "the other align options (least squares with ridge=0.1, Hungarian "
    "matching, truncation, a random semi-orthogonal map) on the same rows, alpha "
    "picked from the same grid; the wide model fine-tuned directly (100 epochs) "
    "is the upper reference",
}
_DATA = {
    "1": "digits, the 64-64 MLP onto itself and onto a permuted copy",
    "2": "scikit-learn's digits rotated 30 degrees or with pixel noise of sd 4; "
    "MLPs 64-64 and 96-96",
    "3": "rotated digits, 16 to 512 calibration rows",
    "4": "breast cancer (standardised), 30% of the features sign-flipped plus "
    "noise; scikit-learn MLPs 32-32 and 48-48",
}
_PARTS = ("1234", "1", "2", "3", "4", "12", "13", "14", "23", "24", "34", "123",
          "124", "134", "234")  # fmt: skip
_GRAPH_BUDGET = {
    "ours": "TaskVectorTransporter() on the traced models (orthogonal Procrustes, "
    "whiten=0), and align='functional' (ridge 0.1, set on development seeds "
    "12-14), with 256 unlabelled shifted calibration rows; alpha picked on a "
    "validation split from (0.5, 1, 1.5, 2, 3)",
    "peers": "least squares (align='lstsq', ridge 1e-3), whiten 0.5, Hungarian "
    "matching, truncation and a random "
    "semi-orthogonal map on the same rows and alpha grid; the wide model "
    "fine-tuned directly (15 epochs, as the source) is the upper reference",
}
LEDGER = {
    "theseus_graphs": Ledger(
        "TaskVectorTransporter on torch.fx-traced models, task_vector",
        "scikit-learn's digits (8x8 images) rotated 30 degrees for a residual CNN; "
        "the docstring topics (load_docstring_retrieval) with 60% of the words "
        "replaced for a one-block transformer",
        5,
        _GRAPH_BUDGET,
        _theseus_graphs.claims(Claim, _match, _FIGURE),
    ),
    "theseus_graphs_quick": Ledger(
        "TaskVectorTransporter on traced models",
        "as theseus_graphs (quick run, not quoted)",
        2,
        _GRAPH_BUDGET,
        [],
    ),
}
LEDGER |= {
    ("theseus" if parts == "1234" else f"theseus_parts{parts}")
    + ("_quick" if quick else ""): Ledger(
        "TaskVectorTransporter, task_vector",
        "; ".join(_DATA[p] for p in parts) + (" (quick run)" if quick else ""),
        2 if quick else 5,
        _BUDGET,
        [] if quick else _theseus_claims(parts),
    )
    for parts in _PARTS
    for quick in (False, True)
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="1234")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = range(2 if args.quick else 5)
    rows = []
    if args.parts == "5":  # its own results file
        write_results(
            "theseus_graphs" + ("_quick" if args.quick else ""),
            _theseus_graphs.part(seeds, ALPHAS, paired_interval),
            [*COLUMNS, "value"],
            title="Theseus on models that are not chains: a residual CNN and a "
            "transformer across widths",
            notes=f"{len(seeds)} seeds; alpha chosen on validation from {ALPHAS}.",
        )
        return
    if "1" in args.parts:
        sanity(rows)
    if "2" in args.parts:
        for shift in ("rotate30", "noise4"):
            digits_part(rows, shift, seeds)
    if "3" in args.parts:
        calibration_part(rows, seeds)
    if "4" in args.parts:
        breast_cancer_part(rows, seeds)
    write_results(
        ("theseus" if args.parts == "1234" else f"theseus_parts{args.parts}")
        + ("_quick" if args.quick else ""),
        rows,
        [*COLUMNS, "value"],
        title="Theseus: task vectors across widths (MLP 64-64 -> 96-96)",
        notes=f"{len(seeds)} seeds; alpha chosen on validation from {ALPHAS}.",
    )


if __name__ == "__main__":
    main()
