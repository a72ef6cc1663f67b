"""make_sudoku: exact generator of puzzles with unique solutions."""

import numpy as np
import pytest

from sklearn_ext.datasets import make_sudoku
from sklearn_ext.datasets._sudoku import count_solutions, sudoku_peers
from sklearn_ext.utils._sklearn_compat import InvalidParameterError


def _valid(grid, size):
    peers = sudoku_peers(size)
    return all(grid[c] not in grid[peers[c]] for c in range(size * size))


@pytest.mark.parametrize("size, n_givens", [(4, 5), (4, 8), (9, 30)])
def test_puzzles_have_one_solution_that_agrees_with_the_givens(size, n_givens):
    ds = make_sudoku(6, size=size, n_givens=n_givens, random_state=0)
    assert ds.data.shape == ds.target.shape == (6, size * size)
    assert np.all((ds.data > 0).sum(axis=1) == n_givens)
    assert np.all((ds.data == 0) | (ds.data == ds.target))
    for puzzle, solution in zip(ds.data, ds.target):
        assert set(solution) == set(range(1, size + 1)) and _valid(solution, size)
        n, found = count_solutions(puzzle, size)
        assert n == 1 and np.array_equal(found, solution)


def test_count_solutions_sees_ambiguity_and_contradiction():
    assert count_solutions(np.zeros(16, dtype=int), 4)[0] == 2  # capped at 2
    bad = np.zeros(16, dtype=int)
    bad[0] = bad[1] = 1  # two 1s in the first row
    assert count_solutions(bad, 4)[0] == 0
    # The 4 x 4 grid count is known: 288 grids.
    assert count_solutions(np.zeros(16, dtype=int), 4, limit=10_000)[0] == 288


def test_grid_ids_identify_grids_up_to_relabelling():
    ds = make_sudoku(40, size=4, n_givens=6, random_state=0)
    for i in range(40):
        for j in range(i + 1, 40):
            # Same id iff one solution is a digit relabelling of the other.
            mapping = dict(zip(ds.target[i], ds.target[j]))
            relabelled = all(
                mapping[a] == b for a, b in zip(ds.target[i], ds.target[j])
            )
            same = relabelled and len(set(mapping.values())) == 4
            assert (ds.grid_id[i] == ds.grid_id[j]) == same


def test_reproducible():
    a = make_sudoku(3, size=9, random_state=5)
    b = make_sudoku(3, size=9, random_state=5)
    np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"size": 5}, InvalidParameterError, "size"),
        ({"size": 4, "n_givens": 17}, ValueError, "exceeds the 16 cells"),
        ({"size": 4, "n_givens": 1}, ValueError, "unique solution"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_sudoku(2, random_state=0, **kwargs)
