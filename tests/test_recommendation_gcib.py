"""GCIBRecommender: propagation, mask, ranking, ablations, bad input."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from sklearn_ext.datasets import make_multibehavior
from sklearn_ext.recommendation import GCIBRecommender
from sklearn_ext.recommendation._gcib_nn import (
    BipartiteGraph,
    _EdgeBilinear,
    _WeightedSpMM,
    pair_lookup,
)
from sklearn_ext.recommendation._ranking import ranking_metrics, top_k_items


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


@pytest.fixture(scope="module")
def noisy():
    return make_multibehavior(800, 600, noise_rate=0.3, random_state=0)


@pytest.fixture(scope="module")
def fitted(noisy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return GCIBRecommender(behaviors=noisy.behaviors, random_state=0).fit(
            noisy.data
        )


def _random_graph(rng, n_users=7, n_items=5, density=0.5):
    A = (rng.random((n_users, n_items)) < density).astype(float)
    A[0] = 0.0  # a user without edges
    users, items = np.nonzero(A)
    graph = BipartiteGraph(
        torch.as_tensor(users), torch.as_tensor(items), n_users, n_items
    )
    return A, graph


# --- the sparse pieces against dense references -----------------------------


def test_propagation_is_lightgcn_on_the_dense_graph():
    rng = np.random.default_rng(0)
    A, graph = _random_graph(rng)
    E_u, E_i = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    du, di = A.sum(1), A.sum(0)
    norm = A / np.sqrt(np.outer(du, di) + 1e-8)
    users, items = [E_u], [E_i]
    u, i = E_u, E_i
    for _ in range(2):
        u, i = norm @ i, norm.T @ u
        users.append(u)
        items.append(i)
    values = graph.normalized_values(torch.ones(graph.n_edges, dtype=torch.float64))
    got_u, got_i = graph.propagate(
        values, torch.as_tensor(E_u), torch.as_tensor(E_i), 2
    )
    np.testing.assert_allclose(got_u.numpy(), np.mean(users, 0), rtol=1e-6)
    np.testing.assert_allclose(got_i.numpy(), np.mean(items, 0), rtol=1e-6)


@pytest.mark.parametrize("forward", [True, False])
def test_weighted_spmm_gradients(forward):
    rng = np.random.default_rng(1)
    _, graph = _random_graph(rng)
    values = torch.rand(graph.n_edges, dtype=torch.float64, requires_grad=True)
    rows = 5 if forward else 7
    dense = torch.randn(rows, 3, dtype=torch.float64, requires_grad=True)

    def fn(v, x):
        v = v if forward else v[graph.to_items_order]
        return _WeightedSpMM.apply(v, graph, forward, x)

    assert torch.autograd.gradcheck(fn, (values, dense))


def test_edge_bilinear_gradients_and_values():
    rng = np.random.default_rng(2)
    _, graph = _random_graph(rng)
    masks = [(torch.arange(graph.n_edges) % 2 == b).to(torch.float64) for b in range(2)]
    h_u = torch.randn(7, 4, dtype=torch.float64)
    h_i = torch.randn(5, 4, dtype=torch.float64)
    w = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    c = torch.randn(2, dtype=torch.float64, requires_grad=True)
    out = _EdgeBilinear.apply(w, c, graph, h_u, h_i, masks)
    b = torch.arange(graph.n_edges) % 2
    expected = (h_u[graph.users] * h_i[graph.items] * w[b]).sum(1) + c[b]
    torch.testing.assert_close(out, expected)
    assert torch.autograd.gradcheck(
        lambda w, c: _EdgeBilinear.apply(w, c, graph, h_u, h_i, masks), (w, c)
    )


def test_pair_lookup_finds_every_edge_and_only_those():
    users = torch.tensor([0, 0, 0, 1, 2, 2])
    items = torch.tensor([1, 1, 3, 0, 2, 4])  # (0, 1) in two behaviours
    keys = users * 5 + items
    pos, found = pair_lookup(
        keys, torch.tensor([0, 0, 1, 2, 2]), torch.tensor([1, 2, 0, 4, 0]), 5, 2
    )
    assert found.sum(1).tolist() == [2, 0, 1, 1, 0]
    assert (keys[pos][found] == torch.tensor([1, 1, 5, 14])).all()


def test_ranking_metrics_against_a_loop():
    rng = np.random.default_rng(3)
    U, V = rng.normal(size=(30, 4)), rng.normal(size=(12, 4))
    seen = sp.csr_matrix((rng.random((30, 12)) < 0.3).astype(float))
    test = np.zeros((30, 12))
    for u in range(30):
        if u % 4:
            free = np.flatnonzero(seen[u].toarray().ravel() == 0)
            test[u, rng.choice(free, size=1 + u % 2, replace=False)] = 1
    got = ranking_metrics(U, V, sp.csr_matrix(test), seen=seen, k=5, batch_size=7)
    hr, ndcg = [], []
    for u in range(30):
        rel = np.flatnonzero(test[u])
        if not rel.size:
            continue
        s = U[u] @ V.T
        s[seen[u].toarray().ravel() > 0] = -np.inf
        top = np.argsort(-s, kind="stable")[:5]
        gains = np.isin(top, rel) / np.log2(np.arange(2, 7))
        ideal = (1 / np.log2(np.arange(2, 7)))[: min(rel.size, 5)].sum()
        hr.append(np.isin(top, rel).any())
        ndcg.append(gains.sum() / ideal)
    assert got["n_users"] == len(hr)
    assert got["hr"] == pytest.approx(np.mean(hr))
    assert got["ndcg"] == pytest.approx(np.mean(ndcg))


def test_top_k_orders_best_first_and_excluded_last():
    scores = np.array([[0.1, 0.9, -np.inf, 0.5], [1.0, 1.0, 0.0, 2.0]])
    np.testing.assert_array_equal(top_k_items(scores, 3), [[1, 3, 0], [3, 0, 1]])
    assert top_k_items(scores, 10).shape == (2, 4)


# --- the method's behaviour ----------------------------------------------------


def test_mask_separates_flagged_noise(noisy, fitted):
    keep = fitted.edge_keep_prob_.tocoo()
    flags = np.asarray(noisy.noise.tocsr()[keep.row, keep.col]).ravel()
    n = noisy.n_items
    # Every auxiliary interaction has a keep probability, the target none.
    assert keep.nnz == noisy.data[:, : 2 * n].nnz
    assert (keep.col < 2 * n).all()
    assert roc_auc_score(flags == 0, keep.data) > 0.7


def test_auxiliary_behaviours_matter(noisy, fitted):
    """Ablation: the target-graph-only model ranks the held-out buys worse."""
    ours = fitted.score(noisy.test)
    target_only = GCIBRecommender(
        behaviors=noisy.behaviors, auxiliary="none", random_state=0
    ).fit(noisy.data)
    assert ours > 1.3 * target_only.score(noisy.test)
    # Its users are their purchase rows alone.
    np.testing.assert_array_equal(
        target_only.user_embeddings_, noisy.data[:, -noisy.n_items :].toarray()
    )
    assert (target_only.edge_keep_prob_.data == 0.0).all()


def test_keep_all_ablation_keeps_every_edge(noisy):
    model = GCIBRecommender(
        8, behaviors=noisy.behaviors, auxiliary="all", max_iter=2, random_state=0
    ).fit(noisy.data)
    assert model.edge_keep_prob_.nnz == noisy.data[:, : 2 * noisy.n_items].nnz
    assert (model.edge_keep_prob_.data == 1.0).all()


def test_recommend_is_top_n_of_scores_without_seen(noisy, fitted):
    users = np.arange(40)
    ids, scores = fitted.recommend(users, N=10)
    assert ids.shape == scores.shape == (40, 10)
    expected = fitted.predict_scores(users)
    seen = fitted.seen_[users].toarray() > 0
    expected[seen] = -np.inf
    np.testing.assert_allclose(scores, -np.sort(-expected, axis=1)[:, :10])
    np.testing.assert_allclose(np.take_along_axis(expected, ids, 1), scores)
    assert not seen[users[:, None], ids].any()
    # One user id: 1-D arrays, the same list.
    one_ids, one_scores = fitted.recommend(7, N=10)
    assert one_ids.shape == one_scores.shape == (10,)
    np.testing.assert_array_equal(one_ids, ids[7])
    _, with_seen = fitted.recommend(users, filter_already_liked_items=False)
    assert (with_seen[:, 0] >= scores[:, 0]).all()


def test_filtering_any_behaviour_and_given_items(noisy, fitted):
    users = np.arange(60)
    n = noisy.n_items
    X = noisy.data[users].toarray()
    touched = (X[:, :n] + X[:, n : 2 * n] + X[:, 2 * n :]) > 0
    ids, _ = fitted.recommend(users)
    # The default filters the purchases only: viewed items stay candidates.
    assert touched[users[:, None], ids].any()
    ids, _ = fitted.recommend(users, filter_behaviors="all")
    assert not touched[users[:, None], ids].any()
    # The same from the rows given as user_items.
    ids2, _ = fitted.recommend(users, noisy.data[users], filter_behaviors="all")
    np.testing.assert_array_equal(ids, ids2)
    banned = fitted.recommend(users)[0][:, :3].ravel()
    ids, _ = fitted.recommend(users, filter_items=banned)
    assert not np.isin(ids, banned).any()
    # Fewer candidates than N: the list ends with -1 and -inf.
    ids, scores = fitted.recommend(0, N=n, filter_behaviors="all")
    short = int(touched[0].sum())
    assert (ids[n - short :] == -1).all() and np.isneginf(scores[n - short :]).all()
    assert (ids[: n - short] >= 0).all()


def test_recalculate_user_reproduces_the_fitted_scores(noisy, fitted):
    """``recalculate_user=True`` on a training user's own row (all behaviours)
    gives that user's fitted scores: the fitted representation of a training
    user is computed by the same fold-in of the row (one normalised hop from
    the fitted item embeddings for the mask, then the denoised row)."""
    users = np.array([0, 3, 11, 200])
    rows = noisy.data[users]
    ids, scores = fitted.recommend(users, rows, recalculate_user=True)
    ids_fit, scores_fit = fitted.recommend(users)
    np.testing.assert_allclose(scores, scores_fit, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ids, ids_fit)
    np.testing.assert_allclose(
        fitted.transform(rows) @ fitted.item_embeddings_.T,
        fitted.predict_scores(users),
        rtol=1e-9,
        atol=1e-9,
    )


def test_recalculated_new_user_matches_a_refit():
    """A user left out of the fit, scored from their row without refitting,
    against the same user's fitted scores after a refit that includes them:
    the Pearson correlation of the two score vectors over all items."""
    data = make_multibehavior(300, 150, noise_rate=0.3, random_state=3)
    kw = {"n_components": 16, "max_iter": 15, "random_state": 0}
    new = np.arange(290, 300)
    without = GCIBRecommender(behaviors=data.behaviors, **kw).fit(data.data[:290])
    full = GCIBRecommender(behaviors=data.behaviors, **kw).fit(data.data)
    _, recalc = without.recommend(
        np.arange(10),
        data.data[new],
        N=150,
        filter_already_liked_items=False,
        recalculate_user=True,
    )
    refit = full.predict_scores(new)
    fresh = without.transform(data.data[new]) @ without.item_embeddings_.T
    for k in range(10):
        assert np.corrcoef(fresh[k], refit[k])[0, 1] > 0.9
    # recommend's scores are those, sorted.
    np.testing.assert_allclose(recalc, -np.sort(-fresh, axis=1))


def test_similar_items(fitted):
    ids, scores = fitted.similar_items(5, N=6)
    assert ids.shape == scores.shape == (6,)
    assert ids[0] == 5 and scores[0] == pytest.approx(1.0)
    assert (np.diff(scores) <= 1e-12).all()
    many, _ = fitted.similar_items([5, 9], N=6)
    np.testing.assert_array_equal(many[0], ids)
    E = fitted.item_embeddings_
    cos = E[9] @ E[many[1, 1]] / np.linalg.norm(E[9]) / np.linalg.norm(E[many[1, 1]])
    assert cos == pytest.approx(_[1, 1])
    ids, _ = fitted.similar_items(5, N=6, filter_items=[5])
    assert 5 not in ids


def test_score_in_grid_search_is_held_out_ndcg():
    """GridSearchCV splits users; score holds one purchase of each test-fold
    user out, folds the user in from the rest and ranks the held-out item."""
    from sklearn.model_selection import GridSearchCV, KFold

    data = make_multibehavior(300, 150, noise_rate=0.3, random_state=4)
    search = GridSearchCV(
        GCIBRecommender(behaviors=data.behaviors, n_components=8, max_iter=3),
        {"l2_reg": [10.0, 1e7]},
        cv=KFold(2, shuffle=True, random_state=0),
    ).fit(data.data)
    scores = search.cv_results_["mean_test_score"]
    # Far above chance (about 10 / 150 items for HR@10; NDCG less), and the
    # grid's two points differ.
    assert scores.max() > 0.1 and scores[0] != scores[1]
    model = search.best_estimator_
    assert model.score(data.data[:100]) == model.score(data.data[:100])
    # The same number by hand: one purchase out per row, recalculated user.
    rows = sp.csr_matrix(data.data[:50], copy=True)
    n = data.n_items
    rng = np.random.RandomState(0)
    target = rows[:, 2 * n :].tocsr()
    counts = np.diff(target.indptr)
    pick = target.indptr[:-1] + (rng.uniform(size=50) * counts).astype(int)
    held_items = target.indices[pick]
    held = sp.csr_matrix((np.ones(50), (np.arange(50), held_items)), shape=(50, n))
    rest = rows.tolil()
    rest[np.arange(50), 2 * n + held_items] = 0
    rest = sp.csr_matrix(rest)
    Z = model.transform(rest)
    expected = ranking_metrics(
        Z, model.item_embeddings_, held, seen=rest[:, 2 * n :], k=10
    )["ndcg"]
    assert model.score(data.data[:50]) == pytest.approx(expected)


def test_bottleneck_matters_on_planted_noise():
    """Ablation: with 60% planted noise in views and carts, the learned mask
    (GCIB) ranks the held-out purchases better than the same scorer over every
    auxiliary edge kept, and keeps genuine edges more than flagged ones."""
    data = make_multibehavior(400, 200, noise_rate=0.6, random_state=5)
    kw = {"behaviors": data.behaviors, "n_components": 16, "max_iter": 20}
    ours = GCIBRecommender(random_state=0, **kw).fit(data.data)
    every = GCIBRecommender(auxiliary="all", random_state=0, **kw).fit(data.data)
    assert ours.score(data.test) > 1.1 * every.score(data.test)
    keep = ours.edge_keep_prob_.tocoo()
    flags = np.asarray(data.noise.tocsr()[keep.row, keep.col]).ravel()
    # Above chance on ~50k edges after 20 epochs (0.61 when written); the
    # default-length fit of test_mask_separates_flagged_noise reaches 0.7.
    assert roc_auc_score(flags == 0, keep.data) > 0.57


def test_sparse_and_dense_input_fit_alike():
    data = make_multibehavior(120, 60, random_state=1)
    kw = {"n_components": 8, "behaviors": 3, "max_iter": 3, "random_state": 0}
    a = GCIBRecommender(**kw).fit(data.data)
    b = GCIBRecommender(**kw).fit(data.data.toarray())
    np.testing.assert_allclose(a.user_embeddings_, b.user_embeddings_, rtol=1e-6)
    assert a.behaviors_ == ["behavior_0", "behavior_1", "behavior_2"]


def test_target_by_name_and_position():
    data = make_multibehavior(100, 50, random_state=2)
    kw = {"n_components": 8, "max_iter": 2, "random_state": 0}
    a = GCIBRecommender(behaviors=data.behaviors, target="buy", **kw).fit(data.data)
    b = GCIBRecommender(behaviors=3, target=-1, **kw).fit(data.data)
    np.testing.assert_array_equal(a.seen_.toarray(), b.seen_.toarray())
    c = GCIBRecommender(behaviors=data.behaviors, target="view", **kw).fit(data.data)
    assert c.target_index_ == 0 and c.seen_.nnz == data.data[:, :50].nnz


def test_pickle_keeps_scores(fitted):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(
        again.predict_scores([0, 5]), fitted.predict_scores([0, 5])
    )


# --- bad input -------------------------------------------------------------------


def test_negative_entries_are_refused():
    X = np.ones((5, 6))
    X[1, 2] = -1
    with pytest.raises(ValueError, match="Negative values"):
        GCIBRecommender(behaviors=2).fit(X)


@pytest.mark.parametrize(
    "behaviors, target, message",
    [
        (4, None, "do not tile the 6 columns"),
        (["a", "a"], None, "duplicate"),
        (["a", "b"], "c", "not among the behaviors"),
        (2, 5, "out of range"),
        ([1, 2], None, "sequence of names"),
    ],
)
def test_bad_behaviors(behaviors, target, message):
    with pytest.raises(ValueError, match=message):
        GCIBRecommender(behaviors=behaviors, target=target).fit(np.ones((5, 6)))


def test_no_target_interaction_is_an_error():
    X = np.zeros((5, 6))
    X[:, :3] = 1.0
    with pytest.raises(ValueError, match="no interaction in its target block"):
        GCIBRecommender(behaviors=2).fit(X)


def test_bad_input_at_recommend(noisy, fitted):
    with pytest.raises(ValueError, match="not rows of the training matrix"):
        fitted.recommend([0, 10_000])
    with pytest.raises(ValueError, match="not rows of the training matrix"):
        fitted.recommend(-1)
    with pytest.raises(ValueError, match="userid must be an integer"):
        fitted.recommend([0.5])
    with pytest.raises(ValueError, match="N must be a positive integer"):
        fitted.recommend([0], N=0)
    row = noisy.data[[0]].toarray()
    with pytest.raises(ValueError, match="user_items"):
        fitted.recommend(0, recalculate_user=True)
    with pytest.raises(ValueError, match="expecting 1800 features"):
        fitted.recommend(0, row[:, :600], recalculate_user=True)
    with pytest.raises(ValueError, match="2 user ids"):
        fitted.recommend([0, 1], row, recalculate_user=True)
    bad = row.copy()
    bad[0, 3] = -1.0
    with pytest.raises(ValueError, match="Negative values"):
        fitted.recommend(0, bad, recalculate_user=True)
    assert row.min() == 0.0 and bad[0, 3] == -1.0  # inputs untouched
    with pytest.raises(ValueError, match="filter_items must be item indices"):
        fitted.recommend(0, filter_items=[600])
    with pytest.raises(ValueError, match="filter_behaviors"):
        fitted.recommend(0, filter_behaviors="views")
    with pytest.raises(ValueError, match="out of range"):
        fitted.similar_items(600)


def test_user_without_interactions_gets_popular_items():
    rng = np.random.default_rng(0)
    X = (rng.random((30, 12)) < 0.4).astype(float)
    X[3] = 0.0
    model = GCIBRecommender(8, behaviors=2, max_iter=2, random_state=0).fit(X)
    with pytest.warns(UserWarning, match=r"users \[3\] have no interaction"):
        recs, _ = model.recommend([3, 4], N=3)
    popularity = X[:, 6:].sum(0)
    # The three most popular target items (ties at the boundary either way).
    assert popularity[recs[0]].min() >= np.sort(popularity)[-3]
    assert (np.diff(popularity[recs[0]]) <= 0).all()


def test_score_bad_input(fitted, noisy):
    with pytest.raises(ValueError, match="training users"):
        fitted.score(noisy.test[:10])
    with pytest.raises(ValueError, match="X has 7 features"):
        fitted.score(sp.csr_matrix((noisy.test.shape[0], 7)))
    bad = noisy.test.toarray()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fitted.score(bad)
    bad[0, 0] = -1.0
    with pytest.raises(ValueError, match="Negative values"):
        fitted.score(bad)
    with pytest.raises(ValueError, match="no target interaction"):
        fitted.score(sp.csr_matrix((3, noisy.data.shape[1])))
