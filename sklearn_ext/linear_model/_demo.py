"""The ``python -m sklearn_ext demo`` demos of the linear-model family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).

All three share one problem: planted task groups with few noisy samples per
task, where the task graph should beat every plain use of the task column.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

SECONDS = {
    "GraphGuidedClassifier": 1,
    "GraphGuidedClassifierCV": 7,
    "GraphGuidedRegressor": 1,
    "GraphGuidedRegressorCV": 5,
}


def demo_GraphGuidedClassifier():
    """30 binary tasks in 3 planted groups, 20 train/task.

    Against the best of three tuned plain fits that use the task column
    without the graph (see ``_plain_baselines``).
    """
    from sklearn_ext.linear_model import GraphGuidedClassifier

    return _graph_demo(
        lambda graph: GraphGuidedClassifier(
            alpha=0.02, graph=graph, task_column=0, random_state=0
        ),
        classify=True,
    )


def demo_GraphGuidedRegressor():
    """30 regression tasks in 3 planted groups, 20 train/task.

    Against the best of three ``RidgeCV`` fits that use the task column
    without the graph (see ``_plain_baselines``).
    """
    from sklearn_ext.linear_model import GraphGuidedRegressor

    return _graph_demo(
        lambda graph: GraphGuidedRegressor(
            alpha=0.1, graph=graph, task_column=0, random_state=0
        ),
        classify=False,
    )


def demo_GraphGuidedRegressorCV():
    """30 regression tasks in 3 planted groups; alpha by 2-fold CV.

    As ``demo_GraphGuidedRegressor``, the graph's strength chosen among 3
    by 2-fold cross-validation (a short path, to keep ``make demo`` within
    its minute).
    """
    from sklearn_ext.linear_model import GraphGuidedRegressorCV

    return _graph_demo(
        lambda graph: GraphGuidedRegressorCV(
            graph=graph, task_column=0, n_alphas=3, cv=2, random_state=0
        ),
        classify=False,
        extra="; 3 alphas x 2 folds",
    )


def demo_GraphGuidedClassifierCV():
    """30 binary tasks in 3 planted groups; alpha by 2-fold CV.

    As ``demo_GraphGuidedClassifier``, the graph's strength chosen among 3
    by the held-out log-loss of 2-fold cross-validation (a short path, to
    keep ``make demo`` within its minute).
    """
    from sklearn_ext.linear_model import GraphGuidedClassifierCV

    return _graph_demo(
        lambda graph: GraphGuidedClassifierCV(
            graph=graph, task_column=0, n_alphas=3, cv=2, random_state=0
        ),
        classify=True,
        extra="; 3 alphas x 2 folds",
    )


def _graph_demo(make_model, classify, extra=""):
    """Fit ``make_model(graph)`` and the plain baselines on the planted tasks."""
    from sklearn.model_selection import train_test_split

    from sklearn_ext.datasets import make_graph_multitask

    data = make_graph_multitask(
        n_samples_per_task=40,
        noise=3.0,
        group_scale=0.5,
        task_type="binary" if classify else "regression",
        random_state=0,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        data.data,
        data.target,
        test_size=0.5,
        random_state=0,
        stratify=data.data[:, 0],
    )
    model = make_model(data.adjacency).fit(X_train, y_train)
    baselines = _plain_baselines(X_train, y_train, X_test, y_test, classify)
    best = max(baselines, key=baselines.get)
    return {
        "data": "make_graph_multitask: 30 tasks, 3 groups, 20 train/task" + extra,
        "metric": "accuracy" if classify else "R2",
        "score": model.score(X_test, y_test),
        "baseline": f"{best} (best of {len(baselines)})",
        "baseline_score": baselines[best],
        "greater_is_better": True,
    }


def _plain_baselines(X_train, y_train, X_test, y_test, classify):
    """Test scores of plain scikit-learn fits of the demo's data, by name.

    Three ways to use the task column (column 0) without the graph: a model
    per task; one pooled model with the task one-hot encoded (per-task
    intercepts, shared weights); one model over the task x feature
    interactions (per-task weights under one penalty, chosen by
    cross-validation for all tasks together).
    """
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import OneHotEncoder

    if classify:
        name, per_task = "LogisticRegression", LogisticRegression

        def tuned():
            return GridSearchCV(LogisticRegression(), {"C": np.logspace(-2, 1, 5)})

    else:
        name = "RidgeCV"

        def per_task():
            return RidgeCV(alphas=np.logspace(-2, 3, 11))

        tuned = per_task
    encoder = OneHotEncoder(sparse_output=False).fit(X_train[:, :1])
    designs = {
        "pooled + task one-hot": lambda X: np.hstack(
            [encoder.transform(X[:, :1]), X[:, 1:]]
        ),
        "on task x feature": lambda X: _task_interactions(encoder, X),
    }
    scores = {}
    for label, design in designs.items():
        fit = tuned().fit(design(X_train), y_train)
        scores[f"{name} {label}"] = float(fit.score(design(X_test), y_test))
    tasks_train, tasks_test = X_train[:, 0], X_test[:, 0]
    predicted = np.empty(len(y_test), dtype=y_test.dtype)
    for t in np.unique(tasks_train):
        train, test = tasks_train == t, tasks_test == t
        fit = per_task().fit(X_train[train, 1:], y_train[train])
        predicted[test] = fit.predict(X_test[test, 1:])
    if classify:
        scores[f"{name} per task"] = float(np.mean(predicted == y_test))
    else:
        scores[f"{name} per task"] = float(r2_score(y_test, predicted))
    return scores


def _task_interactions(encoder, X):
    """Columns ``[one-hot task, one-hot task x features]`` of X (task in column 0)."""
    onehot = encoder.transform(X[:, :1])
    products = onehot[:, :, None] * X[:, None, 1:]
    return np.hstack([onehot, products.reshape(len(X), -1)])
