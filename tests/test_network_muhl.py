"""MuHLClassifier: multi-scale heat signals, learned hyperedges, their ablations."""

import numpy as np
import pytest
import torch
from scipy.linalg import expm
from sklearn.model_selection import GroupShuffleSplit

from sklearn_ext.datasets import make_brain_cohort
from sklearn_ext.network import MuHLClassifier
from sklearn_ext.network._connectome import connectome_width
from sklearn_ext.network._muhl_nn import graph_spectrum, knn_incidence
from sklearn_ext.utils._connectivity import matrices_to_vec


def _random_graph(n, seed=0):
    rng = np.random.RandomState(seed)
    W = rng.rand(n, n) * (rng.rand(n, n) < 0.5)
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0.0)
    return W


def test_heat_kernel_is_the_matrix_exponential():
    W = _random_graph(9)
    d = W.sum(1)
    L = np.eye(9) - W / np.sqrt(np.outer(d, d))
    eigvals, eigvecs = graph_spectrum(torch.as_tensor(W))
    for t in (0.5, 1.0, 4.0):
        kernel = (eigvecs * torch.exp(-t * eigvals)) @ eigvecs.T
        np.testing.assert_allclose(kernel.numpy(), expm(-t * L), atol=1e-10)


def test_fixed_hyperedges_are_each_region_with_its_nearest():
    W = _random_graph(12, seed=1)
    H = knn_incidence(W, (1.0, 4.0), knn=3)
    assert H.shape == (2, 12, 12)
    np.testing.assert_array_equal(H.sum(1), 4)  # the centre and 3 neighbours
    np.testing.assert_array_equal(H[:, np.arange(12), np.arange(12)], 1)
    eigvals, eigvecs = graph_spectrum(torch.as_tensor(W))
    kernel = ((eigvecs * torch.exp(-eigvals)) @ eigvecs.T).numpy()
    np.fill_diagonal(kernel, -np.inf)
    for j in range(12):
        members = set(np.flatnonzero(H[0, :, j])) - {j}
        assert members == set(np.argsort(-kernel[:, j])[:3])


def test_node_count_comes_from_the_width():
    rng = np.random.RandomState(0)
    y = np.arange(30) % 2
    # 6 regions, 2 features each: 15 + 12 columns.
    X = rng.normal(size=(30, connectome_width(6, 2)))
    clf = MuHLClassifier(n_node_features=2, max_iter=2, random_state=0).fit(X, y)
    assert (clf.n_nodes_, clf.layout_) == (6, "connectome")
    # The same 15 columns read as 5 regions with their diagonal.
    clf = MuHLClassifier(discard_diagonal=False, max_iter=2, random_state=0)
    assert clf.fit(X[:, :15], y).n_nodes_ == 5
    assert clf.hyperedges_.shape == (3, 5, 16)


def test_a_width_that_fits_no_network_is_an_error_or_a_documented_fallback():
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(30, 4)), np.arange(30) % 2
    with pytest.raises(ValueError, match="4 columns, which fits no network.*The "
                       r"nearest widths that fit are 3 columns \(3 nodes\) or "
                       r"6 columns \(4 nodes\)\."):  # fmt: skip
        MuHLClassifier(layout="connectome").fit(X, y)
    with pytest.warns(UserWarning, match="Falling back to one region per column"):
        clf = MuHLClassifier(max_iter=2, random_state=0).fit(X, y)
    assert (clf.layout_, clf.n_nodes_) == ("features", 4)


def _cohort(effect="higher_order", seed=0):
    data = make_brain_cohort(
        160, n_nodes=40, effect=effect, effect_size=1.5, n_visits=2, random_state=seed
    )
    train, test = next(
        GroupShuffleSplit(1, test_size=0.3, random_state=0).split(
            data.data, data.target, data.groups
        )
    )
    return data, train, test


def _top(clf, k):
    return np.argsort(-clf.node_importance_)[:k]


def test_learned_hyperedges_find_the_planted_regions_that_fixed_ones_miss():
    data, train, test = _cohort()
    X, y = data.data, data.target
    scores, precision = {}, {}
    for mode in ("learned", "knn", "none"):
        clf = MuHLClassifier(n_node_features=1, hypergraph=mode, random_state=0)
        clf.fit(X[train], y[train])
        scores[mode] = clf.score(X[test], y[test])
        planted = np.isin(_top(clf, len(data.planted_nodes)), data.planted_nodes)
        precision[mode] = planted.mean()
    # Fixed hyperedges classify by many local averages (a linear model in
    # disguise) but point at the wrong regions; learned ones gather the
    # planted regions. A plain GCN's pooling loses them.
    assert precision["learned"] >= 0.6, precision
    assert precision["learned"] >= precision["knn"] + 0.3, precision
    assert scores["learned"] >= scores["knn"], scores
    assert scores["learned"] >= scores["none"] + 0.1, scores


def test_sparsity_keeps_the_planted_regions_in_the_hyperedges():
    data, train, _ = _cohort(seed=1)
    clf = MuHLClassifier(n_node_features=1, random_state=0)
    clf.fit(data.data[train], data.target[train])
    H = clf.hyperedges_
    assert H.shape == (3, 40, 16) and H.min() >= 0 and H.max() <= 1
    # Total membership of each region over all hyperedges and scales: the
    # sparsity term prunes the regions that do not help, not the planted ones.
    total = H.sum(axis=(0, 2))
    planted = np.isin(np.arange(40), data.planted_nodes)
    assert total[planted].mean() > 3 * total[~planted].mean()
    np.testing.assert_allclose(clf.node_importance_.sum(), 1.0)


def test_sparsity_prunes_memberships():
    data, train, _ = _cohort()
    X, y = data.data[train], data.target[train]
    means = [
        MuHLClassifier(n_node_features=1, sparsity=s, max_iter=40, random_state=0)
        .fit(X, y)
        .hyperedges_.mean()
        for s in (0.0, 1.0)
    ]
    assert means[1] < 0.5 * means[0], means


def test_pairwise_effect_is_seen_through_its_regions():
    data, train, test = _cohort("pairwise")
    clf = MuHLClassifier(n_node_features=1, random_state=0)
    clf.fit(data.data[train], data.target[train])
    assert clf.score(data.data[test], data.target[test]) > 0.8


def test_only_learned_hyperedges_single_out_the_planted_regions():
    data, train, _ = _cohort()
    X, y = data.data[train], data.target[train]
    planted = np.isin(np.arange(40), data.planted_nodes)
    ratio = {}
    for mode in ("learned", "none"):
        clf = MuHLClassifier(n_node_features=1, hypergraph=mode, random_state=0)
        imp = clf.fit(X, y).node_importance_
        assert imp.shape == (40,) and np.all(imp >= 0)
        ratio[mode] = imp[planted].mean() / imp[~planted].mean()
    # The GCN's gradient saliency spreads over all regions (its mean pooling
    # mixes them); the learned hyperedges concentrate on the planted ones.
    assert clf.hyperedges_.shape == (3, 40, 0)
    assert ratio["learned"] > 3 and ratio["none"] < 1.5, ratio


def test_warm_start_continues_the_fit():
    data, train, _ = _cohort()
    X, y = data.data[train], data.target[train]
    clf = MuHLClassifier(n_node_features=1, max_iter=3, warm_start=True)
    clf.set_params(random_state=0).fit(X, y)
    first = clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ == first + 3
    with pytest.raises(ValueError, match="expecting 820 features"):
        clf.fit(X[:, : connectome_width(30, 0)], y)


def test_bad_input_gets_clear_errors():
    rng = np.random.RandomState(0)
    A = rng.rand(10, 5, 5)
    X = matrices_to_vec((A + A.transpose(0, 2, 1)) / 2)
    y = np.arange(10) % 2
    bad = X.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MuHLClassifier().fit(bad, y)
    with pytest.raises(ValueError, match="minimum of 2"):
        MuHLClassifier().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        MuHLClassifier().fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="scales must be"):
        MuHLClassifier(scales=(1, -2)).fit(X, y)
    # 5 regions with 2 features each: 20 columns; one short fits no network.
    rows = np.hstack([X, rng.rand(10, 10)])
    with pytest.raises(
        ValueError,
        match=r"19 columns, which fits no network.*\(= n \* 2\).*nearest widths "
        r"that fit are 14 columns \(4 nodes\) or 20 columns \(5 nodes\)",
    ):
        MuHLClassifier(n_node_features=2, layout="connectome").fit(rows[:, :-1], y)
    clf = MuHLClassifier(max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :6])
