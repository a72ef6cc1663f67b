"""Searches run on a dask.distributed cluster through joblib's dask backend."""

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def _search():
    from toy_estimators import ToyTorchRegressor

    grid = {"hidden": [4, 16], "learning_rate_init": [1e-2, 3e-2]}
    return GridSearchCV(
        ToyTorchRegressor(max_iter=30, device="cpu", random_state=0),
        grid,
        cv=3,
        n_jobs=-1,
    )


def test_grid_search_through_dask_matches_local_run(client):
    import joblib
    from sklearn.datasets import make_regression

    X, y = make_regression(120, 4, noise=0.5, random_state=0)
    # Let the worker processes import the tests' modules (upload_file would also
    # re-import them here, replacing the classes this process already holds).
    tests_dir = str(Path(__file__).parent)
    client.run(lambda: sys.path.insert(0, tests_dir))
    with distributed.get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
        remote = _search().fit(X, y)
    # The 4 candidates x 3 folds ran as tasks on the cluster's worker processes.
    workers = {t["worker"] for t in tasks.data}
    assert len(tasks.data) >= 12 and workers <= set(client.scheduler_info()["workers"])
    local = _search().set_params(n_jobs=1).fit(X, y)
    assert remote.best_params_ == local.best_params_
    np.testing.assert_allclose(
        remote.cv_results_["mean_test_score"],
        local.cv_results_["mean_test_score"],
        rtol=1e-6,
    )


def _ipbt(n_jobs):
    from scipy.stats import loguniform
    from sklearn.linear_model import SGDClassifier

    from sklearn_ext.model_selection import IPBTSearchCV

    return IPBTSearchCV(
        SGDClassifier(learning_rate="constant", random_state=0),
        {"eta0": loguniform(1e-4, 1e-1), "alpha": loguniform(1e-6, 1e-2)},
        population_size=4,
        budget=4 * 6,
        n_jobs=n_jobs,
        random_state=0,
    )


def test_ipbt_population_trains_on_dask_workers(client):
    """Each member's interval is a task on the cluster; results equal a local run."""
    import joblib
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X[:500] / 16.0
    y = y[:500]
    with distributed.get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
        remote = _ipbt(n_jobs=-1).fit(X, y)
    workers = {t["worker"] for t in tasks.data}
    # joblib batches member tasks, but every ready step dispatches at least one.
    n_steps = len(set(remote.history_["ready_step"].tolist()))
    assert len(tasks.data) >= n_steps
    assert workers <= set(client.scheduler_info()["workers"])
    local = _ipbt(n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(remote.history_["score"], local.history_["score"])
    assert remote.best_params_ == local.best_params_
