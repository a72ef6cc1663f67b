"""The ``python -m sklearn_ext demo`` demos of the coordination family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

SECONDS = {
    "SheafADMMClassifier": 7,
    "SheafADMMMazeSolver": 11,
    "SheafADMMSudokuSolver": 9,
}


def demo_SheafADMMClassifier():
    """load_digits (8x8), 20% to train, 80% held out.

    359 of the 1,797 digits train (a small training set keeps the demo
    short). The baseline is the strongest plain scikit-learn classifier we
    found for digits: an RBF ``SVC`` with ``C`` and ``gamma`` chosen by
    5-fold ``GridSearchCV``; k-nearest neighbours, a cross-validated logistic
    regression and gradient boosting all score lower on the held-out digits.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.svm import SVC

    from sklearn_ext.coordination import SheafADMMClassifier

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.8, random_state=0)
    ours = SheafADMMClassifier(random_state=0).fit(X_tr, y_tr).score(X_te, y_te)
    svc = GridSearchCV(SVC(), {"C": [1, 10, 100], "gamma": ["scale", 1e-3, 3e-4]})
    return {
        "data": f"load_digits (8x8), {len(X_tr)} train, {len(X_te)} test",
        "metric": "accuracy",
        "score": ours,
        "baseline": "SVC (RBF), C and gamma by 5-fold GridSearchCV",
        "baseline_score": svc.fit(X_tr, y_tr).score(X_te, y_te),
        "greater_is_better": True,
    }


def demo_SheafADMMSudokuSolver():
    """4x4 Sudoku puzzles, 6 givens, held-out solution grids.

    No plain scikit-learn estimator solves puzzles: the baseline is a
    k-nearest-neighbour classifier per cell on the one-hot givens.
    """
    from sklearn_ext.coordination import SheafADMMSudokuSolver
    from sklearn_ext.datasets import make_sudoku

    ds = make_sudoku(300, size=4, n_givens=6, random_state=0)
    # Leak-free split: no solution grid (up to relabelling) on both sides.
    test = np.isin(ds.grid_id, np.unique(ds.grid_id)[::4])
    solver = SheafADMMSudokuSolver(random_state=0)
    ours = solver.fit(ds.data[~test], ds.target[~test]).score(
        ds.data[test], ds.target[test]
    )
    return {
        "data": "make_sudoku 4x4, 6 givens, held-out solution grids",
        "metric": "puzzles solved exactly",
        "score": ours,
        "baseline": "KNeighborsClassifier per cell (no plain scikit-learn solver)",
        "baseline_score": _knn_per_cell_solve_rate(
            ds.data[~test], ds.target[~test], ds.data[test], ds.target[test]
        ),
        "greater_is_better": True,
    }


def _knn_per_cell_solve_rate(X_tr, y_tr, X_te, y_te):
    """Solve rate of a one-hot k-nearest-neighbour classifier, cell by cell."""
    from sklearn.multioutput import MultiOutputClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(
        OneHotEncoder(handle_unknown="ignore"),
        MultiOutputClassifier(KNeighborsClassifier(5)),
    ).fit(X_tr, y_tr)
    pred = np.where(X_te > 0, X_te, model.predict(X_te))
    return float(np.mean(np.all(pred == y_te, axis=1)))


def demo_SheafADMMMazeSolver():
    """Mazes of 2x3 rooms, 100 to train, new mazes to test.

    The test mazes that repeat a training maze are dropped, so every test
    maze is new. 2 x 3 rooms (5 x 7 pixels) and 100 training mazes keep the
    demo short; the solver generalises better with more (see the user guide
    and ``benchmarks/bench_sheaf_admm.py``). No plain scikit-learn estimator
    finds paths: the baseline is a random forest per pixel.
    """
    from sklearn.ensemble import RandomForestClassifier

    from sklearn_ext.coordination import SheafADMMMazeSolver
    from sklearn_ext.datasets import make_mazes

    train = make_mazes(100, rooms=(2, 3), random_state=0)
    test = make_mazes(200, rooms=(2, 3), random_state=1)
    seen = {m.tobytes() for m in train.data}
    fresh = np.array([m.tobytes() not in seen for m in test.data])
    X_test, y_test = test.data[fresh], test.target[fresh]
    solver = SheafADMMMazeSolver(maze_shape=train.shape, random_state=0)
    ours = solver.fit(train.data, train.target).score(X_test, y_test)
    forest = RandomForestClassifier(100, random_state=0).fit(train.data, train.target)
    pred = np.where(X_test == 0, 0, forest.predict(X_test))
    return {
        "data": (
            f"make_mazes 2x3 rooms (5x7 pixels), 100 train, {len(X_test)} test "
            "mazes unseen in training"
        ),
        "metric": "paths predicted exactly",
        "score": ours,
        "baseline": "RandomForestClassifier (multi-output, per pixel)",
        "baseline_score": float(np.mean(np.all(pred == y_test, axis=1))),
        "greater_is_better": True,
    }
