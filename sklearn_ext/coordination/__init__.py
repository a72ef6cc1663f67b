"""Coordination: agents that solve local problems and agree through a sheaf."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.coordination._puzzles import (
    SheafADMMMazeSolver,
    SheafADMMSudokuSolver,
    maze_graph,
    sudoku_graph,
)
from sklearn_ext.coordination._sheaf_admm import SheafADMMClassifier, patch_grid

__all__ = [
    "SheafADMMClassifier",
    "SheafADMMMazeSolver",
    "SheafADMMSudokuSolver",
    "maze_graph",
    "patch_grid",
    "sudoku_graph",
]
