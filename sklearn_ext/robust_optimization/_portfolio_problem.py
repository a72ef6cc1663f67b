"""The long-only portfolio problem: nominal and robust, batched."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np

from sklearn_ext.robust_optimization._problems import BaseProblem

__all__ = ["PortfolioProblem"]


def _check_scalar(value, name, owner, *, low, include_low=True, integer=False):
    kind = Integral if integer else Real
    bad = (
        not isinstance(value, kind)
        or isinstance(value, bool)
        or not np.isfinite(value)
        or (value < low if include_low else value <= low)
    )
    if bad:
        what = "an integer" if integer else "a finite number"
        op = ">=" if include_low else ">"
        raise ValueError(f"{owner}: {name} must be {what} {op} {low}; got {value!r}.")


class PortfolioProblem(BaseProblem):
    """Long-only, fully invested portfolio with uncertain asset returns.

    The feasible set is ``{w >= 0, sum(w) = budget}``; the parameters ``c`` are
    the assets' returns and the cost is the negative return ``-c^T w``. All
    decisions have closed forms, vectorised over rows (no solver):

    - nominal: the whole budget on the asset of highest return;
    - box-robust (``norm="linf"``): the whole budget on the asset of highest
      ``C_hat - half_widths``;
    - ellipsoid-robust (``norm="l2"``): maximise ``mu^T w - ||s * w||_2``
      (``mu = C_hat``, ``s = half_widths``). Its KKT conditions give
      ``w_j`` proportional to ``(mu_j - nu)_+ / s_j^2`` where ``nu`` solves
      ``sum_j (mu_j - nu)_+^2 / s_j^2 = 1``, and the optimal worst-case return
      per unit of budget is ``nu`` itself. ``nu`` is found exactly from the
      sorted returns and cumulative sums. Assets with a zero half-width are
      riskless: the best of them takes the whole budget when its return is at
      least the risky optimum ``nu`` (the objective is linear along the segment
      between the two).

    Ties go to the lowest asset index (nominal and box), and to the riskless
    asset against an equally good risky portfolio.

    Parameters
    ----------
    n_assets : int
        Number of assets, ``>= 1``.
    budget : float, default=1.0
        Total weight, ``> 0``.

    Attributes
    ----------
    n_params : int
        ``n_assets``.
    n_decisions : int
        ``n_assets``.

    References
    ----------
    .. [1] D. Goldfarb and G. Iyengar, "Robust portfolio selection problems",
       Mathematics of Operations Research, 28(1), 1-38, 2003.
    .. [2] A. Ben-Tal and A. Nemirovski, "Robust solutions of uncertain linear
       programs", Operations Research Letters, 25(1), 1-13, 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.robust_optimization import PortfolioProblem
    >>> problem = PortfolioProblem(n_assets=3)
    >>> mu = np.array([[0.10, 0.08, 0.02]])
    >>> problem.solve(mu).tolist()
    [[1.0, 0.0, 0.0]]
    >>> s = np.array([[0.20, 0.05, 0.0]])
    >>> problem.solve_robust(mu, s, norm="linf").tolist()
    [[0.0, 1.0, 0.0]]
    >>> w = problem.solve_robust(mu, s, norm="l2")
    >>> np.round(w, 3).tolist()
    [[0.082, 0.918, 0.0]]
    """

    def __init__(self, n_assets, budget=1.0):
        _check_scalar(n_assets, "n_assets", "PortfolioProblem", low=1, integer=True)
        _check_scalar(budget, "budget", "PortfolioProblem", low=0, include_low=False)
        self.n_assets = int(n_assets)
        self.budget = float(budget)

    def __repr__(self):
        return f"PortfolioProblem(n_assets={self.n_assets}, budget={self.budget!r})"

    @property
    def n_params(self):
        """Number of assets: the width of ``C``."""
        return self.n_assets

    @property
    def n_decisions(self):
        """Number of assets: the width of a decision."""
        return self.n_assets

    def _all_in(self, scores):
        """The whole budget on the highest score (lowest index on ties)."""
        W = np.zeros(scores.shape)
        W[np.arange(scores.shape[0]), np.argmax(scores, axis=1)] = self.budget
        return W

    def _cost(self, C, W):
        return -np.einsum("ij,ij->i", C, W)

    def _solve(self, C):
        return self._all_in(C)

    def _solve_robust(self, C_hat, half_widths, norm, shape=None):
        if norm == "linf":
            return self._all_in(C_hat - half_widths)
        if shape is None:
            return self.budget * _simplex_l2_robust(C_hat, half_widths)
        # A rotated ellipsoid has no closed form: the batched barrier over the
        # simplex, minimising -mu^T w + ||L^T (s * w)||.
        barrier = self._cached("barrier", self._barrier)
        W, ok = barrier.solve(-C_hat, half_widths, shape)
        if not ok.all():
            raise ValueError(
                f"{self!r}: the rotated-ellipsoid robust portfolio of rows "
                f"{np.flatnonzero(~ok)[:5].tolist()} did not converge."
            )
        return np.clip(W, 0.0, None) + 0.0

    def _barrier(self):
        from sklearn_ext.robust_optimization._socp import PolytopeBarrier

        n = self.n_assets
        return PolytopeBarrier(
            None,
            None,
            np.ones((1, n)),
            np.array([self.budget]),
            np.zeros(n),
            np.full(n, np.inf),
        )

    def _cost_range(self, C):
        return -self.budget * C.max(axis=1), -self.budget * C.min(axis=1)


def _simplex_l2_robust(mu, s):
    """Row-wise argmax of ``mu^T v - ||s * v||_2`` over the unit simplex."""
    n, p = mu.shape
    idx = np.arange(n)
    # Scale each row by its largest half-width (the argmax does not change).
    sigma = s.max(axis=1, keepdims=True)
    sigma = np.where(sigma > 0, sigma, 1.0)
    mu, s2 = mu / sigma, (s / sigma) ** 2
    risky = s2 > 0  # a squared half-width that underflows counts as riskless
    inv = np.where(risky, 1.0 / np.where(risky, s2, 1.0), 0.0)

    # Best riskless asset of each row (-inf where there is none).
    riskless_mu = np.where(risky, -np.inf, mu)
    j0 = np.argmax(riskless_mu, axis=1)
    m0 = riskless_mu[idx, j0]
    has_risky = risky.any(axis=1)

    # Risky optimum: risky assets by decreasing return, riskless ones last.
    order = np.argsort(np.where(risky, -mu, np.inf), axis=1, kind="stable")
    mu_o = np.take_along_axis(mu, order, axis=1)
    inv_o = np.take_along_axis(inv, order, axis=1)
    risky_o = np.take_along_axis(risky, order, axis=1)
    # Gaps below the top return: phi(y) = sum_active inv * (y - d)^2 with
    # y = mu_top - nu >= 0 is increasing; solve phi(y) = 1.
    d = np.where(risky_o, mu_o[:, :1] - mu_o, 0.0)
    A = np.cumsum(inv_o, axis=1)
    B = np.cumsum(inv_o * d, axis=1)
    Q = np.cumsum(inv_o * d**2, axis=1)
    next_risky = np.zeros_like(risky_o)
    next_risky[:, :-1] = risky_o[:, 1:]
    next_d = np.zeros_like(d)
    next_d[:, :-1] = d[:, 1:]
    # phi of the top-k assets at the next breakpoint; stop at the first k where it
    # reaches 1 (or where no risky asset follows).
    phi_next = A * next_d**2 - 2.0 * B * next_d + Q
    stop = ~next_risky | (phi_next >= 1.0)
    k = np.argmax(stop, axis=1)
    Ak, Bk, Qk = A[idx, k], B[idx, k], Q[idx, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (Bk + np.sqrt(np.maximum(Bk**2 - Ak * (Qk - 1.0), 0.0))) / Ak
        active = np.arange(p)[None, :] <= k[:, None]
        for _ in range(2):  # Newton polish on the exact active-set function
            gap = np.where(active, y[:, None] - d, 0.0)
            phi = (inv_o * gap**2).sum(axis=1)
            slope = 2.0 * (inv_o * gap).sum(axis=1)
            y = np.where(slope > 0, y - (phi - 1.0) / slope, y)
    nu = mu_o[:, 0] - y
    weights_o = np.where(active, inv_o * np.maximum(y[:, None] - d, 0.0), 0.0)
    total = weights_o.sum(axis=1, keepdims=True)
    weights_o = weights_o / np.where(total > 0, total, 1.0)

    V = np.zeros((n, p))
    use_risky = has_risky & ~(m0 >= nu)
    np.put_along_axis(V, order, np.where(use_risky[:, None], weights_o, 0.0), axis=1)
    riskless_rows = idx[~use_risky]
    V[riskless_rows, j0[~use_risky]] = 1.0
    return V


# ---------------------------------------------------------------------------------
# General linear program
# ---------------------------------------------------------------------------------
