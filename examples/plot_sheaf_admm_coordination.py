"""
========================================================
Puzzle-solving agents that coordinate through sheaf-ADMM
========================================================

Many puzzles are local rules joined together: a Sudoku cell must differ from
the cells of its row, column and box; a pixel on the shortest path through a
maze must continue into a neighbouring pixel. The solvers of
:mod:`sklearn_ext.coordination` give every cell to its own agent. In each
round, a small neural encoder turns what an agent sees (its symbol and its
previous state) into a convex quadratic problem over that agent's state. The
agents then run a few iterations of ADMM (the alternating direction method of
multipliers) so that neighbours agree on learned projections of their states:
the restriction maps of a cellular sheaf over the constraint graph. The ADMM
iterations are unrolled, so encoder, sheaf and readout are trained end to end
from puzzles and their solutions.

This example trains :class:`~sklearn_ext.coordination.SheafADMMSudokuSolver`
on 4x4 Sudoku and :class:`~sklearn_ext.coordination.SheafADMMMazeSolver` on
small mazes, checks what coordination adds, and follows the ADMM residuals
through the iterations.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# 4x4 Sudoku with a leak-free split
# ---------------------------------
# :func:`~sklearn_ext.datasets.make_sudoku` draws puzzles with six givens and
# a unique solution. Many puzzles share a solution grid, up to relabelling of
# the digits; ``grid_id`` names that grid, and holding out whole grids keeps
# every test solution unseen during training. Training is kept short so
# that the example runs quickly; the warning that the loss has not settled
# yet is silenced.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from sklearn.exceptions import ConvergenceWarning

from sklearn_ext.coordination import SheafADMMMazeSolver, SheafADMMSudokuSolver
from sklearn_ext.datasets import make_mazes, make_sudoku

warnings.filterwarnings("ignore", category=ConvergenceWarning)
ds = make_sudoku(700, size=4, n_givens=6, random_state=0)
test = np.isin(ds.grid_id, np.unique(ds.grid_id)[::4])
X_train, y_train = ds.data[~test], ds.target[~test]
X_test, y_test = ds.data[test], ds.target[test]
print(f"{len(X_train)} training puzzles, {len(X_test)} held-out puzzles")

# %%
# Coordination against isolated agents
# ------------------------------------
# The default solver runs 8 rounds of 3 ADMM iterations, and each round
# starts from the consensus and dual variables where the previous one
# stopped. With a single iteration per round and the consensus reset to zero
# (``n_admm_iter=1, carry_consensus=False``), each agent solves only its own
# problem: no agent hears its neighbours, and a blank cell sees nothing but
# its own blank. Both get the same 15 epochs of training; the score is the
# fraction of puzzles solved exactly.
sudoku = SheafADMMSudokuSolver(max_iter=15, random_state=0)
sudoku.fit(X_train, y_train)
isolated = SheafADMMSudokuSolver(
    n_admm_iter=1, carry_consensus=False, max_iter=15, random_state=0
)
isolated.fit(X_train, y_train)
print(f"sheaf-ADMM solve rate on held-out grids: {sudoku.score(X_test, y_test):.3f}")
print(f"without coordination:                    {isolated.score(X_test, y_test):.3f}")

# %%
# One held-out puzzle
# -------------------
# Givens are in black; the digits the agents filled in are green where they
# match the solution and red where they do not.
puzzle, truth = X_test[0], y_test[0]
prediction = sudoku.predict(puzzle[None])[0]


def draw_sudoku(ax, digits, givens, reference=None, title=""):
    size = int(np.sqrt(len(digits)))
    ax.set_xlim(0, size)
    ax.set_ylim(size, 0)
    for k in range(size + 1):
        width = 2.0 if k % 2 == 0 else 0.5
        ax.axhline(k, color="black", lw=width)
        ax.axvline(k, color="black", lw=width)
    for cell, digit in enumerate(digits):
        if digit == 0:
            continue
        row, col = divmod(cell, size)
        if givens[cell] > 0:
            color, weight = "black", "bold"
        elif reference is None:
            color, weight = "tab:blue", "normal"
        else:
            ok = digit == reference[cell]
            color, weight = ("tab:green" if ok else "tab:red"), "normal"
        ax.text(
            col + 0.5,
            row + 0.5,
            str(digit),
            ha="center",
            va="center",
            fontsize=16,
            color=color,
            fontweight=weight,
        )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal")
    ax.set_title(title)


fig, axes = plt.subplots(1, 3, figsize=(8, 3))
draw_sudoku(axes[0], puzzle, puzzle, title="puzzle")
draw_sudoku(axes[1], prediction, puzzle, reference=truth, title="prediction")
draw_sudoku(axes[2], truth, puzzle, title="solution")
fig.tight_layout()
plt.show()

# %%
# Inside the ADMM iterations
# --------------------------
# ``admm_states`` reruns the fitted network and records, for every round and
# iteration, three norms per puzzle: the primal residual (how far the agents'
# projected states are from the consensus on each edge), the disagreement
# between the two ends of each edge (the constraint itself), and the norm of
# the scaled dual variables. The curves show the median over the held-out
# puzzles; dotted lines separate the rounds.
states = sudoku.admm_states(X_test)
n_rounds, n_iter, _ = states["primal_residual"].shape
steps = np.arange(1, n_rounds * n_iter + 1)

fig, ax = plt.subplots(figsize=(6.5, 4.2))
for name, label in (
    ("primal_residual", "primal residual"),
    ("disagreement", "disagreement across edges"),
    ("dual_norm", "dual norm"),
):
    median = np.median(states[name], axis=-1).ravel()
    ax.plot(steps, median, marker="o", ms=3, label=label)
for r in range(1, n_rounds):
    ax.axvline(r * n_iter + 0.5, color="gray", ls=":", lw=0.8)
ax.set_yscale("log")
ax.set_xlabel(f"ADMM iteration ({n_rounds} rounds x {n_iter} iterations)")
ax.set_ylabel("median over held-out puzzles")
ax.set_title("ADMM residuals of the fitted Sudoku solver")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Within a round, the primal residual and the disagreement fall with every
# iteration. At the start of the next round the encoder hands each agent a new
# objective, and both jump back up before falling again. The scaled dual
# variables add up the residuals and are carried from round to round, so
# their norm keeps growing. Three iterations per round are far from
# convergence, and need not reach it: the network is trained on the quality
# of the readout, not on the agents reaching exact agreement.

# %%
# Shortest paths through mazes
# ----------------------------
# :func:`~sklearn_ext.datasets.make_mazes` draws perfect mazes of 3x3 rooms
# (7x7 pixels) with a start and a goal room; the target marks the pixels of
# the unique path between them. Here every pixel is an agent joined to its
# four neighbours. Test mazes come from a different seed.
#
# Information crosses about one pixel per ADMM iteration. The longest path
# between two of nine rooms has 17 pixels (16 steps), so 4 rounds of 4
# iterations already reach from one end to the other, and halving the
# default 8 rounds halves the cost.
train = make_mazes(800, rooms=(3, 3), random_state=0)
fresh = make_mazes(200, rooms=(3, 3), random_state=1)
maze = SheafADMMMazeSolver(n_rounds=4, max_iter=15, random_state=0)
maze.fit(train.data, train.target)
print(f"exact paths on new mazes: {maze.score(fresh.data, fresh.target):.3f}")

# %%
# The predicted paths (orange) are drawn over the mazes, and small black dots
# mark the true path; a title says whether the two match pixel for pixel.
paths = maze.predict(fresh.data[:3])
orange = ListedColormap(["tab:orange"])
fig, axes = plt.subplots(1, 3, figsize=(8, 3))
for ax, codes, path, true_path in zip(axes, fresh.data, paths, fresh.target):
    codes = codes.reshape(fresh.shape)
    ax.imshow(codes == 0, cmap="Greys", vmin=0, vmax=1.6)
    on_path = path.reshape(fresh.shape)
    ax.imshow(np.ma.masked_equal(on_path, 0), cmap=orange, alpha=0.8)
    rows, cols = np.nonzero(true_path.reshape(fresh.shape))
    ax.plot(cols, rows, "k.", ms=4)
    (sr, sc), (gr, gc) = np.argwhere(codes == 2)[0], np.argwhere(codes == 3)[0]
    ax.plot(sc, sr, "o", color="tab:blue", ms=9, label="start")
    ax.plot(gc, gr, "*", color="tab:green", ms=13, label="goal")
    exact = np.array_equal(path, true_path)
    ax.set_title("exact path" if exact else "path differs")
    ax.set_xticks([])
    ax.set_yticks([])
axes[0].legend(loc="lower left", fontsize=7, framealpha=0.9)
fig.tight_layout()
plt.show()

# %%
# What to take away
# -----------------
# The agents never see the whole puzzle: everything a cell learns about the
# others passes through the consensus and dual variables of ADMM on its
# edges. Without that channel, blank Sudoku cells can only guess, and no
# held-out puzzle is solved. With it, information travels about one hop per
# iteration, and carrying the consensus from round to round lets it
# accumulate, so ``n_rounds * n_admm_iter`` bounds how far a cell can look;
# for mazes it should cover the longest path.
