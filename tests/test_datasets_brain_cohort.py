"""Tests of the synthetic brain-network cohort generator (make_brain_cohort)."""

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp
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


@pytest.fixture(scope="module")
def large_cohort():
    """Many subjects on a small template, for the statistical checks."""
    return make_brain_cohort(600, n_nodes=24, effect_size=1.0, random_state=0)


def test_layout_shapes_and_template(mice):
    n, n_subjects, n_visits = 30, 12, 2
    cohort = make_brain_cohort(
        n_subjects, n_nodes=n, n_planted=4, k=2, n_visits=n_visits, random_state=1
    )
    n_rows = n_subjects * n_visits
    assert cohort.data.shape == (n_rows, n * (n - 1) // 2 + n)
    assert cohort.data.dtype == np.float64 and np.isfinite(cohort.data).all()
    assert cohort.n_nodes == n and cohort.n_node_features == 1
    assert cohort.discard_diagonal is True
    assert cohort.target.dtype.kind == "i" and set(cohort.target) <= {0, 1}
    assert cohort.groups.dtype.kind == "i" and cohort.affected.dtype == bool
    assert cohort.affected.shape == (n_rows, n)
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
    assert signals.shape == (n_rows, n)
    np.testing.assert_array_equal(matrices_to_vec(matrices), cohort.data[:, :-n])
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
    assert planted.size == 6 and np.array_equal(planted, np.unique(planted))
    hops = _hops(cohort.template)
    pairwise = hops[np.ix_(planted, planted)][~np.eye(6, dtype=bool)]
    assert cohort.planted_min_hops == pairwise.min()
    # 2 is the best possible here (see the next test); the support's diameter
    # is 4, so two hops apart already means no common neighbour.
    assert cohort.planted_min_hops >= 2
    assert hops.max() == 4


def test_defaults_admit_no_six_nodes_three_hops_apart():
    """Why planted_min_hops is 2, not 3, at the defaults: a property of the graph.

    The largest set of nodes pairwise at least 3 hops apart on the default
    support (n_nodes=100, knn=8) has 4 nodes, fewer than n_planted=6; on the
    sparser support of knn=3 the farthest-point draw reaches 3 hops.
    """
    template = make_brain_cohort(2, random_state=0).template
    hops = _hops(template)
    n = hops.shape[0]
    i, j = np.nonzero(np.triu(hops < 3, k=1))
    conflicts = np.zeros((i.size, n))
    conflicts[np.arange(i.size), i] = conflicts[np.arange(i.size), j] = 1
    res = milp(
        -np.ones(n),
        constraints=LinearConstraint(conflicts, 0, 1),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
    )
    assert res.success and round(-res.fun) == 4
    sparse = make_brain_cohort(4, knn=3, random_state=0)
    assert sparse.planted_min_hops >= 3


def test_k_of_n_rule():
    n_planted, k, n_visits = 6, 3, 3
    cohort = make_brain_cohort(
        120, n_nodes=24, n_planted=n_planted, k=k, n_visits=n_visits, random_state=5
    )
    planted = np.zeros(24, dtype=bool)
    planted[cohort.planted_nodes] = True
    # Affected nodes are planted nodes.
    assert not cohort.affected[:, ~planted].any()
    counts = cohort.affected.sum(axis=1)
    patients = cohort.target == 1
    assert 0 < patients.mean() < 1
    assert (counts[patients] >= k).all() and (counts[~patients] < k).all()
    # The whole range of counts occurs in each class.
    assert set(counts[patients]) == set(range(k, n_planted + 1))
    assert set(counts[~patients]) == set(range(k))
    # Label and affected set are shared by a subject's visits.
    affected = cohort.affected.reshape(120, n_visits, 24)
    assert (affected == affected[:, :1]).all()
    # Every planted node is affected in some controls and unaffected in some
    # patients: none decides the label alone.
    for node in cohort.planted_nodes:
        assert cohort.affected[~patients, node].any()
        assert not cohort.affected[patients, node].all()


def test_shift_is_exactly_on_affected_nodes_and_not_in_connectivity():
    """Same seed, effect_size 0 and 1.5: the draws are the same, only x moves."""
    kwargs = {"n_nodes": 24, "n_visits": 2, "random_state": 7}
    null = make_brain_cohort(30, effect_size=0.0, **kwargs)
    shifted = make_brain_cohort(30, effect_size=1.5, **kwargs)
    n = 24
    np.testing.assert_array_equal(null.target, shifted.target)
    np.testing.assert_array_equal(null.affected, shifted.affected)
    np.testing.assert_array_equal(null.data[:, :-n], shifted.data[:, :-n])
    np.testing.assert_allclose(
        shifted.data[:, -n:], null.data[:, -n:] - 1.5 * shifted.affected, atol=1e-12
    )


def test_planted_shift_size_and_unit_variance(large_cohort):
    cohort = large_cohort
    _, x = _split(cohort)
    planted = cohort.planted_nodes
    patients = cohort.target == 1
    # Expected count of affected nodes: (3 + 4 + 5 + 6) / 4 in patients and
    # (0 + 1 + 2) / 3 in controls, out of 6.
    expected = (4.5 - 1.0) / 6
    mean_planted = x[:, planted].mean(axis=1)
    diff = mean_planted[~patients].mean() - mean_planted[patients].mean()
    assert abs(diff - expected) < 0.12
    # Nodes outside S carry no shift; before the shift every node has unit
    # variance and mean zero in both classes.
    others = np.setdiff1d(np.arange(cohort.n_nodes), planted)
    assert abs(x[patients][:, others].mean() - x[~patients][:, others].mean()) < 0.1
    unshifted = x + cohort.affected
    assert abs(unshifted.std(axis=0) - 1).max() < 0.15
    assert abs(unshifted[:, planted].mean(axis=0)).max() < 0.15


def test_single_node_separates_imperfectly_but_the_rule_does():
    cohort = make_brain_cohort(400, n_nodes=24, effect_size=6.0, random_state=2)
    _, x = _split(cohort)
    y = cohort.target
    planted = cohort.planted_nodes
    # A node is affected in 3/4 of patients and 1/6 of controls: AUC about
    # 0.5 + (3/4 - 1/6) / 2 = 0.79, however large the shift.
    aucs = [roc_auc_score(y, -x[:, i]) for i in planted]
    assert 0.65 < min(aucs) and max(aucs) < 0.9
    # The k-of-n rule on the same features recovers the label.
    rule = (x[:, planted] < -3.0).sum(axis=1) >= 3
    assert (rule == y).mean() > 0.95
    # No edge carries the label.
    matrices, _ = _split(cohort)
    support = cohort.template > 0
    edges_auc = [
        roc_auc_score(y, matrices[:, i, j]) for i, j in zip(*np.nonzero(support))
    ]
    assert max(abs(np.array(edges_auc) - 0.5)) < 0.15


def test_pairwise_effect_on_planted_edges_only():
    kwargs = {"n_nodes": 24, "effect": "pairwise", "n_visits": 2, "random_state": 11}
    null = make_brain_cohort(60, effect_size=0.0, **kwargs)
    cohort = make_brain_cohort(60, effect_size=1.0, **kwargs)
    edges = cohort.planted_edges
    assert edges.shape == (3, 2) and edges.dtype.kind == "i"
    assert (edges[:, 0] < edges[:, 1]).all()
    assert (cohort.template[edges[:, 0], edges[:, 1]] > 0).all()
    np.testing.assert_array_equal(cohort.planted_nodes, np.unique(edges))
    assert cohort.planted_min_hops == 1
    assert not cohort.affected.any()

    m_null, _ = _split(null)
    m, _ = _split(cohort)
    patients = cohort.target == 1
    assert 0 < patients.mean() < 1
    rows, cols = edges.T
    ratio = np.ones_like(m)
    for i, j in edges:
        ratio[patients, i, j] = ratio[patients, j, i] = 2.0
    np.testing.assert_allclose(m, m_null * ratio)
    # Seen statistically: planted edges are about twice as strong in patients,
    # other edges are not.
    log_m = np.log(m[:, rows, cols])
    gap = log_m[patients].mean(axis=0) - log_m[~patients].mean(axis=0)
    np.testing.assert_allclose(gap, np.log(2.0), atol=0.15)


def test_none_has_no_planted_shift(large_cohort):
    none = make_brain_cohort(600, n_nodes=24, effect="none", random_state=0)
    higher = large_cohort
    # The same planted nodes and labels as the higher-order cohort of the seed.
    np.testing.assert_array_equal(none.planted_nodes, higher.planted_nodes)
    np.testing.assert_array_equal(none.target, higher.target)
    assert not none.affected.any() and none.planted_edges.shape == (0, 2)
    _, x = _split(none)
    mean_planted = x[:, none.planted_nodes].mean(axis=1)
    patients = none.target == 1
    assert abs(mean_planted[patients].mean() - mean_planted[~patients].mean()) < 0.15


def test_groups_and_visits():
    cohort = make_brain_cohort(5, n_nodes=20, n_planted=4, k=2, n_visits=3)
    np.testing.assert_array_equal(cohort.groups, np.repeat(np.arange(5), 3))
    target = cohort.target.reshape(5, 3)
    assert (target == target[:, :1]).all()
    # Each visit draws fresh noise.
    data = cohort.data.reshape(5, 3, -1)
    assert not np.isclose(data[:, 0], data[:, 1]).all(axis=1).any()
    one = make_brain_cohort(5, n_nodes=20, n_planted=4, k=2, random_state=0)
    np.testing.assert_array_equal(one.groups, np.arange(5))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_subjects": 1}, "n_subjects"),
        ({"n_nodes": 9}, "n_nodes"),
        ({"n_nodes": 333}, "n_nodes"),
        ({"effect": "linear"}, "effect.*higher_order"),
        ({"n_planted": 1}, "n_planted"),
        ({"n_planted": 26}, "n_planted=26 must be at most n_nodes // 4 = 25"),
        ({"k": 1}, "'k'"),
        ({"k": 7}, "k=7 must be at most n_planted=6"),
        ({"effect_size": -0.5}, "effect_size"),
        ({"n_visits": 0}, "n_visits"),
        ({"edge_noise": -1.0}, "edge_noise"),
        ({"knn": 0}, "knn"),
        ({"n_nodes": 20, "n_planted": 4, "k": 2, "knn": 20}, "knn=20 must be at"),
        ({"heat_time": 0.0}, "heat_time"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters(params, match):
    kwargs = {"n_subjects": 4, **params}
    with pytest.raises(ValueError, match=match):
        make_brain_cohort(**kwargs)
