"""Finite-sample upper confidence bounds for a miscoverage-regret frontier.

Two one-sided bounds on the mean of i.i.d. losses, and their combination over a
grid of robustness levels that holds simultaneously (a Learn-then-Test style
family-wise correction):

- :func:`binomial_upper_bound`: exact (Clopper-Pearson) bound for 0/1 losses.
- :func:`hoeffding_bentkus_upper_bound`: the Hoeffding-Bentkus bound for losses in
  [0, 1] (Bates, Angelopoulos, Lei, Malik and Jordan, 2021).
- :func:`betting_upper_bound`: the betting (Waudby-Smith-Ramdas) bound for losses
  in [0, 1], much tighter when the losses vary little.
- :func:`frontier_bounds`: both over a grid, valid simultaneously.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from scipy.special import xlogy
from scipy.stats import beta, binom

__all__ = [
    "betting_upper_bound",
    "binomial_upper_bound",
    "frontier_bounds",
    "hoeffding_bentkus_upper_bound",
    "min_calibration_size",
]


def binomial_upper_bound(n_errors, n, delta):
    """Exact one-sided Clopper-Pearson upper bound on a Bernoulli mean.

    With probability at least ``1 - delta`` over ``n`` i.i.d. Bernoulli(p) draws
    with ``n_errors`` successes, ``p <= bound``.
    """
    n_errors = np.asarray(n_errors, dtype=float)
    with np.errstate(invalid="ignore"):
        bound = beta.ppf(1.0 - delta, n_errors + 1.0, n - n_errors)
    return np.where(n_errors >= n, 1.0, bound)


def _hb_p_value(mean, n, t):
    """Hoeffding-Bentkus p-value of the null ``E[loss] >= t`` given the mean."""
    a = np.minimum(mean, t)
    h1 = xlogy(a, a / t) + xlogy(1.0 - a, (1.0 - a) / (1.0 - t))
    hoeffding = np.exp(-n * h1)
    bentkus = math.e * binom.cdf(np.ceil(n * mean - 1e-9), n, t)
    return np.minimum(hoeffding, bentkus)


def hoeffding_bentkus_upper_bound(mean, n, delta, n_bisect=60):
    """Hoeffding-Bentkus upper bound on the mean of losses in [0, 1].

    The bound is the smallest ``t`` whose null hypothesis ``E[loss] >= t`` the
    Hoeffding-Bentkus p-value rejects at level ``delta``. With probability at
    least ``1 - delta`` over ``n`` i.i.d. losses with empirical mean ``mean``,
    the true mean is at most the bound.
    """
    mean = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    lo, hi = mean.copy(), np.ones_like(mean)
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            reject = _hb_p_value(mean, n, mid) <= delta
        hi = np.where(reject, mid, hi)
        lo = np.where(reject, lo, mid)
    return np.where(mean >= 1.0, 1.0, hi)


def betting_upper_bound(losses, delta, n_bisect=50):
    """Betting upper bound on the mean of losses in [0, 1], one per column.

    For a candidate mean ``m``, a gambler who bets against ``m`` with the
    predictable fractions ``nu_i = min(1, sqrt(2 log(1/delta) / (n s2_{i-1})))``
    (``s2`` a running variance estimate) grows the capital
    ``K_i(m) = prod_{j <= i} (1 - nu_j (L_j - m))``, a nonnegative martingale
    when ``m`` is the true mean. By Ville's inequality the capital exceeds
    ``1 / delta`` with probability at most ``delta``, so
    ``inf{m : max_i K_i(m) >= 1 / delta}`` is an upper bound at level ``delta``
    (Waudby-Smith and Ramdas, 2024; the WSR bound of Bates et al., 2021). The
    losses are used in their given order, which must be exchangeable.

    Parameters
    ----------
    losses : ndarray of shape (n_samples, n_columns)
        Losses in [0, 1].
    delta : float
        Error level of each column's bound.
    n_bisect : int, default=50
        Bisection steps on ``m``.

    Returns
    -------
    bound : ndarray of shape (n_columns,)
    """
    losses = np.clip(np.asarray(losses, dtype=float), 0.0, 1.0)
    n = losses.shape[0]
    steps = np.arange(1, n + 1)[:, None]
    mu = (0.5 + np.cumsum(losses, axis=0)) / (steps + 1)
    s2 = (0.25 + np.cumsum((losses - mu) ** 2, axis=0)) / (steps + 1)
    s2_prev = np.vstack([np.full((1, losses.shape[1]), 0.25), s2[:-1]])
    nu = np.minimum(1.0, np.sqrt(2.0 * np.log(1.0 / delta) / (n * s2_prev)))
    threshold = np.log(1.0 / delta)
    lo = np.zeros(losses.shape[1])
    hi = np.ones(losses.shape[1])
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore"):
            log_capital = np.cumsum(np.log1p(-nu * (losses - mid)), axis=0)
        reject = log_capital.max(axis=0) >= threshold
        hi = np.where(reject, mid, hi)
        lo = np.where(reject, lo, mid)
    return hi


def _per_level_delta(delta, n_levels, with_regret):
    """Error budget of one bound: delta split over the quantities and levels."""
    return delta / ((2 if with_regret else 1) * n_levels)


def min_calibration_size(delta, n_levels, with_regret):
    """Smallest calibration size whose bounds can fall below 1/2.

    With ``n`` calibration samples and no observed loss at all, both bounds equal
    ``1 - delta_k ** (1 / n)`` (``delta_k`` the per-level budget); below this
    size even a perfect level cannot be certified to err less than half the time.
    """
    delta_k = _per_level_delta(delta, n_levels, with_regret)
    return int(math.ceil(math.log(1.0 / delta_k) / math.log(2.0)))


def frontier_bounds(
    miscovered, regret, delta, correction="bonferroni", regret_bound="betting"
):
    """Upper bounds on miscoverage and regret at every level of a grid.

    Parameters
    ----------
    miscovered : ndarray of shape (n_samples, n_levels), dtype bool
        Miscoverage indicators; the sets are nested, so each row is
        non-increasing along the levels.
    regret : ndarray of shape (n_samples, n_levels) or None
        Normalised regret in [0, 1], or None when there is no decision problem.
    delta : float
        Total error budget.
    correction : {"bonferroni", "none"}
        ``"bonferroni"`` (the estimator's choice) spends ``delta`` over the two
        quantities and the levels, so that every bound holds simultaneously
        with probability at least ``1 - delta``. ``"none"`` gives pointwise
        bounds at level ``delta`` each (for comparison in benchmarks).
    regret_bound : {"betting", "hoeffding_bentkus"}
        The bound on the mean regret.

    Returns
    -------
    miscoverage_upper, regret_upper : ndarray of shape (n_levels,)
        ``regret_upper`` is None when ``regret`` is None.
    """
    n, n_levels = miscovered.shape
    if correction == "bonferroni":
        delta_k = _per_level_delta(delta, n_levels, regret is not None)
    else:
        delta_k = delta
    mis_upper = binomial_upper_bound(miscovered.sum(axis=0), n, delta_k)
    # The true miscoverage is non-increasing in the radius (nested sets), so a
    # bound valid at a smaller radius is valid at every larger one as well.
    mis_upper = np.minimum.accumulate(mis_upper)
    if regret is None:
        return mis_upper, None
    if regret_bound == "betting":
        reg_upper = betting_upper_bound(regret, delta_k)
    else:
        reg_upper = hoeffding_bentkus_upper_bound(regret.mean(axis=0), n, delta_k)
    return mis_upper, reg_upper
