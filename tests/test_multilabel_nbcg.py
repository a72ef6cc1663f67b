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
    f1_thresholds,
    learn_label_graph,
    nash_bargaining_weights,
)
from sklearn_ext.multilabel._label_graph import _coalition_masks, _greedy_dag
from sklearn_ext.multilabel._thresholds import validation_split

torch = pytest.importorskip("torch")

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
    # And its ancestors: 0 -> 2 -> 3 makes coalition 0 an ancestor of 2.
    graph[2, 3] = 1.0
    masks = _coalition_masks(graph, np.array([0, 0, 1, 2]), 3)
    expected[2, 1] = expected[2, 0] = True
    assert_array_equal(masks, expected)


# ------------------------------------------------------------ label graph


def test_label_graph_recovers_a_planted_dag():
    _, y, info = make_longtail_multilabel(
        n_samples=4000,
        n_labels=12,
        max_frequency=0.4,
        parent_effect=3.0,
        return_structure=True,
        random_state=1,
    )
    G = learn_label_graph(y, random_state=0) > 0
    truth = info.graph > 0
    skeleton_hits = ((G | G.T) & truth).sum()
    assert not np.linalg.matrix_power(G.astype(int), 12).any()
    assert skeleton_hits / max(G.sum(), 1) >= 0.6  # precision
    assert skeleton_hits / truth.sum() >= 0.4  # recall


def test_label_graph_weights_act_as_repeated_rows():
    _, y = make_longtail_multilabel(
        n_samples=800, n_labels=6, max_frequency=0.4, parent_effect=3.0, random_state=3
    )
    w = np.random.RandomState(0).randint(0, 4, len(y))  # zeros drop rows
    weighted = learn_label_graph(y, sample_weight=w, random_state=0)
    repeated = learn_label_graph(np.repeat(y, w, axis=0), random_state=0)
    assert weighted.any()
    assert_allclose(weighted, repeated, rtol=1e-9, atol=1e-12)
    # Weights that matter change the graph: keep only rows without label 0.
    alone = learn_label_graph(y, sample_weight=y[:, 0] == 0, random_state=0)
    assert not alone[0].any() and not alone[:, 0].any()
    assert not np.array_equal(alone > 0, weighted > 0)


def test_label_graph_of_independent_labels_is_empty():
    rng = np.random.RandomState(0)
    y = (rng.rand(3000, 5) < [0.4, 0.3, 0.2, 0.1, 0.05]).astype(int)
    assert not learn_label_graph(y, random_state=0).any()


# --------------------------------------------------------------- estimator


def test_fit_predict_shapes_and_fitted_structure():
    X, y, X_test, y_test = _data(n_test=400)
    clf = NBCGClassifier(**SMALL).fit(X, y)
    pred, proba = clf.predict(X_test), clf.predict_proba(X_test)
    assert pred.shape == y_test.shape and pred.dtype == y.dtype
    assert np.all((proba > 0) & (proba < 1))
    assert clf.thresholds_.shape == (y.shape[1],)
    assert_array_equal(pred, (proba > clf.thresholds_).astype(int))
    assert f1_score(y_test, pred, average="micro") > 0.8
    # Coalitions partition the labels; masks hold the diagonal.
    labels = np.sort(np.concatenate(clf.coalitions_))
    assert_array_equal(labels, np.arange(y.shape[1]))
    K = len(clf.coalitions_)
    assert K == 3  # ceil(sqrt(8))
    assert clf.masks_.shape == (K, K) and clf.masks_.diagonal().all()
    assert clf.bargaining_weights_.shape == (clf.n_iter_, K)
    assert_allclose(clf.bargaining_weights_.mean(1), 1, rtol=1e-5)
    assert clf.label_graph_.shape == (8, 8)


def test_ablations_change_what_they_claim():
    X, y = _data()
    nash = NBCGClassifier(**SMALL).fit(X, y)
    total = NBCGClassifier(objective="sum", **SMALL).fit(X, y)
    rand = NBCGClassifier(coalitions="random", **SMALL).fit(X, y)
    assert_allclose(total.bargaining_weights_, 1)
    assert np.abs(nash.bargaining_weights_ - 1).max() > 0.05
    assert sorted(map(len, rand.coalitions_)) == sorted(map(len, nash.coalitions_))
    assert_array_equal(rand.label_graph_, nash.label_graph_)
    assert {tuple(c) for c in rand.coalitions_} != {tuple(c) for c in nash.coalitions_}


def test_linear_trunk_is_a_linear_model():
    X, y, X_test, y_test = _data(n_test=400)
    clf = NBCGClassifier(**{**SMALL, "hidden_layer_sizes": ()}).fit(X, y)
    assert f1_score(y_test, clf.predict(X_test), average="micro") > 0.8
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
    X, y = _data(n=300)
    X[X < 1] = 0.0
    dense = NBCGClassifier(**SMALL).fit(X, y)
    sparse = NBCGClassifier(**SMALL).fit(sp.csr_matrix(X), y)
    assert_allclose(
        sparse.predict_proba(sp.csr_matrix(X)), dense.predict_proba(X), rtol=1e-5
    )


def _corpus(n, random_state):
    """Documents whose words come from the vocabularies of their labels."""
    _, y = _data(n=n)
    rng = np.random.RandomState(random_state)
    docs = []
    for row in y:
        words = [f"bg{rng.randint(50)}" for _ in range(8)]
        for k in np.flatnonzero(row):
            words += [f"lab{k}w{rng.randint(4)}" for _ in range(4)]
        rng.shuffle(words)
        docs.append(" ".join(words))
    return docs, y


def test_tfidf_pipeline_on_raw_text():
    docs, y = _corpus(500, 0)
    params = {**SMALL, "learning_rate_init": 1e-2, "max_iter": 40}
    model = make_pipeline(TfidfVectorizer(), NBCGClassifier(**params))
    model.fit(docs[:400], y[:400])
    pred = model.predict(docs[400:])
    assert pred.shape == (100, y.shape[1])
    assert f1_score(y[400:], pred, average="micro") > 0.9


def test_warm_start_continues_and_refuses_new_labels():
    X, y = _data(n=300)
    clf = NBCGClassifier(warm_start=True, **{**SMALL, "max_iter": 5}).fit(X, y)
    graph, n_iter = clf.label_graph_.copy(), clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ == 2 * n_iter
    assert clf.bargaining_weights_.shape[0] == clf.n_iter_
    assert_array_equal(clf.label_graph_, graph)
    # The one warm-start check names what changed: here the labels.
    with pytest.raises(ValueError, match="warm_start.*classes"):
        clf.fit(X, y[:, :-1])
    assert clf.n_iter_ == 2 * n_iter


# ------------------------------------------------------------ sample weights


def _weighted_problem():
    """Labels partly predictable from X, and weights 2 on label 0's positives."""
    rng = np.random.RandomState(0)
    n = 300
    X = rng.randn(n, 5)
    logits = np.c_[
        1.5 * X[:, 0], 1.5 * X[:, 1] - 1, np.full(n, -1.0), X[:, 2] - X[:, 3]
    ]
    y = (rng.rand(n, 4) < 1 / (1 + np.exp(-logits))).astype(int)
    w = np.where(y[:, 0] == 1, 2, 1)
    return X, y, w


WEIGHTED = {
    "threshold": 0.5,
    "hidden_layer_sizes": (),
    "max_iter": 300,
    "learning_rate_init": 2e-2,
    "batch_size": 64,
    "device": "cpu",
}


def test_sample_weight_structure_equals_repeated_rows():
    """The deterministic stages see integer weights exactly as repeated rows."""
    X, y = _data(n=300)
    w = np.random.RandomState(1).randint(0, 3, len(y))
    params = {**SMALL, "max_iter": 2, "threshold": 0.5}
    weighted = NBCGClassifier(**params).fit(X, y, sample_weight=w)
    repeated = NBCGClassifier(**params).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w, axis=0)
    )
    plain = NBCGClassifier(**params).fit(X, y)
    assert_array_equal(weighted.label_frequencies_, repeated.label_frequencies_)
    assert_allclose(weighted.label_graph_, repeated.label_graph_, rtol=1e-9)
    assert weighted.label_graph_.any()
    for a, b in zip(weighted.coalitions_, repeated.coalitions_, strict=True):
        assert_array_equal(a, b)
    assert_array_equal(weighted.masks_, repeated.masks_)
    assert not np.array_equal(weighted.label_frequencies_, plain.label_frequencies_)


def _mean_distance(A, B):
    """Mean absolute difference of predictions over pairs of different seeds."""
    pairs = [(a, b) for i, a in enumerate(A) for j, b in enumerate(B) if i != j]
    return np.mean([np.abs(a - b).mean() for a, b in pairs])


@pytest.mark.slow
def test_sample_weight_two_matches_duplicated_rows_in_distribution():
    """Weights of 2 and duplicated rows give fits indistinguishable over seeds.

    Minibatches differ (repeated rows make more steps per epoch), so the fits
    cannot agree bit for bit; the distance between weighted and repeated fits
    of different seeds must be within the seed-to-seed spread of the repeated
    fits, while ignoring the weights moves the fit well outside it.
    """
    X, y, w = _weighted_problem()
    X_rep, y_rep = np.repeat(X, w, axis=0), np.repeat(y, w, axis=0)
    seeds = range(4)

    def fits(Xf, yf, sample_weight):
        return [
            NBCGClassifier(random_state=s, **WEIGHTED)
            .fit(Xf, yf, sample_weight=sample_weight)
            .predict_proba(X)
            for s in seeds
        ]

    weighted = fits(X, y, w)
    repeated = fits(X_rep, y_rep, None)
    unweighted = fits(X, y, None)
    spread = max(_mean_distance(repeated, repeated), _mean_distance(weighted, weighted))
    assert _mean_distance(weighted, repeated) < 1.5 * spread
    # Weights that matter: label 0's positives count twice, so its predicted
    # probability rises, as with the repeated rows and unlike without weights.
    assert _mean_distance(unweighted, repeated) > 2 * spread
    label0 = [np.mean(P, axis=(0, 1))[0] for P in (weighted, repeated, unweighted)]
    assert abs(label0[0] - label0[1]) < 0.03
    assert label0[0] > label0[2] + 0.08


def test_zero_weights_remove_the_label_they_carry():
    """A label whose positives all weigh 0 is, for the fit, a label never seen."""
    X, y = _data(n=300)
    w = np.where(y[:, 0] == 1, 0.0, 1.0)
    with pytest.warns(UserWarning, match=r"never occur: labels \[0\]"):
        clf = NBCGClassifier(**SMALL).fit(X, y, sample_weight=w)
    assert clf.label_frequencies_[0] == 0
    assert clf.predict_proba(X)[:, 0].max() < 0.05
    assert NBCGClassifier(**SMALL).fit(X, y).predict(X)[:, 0].any()


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "y_bad, match",
    [
        (lambda y: y * 2, "binary indicator"),
        (lambda y: y + 0.5, "binary indicator"),
        (lambda y: y[:-3], "different numbers of samples"),
        (lambda y: y[:, :, None], "binary indicator|dimension"),
    ],
)
def test_bad_targets_raise_clear_errors(y_bad, match):
    X, y = _data(n=100)
    with pytest.raises(ValueError, match=match):
        NBCGClassifier(**SMALL).fit(X, y_bad(y))


def test_label_that_never_occurs_warns_and_is_not_predicted():
    X, y = _data(n=300)
    y = y.copy()
    y[:, 3] = 0
    with pytest.warns(UserWarning, match=r"never occur: labels \[3\]"):
        clf = NBCGClassifier(**SMALL).fit(X, y)
    assert not clf.predict(X)[:, 3].any()


def test_rows_without_labels_warn_with_their_count():
    X, y = _data(n=300)
    empty = int((y.sum(1) == 0).sum())
    assert empty > 0
    with pytest.warns(UserWarning, match=f"{empty} of 300 rows of y have no label"):
        NBCGClassifier(**SMALL).fit(X, y)


def test_bad_hidden_layer_sizes_is_named():
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        NBCGClassifier(**{**SMALL, "hidden_layer_sizes": (0,)}).fit(X, y)


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

    X, y = _data(n=200)
    clf = NBCGClassifier(warm_start=True, **{**SMALL, "max_iter": 3}).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.fit(X[:, :10], y)
    assert clf.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="warm_start.*n_coalitions: 'auto' -> 2"):
        clf.set_params(n_coalitions=2).fit(X, y)
    clf.set_params(n_coalitions="auto", hidden_layer_sizes=(16,))
    clone = pickle.loads(pickle.dumps(clf))
    assert_allclose(clone.predict_proba(X), clf.predict_proba(X))


# ------------------------------------------------------ structural masks


def _fitted_with_unread_pair(mask):
    X, y = _data(n=400)
    clf = NBCGClassifier(
        **{**SMALL, "hidden_layer_sizes": (8,), "max_iter": 3, "threshold": 0.5},
        n_coalitions=8,
        mask=mask,
    ).fit(X, y)
    return X, clf


def test_masks_are_structural_non_ancestor_channels_do_not_reach_a_coalition():
    X, clf = _fitted_with_unread_pair("graph")
    c, d = map(int, np.argwhere(~clf.masks_)[0])  # c does not read d
    labels_c = clf.coalitions_[c]
    before = clf.decision_function(X)
    # Perturb everything coalition d computes: its encoder and its channels.
    module = clf.module_
    rows = np.flatnonzero(np.repeat(np.arange(8), 8) == d)  # 8 hidden units each
    with torch.no_grad():
        module.encoders[0].weight[rows] += 5.0
        widths = [clf.channel_width * len(g) for g in clf.coalitions_]
        start = int(np.sum(widths[:d]))
        module.channels.weight[start : start + widths[d]] += 5.0
    after = clf.decision_function(X)
    assert_array_equal(after[:, labels_c], before[:, labels_c])
    assert (
        np.abs(after[:, clf.coalitions_[d]] - before[:, clf.coalitions_[d]]).max() > 0
    )
    # mask="none": every coalition reads every block, so the same change moves c.
    X, free = _fitted_with_unread_pair("none")
    assert free.masks_.all()
    before = free.decision_function(X)
    with torch.no_grad():
        free.module_.channels.weight[start : start + widths[d]] += 5.0
    assert (
        np.abs(free.decision_function(X)[:, labels_c] - before[:, labels_c]).max()
        > 1e-3
    )


def test_bargaining_weights_move_shared_encoders_and_leave_heads_their_own_loss():
    from torch.nn import functional as F

    from sklearn_ext.multilabel._nbcg_nn import BargainingLoss

    X, y = _data(n=300)
    clf = NBCGClassifier(
        **{**SMALL, "hidden_layer_sizes": (), "max_iter": 3, "threshold": 0.5},
        mask="none",
    ).fit(X, y)
    module = clf.module_
    K, L = len(clf.coalitions_), y.shape[1]
    member = torch.zeros(L, K, dtype=torch.float64)
    for c, labels in enumerate(clf.coalitions_):
        member[labels, c] = 1.0
    scale = torch.tensor(np.geomspace(0.2, 5.0, L))  # unequal coalitions
    Xt, Yt = torch.tensor(X), torch.tensor(y, dtype=torch.float64)
    module = module.double()

    def grads(nash):
        loss = BargainingLoss(
            module,
            lambda idx: (Xt[idx], Yt[idx], None),
            label_scale=scale,
            member=member,
            disagreement=torch.ones(K, dtype=torch.float64),
            rate=0.0,
            nash=nash,
        )
        module.zero_grad()
        loss(torch.arange(len(X))).backward()
        weights = loss.step_weights[-1]
        return {n: p.grad.clone() for n, p in module.named_parameters()}, weights

    nash, alpha = grads(True)
    plain, ones = grads(False)
    assert_allclose(ones.numpy(), 1)
    assert np.abs(alpha.numpy() - 1).max() > 0.05  # the weights are not trivial
    # Heads: each coalition's own loss, whatever the weights.
    assert_allclose(nash["heads.weight"], plain["heads.weight"], rtol=1e-9)
    assert_allclose(nash["heads.bias"], plain["heads.bias"], rtol=1e-9)
    # Shared encoders: the bargaining combination sum_c alpha_c grad L_c / K.
    module.zero_grad()
    logits, _ = module(Xt)
    bce = F.binary_cross_entropy_with_logits(logits, Yt, reduction="none")
    per_coalition = ((bce * scale) @ member).mean(0)
    (per_coalition @ alpha / K).backward()
    expected = module.channels.weight.grad
    assert_allclose(nash["channels.weight"], expected, rtol=1e-8, atol=1e-12)
    assert not np.allclose(nash["channels.weight"], plain["channels.weight"])


def test_nash_weights_solve_in_torch_like_numpy():
    rng = np.random.RandomState(0)
    A = rng.randn(5, 9)
    gram, surplus = A @ A.T, rng.rand(5) * 0.3
    expected = nash_bargaining_weights(gram, surplus)
    got = nash_bargaining_weights(torch.tensor(gram), torch.tensor(surplus))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    assert_allclose(got.numpy(), expected, rtol=1e-10)
    # The conditions hold for the raw solution.
    _, raw = nash_bargaining_weights(gram, surplus, return_raw=True)
    G = gram / gram.diagonal().mean() + 1e-6 * np.eye(5)
    assert_allclose(raw * (surplus + G @ raw), 1, rtol=1e-7)


# ------------------------------------------------- label graph orientation


def _collider(seed, n=5000):
    rng = np.random.RandomState(seed)
    r1, r2 = rng.rand(n) < 0.05, rng.rand(n) < 0.08
    f = rng.rand(n) < np.where(r1 | r2, 0.9, 0.25)
    return np.c_[r1, r2, f].astype(int)


def test_label_graph_orients_rare_causes_of_a_frequent_label():
    """Two rare labels that raise a frequent one: edges must point rare -> frequent.

    A frequency-biased orientation (every edge into the rarer label) gives
    f -> r1, f -> r2 plus an edge between r1 and r2 (they are dependent given
    f); the collider is identified by the data alone.
    """
    right = wrong = 0
    for seed in range(3):
        G = learn_label_graph(_collider(seed), random_state=seed) > 0
        right += int(G[0, 2]) + int(G[1, 2])
        wrong += int(G[2, 0]) + int(G[2, 1])
    assert right >= 5 and wrong <= 1


def test_label_graph_recovers_directions_both_ways_without_frequency_bias():
    """On planted edges in both directions, directed and skeleton scores apart."""
    _, y, info = make_longtail_multilabel(
        n_samples=5000,
        n_labels=12,
        max_frequency=0.4,
        parent_effect=3.0,
        return_structure=True,
        random_state=2,
    )
    truth = info.graph > 0
    assert (np.argwhere(truth)[:, 0] > np.argwhere(truth)[:, 1]).any()  # rare -> freq
    G = learn_label_graph(y, random_state=0) > 0
    skeleton = ((G | G.T) & truth).sum() / truth.sum()
    assert skeleton >= 0.5
    # Learned edges point both ways in frequency (index) order.
    parents, children = np.nonzero(G)
    toward_rare = np.mean(parents < children)
    assert 0.15 < toward_rare < 0.85


# --------------------------------------------------------------- thresholds


def test_f1_thresholds_maximise_f1_on_the_fold():
    rng = np.random.RandomState(0)
    y = (rng.rand(300, 4) < [0.3, 0.1, 0.03, 0.0]).astype(int)
    proba = np.clip(0.6 * y + 0.5 * rng.rand(300, 4), 0, 1)
    thresholds = f1_thresholds(y, proba)
    assert thresholds[3] == 0.5  # no positives: the default
    for label in range(3):
        got = f1_score(y[:, label], proba[:, label] > thresholds[label])
        candidates = np.unique(proba[:, label])
        best = max(
            f1_score(y[:, label], proba[:, label] >= t, zero_division=0)
            for t in candidates
            if (proba[:, label] >= t).sum() <= 2 * y[:, label].sum()
        )
        assert got == pytest.approx(best)


def test_f1_thresholds_ignore_a_positive_ranked_far_down():
    y = np.zeros((100, 1), dtype=int)
    y[60] = 1
    proba = np.linspace(0.9, 0.1, 100)[:, None]
    # F1-optimal over all cuts would predict 61 samples to catch one positive.
    assert f1_thresholds(y, proba)[0] == 0.5


def test_iterative_stratification_keeps_rare_labels_on_both_sides():
    rng = np.random.RandomState(0)
    y = (rng.rand(400, 12) < np.geomspace(0.3, 0.012, 12)).astype(int)
    counts = {"iterative": [], "none": []}
    for stratify in counts:
        for seed in range(10):
            train, valid = validation_split(
                y, 0.2, stratify=stratify, random_state=seed
            )
            assert len(np.intersect1d(train, valid)) == 0
            assert len(train) + len(valid) == len(y)
            share = y[valid].sum(0) / np.maximum(y.sum(0), 1)
            counts[stratify].append(np.abs(share - 0.2).mean())
    # Iterative stratification holds each label's share close to 20 %.
    assert np.mean(counts["iterative"]) < 0.5 * np.mean(counts["none"])


def test_threshold_auto_holds_out_a_fold_and_a_float_does_not():
    X, y = _data(n=400)
    auto = NBCGClassifier(**SMALL).fit(X, y)
    fixed = NBCGClassifier(**{**SMALL, "threshold": 0.3}).fit(X, y)
    assert_allclose(fixed.thresholds_, 0.3)
    assert_allclose(fixed.label_frequencies_, y.mean(0))  # trained on all rows
    assert not np.allclose(auto.label_frequencies_, y.mean(0))  # on 80 %
    assert not np.allclose(auto.thresholds_, 0.5)
    assert len(auto.validation_loss_curve_) == auto.n_iter_
    assert_array_equal(fixed.predict(X), fixed.predict_proba(X) > 0.3)


def test_threshold_auto_needs_enough_samples():
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="validation_fraction"):
        NBCGClassifier(**SMALL, validation_fraction=0.001).fit(X, y)


# ---------------------------------------------------------------- targets


def test_targets_as_dataframe_and_as_label_lists_name_the_classes():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=300)
    names = [f"tag{k}" for k in range(y.shape[1])]
    params = {**SMALL, "max_iter": 5}
    plain = NBCGClassifier(**params).fit(X, y)
    frame = NBCGClassifier(**params).fit(X, pd.DataFrame(y, columns=names))
    lists = [[names[k] for k in np.flatnonzero(row)] for row in y]
    listed = NBCGClassifier(**params).fit(X, lists)
    assert_array_equal(frame.classes_, names)
    assert_array_equal(listed.classes_, sorted(names))  # sorted, as the binarizer
    assert_array_equal(frame.predict(X), plain.predict(X))
    order = np.argsort(names)
    assert_array_equal(listed.predict(X), plain.predict(X)[:, order])
    # A rectangular 0/1 list of lists is an indicator matrix, not label lists.
    as_lists = NBCGClassifier(**params).fit(X, y.tolist())
    assert_array_equal(as_lists.classes_, np.arange(y.shape[1]))


def test_label_lists_of_mixed_types_raise_a_clear_error():
    X, _ = _data(n=4)
    with pytest.raises(ValueError, match="label lists"):
        NBCGClassifier(**SMALL).fit(X, [["a"], [1], ["a", 2], []])


def test_multioutput_contract_with_per_label_thresholds():
    """scikit-learn's multioutput check, less its 0.5-threshold assumption."""
    from scipy.stats import rankdata
    from sklearn.datasets import make_multilabel_classification

    X, y = make_multilabel_classification(
        random_state=42, n_samples=42, n_labels=5, n_classes=3
    )
    clf = NBCGClassifier(**SMALL).fit(X, y)
    pred, decision, proba = (
        clf.predict(X),
        clf.decision_function(X),
        clf.predict_proba(X),
    )
    assert pred.shape == decision.shape == proba.shape == (42, 3)
    assert pred.dtype.kind == "i"
    assert_array_equal(pred, (decision > 0).astype(int))
    assert_array_equal(pred, (proba > clf.thresholds_).astype(int))
    for i in range(3):
        assert_array_equal(rankdata(proba[:, i]), rankdata(decision[:, i]))
