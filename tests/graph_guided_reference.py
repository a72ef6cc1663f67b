"""Exact optimum of the graph-guided problem with cvxpy, for tests and benchmarks."""

import numpy as np


def cvxpy_optimum(model, X, y, solver="CLARABEL", sample_weight=None, **solver_kwargs):
    """Solve the fitted ``model``'s problem exactly; return (objective, W, B).

    Uses the model's tasks, edges, penalties, feature scaling and loss
    (squared or binary logistic), so the value is directly comparable to
    ``model.objective(X, y, sample_weight=sample_weight)``: with weights, the
    data term is the weighted mean of the losses. W and B are returned on the
    original scale of the features.
    """
    import cvxpy as cp

    c = model.task_column_index_
    feats = np.delete(np.arange(X.shape[1]), c)
    task = np.searchsorted(model.tasks_, X[:, c].astype(int))
    X, unscale = _standardised(model, X, feats)
    T, d = len(model.tasks_), len(feats)
    W = cp.Variable((T, d))
    B = cp.Variable(T)
    data = 0
    for t in range(T):
        rows = task == t
        z = X[rows][:, feats] @ W[t] + (B[t] if model.fit_intercept else 0)
        if getattr(model, "_loss", "squared") == "squared":
            losses = 0.5 * cp.square(z - y[rows])
        else:
            yt = model._encode_targets(y[rows])
            losses = cp.logistic(z) - cp.multiply(yt, z)
        if sample_weight is None:
            data = data + cp.sum(losses)
        else:
            data = data + sample_weight[rows] @ losses
    n = X.shape[0] if sample_weight is None else sample_weight.sum()
    objective = data / n
    src = np.searchsorted(model.tasks_, model.edges_[:, 0])
    dst = np.searchsorted(model.tasks_, model.edges_[:, 1])
    if len(src):
        diffs = W[src] - W[dst]
        norms = cp.norm(diffs, 2, axis=1)
        objective = objective + model.alpha * (model.edge_weights_ @ norms)
    if model.task_alpha:
        if model.task_penalty == "l2":
            objective = objective + 0.5 * model.task_alpha * cp.sum_squares(W)
        else:
            objective = objective + model.task_alpha * cp.sum(cp.abs(W))
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver, **solver_kwargs)
    return (float(problem.value), *unscale(W.value, B.value))


def _standardised(model, X, feats):
    """X with the model's feature scaling applied, and the map back to the
    original scale of ``(W, B)`` (identity for ``standardize=False``)."""
    center = getattr(model, "_center", None)
    scale = getattr(model, "_scale", None)
    X = np.array(X, dtype=float)
    if center is not None:
        X[:, feats] -= center
    if scale is not None:
        X[:, feats] /= scale

    def unscale(W, B):
        if scale is not None:
            W = W / scale
        if center is not None:
            B = B - W @ center
        return W, B

    return X, unscale


def gram_optimum(model, X, y, solver="CLARABEL"):
    """Exact optimum of the squared-loss problem from per-task sufficient statistics.

    The data term of task t is ``1/(2n) (w~' G_t w~ - 2 h_t' w~ + |y_t|^2)`` with
    ``G_t = X~_t' X~_t`` and ``h_t = X~_t' y_t`` (``X~`` with the intercept's
    column), so the problem has only n_tasks * (d + 1) variables at any n. Returns
    ``(objective, W, B)`` like :func:`cvxpy_optimum`.
    """
    import cvxpy as cp

    c = model.task_column_index_
    feats = np.delete(np.arange(X.shape[1]), c)
    task = np.searchsorted(model.tasks_, X[:, c].astype(int))
    X, unscale = _standardised(model, X, feats)
    T, d, n = len(model.tasks_), len(feats), X.shape[0]
    V = cp.Variable((T, d + 1))
    data, const = 0, 0.0
    for t in range(T):
        rows = task == t
        Xt = np.column_stack([X[rows][:, feats], np.ones(rows.sum())])
        G, h = Xt.T @ Xt, Xt.T @ y[rows]
        R = np.linalg.cholesky(G + 1e-10 * np.trace(G) * np.eye(d + 1)).T
        target = np.linalg.solve(R.T, h)
        data = data + 0.5 * cp.sum_squares(R @ V[t] - target)
        const += 0.5 * (y[rows] @ y[rows] - target @ target)
    objective = (data + const) / n
    src = np.searchsorted(model.tasks_, model.edges_[:, 0])
    dst = np.searchsorted(model.tasks_, model.edges_[:, 1])
    if len(src):
        W = V[:, :d]
        objective = objective + model.alpha * (
            model.edge_weights_ @ cp.norm(W[src] - W[dst], 2, axis=1)
        )
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver)
    return (float(problem.value), *unscale(V.value[:, :d], V.value[:, d]))
