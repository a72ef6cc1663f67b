"""FederatedMultiViewClustering and the generated scene."""

import math

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from sklearn_ext.cluster import FederatedMultiViewClustering
from sklearn_ext.cluster import _fedmvc_protocol as protocol
from sklearn_ext.cluster._fedmvc_nn import gaussian_w2_squared
from sklearn_ext.datasets import make_multiview_blobs, make_remote_sensing_scene
from sklearn_ext.utils import clustering_accuracy

SMALL = {
    "rounds": 3,
    "local_epochs": 2,
    "pretrain_iter": "auto",
    "latent_dim": 4,
    "hidden_layer_sizes": (32,),
    "epsilon": None,
    "learning_rate_init": 3e-3,
    "device": "cpu",
}


def _blobs(n=240, n_clusters=4, seed=0):
    X, y, views = make_multiview_blobs(
        n, view_sizes=(6, 6), n_clusters=n_clusters, separation=4.0, random_state=seed
    )
    return X, y, views


def _with_clients(X, n_clients, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(X.shape[0]) % n_clients) * 10 + 3
    return np.column_stack([X, ids]), ids


# --- the pieces -------------------------------------------------------------------


def test_closed_form_w2_matches_pots_bures_wasserstein():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(0)
    ma, mb = rng.normal(size=(3, 5)), rng.normal(size=(4, 5))
    sa, sb = rng.uniform(0.1, 2, size=(3, 5)), rng.uniform(0.1, 2, size=(4, 5))
    ours = gaussian_w2_squared(*(torch.as_tensor(a) for a in (ma, sa, mb, sb))).numpy()
    for i in range(3):
        for j in range(4):
            w = ot.gaussian.bures_wasserstein_distance(
                ma[i], mb[j], np.diag(sa[i] ** 2), np.diag(sb[j] ** 2)
            )
            assert ours[i, j] == pytest.approx(float(w) ** 2, rel=1e-8, abs=1e-10)


def test_stat_record_norm_bounds_one_samples_weighted_record():
    """One clipped sample moves the weighted (count, sum, sumsq) by <= the bound."""
    rng = np.random.default_rng(1)
    radius = 0.7
    w_c, w_s, w_q = protocol.STAT_WEIGHTS
    for _ in range(200):
        r = protocol.clip_rows(rng.normal(size=(1, 6)) * rng.uniform(0.1, 5), radius)[0]
        record = np.concatenate(
            [[1 / w_c], r / (radius * w_s), r**2 / (radius**2 * w_q)]
        )
        assert np.linalg.norm(record) <= protocol.stat_record_norm() + 1e-12


def _audit_epsilon_lower_bound(multiplier, trials=4000, delta=1e-3, seed=0):
    """Clopper-Pearson lower bound of epsilon from a canary distinguishing test.

    A client's cluster statistics are released with and without one canary
    sample at the edge of the clipping ball; the attacker thresholds the
    released sum's projection on the canary's direction. From the false
    positive and false negative rates (95% Clopper-Pearson upper bounds),
    every (epsilon, delta) mechanism has
    ``epsilon >= log((1 - delta - FNR) / FPR)``.
    """
    from scipy.stats import beta

    rng = np.random.default_rng(seed)
    E = protocol.clip_rows(rng.normal(size=(30, 4)) * 0.3, 1.0)
    canary = np.array([[0.0, 0.0, 0.0, 1.0]])
    centre = np.zeros((1, 4))
    radius = 1.0

    def released(with_canary, trial):
        data = np.vstack([E, canary]) if with_canary else E
        out = protocol.release_cluster_stats(
            data,
            np.zeros(len(data), dtype=int),
            centre,
            radius,
            multiplier,
            np.random.default_rng([seed, trial, with_canary]),
            protocol.PrivacyLedger(),
            "audit",
        )
        return out["sums"][0, 3]

    inside = np.array([released(True, t) for t in range(trials)])
    outside = np.array([released(False, t) for t in range(trials)])
    threshold = E[:, 3].sum() + 0.5
    fn, fp = int((inside <= threshold).sum()), int((outside > threshold).sum())

    def upper(k):
        return 1.0 if k == trials else float(beta.ppf(0.975, k + 1, trials - k))

    fpr, fnr = upper(fp), upper(fn)
    if fpr <= 0 or 1 - delta - fnr <= 0:
        return 0.0
    return max(0.0, math.log((1 - delta - fnr) / fpr))


def test_canary_audit_stays_within_the_ledgers_epsilon():
    """Measured leakage of a release is below its epsilon; without noise it is not."""
    multiplier = 1.0
    ledger = protocol.PrivacyLedger()
    ledger.gaussian("audit", multiplier)
    epsilon = ledger.epsilon(1e-3)
    measured = _audit_epsilon_lower_bound(multiplier)
    assert 0.0 < measured <= epsilon
    # The same audit on a release without noise exceeds any finite budget
    # the accountant would grant at that multiplier.
    assert _audit_epsilon_lower_bound(0.0, trials=500) > epsilon


def _private_fit(X, views, **params):
    return FederatedMultiViewClustering(
        4,
        views=views,
        n_clients=2,
        **{**SMALL, "epsilon": 8.0, **params},
        random_state=0,
    ).fit(X)


def test_recorded_releases_are_the_plan_and_spend_epsilon():
    """Every client's ledger is the plan the noise was calibrated on."""
    X, _, views = _blobs()
    model = _private_fit(X, views)
    assert model.epsilon_ == pytest.approx(8.0, abs=0.05)
    assert np.all(model.client_epsilon_ <= 8.0 + 1e-6)
    np.testing.assert_allclose(
        model.client_delta_, 1 / np.bincount(model.client_of_sample_)
    )
    for i, report in enumerate(model.privacy_report_):
        multipliers = {e["what"]: e["noise_multiplier"] for e in report}
        scale = multipliers["cell statistics"] / protocol.BASE_MULTIPLIERS["stats"]
        spec = {
            "batch_size": SMALL.get("batch_size", 128),
            "pretrain_iter": SMALL["pretrain_iter"],
            "local_epochs": SMALL["local_epochs"],
            "align": True,
            "private": True,
        }
        n = int((model.client_of_sample_ == model.client_ids_[i]).sum())
        plan = protocol.privacy_plan(
            spec, n, SMALL["rounds"], protocol.privacy_multipliers(scale)
        )
        planned = sorted(
            (e["what"], e["kind"], e["count"], e["rate"], e["noise_multiplier"])
            for e in plan.report()
        )
        recorded = sorted(
            (e["what"], e["kind"], e["count"], e["rate"], e["noise_multiplier"])
            for e in report
        )
        assert [p[:4] for p in planned] == [r[:4] for r in recorded]
        np.testing.assert_allclose([p[4] for p in planned], [r[4] for r in recorded])
        training = [e for e in report if e["what"].startswith("DP-SGD")]
        assert {e["what"] for e in training} == {
            "DP-SGD: pretraining",
            "DP-SGD: local training",
        }
        steps = {e["what"]: e["count"] for e in training}
        # pretrain_iter="auto" trains nothing with privacy; local_epochs=2 does.
        assert steps["DP-SGD: pretraining"] == 0
        assert steps["DP-SGD: local training"] > 0


def test_training_is_accounted_epsilon_grows_with_local_epochs():
    """At fixed noise more local epochs cost more; at a fixed epsilon, more noise."""
    spec = {"batch_size": 32, "pretrain_iter": 2, "align": True}
    multipliers = protocol.privacy_multipliers(2.0)
    eps = [
        protocol.privacy_plan({**spec, "local_epochs": e}, 120, 3, multipliers).epsilon(
            1 / 120
        )
        for e in (0, 1, 4)
    ]
    assert eps[0] < eps[1] < eps[2]
    X, _, views = _blobs()
    noise = []
    for epochs in (1, 4):
        model = _private_fit(X, views, local_epochs=epochs)
        (train,) = [
            e for e in model.privacy_report_[0] if e["what"] == "DP-SGD: local training"
        ]
        assert train["count"] == epochs * SMALL[
            "rounds"
        ] * protocol.train_steps_per_epoch(train["rate"])
        noise.append(train["noise_multiplier"])
    assert noise[1] > noise[0]


def test_noise_is_added_to_everything_clients_send(monkeypatch):
    X, _, views = _blobs()
    sent = []
    real = protocol.transmit

    def spy(message):
        arrived, size = real(message)
        if "counts" in message:
            sent.append(arrived["counts"])
        return arrived, size

    monkeypatch.setattr(protocol, "transmit", spy)
    for epsilon in (None, 8.0):
        sent.clear()
        FederatedMultiViewClustering(
            4,
            views=views,
            n_clients=2,
            **{**SMALL, "epsilon": epsilon},
            random_state=0,
        ).fit(X)
        counts = np.concatenate([np.ravel(c) for c in sent])
        integral = np.allclose(counts, np.round(counts), atol=1e-4)
        assert integral == (epsilon is None)


def test_privacy_bad_inputs_are_clear_errors():
    X, _, views = _blobs()
    for params, match in (
        ({"epsilon": 0.0}, "'epsilon' parameter"),
        ({"epsilon": -1.0}, "'epsilon' parameter"),
        ({"delta": 1.0}, "'delta' parameter"),
        ({"delta": 0.0}, "'delta' parameter"),
        ({"epsilon": 8.0, "view_weight": 1.0}, "view_weight > 0"),
    ):
        with pytest.raises(ValueError, match=match):
            FederatedMultiViewClustering(
                4, views=views, n_clients=2, **{**SMALL, **params}
            ).fit(X)


# --- the federation ------------------------------------------------------------


def test_recovers_planted_clusters_across_clients():
    X, y, views = _blobs()
    Xc, _ = _with_clients(X, 3)
    model = FederatedMultiViewClustering(
        4, views=views, client_column=-1, **SMALL, random_state=0
    ).fit(Xc)
    assert adjusted_rand_score(y, model.labels_) > 0.9
    np.testing.assert_array_equal(model.predict(Xc), model.labels_)
    assert model.client_ids_.tolist() == [3, 13, 23]


def test_alignment_is_what_makes_clients_agree():
    """Without alignment, pooling by index mixes the clients' clusters."""
    X, y, views = make_multiview_blobs(
        480, view_sizes=(6, 6), n_clusters=6, separation=4.0, random_state=2
    )
    scores = {}
    for alignment in ("cooccurrence", None):
        scores[alignment] = np.mean(
            [
                clustering_accuracy(
                    y,
                    FederatedMultiViewClustering(
                        6,
                        views=views,
                        n_clients=4,
                        alignment=alignment,
                        **SMALL,
                        random_state=seed,
                    )
                    .fit(X)
                    .labels_,
                )
                for seed in range(2)
            ]
        )
    assert scores["cooccurrence"] > 0.9
    assert scores["cooccurrence"] - scores[None] > 0.2


def test_no_client_feature_array_leaves_a_client(monkeypatch):
    """Only per-cluster statistics and prototypes cross the wire."""
    X, _, views = _blobs()
    Xc, ids = _with_clients(X, 3)
    crossed = []
    real = protocol.transmit

    def spy(message):
        crossed.append({k: np.array(v) for k, v in message.items()})
        return real(message)

    monkeypatch.setattr(protocol, "transmit", spy)
    model = FederatedMultiViewClustering(
        4, views=views, client_column=-1, **SMALL, random_state=0
    ).fit(Xc)
    k, d, n_views = 4, SMALL["latent_dim"], len(views)
    width = X.shape[1]
    shapes = {
        "sums": (width,),
        "counts": (n_views,),
        "sumsq": (width,),
        "col_mean": (width,),
        "col_scale": (width,),
    }
    allowed = [set(f) for f in protocol.CLIENT_FIELDS.values()]
    allowed += [set(f) for f in protocol.SERVER_FIELDS.values()]
    total = 0
    for message in crossed:
        assert set(message) in allowed
        spread = "outer" in message or "cov" in message
        clusters = "means" in message or {"counts", "sums", "sumsq"} <= message.keys()
        for name, array in message.items():
            if name in ("outer", "cov"):
                expected = (d, d)
            elif name in ("xsums", "xmeans"):
                # Without privacy: the clusters' prototypes in the shared
                # input space (the standardised views), k of them.
                expected = (k, width)
            elif spread or clusters:
                # k clusters, or one (the pooled spread of the embeddings).
                m = 1 if array.shape[0] == 1 else k
                expected = (m,) if name == "counts" else (m, d)
            else:
                expected = shapes[name]
            assert array.shape == expected, name
            total += array.astype(np.float32).nbytes
    assert total == model.communication_bytes_
    assert model.communication_bytes_ < model.feature_bytes_
    # 4 set-up rounds and 3 clustering rounds upload from 3 clients; each
    # round's broadcast and the final one go down to 3 clients.
    n_rounds = protocol.N_SETUP_ROUNDS + SMALL["rounds"]
    assert len(crossed) == n_rounds * 3 + n_rounds * 3


def test_dirichlet_partition_is_skewed_and_each_client_can_cluster():
    X, y, views = make_multiview_blobs(
        600, view_sizes=(4, 4), n_clusters=5, separation=5.0, random_state=0
    )
    params = {**SMALL, "rounds": 0, "pretrain_iter": 1}
    iid = FederatedMultiViewClustering(
        5, views=views, n_clients=4, **params, random_state=0
    ).fit(X)
    skew = FederatedMultiViewClustering(
        5,
        views=views,
        n_clients=4,
        client_partition="dirichlet",
        partition_alpha=0.2,
        **params,
        random_state=0,
    ).fit(X)

    def spread(model):
        table = np.zeros((4, 5))
        np.add.at(table, (model.client_of_sample_, y), 1)
        shares = table / table.sum(1, keepdims=True)
        return np.abs(shares - 0.2).sum(1).mean()

    assert np.bincount(iid.client_of_sample_).tolist() == [150] * 4
    assert spread(skew) > 3 * spread(iid)
    assert np.bincount(skew.client_of_sample_, minlength=4).min() >= 5


def test_clients_missing_whole_views_still_cluster():
    """Three views; each of two clients lacks a different one (a third has all)."""
    X, y, views = make_multiview_blobs(
        240, view_sizes=(6, 6, 6), n_clusters=4, separation=4.0, random_state=3
    )
    Xc, ids = _with_clients(X, 3)
    Xc[ids == 3, :6] = np.nan  # client 3 has no first view
    Xc[ids == 13, 6:12] = np.nan  # client 13 has no second view
    fits = {
        alignment: FederatedMultiViewClustering(
            4,
            views=views,
            client_column=-1,
            alignment=alignment,
            **SMALL,
            random_state=0,
        ).fit(Xc)
        for alignment in ("cooccurrence", None)
    }
    model = fits["cooccurrence"]
    aligned = adjusted_rand_score(y, model.labels_)
    # Clients with different views embed differently (their networks are
    # never shared), so agreement is weaker than with complete views
    # (documented), but alignment still makes them agree.
    assert aligned > 0.7
    assert aligned - adjusted_rand_score(y, fits[None].labels_) > 0.2
    np.testing.assert_array_equal(model.predict(Xc), model.labels_)


def test_dataframe_client_column_by_name():
    pd = pytest.importorskip("pandas")
    X, y, views = _blobs()
    Xc, _ = _with_clients(X, 2)
    frame = pd.DataFrame(Xc, columns=[f"f{i}" for i in range(12)] + ["site"])
    model = FederatedMultiViewClustering(
        4,
        views=[[f"f{i}" for i in range(6)], [f"f{i}" for i in range(6, 12)]],
        client_column="site",
        **SMALL,
        random_state=0,
    ).fit(frame)
    assert adjusted_rand_score(y, model.labels_) > 0.9


def test_client_with_fewer_samples_than_clusters_is_an_error():
    X, _, views = _blobs()
    ids = np.zeros(X.shape[0])
    ids[:3] = 1
    with pytest.raises(
        ValueError, match=r"Client 1 has 3 samples, fewer than n_clusters=4"
    ):
        FederatedMultiViewClustering(4, views=views, client_column=-1, **SMALL).fit(
            np.column_stack([X, ids])
        )


def test_view_missing_at_every_client_is_an_error():
    X, _, views = _blobs()
    X[:, 6:] = np.nan
    with pytest.raises(
        ValueError, match=r"view\(s\) \[1\] are missing at every client"
    ):
        FederatedMultiViewClustering(4, views=views, n_clients=2, **SMALL).fit(X)


def test_other_bad_inputs_are_clear_errors():
    X, _, views = _blobs()
    Xc, _ = _with_clients(X, 2)
    bad = Xc.copy()
    bad[0, -1] = 0.5
    with pytest.raises(
        ValueError, match=r"client id column 12 of X must hold integers"
    ):
        FederatedMultiViewClustering(4, views=views, client_column=-1, **SMALL).fit(bad)
    with pytest.raises(ValueError, match="need 80 samples"):
        FederatedMultiViewClustering(4, views=views, n_clients=20, **SMALL).fit(X[:60])
    model = FederatedMultiViewClustering(
        4, views=views, client_column=-1, **SMALL, random_state=0
    ).fit(Xc)
    other = Xc.copy()
    other[:, -1] = 99
    with pytest.raises(ValueError, match="Client 99 was not among the clients"):
        model.predict(other)
    with pytest.raises(ValueError, match="per-view arrays"):
        model.fit([X[:, :6], X[:, 6:]])


# --- superpixels and the scene ------------------------------------------------------


@pytest.fixture(scope="module")
def scene():
    pytest.importorskip("skimage")
    return make_remote_sensing_scene((64, 64), n_bands=8, n_regions=20, random_state=0)


def test_scene_views_are_complementary():
    """Grass and tree share a spectrum and differ in height; grass and road
    share a height and differ in spectrum."""
    scene = make_remote_sensing_scene(
        (64, 64), n_bands=8, n_regions=20, terrain=0.0, random_state=0
    )
    y = scene.land_cover
    names = scene.class_names
    spec = {c: scene.spectral[y == names.index(c)].mean(0) for c in names}
    elev = {c: scene.elevation[y == names.index(c)].mean() for c in names}
    assert np.abs(spec["grass"] - spec["tree"]).max() < 0.1
    assert abs(elev["tree"] - elev["grass"]) > 0.7
    assert np.abs(spec["grass"] - spec["road"]).max() > 0.2
    assert abs(elev["grass"] - elev["road"]) < 0.1


# --- issue 56: label skew, predict against labels_, a client's view widths ----------


def _hungarian_federated_kmeans(X, views, client, k, rounds, seed=0):
    """Per-client k-means++ (10 starts), Hungarian-matched to the largest
    client, count-weighted average, then federated Lloyd rounds (the peer)."""
    from scipy.optimize import linear_sum_assignment

    Z = (X - X.mean(0)) / X.std(0)
    start = 0
    for size in views:
        Z[:, start : start + size] /= np.sqrt(size)
        start += size
    ids = np.unique(client)
    fits = [KMeans(k, n_init=10, random_state=seed).fit(Z[client == i]) for i in ids]
    ref = fits[int(np.argmax([np.sum(client == i) for i in ids]))].cluster_centers_
    sums, counts = np.zeros_like(ref), np.zeros(k)
    for f in fits:
        rows, cols = linear_sum_assignment(
            ((f.cluster_centers_[:, None] - ref[None]) ** 2).sum(2)
        )
        w = np.bincount(f.labels_, minlength=k)
        sums[cols] += w[rows, None] * f.cluster_centers_[rows]
        counts[cols] += w[rows]
    centres = sums / np.maximum(counts, 1)[:, None]
    for _ in range(rounds + 1):
        labels = ((Z[:, None] - centres[None]) ** 2).sum(2).argmin(1)
        for c in range(k):
            if np.any(labels == c):
                centres[c] = Z[labels == c].mean(0)
    return labels


def _label_shards(y, n_clients, seed):
    rng = np.random.RandomState(seed)
    shards = np.array_split(np.lexsort((rng.rand(len(y)), y)), 2 * n_clients)
    client = np.empty(len(y), dtype=np.int64)
    for shard, i in zip(shards, rng.permutation(2 * n_clients) % n_clients):
        client[shard] = i
    return client


def test_label_shards_beat_hungarian_aligned_federated_kmeans():
    # Every client holds 2-4 of 6 planted classes. Matching each client's 6
    # centroids one to one to a reference client's pairs split classes with
    # classes the reference lacks; grouping the clients' clusters by their
    # prototypes in the shared input space does not.
    ours, peer = [], []
    for seed in range(3):
        X, y, views = make_multiview_blobs(
            600, view_sizes=(6, 6), n_clusters=6, separation=3.0, random_state=seed
        )
        client = _label_shards(y, 4, seed)
        assert max(np.unique(y[client == i]).size for i in range(4)) < 6
        model = FederatedMultiViewClustering(
            6, views=views, client_column=-1, random_state=0, **SMALL
        ).fit(np.column_stack([X, client]))
        ours.append(clustering_accuracy(y, model.labels_))
        peer.append(
            clustering_accuracy(
                y, _hungarian_federated_kmeans(X, views, client, 6, SMALL["rounds"])
            )
        )
    assert min(ours) > 0.95
    assert np.mean(ours) > np.mean(peer) + 0.05


@pytest.mark.parametrize("epsilon", [None, 8.0])
def test_predict_on_training_rows_is_labels(epsilon):
    # labels_ is every training sample's nearest final prototype in its
    # client's embedding space, which is what predict computes.
    X, _, views = _blobs()
    Xc, _ = _with_clients(X, 3)
    model = FederatedMultiViewClustering(
        4,
        views=views,
        client_column=-1,
        random_state=0,
        **{**SMALL, "epsilon": epsilon},
    ).fit(Xc)
    assert np.mean(model.predict(Xc) == model.labels_) >= 0.99
    np.testing.assert_array_equal(model.transform(Xc).argmin(1), model.predict(Xc))


def test_a_view_of_another_width_is_refused():
    X, _, views = _blobs()
    Xc, _ = _with_clients(X, 3)
    model = FederatedMultiViewClustering(
        4, views=views, client_column=-1, random_state=0, **SMALL
    ).fit(Xc)
    # A client whose second view has 5 columns instead of 6.
    with pytest.raises(ValueError, match="features"):
        model.predict(np.delete(Xc, 8, axis=1))
    spec = {
        "X": X[:50, :11],
        "views": [np.arange(6), np.arange(6, 12)],
        "client": 2,
    }
    with pytest.raises(ValueError, match=r"client 2 have 11 columns but view 1"):
        protocol.check_client_views(spec)
