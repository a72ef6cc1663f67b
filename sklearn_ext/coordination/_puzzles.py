"""Puzzle solvers whose cell agents coordinate through sheaf-ADMM: Sudoku, mazes."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_non_negative

from sklearn_ext.base import TorchMixin
from sklearn_ext.coordination._sheaf_admm import patch_grid
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    adam,
    import_torch,
    init_parameters,
    weighted_mean,
)
from sklearn_ext.utils._validation import check_sample_weight

__all__ = [
    "SheafADMMMazeSolver",
    "SheafADMMSudokuSolver",
    "maze_graph",
    "sudoku_graph",
]

# scikit-learn's checks that cannot apply to a puzzle solver (read by
# tests/test_common.py). Each of these fits on a table that the check generates,
# of 1 to 30 real-valued columns; a puzzle is a row of 16 or 81 Sudoku cells, or
# of a maze's pixels with one start and one goal, so every such fit stops at the
# layout check. What each check asserts is asserted on puzzles instead, by
# tests/test_family_contracts.py (fit, dtypes, order, subsets, weights) and by
# the common harness of tests/test_common.py (pickling, n_features_in_, NaN,
# read-only and DataFrame input, pipelines). The checks of the API, of the
# tags and of the errors on bad input (sparse, complex, empty, 1-D, one
# feature, negative codes, y=None, all-zero weights) run and pass.
_FITS_ON_GENERATED_TABLES = (
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_readonly_memmap_input",
    "check_sample_weights_list",
    "check_sample_weights_not_an_array",
    "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series",
    "check_sample_weights_shape",
)
_EXPECTED_FAILED_CHECKS = {
    **dict.fromkeys(
        _FITS_ON_GENERATED_TABLES,
        "fits on a generated table of real-valued columns, which is no puzzle "
        "(16 or 81 Sudoku cells; a maze with one start and one goal); asserted "
        "on puzzles by tests/test_family_contracts.py and tests/test_common.py",
    ),
    "check_fit2d_1sample": (
        "one puzzle is a valid training set, but the check's row has 10 "
        "columns, which is no puzzle (one puzzle is fitted in "
        "tests/test_family_contracts.py)"
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "minibatch Adam on shuffled batches: a repeated puzzle and a puzzle of "
        "weight 2 fall into different batches (and the check's table is no "
        "puzzle)"
    ),
}


def sudoku_graph(size=9):
    """Constraint graph of Sudoku: cells that must hold different digits.

    Parameters
    ----------
    size : int, default=9
        Side of the grid, a square (4 or 9).

    Returns
    -------
    edges : ndarray of shape (n_edges, 2)
        Pairs ``i < j`` of cells sharing a row, a column or a box (810 for
        9 x 9).
    edge_types : ndarray of shape (n_edges,)
        0 same row, 1 same column, 2 same box only.
    """
    box = math.isqrt(size)
    cells = np.arange(size * size)
    row, col = divmod(cells, size)
    blk = (row // box) * box + col // box
    i, j = np.triu_indices(size * size, k=1)
    kind = np.where(
        row[i] == row[j],
        0,
        np.where(col[i] == col[j], 1, np.where(blk[i] == blk[j], 2, -1)),
    )
    keep = kind >= 0
    return np.column_stack([i[keep], j[keep]]).astype(np.int64), kind[keep]


def maze_graph(shape):
    """4-neighbour graph of a pixel grid.

    Parameters
    ----------
    shape : (int, int)
        Height and width.

    Returns
    -------
    edges : ndarray of shape (n_edges, 2)
        Horizontally, then vertically adjacent pixels (row-major indices).
    edge_types : ndarray of shape (n_edges,)
        0 horizontal, 1 vertical.
    """
    height, width = shape
    _, edges = patch_grid(shape, 1, 1)  # right neighbours first, then down
    n_right = height * (width - 1)
    return edges, np.repeat([0, 1], [n_right, len(edges) - n_right])


def _integer_codes(A, name, low, high, what):
    """A as int64, refusing non-integers and codes outside ``[low, high]``."""
    if not np.all(np.isfinite(A)) or not np.all(A == np.round(A)):
        raise ValueError(
            f"{name} must hold integer codes ({what}); found non-integers."
        )
    bad = (A < low) | (A > high)
    if bad.any():
        value = A[bad][0]
        raise ValueError(f"{name} holds {value:g}, outside {low}..{high} ({what}).")
    return A.astype(np.int64)


def _check_givens_agree(X, size):
    """Refuse a puzzle that gives one digit twice in a row, column or box."""
    box = math.isqrt(size)
    grids = X.reshape(len(X), size, size)
    onehot = grids[..., None] == np.arange(1, size + 1)  # (n, row, col, digit)
    counts = {
        "row": onehot.sum(axis=2),  # (n, row, digit)
        "column": onehot.sum(axis=1),
        "box": onehot.reshape(len(X), box, box, box, box, size)
        .sum(axis=(2, 4))
        .reshape(len(X), size, size),
    }
    for unit, count in counts.items():
        clash = np.argwhere(count > 1)
        if len(clash):
            puzzle, index, digit = (int(v) for v in clash[0])
            raise ValueError(
                f"puzzle {puzzle} gives the digit {digit + 1} "
                f"{int(count[puzzle, index, digit])} times in {unit} {index} "
                "(counted from 0): its givens conflict, so it has no solution."
            )


class _CellAgentsSolver(TorchMixin, BaseEstimator):
    """Shared fit/predict of the puzzle solvers (one agent per cell)."""

    _parameter_constraints = {
        **TorchMixin._parameter_constraints,
        "stalk_dim": [Interval(Integral, 1, None, closed="left")],
        "edge_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "n_admm_iter": [Interval(Integral, 1, None, closed="left")],
        "rho": [Interval(Real, 0, None, closed="neither")],
        "learn_sheaf": ["boolean"],
        "carry_consensus": ["boolean"],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    _paper = "Seely, Cupiał & Jones, ICML 2026 (arXiv:2605.31005)"
    _bench_name = "sheaf_admm"
    _expected_failed_checks = _EXPECTED_FAILED_CHECKS

    def _batch_size(self, n_samples):
        # Small batches: puzzles are learned over many steps.
        if self.batch_size == "auto":
            return min(32, n_samples)
        return min(self.batch_size, n_samples)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        # X holds integer-coded cells (codes >= 0); y one output per cell.
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags

    # Subclasses define: _n_symbols, _n_outputs, _graph(n_features) ->
    # (edges, types, layout), _check_puzzles(X), _encode_targets(y, X),
    # _decode(scores, X) and _architecture_of(layout).

    def _build_module(self, attr="module_"):
        from sklearn_ext.coordination._sheaf_admm_nn import CellAgentsNet

        return CellAgentsNet(
            self._n_symbols,
            self.n_features_in_,
            self._n_outputs,
            self.edges_,
            self.edge_types_,
            self.stalk_dim,
            self.edge_dim,
            self.hidden,
            self.n_rounds,
            self.n_admm_iter,
            self.rho,
            self.learn_sheaf,
            self.carry_consensus,
        )

    def _validate_puzzles(self, X, reset):
        """Puzzles checked: the generic array checks first, then the codes."""
        X = validate_data(self, X, dtype=np.float64, reset=reset)
        return self._check_layout_and_codes(X, reset)

    def _check_layout_and_codes(self, X, reset):
        check_non_negative(X, f"{type(self).__name__} (X must hold integer codes >= 0)")
        if reset:
            self._graph_layout = self._graph(X.shape[1])
        return self._check_puzzles(X)

    def _validate_training_data(self, X, y, sample_weight, reset):
        """Puzzles, solutions (``y`` required, X's shape) and weights checked."""
        X, y = validate_data(
            self, X, y, dtype=np.float64, multi_output=True, y_numeric=True, reset=reset
        )
        sample_weight = check_sample_weight(sample_weight, X)
        X = self._check_layout_and_codes(X, reset)
        if y.shape != X.shape:
            raise ValueError(
                f"y must have one entry per cell like X, of shape {X.shape}; got "
                f"shape {y.shape}."
            )
        target = self._encode_targets(np.asarray(y, dtype=np.float64), X)
        return X, target, sample_weight

    def _fit_puzzles(self, X, y, sample_weight):
        torch = import_torch()
        warm = self.warm_start and hasattr(self, "module_")
        X, target, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=not warm
        )
        edges, types, layout = self._graph_layout
        module = self._fitted_module(
            {
                **self._architecture_of(layout),
                "n_admm_iter": self.n_admm_iter,
                "rho": self.rho,
                "learn_sheaf": self.learn_sheaf,
                "carry_consensus": self.carry_consensus,
            }
        )
        self.edges_, self.edge_types_ = edges, types
        context = self._torch_context(
            size=X.shape[0] * len(edges) * self.edge_dim * self.n_rounds,
            min_size=1e8,
        )
        net = (
            init_parameters(self._build_module(), context.generator)
            if (module is None)
            else module
        )
        net = net.to(device=context.device, dtype=context.dtype).train()
        cells = torch.as_tensor(X, device=context.device)
        labels = torch.as_tensor(target, device=context.device)
        w = self._sample_weight(sample_weight, X, context)
        ce = torch.nn.functional.cross_entropy
        n_out = self._n_outputs

        def round_loss(s, idx):
            flat = labels[idx].reshape(-1)
            if w is None:
                return ce(s.reshape(-1, n_out), flat)
            # A puzzle's loss is the mean over its cells; weights act per puzzle.
            per_cell = ce(s.reshape(-1, n_out), flat, reduction="none")
            return weighted_mean(per_cell.reshape(len(idx), -1).mean(dim=1), w[idx])

        def batch_loss(idx):
            # Deep supervision: the mean loss of every round's scores.
            scores = net(cells[idx])
            return sum(round_loss(s, idx) for s in scores) / len(scores)

        optimizer = adam(
            net.parameters(), lr=self.learning_rate_init, weight_decay=self.alpha
        )
        self._train(
            {"module_": net},
            batch_loss,
            X.shape[0],
            context,
            optimizer,
            max_grad_norm=1.0,
        )
        return self

    def _scores(self, X):
        torch = import_torch()

        def forward(net, rows):
            return torch.softmax(net(rows.long())[-1], dim=-1)

        return self._predict_batches(forward, X, batch_size=256)

    def predict_proba(self, X):
        """Probability of each cell's output after the last round.

        Parameters
        ----------
        X : array-like of shape (n_puzzles, n_cells)
            Puzzles as rows of integer cell codes.

        Returns
        -------
        proba : ndarray of shape (n_puzzles, n_cells, n_outputs)
            For Sudoku, the probability of digits ``1..size`` in each cell;
            for mazes, of "off the path" and "on the path".
        """
        check_is_fitted(self)
        X = self._validate_puzzles(X, reset=False)
        return self._scores(X)

    def predict(self, X):
        """Solve the puzzles.

        Parameters
        ----------
        X : array-like of shape (n_puzzles, n_cells)
            Puzzles as rows of integer cell codes.

        Returns
        -------
        solutions : ndarray of shape (n_puzzles, n_cells)
            Each cell's most probable output (givens and walls kept).
        """
        check_is_fitted(self)
        X = self._validate_puzzles(X, reset=False)
        return self._decode(self._scores(X), X)

    def score(self, X, y):
        """Return the fraction of puzzles solved exactly (every cell right).

        Parameters
        ----------
        X : array-like of shape (n_puzzles, n_cells)
            Puzzles.
        y : array-like of shape (n_puzzles, n_cells)
            Their solutions.

        Returns
        -------
        solve_rate : float
            Fraction of the puzzles whose every cell is predicted right.
        """
        pred = self.predict(X)
        y = np.asarray(y)
        if y.shape != pred.shape:
            raise ValueError(f"y must have shape {pred.shape}; got {y.shape}.")
        return float(np.mean(np.all(pred == y, axis=1)))

    def admm_states(self, X):
        """Return the residuals of the ADMM iterations in every round.

        Parameters
        ----------
        X : array-like of shape (n_puzzles, n_cells)
            Puzzles.

        Returns
        -------
        states : dict of ndarray
            ``"primal_residual"``, ``"disagreement"`` (of neighbouring cells'
            restricted states) and ``"dual_norm"``, each of shape
            (n_rounds, n_admm_iter, n_puzzles).
        """
        check_is_fitted(self)
        X = self._validate_puzzles(X, reset=False)
        torch = import_torch()
        net = copy.deepcopy(self.module_).to(dtype=torch.float64).eval()
        with torch.no_grad():
            _, rounds = net(torch.as_tensor(X), return_states=True)
        return {
            name: np.stack([getattr(st, name).numpy() for st in rounds])
            for name in ("primal_residual", "disagreement", "dual_norm")
        }


_COMMON_DOC = """
    stalk_dim : int, default={stalk_dim}
        Size of each cell agent's state.
    edge_dim : int, default={edge_dim}
        Size of what two joined cells must agree on (edge stalk).
    hidden : int, default=64
        Width of the cell encoder.
    n_rounds : int, default={n_rounds}
        Rounds of encode-then-coordinate; every round's scores enter the
        loss (deep supervision) and the last round's give the prediction.
    n_admm_iter : int, default={n_admm_iter}
        Unrolled ADMM iterations per round (how far, in graph hops, one
        round's coordination reaches).
    rho : float, default=1.0
        Initial ADMM step size (learned on a log scale).
    learn_sheaf : bool, default=True
        Learn the restriction maps; False keeps the constant sheaf (an
        ablation).
    carry_consensus : bool, default=True
        Start each round's ADMM from the consensus and dual variables where
        the previous round stopped (warm start), so that coordination
        accumulates over the rounds; False restarts them from zero (an
        ablation; with ``n_admm_iter=1`` no agent then hears its neighbours).
    alpha : float, default=0.0
        Weight decay.
    batch_size : int or "auto", default="auto"
        Puzzles per step; "auto" is ``min(32, n_puzzles)``.
    learning_rate_init : float, default=1e-2
        Adam's learning rate. Each minibatch gradient is clipped to norm 1,
        which keeps training at this rate stable (without clipping, losses
        of the 4 x 4 Sudoku solver spiked late in training).
    max_iter : int, default={max_iter}
        Maximum number of epochs.
    tol : float, default=1e-3
        Training stops when the epoch loss has not improved by ``tol`` for
        ``n_iter_no_change`` epochs.
    n_iter_no_change : int, default=5
        Epochs without improvement before training stops.
    warm_start : bool, default=False
        Continue the previous fit's network and optimiser. A change of the
        grid, ``stalk_dim``, ``edge_dim``, ``hidden``, ``n_rounds``,
        ``n_admm_iter``, ``rho``, ``learn_sheaf`` or ``carry_consensus``
        since the last fit raises a ValueError naming it (the fitted
        network is built from them); set ``warm_start=False`` to fit anew.
    random_state : int, RandomState instance or None, default=None
        Initialisation and minibatch order.
    device : str or torch.device, default="auto"
        "auto" uses CUDA when available and the problem is large enough.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.
"""


class SheafADMMSudokuSolver(_CellAgentsSolver):
    __doc__ = (
        """Sudoku solver whose cell agents coordinate through sheaf-ADMM.

    Each of the ``size**2`` cells is an agent. In each of ``n_rounds``
    rounds a shared encoder turns a cell's given digit (or blank) and its
    previous state into a convex quadratic objective; ``n_admm_iter``
    unrolled ADMM iterations then make agents joined by a constraint (same
    row, column or box; one pair of learned restriction maps per relation)
    agree on a learned projection of their states; a linear readout scores
    the digits of each cell. The whole is trained end to end on puzzles and
    their solutions, with the cross-entropy of every round's scores. Given
    digits are copied to the prediction.

    It learns to solve from examples; it is not an exact solver (an exact
    search, like the one behind :func:`~sklearn_ext.datasets.make_sudoku`,
    solves any puzzle). ``score`` is the fraction of puzzles solved exactly.

    Parameters
    ----------"""
        + _COMMON_DOC.format(
            stalk_dim=16, edge_dim=8, n_rounds=8, n_admm_iter=3, max_iter=60
        )
        + """
    Attributes
    ----------
    size_ : int
        Side of the grid (4 or 9), from the number of cells.
    edges_ : ndarray of shape (n_edges, 2)
        The constraint graph (:func:`sudoku_graph`).
    edge_types_ : ndarray of shape (n_edges,)
    module_ : torch.nn.Module
        The fitted network (on the CPU).
    n_features_in_ : int
        Number of cells.
    loss_curve_ : list of float
    n_iter_ : int
    device_ : str

    References
    ----------
    .. [1] J. Seely, B. Cupiał and L. Jones, "Learning Multi-Agent
       Coordination via Sheaf-ADMM", ICML 2026, arXiv:2605.31005.
    .. [2] R. B. Palm, U. Paquet and O. Winther, "Recurrent Relational
       Networks", NeurIPS 2018 (the message-passing peer).

    Examples
    --------
    >>> from sklearn_ext.coordination import SheafADMMSudokuSolver
    >>> from sklearn_ext.datasets import make_sudoku
    >>> ds = make_sudoku(40, size=4, random_state=0)
    >>> solver = SheafADMMSudokuSolver(max_iter=2, random_state=0)
    >>> solver.fit(ds.data, ds.target).predict(ds.data[:2]).shape
    (2, 16)
    """
    )

    _n_outputs = property(lambda self: self.size_)
    _n_symbols = property(lambda self: self.size_ + 1)

    def __init__(
        self,
        *,
        stalk_dim=16,
        edge_dim=8,
        hidden=64,
        n_rounds=8,
        n_admm_iter=3,
        rho=1.0,
        learn_sheaf=True,
        carry_consensus=True,
        alpha=0.0,
        batch_size="auto",
        learning_rate_init=1e-2,
        max_iter=60,
        tol=1e-3,
        n_iter_no_change=5,
        warm_start=False,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.stalk_dim = stalk_dim
        self.edge_dim = edge_dim
        self.hidden = hidden
        self.n_rounds = n_rounds
        self.n_admm_iter = n_admm_iter
        self.rho = rho
        self.learn_sheaf = learn_sheaf
        self.carry_consensus = carry_consensus
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _graph(self, n_features):
        size = math.isqrt(n_features)
        if size * size != n_features or size not in (4, 9):
            raise ValueError(
                "Sudoku puzzles are rows of 16 (4 x 4) or 81 (9 x 9) cells; X has "
                f"{n_features} columns (n_features = {n_features})."
            )
        self.size_ = size
        edges, types = sudoku_graph(size)
        return edges, types, size

    def _architecture_of(self, size):
        return {
            "size": size,
            "stalk_dim": self.stalk_dim,
            "edge_dim": self.edge_dim,
            "hidden": self.hidden,
            "n_rounds": self.n_rounds,
        }

    def _check_puzzles(self, X):
        X = _integer_codes(
            X, "X", 0, self.size_, f"digits 1..{self.size_}, 0 for a blank"
        )
        _check_givens_agree(X, self.size_)
        return X

    def _encode_targets(self, y, X):
        y = _integer_codes(y, "y", 1, self.size_, f"digits 1..{self.size_}")
        clash = (X > 0) & (X != y)
        if clash.any():
            row = int(np.flatnonzero(clash.any(axis=1))[0])
            raise ValueError(
                f"y disagrees with the given digits of puzzle {row}: a solution "
                "must keep every given."
            )
        return y - 1

    def _decode(self, scores, X):
        return np.where(X > 0, X, scores.argmax(axis=-1) + 1)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the cell agents on puzzles and their solutions.

        Parameters
        ----------
        X : array-like of shape (n_puzzles, size * size)
            Puzzles in row-major order: digits ``1..size``, 0 for a blank.
        y : array-like of shape (n_puzzles, size * size)
            Their solutions (digits ``1..size``, agreeing with the givens).
        sample_weight : array-like of shape (n_puzzles,), default=None
            Weights of the puzzles in the loss (a puzzle's loss is the mean
            over its cells).

        Returns
        -------
        self : SheafADMMSudokuSolver
            Fitted estimator.
        """
        return self._fit_puzzles(X, y, sample_weight)

    @classmethod
    def _get_test_params(cls):
        return {
            "stalk_dim": 4,
            "edge_dim": 2,
            "hidden": 8,
            "n_rounds": 2,
            "n_admm_iter": 2,
            "max_iter": 3,
            "device": "cpu",
        }

    def _make_test_data(self, n_samples, random_state):
        """4 x 4 puzzles and their solutions (for the GPU check)."""
        from sklearn_ext.datasets import make_sudoku

        ds = make_sudoku(n_samples, size=4, random_state=random_state)
        return ds.data, ds.target

    @classmethod
    def _gpu_check_params(cls):
        # 9 x 9-sized work per step: 4 x 4 puzzles in large batches.
        return {"batch_size": 512, "max_iter": 3}, 4000


class SheafADMMMazeSolver(_CellAgentsSolver):
    __doc__ = (
        """Maze shortest-path solver whose pixel agents coordinate through sheaf-ADMM.

    Each pixel of the maze is an agent, joined to its 4 neighbours (one pair
    of learned restriction maps for horizontal edges, one for vertical).
    In each of ``n_rounds`` rounds an encoder turns a pixel's code (wall,
    open, start, goal) and its previous state into a convex quadratic
    objective; ``n_admm_iter`` unrolled ADMM iterations make
    neighbours agree on a learned projection of their states; a linear
    readout scores "on the shortest path" for each pixel. Trained end to
    end on mazes and their paths; walls are never predicted on the path.
    Information travels about ``n_admm_iter`` pixels per round, so
    ``n_rounds * n_admm_iter`` should exceed the longest path.

    ``score`` is the fraction of mazes whose path is predicted exactly.

    Parameters
    ----------
    maze_shape : (int, int), default=None
        Height and width of the pixel grid; None takes a square grid.
    """
        + _COMMON_DOC.format(
            stalk_dim=16, edge_dim=8, n_rounds=8, n_admm_iter=4, max_iter=60
        )
        + """
    Attributes
    ----------
    maze_shape_ : (int, int)
    edges_ : ndarray of shape (n_edges, 2)
        The 4-neighbour graph (:func:`maze_graph`).
    edge_types_ : ndarray of shape (n_edges,)
    module_ : torch.nn.Module
        The fitted network (on the CPU).
    n_features_in_ : int
        Number of pixels.
    loss_curve_ : list of float
    n_iter_ : int
    device_ : str

    References
    ----------
    .. [1] J. Seely, B. Cupiał and L. Jones, "Learning Multi-Agent
       Coordination via Sheaf-ADMM", ICML 2026, arXiv:2605.31005.

    Examples
    --------
    >>> from sklearn_ext.coordination import SheafADMMMazeSolver
    >>> from sklearn_ext.datasets import make_mazes
    >>> ds = make_mazes(40, rooms=(2, 2), random_state=0)
    >>> solver = SheafADMMMazeSolver(max_iter=2, random_state=0)
    >>> solver.fit(ds.data, ds.target).predict(ds.data[:2]).shape
    (2, 25)
    """
    )

    _n_outputs = 2
    _n_symbols = 4

    _parameter_constraints = {
        **_CellAgentsSolver._parameter_constraints,
        "maze_shape": [tuple, list, None],
    }

    def __init__(
        self,
        *,
        maze_shape=None,
        stalk_dim=16,
        edge_dim=8,
        hidden=64,
        n_rounds=8,
        n_admm_iter=4,
        rho=1.0,
        learn_sheaf=True,
        carry_consensus=True,
        alpha=0.0,
        batch_size="auto",
        learning_rate_init=1e-2,
        max_iter=60,
        tol=1e-3,
        n_iter_no_change=5,
        warm_start=False,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.maze_shape = maze_shape
        self.stalk_dim = stalk_dim
        self.edge_dim = edge_dim
        self.hidden = hidden
        self.n_rounds = n_rounds
        self.n_admm_iter = n_admm_iter
        self.rho = rho
        self.learn_sheaf = learn_sheaf
        self.carry_consensus = carry_consensus
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _graph(self, n_features):
        if n_features < 2:
            raise ValueError(
                "a maze needs at least 2 pixels (its start and its goal); X has "
                f"{n_features} column (n_features = {n_features})."
            )
        if self.maze_shape is None:
            side = math.isqrt(n_features)
            if side * side != n_features:
                raise ValueError(
                    f"X has {n_features} columns (n_features = {n_features}), not "
                    "a square number: give maze_shape=(height, width)."
                )
            shape = (side, side)
        else:
            shape = tuple(self.maze_shape)
            if len(shape) != 2 or not all(
                isinstance(s, Integral) and s >= 1 for s in shape
            ):
                raise ValueError(
                    "maze_shape must be two positive integers; got "
                    f"{self.maze_shape!r}."
                )
            if shape[0] * shape[1] != n_features:
                raise ValueError(
                    f"maze_shape={shape} has {shape[0] * shape[1]} pixels but X "
                    f"has {n_features} columns."
                )
        self.maze_shape_ = (int(shape[0]), int(shape[1]))
        edges, types = maze_graph(self.maze_shape_)
        return edges, types, self.maze_shape_

    def _architecture_of(self, shape):
        return {
            "maze_shape": shape,
            "stalk_dim": self.stalk_dim,
            "edge_dim": self.edge_dim,
            "hidden": self.hidden,
            "n_rounds": self.n_rounds,
        }

    def _check_puzzles(self, X):
        X = _integer_codes(X, "X", 0, 3, "0 wall, 1 open, 2 start, 3 goal")
        for code, name in ((2, "start"), (3, "goal")):
            count = (X == code).sum(axis=1)
            if np.any(count != 1):
                row = int(np.flatnonzero(count != 1)[0])
                raise ValueError(
                    f"maze {row} has {count[row]} {name} pixels (code {code}); "
                    "each maze needs exactly one."
                )
        return X

    def _encode_targets(self, y, X):
        y = _integer_codes(y, "y", 0, 1, "1 on the path, 0 off it")
        if np.any((X == 0) & (y == 1)):
            raise ValueError("y puts a path pixel on a wall (code 0) of X.")
        return y

    def _decode(self, scores, X):
        return np.where(X == 0, 0, scores.argmax(axis=-1))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the pixel agents on mazes and their shortest paths.

        Parameters
        ----------
        X : array-like of shape (n_mazes, height * width)
            Mazes in row-major order: 0 wall, 1 open, 2 start, 3 goal.
        y : array-like of shape (n_mazes, height * width)
            1 on the pixels of the shortest path (start and goal included).
        sample_weight : array-like of shape (n_mazes,), default=None
            Weights of the mazes in the loss (a maze's loss is the mean over
            its pixels).

        Returns
        -------
        self : SheafADMMMazeSolver
            Fitted estimator.
        """
        return self._fit_puzzles(X, y, sample_weight)

    @classmethod
    def _get_test_params(cls):
        return SheafADMMSudokuSolver._get_test_params()

    def _make_test_data(self, n_samples, random_state):
        """Mazes of 3 x 3 rooms and their paths (for the GPU check)."""
        from sklearn_ext.datasets import make_mazes

        ds = make_mazes(n_samples, rooms=(3, 3), random_state=random_state)
        return ds.data, ds.target

    @classmethod
    def _gpu_check_params(cls):
        return {"batch_size": 512, "max_iter": 3}, 4000
