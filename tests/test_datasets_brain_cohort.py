"""Tests of the synthetic brain-network cohort generator (make_brain_cohort)."""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path
from sklearn.metrics import roc_auc_score

from sklearn_ext.datasets import load_mice_connectomes, make_brain_cohort
from sklearn_ext.utils._connectivity import matrices_to_vec, vec_to_matrices


def _split(cohort):
    """(matrices, node signals) of the rows of a cohort."""
    n = cohort.n_nodes
    n_edges = n * (n - 1) // 2
    matrices = vec_to_matrices(cohort.data[:, :n_edges], n, discard_diagonal=True)
    return matrices, cohort.data[:, n_edges:]


def _hops(template):
    return shortest_path((template > 0).astype(float), unweighted=True)


@pytest.fixture(scope="module")
def mice():
    return load_mice_connectomes()


def test_layout_shapes_and_template(mice):
    n, n_subjects, n_visits = 30, 12, 2
    cohort = make_brain_cohort(
        n_subjects, n_nodes=n, n_frames=6, n_visits=n_visits, random_state=1
    )
    n_rows = n_subjects * n_visits
    assert cohort.data.shape == (n_rows, n * (n - 1) // 2 + n * 6)
    assert cohort.data.dtype == np.float64 and np.isfinite(cohort.data).all()
    assert cohort.n_nodes == n and cohort.n_node_features == 6
    assert cohort.discard_diagonal is True
    assert cohort.target.dtype.kind == "i" and set(cohort.target) <= {0, 1}
    assert cohort.groups.dtype.kind == "i" and cohort.activations.dtype == bool
    assert cohort.activations.shape == (n_rows, 6, n)
    assert cohort.planted_edges.shape == (0, 2)
    assert isinstance(cohort.DESCR, str) and "make_brain_cohort" in cohort.DESCR

    # The template: symmetric, zero diagonal, maximum 1, on the strongest nodes
    # of the mean log1p mouse connectome, in atlas order.
    template = cohort.template
    assert template.shape == (n, n)
    np.testing.assert_array_equal(template, template.T)
    assert (np.diag(template) == 0).all() and template.max() == 1.0
    assert (template >= 0).all()
    full = np.log1p(mice.graphs).mean(axis=0)
    np.fill_diagonal(full, 0)
    strength = full.sum(axis=1)
    np.testing.assert_array_equal(cohort.nodes, np.sort(np.argsort(-strength)[:n]))
    np.testing.assert_array_equal(cohort.node_names, mice.node_names[cohort.nodes])
    sub = full[np.ix_(cohort.nodes, cohort.nodes)]
    support = template > 0
    np.testing.assert_allclose(template[support], sub[support] / sub[support].max())
    # Every node keeps at least its knn=8 strongest edges.
    assert (support.sum(axis=1) >= 8).all()

    # Rows: symmetric matrices on the template's support, then node signals.
    matrices, signals = _split(cohort)
    assert signals.shape == (n_rows, n * 6)
    np.testing.assert_array_equal(
        matrices_to_vec(matrices), cohort.data[:, : n * (n - 1) // 2]
    )
    assert (matrices[:, ~support] == 0).all()
    assert (matrices[:, support] > 0).all()
    # Log-normal noise around the template: log ratios of sd edge_noise=0.25.
    log_ratio = np.log(matrices[:, support] / template[support])
    assert abs(log_ratio.std() - 0.25) < 0.03 and abs(log_ratio.mean()) < 0.03


def test_deterministic_for_a_seed():
    a = make_brain_cohort(10, n_nodes=24, n_visits=2, random_state=3)
    b = make_brain_cohort(10, n_nodes=24, n_visits=2, random_state=3)
    c = make_brain_cohort(10, n_nodes=24, n_visits=2, random_state=4)
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]))
    assert not np.array_equal(a.data, c.data)
    # The template does not depend on the random state.
    np.testing.assert_array_equal(a.template, c.template)
    np.testing.assert_array_equal(a.nodes, c.nodes)
    # A RandomState instance is consumed, not reset.
    rng = np.random.RandomState(0)
    first = make_brain_cohort(4, n_nodes=24, random_state=rng)
    second = make_brain_cohort(4, n_nodes=24, random_state=rng)
    assert not np.array_equal(first.data, second.data)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_nodes_far_apart_at_defaults(seed):
    cohort = make_brain_cohort(4, random_state=seed)
    planted = cohort.planted_nodes
    assert planted.size == 3 and np.array_equal(planted, np.unique(planted))
    hops = _hops(cohort.template)
    pairwise = hops[np.ix_(planted, planted)][~np.eye(3, dtype=bool)]
    assert cohort.planted_min_hops == pairwise.min()
    # No two planted nodes share an edge or a neighbour (diameter 4).
    assert cohort.planted_min_hops >= 3
    assert hops.max() == 4


def test_coactivations_match_every_node_and_pair_but_not_the_group():
    n_visits, rounds = 2, 2
    cohort = make_brain_cohort(
        40, n_nodes=24, n_frames=16, n_rounds=rounds, n_visits=n_visits,
        n_planted=4, random_state=5,
    )  # fmt: skip
    act = cohort.activations
    planted = cohort.planted_nodes
    others = np.setdiff1d(np.arange(24), planted)
    assert not act[:, :, others].any()
    p = planted.size
    sub = act[:, :, planted].astype(int)  # (rows, frames, p)
    # Every planted node activates n_rounds * (p - 1) times per visit, every
    # pair co-activates n_rounds * (p - 2) times, in both classes.
    np.testing.assert_array_equal(sub.sum(axis=1), rounds * (p - 1))
    pairs = np.einsum("rfi,rfj->rij", sub, sub)
    off = ~np.eye(p, dtype=bool)
    np.testing.assert_array_equal(pairs[:, off], rounds * (p - 2))
    # Only patients have frames where all of them are active.
    joint = sub.all(axis=2).sum(axis=1)
    patients = cohort.target == 1
    assert 0 < patients.mean() < 1
    np.testing.assert_array_equal(joint[patients], rounds * (p - 2))
    np.testing.assert_array_equal(joint[~patients], 0)
    # Visits draw their own frames.
    frames = act.reshape(40, n_visits, 16, 24)
    assert not (frames[:, 0] == frames[:, 1]).all(axis=(1, 2)).all()


def test_activation_is_a_bump_of_effect_size_and_not_in_connectivity():
    """Same seed, effect_size 0 and 3: the draws are the same, only x moves."""
    kwargs = {"n_nodes": 24, "n_frames": 8, "n_visits": 2, "random_state": 7}
    null = make_brain_cohort(30, effect_size=0.0, **kwargs)
    cohort = make_brain_cohort(30, effect_size=3.0, **kwargs)
    n_edges = 24 * 23 // 2
    np.testing.assert_array_equal(cohort.data[:, :n_edges], null.data[:, :n_edges])
    np.testing.assert_array_equal(cohort.activations, null.activations)
    shift = (cohort.data[:, n_edges:] - null.data[:, n_edges:]).reshape(60, 24, 8)
    # Nothing moves in frames without an activation.
    quiet = ~cohort.activations.any(axis=2)  # (rows, frames)
    np.testing.assert_allclose(shift.transpose(0, 2, 1)[quiet], 0.0, atol=1e-12)
    # A lone active node moves by exactly effect_size (its bump's peak).
    lone = cohort.activations.sum(axis=2) == 1
    r, f = np.nonzero(lone)
    node = cohort.activations[r, f].argmax(axis=1)
    np.testing.assert_allclose(shift[r, node, f], 3.0, atol=1e-12)


def test_no_node_pair_or_correlation_separates_but_the_group_does():
    cohort = make_brain_cohort(400, n_nodes=24, random_state=2)
    _, x = _split(cohort)
    y = cohort.target
    n, f = 24, cohort.n_node_features
    x = x.reshape(-1, n, f)
    planted = cohort.planted_nodes
    # Node means and variances: about chance.
    for stat in (x.mean(axis=2), x.std(axis=2)):
        aucs = [roc_auc_score(y, stat[:, i]) for i in planted]
        assert max(abs(np.array(aucs) - 0.5)) < 0.1, aucs
    # Correlations between planted regions (functional connectivity): chance.
    z = x - x.mean(axis=2, keepdims=True)
    z /= np.linalg.norm(z, axis=2, keepdims=True)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        corr = (z[:, planted[i]] * z[:, planted[j]]).sum(axis=1)
        assert abs(roc_auc_score(y, corr) - 0.5) < 0.1
    # Their joint activation: the smallest of the three, per frame.
    joint = x[:, planted].min(axis=1).max(axis=1)
    assert roc_auc_score(y, joint) > 0.85


def test_pairwise_effect_on_planted_edges_only():
    kwargs = {
        "n_nodes": 24,
        "effect": "pairwise",
        "n_planted": 6,
        "n_visits": 2,
        "random_state": 11,
    }
    null = make_brain_cohort(60, effect_size=0.0, **kwargs)
    cohort = make_brain_cohort(60, effect_size=1.0, **kwargs)
    edges = cohort.planted_edges
    assert edges.shape == (3, 2) and edges.dtype.kind == "i"
    assert (edges[:, 0] < edges[:, 1]).all()
    assert (cohort.template[edges[:, 0], edges[:, 1]] > 0).all()
    np.testing.assert_array_equal(cohort.planted_nodes, np.unique(edges))
    assert cohort.planted_min_hops == 1
    assert not cohort.activations.any()
    m_null, x_null = _split(null)
    m, x = _split(cohort)
    patients = cohort.target == 1
    assert 0 < patients.mean() < 1
    ratio = np.ones_like(m)
    for i, j in edges:
        ratio[patients, i, j] = ratio[patients, j, i] = 2.0
    np.testing.assert_allclose(m, m_null * ratio)
    rows, cols = edges.T
    log_m = np.log(m[:, rows, cols])
    gap = log_m[patients].mean(axis=0) - log_m[~patients].mean(axis=0)
    np.testing.assert_allclose(gap, np.log(2.0), atol=0.15)


def test_none_has_no_activation():
    none = make_brain_cohort(50, n_nodes=24, effect="none", random_state=0)
    higher = make_brain_cohort(50, n_nodes=24, random_state=0)
    np.testing.assert_array_equal(none.planted_nodes, higher.planted_nodes)
    np.testing.assert_array_equal(none.target, higher.target)
    assert not none.activations.any() and none.planted_edges.shape == (0, 2)
    assert higher.activations.any()


def test_groups_and_visits():
    cohort = make_brain_cohort(5, n_nodes=20, n_visits=3)
    np.testing.assert_array_equal(cohort.groups, np.repeat(np.arange(5), 3))
    target = cohort.target.reshape(5, 3)
    assert (target == target[:, :1]).all()
    data = cohort.data.reshape(5, 3, -1)
    assert not np.isclose(data[:, 0], data[:, 1]).all(axis=1).any()
    one = make_brain_cohort(5, n_nodes=20, random_state=0)
    np.testing.assert_array_equal(one.groups, np.arange(5))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_subjects": 1}, "n_subjects"),
        ({"n_nodes": 9}, "n_nodes"),
        ({"n_nodes": 333}, "n_nodes"),
        ({"effect": "linear"}, "effect.*higher_order"),
        ({"n_planted": 2}, "n_planted"),
        ({"n_planted": 26}, "n_planted=26 must be at most n_nodes // 4 = 25"),
        ({"n_frames": 0}, "n_frames"),
        ({"n_frames": 5, "n_rounds": 2}, "n_frames=5 is too few.*8 frames"),
        ({"n_rounds": 0}, "n_rounds"),
        ({"effect_size": -0.5}, "effect_size"),
        ({"n_visits": 0}, "n_visits"),
        ({"edge_noise": -1.0}, "edge_noise"),
        ({"knn": 0}, "knn"),
        ({"n_nodes": 20, "knn": 20}, "knn=20 must be at"),
        ({"heat_time": 0.0}, "heat_time"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters(params, match):
    kwargs = {"n_subjects": 4, **params}
    with pytest.raises(ValueError, match=match):
        make_brain_cohort(**kwargs)
