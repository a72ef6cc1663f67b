"""Fingerprints of the cluster family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def magic():
    from sklearn_ext.cluster import MAGICClustering
    from sklearn_ext.datasets import make_multigranular

    X, _, views = make_multigranular(180, random_state=0)
    model = MAGICClustering(n_clusters=9, views=views, random_state=0).fit(X)
    return _concat(model.labels_, model.granularity_weights_, model.transform(X)[:20])


def imvc():
    """``bench_imvc``: the model at its defaults, learned and independent errors.

    Small generated views with a planted error correlation and missing views
    (the mechanism part's generator), ``device="cpu"`` as the benchmark.
    """
    from sklearn_ext.cluster import CorrelatedVariationalIMVC
    from sklearn_ext.datasets import make_multiview_blobs

    X, _, views = make_multiview_blobs(
        240,
        view_sizes=(6, 6, 6),
        n_clusters=3,
        latent_dim=3,
        view_error=(0.4, 0.8, 1.2),
        error_correlation=0.5,
        missing_rate=0.3,
        random_state=0,
    )
    out = []
    for correlation in ("learned", "independent"):
        model = CorrelatedVariationalIMVC(
            3,
            views=views,
            correlation=correlation,
            hidden_layer_sizes=(32,),
            device="cpu",
            random_state=0,
        ).fit(X)
        out += [
            model.labels_,
            model.correlation_,
            model.error_scale_,
            model.n_iter_,
            model.transform(X[:20]),
        ]
    return _concat(*out)


def fedmvc():
    """``bench_fedmvc``: the private default, the non-private run, superpixels.

    Generated views at three clients (a client column, as the benchmark
    passes its partition): the defaults (``epsilon=8``, no network trained),
    ``epsilon=None`` (networks trained) with one round and short schedules,
    DP-SGD training at ``epsilon=8``, and ``SuperpixelFeaturizer`` on a small
    generated scene.
    """
    import numpy as np

    from sklearn_ext.cluster import FederatedMultiViewClustering, SuperpixelFeaturizer
    from sklearn_ext.datasets import make_multiview_blobs, make_remote_sensing_scene

    X, _, views = make_multiview_blobs(
        240, view_sizes=(6, 6), n_clusters=4, separation=4.0, random_state=0
    )
    Xc = np.column_stack([X, np.arange(240) % 3])
    common = {"views": views, "client_column": -1, "device": "cpu", "random_state": 0}
    out = []
    for params in (
        {},
        {"epsilon": None, "rounds": 2, "pretrain_iter": 2, "local_epochs": 1},
        {"rounds": 2, "pretrain_iter": 2, "local_epochs": 1},
    ):
        model = FederatedMultiViewClustering(4, **common, **params).fit(Xc)
        out += [
            model.labels_,
            model.prototypes_,
            model.epsilon_ if model.epsilon is not None else 0.0,
            model.communication_bytes_,
        ]
    scene = make_remote_sensing_scene((48, 48), n_bands=6, random_state=0)
    sp = SuperpixelFeaturizer(n_segments=60).fit([scene.spectral, scene.elevation])
    out += [sp.superpixel_features_[:30], sp.pixel_counts_, sp.view_sizes_]
    return _concat(*out)


FINGERPRINTS = {
    "magic": magic,
    "imvc": imvc,
    "fedmvc": fedmvc,
}
