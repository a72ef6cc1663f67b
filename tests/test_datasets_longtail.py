"""make_longtail_multilabel: Zipf marginals, planted DAG, breakable shortcut."""

import hashlib

import numpy as np
import pytest

from sklearn_ext.datasets import make_longtail_multilabel
from sklearn_ext.datasets._longtail_multilabel import _N_CALIBRATION


def _active(X, structure):
    """Read the 0/1 active-signature matrix back from a noise-free draw."""
    signatures = structure.signatures
    first = signatures.argmax(axis=1)  # first column of each disjoint block
    assert np.count_nonzero(signatures.sum(axis=0) > 0) == signatures.sum()
    return np.rint(X[:, first]).astype(np.int64)


def _is_topological(graph, order):
    """Whether ``order`` is a permutation along which every edge goes forward."""
    L = graph.shape[0]
    if not np.array_equal(np.sort(order), np.arange(L)):
        return False
    rank = np.empty(L, dtype=np.int64)
    rank[order] = np.arange(L)
    parent, child = graph.nonzero()
    return bool((rank[parent] < rank[child]).all())


def _is_acyclic(graph):
    """Kahn's algorithm, independent of the returned order."""
    graph = graph.astype(bool).copy()
    n_in = graph.sum(axis=0)
    ready = list(np.flatnonzero(n_in == 0))
    n_seen = 0
    while ready:
        k = ready.pop()
        n_seen += 1
        for child in np.flatnonzero(graph[k]):
            n_in[child] -= 1
            if n_in[child] == 0:
                ready.append(child)
    return n_seen == graph.shape[0]


def _shortcut_edges(s):
    """Tail labels, their partners, and whether the edge goes tail -> partner."""
    tail = np.flatnonzero(s.tail)
    h = s.shortcut_parent[tail]
    return tail, h, s.graph[tail, h] == 1


@pytest.mark.parametrize("n_test", [0, 7])
@pytest.mark.parametrize("return_structure", [False, True])
def test_shapes_dtypes_and_arity(n_test, return_structure):
    out = make_longtail_multilabel(
        n_samples=50,
        n_features=12,
        n_labels=6,
        n_informative=3,
        n_test=n_test,
        return_structure=return_structure,
        random_state=0,
    )
    assert len(out) == 2 + 2 * (n_test > 0) + return_structure
    X, Y = out[:2]
    assert X.shape == (50, 12) and X.dtype == np.float64
    assert Y.shape == (50, 6) and Y.dtype == np.int64
    assert set(np.unique(Y)) <= {0, 1}
    if n_test:
        X_test, Y_test = out[2:4]
        assert X_test.shape == (7, 12) and X_test.dtype == np.float64
        assert Y_test.shape == (7, 6) and Y_test.dtype == np.int64
    if return_structure:
        s = out[-1]
        assert s.graph.shape == (6, 6) and s.graph.dtype.kind == "i"
        assert set(np.unique(s.graph)) <= {0, 1}
        assert s.intercepts.shape == s.frequencies.shape == (6,)
        assert s.tail.dtype == s.head.dtype == bool
        assert s.shortcut_parent.shape == (6,) and s.shortcut_parent.dtype.kind == "i"
        assert s.signatures.shape == (6, 12)
        assert s.order.shape == (6,) and s.order.dtype.kind == "i"
        # 12 < 6 * 3: random columns, n_informative distinct ones per label.
        np.testing.assert_array_equal((s.signatures == 1.0).sum(axis=1), 3)
        assert ((s.signatures == 0) | (s.signatures == 1.0)).all()


def test_head_tail_and_zipf_targets():
    *_, s = make_longtail_multilabel(
        n_samples=1, n_labels=30, return_structure=True, random_state=0
    )
    np.testing.assert_allclose(s.frequencies, 0.3 * np.arange(1, 31) ** -1.2)
    np.testing.assert_array_equal(np.flatnonzero(s.head), np.arange(10))
    np.testing.assert_array_equal(np.flatnonzero(s.tail), np.arange(20, 30))
    # Round-off (0.1 * 30 = 3.0000000000000004) does not add a tail label.
    *_, s = make_longtail_multilabel(
        n_samples=1, n_labels=30, tail_fraction=0.1, return_structure=True
    )
    assert s.tail.sum() == 3


@pytest.mark.parametrize("edge_direction", ["random", "frequent_to_rare"])
def test_zipf_marginals_are_recovered(edge_direction):
    n = 200_000
    _, Y, s = make_longtail_multilabel(
        n_samples=n,
        n_features=1,
        n_labels=30,
        n_informative=1,
        edge_probability=0.3,
        edge_direction=edge_direction,
        return_structure=True,
        random_state=0,
    )
    # The test is only as strong as the share of labels with parents drawn
    # late in the order, which "random" makes rare -> frequent.
    if edge_direction == "random":
        parent, child = s.graph.nonzero()
        assert (parent > child).sum() >= 10
    p = s.frequencies
    # Sampling error of Y plus the calibration error of the intercepts.
    sd = np.sqrt(p * (1 - p) * (1 / n + 1 / _N_CALIBRATION))
    assert np.all(np.abs(Y.mean(axis=0) - p) < 4 * sd)


@pytest.mark.parametrize("edge_direction", ["random", "frequent_to_rare"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_parents", [1, 2, 3])
def test_graph_is_a_dag_with_shortcut_partners(seed, max_parents, edge_direction):
    *_, s = make_longtail_multilabel(
        n_samples=1,
        n_labels=40,
        edge_probability=0.3,
        max_parents=max_parents,
        edge_direction=edge_direction,
        return_structure=True,
        random_state=seed,
    )
    graph = s.graph
    assert not np.diag(graph).any()
    assert _is_acyclic(graph)
    assert _is_topological(graph, s.order)
    if edge_direction == "frequent_to_rare":
        np.testing.assert_array_equal(s.order, np.arange(40))
        parent, child = graph.nonzero()
        assert (parent < child).all()
    assert graph.sum(axis=0).max() <= max_parents
    tail, h, _ = _shortcut_edges(s)
    assert s.head[h].all()
    # Exactly one edge joins each tail label and its partner, kept by the cap.
    np.testing.assert_array_equal(graph[h, tail] + graph[tail, h], 1)
    np.testing.assert_array_equal(s.shortcut_parent[~s.tail], -1)


def test_random_edge_direction_plants_edges_both_ways():
    n_rare_to_frequent = n_edges = n_tail_to_partner = n_tail = 0
    for seed in range(5):
        *_, s = make_longtail_multilabel(
            n_samples=1, n_labels=30, return_structure=True, random_state=seed
        )
        parent, child = s.graph.nonzero()
        n_edges += len(parent)
        n_rare_to_frequent += (parent > child).sum()
        tail, _, tail_to_partner = _shortcut_edges(s)
        n_tail += len(tail)
        n_tail_to_partner += tail_to_partner.sum()
        # The order is not the frequency order.
        assert not np.array_equal(s.order, np.arange(30))
    # Both directions among all edges, and among the shortcut edges, whose
    # direction is a fair coin (the cap of 2 parents moves few heads).
    assert 0.25 * n_edges < n_rare_to_frequent < 0.75 * n_edges
    assert 0.25 * n_tail < n_tail_to_partner < 0.75 * n_tail
    # In the frequent_to_rare order, never.
    for seed in range(5):
        *_, s = make_longtail_multilabel(
            n_samples=1,
            n_labels=30,
            edge_direction="frequent_to_rare",
            return_structure=True,
            random_state=seed,
        )
        parent, child = s.graph.nonzero()
        assert (parent < child).all()
        assert not _shortcut_edges(s)[2].any()


def test_random_order_is_independent_of_frequency():
    # Mean rank of each label over many structures: uniform, hence (L - 1) / 2,
    # whatever the frequency. max_parents is large so no head label is moved.
    L, n_rep = 12, 400
    ranks = np.empty((n_rep, L))
    for seed in range(n_rep):
        *_, s = make_longtail_multilabel(
            n_samples=1,
            n_features=12,
            n_labels=L,
            n_informative=1,
            max_parents=L,
            return_structure=True,
            random_state=seed,
        )
        ranks[seed] = np.argsort(s.order)
    sd = np.sqrt((L**2 - 1) / 12 / n_rep)
    assert np.all(np.abs(ranks.mean(axis=0) - (L - 1) / 2) < 4 * sd)


def test_cap_keeps_shortcut_edges_into_head_labels():
    # One head label, the partner of both tail labels: with max_parents=1, at
    # most one of them may precede it, and the edge from that one is kept.
    n_slot = np.zeros(2, dtype=int)
    for seed in range(400):
        *_, s = make_longtail_multilabel(
            n_samples=1,
            n_features=3,
            n_labels=3,
            n_informative=1,
            tail_fraction=2 / 3,
            edge_probability=1.0,
            max_parents=1,
            return_structure=True,
            random_state=seed,
        )
        tail, h, tail_to_partner = _shortcut_edges(s)
        np.testing.assert_array_equal(tail, [1, 2])
        np.testing.assert_array_equal(h, 0)
        np.testing.assert_array_equal(s.graph[h, tail] + s.graph[tail, h], 1)
        assert _is_topological(s.graph, s.order)
        # A chain of the three labels: one parent each but for the first.
        np.testing.assert_array_equal(s.graph.sum(axis=0), np.arange(3) != s.order[0])
        n_slot[tail_to_partner.sum()] += 1  # tail labels before the head
    # Uniform given at most one tail label first: slot 0 or 1 with prob. 1/2.
    sd = np.sqrt(400 / 4)
    assert abs(n_slot[0] - 200) < 4 * sd


def test_edge_probability_zero_leaves_only_shortcut_edges():
    *_, s = make_longtail_multilabel(
        n_samples=1, edge_probability=0.0, return_structure=True, random_state=0
    )
    assert s.graph.sum() == s.tail.sum()
    # A label without parents has exactly the Zipf frequency.
    roots = s.graph.sum(axis=0) == 0
    np.testing.assert_allclose(
        1 / (1 + np.exp(-s.intercepts[roots])), s.frequencies[roots]
    )


def test_parents_raise_the_probability_of_their_children():
    _, Y, s = make_longtail_multilabel(
        n_samples=100_000,
        n_features=1,
        n_informative=1,
        return_structure=True,
        random_state=0,
    )
    lifts = []
    for t in np.flatnonzero(s.tail):
        with_parent = Y[:, s.shortcut_parent[t]] == 1
        lifts.append(Y[with_parent, t].mean() - Y[~with_parent, t].mean())
    lifts = np.array(lifts)
    assert lifts.mean() > 0.01
    assert (lifts > 0).all()


@pytest.mark.parametrize("shortcut_strength", [0.9, 0.5])
def test_shortcut_holds_in_training_and_breaks_in_the_test_split(shortcut_strength):
    n = 40_000
    X, Y, X_test, Y_test, s = make_longtail_multilabel(
        n_samples=n,
        n_features=30,
        n_labels=30,
        n_informative=1,
        noise=0.0,
        shortcut_strength=shortcut_strength,
        n_test=n,
        return_structure=True,
        random_state=0,
    )
    A, A_test = _active(X, s), _active(X_test, s)
    # The active signatures are the labels, plus head parents in training only.
    np.testing.assert_array_equal(A_test, Y_test)
    np.testing.assert_array_equal(A[:, ~s.head], Y[:, ~s.head])
    assert ((A == 1) | (Y == 0)).all()

    tail = np.flatnonzero(s.tail)
    h = s.shortcut_parent[tail]
    pos, pos_test = Y[:, tail] == 1, Y_test[:, tail] == 1
    # Pooled over the tail labels: rows with y_t = 1 that carry h's signature.
    both = (pos & (Y[:, h] == 1)).sum()
    only_t = (pos & (Y[:, h] == 0)).sum()
    carried = (pos & (A[:, h] == 1)).sum()
    expected = both + shortcut_strength * only_t
    sd = np.sqrt(only_t * shortcut_strength * (1 - shortcut_strength))
    assert abs(carried - expected) < 4 * sd + 1
    p_h_given_t = both / pos.sum()
    frac = carried / pos.sum()
    np.testing.assert_allclose(
        frac, p_h_given_t + (1 - p_h_given_t) * shortcut_strength, atol=0.03
    )
    frac_test = (pos_test & (A_test[:, h] == 1)).sum() / pos_test.sum()
    p_h_given_t_test = (pos_test & (Y_test[:, h] == 1)).sum() / pos_test.sum()
    assert frac_test == p_h_given_t_test
    assert frac - frac_test > 0.5 * shortcut_strength


def test_test_split_has_the_training_label_distribution():
    n = 100_000
    _, Y, _, Y_test = make_longtail_multilabel(
        n_samples=n,
        n_features=1,
        n_informative=1,
        shortcut_strength=1.0,
        n_test=n,
        random_state=0,
    )
    p, p_test = Y.mean(axis=0), Y_test.mean(axis=0)
    sd = np.sqrt(p * (1 - p) * 2 / n)
    assert np.all(np.abs(p - p_test) < 4 * sd + 1e-12)
    # Pairwise co-occurrence as well.
    Y, Y_test = Y.astype(float), Y_test.astype(float)
    np.testing.assert_allclose(Y.T @ Y / n, Y_test.T @ Y_test / n, atol=0.005)


# sha256 (first 16 hex digits) of Y, Y_test and graph as int64 bytes, computed
# with the generator of before the edge_direction parameter, whose edges all
# went from lower to higher index.
_FREQUENT_TO_RARE_DIGESTS = {
    ("default", 0): "1adc78c40b018414",
    ("default", 1): "ccafdafacaedd215",
    ("max_parents=1", 0): "0bda624e90d1f098",
    ("max_parents=1", 1): "39e643d0dae4c409",
}


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("seed", [0, 1])
def test_frequent_to_rare_reproduces_the_previous_generator(seed):
    _, Y, _, Y_test, s = make_longtail_multilabel(
        n_samples=300,
        n_features=30,
        n_labels=30,
        n_informative=1,
        edge_probability=0.3,
        edge_direction="frequent_to_rare",
        n_test=100,
        return_structure=True,
        random_state=seed,
    )
    assert _digest(Y, Y_test, s.graph) == _FREQUENT_TO_RARE_DIGESTS["default", seed]
    _, Y, s = make_longtail_multilabel(
        n_samples=300,
        n_features=20,
        n_labels=40,
        n_informative=1,
        edge_probability=0.3,
        max_parents=1,
        edge_direction="frequent_to_rare",
        return_structure=True,
        random_state=seed,
    )
    key = ("max_parents=1", seed)
    assert _digest(Y, s.graph) == _FREQUENT_TO_RARE_DIGESTS[key]


def test_edge_direction_keeps_the_shortcut_partners():
    # The partners are drawn before the order: the same for both directions.
    kwargs = {"n_samples": 1, "return_structure": True, "random_state": 0}
    *_, a = make_longtail_multilabel(**kwargs)
    *_, b = make_longtail_multilabel(edge_direction="frequent_to_rare", **kwargs)
    np.testing.assert_array_equal(a.shortcut_parent, b.shortcut_parent)


def test_reproducible_and_structure_independent_of_sample_sizes():
    kwargs = {"n_features": 20, "n_labels": 12, "random_state": 3}
    kwargs["return_structure"] = True
    a = make_longtail_multilabel(n_samples=300, **kwargs)
    b = make_longtail_multilabel(n_samples=300, **kwargs)
    c = make_longtail_multilabel(n_samples=300, n_test=50, **kwargs)
    d = make_longtail_multilabel(n_samples=80, n_test=500, **kwargs)
    e = make_longtail_multilabel(n_samples=80, n_test=50, **kwargs)
    for x, y in zip(a[:2], b[:2]):
        np.testing.assert_array_equal(x, y)
    # Same training sample whatever n_test.
    for x, y in zip(a[:2], c[:2]):
        np.testing.assert_array_equal(x, y)
    # Same test split whatever n_samples.
    for x, y in zip(c[2:4], e[2:4]):
        np.testing.assert_array_equal(x, y)
    # Same structure whatever n_samples and n_test.
    for other in (b, c, d, e):
        for key, value in a[-1].items():
            np.testing.assert_array_equal(other[-1][key], value)
    # Another seed gives another draw.
    f = make_longtail_multilabel(n_samples=300, n_features=20, n_labels=12)
    assert not np.array_equal(a[0], f[0])
    rng = np.random.RandomState(0)
    g = make_longtail_multilabel(n_samples=300, random_state=rng)
    h = make_longtail_multilabel(n_samples=300, random_state=rng)
    assert not np.array_equal(g[0], h[0])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_labels": 1}, "n_labels"),
        ({"n_features": 0}, "n_features"),
        ({"n_informative": 0}, "n_informative"),
        ({"n_features": 4, "n_informative": 5}, "n_informative"),
        ({"max_frequency": 0.0}, "max_frequency"),
        ({"max_frequency": 1.0}, "max_frequency"),
        ({"zipf_exponent": -0.5}, "zipf_exponent"),
        ({"zipf_exponent": 500.0}, "zipf_exponent"),
        ({"tail_fraction": 1.5}, "tail_fraction"),
        ({"tail_fraction": 0.8}, "tail_fraction"),
        ({"n_labels": 3, "tail_fraction": 0.7}, "tail_fraction"),
        ({"edge_probability": -0.1}, "edge_probability"),
        ({"shortcut_strength": 1.1}, "shortcut_strength"),
        ({"test_shortcut_strength": -0.1}, "test_shortcut_strength"),
        ({"max_parents": 0}, "max_parents"),
        ({"parent_effect": -1.0}, "parent_effect"),
        ({"n_test": -1}, "n_test"),
        ({"noise": -1.0}, "noise"),
        ({"signal": np.inf}, "signal"),
        ({"edge_direction": "rare_to_frequent"}, "edge_direction"),
        ({"edge_direction": None}, "edge_direction"),
    ],
)
def test_bad_inputs_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_longtail_multilabel(**kwargs)
