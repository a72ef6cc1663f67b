"""Sheaf-ADMM: the solver against exact references, and digits under shift.

Part 1 (the differentiable layer, ``--parts solver`` and ``training``):
``_sheaf_solver_part`` (results ``sheaf_admm_solver`` and
``sheaf_admm_converged_training``): the layer's solution and gradient errors
and its time at the same iteration counts, and against cvxpylayers at equal
accuracy; training through truncated against converged iterations.

Part 2 (digits, the robustness claim). scikit-learn's 8x8 digits, 5 seeds of
a stratified 70/30 split. ``SheafADMMClassifier()`` (3x3 agents on 4x4
patches, stride 2; the central agent decides after the coordination; patch
regions occluded at random during training) against a parameter-matched CNN
(two 3x3 convolutions and two linear layers, trained with Adam on the same
loss and the same patch occlusions; the CNN without them is shown too), the
best single-patch classifier (logistic regression on the one patch with the
best cross-validated accuracy: what one agent alone can do) and four
ablations: ``n_admm_iter=1`` (no coordination: the deciding agent sees its
own patch only), ``learn_sheaf=False`` (the constant sheaf),
``readout="agents"`` (the mean of every agent's answer, which needs no
coordination) and ``patch_dropout=0`` (no occlusions in training). Test
accuracy clean and under four shifts applied to the test images only: one of
the nine patch positions zeroed (occlusion, the shape trained with), a band
of two whole rows zeroed (band: an occlusion no model is trained with),
Gaussian pixel noise (sd 4 on the 0-16 scale, clipped), and a one-pixel
shift to the right. Paired differences against the CNN trained with the
same occlusions over the seeds.

Part 4 (inspection). Primal residual, neighbour disagreement and dual norm
across the ADMM iterations of the fitted classifier on the test images
(median over images), plotted to ``results/sheaf_admm_states.png``.

Part 3 (puzzles). ``SheafADMMSudokuSolver`` on 4x4 Sudoku (6 givens; three
of the twelve solution grids up to digit relabelling held out, so that test
puzzles never share a grid with training ones) and 9x9 Sudoku (40 givens,
fresh grids), ``SheafADMMMazeSolver`` on 7x7-pixel perfect mazes (3x3
rooms; test mazes drawn afresh, repeats of training mazes removed), each
against a parameter-matched recurrent message-passing network (an RRN-style
peer: MLP messages on the same typed edges, GRU updates, the same deep
supervision, optimiser, batch size and epochs) given as many message-passing
steps as the solver has ADMM iterations in all. Ablations: no coordination
(one ADMM iteration per round, restarted from zero), ``carry_consensus=False``
(each round's ADMM restarts from zero) and ``learn_sheaf=False``. Solve rate
(every cell right) with paired differences against the peer over 3 seeds,
and accuracy on the cells to fill (Sudoku blanks; every pixel of a maze).

For 9x9 Sudoku, ``--sudoku9-epochs N`` trains longer, and
``--sudoku9-curriculum 60:8,50:8`` trains first on the same training grids
with more of their solution given (60 givens for 8 epochs, then 50 for 8),
continuing the solver with ``warm_start`` and the peer with its optimiser,
before the task's own epochs: the same schedule for both.

Run: ``python benchmarks/bench_sheaf_admm.py [--quick]`` (about an hour
on 2 CPUs; ``--quick``: one seed). ``--parts digits`` (or ``solver``,
``training``, ``puzzles``, comma-separated) and ``--tasks`` (separated
by ``;``) rerun some parts or puzzle tasks only; the other rows are then
kept from the last results file, and its notes say so. Timing columns
("fit s") need an idle machine; so do the solver and training parts' times.
"""

import argparse
import json
import re
import sys
import time

import numpy as np
import torch
from _common import paired_interval, write_results
from _sheaf_admm_baselines import (
    CellMPNN,
    best_single_patch,
    count_parameters,
    fit_cell_peer,
    fit_cnn,
    matched_mpnn,
    peer_scores,
)
from _sheaf_solver_part import (
    part_converged_training,
    part_solver,
    solver_ledger,
    training_ledger,
)
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.coordination import (
    SheafADMMClassifier,
    SheafADMMMazeSolver,
    SheafADMMSudokuSolver,
    patch_grid,
)
from sklearn_ext.datasets import make_mazes, make_sudoku

# --- part 3 ---------------------------------------------------------------------


def _sudoku_data(size, n_givens, n_train, n_test, seed):
    """Train and test puzzles sharing no solution grid (up to relabelling)."""
    ds = make_sudoku(n_train + n_test, size=size, n_givens=n_givens, random_state=seed)
    ids = np.unique(ds.grid_id)
    rng = np.random.default_rng(seed)
    if size == 4:  # 12 grids up to relabelling: hold 3 out
        test = np.isin(ds.grid_id, rng.permutation(ids)[:3])
    else:  # the last n_test puzzles, less any whose grid is also in training
        # (make_sudoku's grids are symmetries of one pattern grid, so repeats
        # happen at this size)
        test = np.arange(len(ds.data)) >= n_train
        seen = np.isin(ds.grid_id, ds.grid_id[~test])
        keep = ~test
        return (
            ds.data[keep],
            ds.target[keep],
            ds.data[test & ~seen],
            ds.target[test & ~seen],
        )
    return ds.data[~test], ds.target[~test], ds.data[test], ds.target[test]


def _maze_data(rooms, n_train, n_test, seed):
    """Fresh test mazes, any that repeat a training maze removed."""
    train = make_mazes(n_train, rooms=rooms, random_state=seed)
    test = make_mazes(n_test, rooms=rooms, random_state=10_000 + seed)
    seen = {m.tobytes() for m in train.data}
    keep = np.array([m.tobytes() not in seen for m in test.data])
    return train.data, train.target, test.data[keep], test.target[keep]


PUZZLE_TASKS = {
    # name: data(seed) -> (X_train, y_train, X_test, y_test), the solver, its
    # settings and the ablations run
    "sudoku 4x4, 6 givens": {
        "data": lambda seed: _sudoku_data(4, 6, 550, 150, seed),
        "solver": SheafADMMSudokuSolver,
        "kwargs": {"max_iter": 30},
        "ablations": ("no coordination", "carry_consensus=False", "learn_sheaf=False"),
    },
    "maze 7x7 (3x3 rooms)": {
        "data": lambda seed: _maze_data((3, 3), 600, 300, seed),
        "solver": SheafADMMMazeSolver,
        "kwargs": {"max_iter": 30},
        "ablations": ("carry_consensus=False", "learn_sheaf=False"),
    },
    "sudoku 9x9, 40 givens": {
        "data": lambda seed: _sudoku_data(9, 40, 800, 200, seed),
        "solver": SheafADMMSudokuSolver,
        "kwargs": {"max_iter": 10},
        # (givens, epochs) of the easier stages trained first: the same
        # grids with more of their solution given
        "curriculum": (),
        "ablations": (),
    },
}


def _more_givens(X, y, n_givens, rng):
    """The puzzles with solution digits revealed until ``n_givens`` are given.

    Revealing digits of the unique solution keeps it unique: an easier puzzle
    on the same grid (the curriculum's first stages).
    """
    X = X.copy()
    for k in range(len(X)):
        blank = np.flatnonzero(X[k] == 0)
        extra = min(len(blank), max(0, n_givens - (X.shape[1] - len(blank))))
        pick = rng.choice(blank, size=extra, replace=False)
        X[k, pick] = y[k, pick]
    return X


def _curriculum(spec, X, y, seed):
    """``(X, y, epochs)`` of each easier stage trained before the task itself."""
    rng = np.random.default_rng(seed)
    return [
        (_more_givens(X, y, givens, rng), y, epochs)
        for givens, epochs in spec.get("curriculum", ())
    ]


def _schedule(spec):
    """The training schedule of a task, in words (for its rows)."""
    epochs = spec["kwargs"]["max_iter"]
    stages = spec.get("curriculum", ())
    if not stages:
        return f"{epochs} epochs"
    first = ", ".join(f"{g} givens {e} epochs" for g, e in stages)
    return f"curriculum: {first}, then the task {epochs} epochs"


def _fit_staged(est, stages, X, y):
    """Fit ``est`` on each stage, then on ``(X, y)``, continuing (warm start)."""
    if not stages:
        return est.fit(X, y)
    epochs = est.max_iter
    est.set_params(warm_start=True)
    for X_s, y_s, epochs_s in stages:
        est.set_params(max_iter=epochs_s).fit(X_s, y_s)
    return est.set_params(max_iter=epochs).fit(X, y)


_SUDOKU9 = "sudoku 9x9, 40 givens"
SOLVER_SEEDS = (0, 1, 2, 3, 4)
DIGIT_SEEDS = [0, 1, 2, 3, 4]
PUZZLE_SEEDS = [0, 1, 2]

ABLATIONS = {
    "no coordination": {"n_admm_iter": 1, "carry_consensus": False},
    "carry_consensus=False": {"carry_consensus": False},
    "learn_sheaf=False": {"learn_sheaf": False},
}


def _peer_for(solver, X):
    """The parameter-matched message-passing peer on the solver's graph.

    It gets as many message-passing steps as the solver has ADMM iterations
    in all (``n_rounds * n_admm_iter``): equal iterations, equal reach in
    graph hops.
    """
    net = solver.module_
    n_symbols = net.given.num_embeddings
    n_outputs = net.readout.out_features
    n_cells = X.shape[1]
    steps = solver.n_rounds * solver.n_admm_iter

    def build(hidden):
        return CellMPNN(
            n_symbols,
            n_cells,
            n_outputs,
            solver.edges_,
            solver.edge_types_,
            hidden,
            steps,
        )

    return lambda: matched_mpnn(count_parameters(net), build), steps


def part_puzzles(seeds, tasks=PUZZLE_TASKS):
    rows = []
    for task, spec in tasks.items():
        solve, cell, fit_s, params = {}, {}, {}, {}
        for seed in seeds:
            X_tr, y_tr, X_te, y_te = spec["data"](seed)
            stages = _curriculum(spec, X_tr, y_tr, seed)
            is_sudoku = spec["solver"] is SheafADMMSudokuSolver
            variants = {"sheaf-ADMM solver (defaults)": {}}
            variants.update({f"ablation: {a}": ABLATIONS[a] for a in spec["ablations"]})
            ours = None
            for name, extra in variants.items():
                start = time.perf_counter()
                est = spec["solver"](**spec["kwargs"], **extra, random_state=seed)
                est = _fit_staged(est, stages, X_tr, y_tr)
                fit_s.setdefault(name, []).append(time.perf_counter() - start)
                pred = est.predict(X_te)
                solve.setdefault(name, []).append(np.mean(np.all(pred == y_te, 1)))
                cell.setdefault(name, []).append(
                    np.mean(pred[X_te == 0] == y_te[X_te == 0])
                    if is_sudoku
                    else np.mean(pred == y_te)
                )
                params[name] = count_parameters(est.module_)
                ours = est if ours is None else ours
            build, steps = _peer_for(ours, X_tr)
            peer_name = f"MPNN, {steps} steps (param-matched)"
            start = time.perf_counter()
            target = y_tr - 1 if is_sudoku else y_tr
            net = fit_cell_peer(
                build,
                X_tr,
                target,
                seed,
                spec["kwargs"]["max_iter"],
                lr=ours.learning_rate_init,
                stages=[
                    (X_s, y_s - 1 if is_sudoku else y_s, e) for X_s, y_s, e in stages
                ],
            )
            fit_s.setdefault(peer_name, []).append(time.perf_counter() - start)
            raw = peer_scores(net, X_te)
            pred = (
                np.where(X_te > 0, X_te, raw + 1)
                if is_sudoku
                else np.where(X_te == 0, 0, raw)
            )
            solve.setdefault(peer_name, []).append(np.mean(np.all(pred == y_te, 1)))
            cell.setdefault(peer_name, []).append(
                np.mean(pred[X_te == 0] == y_te[X_te == 0])
                if is_sudoku
                else np.mean(pred == y_te)
            )
            params[peer_name] = count_parameters(net)
            print(
                task, seed, {k: round(v[-1], 3) for k, v in solve.items()}, flush=True
            )
        ref = solve[peer_name]
        for name in solve:
            rate = np.array(solve[name])
            value = f"solved {rate.mean():.3f}"
            if name != peer_name:
                mean, lo, hi = paired_interval(rate, ref)
                value += f" ({mean:+.3f} [{lo:+.3f}, {hi:+.3f}] vs MPNN)"
            value += f"; cell accuracy {np.mean(cell[name]):.3f}"
            rows.append(
                {
                    "part": "3 puzzles",
                    "task": task,
                    "setting": (
                        f"{task}; {len(X_tr)} train / {len(X_te)} test; "
                        f"{_schedule(spec)}; {len(seeds)} seeds"
                    ),
                    "method": name,
                    "value": value,
                    "params": params[name],
                    "fit s": round(float(np.mean(fit_s[name])), 1),
                }
            )
    return rows


# --- part 2 ---------------------------------------------------------------------

SHIFTS = ("clean", "occlusion", "band", "noise", "shift")


def _shifted(X, kind, rng):
    images = X.reshape(-1, 8, 8).copy()
    if kind == "occlusion":
        index, _ = patch_grid((8, 8), 4, 2)
        which = rng.integers(len(index), size=len(images))
        flat = images.reshape(len(images), -1)
        flat[np.arange(len(images))[:, None], index[which]] = 0.0
        return flat
    if kind == "band":
        # Two whole rows blanked (as many pixels as a patch): a shape of
        # occlusion that no model is trained with.
        start = rng.integers(0, 7, size=len(images))
        rows = start[:, None] + np.arange(2)
        images[np.arange(len(images))[:, None], rows] = 0.0
        return images.reshape(len(images), -1)
    if kind == "noise":
        return np.clip(images + rng.normal(0, 4.0, images.shape), 0, 16).reshape(
            len(images), -1
        )
    if kind == "shift":
        moved = np.zeros_like(images)
        moved[:, :, 1:] = images[:, :, :-1]
        return moved.reshape(len(images), -1)
    return images.reshape(len(images), -1)


_OURS = "SheafADMMClassifier()"
_CNN = "CNN (param-matched), same patch occlusions in training"
DIGIT_MODELS = {
    _OURS: {},
    "ablation: n_admm_iter=1 (no coordination)": {"n_admm_iter": 1},
    "ablation: learn_sheaf=False": {"learn_sheaf": False},
    "ablation: readout='agents' (mean of the agents' answers)": {"readout": "agents"},
    "ablation: patch_dropout=0 (no occlusions in training)": {"patch_dropout": 0.0},
}


def part_digits(seeds):
    X, y = load_digits(return_X_y=True)
    dropout = SheafADMMClassifier().patch_dropout
    cnns = {
        _CNN: dropout,
        "CNN (param-matched), no augmentation": 0.0,
    }
    names = [*DIGIT_MODELS, *cnns, "best single patch"]
    scores = {name: {k: [] for k in SHIFTS} for name in names}
    n_params = {}
    fit_s = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=seed
        )
        tests = {
            k: _shifted(X_te, k, np.random.default_rng(100 + seed)) for k in SHIFTS
        }
        fitted = {}
        for name, extra in DIGIT_MODELS.items():
            start = time.perf_counter()
            fitted[name] = SheafADMMClassifier(**extra, random_state=seed).fit(
                X_tr, y_tr
            )
            fit_s.setdefault(name, []).append(time.perf_counter() - start)
            n_params[name] = count_parameters(fitted[name].module_)
        for name, rate in cnns.items():
            start = time.perf_counter()
            fitted[name] = fit_cnn(X_tr, y_tr, seed, patch_dropout=rate)
            fit_s.setdefault(name, []).append(time.perf_counter() - start)
            n_params[name] = count_parameters(fitted[name].module)
        fitted["best single patch"] = best_single_patch(X_tr, y_tr)
        for kind, X_k in tests.items():
            for name, est in fitted.items():
                scores[name][kind].append(est.score(X_k, y_te))
        print(
            "digits",
            seed,
            {n: [round(scores[n][k][-1], 3) for k in SHIFTS] for n in names},
            flush=True,
        )
    rows = []
    ref = scores[_CNN]
    for name, by_kind in scores.items():
        row = {
            "part": "2 digits",
            "setting": f"{len(seeds)} seeds",
            "method": name,
            "params": n_params.get(name, ""),
            "fit s": round(float(np.mean(fit_s[name])), 1) if name in fit_s else "",
        }
        for kind in SHIFTS:
            acc = np.array(by_kind[kind])
            cell = f"{acc.mean():.3f}"
            if name != _CNN:
                mean, lo, hi = paired_interval(acc, ref[kind])
                cell += f" ({mean:+.3f} [{lo:+.3f}, {hi:+.3f}])"
            row[kind] = cell
        rows.append(row)
    return rows, fitted[_OURS], tests["clean"]


def part_states(clf, X_test):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    states = clf.admm_states(X_test)
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    it = np.arange(1, clf.n_admm_iter + 1)
    for key, label in (
        ("primal_residual", "primal residual ||Fx - z||"),
        ("disagreement", "disagreement ||F x_i - F x_j||"),
        ("dual_norm", "dual norm ||u||"),
    ):
        ax.plot(it, np.median(states[key], axis=1), marker="o", label=label)
    ax.set_xlabel("ADMM iteration")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("Sheaf-ADMM states on the digits test set (median)")
    fig.tight_layout()
    from _common import RESULTS

    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / "sheaf_admm_states.png", dpi=120)
    last = {
        k: float(np.median(states[k][-1]))
        for k in ("primal_residual", "disagreement", "dual_norm")
    }
    first = {k: float(np.median(states[k][0])) for k in last}
    return [
        {
            "part": "4 states",
            "setting": f"{clf.n_admm_iter} iterations",
            "method": "median over test images, first -> last iteration",
            "value": "; ".join(f"{k} {first[k]:.3g} -> {last[k]:.3g}" for k in last),
        }
    ]


def _extract(pattern, column="value"):
    """``compute`` of a claim: the first group of ``pattern`` in its row's cell."""

    def compute(rows, selector):
        (row,) = [r for r in rows if all(r.get(k) == v for k, v in selector.items())]
        found = re.search(pattern, str(row[column]))
        if found is None:
            raise ValueError(f"{pattern!r} is not in {row[column]!r}")
        return found.group(1)

    return compute


def _claim(name, row, pattern, column="value", metric=None, note=""):
    """A claim read from a part of a text cell (cells hold several figures)."""
    compute = _extract(pattern, column)
    return Claim(
        name,
        row,
        column,
        metric=metric,
        compute=lambda rows: compute(rows, row),
        note=note,
    )


_FIRST = r"^([+\-]?[\d.]+(?:e[+\-]\d+)?)"
_DIFF = r"\(([+\-][\d.]+ \[[^\]]*\])"
_DIGIT_METHODS = {
    "ours": _OURS,
    "no_coordination": "ablation: n_admm_iter=1 (no coordination)",
    "constant_sheaf": "ablation: learn_sheaf=False",
    "agents_readout": "ablation: readout='agents' (mean of the agents' answers)",
    "no_occlusion_training": "ablation: patch_dropout=0 (no occlusions in training)",
    "cnn": _CNN,
    "cnn_plain": "CNN (param-matched), no augmentation",
    "single_patch": "best single patch",
}
_PUZZLES = {
    "sudoku4": (
        "sudoku 4x4, 6 givens",
        "MPNN, 24 steps (param-matched)",
        {
            "no_coordination": "ablation: no coordination",
            "restart": "ablation: carry_consensus=False",
            "constant_sheaf": "ablation: learn_sheaf=False",
        },
    ),
    "maze": (
        "maze 7x7 (3x3 rooms)",
        "MPNN, 32 steps (param-matched)",
        {
            "restart": "ablation: carry_consensus=False",
            "constant_sheaf": "ablation: learn_sheaf=False",
        },
    ),
    "sudoku9": (
        "sudoku 9x9, 40 givens",
        "MPNN, 24 steps (param-matched)",
        {},
    ),
}


def _sheaf_claims():
    claims = []
    for key, method in _DIGIT_METHODS.items():
        row = {"part": "2 digits", "method": method}
        for shift in SHIFTS:
            claims.append(
                _claim(f"digits_{key}_{shift}", row, _FIRST, shift, "accuracy")
            )
            if key != "cnn":
                claims.append(
                    _claim(
                        f"digits_{key}_{shift}_vs_cnn",
                        row,
                        _DIFF,
                        shift,
                        "accuracy, this - the CNN",
                    )
                )
    states = {"part": "4 states"}
    for state in ("primal_residual", "disagreement", "dual_norm"):
        claims += [
            _claim(f"states_{state}_first", states, rf"{state} (\S+) ->"),
            _claim(f"states_{state}_last", states, rf"{state} \S+ -> ([^;]+)"),
        ]
    for task, (name, peer, ablations) in _PUZZLES.items():
        methods = {"ours": "sheaf-ADMM solver (defaults)", "mpnn": peer}
        methods.update(ablations)
        for key, method in methods.items():
            row = {"part": "3 puzzles", "task": name, "method": method}
            claims += [
                _claim(f"{task}_{key}_solved", row, r"solved ([\d.]+)", "value",
                       "share of test puzzles solved exactly"),
                _claim(f"{task}_{key}_cells", row, r"cell accuracy ([\d.]+)",
                       "value", "accuracy on the cells to fill"),
            ]  # fmt: skip
            if key != "mpnn":
                claims.append(
                    _claim(
                        f"{task}_{key}_vs_mpnn",
                        row,
                        r"\(([+\-][\d.]+ \[[^\]]*\]) vs MPNN\)",
                        metric="solve rate, this - the MPNN",
                    )
                )
    return claims


LEDGER = {
    "sheaf_admm": Ledger(
        "SheafADMMClassifier, SheafADMMSudokuSolver, SheafADMMMazeSolver",
        "scikit-learn's digits, stratified 70/30, test images occluded (a "
        "patch; a band of two rows) / noised / shifted; 4x4 "
        "Sudoku (6 givens, 3 of 12 grids held out), 9x9 Sudoku (40 givens), "
        "7x7-pixel mazes",
        "digits: seeds 0-4; puzzles: seeds 0-2",
        {
            "ours": "the estimators at their defaults (puzzles: max_iter 30 for "
            "4x4 Sudoku and mazes, 10 for 9x9 Sudoku), no tuning; ablations "
            "change one parameter",
            "peers": "a parameter-matched CNN (Adam, same loss, "
            "trained with the same patch occlusions; also without them); "
            "logistic regression on the best single patch by CV; a "
            "parameter-matched recurrent MPNN with as many steps as the solver's "
            "ADMM iterations, same supervision, optimiser, batch size and epochs",
        },
        _sheaf_claims(),
    ),
    "sheaf_admm_quick": Ledger(
        "SheafADMMClassifier, SheafADMMSudokuSolver, SheafADMMMazeSolver",
        "as sheaf_admm, one seed (a smoke run, not quoted)",
        1,
        {"ours": "as sheaf_admm", "peers": "as sheaf_admm"},
        [],
    ),
    "sheaf_admm_solver": solver_ledger(),
    "sheaf_admm_converged_training": training_ledger(),
}


def _stages(text):
    """``"60:8,50:8"`` -> ``((60, 8), (50, 8))``: givens and epochs per stage."""
    if not text:
        return ()
    return tuple(tuple(int(v) for v in stage.split(":")) for stage in text.split(","))


def _carried_rows(name, parts, tasks):
    """Rows of the parts (and puzzle tasks) not rerun, from the last results."""
    from _common import RESULTS

    path = RESULTS / f"{name}.json"
    if not path.exists():
        return [], None
    old = json.loads(path.read_text())
    kept = []
    for row in old["rows"]:
        if row["part"].startswith("1 "):
            continue  # (the solver part has its own results file now)
        part = row["part"].split()[1]
        part = {"states": "digits"}.get(part, part)
        if part == "puzzles":
            # (rows written before the task field: the setting's first item)
            row.setdefault("task", row["setting"].split(";")[0])
        if part not in parts or (part == "puzzles" and row["task"] not in tasks):
            kept.append(row)
    return kept, old.get("date")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument(
        "--parts",
        default="solver,training,digits,puzzles",
        help="parts to run (solver and training write their own results "
        "files); the rows of the other parts are kept from the last "
        "results file (and the notes say so)",
    )
    parser.add_argument(
        "--tasks",
        default=";".join(PUZZLE_TASKS),
        help="puzzle tasks to run, separated by ';' (their names hold commas)",
    )
    parser.add_argument(
        "--sudoku9-epochs",
        type=int,
        default=PUZZLE_TASKS[_SUDOKU9]["kwargs"]["max_iter"],
        help="epochs on the 9x9 puzzles themselves (after the curriculum)",
    )
    parser.add_argument(
        "--sudoku9-curriculum",
        default=",".join(f"{g}:{e}" for g, e in PUZZLE_TASKS[_SUDOKU9]["curriculum"]),
        help="easier stages first, 'givens:epochs,...' ('' for none)",
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    asked = [t.strip() for t in args.tasks.split(";") if t.strip()]
    unknown = sorted(set(asked) - set(PUZZLE_TASKS))
    if unknown:
        parser.error(f"unknown puzzle tasks {unknown}; the tasks: {list(PUZZLE_TASKS)}")
    tasks = {t: PUZZLE_TASKS[t] for t in PUZZLE_TASKS if t in asked}
    if _SUDOKU9 in tasks:
        spec = dict(tasks[_SUDOKU9])
        spec["kwargs"] = {**spec["kwargs"], "max_iter": args.sudoku9_epochs}
        spec["curriculum"] = _stages(args.sudoku9_curriculum)
        tasks[_SUDOKU9] = spec
    torch.set_num_threads(2)
    start = time.perf_counter()
    name = "sheaf_admm" + ("_quick" if args.quick else "")
    rows = []
    if "solver" in parts:
        part_solver(
            seeds=SOLVER_SEEDS[:1] if args.quick else SOLVER_SEEDS,
            name="sheaf_admm_solver" + ("_quick" if args.quick else ""),
        )
    if "training" in parts:
        part_converged_training(
            seeds=SOLVER_SEEDS[:1] if args.quick else SOLVER_SEEDS,
            name="sheaf_admm_converged_training" + ("_quick" if args.quick else ""),
        )
    if not parts & {"digits", "puzzles"}:
        return None
    if "digits" in parts:
        digit_rows, clf, X_test = part_digits([0] if args.quick else DIGIT_SEEDS)
        rows += digit_rows
        rows += part_states(clf, X_test)
    if "puzzles" in parts:
        rows += part_puzzles([0] if args.quick else PUZZLE_SEEDS, tasks)
    note = f"Whole benchmark {time.perf_counter() - start:.0f} s."
    if not {"digits", "puzzles"} <= parts or len(tasks) < len(PUZZLE_TASKS):
        kept, date = _carried_rows(name, parts, set(tasks))
        order = {"2": 1, "4": 2, "3": 3}
        rows = sorted(rows + kept, key=lambda r: order[r["part"].split()[0]])
        note = (
            f"This run ({time.perf_counter() - start:.0f} s): parts "
            f"{', '.join(sorted(parts))}"
            + (f" (puzzles: {', '.join(tasks)})" if "puzzles" in parts else "")
            + f"; the other rows are kept from the run of {date}."
        )
    columns = ["part", "setting", "method", "value", "params", "fit s", *SHIFTS]
    # The rows, also in the log: write_results refuses a run whose code
    # changed under it, and the measurements should not be lost with it.
    print(json.dumps(rows), flush=True)
    write_results(
        name,
        rows,
        columns,
        title="Sheaf-ADMM: solver references, digits under shift, puzzles",
        notes=(
            "Digit accuracy cells: mean over seeds, then (paired difference "
            "against the CNN trained with the same occlusions [95% t "
            "interval]). Puzzle rows: solve rate, paired "
            "difference against the message-passing peer [95% t interval], and "
            "accuracy on the cells to fill. " + note
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
