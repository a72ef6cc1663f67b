"""NBCG on long-tailed multi-label data with a shortcut: shifted-test tail F1 vs peers.

Data: ``make_longtail_multilabel`` with 30 labels (Zipf exponent 1.2, most
frequent 0.3, rarest about 0.005), 200 features, label signatures of 5
features at signal 2 over unit noise, the planted label DAG (every tail label
has a head parent, parent effect +2 log-odds) and the shortcut: in training a
tail label's documents carry its head parent's features with probability 0.9
even when the parent is absent. 5000 training samples; two test sets of 5000:
the **shifted** one (shortcut strength 0, the shortcut broken) and an **iid**
one (shortcut strength 0.9, as in training). 5 seeds (each seed draws the
structure, the data and the models' randomness).

Methods, on the same data:

- ``NBCGClassifier`` (default settings);
- its ablations ``objective="sum"`` and ``coalitions="random"``;
- NBCG with a linear trunk (``hidden_layer_sizes=()``: the coalition channels
  read the features directly), to separate the trunk's capacity from the
  method;
- one-vs-rest logistic regression (scikit-learn, C=1);
- ``ClassifierChain`` of logistic regressions (random order);
- an MLP with the same trunk as NBCG (256 ReLU units, Adam, same minibatches
  and early stopping) and binary cross-entropy, focal loss (gamma=2), or
  class-balanced BCE (beta=0.999); see ``benchmarks/_multilabel_mlp.py``.

Metrics: tail-label macro-F1 (the 10 least frequent labels) on the shifted and
iid tests, micro-F1 on the shifted test, fit seconds (ratio to the BCE MLP).
The learned ``label_graph_`` against the planted DAG: precision and recall of
the directed edges and of the skeleton (undirected). Speed at 50 coalitions:
50 labels and ``n_coalitions=50``, the bargaining step (closed-form Gram at the
shared representation plus the Newton solve) timed alone and as a share of
the epoch, against the same model with ``objective="sum"``.

No multi-label text corpus ships inside a PyPI package that we know of (the
usual ones, Reuters-21578, RCV1, EUR-Lex, download at run time), so there is no
real-data part.

Run ``python benchmarks/bench_nbcg.py`` (``--quick`` for a smoke run).
"""

import argparse
import time
import warnings

import numpy as np
from _common import write_results
from _multilabel_mlp import MLPLossClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain

from sklearn_ext.datasets import make_longtail_multilabel
from sklearn_ext.multilabel import NBCGClassifier, nash_bargaining_weights

warnings.filterwarnings("ignore", category=ConvergenceWarning)
warnings.filterwarnings("ignore", message=".*rows of Y have no label.*")

DATA = {"n_labels": 30, "n_features": 200, "signal": 2.0}


def _methods(seed):
    lr = LogisticRegression(max_iter=1000)
    return {
        "NBCG (ours)": NBCGClassifier(random_state=seed),
        "NBCG, objective=sum": NBCGClassifier(objective="sum", random_state=seed),
        "NBCG, coalitions=random": NBCGClassifier(
            coalitions="random", random_state=seed
        ),
        "NBCG, linear trunk (hidden_layer_sizes=())": NBCGClassifier(
            hidden_layer_sizes=(), random_state=seed
        ),
        "one-vs-rest logistic": OneVsRestClassifier(lr),
        "ClassifierChain": ClassifierChain(lr, order="random", random_state=seed),
        "MLP, BCE": MLPLossClassifier("bce", random_state=seed),
        "MLP, focal": MLPLossClassifier("focal", random_state=seed),
        "MLP, class-balanced": MLPLossClassifier("cb", random_state=seed),
    }


def _edge_scores(learned, planted):
    G, T = learned > 0, planted > 0
    S = G | G.T
    directed = (G & T).sum()
    skeleton = (S & T).sum()
    n_skeleton = np.triu(S).sum()
    return {
        "edge_precision": directed / max(G.sum(), 1),
        "edge_recall": directed / T.sum(),
        "skeleton_precision": skeleton / max(n_skeleton, 1),
        "skeleton_recall": skeleton / T.sum(),
        "n_edges": int(G.sum()),
        "n_planted": int(T.sum()),
    }


def accuracy_part(seeds, n_samples):
    per = {}
    graphs = []
    for seed in seeds:
        X, Y, X_shift, Y_shift, info = make_longtail_multilabel(
            n_samples,
            n_test=n_samples,
            return_structure=True,
            random_state=seed,
            **DATA,
        )
        _, _, X_iid, Y_iid = make_longtail_multilabel(
            n_samples,
            n_test=n_samples,
            test_shortcut_strength=0.9,
            random_state=seed,
            **DATA,
        )
        tail = info.tail
        for name, model in _methods(seed).items():
            start = time.perf_counter()
            model.fit(X, Y)
            seconds = time.perf_counter() - start
            P_shift, P_iid = model.predict(X_shift), model.predict(X_iid)
            row = {
                "tail_f1_shift": f1_score(
                    Y_shift[:, tail], P_shift[:, tail], average="macro", zero_division=0
                ),
                "tail_f1_iid": f1_score(
                    Y_iid[:, tail], P_iid[:, tail], average="macro", zero_division=0
                ),
                "micro_f1_shift": f1_score(Y_shift, P_shift, average="micro"),
                "macro_f1_shift": f1_score(
                    Y_shift, P_shift, average="macro", zero_division=0
                ),
                "fit_seconds": seconds,
            }
            per.setdefault(name, []).append(row)
            print(seed, name, {k: round(v, 3) for k, v in row.items()}, flush=True)
            if name == "NBCG (ours)":
                graphs.append(_edge_scores(model.label_graph_, info.graph))
    mlp = np.mean([r["fit_seconds"] for r in per["MLP, BCE"]])
    rows = []
    for name, runs in per.items():
        row = {"method": name}
        for key in runs[0]:
            values = np.array([r[key] for r in runs])
            row[key] = f"{values.mean():.3f} ± {values.std():.3f}"
        row["fit_vs_mlp"] = np.mean([r["fit_seconds"] for r in runs]) / mlp
        rows.append(row)
    graph_rows = [{"seed": s, **g} for s, g in zip(seeds, graphs)]
    return rows, graph_rows, per


def speed_part(n_samples, n_labels=50):
    """Bargaining at 50 coalitions: epoch time against objective="sum", step alone."""
    import torch

    X, Y = make_longtail_multilabel(
        n_samples,
        n_labels=n_labels,
        n_features=200,
        signal=2.0,
        tail_fraction=0.3,
        random_state=0,
    )

    rows, per_epoch, fitted = [], {}, {}
    for objective in ("nash", "sum"):
        model = NBCGClassifier(
            n_coalitions=n_labels,
            objective=objective,
            max_iter=1,
            tol=0.0,
            n_iter_no_change=100,
            warm_start=True,
            random_state=0,
        ).fit(X, Y)
        # A warm start skips the label graph and coalitions: pure training.
        model.set_params(max_iter=5)
        start = time.perf_counter()
        model.fit(X, Y)
        per_epoch[objective] = (time.perf_counter() - start) / 5
        fitted[objective] = model
        rows.append(
            {
                "what": f"epoch, objective={objective}",
                "seconds": per_epoch[objective],
                "n_coalitions": len(model.coalitions_),
            }
        )
    # The bargaining computation alone on one minibatch of the fitted model:
    # Gram matrix at the shared representation plus the (warm-started) solve.
    model = fitted["nash"]
    K = len(model.coalitions_)
    batch = torch.tensor(X[:256], dtype=torch.float32)
    yb = torch.tensor(Y[:256], dtype=torch.float32)
    member = torch.zeros(n_labels, K)
    for c, labels in enumerate(model.coalitions_):
        member[labels, c] = 1.0
    surplus = torch.full((K,), 0.1)
    with torch.no_grad():
        logits, _ = model.module_(batch)
        _, raw = nash_bargaining_weights(torch.eye(K), surplus, return_raw=True)

        def step():
            E = torch.sigmoid(logits) - yb
            U = model.module_.readout()
            gram = member.T @ ((E.T @ E) * (U.T @ U)) @ member
            return nash_bargaining_weights(gram, surplus, init=raw)

        step()
        reps = 50
        start = time.perf_counter()
        for _ in range(reps):
            step()
        bargain = (time.perf_counter() - start) / reps
    n_batches = int(np.ceil(n_samples / 256))
    rows.append(
        {
            "what": "bargaining step alone, per minibatch of 256",
            "seconds": bargain,
            "n_coalitions": K,
        }
    )
    share = (per_epoch["nash"] - per_epoch["sum"]) / per_epoch["nash"]
    alone = bargain * n_batches / per_epoch["nash"]
    return rows, share, alone


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seeds = [0] if args.quick else [0, 1, 2, 3, 4]
    n_samples = 1000 if args.quick else 5000
    rows, graph_rows, _ = accuracy_part(seeds, n_samples)
    write_results(
        "nbcg_longtail",
        rows,
        [
            "method",
            "tail_f1_shift",
            "tail_f1_iid",
            "micro_f1_shift",
            "macro_f1_shift",
            "fit_seconds",
            "fit_vs_mlp",
        ],
        title="NBCG: long-tailed labels with a broken shortcut "
        f"({len(seeds)} seeds, mean ± std)",
        notes="tail = the 10 least frequent of 30 labels; shift = shortcut strength "
        "0.9 in training, 0 in the shifted test; iid = 0.9 in both. F1 at the 0.5 "
        "probability threshold for every method.",
    )
    write_results(
        "nbcg_label_graph",
        graph_rows,
        [
            "seed",
            "edge_precision",
            "edge_recall",
            "skeleton_precision",
            "skeleton_recall",
            "n_edges",
            "n_planted",
        ],
        title="NBCG: learned label graph against the planted DAG",
    )
    n_speed = 1000 if args.quick else 5000
    speed_rows, share, alone = speed_part(n_speed)
    write_results(
        "nbcg_speed",
        speed_rows,
        ["what", "seconds", "n_coalitions"],
        title="NBCG: cost of bargaining at 50 coalitions (50 labels, one each)",
        notes=f"Epoch time: 5 epochs of a warm-started fit (no label graph, no "
        f"setup), divided by 5. Bargaining share of the nash epoch, from "
        f"the epoch difference against objective='sum': {share:.1%}; from the "
        f"step timed alone (times the {int(np.ceil(n_speed / 256))} "
        f"minibatches of an epoch): {alone:.1%}.",
    )


if __name__ == "__main__":
    main()
