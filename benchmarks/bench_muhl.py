"""MuHL against tuned graph, hypergraph, edge-convolution and linear peers.

Part 1, generated cohorts (``make_brain_cohort``: the ``--nodes`` strongest
regions of the shipped mouse DTI connectomes, each node's 8 strongest
connections, ``--subjects`` subjects x 2 visits, 12 signal frames per
region). Three effects, each over ``--seeds`` cohorts (seeds 0 ..
seeds-1) and a ``--folds``-fold ``GroupKFold`` by subject (visits of a
subject never split):

- ``higher_order``: only patients have frames where 3 far-apart planted
  regions activate together; each region, and each pair, activates as
  often in controls, so node means and variances, connections and
  correlations between regions carry no label (the linear peers check it);
- ``pairwise``: three connections doubled in patients, nothing else;
- ``permuted``: the higher-order cohorts with subject labels permuted.

Methods: ``MuHLClassifier`` at its defaults (per-subject hyperedges) and its
ablations (population-level hyperedges, fixed k-NN hyperedges, multi-scale
(0, 1, 4) instead of the single default scale, a plain GCN); torch-geometric's
``GCNConv`` and ``HypergraphConv`` (fixed k-NN hyperedges) graph classifiers
and a BrainNetCNN-style network, each choosing among the same 3
configurations on a by-subject validation part of the training rows
(``benchmarks/_muhl_baselines.py``); logistic regression with ``C`` chosen by
5-fold CV on the full row, on the node signals alone and on the functional
connectivity (each row's correlations between its regions' frames).
Accuracy per split; MuHL minus each method with the 95% paired t interval
over the seeds x folds splits; precision of MuHL's top regions
(``node_importance_``) against the planted ones. Each effect is a part
(``--effects higher_order``, ``--effects pairwise``, ``--effects permuted``)
whose raw splits are stored under ``results/muhl_parts/``; every run
summarises all the parts present into ``results/muhl.json``.

Part 2, real data (``--mice``): the 32 mouse connectomes' genotype (4
classes x 8), 4-fold stratified CV repeated over ``--seeds`` shuffles,
vectorised raw weights; MuHL (and its ablations) against logistic regression.

Part 3, speed (``--speed``): seconds per training epoch at 400 subjects x
200 regions on the CPU, beside the peers (3 epochs each, the input
preparation timed apart).

Run ``python benchmarks/bench_muhl.py`` (``--quick`` for a smoke run); the
splits run in ``--jobs`` processes of one torch thread each.
"""

import argparse
import json
import time
import warnings

import numpy as np
from _common import RESULTS, paired_interval, write_results
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, StratifiedKFold

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.datasets import load_mice_connectomes, make_brain_cohort
from sklearn_ext.network import ConnectomeVectorizer, MuHLClassifier

MUHL = "MuHL"
ABLATIONS = {
    "MuHL population-level hyperedges": {"hypergraph": "population"},
    "MuHL fixed k-NN hyperedges": {"hypergraph": "knn"},
    "MuHL multi-scale (0, 1, 4)": {"scales": (0.0, 1.0, 4.0)},
    "MuHL plain GCN (no hyperedges)": {"hypergraph": "none"},
}
GCN = "GCN (torch-geometric, tuned)"
HGC = "HypergraphConv (torch-geometric, k-NN, tuned)"
BNC = "BrainNetCNN-style (tuned)"
LR_FULL = "logistic regression, full row (CV'd C)"
LR_NODE = "logistic regression, node signals (CV'd C)"
LR_FC = "logistic regression, functional connectivity (CV'd C)"
# Every peer: the target is MuHL against the best of these by mean accuracy.
PEERS = (GCN, HGC, BNC, LR_FULL, LR_NODE, LR_FC)
EFFECTS = ("higher_order", "pairwise", "permuted")
# The pairwise control plants 3 edges doubled in patients.
_PAIRWISE = {"n_planted": 6, "effect_size": 1.0}


def _models(n_node_features, seed, max_iter):
    from _muhl_baselines import (
        PEER_CONFIGS,
        BrainNetCNNClassifier,
        GCNGraphClassifier,
        HypergraphConvClassifier,
        TunedPeer,
        logistic_anchor,
        logistic_functional,
        logistic_node_features,
    )

    common = {"n_node_features": n_node_features, "random_state": seed}
    models = {MUHL: MuHLClassifier(**common)}
    for name, params in ABLATIONS.items():
        models[name] = MuHLClassifier(**common, **params)
    peer = {**common, "max_iter": max_iter}
    models[GCN] = TunedPeer(GCNGraphClassifier(**peer), PEER_CONFIGS)
    models[HGC] = TunedPeer(HypergraphConvClassifier(**peer), PEER_CONFIGS)
    models[BNC] = TunedPeer(BrainNetCNNClassifier(**peer), PEER_CONFIGS)
    models[LR_FULL] = logistic_anchor()
    models[LR_NODE] = logistic_node_features(n_node_features)
    if n_node_features >= 3:
        models[LR_FC] = logistic_functional(n_node_features)
    return models


def _cohort(effect, seed, args):
    kw = _PAIRWISE if effect == "pairwise" else {}
    return make_brain_cohort(
        args.subjects,
        n_nodes=args.nodes,
        effect="higher_order" if effect == "permuted" else effect,
        n_visits=2,
        random_state=seed,
        **kw,
    )


def _one_split(effect, seed, fold, args, only=None):
    """Accuracy of every method on one fold of one cohort."""
    import torch
    from _muhl_baselines import TunedPeer

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    data = _cohort(effect, seed, args)
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
    models = _models(data.n_node_features, seed, args.peer_iter)
    for name, model in models.items():
        if only is not None and name not in only:
            continue
        start = time.perf_counter()
        if isinstance(model, TunedPeer):
            model.fit(X[train], y[train], groups=groups[train])
        else:
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


def _part_path(effect):
    folder = RESULTS / "muhl_parts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{effect}.json"


def cohorts(args):
    """Run the effects in ``args.effects``, store each one's raw splits as a
    part (``results/muhl_parts/<effect>.json``), and summarise every part
    present, so the effects can run as separate processes."""
    tasks = [
        (effect, seed, fold)
        for effect in args.effects
        for seed in range(args.seeds)
        for fold in range(min(args.folds, args.first_folds or args.folds))
    ]
    permuted_only = (MUHL, LR_FULL, LR_NODE)
    pairwise_only = (MUHL, *PEERS)
    results = Parallel(n_jobs=args.jobs, verbose=5)(
        delayed(_one_split)(
            effect,
            seed,
            fold,
            args,
            {"permuted": permuted_only, "pairwise": pairwise_only}.get(effect),
        )
        for effect, seed, fold in tasks
    )
    for effect in args.effects:
        runs = [list(r) for r in results if r[0] == effect]
        _part_path(effect).write_text(json.dumps(runs) + "\n")
    rows, notes = [], []
    results = []
    effects = [e for e in EFFECTS if _part_path(e).exists()]
    for effect in effects:
        results += json.loads(_part_path(effect).read_text())
    for effect in effects:
        runs = [r for r in results if r[0] == effect]
        names = list(runs[0][3])
        acc = {n: np.array([r[3][n]["accuracy"] for r in runs]) for n in names}
        best_peer = max((n for n in PEERS if n in acc), key=lambda n: acc[n].mean())
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
                row["top-k precision"] = float(
                    np.mean([r[3][MUHL]["precision"] for r in runs])
                )
            rows.append(row)
        if effect != "permuted":
            mean, lo, hi = paired_interval(acc[MUHL], acc[best_peer])
            notes.append(
                f"{effect}: best peer {best_peer} "
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
    if hops:
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
    # MuHL against the linear anchor (the ablations are measured on the
    # cohorts, where they have something to find).
    models = {MUHL: MuHLClassifier(random_state=seed), LR_FULL: logistic_anchor()}
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
    X, y, f = data.data, data.target, data.n_node_features
    epochs = 3
    rows = []
    # MuHL's one-off input preparation (graph spectra of every subject).
    model = MuHLClassifier(n_node_features=f, max_iter=epochs, random_state=0)
    model.fit(X[:20], y[:20])
    start = time.perf_counter()
    with torch.no_grad():
        node_inputs(torch.as_tensor(X, dtype=torch.float64), model._spec)
    prep = time.perf_counter() - start
    candidates = {
        MUHL: MuHLClassifier(n_node_features=f, max_iter=epochs, random_state=0),
        GCN: GCNGraphClassifier(n_node_features=f, max_iter=epochs, random_state=0),
        HGC: HypergraphConvClassifier(
            n_node_features=f, max_iter=epochs, random_state=0
        ),
        BNC: BrainNetCNNClassifier(n_node_features=f, max_iter=epochs, random_state=0),
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
    "population": "MuHL population-level hyperedges",
    "knn": "MuHL fixed k-NN hyperedges",
    "multiscale": "MuHL multi-scale (0, 1, 4)",
    "gcn_ablation": "MuHL plain GCN (no hyperedges)",
    "gcn": GCN,
    "hypergraphconv": HGC,
    "brainnetcnn": BNC,
    "logistic": LR_FULL,
    "logistic_nodes": LR_NODE,
    "logistic_fc": LR_FC,
}
_BUDGET = {
    "ours": "MuHLClassifier at its defaults (n_node_features = the cohort's "
    "frames), no tuning, early-stopped on its own 20% validation part; the "
    "ablations change one parameter",
    "peers": "torch-geometric GCNConv and HypergraphConv graph classifiers and a "
    "BrainNetCNN-style network (benchmarks/_muhl_baselines.py), each choosing "
    "among 3 configurations (learning rate x weight decay) on a 25% by-subject "
    "validation part of the training rows (TunedPeer); logistic regression with "
    "C chosen by 5-fold CV on the training rows, on the full row, on the node "
    "signals alone and on the functional connectivity",
}
_PERMUTED = ("muhl", "logistic", "logistic_nodes")
_PAIRWISE_KEYS = (
    "muhl",
    "gcn",
    "hypergraphconv",
    "brainnetcnn",
    "logistic",
    "logistic_nodes",
    "logistic_fc",
)


def _cohort_claims():
    claims = []
    for effect in ("higher_order", "pairwise", "permuted"):
        for key, method in _METHODS.items():
            if effect == "permuted" and key not in _PERMUTED:
                continue
            if effect == "pairwise" and key not in _PAIRWISE_KEYS:
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
                    "top-k precision",
                    metric="share of MuHL's top-k regions (k planted) that are planted",
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
    for key in ("muhl", "logistic"):
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
        "make_brain_cohort: 40 regions of the mouse connectome, 100 subjects x 2 "
        "visits, 12 signal frames per region; effects higher_order (joint "
        "co-activation of 3 far-apart regions, node and pair statistics matched), "
        "pairwise (3 connections doubled) and permuted labels; 3-fold "
        "GroupKFold by subject",
        "seeds 0-4 x 3-fold GroupKFold (--first-folds K keeps K folds a seed; "
        "the notes give the split count)",
        _BUDGET,
        _cohort_claims(),
    ),
    "muhl_mice": Ledger(
        "MuHLClassifier",
        "load_mice_connectomes: 32 mice, genotype (4 classes x 8), vectorised raw "
        "weights; 4-fold stratified CV",
        "5 shuffles x 4 folds",
        {
            "ours": "MuHLClassifier at its defaults, no tuning; the ablations "
            "change one parameter",
            "peers": "standardised logistic regression, C chosen by 5-fold CV",
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
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--peer-iter", type=int, default=40, dest="peer_iter")
    parser.add_argument(
        "--first-folds",
        type=int,
        default=0,
        dest="first_folds",
        help="run only the first K folds of each seed's GroupKFold (0: all)",
    )
    parser.add_argument(
        "--effects",
        default="higher_order,pairwise,permuted",
        help="comma-separated cohort effects to run (part 1)",
    )
    parser.add_argument("--speed", action="store_true", help="run part 3 only")
    parser.add_argument("--mice", action="store_true", help="run part 2 only")
    args = parser.parse_args()
    args.effects = args.effects.split(",")
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
            "top-k precision",
            "s per fit",
        ],
        title="MuHL against peers on generated cohorts (accuracy, grouped CV)",
        notes=notes,
    )


if __name__ == "__main__":
    main()
