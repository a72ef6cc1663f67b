"""Fingerprints of the coordination family's benchmarks (see the package docstring)."""

import numpy as np

from ._common import concat as _concat


def sheaf_admm():
    """The unrolled solver, the digit classifier and both puzzle solvers.

    The solver on a random sheaf QP (part 1), then each estimator the
    benchmark fits, at its defaults but for a few epochs, on small data
    (parts 2 and 3, with the no-coordination and constant-sheaf ablations).
    """
    import torch
    from sklearn.datasets import load_digits

    from sklearn_ext.coordination import (
        SheafADMMClassifier,
        SheafADMMMazeSolver,
        SheafADMMSudokuSolver,
    )
    from sklearn_ext.coordination._sheaf_layer import SheafADMM
    from sklearn_ext.datasets import make_mazes, make_sudoku

    rng = np.random.default_rng(0)
    n_agents, d_v = 6, 4
    edges = np.array([(i, (i + 1) % n_agents) for i in range(n_agents)])
    L = rng.normal(size=(2, n_agents, d_v, d_v))
    Q = L @ np.swapaxes(L, -1, -2) / d_v + 0.5 * np.eye(d_v)
    q = rng.normal(size=(2, n_agents, d_v))
    layer = SheafADMM(edges, n_agents, d_v, 2, 50, rho=3.0).double()
    layer.init_parameters(torch.Generator().manual_seed(0))
    q_t = torch.as_tensor(q).requires_grad_(True)
    x = layer(torch.as_tensor(Q), q_t)
    (x**2).sum().backward()
    out = [x.detach().numpy(), q_t.grad.numpy()]

    X, y = load_digits(return_X_y=True)
    for params in ({}, {"n_admm_iter": 1}, {"learn_sheaf": False}):
        clf = SheafADMMClassifier(max_iter=2, random_state=0, **params)
        out.append(clf.fit(X[:200], y[:200]).predict_proba(X[200:210]))

    sudoku = make_sudoku(40, size=4, n_givens=6, random_state=0)
    solver = SheafADMMSudokuSolver(max_iter=2, random_state=0)
    solver.fit(sudoku.data[:30], sudoku.target[:30])
    proba = solver.predict_proba(sudoku.data[30:])
    out += [sudoku.data.sum(1), sudoku.target.sum(1), proba[:3], proba.sum((0, 1))]
    mazes = make_mazes(30, rooms=(3, 3), random_state=0)
    maze_solver = SheafADMMMazeSolver(max_iter=2, random_state=0)
    maze_solver.fit(mazes.data[:20], mazes.target[:20])
    proba = maze_solver.predict_proba(mazes.data[20:])
    out += [mazes.data.sum(1), mazes.target.sum(1), proba[:2], proba.sum((0, 1))]
    return _concat(*out)


FINGERPRINTS = {
    "sheaf_admm": sheaf_admm,
}
