"""Graph-guided multi-task models: optimum, planted groups, tasks in X, bad input."""

import subprocess
import sys

import numpy as np
import pytest
from graph_guided_reference import cvxpy_optimum
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ext.base import TorchDeviceMixin, is_torch_estimator, supports_gpu
from sklearn_ext.datasets import make_graph_multitask
from sklearn_ext.linear_model import GraphGuidedClassifier, GraphGuidedRegressor
from sklearn_ext.linear_model._graph_guided_ops import _NumpyOps, _TorchOps
from sklearn_ext.linear_model._graph_guided_solver import (
    GraphProblem,
    apply_edge_proxes,
    objective,
    prox_edge,
    prox_graph,
    solve,
)
from sklearn_ext.linear_model._task_graph import parse_graph

pytest.importorskip("cvxpy")


@pytest.fixture(scope="module")
def planted():
    # 30 tasks, 3 planted groups on an SBM graph, 200 samples per task, 20
    # features; noisy enough that per-task Ridge cannot recover the groups.
    return make_graph_multitask(random_state=1, noise=6.0, group_scale=0.3)


def _ari(groups, W):
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(W)
    return adjusted_rand_score(groups, labels)


@pytest.mark.parametrize(
    "solver, params",
    [
        ("rip", {"max_iter": 10000, "edges_per_step": 2}),
        ("prox_sgd", {"max_iter": 2000}),
    ],
)
def test_last_iterate_reaches_optimum_and_recovers_groups(planted, solver, params):
    X, y = planted.data, planted.target
    model = GraphGuidedRegressor(
        alpha=0.05,
        graph=planted.adjacency,
        task_column=0,
        solver=solver,
        tol=None,
        random_state=0,
        **params,
    ).fit(X, y)
    f_star, W_star, _ = cvxpy_optimum(model, X, y)
    gap = (model.objective(X, y) - f_star) / f_star
    assert 0 <= gap + 1e-6 and gap < 0.02, gap
    assert _ari(planted.groups, model.coef_) >= 0.9
    task = X[:, 0].astype(int)
    ridge = np.array(
        [Ridge(1.0).fit(X[task == t, 1:], y[task == t]).coef_ for t in range(30)]
    )
    assert _ari(planted.groups, ridge) < 0.9


def test_binary_classifier_reaches_logistic_optimum():
    data = make_graph_multitask(
        n_tasks=8,
        n_groups=2,
        n_samples_per_task=100,
        n_features=5,
        task_type="binary",
        random_state=0,
    )
    X, y = data.data, data.target
    clf = GraphGuidedClassifier(
        alpha=0.02,
        graph=data.adjacency,
        task_column=0,
        solver="prox_sgd",
        max_iter=3000,
        tol=None,
        random_state=0,
    ).fit(X, y)
    f_star, _, _ = cvxpy_optimum(clf, X, y)
    assert (clf.objective(X, y) - f_star) / f_star < 0.02
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


def test_multiclass_classifier_shapes_and_accuracy():
    rng = np.random.RandomState(0)
    n, tasks = 600, rng.randint(4, size=600)
    X = rng.normal(size=(n, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) * 3, axis=1)
    clf = GraphGuidedClassifier(
        alpha=0.01, graph="chain", task_column=0, max_iter=3000, random_state=0
    ).fit(np.column_stack([tasks, X]), y)
    assert clf.coef_.shape == (4, 3, 3) and clf.intercept_.shape == (4, 3)
    proba = clf.predict_proba(np.column_stack([tasks, X]))
    assert proba.shape == (n, 3)
    assert clf.score(np.column_stack([tasks, X]), y) > 0.9


def _opposite_tasks(n=400, seed=0):
    """Two tasks with opposite weights: ignoring the task column gives R2 ~ 0."""
    rng = np.random.RandomState(seed)
    task = rng.randint(2, size=n)
    X = rng.normal(size=(n, 3))
    w = np.array([2.0, -1.0, 1.0])
    y = np.where(task == 0, X @ w, -X @ w) + 0.1 * rng.normal(size=n)
    return np.column_stack([X, task]), y


def test_grid_search_scores_each_sample_with_its_own_task():
    X, y = _opposite_tasks()
    search = GridSearchCV(
        GraphGuidedRegressor(task_column=-1, max_iter=2000, random_state=0),
        {"alpha": [0.0, 0.01, 10.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    # alpha=10 fuses the two tasks into one model, which cannot fit both.
    assert scores[0] > 0.95 and scores[2] < 0.2
    assert search.best_params_["alpha"] in (0.0, 0.01)
    pooled = LinearRegression().fit(X[:, :3], y).score(X[:, :3], y)
    assert pooled < 0.1  # the test would fail if scoring ignored the tasks


def test_pipeline_scales_features_and_passes_task_column_through():
    X, y = _opposite_tasks()
    X = X.copy()
    X[:, :3] = X[:, :3] * [100.0, 0.01, 1.0] + [5.0, -3.0, 0.0]
    pre = ColumnTransformer(
        [("scale", StandardScaler(), [0, 1, 2])], remainder="passthrough"
    )
    pipe = Pipeline(
        [
            ("pre", pre),
            (
                "model",
                GraphGuidedRegressor(
                    alpha=0.0, task_column=-1, max_iter=2000, random_state=0
                ),
            ),
        ]
    ).fit(X, y)
    assert pipe.score(X, y) > 0.95
    np.testing.assert_array_equal(pipe[-1].tasks_, [0, 1])


def test_task_column_by_name_with_dataframe():
    pd = pytest.importorskip("pandas")
    X, y = _opposite_tasks()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "task"])
    model = GraphGuidedRegressor(
        alpha=0.0, task_column="task", max_iter=1000, random_state=0
    ).fit(frame, y)
    assert model.task_column_index_ == 3 and model.score(frame, y) > 0.95


# --- ablations -------------------------------------------------------------------


def test_alpha_zero_is_per_task_least_squares_and_large_alpha_fuses():
    X, y = _opposite_tasks(600)
    free = GraphGuidedRegressor(
        alpha=0.0,
        task_column=-1,
        solver="prox_sgd",
        max_iter=4000,
        tol=None,
        random_state=0,
    ).fit(X, y)
    for t in (0, 1):
        rows = X[:, 3] == t
        ols = LinearRegression().fit(X[rows, :3], y[rows])
        np.testing.assert_allclose(free.coef_[t], ols.coef_, atol=0.05)
    fused = GraphGuidedRegressor(
        alpha=50.0,
        task_column=-1,
        solver="prox_sgd",
        max_iter=2000,
        tol=None,
        random_state=0,
    ).fit(X, y)
    np.testing.assert_allclose(fused.coef_[0], fused.coef_[1], atol=1e-3)


def test_graph_matters_planted_versus_random_chain(planted):
    """Coupling along the planted SBM graph beats a chain through random tasks."""
    X, y = planted.data, planted.target
    order = np.random.RandomState(0).permutation(30)
    random_chain = [(int(s), int(t)) for s, t in zip(order[:-1], order[1:])]
    scores = {}
    for name, graph in [("planted", planted.adjacency), ("chain", random_chain)]:
        model = GraphGuidedRegressor(
            alpha=0.05,
            graph=graph,
            task_column=0,
            solver="prox_sgd",
            max_iter=1500,
            tol=None,
            random_state=0,
        ).fit(X, y)
        scores[name] = _ari(planted.groups, model.coef_)
    assert scores["planted"] > scores["chain"] + 0.2


def test_average_and_objective_trace(planted):
    X, y = planted.data, planted.target
    common = {
        "alpha": 0.05,
        "graph": planted.adjacency,
        "task_column": 0,
        "max_iter": 3000,
        "tol": None,
        "random_state": 0,
        "record_objective": True,
    }
    last = GraphGuidedRegressor(**common).fit(X, y)
    avg = GraphGuidedRegressor(average=True, **common).fit(X, y)
    curve = last.objective_curve_
    assert curve.shape[1] == 3 and curve[-1, 0] == 3000
    assert np.all(np.diff(curve[:, 0]) > 0)
    assert curve[-1, 1] < curve[0, 1]
    np.testing.assert_allclose(last.objective(X, y), curve[-1, 1], rtol=1e-10)
    np.testing.assert_allclose(avg.objective(X, y), curve[-1, 2], rtol=1e-10)
    assert not np.allclose(last.coef_, avg.coef_)


def test_l1_task_penalty_zeroes_weights():
    X, y = _opposite_tasks()
    X = np.column_stack(
        [X[:, :3], np.random.RandomState(1).normal(size=(len(X), 4)), X[:, 3]]
    )
    for solver in ("rip", "prox_sgd"):
        model = GraphGuidedRegressor(
            alpha=0.01,
            task_column=-1,
            task_penalty="l1",
            task_alpha=0.05,
            solver=solver,
            max_iter=4000,
            tol=None,
            random_state=0,
        ).fit(X, y)
        assert np.mean(model.coef_[:, 3:] == 0) > 0.7, solver
        assert np.all(model.coef_[:, :3] != 0), solver


def test_same_random_state_same_fit_and_tol_stops_early(planted):
    X, y = planted.data, planted.target
    params = {
        "alpha": 0.05,
        "graph": planted.adjacency,
        "task_column": 0,
        "max_iter": 500,
        "tol": None,
        "random_state": 3,
    }
    a = GraphGuidedRegressor(**params).fit(X, y).coef_
    b = GraphGuidedRegressor(**params).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    stopped = GraphGuidedRegressor(
        alpha=0.05,
        graph=planted.adjacency,
        task_column=0,
        solver="prox_sgd",
        max_iter=50000,
        tol=1e-3,
        random_state=0,
    ).fit(X, y)
    assert stopped.n_iter_ < 50000
    with pytest.warns(ConvergenceWarning, match="max_iter=60") as caught:
        GraphGuidedRegressor(task_column=0, max_iter=60, tol=1e-12).fit(X, y)
    assert {w.filename for w in caught} == {__file__}  # the caller's line


@pytest.mark.parametrize("loss", ["squared", "logistic", "softmax"])
def test_torch_backend_runs_the_same_iterations(loss):
    """The torch path (the GPU's) draws the same samples and edges as numpy."""
    torch = pytest.importorskip("torch")
    data = make_graph_multitask(
        n_tasks=6, n_groups=2, n_samples_per_task=50, n_features=4, random_state=0
    )
    X, y = data.data, data.target
    K = 1
    if loss == "logistic":
        y = (y > np.median(y)).astype(float)
    elif loss == "softmax":
        y, K = np.digitize(y, np.quantile(y, [0.33, 0.66])), 3
    task = X[:, 0].astype(np.intp)
    src, dst, w = parse_graph(data.adjacency, np.arange(6))
    weights = np.random.RandomState(1).randint(0, 4, size=len(y)).astype(float)
    weights /= weights.mean()
    for solver, sample_weight in [("rip", None), ("prox_sgd", None), ("rip", weights)]:
        problem = GraphProblem(
            X=X,
            features=slice(1, None),
            y=y,
            task_index=task,
            n_tasks=6,
            n_outputs=K,
            loss=loss,
            src=src,
            dst=dst,
            edge_weight=w,
            alpha=0.05,
            l1=0.01,
            sample_weight=sample_weight,
        )
        results = [
            solve(
                problem,
                solver=solver,
                edges_per_step=3,
                max_iter=300,
                rng=np.random.RandomState(0),
                device=device,
            )
            for device in (None, torch.device("cpu"))
        ]
        np.testing.assert_allclose(results[0].W, results[1].W, rtol=1e-3, atol=1e-4)
        ops = _TorchOps(problem, torch.device("cpu"))
        W, B = results[0].W, results[0].B
        value = objective(problem, ops.asarray(W), ops.asarray(B), ops)
        np.testing.assert_allclose(value, objective(problem, W, B), rtol=1e-5)


def test_prox_graph_l1_gives_exact_zeros_and_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.RandomState(0)
    V = rng.normal(size=(4, 3))
    src, dst = np.array([0, 1, 2, 0]), np.array([1, 2, 3, 3])
    radii = np.array([0.3, 0.5, 0.2, 0.4])
    problem = GraphProblem(
        X=np.zeros((4, 4)),
        features=slice(1, None),
        y=np.zeros(4),
        task_index=np.arange(4),
        n_tasks=4,
        n_outputs=1,
        loss="squared",
        src=src,
        dst=dst,
        edge_weight=radii,
        alpha=1.0,
    )
    ops = _NumpyOps(problem)
    W, *_ = prox_graph(
        ops, V, radii, 0.4, np.zeros((4, 3)), 4.0, max_iter=20000, tol=1e-12
    )
    Wv = cp.Variable((4, 3))
    obj = 0.5 * cp.sum_squares(Wv - V) + 0.4 * cp.sum(cp.abs(Wv))
    obj = obj + radii @ cp.norm(Wv[src] - Wv[dst], 2, axis=1)
    cp.Problem(cp.Minimize(obj)).solve(solver="CLARABEL")
    np.testing.assert_allclose(W, Wv.value, atol=1e-5)
    np.testing.assert_array_equal(W == 0, np.abs(Wv.value) < 1e-7)


# --- exact pieces -----------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(-5, 5), min_size=3, max_size=3),
    st.lists(st.floats(-5, 5), min_size=3, max_size=3),
    st.one_of(st.just(0.0), st.floats(1e-3, 4)),
)
def test_prox_edge_satisfies_optimality(ws, wt, lam):
    """(a, b) minimises 1/2|a-ws|^2 + 1/2|b-wt|^2 + lam |a-b|: check the KKT."""
    ws, wt = np.array(ws), np.array(wt)
    a, b = prox_edge(ws, wt, lam)
    np.testing.assert_allclose(a + b, ws + wt, atol=1e-9)  # the mean is kept
    if lam == 0:
        np.testing.assert_allclose(np.hstack([a, b]), np.hstack([ws, wt]))
        return
    g = (ws - a) / lam  # must be a subgradient of |.| at a - b
    gap = np.linalg.norm(a - b)
    if gap > 1e-9:
        np.testing.assert_allclose(g, (a - b) / gap, atol=1e-6)
    else:
        assert np.linalg.norm(g) <= 1 + 1e-9


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-3, 3), min_size=4, max_size=4),
    st.floats(0.01, 2),
)
def test_prox_graph_reduces_to_prox_edge_on_one_edge(values, lam):
    V = np.array(values).reshape(2, 2)
    problem = GraphProblem(
        X=np.zeros((2, 3)),
        features=slice(1, None),
        y=np.zeros(2),
        task_index=np.array([0, 1]),
        n_tasks=2,
        n_outputs=1,
        loss="squared",
        src=np.array([0]),
        dst=np.array([1]),
        edge_weight=np.array([1.0]),
        alpha=1.0,
    )
    ops = _NumpyOps(problem)
    W, *_ = prox_graph(
        ops, V, np.array([lam]), 0.0, np.zeros((1, 2)), 2.0, max_iter=5000, tol=1e-12
    )
    a, b = prox_edge(V[0], V[1], lam)
    np.testing.assert_allclose(W, np.vstack([a, b]), atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40))
def test_vectorised_edge_rounds_equal_sequential_proxes(seed, n_edges_drawn):
    """RIP's rounds of node-disjoint edges give exactly the sequential result."""
    rng = np.random.RandomState(seed)
    T, m = 7, 12
    src = rng.randint(0, T - 1, m)
    dst = np.minimum(src + 1 + rng.randint(0, 3, m), T - 1)
    W = rng.normal(size=(T, 3))
    lam = rng.uniform(0, 0.6, m)
    edges = rng.randint(m, size=n_edges_drawn)
    expected = W.copy()
    for e in edges:
        s, t = src[e], dst[e]
        expected[s], expected[t] = prox_edge(expected[s], expected[t], lam[e])
    problem = GraphProblem(
        X=np.zeros((T, 2)),
        features=slice(1, None),
        y=np.zeros(T),
        task_index=np.arange(T),
        n_tasks=T,
        n_outputs=1,
        loss="squared",
        src=src,
        dst=dst,
        edge_weight=np.ones(m),
        alpha=1.0,
    )
    got = apply_edge_proxes(_NumpyOps(problem), W.copy(), edges, src, dst, lam)
    np.testing.assert_allclose(got, expected, atol=1e-12)


# --- graphs and bad input ---------------------------------------------------------


def test_graph_forms_agree():
    tasks = np.array([3, 5, 9])
    complete = parse_graph("complete", tasks)
    assert list(zip(*complete[:2])) == [(0, 1), (0, 2), (1, 2)]
    chain = parse_graph("chain", tasks)
    assert list(zip(*chain[:2])) == [(0, 1), (1, 2)]
    A = np.array([[0, 2.0, 0], [2.0, 0, 1.0], [0, 1.0, 0]])
    for form in (A, sparse.csr_matrix(A), [(3, 5, 2.0), (5, 9)]):
        src, dst, w = parse_graph(form, tasks)
        assert list(zip(src, dst, w)) == [(0, 1, 2.0), (1, 2, 1.0)]


@pytest.mark.parametrize(
    "graph, match",
    [
        (np.array([[1.0, 1, 0], [1, 0, 1], [0, 1, 0]]), "self-loop at task 3"),
        (np.array([[0, -1.0, 0], [-1, 0, 1], [0, 1, 0]]), "negative weight"),
        (np.array([[0, 1.0, 0], [0, 0, 1], [0, 1, 0]]), "not symmetric"),
        (np.zeros((2, 2)), r"shape \(2, 2\), but the data have 3 tasks"),
        ([(3, 7)], "names task 7, which is not among"),
        ([(3, 3)], "self-loop at task 3"),
        ([(3, 5), (5, 3)], "twice"),
        ([(3, 5, -2.0)], "non-negative"),
        ([(3,)], "pair"),
    ],
)
def test_malformed_graph_is_named(graph, match):
    with pytest.raises(ValueError, match=match):
        parse_graph(graph, np.array([3, 5, 9]))
    X = np.column_stack(
        [np.repeat([3, 5, 9], 10), np.random.RandomState(0).normal(size=30)]
    )
    with pytest.raises(ValueError, match=match):
        GraphGuidedRegressor(graph=graph, task_column=0).fit(X, X[:, 1])


def test_bad_task_columns_and_unknown_tasks():
    X, y = _opposite_tasks(60)
    with pytest.raises(ValueError, match="task_column=7 is out of range for X with 4"):
        GraphGuidedRegressor(task_column=7).fit(X, y)
    half = X.copy()
    half[0, 3] = 0.5
    with pytest.raises(ValueError, match=r"task column \(3\) must hold integer"):
        GraphGuidedRegressor(task_column=3).fit(half, y)
    with pytest.raises(ValueError, match="at least 2 columns"):
        GraphGuidedRegressor(task_column=0).fit(X[:, 3:], y)
    with pytest.raises(ValueError, match="'task', but X has no column names"):
        GraphGuidedRegressor(task_column="task").fit(X, y)
    model = GraphGuidedRegressor(task_column=3, max_iter=50, tol=None).fit(X, y)
    unseen = X[:5].copy()
    unseen[2, 3] = 7
    with pytest.raises(ValueError, match=r"task label\(s\) 7 were not seen in fit"):
        model.predict(unseen)
    with pytest.raises(ValueError, match="integer task labels"):
        model.predict(half[:3])
    bad = X.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GraphGuidedRegressor(task_column=3).fit(bad, y)
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        GraphGuidedRegressor(task_column=3).fit(bad, y)


def test_one_class_is_a_clear_error():
    X = np.random.RandomState(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="at least 2 classes"):
        GraphGuidedClassifier().fit(X, np.zeros(20))


# --- sample weights ----------------------------------------------------------------


def _mixture(classify, n_per_task=120, n_tasks=4, seed=0):
    """Tasks whose rows follow one of two linear models (part A or B) at random.

    Weighing part A up moves the optimum towards A's model, far beyond the
    seed-to-seed spread of the stochastic fits.
    """
    rng = np.random.RandomState(seed)
    task = np.repeat(np.arange(n_tasks), n_per_task)
    X = rng.normal(size=(len(task), 3))
    part_a = rng.rand(len(task)) < 0.5
    w_a, w_b = np.array([1.5, -1.0, 0.5]), np.array([-0.5, 1.0, 1.5])
    signal = np.where(part_a, X @ w_a, X @ w_b) + 0.1 * task
    if classify:
        y = (rng.rand(len(task)) < 1.0 / (1.0 + np.exp(-2.0 * signal))).astype(int)
    else:
        y = signal + 0.3 * rng.normal(size=len(task))
    return np.column_stack([task, X]), y, part_a


_WEIGHTED = {"alpha": 0.02, "graph": "chain", "task_column": 0, "tol": None}
_MODELS = [GraphGuidedRegressor, GraphGuidedClassifier]


def _coef(model):
    return model.coef_.reshape(len(model.tasks_), -1)


@pytest.mark.parametrize("cls", _MODELS)
def test_integer_weights_are_repeated_rows_at_the_optimum(cls):
    """Exact (deterministic) pieces: the objective and the cvxpy optimum."""
    X, y, part_a = _mixture(cls is GraphGuidedClassifier)
    rng = np.random.RandomState(1)
    # Integers (zeros included) that favour part A, so that they move the optimum.
    w = np.where(part_a, rng.randint(1, 4, len(y)), rng.randint(0, 2, len(y)))
    X_rep, y_rep = np.repeat(X, w, axis=0), np.repeat(y, w)
    model = cls(max_iter=1500, random_state=0, **_WEIGHTED).fit(X, y, sample_weight=w)
    # The weighted objective is the objective of the repeated rows, exactly.
    np.testing.assert_allclose(
        model.objective(X, y, sample_weight=w),
        model.objective(X_rep, y_rep),
        rtol=1e-12,
    )
    f_star, W_star, _ = cvxpy_optimum(model, X, y, sample_weight=w.astype(float))
    f_rep, W_rep, _ = cvxpy_optimum(model, X_rep, y_rep)
    np.testing.assert_allclose(f_star, f_rep, rtol=1e-7)
    np.testing.assert_allclose(W_star, W_rep, atol=1e-5)
    # The weighted fit reaches the weighted optimum, not the unweighted one.
    gap = (model.objective(X, y, sample_weight=w) - f_star) / f_star
    assert -1e-6 <= gap < 0.02, gap
    _, W_plain, _ = cvxpy_optimum(model, X, y)
    W_fit = _coef(model)
    assert np.linalg.norm(W_fit - W_star) < 0.3 * np.linalg.norm(W_plain - W_star)


@pytest.mark.parametrize("cls", _MODELS)
def test_weights_of_two_fit_like_duplicated_rows_over_seeds(cls):
    """Weighted and duplicated fits differ no more than fits of two seeds do."""
    X, y, part_a = _mixture(cls is GraphGuidedClassifier)
    w = np.where(part_a, 2, 1)
    # Shuffled, so that the duplicated rows are drawn by other random numbers.
    perm = np.random.RandomState(0).permutation(w.sum())
    X_dup, y_dup = np.repeat(X, w, axis=0)[perm], np.repeat(y, w)[perm]
    seeds = range(4)
    params = {"max_iter": 1000, **_WEIGHTED}
    weighted = [
        _coef(cls(random_state=s, **params).fit(X, y, sample_weight=w)) for s in seeds
    ]
    duplicated = [_coef(cls(random_state=s, **params).fit(X_dup, y_dup)) for s in seeds]
    spread = np.mean(
        [
            np.linalg.norm(fits[i] - fits[j])
            for fits in (weighted, duplicated)
            for i in seeds
            for j in seeds
            if i < j
        ]
    )
    cross = np.mean([np.linalg.norm(a - b) for a, b in zip(weighted, duplicated)])
    assert cross < 1.5 * spread, (cross, spread)
    mean_gap = np.linalg.norm(np.mean(weighted, 0) - np.mean(duplicated, 0))
    assert mean_gap < spread, (mean_gap, spread)
    # The weights matter: the unweighted fit lies far outside that spread.
    plain = _coef(cls(random_state=0, **params).fit(X, y))
    shift = np.linalg.norm(plain - np.mean(weighted, 0))
    assert shift > 3 * spread, (shift, spread)


@pytest.mark.parametrize("cls", _MODELS)
def test_weights_draw_rows_as_repeated_rows_would_be(cls):
    """With the repeated rows side by side, the fits agree draw for draw.

    Zero weights remove rows (here the whole part B of every task), so that
    fit equals the fit of part A alone and is far from the unweighted fit.
    """
    X, y, part_a = _mixture(cls is GraphGuidedClassifier)
    params = {"max_iter": 400, "random_state": 0, **_WEIGHTED}
    for w in (np.where(part_a, 3, 1), part_a.astype(int)):
        weighted = cls(**params).fit(X, y, sample_weight=w)
        repeated = cls(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
        np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-10)
        np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-10)
    plain = cls(**params).fit(X, y)
    assert np.abs(plain.coef_ - weighted.coef_).max() > 0.5


def test_equal_weights_are_no_weights():
    X, y, _ = _mixture(classify=False)
    params = {"max_iter": 300, "random_state": 0, **_WEIGHTED}
    plain = GraphGuidedRegressor(**params).fit(X, y)
    for weights in (np.full(len(y), 3.0), [1] * len(y)):
        fit = GraphGuidedRegressor(**params).fit(X, y, sample_weight=weights)
        np.testing.assert_array_equal(fit.coef_, plain.coef_)
    np.testing.assert_allclose(
        plain.objective(X, y, sample_weight=np.full(len(y), 0.5)), plain.objective(X, y)
    )


def test_one_class_of_positive_weight_is_a_clear_error():
    X, y, _ = _mixture(classify=True)
    with pytest.raises(ValueError, match="positive weight of at least 2 classes"):
        GraphGuidedClassifier(task_column=0).fit(X, y, sample_weight=y)


# --- task labels ---------------------------------------------------------------------


@pytest.mark.parametrize("task_type", ["regression", "binary"])
def test_string_task_labels_fit_as_their_integer_codes(task_type):
    pd = pytest.importorskip("pandas")
    data = make_graph_multitask(
        n_tasks=6,
        n_groups=2,
        n_samples_per_task=40,
        n_features=4,
        task_type=task_type,
        random_state=0,
    )
    X, y = data.data, data.target
    cls = GraphGuidedRegressor if task_type == "regression" else GraphGuidedClassifier
    names = np.array([f"site_{t}" for t in range(6)])  # sorted as the integers
    frame = pd.DataFrame(X[:, 1:], columns=["a", "b", "c", "d"])
    frame.insert(2, "site", names[X[:, 0].astype(int)])
    params = {"alpha": 0.05, "max_iter": 300, "tol": None, "random_state": 0}
    coded = cls(task_column=0, graph=data.adjacency, **params).fit(X, y)
    named = cls(task_column="site", graph=data.adjacency, **params).fit(frame, y)
    assert named.task_column_index_ == 2
    assert named.tasks_.tolist() == names.tolist()
    np.testing.assert_array_equal(named.edges_, names[coded.edges_])
    np.testing.assert_allclose(named.coef_, coded.coef_, rtol=1e-12, atol=1e-15)
    output = "predict" if task_type == "regression" else "decision_function"
    np.testing.assert_allclose(
        getattr(named, output)(frame), getattr(coded, output)(X), rtol=1e-12, atol=1e-12
    )
    # An object array, and edges listed by name, give the same fit.
    edges = [(names[s], names[t]) for s, t in coded.edges_]
    as_objects = frame.to_numpy(dtype=object)
    listed = cls(task_column=2, graph=edges, **params).fit(as_objects, y)
    np.testing.assert_allclose(listed.coef_, coded.coef_, rtol=1e-12, atol=1e-15)
    # Tasks that fit did not see are named.
    unseen = frame.iloc[:4].copy()
    unseen.iloc[1, 2] = "site_9"
    with pytest.raises(ValueError, match=r"task label\(s\) 'site_9' were not seen"):
        named.predict(unseen)
    with pytest.raises(ValueError, match=r"task label\(s\) 0, 1, .* not seen in fit"):
        listed.predict(np.column_stack([X[:, 1:3], X[:, 0], X[:, 3:]]))
    with pytest.raises(ValueError, match=r"task label\(s\) 'site_0', .* not seen"):
        coded.predict(frame.to_numpy(dtype=object)[:, [2, 0, 1, 3, 4]])


def test_bad_task_labels_are_named():
    X = np.column_stack(
        [np.array(["a", "b"] * 10, dtype=object), np.arange(20.0)]
    ).astype(object)
    y = np.arange(20.0)
    mixed = X.copy()
    mixed[3, 0] = 4
    with pytest.raises(ValueError, match="mixes strings and numbers"):
        GraphGuidedRegressor(task_column=0).fit(mixed, y)
    missing = X.copy()
    missing[3, 0] = None
    with pytest.raises(ValueError, match="holds None, which is neither"):
        GraphGuidedRegressor(task_column=0).fit(missing, y)
    nan_feature = X.copy()
    nan_feature[5, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        GraphGuidedRegressor(task_column=0).fit(nan_feature, y)
    text_feature = X.copy()
    text_feature[5, 1] = "oops"
    with pytest.raises(ValueError, match="could not convert string to float"):
        GraphGuidedRegressor(task_column=0).fit(text_feature, y)
    with pytest.raises(ValueError, match="names task 'c', which is not among"):
        GraphGuidedRegressor(task_column=0, graph=[("a", "c")]).fit(X, y)


# --- backend -------------------------------------------------------------------------


def test_backend_kind():
    for cls in _MODELS:
        assert issubclass(cls, TorchDeviceMixin) and cls._module_attributes == ()
        assert supports_gpu(cls) and not is_torch_estimator(cls)


def test_numpy_path_never_imports_torch():
    code = (
        "import sys, numpy as np;"
        "from sklearn_ext.linear_model import GraphGuidedRegressor as G;"
        "X = np.column_stack([np.arange(40) % 2, np.random.RandomState(0).rand(40)]);"
        "fits = [G(task_column=0, device=d, max_iter=20, tol=None).fit(X, X[:, 1])"
        " for d in ('auto', 'cpu')];"
        "[f.predict(X) for f in fits];"
        "print([f.device_ for f in fits], 'torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["['cpu',", "'cpu']", "False"]


def test_missing_device_is_named():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    X, y = _opposite_tasks(40)
    with pytest.raises(ValueError, match="'device' parameter is 'cuda'"):
        GraphGuidedRegressor(device="cuda", max_iter=5).fit(X, y)


def test_verbose_shows_a_labelled_progress_bar(capsys):
    X, y = _opposite_tasks(40)
    GraphGuidedRegressor(task_column=-1, max_iter=20, tol=None, verbose=1).fit(X, y)
    GraphGuidedClassifier(
        solver="rip", task_column=-1, max_iter=20, tol=None, verbose=1
    ).fit(X, y > 0)
    err = capsys.readouterr().err
    assert "GraphGuidedRegressor: prox-SGD" in err
    assert "GraphGuidedClassifier: RIP" in err
    GraphGuidedRegressor(task_column=-1, max_iter=20, tol=None).fit(X, y)
    assert capsys.readouterr().err == ""
