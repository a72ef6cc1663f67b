"""NBCGClassifier: bargaining, label graph, coalitions, text input, bad input."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline

from sklearn_ext.datasets import make_longtail_multilabel
from sklearn_ext.multilabel import (
    NBCGClassifier,
    learn_label_graph,
    nash_bargaining_weights,
)
from sklearn_ext.multilabel._nbcg import _coalition_masks, _greedy_dag

pytest.importorskip("torch")

SMALL = {
    "hidden_layer_sizes": (32,),
    "max_iter": 25,
    "learning_rate_init": 3e-3,
    "device": "cpu",
    "random_state": 0,
}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(n=600, n_test=0, **kw):
    params = {"n_features": 40, "n_labels": 8, "signal": 2.0, "max_frequency": 0.4}
    return make_longtail_multilabel(
        n_samples=n, n_test=n_test, random_state=0, **{**params, **kw}
    )


# ------------------------------------------------------------ bargaining


def test_nash_weights_give_orthogonal_players_equal_shares():
    norms = np.array([3.0, 1.0, 0.5])
    alpha = nash_bargaining_weights(np.diag(norms**2), np.zeros(3))
    # alpha_c * ||g_c|| is the same for every player: equal shares of the step.
    shares = alpha * norms
    assert_allclose(shares / shares[0], 1, rtol=1e-4)
    assert_allclose(alpha.mean(), 1)


def test_nash_weights_follow_surplus_when_it_dominates():
    surplus = np.array([800.0, 400.0, 100.0])
    alpha = nash_bargaining_weights(np.eye(3), surplus)
    # With surpluses far above the (unit) gradient terms, alpha_c ~ 1 / s_c:
    # the least served player, smallest surplus, gets the largest weight.
    assert_allclose(alpha * surplus / (alpha * surplus)[0], 1, rtol=1e-3)
    assert alpha[2] > alpha[1] > alpha[0]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 8),
    seed=st.integers(0, 2**16),
    scale=st.floats(1e-3, 1e3),
)
def test_nash_weights_positive_normalised_capped(n, seed, scale):
    rng = np.random.RandomState(seed)
    G = rng.randn(n, 5)
    gram = scale * G @ G.T
    surplus = rng.rand(n) * (rng.rand(n) < 0.7)
    alpha = nash_bargaining_weights(gram, surplus)
    assert np.all(alpha > 0)
    assert_allclose(alpha.mean(), 1, rtol=1e-9)
    assert alpha.max() <= 10 + 1e-9
    # Raising one player's surplus never raises its weight relative to others.
    more = surplus.copy()
    more[0] += 0.5
    alpha2 = nash_bargaining_weights(gram, more)
    assert alpha2[0] / alpha2[1:].mean() <= alpha[0] / alpha[1:].mean() + 1e-6


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (6, 6), elements=st.floats(0, 1)))
def test_greedy_dag_is_acyclic_and_keeps_a_dag(W):
    np.fill_diagonal(W, 0)
    D = _greedy_dag(W)
    # Nilpotent adjacency <=> no directed cycle.
    assert not np.linalg.matrix_power((D > 0).astype(int), 6).any()
    assert np.all((D == 0) | (D == W))
    upper = np.triu(W, 1)
    assert_array_equal(_greedy_dag(upper), upper)


def test_coalition_masks_follow_edges_into_a_coalition():
    graph = np.zeros((4, 4))
    graph[0, 2] = 1.0  # label 0 (coalition 0) -> label 2 (coalition 1)
    masks = _coalition_masks(graph, np.array([0, 0, 1, 2]), 3)
    expected = np.eye(3, dtype=bool)
    expected[1, 0] = True  # coalition 1 reads its parent coalition 0
    assert_array_equal(masks, expected)


# ------------------------------------------------------------ label graph


def test_label_graph_recovers_a_planted_dag():
    _, Y, info = make_longtail_multilabel(
        n_samples=4000,
        n_labels=12,
        max_frequency=0.4,
        parent_effect=3.0,
        return_structure=True,
        random_state=1,
    )
    G = learn_label_graph(Y, random_state=0) > 0
    truth = info.graph > 0
    skeleton_hits = ((G | G.T) & truth).sum()
    assert not np.linalg.matrix_power(G.astype(int), 12).any()
    assert skeleton_hits / max(G.sum(), 1) >= 0.6  # precision
    assert skeleton_hits / truth.sum() >= 0.4  # recall


def test_label_graph_of_independent_labels_is_empty():
    rng = np.random.RandomState(0)
    Y = (rng.rand(3000, 5) < [0.4, 0.3, 0.2, 0.1, 0.05]).astype(int)
    assert not learn_label_graph(Y, random_state=0).any()


# --------------------------------------------------------------- estimator


def test_fit_predict_shapes_and_fitted_structure():
    X, Y, X_test, Y_test = _data(n_test=400)
    clf = NBCGClassifier(**SMALL).fit(X, Y)
    pred, proba = clf.predict(X_test), clf.predict_proba(X_test)
    assert pred.shape == Y_test.shape and pred.dtype == Y.dtype
    assert np.all((proba > 0) & (proba < 1))
    assert_array_equal(pred, (proba > 0.5).astype(int))
    assert f1_score(Y_test, pred, average="micro") > 0.8
    # Coalitions partition the labels; masks hold the diagonal.
    labels = np.sort(np.concatenate(clf.coalitions_))
    assert_array_equal(labels, np.arange(Y.shape[1]))
    K = len(clf.coalitions_)
    assert K == 3  # ceil(sqrt(8))
    assert clf.masks_.shape == (K, K) and clf.masks_.diagonal().all()
    assert clf.bargaining_weights_.shape == (clf.n_iter_, K)
    assert_allclose(clf.bargaining_weights_.mean(1), 1, rtol=1e-5)
    assert clf.label_graph_.shape == (8, 8)


def test_ablations_change_what_they_claim():
    X, Y = _data()
    nash = NBCGClassifier(**SMALL).fit(X, Y)
    total = NBCGClassifier(objective="sum", **SMALL).fit(X, Y)
    rand = NBCGClassifier(coalitions="random", **SMALL).fit(X, Y)
    assert_allclose(total.bargaining_weights_, 1)
    assert np.abs(nash.bargaining_weights_ - 1).max() > 0.05
    assert sorted(map(len, rand.coalitions_)) == sorted(map(len, nash.coalitions_))
    assert_array_equal(rand.label_graph_, nash.label_graph_)
    assert {tuple(c) for c in rand.coalitions_} != {tuple(c) for c in nash.coalitions_}


def test_linear_trunk_is_a_linear_model():
    X, Y, X_test, Y_test = _data(n_test=400)
    clf = NBCGClassifier(**{**SMALL, "hidden_layer_sizes": ()}).fit(X, Y)
    assert f1_score(Y_test, clf.predict(X_test), average="micro") > 0.8
    # Logits are affine in X: the midpoint's logit is the mean of the two.
    a, b = X_test[:1], X_test[1:2]
    mid = clf.decision_function((a + b) / 2)
    assert_allclose(mid, (clf.decision_function(a) + clf.decision_function(b)) / 2)


def test_one_dimensional_y_is_multiclass():
    rng = np.random.RandomState(0)
    y = rng.choice(["a", "b", "c"], 300)
    X = rng.randn(300, 3) + 3 * (y[:, None] == np.array(["a", "b", "c"]))
    X = np.hstack([X, rng.randn(300, 1)])
    clf = NBCGClassifier(**SMALL).fit(X, y)
    assert_array_equal(clf.classes_, ["a", "b", "c"])
    assert (clf.predict(X) == y).mean() > 0.9
    assert_allclose(clf.predict_proba(X).sum(1), 1)
    assert not clf.label_graph_.any()


def test_sparse_input_matches_dense():
    X, Y = _data(n=300)
    X[X < 1] = 0.0
    dense = NBCGClassifier(**SMALL).fit(X, Y)
    sparse = NBCGClassifier(**SMALL).fit(sp.csr_matrix(X), Y)
    assert_allclose(
        sparse.predict_proba(sp.csr_matrix(X)), dense.predict_proba(X), rtol=1e-5
    )


def _corpus(n, random_state):
    """Documents whose words come from the vocabularies of their labels."""
    _, Y = _data(n=n)
    rng = np.random.RandomState(random_state)
    docs = []
    for row in Y:
        words = [f"bg{rng.randint(50)}" for _ in range(8)]
        for k in np.flatnonzero(row):
            words += [f"lab{k}w{rng.randint(4)}" for _ in range(4)]
        rng.shuffle(words)
        docs.append(" ".join(words))
    return docs, Y


def test_tfidf_pipeline_on_raw_text():
    docs, Y = _corpus(500, 0)
    params = {**SMALL, "learning_rate_init": 1e-2, "max_iter": 40}
    model = make_pipeline(TfidfVectorizer(), NBCGClassifier(**params))
    model.fit(docs[:400], Y[:400])
    pred = model.predict(docs[400:])
    assert pred.shape == (100, Y.shape[1])
    assert f1_score(Y[400:], pred, average="micro") > 0.9


def test_warm_start_continues_and_refuses_new_labels():
    X, Y = _data(n=300)
    clf = NBCGClassifier(warm_start=True, **{**SMALL, "max_iter": 5}).fit(X, Y)
    graph, n_iter = clf.label_graph_.copy(), clf.n_iter_
    clf.fit(X, Y)
    assert clf.n_iter_ == 2 * n_iter
    assert clf.bargaining_weights_.shape[0] == clf.n_iter_
    assert_array_equal(clf.label_graph_, graph)
    with pytest.raises(ValueError, match="warm_start"):
        clf.fit(X, Y[:, :-1])


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "Y_bad, match",
    [
        (lambda Y: Y * 2, "binary indicator"),
        (lambda Y: Y + 0.5, "binary indicator"),
        (lambda Y: Y[:-3], "different numbers of samples"),
        (lambda Y: Y[:, :, None], "binary indicator|dimension"),
    ],
)
def test_bad_targets_raise_clear_errors(Y_bad, match):
    X, Y = _data(n=100)
    with pytest.raises(ValueError, match=match):
        NBCGClassifier(**SMALL).fit(X, Y_bad(Y))


def test_label_that_never_occurs_warns_and_is_not_predicted():
    X, Y = _data(n=300)
    Y = Y.copy()
    Y[:, 3] = 0
    with pytest.warns(UserWarning, match=r"never occur: labels \[3\]"):
        clf = NBCGClassifier(**SMALL).fit(X, Y)
    assert not clf.predict(X)[:, 3].any()


def test_rows_without_labels_warn_with_their_count():
    X, Y = _data(n=300)
    empty = int((Y.sum(1) == 0).sum())
    assert empty > 0
    with pytest.warns(UserWarning, match=f"{empty} of 300 rows of Y have no label"):
        NBCGClassifier(**SMALL).fit(X, Y)


def test_inputs_are_not_modified():
    X, Y = _data(n=200)
    X0, Y0 = X.copy(), Y.copy()
    NBCGClassifier(**SMALL).fit(X, Y).predict(X)
    assert_array_equal(X, X0)
    assert_array_equal(Y, Y0)


def test_bad_hidden_layer_sizes_is_named():
    X, Y = _data(n=100)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        NBCGClassifier(**{**SMALL, "hidden_layer_sizes": (0,)}).fit(X, Y)


def test_nash_weight_cap_holds_with_many_players():
    alpha = nash_bargaining_weights(np.diag(np.r_[1e-8, np.ones(19)]), np.zeros(20))
    assert alpha.max() <= 10 + 1e-9
    assert_allclose(alpha.mean(), 1)


def test_multiclass_probabilities_are_calibrated_on_pure_noise():
    rng = np.random.RandomState(0)
    X = rng.randn(3000, 3)
    y = (rng.rand(3000) < 0.9).astype(int)
    clf = NBCGClassifier(**{**SMALL, "hidden_layer_sizes": (), "alpha": 0.0})
    clf.fit(X, y)
    assert abs(clf.predict_proba(X)[:, 1].mean() - 0.9) < 0.03
    with pytest.raises(ValueError, match="at least 2 classes"):
        NBCGClassifier(**SMALL).fit(X, np.zeros(3000, dtype=int))


def test_warm_start_refuses_other_features_and_pickle_uses_fitted_shape():
    import pickle

    X, Y = _data(n=200)
    clf = NBCGClassifier(warm_start=True, **{**SMALL, "max_iter": 3}).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        clf.fit(X[:, :10], Y)
    assert clf.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="warm_start"):
        clf.set_params(n_coalitions=2).fit(X, Y)
    clf.set_params(n_coalitions="auto", hidden_layer_sizes=(16,))
    clone = pickle.loads(pickle.dumps(clf))
    assert_allclose(clone.predict_proba(X), clf.predict_proba(X))
