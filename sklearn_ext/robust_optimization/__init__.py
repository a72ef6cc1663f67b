"""Robust predict-then-optimize: problems and calibrated robust policies."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.robust_optimization._conformal import ConformalRobustOptimizer
from sklearn_ext.robust_optimization._problems import (
    BaseProblem,
    LinearProblem,
    PortfolioProblem,
    ShortestPathProblem,
)

__all__ = [
    "BaseProblem",
    "ConformalRobustOptimizer",
    "LinearProblem",
    "PortfolioProblem",
    "ShortestPathProblem",
]
