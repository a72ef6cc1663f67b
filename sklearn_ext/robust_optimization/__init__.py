"""Robust predict-then-optimize: problems and calibrated robust policies."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.robust_optimization._conformal import ConformalRobustOptimizer
from sklearn_ext.robust_optimization._linear_problem import LinearProblem
from sklearn_ext.robust_optimization._portfolio_problem import PortfolioProblem
from sklearn_ext.robust_optimization._problems import BaseProblem
from sklearn_ext.robust_optimization._shortest_path_problem import (
    ShortestPathProblem,
)

__all__ = [
    "BaseProblem",
    "ConformalRobustOptimizer",
    "LinearProblem",
    "PortfolioProblem",
    "ShortestPathProblem",
]
