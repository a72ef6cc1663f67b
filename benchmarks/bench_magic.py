"""MAGIC: language-informed image clustering against its peers and its ablations.

Three data sets, every one with an image view and three text views (coarse,
medium, fine descriptions):

- ``gen``: ``make_multigranular`` at its defaults (900 samples, 9 fine
  classes in 3 superclasses; the finest descriptions wrong for 20% of the
  samples, coarser ones for 13% and 7%; 24 task-irrelevant columns per text
  view; the image's semantics masked by nuisance variation).
- ``digits``: ``load_described_digits(description_noise=0.2)``: the 1,797
  8x8 digits, the pixels as the image view, and three descriptions per image
  written from the guess of a deliberately weak recogniser of our own (a
  nearest-centroid model on 4x4-downsampled images, cross-fitted on two
  folds: about 80% right), replaced by a uniformly drawn wrong digit for 20%
  of the images (a hallucinating describer): the descriptions are right for
  about 64% of the images. The texts are embedded with all-MiniLM-L6-v2
  (``encode_texts``, 384 columns per granularity).
- ``mfeat`` (not tuned on): the UCI handwritten numerals of ``load_mfeat``
  (2,000 images), the 240-pixel ``pix`` view as the image view, described by
  the same recipe (the recogniser sees the 15x16 pixel grid averaged into
  4x3 blocks: about 85% right; 20% hallucinated).

Methods: k-means on the standardised image; spectral clustering (15-NN
graph) on the standardised image; TAC-style concatenation (the image and the
mean of the text views, each view standardised and scaled to unit mean
squared norm) + k-means, which is TAC's training-free variant; TAC itself
(its cross-modal mutual distillation, our implementation in
``_magic_baselines.py``, tuned on development seeds 100-102 by ``--parts
tune``); all views concatenated + k-means and + spectral clustering (15-NN
graph), the strongest plain baselines; k-means on the
finest text alone (the descriptions' own clustering, for reference);
``MAGICClustering`` at its defaults; MAGIC given a single granularity (the
image and that one text view); and the ablations: no adapters
(``adapters=False``), image teacher instead of the consensus
(``teacher="image"``), plain contrastive loss (``robust_q=0``), equal fusion
of image and text (``robust_fusion=False``), uniform granularity weights,
no redundancy penalty, the superseded weighting (softmax of the agreements
at the fixed temperature 0.03, the alignment weighted too). ACC
(Hungarian), NMI and ARI, mean and sd over 5 seeds (the seed draws the
data, the descriptions and the model's randomness), and the paired 95%
interval of MAGIC's ACC minus each method's.

Part 4, noise: on ``digits``, description noise 0, 0.2, 0.4, 0.6 (3 seeds):
MAGIC, MAGIC with the plain loss and equal fusion, TAC-style
concatenation, k-means on the fine text, k-means on the image.

Part 5, independent describers (``indep``): ``make_multigranular(900,
description_noise=(0.05, 0.15, 0.3))``: each granularity described by its
own describer with its own, independent errors (the coarse one wrong for 5%
of the images, the medium for 15%, the fine for 30%), so that a coarse
description is often right where the fine one is wrong. MAGIC at its
defaults against MAGIC given each single granularity, the per-seed best of
the three, and the weighting ablations (uniform weights; the superseded
fixed-temperature softmax), TAC and the plain baselines (5 seeds).

Part 6, sizes: ``make_multigranular(n)`` for n = 500, 3,000 and 10,000
(5 seeds): MAGIC at its defaults (a schedule of optimisation steps, the same
at every size) against TAC-style concatenation and all views concatenated
+ k-means; fit seconds (a timing column: valid only on an idle machine).

Part ``tune`` (not a benchmark table of the guide): TAC's 8-configuration
search on development seeds 100-102 of ``gen`` and ``indep``.

Run ``python benchmarks/bench_magic.py`` (``--parts gen digits mfeat noise
indep sizes``, ``--seeds``, ``--quick``).
"""

import argparse
import time
import warnings

import numpy as np
from _common import paired_interval, write_results
from _magic_baselines import (
    TAC_CHOSEN,
    TAC_DEFAULTS,
    TAC_GRID,
    concat_kmeans,
    concat_spectral,
    tac,
)
from _magic_baselines import (
    blocks as _blocks,
)
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.cluster import MAGICClustering
from sklearn_ext.datasets import (
    encode_texts,
    load_described_digits,
    load_mfeat,
    make_multigranular,
)
from sklearn_ext.datasets._described_digits import _describe
from sklearn_ext.utils import clustering_accuracy

ABLATIONS = {
    "MAGIC, no adapters": {"adapters": False},
    "MAGIC, image teacher (no consensus)": {"teacher": "image"},
    "MAGIC, plain contrastive (robust_q=0)": {"robust_q": 0.0},
    "MAGIC, equal fusion (robust_fusion=False)": {"robust_fusion": False},
    "MAGIC, uniform granularity weights": {"granularity_weighting": "uniform"},
    "MAGIC, no redundancy penalty": {"redundancy_penalty": 0.0},
    "MAGIC, fixed temperature 0.03 (superseded rule)": {
        "granularity_weighting": "softmax"
    },
}
INDEP_NOISE = (0.05, 0.15, 0.3)
GRANULARITIES = ("coarse", "medium", "fine")


def _embed(descriptions):
    return np.hstack([encode_texts(texts) for texts in descriptions])


def load(name, seed, noise=0.2):
    """X, y, views of one data set and seed."""
    if name == "gen":
        return make_multigranular(random_state=seed)
    if name == "indep":
        return make_multigranular(description_noise=INDEP_NOISE, random_state=seed)
    if name == "digits":
        d = load_described_digits(description_noise=noise, random_state=seed)
        X = np.hstack([d.images, _embed(d.descriptions)])
        return X, d.target, [64, 384, 384, 384]
    if name == "mfeat":
        d = load_mfeat()
        edges = np.cumsum([0, *d.views])
        pix = d.data[:, edges[3] : edges[4]]
        small = pix.reshape(-1, 4, 4, 3, 5).mean(axis=(2, 4)).reshape(-1, 12)
        target = np.asarray(d.target, dtype=np.int64)
        rng = np.random.RandomState(seed)
        descriptions, _, _ = _describe(small, target, noise, rng)
        X = np.hstack([pix, _embed(descriptions)])
        return X, target, [240, 384, 384, 384]
    raise ValueError(name)


def scores(y, labels):
    return (
        clustering_accuracy(y, labels),
        normalized_mutual_info_score(y, labels),
        adjusted_rand_score(y, labels),
    )


def baselines(X, y, views, k, seed, peers=True):
    blocks = _blocks(X, views)
    image = blocks[0] * np.sqrt(views[0])
    tac_free = np.hstack([blocks[0], np.mean(blocks[1:], axis=0)])

    def km(Z):
        return KMeans(k, n_init=10, random_state=seed).fit_predict(Z)

    spectral = SpectralClustering(
        k, affinity="nearest_neighbors", n_neighbors=15, random_state=seed
    )
    out = {
        "k-means, image": km(image),
        "TAC-style concat (image + mean text) + k-means": km(tac_free),
        "k-means, fine text alone (reference)": km(blocks[-1]),
    }
    if not peers:  # the noise part's three
        return out
    return {
        **out,
        "spectral (15-NN), image": spectral.fit_predict(image),
        "all views concatenated + k-means": km(np.hstack(blocks)),
        "spectral (15-NN), all views concatenated": concat_spectral(X, views, k, seed),
        "TAC (cross-modal mutual distillation)": tac(X, views, k, seed, **TAC_CHOSEN),
    }


def magic(X, views, k, seed, **params):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = MAGICClustering(
            k, views=views, random_state=seed, device="cpu", **params
        ).fit(X)
    return model.labels_, time.perf_counter() - start, model


def single(X, views, g, k, seed):
    edges = np.cumsum([0, *views])
    cols = np.r_[0 : views[0], edges[g + 1] : edges[g + 2]]
    return magic(X[:, cols], [views[0], views[g + 1]], k, seed)[0]


def run_dataset(name, seeds, quick):
    results, seconds, weights = {}, {"MAGIC": [], "k-means": []}, []
    for seed in seeds:
        X, y, views = load(name, seed)
        k = len(np.unique(y))
        start = time.perf_counter()
        base = baselines(X, y, views, k, seed)
        seconds["k-means"].append(time.perf_counter() - start)
        labels, sec, model = magic(X, views, k, seed)
        seconds["MAGIC"].append(sec)
        weights.append(model.granularity_weights_)
        runs = {"MAGIC (ours, defaults)": labels, **base}
        for g, gname in enumerate(GRANULARITIES):
            runs[f"MAGIC, {gname} granularity only"] = single(X, views, g, k, seed)
        if name == "indep":
            accs = [
                clustering_accuracy(y, runs[f"MAGIC, {g} granularity only"])
                for g in GRANULARITIES
            ]
            best = GRANULARITIES[int(np.argmax(accs))]
            runs[_BEST_SINGLE] = runs[f"MAGIC, {best} granularity only"]
        for label, params in ABLATIONS.items():
            weighting = "granularity" in label or "temperature" in label
            if name == "indep" and not weighting:
                continue
            if quick and label not in list(ABLATIONS)[:2]:
                continue
            runs[label] = magic(X, views, k, seed, **params)[0]
        for method, lab in runs.items():
            results.setdefault(method, []).append(scores(y, lab))
        print(name, seed, {m: round(v[-1][0], 3) for m, v in results.items()})
    ours = np.array(results["MAGIC (ours, defaults)"])[:, 0]
    rows = []
    for method, values in results.items():
        values = np.array(values)
        row = {"method": method}
        for j, metric in enumerate(("ACC", "NMI", "ARI")):
            row[metric] = f"{values[:, j].mean():.3f} ± {values[:, j].std():.3f}"
        if method != "MAGIC (ours, defaults)":
            mean, lo, hi = paired_interval(ours, values[:, 0])
            row["ours − it, ACC [95%]"] = f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        rows.append(row)
    w = np.mean(weights, axis=0)
    notes = (
        f"{len(seeds)} seeds. Learned granularity weights (coarse, medium, "
        f"fine), mean over seeds: {np.round(w, 2).tolist()}; smallest weight "
        f"over seeds and granularities: {np.min(weights):.2f}. MAGIC fits in "
        f"{np.median(seconds['MAGIC']):.1f} s (median; CPU, 1 thread); the "
        f"baselines (TAC included) together take "
        f"{np.median(seconds['k-means']):.1f} s."
    )
    write_results(
        f"magic_{name}",
        rows,
        ["method", "ACC", "NMI", "ARI", "ours − it, ACC [95%]"],
        title=f"MAGIC on {name}: ACC / NMI / ARI (mean ± sd over seeds)",
        notes=notes,
    )


def run_noise(seeds, quick):
    noises = (0.0, 0.2, 0.4) if quick else (0.0, 0.2, 0.4, 0.6)
    methods = {
        "MAGIC (ours)": {},
        "MAGIC, plain loss + equal fusion": {
            "robust_q": 0.0,
            "robust_fusion": False,
        },
    }
    table = {}
    describer = {}
    for noise in noises:
        for seed in seeds:
            X, y, views = load("digits", seed, noise=noise)
            d = load_described_digits(description_noise=noise, random_state=seed)
            describer.setdefault(noise, []).append(d.describer_accuracy)
            k = 10
            for method, params in methods.items():
                lab = magic(X, views, k, seed, **params)[0]
                table.setdefault((method, noise), []).append(scores(y, lab)[0])
            base = baselines(X, y, views, k, seed, peers=False)
            for method in (
                "TAC-style concat (image + mean text) + k-means",
                "k-means, fine text alone (reference)",
                "k-means, image",
            ):
                table.setdefault((method, noise), []).append(scores(y, base[method])[0])
        print("noise", noise, {m: round(np.mean(v), 3) for m, v in table.items()})
    rows = []
    for method in [m for m, _ in table][:: len(noises)]:
        row = {"method": method}
        for noise in noises:
            v = table[(method, noise)]
            row[f"noise {noise:g}"] = f"{np.mean(v):.3f} ± {np.std(v):.3f}"
        rows.append(row)
    rows.append(
        {
            "method": "describer accuracy (fraction of right descriptions)",
            **{f"noise {n:g}": f"{np.mean(describer[n]):.3f}" for n in noises},
        }
    )
    write_results(
        "magic_noise",
        rows,
        ["method", *[f"noise {n:g}" for n in noises]],
        title="MAGIC on described digits as the description noise rises (ACC)",
        notes=f"{len(seeds)} seeds per noise level.",
    )


def run_sizes(seeds, quick):
    sizes = (500, 3000) if quick else (500, 3000, 10000)
    methods = (
        _OURS,
        "TAC-style concat (image + mean text) + k-means",
        "all views concatenated + k-means",
    )
    acc, seconds, finest = {}, {}, {}
    for n in sizes:
        for seed in seeds:
            X, y, views = make_multigranular(n, random_state=seed)
            labels, sec, model = magic(X, views, 9, seed)
            acc.setdefault((_OURS, n), []).append(clustering_accuracy(y, labels))
            seconds.setdefault(n, []).append(sec)
            finest.setdefault(n, []).append(model.granularity_weights_[-1])
            blocks = _blocks(X, views)
            tac_free = np.hstack([blocks[0], np.mean(blocks[1:], axis=0)])
            km = KMeans(9, n_init=10, random_state=seed)
            acc.setdefault((methods[1], n), []).append(
                clustering_accuracy(y, km.fit_predict(tac_free))
            )
            acc.setdefault((methods[2], n), []).append(
                clustering_accuracy(y, concat_kmeans(X, views, 9, seed))
            )
            print("sizes", n, seed, {m: round(acc[(m, n)][-1], 3) for m in methods})
    rows = []
    for method in methods:
        row = {"method": method}
        for n in sizes:
            v = np.array(acc[(method, n)])
            row[f"ACC, n={n}"] = f"{v.mean():.3f} ± {v.std():.3f}"
            if method != _OURS:
                mean, lo, hi = paired_interval(acc[(_OURS, n)], v)
                row[f"ours − it, n={n} [95%]"] = f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        rows.append(row)
    rows.append(
        {
            "method": "MAGIC fit seconds (median; timing, rerun idle)",
            **{f"ACC, n={n}": f"{np.median(seconds[n]):.1f}" for n in sizes},
        }
    )
    rows.append(
        {
            "method": "MAGIC weight of the finest granularity (mean)",
            **{f"ACC, n={n}": f"{np.mean(finest[n]):.2f}" for n in sizes},
        }
    )
    columns = ["method"]
    for n in sizes:
        columns += [f"ACC, n={n}", f"ours − it, n={n} [95%]"]
    write_results(
        "magic_sizes",
        rows,
        columns,
        title="MAGIC at its defaults on 500, 3,000 and 10,000 generated samples "
        "(ACC, mean ± sd over seeds)",
        notes=f"{len(seeds)} seeds; make_multigranular(n), 9 classes; the "
        "defaults are a schedule of optimisation steps (60 warm-up, 160 "
        "clustering, batches of 256), the same at every size. Fit seconds "
        "on one thread.",
    )


def run_tune():
    """TAC's search on development seeds (never the benchmark's 0-4)."""
    rows = []
    for change in TAC_GRID:
        row = {"configuration": str(change) if change else "defaults"}
        means = []
        for name in ("gen", "indep"):
            v = []
            for seed in (100, 101, 102):
                X, y, views = load(name, seed)
                v.append(clustering_accuracy(y, tac(X, views, 9, seed, **change)))
            row[name] = f"{np.mean(v):.3f}"
            means.append(np.mean(v))
        row["mean"] = f"{np.mean(means):.3f}"
        rows.append(row)
        print("tune", row)
    write_results(
        "magic_tac_tuning",
        rows,
        ["configuration", "gen", "indep", "mean"],
        title="TAC's search on development seeds 100-102 (ACC, mean over seeds)",
        notes=f"Search base (changed one at a time): {TAC_DEFAULTS}. The "
        f"benchmark runs TAC with the best row: {TAC_CHOSEN}.",
    )


_OURS = "MAGIC (ours, defaults)"
_BEST_SINGLE = "MAGIC, best single granularity (per seed)"
_PEERS = {
    "kmeans_image": "k-means, image",
    "tac_full": "TAC (cross-modal mutual distillation)",
    "concat_spectral": "spectral (15-NN), all views concatenated",
    "spectral": "spectral (15-NN), image",
    "tac": "TAC-style concat (image + mean text) + k-means",
    "concat": "all views concatenated + k-means",
    "fine_text": "k-means, fine text alone (reference)",
    "coarse_only": "MAGIC, coarse granularity only",
    "medium_only": "MAGIC, medium granularity only",
    "fine_only": "MAGIC, fine granularity only",
    "no_adapters": "MAGIC, no adapters",
    "image_teacher": "MAGIC, image teacher (no consensus)",
    "plain_loss": "MAGIC, plain contrastive (robust_q=0)",
    "equal_fusion": "MAGIC, equal fusion (robust_fusion=False)",
    "uniform_weights": "MAGIC, uniform granularity weights",
    "no_penalty": "MAGIC, no redundancy penalty",
    "fixed_temperature": "MAGIC, fixed temperature 0.03 (superseded rule)",
}
_INDEP_PEERS = {
    key: label
    for key, label in _PEERS.items()
    if key
    not in ("no_adapters", "image_teacher", "plain_loss", "equal_fusion", "no_penalty")
}
_INDEP_PEERS["best_single"] = _BEST_SINGLE
_DIFF = "ours − it, ACC [95%]"
_BUDGET = {
    "ours": "MAGICClustering at its defaults, no tuning; the true number of clusters",
    "peers": "k-means (n_init=10) and spectral clustering (15-NN graph) at "
    "the true number of clusters, untuned; TAC tuned by an 8-configuration "
    "search on development seeds 100-102 (--parts tune); the ablations are "
    "the defaults with one part changed",
}


def _dataset_ledger(data, peers=None):
    peers = _PEERS if peers is None else peers
    claims = [
        Claim("acc", _OURS, "ACC"),
        Claim("nmi", _OURS, "NMI"),
        Claim("ari", _OURS, "ARI"),
        Claim("fit_seconds", None, "MAGIC fit seconds", notes=r"fits in ([\d.]+ s)"),
        Claim(
            "baseline_seconds",
            None,
            "the five baselines' seconds",
            notes=r"together take ([\d.]+ s)",
        ),
        Claim(
            "finest_weight",
            None,
            "learned weight of the finest granularity",
            notes=r"mean over seeds: \[[^\]]*, ([\d.]+)\]",
        ),
        Claim(
            "weights",
            None,
            "learned granularity weights",
            notes=r"mean over seeds: (\[[^\]]*\])",
        ),
        Claim(
            "min_weight",
            None,
            "smallest learned weight",
            notes=r"over seeds and granularities: ([\d.]+)",
        ),
    ]
    for key, label in peers.items():
        claims += [
            Claim(f"{key}_acc", label, "ACC"),
            Claim(f"{key}_nmi", label, "NMI"),
            Claim(f"{key}_ari", label, "ARI"),
            Claim(
                f"vs_{key}", label, _DIFF, metric="ACC, ours - it", peer_column="ACC"
            ),
        ]
    return Ledger("MAGICClustering", data, 5, _BUDGET, claims)


LEDGER = {
    "magic_gen": _dataset_ledger(
        "make_multigranular defaults (900 samples, 9 classes, the finest "
        "descriptions 20% wrong)"
    ),
    "magic_digits": _dataset_ledger(
        "load_described_digits(description_noise=0.2): scikit-learn's digits "
        "with generated descriptions embedded by all-MiniLM-L6-v2"
    ),
    "magic_mfeat": _dataset_ledger(
        "UCI mfeat (load_mfeat), the 240-pixel view, described by the same "
        "recipe; not tuned on"
    ),
    "magic_noise": Ledger(
        "MAGICClustering",
        "load_described_digits at description noise 0, 0.2, 0.4, 0.6",
        3,
        _BUDGET,
        [
            Claim(f"{key}_{n}", label, f"noise {n}", metric="ACC")
            for key, label in {
                "ours": "MAGIC (ours)",
                "plain_equal": "MAGIC, plain loss + equal fusion",
                "tac": "TAC-style concat (image + mean text) + k-means",
                "fine_text": "k-means, fine text alone (reference)",
                "kmeans_image": "k-means, image",
                "describer": "describer accuracy (fraction of right descriptions)",
            }.items()
            for n in ("0", "0.2", "0.4", "0.6")
        ],
    ),
    "magic_indep": _dataset_ledger(
        "make_multigranular(900, description_noise=(0.05, 0.15, 0.3)): "
        "independent describers per granularity",
        _INDEP_PEERS,
    ),
    "magic_tac_tuning": Ledger(
        "TAC (our implementation, benchmarks/_magic_baselines.py)",
        "development seeds 100-102 of make_multigranular defaults and of the "
        "independent-describer set",
        3,
        _BUDGET,
        [Claim("chosen", "{'entropy_weight': 2.0}", "mean", metric="ACC")],
    ),
    "magic_sizes": Ledger(
        "MAGICClustering",
        "make_multigranular(n), n = 500, 3,000, 10,000; 9 classes",
        5,
        _BUDGET,
        [
            Claim(f"{key}_{n}", label, f"ACC, n={n}")
            for key, label in {
                "acc": _OURS,
                "tac": "TAC-style concat (image + mean text) + k-means",
                "concat": "all views concatenated + k-means",
            }.items()
            for n in (500, 3000, 10000)
        ]
        + [
            Claim(
                f"vs_{key}_{n}",
                label,
                f"ours − it, n={n} [95%]",
                metric="ACC, ours - it",
                peer_column=f"ACC, n={n}",
            )
            for key, label in {
                "tac": "TAC-style concat (image + mean text) + k-means",
                "concat": "all views concatenated + k-means",
            }.items()
            for n in (500, 3000, 10000)
        ],
    ),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["gen", "digits", "mfeat", "noise", "indep", "sizes"],
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seeds = list(range(2 if args.quick else args.seeds))
    for part in args.parts:
        if part == "noise":
            run_noise(seeds[:3], args.quick)
        elif part == "sizes":
            run_sizes(seeds, args.quick)
        elif part == "tune":
            run_tune()
        else:
            run_dataset(part, seeds, args.quick)


if __name__ == "__main__":
    main()
