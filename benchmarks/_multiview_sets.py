"""Multi-view clustering sets cut from scikit-learn's bundled data, and baselines.

Every set comes from data that ship with scikit-learn (``load_digits``,
``load_breast_cancer``, ``load_wine``, ``load_iris``); nothing is downloaded.
Each is cut into views along a meaningful line, and its class labels are the
ground truth of the clustering. :func:`multiview_sets` returns, for each set
name, ``(X, y, views, description)`` with ``X`` a float64 array whose columns
are the views concatenated in order, and ``views`` the list of their column
counts (the ``views`` parameter of ``CorrelatedVariationalIMVC``).

=================  =======  =========  =======  ==========================
Set                Samples  Views      Classes  Cut
=================  =======  =========  =======  ==========================
digits-halves      1797     32, 32     10       left / right pixel columns
digits-features    1797     64, 16, 16 10       pixels / profiles / HOG-like
breast-cancer      569      10, 10, 10 2        mean / error / worst
wine               178      6, 5, 2    3        base chemistry / phenolics
                                                / colour
iris               150      2, 2       3        sepal / petal
digits-rows        1797     32, 32     10       top / bottom pixel rows
digits-checker     1797     32, 32     10       checkerboard squares
breast-cancer-     569      9, 12, 9   2        size / texture / shape
kinds                                           (each mean, error, worst)
wine-halves        178      7, 6       3        first 7 / last 6 columns
iris-features      150      1, 1, 1, 1 3        one view per measurement
=================  =======  =========  =======  ==========================

The last five were added for issue 56 (sets the benchmark had not used;
``EARLIER_SETS`` names the first five).

Sets:

- ``digits-halves``: ``load_digits`` 8x8 images (pixel values 0..16). View 0 is
  the left half of each image (pixel columns 0-3, row by row: 32 values),
  view 1 the right half (pixel columns 4-7: 32 values). Two views of the same
  digit that share no pixel.
- ``digits-features``: ``load_digits`` with three feature views computed from
  the same image: (0) the 64 raw pixels; (1) the profiles, the 8 row sums then
  the 8 column sums (16); (2) a HOG-like gradient-orientation histogram computed
  with numpy only (16): central-difference gradients (``np.gradient``), the
  image cut into 2x2 cells of 4x4 pixels, in each cell the gradient magnitudes
  summed into 4 unsigned orientation bins of 45 degrees on [0, 180), and the 16
  values of an image scaled to unit Euclidean norm (blank gradients stay 0).
  The pixels and profiles are linear in the image, the histogram is not.
- ``breast-cancer``: ``load_breast_cancer`` (Wisconsin diagnostic, 30 features
  of cell nuclei, malignant vs benign). Its natural three groups: view 0 the
  10 means (radius, texture, perimeter, area, smoothness, compactness,
  concavity, concave points, symmetry, fractal dimension), view 1 their 10
  standard errors, view 2 their 10 "worst" values (mean of the three largest).
- ``wine``: ``load_wine`` (UCI wine recognition, 13 chemical measurements of
  wines from three cultivars), columns reordered into three groups: view 0,
  base chemistry: alcohol, malic acid, ash, alcalinity of ash, magnesium,
  proline (6; alcohol, acid, mineral and amino-acid contents); view 1,
  phenolics: total phenols, flavanoids, nonflavanoid phenols,
  proanthocyanins, OD280/OD315 of diluted wines (5; the phenolic compounds and
  the UV absorbance ratio that tracks them); view 2, colour: colour intensity,
  hue (2; the visual/spectral measurements).
- ``iris``: ``load_iris``; view 0 the sepal length and width, view 1 the petal
  length and width (a weak and a strong view).

:func:`baseline_scores` masks views (``mask_views``) and scores three baselines
on the masked, concatenated views. Run ``python benchmarks/_multiview_sets.py``
for the markdown table of their mean ACC and ARI over seeds 0, 1 and 2 at
missing rates 0 and 0.4.
"""

import time
import warnings

import numpy as np
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from sklearn_ext.datasets import mask_views
from sklearn_ext.utils import clustering_accuracy

__all__ = [
    "BASELINES",
    "EARLIER_SETS",
    "baseline_scores",
    "masked",
    "multiview_sets",
]

#: Baseline names, in the order of the table: KMeans on the raw mean-imputed
#: views, KMeans on the standardised mean-imputed views, spectral clustering on
#: the standardised mean-imputed views.
BASELINES = ("kmeans_raw", "kmeans_std", "spectral_std")

WINE_GROUPS = {
    "base chemistry": [
        "alcohol",
        "malic_acid",
        "ash",
        "alcalinity_of_ash",
        "magnesium",
        "proline",
    ],
    "phenolics": [
        "total_phenols",
        "flavanoids",
        "nonflavanoid_phenols",
        "proanthocyanins",
        "od280/od315_of_diluted_wines",
    ],
    "colour": ["color_intensity", "hue"],
}


def _hog_like(images, cells=2, bins=4):
    """Magnitude-weighted unsigned orientation histograms per cell, unit norm."""
    n, h, w = images.shape
    gy, gx = np.gradient(images, axis=(1, 2))
    magnitude = np.hypot(gx, gy)
    angle = np.mod(np.arctan2(gy, gx), np.pi)  # unsigned, in [0, pi)
    which = np.minimum((angle / (np.pi / bins)).astype(int), bins - 1)
    ch, cw = h // cells, w // cells
    feats = np.zeros((n, cells, cells, bins))
    for r in range(cells):
        for c in range(cells):
            mag = magnitude[:, r * ch : (r + 1) * ch, c * cw : (c + 1) * cw]
            idx = which[:, r * ch : (r + 1) * ch, c * cw : (c + 1) * cw]
            for b in range(bins):
                feats[:, r, c, b] = np.where(idx == b, mag, 0.0).sum(axis=(1, 2))
    feats = feats.reshape(n, -1)
    norm = np.linalg.norm(feats, axis=1, keepdims=True)
    return np.divide(feats, norm, out=np.zeros_like(feats), where=norm > 0)


def _digits_halves():
    digits = load_digits()
    images = digits.images.astype(np.float64)
    n = images.shape[0]
    left = images[:, :, :4].reshape(n, 32)
    right = images[:, :, 4:].reshape(n, 32)
    return (
        np.hstack([left, right]),
        digits.target.astype(np.int64),
        [32, 32],
        "load_digits 8x8 images: view 0 = left 4 pixel columns (32), "
        "view 1 = right 4 pixel columns (32); 10 classes.",
    )


def _digits_features():
    digits = load_digits()
    images = digits.images.astype(np.float64)
    n = images.shape[0]
    pixels = images.reshape(n, 64)
    profiles = np.hstack([images.sum(axis=2), images.sum(axis=1)])
    hog = _hog_like(images)
    return (
        np.hstack([pixels, profiles, hog]),
        digits.target.astype(np.int64),
        [64, 16, 16],
        "load_digits: view 0 = raw pixels (64), view 1 = 8 row sums + 8 column "
        "sums (16), view 2 = HOG-like histogram, 2x2 cells x 4 unsigned "
        "orientation bins of gradient magnitude, unit L2 norm (16); 10 classes.",
    )


def _breast_cancer():
    data = load_breast_cancer()
    names = list(data.feature_names)
    # Check the layout rather than trust it: means, then errors, then worst.
    assert all(n.startswith("mean ") for n in names[:10])
    assert all(n.endswith(" error") for n in names[10:20])
    assert all(n.startswith("worst ") for n in names[20:])
    return (
        data.data.astype(np.float64),
        data.target.astype(np.int64),
        [10, 10, 10],
        "load_breast_cancer (Wisconsin diagnostic): view 0 = the 10 mean nucleus "
        "features, view 1 = their 10 standard errors, view 2 = their 10 worst "
        "values; 2 classes.",
    )


def _wine():
    data = load_wine()
    names = list(data.feature_names)
    order = [names.index(f) for group in WINE_GROUPS.values() for f in group]
    assert sorted(order) == list(range(len(names)))
    return (
        data.data[:, order].astype(np.float64),
        data.target.astype(np.int64),
        [len(group) for group in WINE_GROUPS.values()],
        "load_wine (3 cultivars), columns reordered: view 0 = base chemistry "
        "(alcohol, malic acid, ash, alcalinity of ash, magnesium, proline: 6), "
        "view 1 = phenolics (total phenols, flavanoids, nonflavanoid phenols, "
        "proanthocyanins, OD280/OD315: 5), view 2 = colour (colour intensity, "
        "hue: 2); 3 classes.",
    )


def _iris():
    data = load_iris()
    return (
        data.data.astype(np.float64),
        data.target.astype(np.int64),
        [2, 2],
        "load_iris: view 0 = sepal length and width (2), view 1 = petal length "
        "and width (2); 3 classes.",
    )


def _digits_rows():
    digits = load_digits()
    images = digits.images.astype(np.float64)
    n = images.shape[0]
    return (
        np.hstack([images[:, :4, :].reshape(n, 32), images[:, 4:, :].reshape(n, 32)]),
        digits.target.astype(np.int64),
        [32, 32],
        "load_digits 8x8 images: view 0 = top 4 pixel rows (32), view 1 = bottom "
        "4 pixel rows (32); 10 classes.",
    )


def _digits_checker():
    digits = load_digits()
    images = digits.images.astype(np.float64).reshape(-1, 64)
    r, c = np.divmod(np.arange(64), 8)
    even = (r + c) % 2 == 0
    return (
        np.hstack([images[:, even], images[:, ~even]]),
        digits.target.astype(np.int64),
        [32, 32],
        "load_digits 8x8 images: view 0 = the 32 pixels of the white squares of a "
        "checkerboard ((row + column) even), view 1 = the 32 of the black squares; "
        "10 classes.",
    )


#: Breast cancer's 10 nucleus measurements grouped by kind (each as mean, error
#: and worst value).
BREAST_KINDS = {
    "size": ["radius", "perimeter", "area"],
    "texture": ["texture", "smoothness", "symmetry", "fractal dimension"],
    "shape": ["compactness", "concavity", "concave points"],
}


def _breast_cancer_kinds():
    data = load_breast_cancer()
    names = list(data.feature_names)
    order, widths = [], []
    for kinds in BREAST_KINDS.values():
        cols = [
            names.index(name)
            for kind in kinds
            for name in (f"mean {kind}", f"{kind} error", f"worst {kind}")
        ]
        order += cols
        widths.append(len(cols))
    assert sorted(order) == list(range(30))
    return (
        data.data[:, order].astype(np.float64),
        data.target.astype(np.int64),
        widths,
        "load_breast_cancer cut by the kind of measurement, each as mean, error "
        "and worst value: view 0 = size (radius, perimeter, area: 9), view 1 = "
        "texture (texture, smoothness, symmetry, fractal dimension: 12), view 2 = "
        "shape (compactness, concavity, concave points: 9); 2 classes.",
    )


def _wine_halves():
    data = load_wine()
    return (
        data.data.astype(np.float64),
        data.target.astype(np.int64),
        [7, 6],
        "load_wine in its own column order: view 0 = the first 7 measurements "
        "(alcohol .. flavanoids), view 1 = the last 6 (nonflavanoid phenols .. "
        "proline); 3 classes.",
    )


def _iris_features():
    data = load_iris()
    return (
        data.data.astype(np.float64),
        data.target.astype(np.int64),
        [1, 1, 1, 1],
        "load_iris, one view per measurement (sepal length, sepal width, petal "
        "length, petal width); 3 classes.",
    )


#: The sets that the benchmark had used before issue 56 (the others are new).
EARLIER_SETS = ("digits-halves", "digits-features", "breast-cancer", "wine", "iris")


def multiview_sets():
    """The multi-view sets built from scikit-learn's bundled data.

    Returns
    -------
    sets : dict
        Set name -> ``(X, y, views, description)``: ``X`` ndarray of shape
        (n_samples, sum(views)), float64, complete (no NaN); ``y`` int64 class
        labels; ``views`` list of int, the column counts of consecutive views;
        ``description`` a one-line str of the source and the cut. See the module
        docstring for each set.
    """
    return {
        "digits-halves": _digits_halves(),
        "digits-features": _digits_features(),
        "breast-cancer": _breast_cancer(),
        "wine": _wine(),
        "iris": _iris(),
        "digits-rows": _digits_rows(),
        "digits-checker": _digits_checker(),
        "breast-cancer-kinds": _breast_cancer_kinds(),
        "wine-halves": _wine_halves(),
        "iris-features": _iris_features(),
    }


def masked(X, views, missing_rate, random_state):
    """``X`` with whole views blanked by ``mask_views`` (a copy of X at rate 0)."""
    if missing_rate > 0:
        return mask_views(
            X, list(views), missing_rate=missing_rate, random_state=random_state
        )
    return np.array(X, dtype=np.float64, copy=True)


def baseline_scores(X, y, views, missing_rate=0.0, random_state=0):
    """ACC, ARI and time of three baselines on the views masked at a rate.

    When ``missing_rate > 0`` the views are first blanked by
    :func:`sklearn_ext.datasets.mask_views` (``round(missing_rate * n)`` samples
    lose between 1 and ``n_views - 1`` whole views, each keeps at least one) with
    seed ``random_state``, which also seeds the clusterings. Baselines, on the
    concatenated views with ``n_clusters = len(unique(y))``:

    - ``"kmeans_raw"``: missing entries replaced by the column means over the
      observed samples, then ``KMeans(n_init=10)``;
    - ``"kmeans_std"``: each column standardised with mean and standard
      deviation over its observed values (``StandardScaler`` ignores NaN), then
      missing entries set to the mean, 0, then ``KMeans(n_init=10)``;
    - ``"spectral_std"``: the same standardised, imputed matrix, then
      ``SpectralClustering(affinity="nearest_neighbors", n_neighbors=15,
      assign_labels="cluster_qr")``.

    Returns
    -------
    scores : dict
        For each name of :data:`BASELINES` a dict with ``"acc"``
        (``clustering_accuracy``), ``"ari"`` (``adjusted_rand_score``) and
        ``"seconds"`` (wall time of preprocessing and fit); and
        ``"n_incomplete"``, the number of samples that lost at least one view.
    """
    y = np.asarray(y)
    n_clusters = len(np.unique(y))
    Xm = masked(X, views, missing_rate, random_state)
    scores = {"n_incomplete": int(np.isnan(Xm).any(axis=1).sum())}

    def run(name, make_labels):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # A kNN graph that is not fully connected only warns.
            warnings.filterwarnings("ignore", message="Graph is not fully connected")
            labels = make_labels()
        scores[name] = {
            "acc": clustering_accuracy(y, labels),
            "ari": adjusted_rand_score(y, labels),
            "seconds": time.perf_counter() - start,
        }

    def kmeans(Z):
        return KMeans(n_clusters, n_init=10, random_state=random_state).fit_predict(Z)

    def standardised():
        # keep_empty_features: a column cannot be empty here (each sample keeps
        # a view and not every sample loses one), but never drop a column.
        Z = StandardScaler().fit_transform(Xm)
        return SimpleImputer(keep_empty_features=True).fit_transform(Z)

    run(
        "kmeans_raw",
        lambda: kmeans(SimpleImputer(keep_empty_features=True).fit_transform(Xm)),
    )
    run("kmeans_std", lambda: kmeans(standardised()))
    run(
        "spectral_std",
        lambda: SpectralClustering(
            n_clusters,
            affinity="nearest_neighbors",
            n_neighbors=15,
            assign_labels="cluster_qr",
            random_state=random_state,
        ).fit_predict(standardised()),
    )
    return scores


def _table(rates=(0.0, 0.4), seeds=(0, 1, 2)):
    header = (
        "| set | n | views | k | missing | KMeans raw ACC | ARI | KMeans std ACC "
        "| ARI | Spectral std ACC | ARI | bar ACC (best KMeans + 0.03) "
        "| seconds (raw / std / spectral) |"
    )
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name, (X, y, views, _) in multiview_sets().items():
        for rate in rates:
            runs = [baseline_scores(X, y, views, rate, seed) for seed in seeds]
            mean = {
                b: {
                    key: float(np.mean([r[b][key] for r in runs]))
                    for key in ("acc", "ari", "seconds")
                }
                for b in BASELINES
            }
            bar = max(mean["kmeans_raw"]["acc"], mean["kmeans_std"]["acc"]) + 0.03
            cells = [
                name,
                str(X.shape[0]),
                "+".join(map(str, views)),
                str(len(np.unique(y))),
                f"{rate:.1f}",
            ]
            for b in BASELINES:
                cells += [f"{mean[b]['acc']:.3f}", f"{mean[b]['ari']:.3f}"]
            cells.append(f"{bar:.3f}")
            cells.append(" / ".join(f"{mean[b]['seconds']:.2f}" for b in BASELINES))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(
        "Baselines on multi-view sets from scikit-learn's bundled data: mean over "
        "seeds 0, 1, 2 (the seed draws the mask and the clusterings).\n"
    )
    print(_table())
