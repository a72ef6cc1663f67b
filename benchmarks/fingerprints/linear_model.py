"""Fingerprints of the linear_model family's benchmarks (see the package docstring)."""

from ._common import concat as _concat


def graph_guided():
    """Both solvers of ``GraphGuidedRegressor`` on a small planted problem.

    The benchmark's configuration (``alpha=0.05``, ``tol=None``, the
    theory's steps, ``record_objective=True`` for the rates) with both
    solvers and, where the estimator has them, the speed part's variants
    (``standardize=False``; RIP with uniform edges and without the edge
    memory); a default fit with its stopping test; the objective of each fit.
    """
    import warnings

    from sklearn_ext.datasets import make_graph_multitask
    from sklearn_ext.linear_model import GraphGuidedRegressor

    data = make_graph_multitask(
        n_tasks=12,
        n_groups=3,
        n_samples_per_task=50,
        n_features=6,
        noise=1.0,
        random_state=1,
    )
    X, y = data.data, data.target
    known = GraphGuidedRegressor().get_params()
    variants = [{"solver": "prox_sgd"}, {"solver": "rip"}]
    if "standardize" in known:
        variants += [
            {"solver": "prox_sgd", "standardize": False},
            {"solver": "rip", "standardize": False},
            {
                "solver": "rip",
                "standardize": False,
                "edge_sampling": "uniform",
                "edge_memory": False,
            },
        ]
    common = {"alpha": 0.05, "graph": data.adjacency, "task_column": 0}
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for params in variants:
            model = GraphGuidedRegressor(
                max_iter=300,
                tol=None,
                record_objective=True,
                random_state=0,
                **common,
                **params,
            ).fit(X, y)
            out += [model.coef_, model.intercept_, model.objective_curve_[:, 1:]]
        model = GraphGuidedRegressor(random_state=0, **common).fit(X, y)
        out += [model.n_iter_, model.coef_, model.objective(X, y)]
    return _concat(*out)


FINGERPRINTS = {
    "graph_guided": graph_guided,
}
