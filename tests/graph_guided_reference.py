"""Exact optimum of the graph-guided problem with cvxpy, for tests and benchmarks.

Everything here is built from what a user passes: the estimator's constructor
parameters (``get_params()``: ``graph``, ``alpha``, ``task_column``,
``standardize``, ...) and ``X``, ``y``, ``sample_weight``. Nothing is read from
a fitted model (its ``tasks_``, ``edges_``, ``edge_weights_`` or feature
scaling), and the graph, the task labels and the scaling are parsed here by
code of their own, so that a bug in the estimator's versions of them is not
shared by the reference that checks it.
"""

import numpy as np
from scipy import sparse


def problem_from_inputs(params, X, y, sample_weight=None, classifier=False):
    """The network-lasso problem of these parameters on ``(X, y)``.

    ``params`` is a dict of the estimator's constructor parameters (or an
    estimator: its ``get_params()``). Returns a dict with ``Xs`` (the feature
    columns, standardised as ``standardize`` says: weighted mean removed when
    there is an intercept, divided by the weighted population standard
    deviation, constant columns left at scale 1), ``center``, ``scale``,
    ``task`` (each row's task index among the sorted labels), ``labels``,
    ``src``, ``dst``, ``weight`` (the edges, ``src < dst``), ``target``
    (float targets, or 0/1 for a binary classifier), ``w`` (sample weights,
    ones without them) and the penalties.
    """
    if hasattr(params, "get_params"):
        from sklearn.base import is_classifier

        classifier = classifier or is_classifier(params)
        params = params.get_params()
    X = np.asarray(X)
    n, p = X.shape
    c = params["task_column"]
    if c is None:
        labels_col = np.zeros(n, dtype=int)
        feats = np.arange(p)
    else:
        c = int(c) % p
        labels_col = X[:, c]
        feats = np.array([j for j in range(p) if j != c])
        if labels_col.dtype.kind in "fc" or labels_col.dtype == object:
            try:
                labels_col = np.array([int(round(float(v))) for v in labels_col])
            except (TypeError, ValueError):
                labels_col = labels_col.astype(str)
    labels, task = np.unique(labels_col, return_inverse=True)
    F = np.array(X[:, feats], dtype=float)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    center = scale = None
    if params.get("standardize", True):
        mean = w @ F / w.sum()
        var = w @ (F - mean) ** 2 / w.sum()
        scale = np.sqrt(var)
        scale[scale <= 1e-12 * np.maximum(1.0, np.abs(mean))] = 1.0
        if params.get("fit_intercept", True):
            center = mean
            F = F - center
        F = F / scale
    if c is None:
        src = dst = np.zeros(0, dtype=int)
        weight = np.zeros(0)
    else:
        src, dst, weight = _edges(params["graph"], labels)
    y = np.asarray(y)
    if classifier:
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError("the reference solves binary classification only")
        target = (y == classes[1]).astype(float)
    else:
        target = y.astype(float)
    return {
        "Xs": F,
        "center": center,
        "scale": scale,
        "task": task,
        "labels": labels,
        "src": src,
        "dst": dst,
        "weight": weight,
        "target": target,
        "w": w,
        "alpha": float(params["alpha"]),
        "task_alpha": float(params.get("task_alpha", 0.0)),
        "task_penalty": params.get("task_penalty", "l2"),
        "fit_intercept": params.get("fit_intercept", True),
        "classifier": classifier,
    }


def _edges(graph, labels):
    """Edges (src, dst, weight) over positions in the sorted ``labels``."""
    T = len(labels)
    if isinstance(graph, str):
        if graph == "complete":
            pairs = [(i, j, 1.0) for i in range(T) for j in range(i + 1, T)]
        elif graph == "chain":
            pairs = [(i, i + 1, 1.0) for i in range(T - 1)]
        else:
            raise ValueError(f"unknown graph {graph!r}")
    elif sparse.issparse(graph) or isinstance(graph, np.ndarray):
        A = graph.toarray() if sparse.issparse(graph) else np.asarray(graph, float)
        if A.shape != (T, T):
            raise ValueError(f"adjacency {A.shape} for {T} tasks")
        pairs = [
            (i, j, float(A[i, j]))
            for i in range(T)
            for j in range(i + 1, T)
            if A[i, j] != 0
        ]
    else:
        where = {label: i for i, label in enumerate(labels.tolist())}
        pairs = []
        for edge in graph:
            i, j = where[edge[0]], where[edge[1]]
            pairs.append(
                (min(i, j), max(i, j), float(edge[2]) if len(edge) > 2 else 1.0)
            )
        pairs = [e for e in pairs if e[2] > 0]
    if not pairs:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
    src, dst, weight = (np.array(v) for v in zip(*pairs))
    return src.astype(int), dst.astype(int), weight.astype(float)


def _penalties(prob, W):
    import cvxpy as cp

    value = 0
    if len(prob["src"]):
        norms = cp.norm(W[prob["src"]] - W[prob["dst"]], 2, axis=1)
        value = value + prob["alpha"] * (prob["weight"] @ norms)
    if prob["task_alpha"]:
        if prob["task_penalty"] == "l2":
            value = value + 0.5 * prob["task_alpha"] * cp.sum_squares(W)
        else:
            value = value + prob["task_alpha"] * cp.sum(cp.abs(W))
    return value


def _unscale(prob, W, B):
    """``(W, B)`` of the standardised features, on the original scale."""
    if prob["scale"] is not None:
        W = W / prob["scale"]
    if prob["center"] is not None:
        B = B - W @ prob["center"]
    return W, B


def cvxpy_optimum(
    params, X, y, solver="CLARABEL", sample_weight=None, classifier=False, **kwargs
):
    """Exact optimum of the problem of ``params`` on ``(X, y)``: (objective, W, B).

    ``params``: an estimator (only its ``get_params()`` is read) or a dict of
    its parameters. The loss is the squared loss, or the binary logistic loss
    for a classifier. The objective value is that of the standardised problem,
    comparable to a fitted model's ``objective(X, y, sample_weight)``; W and
    B are on the original scale of the features.
    """
    import cvxpy as cp

    prob = problem_from_inputs(params, X, y, sample_weight, classifier)
    F, task, target, w = prob["Xs"], prob["task"], prob["target"], prob["w"]
    T, d = len(prob["labels"]), F.shape[1]
    W = cp.Variable((T, d))
    B = cp.Variable(T)
    data = 0
    for t in range(T):
        rows = task == t
        z = F[rows] @ W[t] + (B[t] if prob["fit_intercept"] else 0)
        if prob["classifier"]:
            losses = cp.logistic(z) - cp.multiply(target[rows], z)
        else:
            losses = 0.5 * cp.square(z - target[rows])
        data = data + w[rows] @ losses
    objective = data / w.sum() + _penalties(prob, W)
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver, **kwargs)
    B_value = B.value if prob["fit_intercept"] else np.zeros(T)
    return (float(problem.value), *_unscale(prob, W.value, B_value))


def gram_optimum(params, X, y, solver="CLARABEL", sample_weight=None):
    """Exact optimum of the squared-loss problem from per-task sufficient statistics.

    The data term of task t is ``1/(2 sum w) (v' G_t v - 2 h_t' v + y_t' S y_t)``
    with ``G_t = X~_t' S X~_t`` and ``h_t = X~_t' S y_t`` (``X~`` with the
    intercept's column, ``S`` the sample weights), so the problem has only
    n_tasks * (d + 1) variables at any n. Returns ``(objective, W, B)`` like
    :func:`cvxpy_optimum`.
    """
    import cvxpy as cp

    prob = problem_from_inputs(params, X, y, sample_weight)
    F, task, target, w = prob["Xs"], prob["task"], prob["target"], prob["w"]
    T, d = len(prob["labels"]), F.shape[1]
    k = d + 1 if prob["fit_intercept"] else d
    V = cp.Variable((T, k))
    data, const = 0, 0.0
    for t in range(T):
        rows = task == t
        Xt = F[rows]
        if prob["fit_intercept"]:
            Xt = np.column_stack([Xt, np.ones(rows.sum())])
        wt, yt = w[rows], target[rows]
        G, h = (Xt * wt[:, None]).T @ Xt, Xt.T @ (wt * yt)
        R = np.linalg.cholesky(G + 1e-10 * max(np.trace(G), 1e-300) * np.eye(k)).T
        goal = np.linalg.solve(R.T, h)
        data = data + 0.5 * cp.sum_squares(R @ V[t] - goal)
        const += 0.5 * (wt @ (yt * yt) - goal @ goal)
    objective = (data + const) / w.sum() + _penalties(prob, V[:, :d])
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver)
    B_value = V.value[:, d] if prob["fit_intercept"] else np.zeros(T)
    return (float(problem.value), *_unscale(prob, V.value[:, :d], B_value))
