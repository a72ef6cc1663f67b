"""Linear decision problems with an uncertain cost vector, nominal and robust.

A problem is a family of linear programs over a fixed feasible set ``W``,
indexed by an uncertain parameter vector ``c`` (one row of a regression target).
It solves, for a batch of rows at once,

- the nominal problem ``argmin_{w in W} cost(c, w)``, and
- the robust problem ``argmin_{w in W} max_{c in U} cost(c, w)`` over the box or
  ellipsoid ``U = {c_hat + h * u : ||u|| <= 1}`` (elementwise product), which for
  a cost linear in ``c`` is ``c_hat^T w + ||h * w||_q`` with ``q`` the dual norm
  (Ben-Tal and Nemirovski).

Problems are plain Python objects, not estimators: cheap to build, picklable,
and validated when built. This module holds their base class; the problems
live in ``_shortest_path_problem.py``, ``_portfolio_problem.py`` and
``_linear_problem.py``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["BaseProblem"]

_NORMS = ("l2", "linf")
# Memory cap of one chunk of rows in the vectorised solvers, in bytes.
_CHUNK_BYTES = 50_000_000


def _chunks(n_rows, bytes_per_row):
    """Row slices whose working memory stays under ``_CHUNK_BYTES``."""
    size = max(1, int(_CHUNK_BYTES // max(bytes_per_row, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


class BaseProblem(ABC):
    """Base class of linear decision problems with an uncertain cost vector.

    A subclass describes a fixed feasible set ``W`` and a cost that is linear in
    the parameter vector ``c``. It implements ``n_params``, ``n_decisions``,
    ``_solve``, ``_solve_robust`` and ``_cost_range`` (and ``_cost`` when the
    cost is not ``c^T w``) on inputs already checked by the public methods,
    which this class provides.

    Every public method works on a batch: row ``i`` of each array is one
    instance of the problem.

    See Also
    --------
    ShortestPathProblem : Shortest path on a grid.
    PortfolioProblem : Long-only portfolio with an uncertain return.
    LinearProblem : Any linear program with an uncertain cost vector.

    References
    ----------
    .. [1] A. Ben-Tal and A. Nemirovski, "Robust solutions of uncertain linear
       programs", Operations Research Letters, 25(1), 1-13, 1999.

    Examples
    --------
    >>> from sklearn_ext.robust_optimization import BaseProblem, ShortestPathProblem
    >>> problem = ShortestPathProblem(grid=(3, 3))
    >>> isinstance(problem, BaseProblem), problem.n_params, problem.n_decisions
    (True, 12, 12)
    """

    @property
    @abstractmethod
    def n_params(self):
        """Number of uncertain parameters: the width of ``C``."""

    @property
    @abstractmethod
    def n_decisions(self):
        """Number of decision variables: the width of a decision ``W``."""

    # --- the public, checked API -----------------------------------------------

    def solve(self, C):
        """Nominal decisions: the best decision for each row of parameters.

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.

        Returns
        -------
        W : ndarray of shape (n_samples, n_decisions)
            ``W[i]`` minimises ``cost(C[i], w)`` over the feasible set.
        """
        C = self._check_params(C, "C")
        return self._solve(C)

    def solve_robust(self, C_hat, half_widths, norm, shape=None):
        """Robust decisions: the best worst case over a box or an ellipsoid.

        The uncertainty set of row ``i`` is ``U_i = {C_hat[i] + half_widths[i] *
        u : ||u||_norm <= 1}`` (elementwise product; a zero half-width makes its
        coordinate certain). For a cost ``c^T w`` the worst case is
        ``C_hat[i]^T w + ||half_widths[i] * w||_q`` with ``q`` the dual norm:
        ``l2`` for ``norm="l2"``, ``l1`` for ``norm="linf"``. With ``shape`` (a
        matrix ``L``, l2 only) the set is the rotated ellipsoid
        ``{C_hat[i] + half_widths[i] * (L u) : ||u||_2 <= 1}`` and the worst
        case ``C_hat[i]^T w + ||L^T (half_widths[i] * w)||_2`` (a Mahalanobis
        set when ``L L^T`` is the residuals' correlation matrix).

        Parameters
        ----------
        C_hat : array-like of shape (n_samples, n_params)
            Centres of the uncertainty sets, e.g. point predictions.
        half_widths : array-like of shape (n_samples, n_params)
            Non-negative half-widths of the sets along each coordinate.
        norm : {"l2", "linf"}
            Shape of the set: an axis-aligned ellipsoid or a box.
        shape : array-like of shape (n_params, n_params), default=None
            ``L``, shared by the rows (``norm="l2"`` only). None is the
            identity.

        Returns
        -------
        W : ndarray of shape (n_samples, n_decisions)
            ``W[i]`` minimises ``max_{c in U_i} cost(c, w)`` over the feasible
            set.
        """
        C_hat = self._check_params(C_hat, "C_hat")
        half_widths = self._check_half_widths(half_widths, C_hat)
        self._check_norm(norm)
        if shape is None:
            return self._solve_robust(C_hat, half_widths, norm)
        if norm != "l2":
            raise ValueError(
                f"shape (a rotated ellipsoid) needs norm='l2' for {self!r}; got "
                f"norm={norm!r}."
            )
        shape = self._as_float_2d(shape, "shape")
        if shape.shape != (self.n_params, self.n_params):
            raise ValueError(
                f"shape must be a ({self.n_params}, {self.n_params}) matrix for "
                f"{self!r}; got shape {shape.shape}."
            )
        self._require_finite(shape, "shape")
        return self._solve_robust(C_hat, half_widths, norm, shape)

    def cost(self, C, W):
        """Cost of each decision under the matching row of parameters.

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.
        W : array-like of shape (n_samples, n_decisions)
            Decisions, one per row.

        Returns
        -------
        costs : ndarray of shape (n_samples,)
            ``cost(C[i], W[i])``.
        """
        C = self._check_params(C, "C")
        W = self._check_decisions(W, C.shape[0])
        return self._cost(C, W)

    def cost_range(self, C):
        """Smallest and largest cost over the feasible set, for each row.

        ``best`` is the cost of the nominal decision :meth:`solve` returns, so
        that ``(cost(C, W) - best) / (worst - best)`` is a regret in ``[0, 1]``
        (up to rounding; ``worst == best`` where every decision costs the same).

        Parameters
        ----------
        C : array-like of shape (n_samples, n_params)
            Parameters, one instance per row.

        Returns
        -------
        best : ndarray of shape (n_samples,)
            ``min_{w in W} cost(C[i], w)``.
        worst : ndarray of shape (n_samples,)
            ``max_{w in W} cost(C[i], w)``.
        """
        C = self._check_params(C, "C")
        return self._cost_range(C)

    # --- to implement ----------------------------------------------------------

    @abstractmethod
    def _solve(self, C):
        """Nominal decisions for checked parameters."""

    @abstractmethod
    def _solve_robust(self, C_hat, half_widths, norm, shape=None):
        """Robust decisions for checked centres, half-widths, norm and shape.

        ``shape`` is passed only when given (so a subclass written without it
        still serves axis-aligned sets).
        """

    @abstractmethod
    def _cost_range(self, C):
        """``(best, worst)`` for checked parameters."""

    def _cost(self, C, W):
        """``c^T w`` row by row; overridden where the cost is another one."""
        return np.einsum("ij,ij->i", C, W)

    # --- shared checks -----------------------------------------------------------

    def _as_float_2d(self, A, name):
        try:
            A = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be a numeric array for {self!r}; could not convert "
                f"it to float ({exc})."
            ) from None
        return A

    def _require_finite(self, A, name):
        if not np.isfinite(A).all():
            raise ValueError(
                f"{name} contains NaN or infinity; {self!r} needs finite values."
            )

    def _check_params(self, C, name):
        C = self._as_float_2d(C, name)
        if C.ndim != 2 or C.shape[1] != self.n_params:
            raise ValueError(
                f"{name} must be a 2-D array of shape (n_samples, {self.n_params}) "
                f"for {self!r}; got shape {C.shape}."
            )
        self._require_finite(C, name)
        return C

    def _check_half_widths(self, half_widths, C_hat):
        H = self._as_float_2d(half_widths, "half_widths")
        if H.shape != C_hat.shape:
            raise ValueError(
                f"half_widths must have the shape of C_hat, {C_hat.shape}, for "
                f"{self!r}; got shape {H.shape}."
            )
        self._require_finite(H, "half_widths")
        if (H < 0).any():
            raise ValueError(
                f"half_widths must be >= 0 for {self!r}; got a minimum of {H.min():g}."
            )
        return H

    def _check_norm(self, norm):
        if not isinstance(norm, str) or norm not in _NORMS:
            raise ValueError(
                f"norm must be one of {_NORMS} for {self!r}; got {norm!r}."
            )

    def _check_decisions(self, W, n_samples):
        W = self._as_float_2d(W, "W")
        if W.ndim != 2 or W.shape != (n_samples, self.n_decisions):
            raise ValueError(
                f"W must have shape ({n_samples}, {self.n_decisions}) (one decision "
                f"per row of C) for {self!r}; got shape {W.shape}."
            )
        self._require_finite(W, "W")
        return W

    # --- pickling: caches are rebuilt on demand ----------------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_cache", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _cached(self, key, build):
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = build()
        return cache[key]


# ---------------------------------------------------------------------------------
# Shortest path on a grid
# ---------------------------------------------------------------------------------
