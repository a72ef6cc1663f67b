"""make_longtail_multilabel: Zipf marginals, planted DAG, breakable shortcut."""

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


def test_zipf_marginals_are_recovered():
    n = 200_000
    _, Y, s = make_longtail_multilabel(
        n_samples=n,
        n_features=1,
        n_labels=30,
        n_informative=1,
        edge_probability=0.3,
        return_structure=True,
        random_state=0,
    )
    p = s.frequencies
    # Sampling error of Y plus the calibration error of the intercepts.
    sd = np.sqrt(p * (1 - p) * (1 / n + 1 / _N_CALIBRATION))
    assert np.all(np.abs(Y.mean(axis=0) - p) < 4 * sd)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_parents", [1, 2, 3])
def test_graph_is_a_dag_with_head_parents(seed, max_parents):
    *_, s = make_longtail_multilabel(
        n_samples=1,
        n_labels=40,
        edge_probability=0.3,
        max_parents=max_parents,
        return_structure=True,
        random_state=seed,
    )
    graph = s.graph
    parent, child = graph.nonzero()
    assert (parent < child).all()
    assert graph.sum(axis=0).max() <= max_parents
    tail = np.flatnonzero(s.tail)
    h = s.shortcut_parent[tail]
    assert s.head[h].all()
    np.testing.assert_array_equal(graph[h, tail], 1)
    np.testing.assert_array_equal(s.shortcut_parent[~s.tail], -1)


def test_edge_probability_zero_leaves_only_head_parents():
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
    ],
)
def test_bad_inputs_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_longtail_multilabel(**kwargs)
