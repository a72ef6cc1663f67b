"""Sudoku puzzles with unique solutions, from an exact generator and solver."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, Options, validate_params

__all__ = ["count_solutions", "make_sudoku", "sudoku_peers"]


def _box(size):
    box = math.isqrt(size)
    if box * box != size or size < 4:
        raise ValueError(f"size must be a square >= 4 (4 or 9); got {size!r}.")
    return box


def sudoku_peers(size=9):
    """For each cell, the other cells of its row, column and box.

    Parameters
    ----------
    size : int, default=9
        Side of the grid (4 or 9).

    Returns
    -------
    peers : list of ndarray
        ``peers[c]`` holds the cells that must differ from cell ``c``
        (``3 * size - 2 * box - 1`` of them: 20 for 9 x 9).
    """
    box = _box(size)
    cells = np.arange(size * size)
    row, col = divmod(cells, size)
    blk = (row // box) * box + col // box
    return [
        np.flatnonzero(
            ((row == row[c]) | (col == col[c]) | (blk == blk[c])) & (cells != c)
        )
        for c in cells
    ]


def count_solutions(puzzle, size=9, limit=2):
    """Number of completions of a puzzle, counted up to ``limit``.

    Depth-first search with candidate sets, always branching on the cell with
    the fewest candidates.

    Parameters
    ----------
    puzzle : array-like of shape (size * size,)
        Digits 1..size, 0 for a blank.
    size : int, default=9
    limit : int, default=2
        Stop counting there (2 decides uniqueness).

    Returns
    -------
    n_solutions : int
    solution : ndarray of shape (size * size,) or None
        The first solution found.
    """
    peers = sudoku_peers(size)
    grid = np.asarray(puzzle, dtype=np.int64).copy()
    full = (1 << size) - 1
    found = [0, None]

    def candidates(cell):
        used = 0
        for p in peers[cell]:
            if grid[p]:
                used |= 1 << (grid[p] - 1)
        return full & ~used

    def search():
        blanks = np.flatnonzero(grid == 0)
        if blanks.size == 0:
            found[0] += 1
            if found[1] is None:
                found[1] = grid.copy()
            return found[0] >= limit
        best, best_mask, best_count = -1, 0, size + 1
        for cell in blanks:
            mask = candidates(cell)
            count = bin(mask).count("1")
            if count < best_count:
                best, best_mask, best_count = cell, mask, count
                if count <= 1:
                    break
        if best_count == 0:
            return False
        for d in range(size):
            if best_mask >> d & 1:
                grid[best] = d + 1
                if search():
                    return True
        grid[best] = 0
        return False

    search()
    return found[0], found[1]


def _random_grid(size, rng):
    """A complete grid: the pattern grid under random symmetries."""
    box = _box(size)
    r, c = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    grid = (box * (r % box) + r // box + c) % size
    # Rows within bands, bands, columns within stacks, stacks, digits,
    # transposition: each keeps every constraint.
    rows = np.concatenate(
        [b * box + rng.permutation(box) for b in rng.permutation(box)]
    )
    cols = np.concatenate(
        [b * box + rng.permutation(box) for b in rng.permutation(box)]
    )
    grid = grid[rows][:, cols]
    if rng.random_sample() < 0.5:
        grid = grid.T
    return rng.permutation(size)[grid] + 1


@validate_params(
    {
        "n_puzzles": [Interval(Integral, 1, None, closed="left")],
        "size": [Options(Integral, {4, 9})],
        "n_givens": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_sudoku(n_puzzles, *, size=9, n_givens=None, random_state=None):
    """Generate Sudoku puzzles that have exactly one solution.

    Each puzzle starts from a complete grid (a pattern grid under random
    symmetries: rows within bands, bands, columns within stacks, stacks,
    digit relabelling, transposition) and blanks cells in a random order,
    keeping a blank only while the puzzle still has a unique solution
    (checked by exact search), until ``n_givens`` digits remain. An order
    that reaches a minimal puzzle first is restarted from a new grid.

    Parameters
    ----------
    n_puzzles : int
        Number of puzzles.
    size : {4, 9}, default=9
        Side of the grid: 4 x 4 (Shidoku, 2 x 2 boxes) or 9 x 9.
    n_givens : int, default=None
        Digits left in each puzzle; None is 6 for 4 x 4 and 30 for 9 x 9.
        Fewer givens make harder puzzles (below about 25 for 9 x 9, slow to
        generate; 4 for 4 x 4 is the least with unique solutions).
    random_state : int, RandomState instance or None, default=None
        Seeds the grids and the order in which cells are blanked.

    Returns
    -------
    data : Bunch
        ``data``: ndarray of shape (n_puzzles, size * size), the puzzles
        (0 for a blank); ``target``: the solutions, same shape, digits
        1..size; ``grid_id``: an id of each solution grid up to relabelling
        of the digits (puzzles sharing it are the same grid, a leakage risk
        when they land on both sides of a split); ``size``.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_sudoku
    >>> ds = make_sudoku(3, size=4, n_givens=6, random_state=0)
    >>> ds.data.shape, int((ds.data[0] > 0).sum())
    ((3, 16), 6)
    >>> bool(((ds.data == 0) | (ds.data == ds.target)).all())
    True
    """
    size = int(size)
    _box(size)
    n_givens = (6 if size == 4 else 30) if n_givens is None else int(n_givens)
    if n_givens > size * size:
        raise ValueError(
            f"n_givens={n_givens} exceeds the {size * size} cells of the grid."
        )
    rng = check_random_state(random_state)
    puzzles, solutions = [], []
    attempts = 0
    while len(puzzles) < n_puzzles:
        attempts += 1
        if attempts > 50 * n_puzzles + 100:
            raise ValueError(
                f"could not reach n_givens={n_givens} with a unique solution; "
                "ask for more givens."
            )
        solution = _random_grid(size, rng)
        puzzle = solution.ravel().copy()
        for cell in rng.permutation(size * size):
            if (puzzle > 0).sum() == n_givens:
                break
            digit, puzzle[cell] = puzzle[cell], 0
            if count_solutions(puzzle, size)[0] != 1:
                puzzle[cell] = digit
        if (puzzle > 0).sum() == n_givens:
            puzzles.append(puzzle)
            solutions.append(solution.ravel())
    target = np.array(solutions)
    # Relabel the digits so that the first row reads 1..size: grids equal up
    # to relabelling get equal canonical forms, hence equal ids.
    canonical = np.empty_like(target)
    for k, t in enumerate(target):
        lookup = np.empty(size + 1, dtype=np.int64)
        lookup[t[:size]] = np.arange(1, size + 1)
        canonical[k] = lookup[t]
    _, grid_id = np.unique(canonical, axis=0, return_inverse=True)
    return Bunch(
        data=np.array(puzzles), target=target, grid_id=grid_id.ravel(), size=size
    )
