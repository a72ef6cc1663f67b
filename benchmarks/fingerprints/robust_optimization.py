"""Fingerprints of the robust_optimization family's benchmarks (see the package
docstring)."""

from ._common import concat as _concat


def conformal_robust():
    """``ConformalRobustOptimizer`` on the shortest path, a portfolio and an LP.

    Ridge on the benchmark's polynomial shortest-path costs (degree 4, noise
    half-width 0.5): the frontier (levels, empirical values and bounds) at the
    defaults and, where the estimator has them, under every ``bound``; the
    level ``select(max_miscoverage=0.1)`` picks and its decisions; the robust
    decisions of the portfolio and of a small LP (the batched barrier for l2
    sets).
    """
    import numpy as np
    from sklearn.linear_model import Ridge

    from sklearn_ext.datasets import make_shortest_path
    from sklearn_ext.robust_optimization import (
        ConformalRobustOptimizer,
        LinearProblem,
        PortfolioProblem,
        ShortestPathProblem,
    )

    grid = ShortestPathProblem((5, 5))
    X, C = make_shortest_path(800, 5, degree=4, noise=0.5, random_state=0)
    known = ConformalRobustOptimizer(Ridge()).get_params()
    settings = [{}]
    if "bound" in known:
        settings += [
            {"bound": b} for b in ("simultaneous", "fixed-sequence", "ltt-bonferroni")
        ]
    out = []
    for kw in settings:
        model = ConformalRobustOptimizer(Ridge(), grid, random_state=0, **kw)
        try:
            model.fit(X[:600], C[:600])
        except ImportError:  # fixed-sequence needs MAPIE (the conformal extra)
            continue
        front = model.frontier_
        out += [
            model.levels_,
            front["miscoverage"],
            front["miscoverage_upper"],
            front["regret"],
            front["regret_upper"],
        ]
        model.select(max_miscoverage=0.1)
        paths = model.predict(X[600:650])  # 0/1 edge indicators: one number each
        out += [model.level_, model.radius_, paths @ np.arange(1, grid.n_params + 1)]
    rng = np.random.default_rng(0)
    returns = rng.normal(0.05, 0.2, size=(20, 6))
    half = rng.uniform(0.05, 0.3, size=returns.shape)
    portfolio = PortfolioProblem(6)
    out += [portfolio.solve_robust(returns, half, "l2")]
    A_ub = rng.uniform(0, 1, (4, 6))
    lp = LinearProblem(
        A_ub=A_ub,
        b_ub=0.5 * A_ub.sum(1),
        A_eq=np.ones((1, 6)),
        b_eq=np.array([1.8]),
        bounds=(0, 1),
    )
    costs = rng.normal(size=(20, 6))
    for norm in ("linf", "l2"):
        W = lp.solve_robust(costs, half, norm)
        out += [lp.cost(costs, W)]
    return _concat(*out)


FINGERPRINTS = {
    "conformal_robust": conformal_robust,
}
