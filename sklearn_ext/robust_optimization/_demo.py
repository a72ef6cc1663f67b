"""The ``python -m sklearn_ext demo`` demo of the robust-optimisation family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

SECONDS = {
    "ConformalRobustOptimizer": 1,
}


def demo_ConformalRobustOptimizer():
    """Shortest paths on a 5x5 grid, 2,000 train + calibration.

    The baseline is the same Ridge and per-edge residual scale with the l2
    ball of split conformal prediction, its radius fixed a priori for the
    same certificate (true miscoverage <= alpha with probability 1 - delta
    over the calibration draw: the training-conditional quantile of Vovk
    2012), calibrated on as many fresh samples as the frontier used.
    """
    from scipy.stats import binom
    from sklearn.linear_model import Ridge

    from sklearn_ext.datasets import make_shortest_path
    from sklearn_ext.robust_optimization import (
        ConformalRobustOptimizer,
        ShortestPathProblem,
    )

    problem, alpha = ShortestPathProblem((5, 5)), 0.1
    X, C, coef = make_shortest_path(
        2000, degree=4, noise=0.5, return_coef=True, random_state=0
    )
    model = ConformalRobustOptimizer(
        Ridge(),
        problem,
        calibration_size=600,
        bound="fixed-sequence",
        random_state=0,
    )
    model.fit(X, C).select(max_miscoverage=alpha)
    X_test, C_test = make_shortest_path(20000, degree=4, coef=coef, random_state=1)
    X_cal, C_cal = make_shortest_path(600, degree=4, coef=coef, random_state=2)
    scale = model.scale_
    residual = (C_cal - model.estimator_.predict(X_cal)) / scale
    scores = np.sort(np.sqrt(np.sum(residual**2, axis=1)))
    n = scores.size
    # Most calibration misses m with P(Binomial(n, alpha) <= m) <= delta.
    misses = np.flatnonzero(binom.cdf(np.arange(n), n, alpha) <= model.delta)
    radius = scores[n - 1 - misses[-1]] if misses.size else np.inf
    center = model.estimator_.predict(X_test)
    ball = problem.solve_robust(
        center, radius * np.broadcast_to(scale, center.shape), "l2"
    )
    best = problem.cost(C_test, problem.solve(C_test))
    ball_regret = np.sum(problem.cost(C_test, ball) - best) / np.sum(np.abs(best))
    return {
        "data": "make_shortest_path: 5x5 grid, degree 4, 2000 train+cal",
        "metric": "test normalised regret (PyEPO) at certified miscoverage <= 0.1",
        "score": -model.score(X_test, C_test),
        "baseline": "Ridge + a-priori split-conformal l2 ball (same certificate)",
        "baseline_score": float(ball_regret),
        "greater_is_better": False,
    }
