"""ConformalRobustOptimizer: bounds, validity, selection, problems, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import binom
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeRegressor

from sklearn_ext.datasets import make_shortest_path
from sklearn_ext.robust_optimization import (
    ConformalRobustOptimizer,
    LinearProblem,
    PortfolioProblem,
    ShortestPathProblem,
)
from sklearn_ext.robust_optimization._bounds import (
    betting_upper_bound,
    binomial_upper_bound,
    frontier_bounds,
    hoeffding_bentkus_upper_bound,
    min_calibration_size,
)
from sklearn_ext.robust_optimization._frontier import normalised_regret
from sklearn_ext.utils._sklearn_compat import InvalidParameterError

GRID = ShortestPathProblem((5, 5))


def _shortest_path_data(n, random_state, degree=2, coef=None):
    return make_shortest_path(
        n_samples=n,
        n_features=5,
        degree=degree,
        noise=0.5,
        coef=coef,
        return_coef=True,
        random_state=random_state,
    )


# ------------------------------------------------------------------ bounds


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 400),
    frac=st.floats(0, 1),
    delta=st.floats(1e-4, 0.5),
)
def test_binomial_bound_inverts_the_binomial_tail(n, frac, delta):
    # The Clopper-Pearson bound u solves P(Bin(n, u) <= k) = delta (u = 1 at k = n).
    k = int(round(frac * n))
    u = float(binomial_upper_bound(k, n, delta))
    if k == n:
        assert u == 1.0
    else:
        assert binom.cdf(k, n, u) == pytest.approx(delta, rel=1e-6, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), mean=st.floats(0, 1), delta=st.floats(1e-4, 0.5))
def test_hoeffding_bentkus_bound_is_above_the_mean_and_monotone(n, mean, delta):
    u = hoeffding_bentkus_upper_bound(np.array([mean, min(1.0, mean + 0.05)]), n, delta)
    assert mean <= u[0] <= 1.0
    assert u[0] <= u[1] + 1e-9
    # A smaller error budget gives a larger bound.
    assert u[0] <= hoeffding_bentkus_upper_bound(np.array([mean]), n, delta / 10)[0]


def test_hoeffding_bentkus_bound_at_zero_losses():
    n, delta = 200, 0.01
    u = hoeffding_bentkus_upper_bound(np.array([0.0]), n, delta)[0]
    assert u == pytest.approx(1 - delta ** (1 / n), rel=1e-6)


def test_bounds_cover_the_mean_at_the_promised_rate():
    # Monte Carlo: the failure rate stays below delta (plus binomial noise).
    rng = np.random.default_rng(0)
    n, delta, reps = 60, 0.2, 3000
    losses = rng.beta(0.3, 3.0, size=(reps, n))
    fail_hb = np.mean(
        hoeffding_bentkus_upper_bound(losses.mean(1), n, delta) < 0.3 / 3.3
    )
    hits = rng.random((reps, n)) < 0.15
    fail_cp = np.mean(binomial_upper_bound(hits.sum(1), n, delta) < 0.15)
    fail_bet = np.mean(betting_upper_bound(losses.T, delta) < 0.3 / 3.3)
    slack = 3 * np.sqrt(delta * (1 - delta) / reps)
    assert fail_hb <= delta + slack
    assert fail_cp <= delta + slack
    assert fail_bet <= delta + slack
    # The exact binomial bound is not vacuous: it does fail sometimes.
    assert fail_cp > 0.02


def test_betting_bound_adapts_to_low_variance():
    # Losses concentrated near their mean: the betting bound is far tighter than
    # Hoeffding-Bentkus (which sees only the mean); with no loss at all it is
    # close to the exact 1 - delta**(1/n).
    rng = np.random.default_rng(0)
    losses = rng.beta(20, 80, size=(400, 50))
    bet = betting_upper_bound(losses, 0.01)
    hb = hoeffding_bentkus_upper_bound(losses.mean(0), 400, 0.01)
    assert np.all(bet >= losses.mean(0))
    assert np.mean(bet - 0.2) < 0.5 * np.mean(hb - 0.2)
    zero = betting_upper_bound(np.zeros((200, 1)), 0.01)[0]
    assert 1 - 0.01 ** (1 / 200) <= zero <= 1.1 * (1 - 0.01 ** (1 / 200))


def test_frontier_bounds_are_monotone_and_corrected():
    rng = np.random.default_rng(1)
    scores = rng.exponential(size=300)
    radii = np.linspace(0, 4, 30)
    miscovered = scores[:, None] > radii
    regret = rng.random((300, 30)) * 0.2
    mis, reg = frontier_bounds(miscovered, regret, delta=0.1)
    assert np.all(np.diff(mis) <= 0)
    assert np.all(mis >= miscovered.mean(0))
    assert np.all(reg >= regret.mean(0))
    mis_pw, reg_pw = frontier_bounds(miscovered, regret, 0.1, correction="none")
    assert np.all(mis_pw <= mis + 1e-12) and np.all(reg_pw < reg)
    mis_only, none = frontier_bounds(miscovered, None, delta=0.1)
    assert none is None and np.all(mis_only <= mis + 1e-12)
    assert min_calibration_size(0.1, 50, True) == 10


# ---------------------------------------------------------- the estimator


@pytest.fixture(scope="module")
def shortest_path_fit():
    X, C, coef = _shortest_path_data(1500, random_state=0)
    model = ConformalRobustOptimizer(
        Ridge(), GRID, levels=25, calibration_size=500, random_state=0
    ).fit(X, C)
    X_test, C_test, _ = _shortest_path_data(20000, random_state=1, coef=coef)
    return model, coef, X_test, C_test


def _true_frontier(model, X, C):
    """Miscoverage and regret of every level on a large fresh sample."""
    center = model.estimator_.predict(X)
    scale = model._scale(X)
    scores = model._scores(C - center, scale)
    mis = np.array([np.mean(scores > r) for r in model.levels_])
    best_worst = GRID.cost_range(C)
    reg = np.array(
        [
            normalised_regret(
                GRID, C, GRID.solve_robust(center, r * scale, model.norm), best_worst
            ).mean()
            for r in model.levels_
        ]
    )
    return mis, reg


def test_frontier_shape_and_nominal_first_level(shortest_path_fit):
    model, *_ = shortest_path_fit
    front = model.frontier_
    assert set(front) == {
        "radius",
        "miscoverage",
        "miscoverage_upper",
        "regret",
        "regret_upper",
        "pareto",
    }
    assert front["radius"][0] == 0.0 and np.all(np.diff(front["radius"]) > 0)
    # Radius 0 is the nominal policy and misses almost every realised cost.
    assert front["miscoverage"][0] == 1.0
    assert front["miscoverage"][-1] <= 0.05
    assert np.all(front["miscoverage_upper"] >= front["miscoverage"])
    assert np.all(front["regret_upper"] >= front["regret"])
    assert np.all((front["regret"] >= 0) & (front["regret"] <= 1))
    assert front["pareto"].any() and front["pareto"].dtype == bool
    assert model.n_calibration_ == 500


@pytest.mark.slow
def test_simultaneous_bounds_hold_and_naive_frontier_fails(shortest_path_fit):
    # Headline guarantee, quick version (the full one is in the benchmark):
    # recalibrate the fitted model on independent calibration draws and count the
    # draws in which some level's bound falls below the truth.
    model, coef, X_test, C_test = shortest_path_fit
    model = pickle.loads(pickle.dumps(model))
    true_mis, true_reg = _true_frontier(model, X_test, C_test)
    reps, delta = 40, model.delta
    bound_fails = naive_fails = 0
    for rep in range(reps):
        X_cal, C_cal, _ = _shortest_path_data(300, random_state=100 + rep, coef=coef)
        front = model.calibrate(X_cal, C_cal).frontier_
        bound_fails += np.any(front["miscoverage_upper"] < true_mis) or np.any(
            front["regret_upper"] < true_reg
        )
        naive_fails += np.any(front["miscoverage"] < true_mis) or np.any(
            front["regret"] < true_reg
        )
    assert bound_fails / reps <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
    assert naive_fails / reps >= 0.5


def test_select_rules_and_guarantee_on_fresh_data(shortest_path_fit):
    model, coef, X_test, C_test = shortest_path_fit
    front = model.frontier_
    model.select(max_miscoverage=0.1)
    assert front["miscoverage_upper"][model.level_] <= 0.1
    feasible = front["miscoverage_upper"] <= 0.1
    assert front["regret_upper"][model.level_] == front["regret_upper"][feasible].min()
    # The certified level covers at least 90% of fresh costs.
    center, half = model.predict_set(X_test)
    scores = np.sqrt(np.sum(((C_test - center) / (half / model.radius_)) ** 2, axis=1))
    assert np.mean(scores <= model.radius_) >= 0.9

    model.select(max_regret=front["regret_upper"][3])
    assert front["regret_upper"][model.level_] <= front["regret_upper"][3]
    assert front["miscoverage_upper"][model.level_] <= front["miscoverage_upper"][3]

    model.select(tradeoff=0.0)  # regret alone: the smallest regret bound
    assert front["regret_upper"][model.level_] == front["regret_upper"].min()
    model.select(tradeoff=1e6)  # miscoverage alone
    assert front["miscoverage_upper"][model.level_] == front["miscoverage_upper"].min()
    assert model.select() is model
    with pytest.raises(ValueError, match="No level of the grid has miscoverage"):
        model.select(max_miscoverage=1e-4)
    with pytest.raises(ValueError, match="max_miscoverage must be a number"):
        model.select(max_miscoverage=1.5)
    with pytest.raises(ValueError, match="tradeoff must be a number"):
        model.select(tradeoff=-1)


def test_predict_returns_robust_paths_and_score_is_negative_regret(shortest_path_fit):
    model, coef, X_test, C_test = shortest_path_fit
    model.select(max_miscoverage=0.1)
    paths = model.predict(X_test[:500])
    center, half = model.predict_set(X_test[:500])
    np.testing.assert_array_equal(paths, GRID.solve_robust(center, half, "l2"))
    assert set(np.unique(paths)) <= {0.0, 1.0}
    regret = normalised_regret(GRID, C_test[:500], paths)
    per_sample = clone(model).set_params(regret_normalisation="per-sample")
    per_sample.__dict__.update(
        {k: v for k, v in model.__dict__.items() if k.endswith("_")}
    )
    assert per_sample.score(X_test[:500], C_test[:500]) == pytest.approx(-regret.mean())
    # The default is PyEPO's normalised regret: sum of regrets over sum |z*|.
    best = GRID.cost(C_test[:500], GRID.solve(C_test[:500]))
    pyepo = (GRID.cost(C_test[:500], paths) - best).sum() / np.abs(best).sum()
    assert model.score(X_test[:500], C_test[:500]) == pytest.approx(-pyepo)
    # The robust level changes decisions: it is not the nominal policy.
    nominal = GRID.solve(center)
    assert np.any(paths != nominal)


def test_certified_level_beats_a_priori_bonferroni_box(shortest_path_fit):
    # At the same target miscoverage, the level read off the frontier is no more
    # costly than the split-conformal box fixed a priori (per-edge absolute
    # residual quantiles at 1 - alpha / d, Bonferroni for joint coverage).
    model, coef, X_test, C_test = shortest_path_fit
    X_cal, C_cal, _ = _shortest_path_data(500, random_state=7, coef=coef)
    alpha, d = 0.1, C_cal.shape[1]
    resid = np.abs(C_cal - model.estimator_.predict(X_cal))
    level = np.ceil((len(C_cal) + 1) * (1 - alpha / d)) / len(C_cal)
    half = np.quantile(resid, min(level, 1.0), axis=0, method="higher")
    center = model.estimator_.predict(X_test)
    box = GRID.solve_robust(center, np.broadcast_to(half, center.shape), "linf")
    box_regret = normalised_regret(GRID, C_test, box).mean()
    model.select(max_miscoverage=alpha)
    ours = normalised_regret(GRID, C_test, model.predict(X_test)).mean()
    assert ours <= box_regret + 2e-3


def test_without_problem_it_is_a_calibrated_regressor():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.5, size=600)
    model = ConformalRobustOptimizer(Ridge(), levels=30, random_state=0).fit(X, y)
    np.testing.assert_allclose(model.predict(X), model.estimator_.predict(X))
    assert model.predict(X).shape == (600,)
    assert np.all(np.isnan(model.frontier_["regret"]))
    model.select(max_miscoverage=0.2)
    # Without a problem the tightest set meeting the target is chosen.
    ok = model.frontier_["miscoverage_upper"] <= 0.2
    assert model.radius_ == model.frontier_["radius"][ok].min()
    X_new = rng.normal(size=(5000, 3))
    y_new = X_new @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.5, size=5000)
    center, half = model.predict_set(X_new)
    assert np.mean(np.abs(y_new - center[:, 0]) <= half[:, 0]) >= 0.8
    with pytest.raises(ValueError, match="max_regret needs a problem"):
        model.select(max_regret=0.1)


def test_scale_regressor_adapts_set_width():
    # Heteroscedastic noise: a fitted scale gives wide sets where the noise is
    # large and narrow ones where it is small; a constant scale cannot.
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(1500, 1))
    y = 2 * X[:, 0] + rng.normal(size=1500) * (0.05 + X[:, 0])
    model = ConformalRobustOptimizer(
        Ridge(), scale=Ridge(), levels=30, random_state=0
    ).fit(X, y)
    _, half = model.select(max_miscoverage=0.2).predict_set(np.array([[0.05], [0.95]]))
    assert half[1, 0] > 4 * half[0, 0]
    constant = ConformalRobustOptimizer(Ridge(), levels=30, random_state=0).fit(X, y)
    _, half_c = constant.select(max_miscoverage=0.2).predict_set([[0.05], [0.95]])
    assert half_c[0, 0] == pytest.approx(half_c[1, 0])


@pytest.mark.parametrize("score", ["l2", "linf"])
def test_portfolio_decisions_are_feasible_and_hedged(score):
    rng = np.random.default_rng(0)
    n, p, d = 800, 3, 6
    X = rng.normal(size=(n, p))
    # Asset j has mean return X @ B_j and noise growing with j: risky assets pay more.
    B = rng.normal(scale=0.1, size=(p, d))
    noise = np.linspace(0.05, 1.0, d)
    C = X @ B + 0.05 * np.arange(d) + rng.normal(size=(n, d)) * noise
    problem = PortfolioProblem(n_assets=d)
    model = ConformalRobustOptimizer(
        Ridge(), problem, norm=score, levels=20, random_state=0
    ).fit(X, C)
    W = model.select(max_miscoverage=0.2).predict(X[:100])
    assert W.shape == (100, d)
    np.testing.assert_allclose(W.sum(axis=1), 1.0)
    assert np.all(W >= -1e-12)
    # Hedging moves weight towards the low-noise assets.
    nominal = problem.solve(model.estimator_.predict(X[:100]))
    assert (W @ noise).mean() < (nominal @ noise).mean()


def test_linear_problem_with_box_sets():
    # A small LP: choose 2 units over 4 items in [0, 1], minimise cost.
    problem = LinearProblem(A_eq=np.ones((1, 4)), b_eq=[2.0], bounds=(0, 1))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    C = 1 + X @ rng.normal(size=(2, 4)) + rng.normal(scale=0.3, size=(120, 4))
    model = ConformalRobustOptimizer(
        Ridge(), problem, norm="linf", levels=6, delta=0.3, random_state=0
    ).fit(X, C)
    W = model.predict(X[:10])
    np.testing.assert_allclose(W.sum(axis=1), 2.0, atol=1e-9)
    assert np.all((W > -1e-9) & (W < 1 + 1e-9))
    assert model.frontier_["regret"].shape == (model.levels_.size,)


def test_pickle_and_grid_search_with_a_problem(shortest_path_fit):
    model, coef, X_test, C_test = shortest_path_fit
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(
        restored.predict(X_test[:50]), model.predict(X_test[:50])
    )
    X, C, _ = _shortest_path_data(400, random_state=3, coef=coef)
    search = GridSearchCV(
        ConformalRobustOptimizer(Ridge(), GRID, levels=5, delta=0.5, random_state=0),
        {"norm": ["l2", "linf"]},
        cv=2,
    ).fit(X, C)
    # Scores are minus a mean normalised regret: in [-1, 0], and they differ
    # between the box and the ball.
    scores = search.cv_results_["mean_test_score"]
    assert np.all((scores >= -1) & (scores <= 0)) and scores[0] != scores[1]


# --------------------------------------------------------------- bad input


def _small(**params):
    params.setdefault("levels", 5)
    return ConformalRobustOptimizer(Ridge(), GRID, random_state=0, **params)


@pytest.fixture(scope="module")
def small_data():
    X, C, _ = _shortest_path_data(200, random_state=0)
    return X, C


def test_y_of_the_wrong_width(small_data):
    X, C = small_data
    with pytest.raises(ValueError, match=r"y has 39 column\(s\) but .*40 uncertain"):
        _small().fit(X, C[:, :39])
    with pytest.raises(ValueError, match="y has 1 column"):
        _small().fit(X, C[:, 0])


@pytest.mark.parametrize(
    "levels, match",
    [
        ([0.0, 2.0, 1.0], "strictly increasing"),
        ([0.0, 1.0, 1.0], "strictly increasing"),
        ([-1.0, 1.0], "non-negative"),
        ([0.0, np.inf], "finite"),
        ([[0.0, 1.0]], "1-D array"),
        (np.array([], dtype=float), "non-empty"),
    ],
)
def test_bad_level_grids(small_data, levels, match):
    X, C = small_data
    with pytest.raises(ValueError, match=match):
        _small(levels=levels).fit(X, C)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2])
def test_delta_outside_the_unit_interval(small_data, delta):
    X, C = small_data
    with pytest.raises(InvalidParameterError, match="'delta' parameter"):
        _small(delta=delta).fit(X, C)


def test_calibration_split_too_small(small_data):
    X, C = small_data
    with pytest.raises(ValueError, match="at least 10 calibration samples"):
        _small(levels=50, calibration_size=8, delta=0.1).fit(X, C)
    model = _small().fit(X, C)
    with pytest.raises(ValueError, match="calibration samples are needed"):
        model.calibrate(X[:3], C[:3])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_inputs(small_data, bad):
    X, C = small_data
    X_bad, C_bad = X.copy(), C.copy()
    X_bad[3, 1] = bad
    C_bad[5, 2] = bad
    with pytest.raises(ValueError, match="Input X contains"):
        _small().fit(X_bad, C)
    with pytest.raises(ValueError, match="Input y contains"):
        _small().fit(X, C_bad)
    with pytest.raises(ValueError, match="Input y contains"):
        _small().fit(X, C).score(X, C_bad)


def test_calibrate_leaves_its_inputs_alone(small_data):
    # fit, predict and score are covered by the common harness; calibrate is ours
    X, C = small_data
    X_ro, C_ro = X.copy(), C.copy()
    X_ro.flags.writeable = C_ro.flags.writeable = False
    _small().fit(X, C).calibrate(X_ro, C_ro)
    np.testing.assert_array_equal(X_ro, X)
    np.testing.assert_array_equal(C_ro, C)


# ------------------------------------------------------------ sample_weight


def _split(model, n_samples):
    """The training and calibration indices that fit draws."""
    from sklearn.model_selection import train_test_split
    from sklearn.utils import check_random_state

    _, n_cal = model._split_sizes(n_samples)
    return train_test_split(
        np.arange(n_samples),
        test_size=n_cal,
        random_state=check_random_state(model.random_state),
    )


def test_sample_weight_acts_on_the_training_part_only(small_data):
    X, C = small_data
    rng = np.random.RandomState(0)
    train, cal = _split(_small(), len(X))
    w = np.ones(len(X))
    w[train] = rng.randint(0, 4, size=train.size)
    weighted = _small().fit(X, C, sample_weight=w)
    # the model is the estimator fitted with the training weights; integer
    # weights act as repeated training rows
    reference = Ridge().fit(X[train], C[train], sample_weight=w[train])
    np.testing.assert_allclose(weighted.estimator_.coef_, reference.coef_)
    repeated = Ridge().fit(
        np.repeat(X[train], w[train].astype(int), axis=0),
        np.repeat(C[train], w[train].astype(int), axis=0),
    )
    np.testing.assert_allclose(weighted.estimator_.coef_, repeated.coef_, rtol=1e-8)
    # the constant scale is the weighted RMS of the cross-validated residuals
    from sklearn.model_selection import KFold

    Xt, Ct, wt = X[train], C[train], w[train]
    oof = np.zeros_like(Ct)
    for tr, te in KFold(3).split(Xt):
        oof[te] = Ridge().fit(Xt[tr], Ct[tr], sample_weight=wt[tr]).predict(Xt[te])
    np.testing.assert_allclose(
        weighted.scale_, np.sqrt(np.average((Ct - oof) ** 2, axis=0, weights=wt))
    )
    unweighted = _small().fit(X, C)
    assert not np.allclose(weighted.estimator_.coef_, unweighted.estimator_.coef_)
    # the calibration part is never weighted: weights there change nothing
    w_cal = np.ones(len(X))
    w_cal[cal] = rng.uniform(0, 5, size=cal.size)
    cal_weighted = _small().fit(X, C, sample_weight=w_cal)
    for key, value in unweighted.frontier_.items():
        np.testing.assert_array_equal(cal_weighted.frontier_[key], value)
    np.testing.assert_array_equal(
        cal_weighted.estimator_.coef_, unweighted.estimator_.coef_
    )


def test_sample_weight_reaches_a_scale_regressor_that_accepts_it(small_data):
    from sklearn.neighbors import KNeighborsRegressor

    X, C = small_data
    train, _ = _split(_small(), len(X))
    w = np.ones(len(X))
    w[train[: train.size // 2]] = 0.0
    tree = DecisionTreeRegressor(max_depth=2, random_state=0)
    a = _small(scale=tree).fit(X, C, sample_weight=w)
    b = _small(scale=tree).fit(X, C)
    assert not np.allclose(a._scale(X), b._scale(X))
    # a scale regressor without sample_weight is fitted unweighted
    _small(scale=KNeighborsRegressor(5)).fit(X, C, sample_weight=w)


def test_sample_weight_errors(small_data):
    from sklearn.neighbors import KNeighborsRegressor

    X, C = small_data
    with pytest.raises(ValueError, match="does not accept sample_weight"):
        ConformalRobustOptimizer(KNeighborsRegressor(), GRID, levels=5).fit(
            X, C, sample_weight=np.ones(len(X))
        )
    train, _ = _split(_small(), len(X))
    w = np.ones(len(X))
    w[train] = 0.0
    with pytest.raises(ValueError, match="zero on every sample of the training"):
        _small().fit(X, C, sample_weight=w)


def test_sample_weight_through_metadata_routing(small_data):
    import sklearn
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, C = small_data
    w = np.random.RandomState(1).randint(0, 3, size=len(X)).astype(float)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline(
            [
                ("scale", StandardScaler().set_fit_request(sample_weight=False)),
                ("model", _small().set_fit_request(sample_weight=True)),
            ]
        ).fit(X, C, sample_weight=w)
        direct = _small().fit(StandardScaler().fit_transform(X), C, sample_weight=w)
    np.testing.assert_allclose(pipe[-1].estimator_.coef_, direct.estimator_.coef_)
    np.testing.assert_array_equal(pipe[-1].frontier_["radius"], direct.levels_)


def test_cv_that_is_not_a_partition_is_refused(small_data):
    from sklearn.model_selection import ShuffleSplit

    X, C = small_data
    with pytest.raises(ValueError, match="cv must partition the training part"):
        _small(cv=ShuffleSplit(3, test_size=0.2, random_state=0)).fit(X, C)


# ------------------------------------------- the sharper frontier (issue 18)


def test_simultaneous_band_holds_at_every_radius_at_once():
    """The default's miscoverage band over a fine grid (no problem, so the
    whole freed budget goes to the band): violations anywhere in at most
    delta of the draws."""
    rng = np.random.default_rng(0)
    n, delta, reps = 200, 0.2, 400
    radii = np.linspace(0.0, 4.0, 200)
    truth = np.exp(-radii)  # exponential scores: alpha(r) = exp(-r)
    fails = tighter = 0
    for _ in range(reps):
        scores = rng.exponential(size=n)
        miscovered = scores[:, None] > radii[None, :]
        bound, _ = frontier_bounds(miscovered, None, delta, "band")
        ltt, _ = frontier_bounds(miscovered, None, delta, "bonferroni")
        fails += bool(np.any(bound < truth))
        tighter += bool(np.any(bound < ltt - 1e-6))
    assert fails / reps <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
    assert tighter / reps > 0.5  # the band is in use here, not only LTT's bounds
    # The naive empirical curve fails on almost every draw (the test can fail).
    scores = rng.exponential(size=(50, n))
    naive = (scores[:, :, None] > radii).mean(1)
    assert np.mean(np.any(naive < truth, axis=1)) > 0.9


@pytest.mark.parametrize("regret_bound", ["betting", "hoeffding_bentkus"])
def test_default_is_never_looser_than_ltt_bonferroni_at_any_level(regret_bound):
    """Issue 55, item 10: every level, both quantities, on grids whose
    miscoverage runs from 1 (radius 0) down to 0, so about half of the
    levels miss more than half the time."""
    rng = np.random.default_rng(0)
    settings_seen = set()
    for n, K, delta in [
        (100, 50, 0.1),
        (450, 50, 0.1),
        (500, 50, 0.05),
        (300, 5, 0.1),
        (800, 50, 0.1),
        (200, 120, 0.2),
    ]:
        for _ in range(4):
            scores = rng.exponential(size=n)
            # Levels fixed before the scores: quantiles of a separate sample.
            radii = np.quantile(rng.exponential(size=n), np.linspace(0, 1, K))
            miscovered = scores[:, None] > radii
            assert miscovered.mean(0).max() > 0.9  # levels above 1/2 included
            regret = np.clip(rng.beta(2, 8, (n, K)) + np.linspace(0, 0.3, K), 0, 1)
            default = frontier_bounds(
                miscovered, regret, delta, "band", regret_bound=regret_bound
            )
            ltt = frontier_bounds(
                miscovered, regret, delta, "bonferroni", regret_bound=regret_bound
            )
            for ours, theirs in zip(default, ltt):
                assert np.all(ours <= theirs + 1e-12), (n, K, delta)
            # Without a problem: the miscoverage alone.
            mis, _ = frontier_bounds(miscovered, None, delta, "band")
            mis_ltt, _ = frontier_bounds(miscovered, None, delta, "bonferroni")
            assert np.all(mis <= mis_ltt + 1e-12)
            settings_seen.add(
                (
                    bool(np.any(default[0] < ltt[0] - 1e-6)),
                    bool(np.any(default[1] < ltt[1] - 1e-6)),
                )
            )
    # Not vacuous: some settings tighten the miscoverage, some the regret.
    assert any(mis for mis, _ in settings_seen)
    assert any(reg for _, reg in settings_seen)


def test_default_band_is_valid_over_draws_with_levels_above_half():
    """The default frontier's failure rate (some bound below the truth, on a
    grid with levels above 1/2) stays within delta; the pointwise bounds fail
    more often, so the test can fail."""
    rng = np.random.default_rng(1)
    n, K, delta, reps = 100, 50, 0.2, 300
    radii = np.quantile(rng.exponential(size=5000), np.linspace(0, 1, K))
    truth = np.exp(-radii)
    fails = pointwise = 0
    for _ in range(reps):
        scores = rng.exponential(size=n)
        miscovered = scores[:, None] > radii
        mis, _ = frontier_bounds(miscovered, None, delta, "band")
        fails += bool(np.any(mis < truth))
        raw, _ = frontier_bounds(miscovered, None, delta, "none")
        pointwise += bool(np.any(raw < truth))
    assert fails / reps <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
    assert pointwise / reps > 2 * delta


def test_betting_bound_with_fixed_fractions_shrinks_with_the_level():
    rng = np.random.default_rng(2)
    losses = rng.beta(2, 5, size=(300, 20))
    strict = betting_upper_bound(losses, 0.001)
    loose = betting_upper_bound(losses, 0.003, bet_delta=0.001)
    assert np.all(loose <= strict) and np.any(loose < strict - 1e-4)
    assert np.all(loose >= losses.mean(0))


def test_fixed_sequence_certifies_the_split_conformal_radius(shortest_path_fit):
    pytest.importorskip("mapie")
    model, coef, X_test, C_test = shortest_path_fit
    X, C, _ = _shortest_path_data(1500, random_state=0, coef=coef)
    fs = clone(model).set_params(bound="fixed-sequence").fit(X, C)
    plain = clone(model).fit(X, C)
    for key in ("miscoverage_upper", "regret_upper"):
        assert_array_equal(fs.frontier_[key], plain.frontier_[key])
    fs.select(max_miscoverage=0.1)
    # By hand: the training-conditional split-conformal radius at (0.1, delta).
    scores = np.sort(fs._calibration_scores)
    n = scores.size
    m = np.flatnonzero(binom.cdf(np.arange(n), n, 0.1) <= fs.delta)[-1]
    ball = scores[n - 1 - m]
    assert fs.radius_ >= ball - 1e-12
    assert fs.frontier_["radius"][fs.level_] >= fs.radius_
    # Never wider than the simultaneous choice, and still valid on fresh data.
    assert fs.radius_ <= plain.select(max_miscoverage=0.1).radius_
    center = fs.estimator_.predict(X_test)
    test_scores = fs._scores(C_test - center, fs._scale(X_test))
    assert np.mean(test_scores > fs.radius_) <= 0.1 + 0.01


def test_fixed_sequence_selection_is_valid_over_calibration_draws():
    """P(true miscoverage of the chosen radius > target) <= delta, by simulation."""
    pytest.importorskip("mapie")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = X @ [1.0, -1.0] + rng.standard_t(5, size=600)
    model = ConformalRobustOptimizer(
        Ridge(), levels=30, bound="fixed-sequence", delta=0.2, random_state=0
    ).fit(X, y)
    X_big = rng.normal(size=(100_000, 2))
    y_big = X_big @ [1.0, -1.0] + rng.standard_t(5, size=100_000)
    resid = y_big - model.estimator_.predict(X_big)
    scores_big = np.sort(np.abs(resid) / model.scale_[0])
    reps, bad = 300, 0
    for _ in range(reps):
        Xc = rng.normal(size=(100, 2))
        yc = Xc @ [1.0, -1.0] + rng.standard_t(5, size=100)
        model.calibrate(Xc, yc).select(max_miscoverage=0.1)
        alpha = 1 - np.searchsorted(scores_big, model.radius_, side="right") / 1e5
        bad += alpha > 0.1
    assert bad / reps <= 0.2 + 3 * np.sqrt(0.2 * 0.8 / reps)
    assert bad / reps > 0.02  # it uses its budget: not trivially conservative


@pytest.mark.parametrize("bound", ["simultaneous", "fixed-sequence"])
def test_one_hundred_calibration_points_certify_miscoverage_one_tenth(bound):
    if bound == "fixed-sequence":
        pytest.importorskip("mapie")
    X, C, _ = _shortest_path_data(1100, random_state=3)
    model = ConformalRobustOptimizer(
        Ridge(), GRID, calibration_size=100, bound=bound, random_state=0
    ).fit(X, C)
    assert model.n_calibration_ == 100
    model.select(max_miscoverage=0.1)  # raised "No level ..." before
    assert np.isfinite(model.radius_)
    if bound == "simultaneous":
        assert model.frontier_["miscoverage_upper"][model.level_] <= 0.1


def test_ltt_bonferroni_keeps_the_former_bounds(shortest_path_fit):
    model, coef, *_ = shortest_path_fit
    X, C, _ = _shortest_path_data(1500, random_state=0, coef=coef)
    old = clone(model).set_params(bound="ltt-bonferroni").fit(X, C)
    K, n = old.levels_.size, old.n_calibration_
    counts = np.round(old.frontier_["miscoverage"] * n)
    expected = np.minimum.accumulate(binomial_upper_bound(counts, n, 0.1 / (2 * K)))
    assert_allclose(old.frontier_["miscoverage_upper"], expected)
    new = clone(model).fit(X, C)
    low = new.frontier_["miscoverage_upper"] < 0.5
    assert np.all(new.frontier_["miscoverage_upper"][low] <= expected[low] + 1e-12)


def test_predicting_at_the_default_level_says_so(shortest_path_fit):
    model, coef, X_test, _ = shortest_path_fit
    X, C, _ = _shortest_path_data(1500, random_state=0, coef=coef)
    fitted = clone(model).fit(X, C)
    with pytest.warns(UserWarning, match="default level"):
        fitted.predict(X_test[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted.predict(X_test[:5])  # said once
        fitted.select(max_miscoverage=0.2).predict(X_test[:5])


def test_verbose_reports_the_default_level(small_data, capsys):
    X, C = small_data
    ConformalRobustOptimizer(Ridge(), GRID, levels=4, delta=0.5, verbose=1).fit(X, C)
    assert "default level" in capsys.readouterr().out


def test_prefit_uses_the_fitted_model_and_calibrates_on_all_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ [1.0, 2.0, -1.0] + rng.normal(size=400)
    fitted = Ridge().fit(X[:200], y[:200])
    model = ConformalRobustOptimizer(
        fitted, levels=np.linspace(0, 5, 20), scale="none", prefit=True
    ).fit(X[200:], y[200:])
    assert model.estimator_ is fitted
    assert model.n_calibration_ == 200  # every sample calibrates
    assert_allclose(model.predict(X[:3]), fitted.predict(X[:3]))
    # With the default grid, a split of the data gives the scale and the grid.
    split = ConformalRobustOptimizer(fitted, prefit=True, random_state=0)
    split.fit(X[200:], y[200:])
    assert split.estimator_ is fitted and split.n_calibration_ == 60
    with pytest.raises(NotFittedError):
        ConformalRobustOptimizer(Ridge(), prefit=True).fit(X, y)


def test_nan_in_x_passes_when_the_estimator_accepts_it():
    from sklearn.ensemble import RandomForestRegressor

    X, C, _ = _shortest_path_data(900, random_state=4)
    X = X.copy()
    X[::7, 1] = np.nan
    X_before = X.copy()
    model = ConformalRobustOptimizer(
        RandomForestRegressor(20, max_depth=4, random_state=0),
        GRID,
        levels=10,
        random_state=0,
    ).fit(X, C)
    assert_array_equal(X, X_before)  # the input is left alone
    paths = model.select(max_miscoverage=0.2).predict(X[:20])
    assert np.isfinite(paths).all()
    assert model.__sklearn_tags__().input_tags.allow_nan
    # A model that refuses NaN: the error names X, before any fit.
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ConformalRobustOptimizer(Ridge(), GRID, levels=10).fit(X, C)
    # y must stay finite whatever the model accepts.
    C_bad = C.copy()
    C_bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        ConformalRobustOptimizer(
            RandomForestRegressor(20, max_depth=4, random_state=0),
            GRID,
            levels=10,
        ).fit(X, C_bad)


def _factor_returns(n, seed, d=8):
    """Returns with a common shock: the residuals of any model are correlated."""
    B = np.random.default_rng(0).normal(scale=0.3, size=(4, d))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    shock = rng.normal(size=(n, 1)) * np.linspace(0.5, 1.5, d)
    idio = 0.2 * rng.normal(size=(n, d)) * np.linspace(0.2, 1.0, d)
    return X, X @ B + 0.05 * np.arange(d) + shock + idio


def test_mahalanobis_sets_follow_the_residuals_correlation():
    X, C = _factor_returns(1500, 0)
    X_test, C_test = _factor_returns(20000, 1)
    fits = {}
    for norm in ("l2", "mahalanobis"):
        model = ConformalRobustOptimizer(
            Ridge(),
            PortfolioProblem(8),
            norm=norm,
            levels=20,
            calibration_size=500,
            random_state=0,
        ).fit(X, C)
        fits[norm] = model.select(max_miscoverage=0.1)
    maha, l2 = fits["mahalanobis"], fits["l2"]
    L = maha.shape_
    assert_allclose(L, np.tril(L))
    corr = L @ L.T
    assert_allclose(np.diag(corr), 1.0)
    assert corr[0, -1] > 0.6  # the planted common shock
    assert l2.shape_ is None
    # Certified coverage holds on fresh data ...
    center = maha.estimator_.predict(X_test)
    scores = maha._scores(C_test - center, maha._scale(X_test))
    assert np.mean(scores > maha.radius_) <= 0.1 + 0.01
    # ... with much smaller sets: log-volume of the ellipsoids, same scale.
    d = C.shape[1]
    log_vol_maha = d * np.log(maha.radius_) + np.log(np.diag(L)).sum()
    log_vol_l2 = d * np.log(l2.radius_)
    assert log_vol_maha < log_vol_l2 - 3.0
    W = maha.predict(X_test[:50])
    assert_allclose(W.sum(1), 1.0, atol=1e-8)
    assert (W >= 0).all()
