"""MultiTaskGuarantee: per-task bounds, the order-statistics band, the theorem."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, binomtest, ksone, multinomial
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_param_validation

from sklearn_ext.rl import BridgeTaskFamily, MultiTaskGuarantee, plot_guarantee
from sklearn_ext.rl._bounds import task_lower_bounds
from sklearn_ext.rl._order_statistics import (
    band_coverage,
    compose,
    equal_level_band,
)
from sklearn_ext.utils._sklearn_compat import InvalidParameterError

BOUNDS = ["clopper-pearson", "hoeffding", "empirical-bernstein", "dkw"]


def _bernoulli_rows(m):
    """Every outcome of m success/failure episodes: row k has k successes."""
    k = np.arange(m + 1)
    return (np.arange(m)[None, :] < k[:, None]).astype(float), k


# --- per-task bounds against exact references --------------------------------


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 60),
    data=st.data(),
    delta=st.floats(1e-5, 0.4),
)
def test_clopper_pearson_is_scipys_exact_one_sided_bound(m, data, delta):
    k = data.draw(st.integers(0, m))
    row = (np.arange(m) < k).astype(float)[None, :]
    got = task_lower_bounds(
        row, bound="clopper-pearson", delta=delta, return_range=(0, 1)
    )[0]
    ref = binomtest(k, m, alternative="greater").proportion_ci(1 - delta).low
    assert got == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("bound", BOUNDS)
@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(2, 40),
    # scipy's binomial pmf overflows for p near the smallest float.
    p=st.one_of(st.just(0.0), st.floats(1e-9, 1.0)),
    delta=st.floats(1e-3, 0.3),
)
def test_bound_fails_at_most_delta_on_bernoulli_returns(bound, m, p, delta):
    """Exact miscoverage over all binomial outcomes (scipy's pmf) is <= delta."""
    rows, k = _bernoulli_rows(m)
    lcb = task_lower_bounds(rows, bound=bound, delta=delta, return_range=(0, 1))
    miscoverage = binom.pmf(k, m, p)[lcb > p].sum()
    assert miscoverage <= delta + 1e-12
    assert np.all(np.diff(lcb) >= -1e-12)  # more successes, higher bound


@pytest.mark.parametrize("bound", ["hoeffding", "empirical-bernstein", "dkw"])
@settings(max_examples=15, deadline=None)
@given(
    m=st.integers(2, 12),
    w=st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3),
    delta=st.floats(0.01, 0.3),
)
def test_bound_fails_at_most_delta_on_three_point_returns(bound, m, w, delta):
    """Returns in {0, 1/2, 1}: exact miscoverage through scipy's multinomial."""
    w = np.asarray(w) + 1e-3
    probs = w / w.sum()
    mean = probs @ [0.0, 0.5, 1.0]
    counts = np.array(
        [(a, b, m - a - b) for a in range(m + 1) for b in range(m + 1 - a)]
    )
    rows = np.array(
        [np.repeat([0.0, 0.5, 1.0], c) for c in counts]
    )  # one row per outcome
    lcb = task_lower_bounds(rows, bound=bound, delta=delta, return_range=(0, 1))
    miscoverage = multinomial.pmf(counts, m, probs)[lcb > mean + 1e-12].sum()
    assert miscoverage <= delta + 1e-9


@settings(max_examples=50, deadline=None)
@given(m=st.integers(1, 300), delta=st.floats(1e-6, 0.45))
def test_dkw_epsilon_covers_the_exact_one_sided_ks_quantile(m, delta):
    """Massart's constant: the DKW width is at least scipy's exact quantile."""
    assert np.sqrt(np.log(1 / delta) / (2 * m)) >= ksone.isf(delta, m) - 1e-12


def test_bounds_on_constant_rows_and_range_mapping():
    rows = np.array([[0.0] * 10, [1.0] * 10])
    cp = task_lower_bounds(
        rows, bound="clopper-pearson", delta=0.05, return_range=(0, 1)
    )
    assert cp[0] == 0.0 and cp[1] == pytest.approx(0.05 ** (1 / 10))
    # An affine change of units moves every bound with it.
    for bound in BOUNDS:
        unit = task_lower_bounds(rows, bound=bound, delta=0.05, return_range=(0, 1))
        scaled = task_lower_bounds(
            rows * 200 - 100, bound=bound, delta=0.05, return_range=(-100, 100)
        )
        np.testing.assert_allclose(scaled, unit * 200 - 100)


# --- the task-level band -------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 60), eps=st.floats(0.01, 0.99))
def test_band_coverage_matches_scipys_one_sided_ks_distribution(n, eps):
    b = np.minimum(1.0, np.arange(n) / n + eps)
    assert band_coverage(b) == pytest.approx(ksone.cdf(eps, n), abs=1e-9)


@pytest.mark.parametrize("n, delta", [(1, 0.1), (7, 0.05), (60, 0.01)])
def test_equal_level_band_is_exact_and_within_its_bracket(n, delta):
    b = equal_level_band(n, delta)
    coverage = band_coverage(b)
    assert 1 - delta <= coverage <= 1 - delta + 2e-3
    assert np.all(np.diff(b) > 0)
    # Monte Carlo agrees with the recursion.
    U = np.sort(np.random.default_rng(0).random((100_000, n)), axis=1)
    assert (U <= b).all(axis=1).mean() == pytest.approx(coverage, abs=0.005)


def test_composition_allows_failures_only_when_they_pay():
    # n * beta far below delta: no failure needs allowing.
    v, _ = compose(200, 1e-6, 0.01)
    assert v == 0
    # P(Bin(200, 1e-3) > 1) > 0.01: at least two must be allowed.
    v, p = compose(200, 1e-3, 0.01)
    assert v >= 2 and binom.sf(v, 200, 1e-3) < 0.01
    assert len(p) == 200 and np.all(np.diff(p) <= 0)
    # Budget reserved for a second set of bounds narrows what is left.
    v_r, p_r = compose(200, 1e-3, 0.01, reserved=0.002)
    assert v_r >= v and np.all(p_r <= p)
    with pytest.raises(ValueError, match="reserved"):
        compose(200, 1e-3, 0.01, reserved=0.01)


# --- the estimator ---------------------------------------------------------------


@pytest.fixture(scope="module")
def bridge_returns():
    return BridgeTaskFamily().sample_returns(200, 100, random_state=0)


def test_curve_is_a_monotone_step_function(bridge_returns):
    cert = MultiTaskGuarantee().fit(bridge_returns)
    g, p = cert.curve_.T
    assert np.all(np.diff(g) > 0) and np.all(np.diff(p) <= 0)
    assert cert.probability(0.0) == 1.0 and cert.probability(1.0) == 0.0
    probs = np.linspace(0.05, 0.9, 18)
    levels = cert.guarantee(probs)
    assert np.all(np.diff(levels) <= 0)
    assert np.all(cert.probability(levels[levels > 0]) >= probs[levels > 0])
    # The level certified for p cannot be raised without losing p.
    assert np.all(cert.probability(levels + 1e-9) < probs)


def test_task_order_and_nan_padding_do_not_matter(bridge_returns):
    cert = MultiTaskGuarantee().fit(bridge_returns)
    perm = np.random.default_rng(1).permutation(len(bridge_returns))
    np.testing.assert_array_equal(
        MultiTaskGuarantee().fit(bridge_returns[perm]).curve_, cert.curve_
    )
    # Unequal episode counts: a row's bound is that of its own episodes.
    padded = bridge_returns[:, :60].copy()
    padded[::2, 40:] = np.nan
    cert = MultiTaskGuarantee(task_bound="empirical-bernstein").fit(padded)
    alone = MultiTaskGuarantee(task_bound="empirical-bernstein").fit(padded[:2, :40])
    assert cert.lower_bounds_[0] == pytest.approx(alone.lower_bounds_[0])
    np.testing.assert_array_equal(cert.n_episodes_[:2], [40, 60])


def _violates(cert, family):
    g, p = cert.curve_.T
    return bool(np.any(family.survival(g) < p - 1e-12))


@pytest.mark.slow
def test_curve_lies_below_the_truth_in_at_least_one_minus_delta_of_runs():
    """The theorem, on the closed-form family, against the plug-in curve.

    delta = 0.1 and ten episodes per task stress the per-task bounds; the
    number of violating runs out of 200 must be compatible with a rate of at
    most delta (binomial upper quantile), while the empirical-means curve
    violates in most runs.
    """
    family = BridgeTaskFamily()
    reps, delta = 200, 0.1
    violations = plug_in = 0
    for rep in range(reps):
        returns = family.sample_returns(100, 10, random_state=rep)
        cert = MultiTaskGuarantee(delta=delta, task_delta=0.01).fit(returns)
        violations += _violates(cert, family)
        means = np.sort(returns.mean(axis=1))
        share = 1.0 - np.arange(len(means)) / len(means)  # P_hat(J >= mean_(k))
        plug_in += bool(np.any(family.survival(means) < share - 1e-12))
    assert violations <= binom.ppf(0.999, reps, delta)
    assert plug_in > 0.5 * reps


@pytest.mark.parametrize(
    "ablation, margin",
    [
        ({"composition": "bonferroni"}, 0.02),
        ({"task_level": "dkw"}, 0.02),
        ({"composition": "binomial"}, 0.003),
    ],
    ids=["bonferroni", "dkw-band", "binomial-alone"],
)
def test_each_ablation_certifies_less(bridge_returns, ablation, margin):
    grid = np.linspace(0, 1, 1001)
    full = MultiTaskGuarantee().fit(bridge_returns).probability(grid)
    ablated = MultiTaskGuarantee(**ablation).fit(bridge_returns).probability(grid)
    assert np.trapezoid(full, grid) > np.trapezoid(ablated, grid) + margin


def test_hybrid_keeps_the_top_ranks_that_allowed_failures_give_up(bridge_returns):
    hybrid = MultiTaskGuarantee().fit(bridge_returns)
    binomial = MultiTaskGuarantee(composition="binomial").fit(bridge_returns)
    assert binomial.n_failures_allowed_ >= 2
    assert binomial.guarantee(0.95) == 0.0 < hybrid.guarantee(0.95)
    assert hybrid.guarantee(0.8) >= binomial.guarantee(0.8) - 0.01


def test_nan_rows_do_not_change_the_input(bridge_returns):
    returns = bridge_returns[:20].copy()
    returns[3, 50:] = np.nan
    before = returns.copy()
    MultiTaskGuarantee().fit(returns)
    np.testing.assert_array_equal(returns, before)


# --- bad input and the contract ---------------------------------------------------


@pytest.mark.parametrize(
    "params, returns, match",
    [
        ({}, [[0.0, 1.0, 1.0]], "at least two"),
        ({}, [[0.0, 1.0], [1.0, 2.0]], "outside return_range"),
        (
            {"return_range": (0, 10), "task_bound": "hoeffding"},
            [[0, 11], [1, 2]],
            "outside",
        ),
        ({}, [[0.0, 0.5], [1.0, 1.0]], "success/failure"),
        (
            {"task_bound": "empirical-bernstein"},
            [[1.0, np.nan], [0.0, 1.0]],
            "fewer than 2",
        ),
        ({}, [[np.nan, np.nan], [0.0, 1.0]], "fewer than 1"),
        ({}, [[np.inf, 1.0], [0.0, 1.0]], "infinity"),
        ({"return_range": (1, 0)}, [[0, 1], [1, 0]], "low < high"),
        ({"return_range": (0, 1, 2)}, [[0, 1], [1, 0]], "two finite"),
        (
            {"composition": "bonferroni", "task_delta": 0.01},
            [[0, 1]] * 5,
            "n_tasks \\* task_delta < delta",
        ),
    ],
)
def test_bad_input_is_named(params, returns, match):
    with pytest.raises(ValueError, match=match):
        MultiTaskGuarantee(**params).fit(np.asarray(returns, dtype=float))


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5])
def test_delta_outside_the_unit_interval_is_rejected(delta):
    with pytest.raises(InvalidParameterError, match="delta"):
        MultiTaskGuarantee(delta=delta).fit([[0.0, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("task_delta", [0.5 + 1e-9, 0.7, 0.99])
def test_task_delta_above_one_half_is_rejected(task_delta):
    # Massart's one-sided DKW constant needs the level at most 1/2.
    with pytest.raises(InvalidParameterError, match="task_delta"):
        MultiTaskGuarantee(task_delta=task_delta).fit([[0.0, 1.0], [1.0, 1.0]])
    assert MultiTaskGuarantee(task_delta=0.5).fit([[0.0, 1.0]] * 40).curve_.size
    # Too few tasks for so weak per-task bounds: named, not a crash.
    with pytest.raises(ValueError, match="lower task_delta or sample more tasks"):
        MultiTaskGuarantee(task_delta=0.5).fit([[0.0, 1.0], [1.0, 1.0]])


def test_dkw_levels_above_one_half_are_rejected():
    returns = np.array([[0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="task_level='dkw' needs delta <= 0.5"):
        MultiTaskGuarantee(task_level="dkw", delta=0.6).fit(returns)
    MultiTaskGuarantee(task_level="order-statistics", delta=0.6).fit(returns)
    with pytest.raises(ValueError, match="Massart"):
        task_lower_bounds(returns, bound="dkw", delta=0.6, return_range=(0, 1))


def test_plot_draws_the_curve_that_probability_reads(bridge_returns):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cert = MultiTaskGuarantee().fit(bridge_returns)
    ax = plot_guarantee(cert, label="certified")
    x, y = ax.lines[0].get_data()
    # A "pre" step: the value on (x[i-1], x[i]] is y[i]; read it back at the
    # midpoints and the right ends of every step.
    mids = (x[:-1] + x[1:]) / 2
    np.testing.assert_array_equal(
        cert.probability(mids[x[1:] > x[:-1]]), y[1:][x[1:] > x[:-1]]
    )
    np.testing.assert_array_equal(cert.probability(x[1:-1]), y[1:-1])
    assert ax.get_legend().get_texts()[0].get_text() == "certified"
    plt.close(ax.figure)
    with pytest.raises(Exception, match="not fitted"):
        plot_guarantee(MultiTaskGuarantee())


def test_guarantee_rejects_probabilities_outside_unit_interval(bridge_returns):
    cert = MultiTaskGuarantee().fit(bridge_returns)
    with pytest.raises(ValueError, match="p must lie in"):
        cert.guarantee(1.5)


def test_contract_clone_pickle_params(bridge_returns):
    est = MultiTaskGuarantee(task_bound="hoeffding", delta=0.05)
    check_param_validation("MultiTaskGuarantee", est)
    fitted = clone(est).fit(bridge_returns)
    assert clone(fitted).get_params() == est.get_params()
    assert not hasattr(clone(fitted), "curve_")
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.curve_, fitted.curve_)
    assert loaded.guarantee(0.8) == fitted.guarantee(0.8)
