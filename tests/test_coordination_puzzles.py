"""Sheaf-ADMM puzzle solvers: Sudoku and mazes (behaviour, ablation, contract)."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from sklearn_ext.coordination import (
    SheafADMMMazeSolver,
    SheafADMMSudokuSolver,
    maze_graph,
    sudoku_graph,
)
from sklearn_ext.datasets import make_mazes, make_sudoku
from sklearn_ext.datasets._mazes import maze_shortest_path
from sklearn_ext.datasets._sudoku import sudoku_peers
from sklearn_ext.utils._sklearn_compat import InvalidParameterError

SMALL = SheafADMMSudokuSolver._get_test_params()


@pytest.fixture(scope="module")
def shidoku():
    """4 x 4 puzzles split so that no solution grid is on both sides."""
    ds = make_sudoku(700, size=4, n_givens=6, random_state=0)
    test = np.isin(ds.grid_id, np.unique(ds.grid_id)[::4])
    return ds.data[~test], ds.target[~test], ds.data[test], ds.target[test]


@pytest.mark.parametrize("size", [4, 9])
def test_sudoku_graph_joins_exactly_the_peers(size):
    edges, types = sudoku_graph(size)
    peers = sudoku_peers(size)
    for cell in range(size * size):
        joined = set(edges[edges[:, 0] == cell, 1]) | set(edges[edges[:, 1] == cell, 0])
        assert joined == set(peers[cell])
    row = edges // size
    assert np.all((row[:, 0] == row[:, 1]) == (types == 0))


def test_maze_graph_is_the_four_neighbour_grid():
    edges, types = maze_graph((3, 4))
    assert len(edges) == 3 * 3 + 2 * 4
    step = edges[:, 1] - edges[:, 0]
    assert np.all(step[types == 0] == 1) and np.all(step[types == 1] == 4)


def test_sudoku_solver_solves_held_out_grids_and_needs_coordination(shidoku):
    X_tr, y_tr, X_te, y_te = shidoku
    solver = SheafADMMSudokuSolver(max_iter=30, random_state=0).fit(X_tr, y_tr)
    solved = solver.score(X_te, y_te)
    # Without coordination (one ADMM iteration per round from a zero
    # consensus: no agent hears its peers) a cell cannot see the givens it
    # must avoid.
    alone = SheafADMMSudokuSolver(
        n_admm_iter=1, carry_consensus=False, max_iter=30, random_state=0
    )
    alone_solved = alone.fit(X_tr, y_tr).score(X_te, y_te)
    assert solved > 0.6
    assert solved > alone_solved + 0.4
    pred = solver.predict(X_te)
    assert np.all(pred[X_te > 0] == X_te[X_te > 0])
    proba = solver.predict_proba(X_te[:3])
    assert proba.shape == (3, 16, 4)
    np.testing.assert_allclose(proba.sum(axis=-1), 1.0)


def test_states_expose_every_round(shidoku):
    X_tr, y_tr, X_te, _ = shidoku
    solver = SheafADMMSudokuSolver(**SMALL, random_state=0).fit(X_tr[:50], y_tr[:50])
    states = solver.admm_states(X_te[:5])
    for name in ("primal_residual", "disagreement", "dual_norm"):
        assert states[name].shape == (2, 2, 5)
        assert np.all(np.isfinite(states[name]))


def test_maze_shortest_path_is_the_unique_tree_path():
    ds = make_mazes(20, rooms=(4, 5), random_state=3)
    assert ds.shape == (9, 11)
    for maze, path in zip(ds.data, ds.target):
        # A perfect maze: rooms + (rooms - 1) passages are open.
        assert np.sum(maze > 0) == 2 * 20 - 1
        assert np.all(maze[path == 1] > 0)
        np.testing.assert_array_equal(maze_shortest_path(maze, ds.shape), path)
        # Start and goal are path ends: one path neighbour each.
        grid = path.reshape(ds.shape)
        for code in (2, 3):
            r, c = divmod(int(np.flatnonzero(maze == code)[0]), ds.shape[1])
            around = grid[r - 1, c] + grid[r + 1, c] + grid[r, c - 1] + grid[r, c + 1]
            assert around == 1


def test_maze_solver_keeps_walls_off_the_path():
    ds = make_mazes(60, rooms=(2, 2), random_state=0)
    solver = SheafADMMMazeSolver(**SMALL, random_state=0).fit(ds.data, ds.target)
    pred = solver.predict(ds.data)
    assert pred.shape == ds.data.shape and np.all(pred[ds.data == 0] == 0)
    assert solver.maze_shape_ == (5, 5)


def test_contract_clone_pickle_grid_search(shidoku):
    X_tr, y_tr, X_te, y_te = shidoku
    solver = SheafADMMSudokuSolver(**SMALL, random_state=0)
    with pytest.raises(NotFittedError):
        solver.predict(X_te)
    assert clone(solver).get_params() == solver.get_params()
    solver.fit(X_tr[:80], y_tr[:80])
    again = pickle.loads(pickle.dumps(solver))
    np.testing.assert_array_equal(again.predict(X_te), solver.predict(X_te))
    search = GridSearchCV(solver, {"n_rounds": [1, 2]}, cv=2).fit(X_tr[:80], y_tr[:80])
    assert search.best_params_["n_rounds"] in (1, 2)
    with pytest.raises(InvalidParameterError, match="n_admm_iter"):
        SheafADMMSudokuSolver(n_admm_iter=0).fit(X_tr, y_tr)


def test_warm_start_continues(shidoku):
    X_tr, y_tr, _, _ = shidoku
    solver = SheafADMMSudokuSolver(**{**SMALL, "max_iter": 1}, warm_start=True)
    solver.fit(X_tr[:40], y_tr[:40])
    solver.fit(X_tr[:40], y_tr[:40])
    assert solver.n_iter_ == 2 and len(solver.loss_curve_) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"n_admm_iter": 3},
        {"rho": 2.0},
        {"learn_sheaf": False},
        {"carry_consensus": False},
        {"n_rounds": 3},
    ],
)
def test_warm_start_refuses_a_changed_architecture(shidoku, change):
    X_tr, y_tr, _, _ = shidoku
    solver = SheafADMMSudokuSolver(**{**SMALL, "max_iter": 1}, warm_start=True)
    solver.fit(X_tr[:20], y_tr[:20])
    before = [p.detach().clone() for p in solver.module_.parameters()]
    (name,) = change
    with pytest.raises(ValueError, match=f"{name}: .* changed since that fit"):
        solver.set_params(**change).fit(X_tr[:20], y_tr[:20])
    # The fitted network is left as it was; warm_start=False fits anew.
    for p, q in zip(solver.module_.parameters(), before):
        assert np.array_equal(p.detach().numpy(), q.numpy())
    solver.set_params(warm_start=False).fit(X_tr[:20], y_tr[:20])
    assert solver.n_iter_ == 1


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda X, y: (X[:, :15], y[:, :15]), "16 .* or 81 .* X has 15 columns"),
        (lambda X, y: (np.where(X == 4, 5, X), y), "X holds 5, outside 0..4"),
        (lambda X, y: (X - 0.5, y), "integer codes"),
        (lambda X, y: (X, np.where(y == 1, 0, y)), "y holds 0, outside 1..4"),
        (lambda X, y: (X, np.roll(y, 1, axis=1)), "disagrees with the given"),
        (lambda X, y: (X, y[:, :8]), "one entry per cell"),
    ],
)
def test_bad_sudoku_input_is_named(shidoku, change, match):
    X, y = change(shidoku[0][:20].astype(float), shidoku[1][:20])
    X_before = X.copy()
    with pytest.raises(ValueError, match=match):
        SheafADMMSudokuSolver(**SMALL).fit(X, y)
    np.testing.assert_array_equal(X, X_before)


@pytest.mark.parametrize(
    "cells, unit",
    [((0, 3), "row 0"), ((0, 12), "column 0"), ((0, 5), "box 0")],
)
def test_conflicting_givens_are_refused(shidoku, cells, unit):
    # Puzzle 3 gives the digit 2 twice in one row, column or box (the two
    # cells share only that unit): it has no solution.
    X, y = shidoku[0][:20].astype(float), shidoku[1][:20]
    X[3, list(cells)] = 2
    X_before = X.copy()
    match = f"puzzle 3 gives the digit 2 2 times in {unit} .*conflict"
    with pytest.raises(ValueError, match=match):
        SheafADMMSudokuSolver(**SMALL).fit(X, y)
    np.testing.assert_array_equal(X, X_before)


def test_bad_maze_input_is_named():
    ds = make_mazes(10, rooms=(2, 3), random_state=0)
    X, y = ds.data, ds.target
    with pytest.raises(ValueError, match="not a square number: give maze_shape"):
        SheafADMMMazeSolver(**SMALL).fit(X, y)
    solver = SheafADMMMazeSolver(**SMALL, maze_shape=(5, 7))
    with pytest.raises(ValueError, match=r"maze_shape=\(7, 5\) has 35 pixels"):
        clone(solver).set_params(maze_shape=(7, 5)).fit(X[:, :-1], y[:, :-1])
    two_starts = X.copy()
    two_starts[0, np.flatnonzero(X[0] == 1)[0]] = 2
    with pytest.raises(ValueError, match="maze 0 has 2 start pixels"):
        solver.fit(two_starts, y)
    on_wall = y.copy()
    on_wall[:, 0] = 1
    with pytest.raises(ValueError, match="path pixel on a wall"):
        solver.fit(X, on_wall)
    solver.fit(X, y)
    with pytest.raises(ValueError, match="X holds 7, outside 0..3"):
        solver.predict(np.where(X == 1, 7, X))
