"""MuHL against graph, hypergraph and edge-convolution peers on brain networks.

Part 1, generated cohorts (``make_brain_cohort``: the 100 strongest regions
of the shipped mouse DTI connectomes, each node's 8 strongest connections,
``--subjects`` subjects x 2 visits, one node feature per region). Three
effects, each over ``--seeds`` cohorts (seeds 0 .. seeds-1) and a
``--folds``-fold ``GroupKFold`` by subject (visits of a subject never split):

- ``higher_order``: a k-of-n rule (3 of 6 regions, placed as far apart as
  the graph allows) on the node signals, no edge and no single region
  carrying the label;
- ``pairwise``: three connections doubled in patients, nothing else;
- ``permuted``: the higher-order cohorts with subject labels permuted.

Methods: ``MuHLClassifier`` at its defaults and its two ablations
(``hypergraph="knn"``: fixed k-NN hyperedges; ``hypergraph="none"``: a plain
GCN on the connectivity graph); torch-geometric's ``GCNConv`` and
``HypergraphConv`` (fixed k-NN hyperedges) graph classifiers, a
BrainNetCNN-style edge-to-edge network (``benchmarks/_muhl_baselines.py``),
and logistic regression on the standardised rows (the linear anchor).
Accuracy per split; MuHL minus each method with the 95% paired t interval
over the seeds x folds splits; precision of MuHL's top-6 regions
(``node_importance_``) against the planted ones.

Part 2, real data: the 32 mouse connectomes' genotype (4 classes x 8),
4-fold stratified CV repeated over ``--seeds`` shuffles, vectorised raw
weights; MuHL (and its ablations) against logistic regression.

Part 3, speed (``--speed``): seconds per training epoch at 400 subjects x
200 regions on the CPU, beside the peers (3 epochs each, the input
preparation timed apart).

Run ``python benchmarks/bench_muhl.py`` (``--quick`` for a smoke run); the
splits run in ``--jobs`` processes of one torch thread each.
"""

import argparse
import time
import warnings

import numpy as np
from _common import paired_interval, write_results
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, StratifiedKFold

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.datasets import load_mice_connectomes, make_brain_cohort
from sklearn_ext.network import ConnectomeVectorizer, MuHLClassifier

MUHL = "MuHL"
ABLATIONS = {
    "MuHL fixed k-NN hyperedges": {"hypergraph": "knn"},
    "MuHL plain GCN (no hyperedges)": {"hypergraph": "none"},
}
# The peers the headline target names (beaten by >= 5 points on the
# higher-order effect): the best of these, by mean accuracy.
HEADLINE_PEERS = (
    "GCN (torch-geometric)",
    "BrainNetCNN-style",
    "MuHL fixed k-NN hyperedges",
    "HypergraphConv (torch-geometric, k-NN)",
)


def _models(n_node_features, seed):
    from _muhl_baselines import (
        BrainNetCNNClassifier,
        GCNGraphClassifier,
        HypergraphConvClassifier,
        logistic_anchor,
    )

    common = {"n_node_features": n_node_features, "random_state": seed}
    models = {MUHL: MuHLClassifier(**common)}
    for name, params in ABLATIONS.items():
        models[name] = MuHLClassifier(**common, **params)
    models["GCN (torch-geometric)"] = GCNGraphClassifier(**common)
    models["HypergraphConv (torch-geometric, k-NN)"] = HypergraphConvClassifier(
        **common
    )
    models["BrainNetCNN-style"] = BrainNetCNNClassifier(**common)
    models["logistic regression"] = logistic_anchor()
    return models


def _one_split(effect, seed, fold, args, only=None):
    """Accuracy of every method on one fold of one cohort."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    data = make_brain_cohort(
        args.subjects,
        n_nodes=args.nodes,
        effect="higher_order" if effect == "permuted" else effect,
        n_visits=2,
        random_state=seed,
    )
    X, y, groups = data.data, data.target, data.groups
    if effect == "permuted":
        # Permute the subjects' labels (a subject's visits keep one label).
        rng = np.random.RandomState(1000 + seed)
        subjects = np.unique(groups)
        first = np.searchsorted(groups, subjects)
        shuffled = rng.permutation(y[first])
        y = shuffled[np.searchsorted(subjects, groups)]
    train, test = list(GroupKFold(args.folds).split(X, y, groups))[fold]
    out = {}
    for name, model in _models(1, seed).items():
        if only is not None and name not in only:
            continue
        start = time.perf_counter()
        model.fit(X[train], y[train])
        row = {
            "accuracy": float(model.score(X[test], y[test])),
            "seconds": time.perf_counter() - start,
        }
        if name == MUHL and effect != "permuted":
            top = np.argsort(-model.node_importance_)[: len(data.planted_nodes)]
            row["precision"] = float(np.isin(top, data.planted_nodes).mean())
        out[name] = row
    return effect, seed, fold, out, int(data.planted_min_hops)


def cohorts(args):
    tasks = [
        (effect, seed, fold)
        for effect in ("higher_order", "pairwise", "permuted")
        for seed in range(args.seeds)
        for fold in range(args.folds)
    ]
    permuted_only = (MUHL, "logistic regression", "GCN (torch-geometric)")
    results = Parallel(n_jobs=args.jobs, verbose=5)(
        delayed(_one_split)(
            effect, seed, fold, args, permuted_only if effect == "permuted" else None
        )
        for effect, seed, fold in tasks
    )
    rows, notes = [], []
    for effect in ("higher_order", "pairwise", "permuted"):
        runs = [r for r in results if r[0] == effect]
        names = list(runs[0][3])
        acc = {n: np.array([r[3][n]["accuracy"] for r in runs]) for n in names}
        best_peer = max(
            (n for n in HEADLINE_PEERS if n in acc), key=lambda n: acc[n].mean()
        )
        for name in names:
            mean, lo, hi = paired_interval(acc[MUHL], acc[name])
            row = {
                "effect": effect,
                "method": name,
                "accuracy": float(acc[name].mean()),
                "sd": float(acc[name].std(ddof=1)),
                "MuHL - this (95% CI)": (
                    ""
                    if name == MUHL
                    else f"{100 * mean:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
                ),
                "s per fit": float(np.mean([r[3][name]["seconds"] for r in runs])),
            }
            if name == MUHL and effect != "permuted":
                row["top-6 precision"] = float(
                    np.mean([r[3][MUHL]["precision"] for r in runs])
                )
            rows.append(row)
        if effect != "permuted":
            mean, lo, hi = paired_interval(acc[MUHL], acc[best_peer])
            notes.append(
                f"{effect}: best headline peer {best_peer} "
                f"({acc[best_peer].mean():.3f}); MuHL - best = {100 * mean:+.1f} "
                f"points [{100 * lo:+.1f}, {100 * hi:+.1f}] over {len(runs)} splits."
            )
        else:
            mean, lo, hi = paired_interval(acc[MUHL], np.full(len(runs), 0.5))
            notes.append(
                f"permuted: MuHL accuracy - 0.5 = {100 * mean:+.1f} points "
                f"[{100 * lo:+.1f}, {100 * hi:+.1f}]."
            )
    hops = sorted({r[4] for r in results if r[0] == "higher_order"})
    notes.append(f"Planted regions' smallest pairwise hop distance: {hops}.")
    return rows, " ".join(notes)


def _mice_split(seed, fold):
    import torch
    from _muhl_baselines import logistic_anchor

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    graphs, y = load_mice_connectomes(return_X_y=True)
    X = ConnectomeVectorizer().fit_transform(graphs)
    train, test = list(StratifiedKFold(4, shuffle=True, random_state=seed).split(X, y))[
        fold
    ]
    models = {MUHL: MuHLClassifier(random_state=seed)}
    for name, params in ABLATIONS.items():
        models[name] = MuHLClassifier(random_state=seed, **params)
    models["logistic regression"] = logistic_anchor()
    out = {}
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X[train], y[train])
        out[name] = (model.score(X[test], y[test]), time.perf_counter() - start)
    return out


def mice(args):
    results = Parallel(n_jobs=args.jobs)(
        delayed(_mice_split)(seed, fold)
        for seed in range(args.seeds)
        for fold in range(4)
    )
    rows = []
    for name in results[0]:
        acc = np.array([r[name][0] for r in results])
        rows.append(
            {
                "method": name,
                "accuracy": float(acc.mean()),
                "folds at 100%": f"{int((acc == 1).sum())} / {len(acc)}",
                "s per fit": float(np.mean([r[name][1] for r in results])),
            }
        )
    return rows


def speed(args):
    import torch
    from _muhl_baselines import (
        BrainNetCNNClassifier,
        GCNGraphClassifier,
        HypergraphConvClassifier,
    )

    from sklearn_ext.network._muhl_nn import node_inputs

    warnings.simplefilter("ignore")
    data = make_brain_cohort(400, n_nodes=200, random_state=0)
    X, y = data.data, data.target
    epochs = 3
    rows = []
    # MuHL's one-off input preparation (graph spectra of every subject).
    model = MuHLClassifier(n_node_features=1, max_iter=epochs, random_state=0)
    model.fit(X[:20], y[:20])
    start = time.perf_counter()
    with torch.no_grad():
        node_inputs(torch.as_tensor(X, dtype=torch.float64), model._spec)
    prep = time.perf_counter() - start
    candidates = {
        MUHL: MuHLClassifier(n_node_features=1, max_iter=epochs, random_state=0),
        "GCN (torch-geometric)": GCNGraphClassifier(
            n_node_features=1, max_iter=epochs, random_state=0
        ),
        "HypergraphConv (torch-geometric, k-NN)": HypergraphConvClassifier(
            n_node_features=1, max_iter=epochs, random_state=0
        ),
        "BrainNetCNN-style": BrainNetCNNClassifier(
            n_node_features=1, max_iter=epochs, random_state=0
        ),
    }
    per_epoch = {}
    for name, est in candidates.items():
        clone(est).set_params(max_iter=1).fit(X, y)  # warm-up
        start = time.perf_counter()
        est.fit(X, y)
        total = time.perf_counter() - start
        extra = prep if name == MUHL else 0.0
        per_epoch[name] = (total - extra) / est.n_iter_
        rows.append(
            {
                "method": name,
                "subjects x regions": "400 x 200",
                "s per epoch": per_epoch[name],
                "one-off preparation s": extra,
                "fit s (3 epochs)": total,
            }
        )
    for row in rows:
        row["epoch time / MuHL"] = per_epoch[row["method"]] / per_epoch[MUHL]
    return rows


_METHODS = {
    "muhl": MUHL,
    "knn": "MuHL fixed k-NN hyperedges",
    "gcn_ablation": "MuHL plain GCN (no hyperedges)",
    "gcn": "GCN (torch-geometric)",
    "hypergraphconv": "HypergraphConv (torch-geometric, k-NN)",
    "brainnetcnn": "BrainNetCNN-style",
    "logistic": "logistic regression",
}
_BUDGET = {
    "ours": "MuHLClassifier at its defaults (n_node_features=1 on the cohorts), "
    "no tuning; the ablations change one parameter",
    "peers": "torch-geometric GCNConv and HypergraphConv graph classifiers and a "
    "BrainNetCNN-style network (benchmarks/_muhl_baselines.py) with the same "
    "optimiser, epochs and early stopping; standardised logistic regression at "
    "scikit-learn's defaults; untuned",
}


def _cohort_claims():
    claims = []
    for effect in ("higher_order", "pairwise", "permuted"):
        for key, method in _METHODS.items():
            if effect == "permuted" and key not in ("muhl", "gcn", "logistic"):
                continue
            row = {"effect": effect, "method": method}
            claims.append(Claim(f"{effect}_{key}", row, "accuracy", fmt=".3f"))
            if key != "muhl":
                claims.append(
                    Claim(
                        f"{effect}_vs_{key}",
                        row,
                        "MuHL - this (95% CI)",
                        metric="accuracy points, MuHL - this",
                        peer_column="accuracy",
                    )
                )
        if effect != "permuted":
            claims.append(
                Claim(
                    f"{effect}_precision",
                    {"effect": effect, "method": MUHL},
                    "top-6 precision",
                    metric="share of MuHL's top-6 regions that are planted",
                    fmt=".2f",
                )
            )
    claims += [
        Claim(
            "permuted_vs_chance",
            None,
            "MuHL accuracy - 0.5 (points)",
            notes=r"permuted: MuHL accuracy - 0.5 = ([+\-\d.]+ points \[[^\]]*\])",
        ),
        Claim(
            "planted_hops",
            None,
            "smallest hop distance between planted regions",
            notes=r"smallest pairwise hop distance: \[(\d+)\]",
        ),
    ]
    return claims


def _mice_claims():
    claims = []
    for key in ("muhl", "knn", "gcn_ablation", "logistic"):
        method = _METHODS[key]
        claims += [
            Claim(f"{key}_acc", method, "accuracy", fmt=".2f"),
            Claim(f"{key}_perfect_folds", method, "folds at 100%"),
        ]
    claims.append(
        Claim(
            "folds",
            0,
            "folds at 100%",
            metric="folds in all (4 folds x seeds)",
            compute=lambda rows: int(rows[0]["folds at 100%"].split("/")[1]),
        )
    )
    return claims


def _speed_claims():
    claims = []
    for key in ("muhl", "gcn", "hypergraphconv", "brainnetcnn"):
        method = _METHODS[key]
        claims.append(Claim(f"{key}_epoch", method, "s per epoch", fmt=".2f"))
    claims.append(Claim("muhl_preparation", MUHL, "one-off preparation s", fmt=".1f"))

    def ratio(pick):
        def compute(rows):
            value = pick(
                float(r["epoch time / MuHL"]) for r in rows if r["method"] != MUHL
            )
            return value, f"{value:.0f}"

        return compute

    claims += [
        Claim(
            f"ratio_{name}",
            0,
            "epoch time / MuHL",
            metric=f"{name} over the peers of their epoch time / MuHL's",
            compute=ratio(pick),
        )
        for name, pick in (("min", min), ("max", max))
    ]
    return claims


LEDGER = {
    "muhl": Ledger(
        "MuHLClassifier",
        "make_brain_cohort: 100 regions of the mouse connectome, 200 subjects x 2 "
        "visits, one node signal per region; effects higher_order (3 of 6 "
        "regions), pairwise (3 connections doubled) and permuted labels; 3-fold "
        "GroupKFold by subject",
        "5 cohorts x 3 folds = 15 splits",
        _BUDGET,
        _cohort_claims(),
    ),
    "muhl_mice": Ledger(
        "MuHLClassifier",
        "load_mice_connectomes: 32 mice, genotype (4 classes x 8), vectorised raw "
        "weights; 4-fold stratified CV",
        "5 shuffles x 4 folds",
        {
            "ours": _BUDGET["ours"],
            "peers": "standardised logistic regression at scikit-learn's defaults",
        },
        _mice_claims(),
    ),
    "muhl_speed": Ledger(
        "MuHLClassifier",
        "make_brain_cohort(400, n_nodes=200)",
        "random_state=0",
        {
            "ours": "3 epochs of MuHLClassifier at its defaults after a warm-up "
            "fit; its one-off input preparation timed apart",
            "peers": "3 epochs of each peer after a warm-up fit",
        },
        _speed_claims(),
    ),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--subjects", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--speed", action="store_true", help="run part 3 only")
    parser.add_argument("--mice", action="store_true", help="run part 2 only")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.subjects, args.nodes = 2, 80, 40
    if args.speed:
        write_results(
            "muhl_speed",
            speed(args),
            [
                "method",
                "subjects x regions",
                "s per epoch",
                "epoch time / MuHL",
                "one-off preparation s",
                "fit s (3 epochs)",
            ],
            title="MuHL speed: seconds per training epoch on the CPU",
        )
        return
    if args.mice:
        write_results(
            "muhl_mice",
            mice(args),
            ["method", "accuracy", "folds at 100%", "s per fit"],
            title="Mouse connectome genotype (4 x 8), 4-fold CV x seeds",
        )
        return
    rows, notes = cohorts(args)
    write_results(
        "muhl",
        rows,
        [
            "effect",
            "method",
            "accuracy",
            "sd",
            "MuHL - this (95% CI)",
            "top-6 precision",
            "s per fit",
        ],
        title="MuHL against peers on generated cohorts (accuracy, grouped CV)",
        notes=notes,
    )


if __name__ == "__main__":
    main()
