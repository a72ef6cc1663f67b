"""The ``python -m sklearn_ext demo`` demos of the clustering family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

SECONDS = {
    "CorrelatedVariationalIMVC": 5,
    "FederatedMultiViewClustering": 2,
    "MAGICClustering": 3,
    "SuperpixelFeaturizer": 0.3,
}


def demo_CorrelatedVariationalIMVC():
    """mfeat, every 2nd digit, 30% of samples missing views.

    Every second digit of ``load_mfeat`` (1,000 samples, all ten digits, a
    half that keeps the demo short), the model at its defaults. The baseline
    is spectral clustering of a 15-nearest-neighbour graph of the
    standardised, mean-imputed views, the stronger of the two plain baselines
    of ``benchmarks/bench_imvc.py`` at this missing rate (ACC
    :claim:`imvc_mfeat.spectral_0.3` against :claim:`imvc_mfeat.kmeans_0.3`
    for k-means on all of mfeat, 5 seeds).
    """
    from sklearn_ext.cluster import CorrelatedVariationalIMVC
    from sklearn_ext.datasets import load_mfeat, mask_views
    from sklearn_ext.utils import clustering_accuracy
    from sklearn_ext.utils._clustering import spectral_baseline_labels

    data = load_mfeat()
    y = data.target[::2]
    X = mask_views(data.data[::2], data.views, 0.3, random_state=0)
    model = CorrelatedVariationalIMVC(
        n_clusters=10, views=data.views, random_state=0
    ).fit(X)
    baseline = spectral_baseline_labels(X, 10)
    return {
        "data": "load_mfeat[::2] (1,000 digits), 30% of samples missing views",
        "metric": "ACC",
        "score": clustering_accuracy(y, model.labels_),
        "baseline": "SpectralClustering (15-NN graph) on standardised, "
        "mean-imputed views",
        "baseline_score": clustering_accuracy(y, baseline),
        "greater_is_better": True,
    }


def demo_FederatedMultiViewClustering():
    """mfeat, every 3rd digit, over 3 iid clients.

    Every third digit of ``load_mfeat`` (667 samples, all ten digits), the
    model at its defaults but ``rounds=5``. The baseline is the strongest
    plain scikit-learn clustering we found for mfeat (see
    ``demo_CorrelatedVariationalIMVC``), and it sees all the data in one
    place, which the federation never does.
    """
    from sklearn_ext.cluster import FederatedMultiViewClustering
    from sklearn_ext.datasets import load_mfeat
    from sklearn_ext.utils import clustering_accuracy
    from sklearn_ext.utils._clustering import spectral_baseline_labels

    data = load_mfeat()
    X, y = data.data[::3], data.target[::3]
    model = FederatedMultiViewClustering(
        n_clusters=10, views=data.views, n_clients=3, rounds=5, random_state=0
    ).fit(X)
    baseline = spectral_baseline_labels(X, 10)
    return {
        "data": f"load_mfeat[::3], 3 iid clients, epsilon={model.epsilon_:.1f}",
        "metric": "ACC",
        "score": clustering_accuracy(y, model.labels_),
        "baseline": "SpectralClustering (15-NN graph), all data in one place",
        "baseline_score": clustering_accuracy(y, baseline),
        "greater_is_better": True,
    }


def demo_SuperpixelFeaturizer():
    """Four textures of equal mean and spread, clustered pixel by pixel.

    ``make_texture_scene`` (64 x 64 pixels, one band; speckle, vertical and
    horizontal stripes, checks, all of mean 0 and sd 1, noise 0.3): the
    featurizer (``n_segments=64``, ``compactness=1.0`` so that superpixels
    do not follow single stripes, band means and the texture features) in a
    pipeline before k-means. The baseline is the stronger of two plain
    scikit-learn clusterings of the pixels: k-means on the pixel values, and
    k-means on every pixel's 5 x 5 neighbourhood (its patch).
    """
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.image import extract_patches_2d
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ext.cluster import SuperpixelFeaturizer
    from sklearn_ext.cluster._superpixels import make_texture_scene
    from sklearn_ext.utils import clustering_accuracy

    image, labels = make_texture_scene(64, random_state=0)
    y = labels.ravel()
    X = image.reshape(-1, 1)
    pipe = make_pipeline(
        SuperpixelFeaturizer(
            64, compactness=1.0, image_shape=image.shape, features=("mean", "texture")
        ),
        StandardScaler(),
        KMeans(4, n_init=10, random_state=0),
    )
    score = clustering_accuracy(y, pipe.fit_predict(X))
    padded = np.pad(image, 2, mode="reflect")
    patches = extract_patches_2d(padded, (5, 5)).reshape(len(y), -1)
    baselines = {
        "KMeans on pixel values": KMeans(4, n_init=10, random_state=0).fit_predict(X),
        "KMeans on 5 x 5 pixel patches": KMeans(
            4, n_init=10, random_state=0
        ).fit_predict(patches),
    }
    accs = {name: clustering_accuracy(y, lab) for name, lab in baselines.items()}
    best = max(accs, key=accs.get)
    return {
        "data": "make_texture_scene(64), 4 textures of equal mean and spread",
        "metric": "ACC over pixels",
        "score": score,
        "baseline": f"{best} (the stronger of pixel values and 5 x 5 patches)",
        "baseline_score": accs[best],
        "greater_is_better": True,
    }


def demo_MAGICClustering():
    """Generated images with noisy descriptions (3 granularities).

    ``make_multigranular`` at its defaults (900 samples, 9 classes, three
    description granularities, the finest wrong for 20% of the samples).
    The baseline is the strongest plain clustering of
    ``benchmarks/bench_magic.py`` on these data: k-means on the finest
    descriptions alone (ACC :claim:`magic_gen.fine_text_acc` over 5 seeds,
    against :claim:`magic_gen.concat_acc` for k-means on all views
    concatenated, :claim:`magic_gen.tac_acc` for TAC-style concatenation and
    :claim:`magic_gen.spectral_acc` for spectral clustering of the image).
    """
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import StandardScaler

    from sklearn_ext.cluster import MAGICClustering
    from sklearn_ext.datasets import make_multigranular
    from sklearn_ext.utils import clustering_accuracy

    X, y, views = make_multigranular(random_state=0)
    model = MAGICClustering(n_clusters=9, views=views, random_state=0).fit(X)
    fine = StandardScaler().fit_transform(X[:, -views[-1] :])
    baseline = KMeans(9, n_init=10, random_state=0).fit_predict(fine)
    return {
        "data": "make_multigranular (image + 3 description granularities)",
        "metric": "ACC",
        "score": clustering_accuracy(y, model.labels_),
        "baseline": "KMeans on the finest descriptions (strongest plain "
        "baseline; image-only KMeans is far weaker)",
        "baseline_score": clustering_accuracy(y, baseline),
        "greater_is_better": True,
    }
