"""Coordination: agents that solve local problems and agree through a sheaf."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib

from sklearn_ext.coordination._puzzles import (
    SheafADMMMazeSolver,
    SheafADMMSudokuSolver,
    maze_graph,
    sudoku_graph,
)
from sklearn_ext.coordination._sheaf_admm import SheafADMMClassifier, patch_grid

# The differentiable layer is a torch module: it loads on first access, so
# that the family (and the estimator registry) imports without torch.
_LAYER = {"SheafADMM": "_sheaf_layer", "SheafADMMStates": "_sheaf_layer"}

__all__ = [
    "SheafADMM",
    "SheafADMMClassifier",
    "SheafADMMMazeSolver",
    "SheafADMMStates",
    "SheafADMMSudokuSolver",
    "maze_graph",
    "patch_grid",
    "sudoku_graph",
]


def __getattr__(name):
    if name in _LAYER:
        module = importlib.import_module(f"sklearn_ext.coordination.{_LAYER[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'sklearn_ext.coordination' has no attribute {name!r}")
