"""MuHLClassifier: multi-scale heat signals, learned hyperedges, their ablations."""

import numpy as np
import pytest
import torch
from scipy.linalg import expm
from sklearn.metrics import log_loss
from sklearn.model_selection import GroupShuffleSplit

from sklearn_ext.datasets import make_brain_cohort
from sklearn_ext.network import MuHLClassifier
from sklearn_ext.network._connectome import connectome_width
from sklearn_ext.network._muhl_nn import (
    graph_spectrum,
    knn_incidence,
    subject_hyperedges,
)
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
    assert clf.hyperedges_.shape == (1, 5, 5)


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
    kw = {"n_planted": 6, "effect_size": 1.5} if effect == "pairwise" else {}
    data = make_brain_cohort(
        160, n_nodes=40, effect=effect, n_visits=2, random_state=seed, **kw
    )
    train, test = next(
        GroupShuffleSplit(1, test_size=0.3, random_state=0).split(
            data.data, data.target, data.groups
        )
    )
    return data, train, test


def test_a_subjects_hyperedges_gather_the_nodes_active_with_it():
    # 30 nodes, 12 frames of noise; nodes 3, 17 and 25 activate together in
    # frames 2 and 7, nodes 17 and 9 in frame 5.
    rng = np.random.RandomState(0)
    x = rng.normal(size=(1, 30, 12))
    for frame in (2, 7):
        x[0, [3, 17, 25], frame] += 3.0
    x[0, [9, 17], 5] += 3.0
    signals = torch.as_tensor(x)
    prior = torch.zeros(30, 30, requires_grad=True)
    scale = torch.ones((), dtype=torch.float64, requires_grad=True)
    H = subject_hyperedges(signals, prior.double(), scale, knn=2)
    # Forward: exactly 0/1, the centre and its 2 most co-active nodes.
    assert set(np.unique(H.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_array_equal(H.detach().sum(1).numpy(), 3)
    for centre in (3, 25):
        assert set(np.flatnonzero(H[0, :, centre].detach().numpy())) == {3, 17, 25}
    # Backward (straight-through): the prior and the weight of the subject's
    # own co-activation both receive gradient.
    (H[0, :, 3] * torch.arange(30.0, dtype=torch.float64)).sum().backward()
    assert prior.grad.abs().sum() > 0 and scale.grad.abs() > 0


def test_hyperedges_recover_the_planted_group_that_fixed_ones_miss():
    data, train, test = _cohort()
    X, y = data.data, data.target
    planted = data.planted_nodes
    scores = {}
    for mode in ("subject", "knn"):
        clf = MuHLClassifier(
            n_node_features=data.n_node_features, hypergraph=mode, random_state=0
        )
        clf.fit(X[train], y[train])
        scores[mode] = clf.score(X[test], y[test])
        if mode == "subject":
            H = clf.hyperedges_[0]
            assert H.shape == (40, 40)
            # Each planted node's hyperedge holds the other planted nodes in
            # most subjects; the fixed ones (neighbourhoods) never do, as the
            # planted nodes are far apart.
            assert H[np.ix_(planted, planted)].mean() > 0.7, H[np.ix_(planted, planted)]
            top = np.argsort(-clf.node_importance_)[: planted.size]
            assert np.isin(top, planted).mean() >= 2 / 3
        else:
            H = clf.hyperedges_[0]
            off = H[np.ix_(planted, planted)] * (1 - np.eye(planted.size))
            assert off.sum() == 0
    # The joint co-activation needs the group in one hyperedge.
    assert scores["subject"] >= scores["knn"] + 0.1, scores
    assert scores["subject"] >= 0.7, scores


def test_pairwise_effect_is_read_from_the_connections():
    data, train, test = _cohort("pairwise")
    clf = MuHLClassifier(n_node_features=data.n_node_features, random_state=0)
    clf.fit(data.data[train], data.target[train])
    assert clf.score(data.data[test], data.target[test]) > 0.8
    # Without the linear readout of the connections it cannot see them.
    clf.set_params(edge_readout=False).fit(data.data[train], data.target[train])
    assert clf.score(data.data[test], data.target[test]) < 0.7


def test_early_stopping_keeps_the_best_validation_epoch():
    data, train, _ = _cohort()
    X, y = data.data[train], data.target[train]
    clf = MuHLClassifier(n_node_features=data.n_node_features, random_state=0)
    clf.fit(X, y)
    curve = np.asarray(clf.validation_loss_curve_)
    # Stopped on the held-out loss, long before max_iter.
    assert curve.size == clf.n_iter_ < clf.max_iter
    # The kept weights are those of the best epoch: their loss on the
    # held-out rows is the curve's minimum, not its last value.
    _, valid = clf._validation_split(X, y, None)
    held_out = log_loss(y[valid], clf.predict_proba(X[valid]), labels=[0, 1])
    np.testing.assert_allclose(held_out, curve.min(), rtol=1e-8)
    assert held_out < curve[-1]


def test_warm_start_continues_the_fit():
    data, train, _ = _cohort()
    X, y = data.data[train], data.target[train]
    clf = MuHLClassifier(
        n_node_features=data.n_node_features, max_iter=3, warm_start=True
    )
    clf.set_params(random_state=0).fit(X, y)
    first = clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ == first + 3
    with pytest.raises(ValueError, match="expecting 1260 features"):
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
