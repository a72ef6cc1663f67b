"""Graph-guided models: distance to the exact optimum, solver internals that act,
and what practitioners need (scaling, sparse X, streaming, the alpha path)."""

import warnings

import numpy as np
import pytest
from graph_guided_reference import gram_optimum
from scipy import sparse
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from sklearn_ext.datasets import make_graph_multitask
from sklearn_ext.linear_model import (
    GraphGuidedClassifier,
    GraphGuidedRegressor,
    GraphGuidedRegressorCV,
)
from sklearn_ext.linear_model._graph_guided_solver import CHECK_EVERY

pytest.importorskip("cvxpy")

# Relative Frobenius distance of the fitted weights to the exact optimum W*
# that a correct fit must reach on the low-noise problem below. Pooled least
# squares is at 0.66, per-task least squares at 0.27, prox-SGD after 200
# iterations at 0.047 and RIP after 2000 at 0.14: the bound rejects them all.
DISTANCE_BOUND = 0.02


@pytest.fixture(scope="module")
def low_noise():
    data = make_graph_multitask(random_state=1, noise=0.5, group_scale=0.3)
    probe = _fit(data, max_iter=1)
    _, W_star, _ = gram_optimum(probe, data.data, data.target)
    return data, W_star


def _fit(data, cls=GraphGuidedRegressor, **params):
    params = {
        "alpha": 0.05,
        "graph": data.adjacency,
        "task_column": 0,
        "tol": None,
        "random_state": 0,
        **params,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**params).fit(data.data, data.target)


def _distance(W, W_star):
    return np.linalg.norm(W - W_star) / np.linalg.norm(W_star)


@pytest.mark.parametrize(
    "solver, n_iter, short", [("prox_sgd", 1000, 200), ("rip", 10000, 2000)]
)
def test_weights_reach_the_exact_optimum_and_the_bound_rejects_wrong_ones(
    low_noise, solver, n_iter, short
):
    data, W_star = low_noise
    X, y = data.data, data.target
    fit = _fit(data, solver=solver, max_iter=n_iter)
    assert _distance(fit.coef_, W_star) < DISTANCE_BOUND
    # The same bound rejects a short run and both plain least-squares fits.
    early = _fit(data, solver=solver, max_iter=short)
    assert _distance(early.coef_, W_star) > DISTANCE_BOUND
    pooled = LinearRegression().fit(X[:, 1:], y).coef_
    assert _distance(np.tile(pooled, (30, 1)), W_star) > DISTANCE_BOUND
    task = X[:, 0].astype(int)
    per_task = np.array(
        [
            LinearRegression().fit(X[task == t, 1:], y[task == t]).coef_
            for t in range(30)
        ]
    )
    assert _distance(per_task, W_star) > DISTANCE_BOUND


def test_rip_edge_memory_and_matching_sampling_each_bring_it_closer(low_noise):
    data, W_star = low_noise
    runs = {
        "memory + matching": {},
        "memory + uniform": {"edge_sampling": "uniform"},
        "no memory + matching": {"edge_memory": False},
        "textbook": {"edge_sampling": "uniform", "edge_memory": False},
    }
    dist = {
        name: _distance(_fit(data, solver="rip", max_iter=10000, **p).coef_, W_star)
        for name, p in runs.items()
    }
    assert dist["memory + matching"] < 0.95 * dist["no memory + matching"], dist
    assert dist["memory + uniform"] < 0.95 * dist["textbook"], dist
    assert dist["no memory + matching"] < 0.95 * dist["textbook"], dist
    # the textbook method (one uniform edge, no memory) misses the bound
    assert dist["textbook"] > DISTANCE_BOUND, dist


def test_prox_sgd_inner_tolerance_tightens_without_a_floor():
    data = make_graph_multitask(
        n_tasks=4,
        n_groups=2,
        n_samples_per_task=40,
        n_features=3,
        noise=0.5,
        random_state=0,
    )
    model = _fit(data, alpha=0.1, max_iter=100_000, record_objective=True, batch_size=2)
    f_star = gram_optimum(model, data.data, data.target)[0]
    curve = model.objective_curve_
    gap = {int(t): f - f_star for t, f, _ in curve}
    # The tolerance inner_tol / sqrt(t + 1) never lets the dual iterations
    # hit their cap, and the gap keeps falling from 1e4 to 1e5 iterations.
    assert model._inner["capped"] == 0
    assert model._inner["calls"] == 100_000
    assert 0 < gap[100_000] < gap[10_000] / 2, gap
    # and the prox takes more dual iterations as the tolerance tightens
    assert model._inner["iterations"] > 2 * model._inner["calls"]


@pytest.mark.parametrize("n_per_task", [500, 50_000])
def test_default_tol_stops_on_a_check_interval_that_ignores_n(n_per_task):
    data = make_graph_multitask(
        n_tasks=3,
        n_groups=1,
        n_samples_per_task=n_per_task,
        n_features=5,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = GraphGuidedRegressor(
            alpha=0.05, graph=data.adjacency, task_column=0, random_state=0
        ).fit(data.data, data.target)
    # checked every CHECK_EVERY iterations at any size: it stops well before
    # max_iter (one check per pass over the data would come every 6250
    # iterations at 150,000 rows, beyond max_iter=5000)
    assert model.n_iter_ % CHECK_EVERY == 0
    assert model.n_iter_ < 2500
    f_star = gram_optimum(model, data.data, data.target)[0]
    assert model.objective(data.data, data.target) < f_star * (1 + 5e-3)


def test_defaults_converge_on_unscaled_data_and_scaling_is_exact():
    X, y = load_diabetes(return_X_y=True, scaled=False)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = GraphGuidedRegressor(random_state=0).fit(X_train, y_train)
    ols = LinearRegression().fit(X_train, y_train).score(X_test, y_test)
    assert model.score(X_test, y_test) > ols - 0.01
    # without the internal scaling the same budget is far from least squares
    raw = GraphGuidedRegressor(standardize=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        raw.fit(X_train, y_train)
    assert raw.score(X_test, y_test) < ols - 0.05
    # standardize=True is the unscaled fit of the standardised features,
    # reported on the original scale: the same iterations.
    mean, std = X_train.mean(0), X_train.std(0)
    pre = GraphGuidedRegressor(
        standardize=False, random_state=0, max_iter=500, tol=None
    ).fit((X_train - mean) / std, y_train)
    inner = GraphGuidedRegressor(random_state=0, max_iter=500, tol=None)
    inner.fit(X_train, y_train)
    np.testing.assert_allclose(inner.coef_, pre.coef_ / std, rtol=1e-9)
    np.testing.assert_allclose(
        inner.intercept_, pre.intercept_ - (pre.coef_ / std) @ mean, rtol=1e-9
    )
    np.testing.assert_allclose(
        inner.predict(X_test), pre.predict((X_test - mean) / std), rtol=1e-9
    )


def test_standardised_fit_reaches_its_own_optimum(low_noise):
    data, _ = low_noise
    X = data.data.copy()
    X[:, 1:] *= np.linspace(0.1, 30, 20)  # features on very different scales
    model = GraphGuidedRegressor(
        alpha=0.05,
        graph=data.adjacency,
        task_column=0,
        tol=None,
        max_iter=1000,
        random_state=0,
    )
    model.fit(X, data.target)
    f_star, W_star, _ = gram_optimum(model, X, data.target)
    assert (model.objective(X, data.target) - f_star) / f_star < 1e-3
    assert _distance(model.coef_, W_star) < DISTANCE_BOUND


@pytest.mark.parametrize("cls", [GraphGuidedRegressor, GraphGuidedClassifier])
def test_sparse_X_runs_the_dense_iterations(cls):
    task_type = "regression" if cls is GraphGuidedRegressor else "binary"
    data = make_graph_multitask(
        n_tasks=5,
        n_groups=2,
        n_samples_per_task=40,
        task_type=task_type,
        random_state=0,
    )
    X = data.data.copy()
    X[:, 1:][np.abs(X[:, 1:]) < 0.8] = 0.0  # about 60% zeros
    X = np.column_stack([X[:, 1:4], X[:, 0], X[:, 4:]])  # task column in the middle
    Xs = sparse.csr_matrix(X)
    params = {
        "alpha": 0.05,
        "graph": "chain",
        "task_column": 3,
        "max_iter": 300,
        "tol": None,
        "random_state": 0,
        "standardize": False,
    }
    dense = cls(**params).fit(X, data.target)
    sp = cls(**params).fit(Xs, data.target)
    np.testing.assert_allclose(sp.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sp.predict(Xs), dense.predict(X), rtol=1e-10)
    assert sp.objective(Xs, data.target) == pytest.approx(
        dense.objective(X, data.target)
    )
    # with scaling (no centring of sparse X) it reaches the same optimum
    scaled = cls(**{**params, "standardize": True, "max_iter": 2000}).fit(
        Xs, data.target
    )
    if cls is GraphGuidedRegressor:
        assert scaled.score(X, data.target) == pytest.approx(
            dense.score(X, data.target), abs=0.02
        )
    assert not sparse.issparse(scaled.coef_)


def test_partial_fit_streams_to_the_optimum_and_keeps_its_schedule(low_noise):
    data, W_star = low_noise
    X, y = data.data, data.target
    model = GraphGuidedRegressor(
        alpha=0.05, graph=data.adjacency, task_column=0, random_state=0
    )
    rng = np.random.RandomState(0)
    order = rng.permutation(len(y))
    # the first batch lacks task 0: it is still a node, fitted by neighbours
    first = order[X[order, 0] != 0][:600]
    model.partial_fit(X[first], y[first], tasks=np.arange(30))
    assert model.tasks_.tolist() == list(range(30))
    assert np.all(np.isfinite(model.coef_[0]))
    t_after_first = model._state["t"]
    for _ in range(40):
        for batch in np.array_split(rng.permutation(len(y)), 10):
            model.partial_fit(X[batch], y[batch])
    assert model._state["t"] > t_after_first + 1000  # one schedule, continued
    assert _distance(model.coef_, W_star) < 2 * DISTANCE_BOUND
    with pytest.raises(ValueError, match=r"task label\(s\) 31 were not seen"):
        model.partial_fit(np.column_stack([[31, 31], X[:2, 1:]]), y[:2])


def test_partial_fit_bad_input_is_named():
    data = make_graph_multitask(
        n_tasks=4, n_groups=2, task_type="binary", random_state=0
    )
    clf = GraphGuidedClassifier(graph="chain", task_column=0)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        clf.partial_fit(data.data, data.target)
    clf.partial_fit(data.data, data.target, classes=[0, 1])
    with pytest.raises(ValueError, match="not seen in fit"):
        clf.partial_fit(data.data[:3], np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="tasks differ from the tasks of the first"):
        clf.partial_fit(data.data, data.target, tasks=[0, 1, 2, 3, 4])
    assert not hasattr(GraphGuidedRegressorCV(), "partial_fit")


def test_cv_path_from_fused_to_free_picks_the_lowest_held_out_error():
    data = make_graph_multitask(
        n_tasks=12,
        n_groups=3,
        n_samples_per_task=30,
        noise=2.0,
        group_scale=1.0,
        random_state=0,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        data.data,
        data.target,
        test_size=0.5,
        random_state=0,
        stratify=data.data[:, 0],
    )
    cv = GraphGuidedRegressorCV(
        graph=data.adjacency,
        task_column=0,
        n_alphas=6,
        cv=3,
        max_iter=1500,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv.fit(X_train, y_train)
    assert cv.mse_path_.shape == (6, 3)
    assert np.all(np.diff(cv.alphas_) < 0)
    assert cv.alpha_ == cv.alphas_[np.argmin(cv.mse_path_.mean(1))]
    # at the top of the grid the optimum gives every task the pooled weights
    top = _fit_at(X_train, y_train, data, cv.alphas_[0])
    _, W_top, _ = gram_optimum(top, X_train, y_train)
    assert np.abs(W_top - W_top.mean(0)).max() < 1e-3 * np.abs(W_top).max()
    # the chosen strength predicts better than both ends of the grid
    score = cv.score(X_test, y_test)
    for alpha in (cv.alphas_[0], cv.alphas_[-1]):
        assert score > _fit_at(X_train, y_train, data, alpha).score(X_test, y_test)
    with pytest.raises(ValueError, match="alphas must be a non-empty array"):
        GraphGuidedRegressorCV(alphas=[], task_column=0).fit(X_train, y_train)


def _fit_at(X, y, data, alpha):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return GraphGuidedRegressor(
            alpha=alpha,
            graph=data.adjacency,
            task_column=0,
            max_iter=1500,
            random_state=0,
        ).fit(X, y)
