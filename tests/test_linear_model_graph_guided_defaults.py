"""Graph-guided models at their defaults: RIP converges, the inner tolerance
follows the graph's size, the cross-validated path (regressor and classifier),
an exact reference independent of the fitted model, and graphs that name tasks
absent from X."""

import warnings

import numpy as np
import pytest
from graph_guided_reference import cvxpy_optimum, gram_optimum
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss

from sklearn_ext.datasets import make_graph_multitask
from sklearn_ext.linear_model import (
    GraphGuidedClassifier,
    GraphGuidedClassifierCV,
    GraphGuidedRegressor,
    GraphGuidedRegressorCV,
)
from sklearn_ext.linear_model._graph_guided_solver import (
    GraphProblem,
    inner_tol_auto,
    rip_step_fraction,
    step_size_auto,
)

pytest.importorskip("cvxpy")


@pytest.fixture(scope="module")
def small():
    """The benchmark's held-out problem (seed 0) at the size of its training
    half: 10 tasks, 40 rows per task, 20 features, noise 2."""
    return make_graph_multitask(
        n_tasks=10, n_groups=2, n_samples_per_task=40, noise=2.0, random_state=0
    )


def _fit_recording(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    return sum(issubclass(w.category, ConvergenceWarning) for w in caught)


@pytest.mark.parametrize("alpha", [0.05, 0.15])
def test_rip_at_its_defaults_converges(small, alpha):
    X, y = small.data, small.target
    model = GraphGuidedRegressor(
        alpha=alpha, graph=small.adjacency, task_column=0, solver="rip", random_state=0
    )
    warned = _fit_recording(model, X, y)
    f_star = gram_optimum(model, X, y)[0]
    gap = (model.objective(X, y) - f_star) / f_star
    # stopped by its own test, before max_iter, within 1e-2 of the optimum
    # (prox-SGD's default fit is at 3e-3 here)
    assert warned == 0 and model.n_iter_ < model.max_iter
    assert -1e-6 < gap < 1e-2, gap


def test_the_former_constant_rip_step_stops_at_max_iter(small):
    """What the test above guards against: RIP at 0.2 times the smoothness
    step (the former default) reaches max_iter, further from the optimum."""
    X, y = small.data, small.target
    probe = GraphGuidedRegressor(
        alpha=0.05, graph=small.adjacency, task_column=0, max_iter=1, tol=None
    ).fit(X, y)
    Xs = (X[:, 1:] - probe._center) / probe._scale
    problem = GraphProblem(
        X=Xs,
        features=slice(None),
        y=y,
        task_index=X[:, 0].astype(np.intp),
        n_tasks=10,
        n_outputs=1,
        loss="squared",
        src=probe._edges[0],
        dst=probe._edges[1],
        edge_weight=probe._edges[2],
        alpha=0.05,
    )
    eta = step_size_auto(problem, 8)
    old = GraphGuidedRegressor(
        alpha=0.05,
        graph=small.adjacency,
        task_column=0,
        solver="rip",
        eta0=0.2 * eta,
        random_state=0,
    )
    assert _fit_recording(old, X, y) == 1
    f_star = gram_optimum(old, X, y)[0]
    assert (old.objective(X, y) - f_star) / f_star > 1e-2


def test_rip_step_fraction_follows_the_scaled_radius():
    w = np.ones(3)
    assert rip_step_fraction(1.0, 0.0, w, 4.0) == 1.0
    assert rip_step_fraction(1.0, 0.1, np.zeros(0), 4.0) == 1.0
    fractions = [rip_step_fraction(1.0, a, w, 4.0) for a in (1e-4, 0.01, 0.1, 100)]
    assert fractions[0] == 1.0 and fractions[-1] == 0.1
    assert fractions[1] > fractions[2] > fractions[3]


def test_inner_tol_auto_follows_the_graph_size(small):
    assert inner_tol_auto(30, 50, 1000) == pytest.approx(0.3)
    assert inner_tol_auto(10, 20, 1000) == pytest.approx(0.3)
    assert inner_tol_auto(300, 700, 1000) == pytest.approx(0.03)
    assert inner_tol_auto(1000, 2500, 10**6) == pytest.approx(0.01)
    assert inner_tol_auto(5000, 0, 100) == pytest.approx(0.3)  # no graph, no prox
    # "auto" runs the very iterations of its value
    X, y = small.data, small.target
    params = {"graph": small.adjacency, "task_column": 0, "max_iter": 300}
    params.update(tol=None, random_state=0)
    auto = GraphGuidedRegressor(**params).fit(X, y)
    fixed = GraphGuidedRegressor(inner_tol=0.3, **params).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, fixed.coef_)
    tighter = GraphGuidedRegressor(inner_tol=0.01, **params).fit(X, y)
    assert not np.array_equal(auto.coef_, tighter.coef_)


# --- the cross-validated path -----------------------------------------------------


def test_cv_defaults_are_a_lasso_like_path():
    for cls in (GraphGuidedRegressorCV, GraphGuidedClassifierCV):
        params = cls().get_params()
        assert params["n_alphas"] == 100 and params["alphas"] is None


def test_regressor_cv_default_grid_has_100_strengths(small):
    X, y = small.data, small.target
    cv = GraphGuidedRegressorCV(
        graph=small.adjacency,
        task_column=0,
        cv=2,
        max_iter=30,
        tol=None,
        random_state=0,
    ).fit(X, y)
    assert cv.alphas_.shape == (100,) and cv.mse_path_.shape == (100, 2)
    assert np.all(np.diff(cv.alphas_) < 0)
    np.testing.assert_allclose(cv.alphas_[-1] / cv.alphas_[0], cv.eps)
    assert cv.alpha_ == cv.alphas_[np.argmin(cv.mse_path_.mean(axis=1))]


@pytest.fixture(scope="module")
def binary():
    data = make_graph_multitask(
        n_tasks=6,
        n_groups=2,
        n_samples_per_task=80,
        n_features=5,
        task_type="binary",
        random_state=0,
    )
    rng = np.random.RandomState(0)
    test = rng.rand(len(data.target)) < 0.5
    return data, test


def test_classifier_cv_path_chooses_the_held_out_log_loss_minimum(binary):
    data, test = binary
    X, y = data.data[~test], data.target[~test]
    cv = GraphGuidedClassifierCV(
        graph=data.adjacency,
        task_column=0,
        n_alphas=5,
        cv=3,
        max_iter=1500,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv.fit(X, y)
    assert cv.loss_path_.shape == (5, 3) and np.all(np.diff(cv.alphas_) < 0)
    assert cv.alpha_ == cv.alphas_[np.argmin(cv.loss_path_.mean(axis=1))]
    assert np.all(cv.loss_path_ > 0) and np.all(np.isfinite(cv.loss_path_))
    # the path's losses are log-losses: a fit at a strength of the grid, on
    # the first fold's training rows, scores its held-out rows alike
    assert cv.classes_.tolist() == [0, 1] and cv.coef_.shape == (6, 1, 5)
    # at the top of the grid every task has (nearly) the pooled weights
    top = GraphGuidedClassifier(
        alpha=cv.alphas_[0],
        graph=data.adjacency,
        task_column=0,
        max_iter=1,
        tol=None,
    )
    _, W_top, _ = cvxpy_optimum(top, X, y)
    assert np.abs(W_top - W_top.mean(0)).max() < 0.05 * np.abs(W_top).max()
    # and the chosen strength beats the smallest one on held-out log-loss
    X_te, y_te = data.data[test], data.target[test]
    low = GraphGuidedClassifier(
        alpha=cv.alphas_[-1],
        graph=data.adjacency,
        task_column=0,
        max_iter=1500,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        low.fit(X, y)
    assert (
        log_loss(y_te, cv.predict_proba(X_te))
        <= log_loss(y_te, low.predict_proba(X_te)) + 1e-3
    )


def test_classifier_cv_multiclass_and_bad_input():
    rng = np.random.RandomState(0)
    task = rng.randint(3, size=300)
    F = rng.normal(size=(300, 3))
    y = np.argmax(F @ rng.normal(size=(3, 3)) * 3, axis=1)
    X = np.column_stack([task, F])
    clf = GraphGuidedClassifierCV(
        graph="chain",
        task_column=0,
        n_alphas=3,
        cv=2,
        max_iter=300,
        tol=None,
        random_state=0,
    ).fit(X, y)
    assert clf.loss_path_.shape == (3, 2) and clf.coef_.shape == (3, 3, 3)
    assert clf.score(X, y) > 0.7
    with pytest.raises(ValueError, match="at least 2 classes"):
        GraphGuidedClassifierCV(task_column=0).fit(X, np.zeros(300))
    with pytest.raises(ValueError, match="alphas must be a non-empty array"):
        GraphGuidedClassifierCV(alphas=[], task_column=0).fit(X, y)
    assert not hasattr(GraphGuidedClassifierCV(), "partial_fit")


# --- the reference is built from the user's inputs --------------------------------


def test_reference_reads_no_fitted_state(small):
    X, y = small.data, small.target
    model = GraphGuidedRegressor(
        alpha=0.05,
        graph=small.adjacency,
        task_column=0,
        max_iter=3000,
        tol=None,
        random_state=0,
    )
    f_unfitted, W_unfitted, _ = gram_optimum(model, X, y)
    model.fit(X, y)
    # a corrupted fitted graph or scaling does not reach the reference ...
    model.edge_weights_ = model.edge_weights_ * 3
    model.edges_ = model.edges_[::-1].copy()
    model._scale = np.ones_like(model._scale)
    f_star, W_star, _ = gram_optimum(model, X, y)
    assert f_star == pytest.approx(f_unfitted, rel=1e-9)
    np.testing.assert_allclose(W_star, W_unfitted, atol=1e-7)
    # ... while the fit itself reaches it
    assert np.linalg.norm(model.coef_ - W_star) < 0.05 * np.linalg.norm(W_star)


def test_reference_parses_every_graph_form_alike(small):
    X, y = small.data, small.target
    A = small.adjacency
    rows, cols = np.nonzero(np.triu(A, 1))
    listed = [(int(s), int(t)) for s, t in zip(rows, cols)]
    base = {"alpha": 0.05, "task_column": 0}
    f_matrix = gram_optimum(GraphGuidedRegressor(graph=A, **base), X, y)[0]
    f_list = gram_optimum(GraphGuidedRegressor(graph=listed, **base), X, y)[0]
    f_raw = cvxpy_optimum(GraphGuidedRegressor(graph=listed, **base), X, y)[0]
    assert f_matrix == pytest.approx(f_list, rel=1e-9)
    assert f_matrix == pytest.approx(f_raw, rel=1e-6)
    # the task column may sit anywhere: last column, negative index
    X_last = np.column_stack([X[:, 1:], X[:, 0]])
    moved = GraphGuidedRegressor(graph=A, alpha=0.05, task_column=-1)
    assert gram_optimum(moved, X_last, y)[0] == pytest.approx(f_matrix, rel=1e-9)
    # and a weighted edge counts its weight
    heavier = [(s, t, 2.0) for s, t in listed]
    double = GraphGuidedRegressor(graph=listed, alpha=0.1, task_column=0)
    f_heavy = gram_optimum(GraphGuidedRegressor(graph=heavier, **base), X, y)[0]
    assert f_heavy == pytest.approx(gram_optimum(double, X, y)[0], rel=1e-9)


# --- bad input ------------------------------------------------------------------


def test_a_graph_with_a_task_absent_from_X_is_named():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.choice([0, 1, 3], 60), rng.normal(size=(60, 2))])
    y = rng.normal(size=60)
    A = np.ones((4, 4)) - np.eye(4)
    for cls in (GraphGuidedRegressor, GraphGuidedRegressorCV):
        with pytest.raises(ValueError, match=r"task\(s\) 2 have no sample in X"):
            cls(graph=A, task_column=0, max_iter=10).fit(X, y)
    with pytest.raises(ValueError, match="names task 2, which is not among"):
        GraphGuidedRegressor(graph=[(0, 1), (1, 2)], task_column=0).fit(X, y)
