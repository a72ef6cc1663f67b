"""Finite-sample upper confidence bounds for a miscoverage-regret frontier.

Two one-sided bounds on the mean of i.i.d. losses, and their combination over a
grid of robustness levels that holds simultaneously (a Learn-then-Test style
family-wise correction):

- :func:`~sklearn_ext.utils._bounds.binomial_upper_bound`: exact
  (Clopper-Pearson) bound for 0/1 losses, shared with the rl family.
- :func:`hoeffding_bentkus_upper_bound`: the Hoeffding-Bentkus bound for losses in
  [0, 1] (Bates, Angelopoulos, Lei, Malik and Jordan, 2021).
- :func:`betting_upper_bound`: the betting (Waudby-Smith-Ramdas) bound for losses
  in [0, 1], much tighter when the losses vary little.
- :func:`band_allocation`: the share of the freed budget that
  :func:`frontier_bounds`' miscoverage band (one band over every radius at
  once, not one bound per level) takes.
- :func:`fixed_sequence_levels`: the levels certified for a fixed target by
  Learn-then-Test with fixed-sequence testing (MAPIE's FWER control).
- :func:`frontier_bounds`: both over a grid, valid simultaneously.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from functools import lru_cache

import numpy as np
from scipy.special import betainc, xlogy
from scipy.stats import binom

from sklearn_ext.utils._bounds import binomial_upper_bound

__all__ = [
    "band_range",
    "band_allocation",
    "betting_upper_bound",
    "fixed_sequence_levels",
    "frontier_bounds",
    "hoeffding_bentkus_upper_bound",
    "min_calibration_size",
    "miscoverage_p_values",
    "regret_p_values",
]

# Simulations of uniform order statistics that calibrate the band, and the
# confidence with which the calibrated level is below the exact one.
_BAND_SIMULATIONS = 4000
_BAND_CONFIDENCE = 0.999


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


def betting_upper_bound(losses, delta, n_bisect=50, bet_delta=None):
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
    bet_delta : float, default=None
        The ``delta`` of the betting fractions ``nu_i`` (``delta`` when None).
        Any fixed value keeps the bound valid at level ``delta``; with the
        fractions fixed, a larger ``delta`` lowers only the threshold, so the
        bound never grows.

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
    bet = delta if bet_delta is None else bet_delta
    nu = np.minimum(1.0, np.sqrt(2.0 * np.log(1.0 / bet) / (n * s2_prev)))
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


# The upper end of the default band: the levels certified to miss at most
# this often pay for it (the fraction of a uniform-quantile grid below it).
_BAND_HIGH = 0.95


def band_range(n, floor=1.0, high=0.5):
    """The miscoverages ``[low, high]`` on which a band is calibrated.

    ``low = min(0.01, 10 / n, floor)``: miscoverages below ``low`` cannot be
    certified by ``n`` samples anyway unless ``n`` is large (the band's
    bounds are raised to it). ``floor`` (the smallest bound that Bonferroni
    can give, ``1 - (delta / K) ** (1 / n)``) keeps the raised bounds below
    Bonferroni's. Fixed before any calibration score is seen.
    """
    return min(0.01, 10.0 / n, floor), high


@lru_cache(maxsize=64)
def _band_statistics(n, low, high):
    """Sorted smallest band p-values over seeded simulations (see below).

    For ``n`` i.i.d. uniforms with order statistics ``U_(1) <= ... <= U_(n)``
    the band fails iff some ``t`` in ``[low, high]`` exceeds the
    Clopper-Pearson bound ``b_j(delta')`` of the count ``j = #{U_i < t}``;
    on ``(U_(j), U_(j+1)]`` the worst ``t`` is ``min(U_(j+1), high)``, which
    exceeds ``b_j(delta')`` iff the exact p-value
    ``P(Beta(j + 1, n - j) >= t)`` is below ``delta'``. Returns the smallest
    such p-value of each of ``_BAND_SIMULATIONS`` simulations, sorted.
    """
    rng = np.random.default_rng(0)
    j = np.arange(n)
    smallest = np.empty(_BAND_SIMULATIONS)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, _BAND_SIMULATIONS, chunk):
        size = min(chunk, _BAND_SIMULATIONS - start)
        U = np.sort(rng.random((size, n)), axis=1)
        before = np.hstack([np.zeros((size, 1)), U[:, :-1]])
        worst = np.minimum(U, high)
        active = worst > np.maximum(before, low)
        p = np.where(active, 1.0 - betainc(j + 1.0, n - j, worst), 1.0)
        smallest[start : start + size] = p.min(axis=1)
    return np.sort(smallest)


def _band_delta(n, budget, low, high):
    """Per-count level ``delta'`` of a band of failure probability ``budget``.

    A conservative ``budget``-quantile of the smallest p-value of
    :func:`_band_statistics`: the order statistic whose rank is the
    ``1 - _BAND_CONFIDENCE`` quantile of Binomial(simulations, budget), so
    that ``delta'`` lies below the exact quantile with probability at least
    ``_BAND_CONFIDENCE`` over the simulation. Non-decreasing in ``budget``;
    0 when the budget is too small for any band.
    """
    rank = int(binom.ppf(1.0 - _BAND_CONFIDENCE, _BAND_SIMULATIONS, budget))
    if rank < 1:
        return 0.0
    return float(_band_statistics(int(n), float(low), float(high))[rank - 1])


def _ltt_floor(n, level):
    """The smallest Clopper-Pearson bound at ``level``: that of 0 misses."""
    return 1.0 - level ** (1.0 / n)


@lru_cache(maxsize=256)
def band_allocation(n, n_levels, delta, with_regret):
    """The band's share of the budget that :func:`frontier_bounds` frees.

    ``correction="band"`` frees the LTT-Bonferroni budget of the levels
    certified to miss at most ``high`` of the time, ``m delta / (2K)``, and
    splits it: ``share`` to the miscoverage band and ``1 - share`` to the
    regret bounds. The share maximises, for ``m = K``, the product of the two
    gains over LTT-Bonferroni's per-level level ``delta / (2K)``:
    ``max(1, delta' / (delta / (2K)))`` (the band is used only when it beats
    Bonferroni) and ``2 - share`` for the regret, over the eleven shares
    ``np.linspace(0, 1, 11)``. From ``n``, ``K`` and ``delta`` only, so fixed
    before the calibration data are seen. Without regret the share is 1.
    """
    if not with_regret:
        return 1.0
    level = _per_level_delta(delta, n_levels, True)
    low, high = band_range(n, _ltt_floor(n, level), _BAND_HIGH)
    best = (0.0, 0.0)
    for share in np.linspace(0.0, 1.0, 11):
        band = _band_delta(n, share * n_levels * level, low, high)
        gain = max(1.0, band / level) * (2.0 - share)
        if gain > best[0] + 1e-12:
            best = (gain, float(share))
    return best[1]


def _capped_band(counts, n, delta, n_levels, with_regret):
    """Miscoverage bounds of ``correction="band"`` and the regret's level.

    See :func:`frontier_bounds`. Returns ``(bounds, regret_level, info)``.
    """
    level = _per_level_delta(delta, n_levels, with_regret)
    ltt = binomial_upper_bound(counts, n, level)
    low, high = band_range(n, _ltt_floor(n, level), _BAND_HIGH)
    # Fixed-sequence test of "alpha_k > high" from the widest set down, each
    # at the full LTT level: the levels it rejects miss at most that often
    # unless some LTT bound of a level above high fails.
    p = binom.cdf(counts, n, high)
    certified = 0
    for value in p[::-1]:
        if value > level:
            break
        certified += 1
    share = band_allocation(int(n), n_levels, float(delta), with_regret)
    budget = certified * level
    delta_band = _band_delta(int(n), share * budget, low, high)
    regret_level = level + (1.0 - share) * budget / n_levels
    info = {"certified": certified, "share": share, "delta_band": delta_band}
    if delta_band < level:  # no band beats Bonferroni: LTT-Bonferroni's
        return ltt, regret_level, info
    band = binomial_upper_bound(counts, n, delta_band)
    bound = np.where(band < high, np.maximum(band, low), ltt)
    return bound, regret_level, info


def _mapie_risk_control():
    try:
        from mapie.risk_control import control_fwer
        from mapie.risk_control.methods import compute_hoeffding_bentkus_p_value
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError(
            'bound="fixed-sequence" uses MAPIE\'s risk control: install it with '
            "pip install 'sklearn-ext[conformal]' (mapie>=1.6)."
        ) from exc
    return control_fwer, compute_hoeffding_bentkus_p_value


def miscoverage_p_values(n_errors, n, target):
    """Exact p-values of the nulls ``alpha_k > target`` from miss counts.

    Under the null the count is Binomial(n, alpha_k), stochastically larger
    than Binomial(n, target), so ``P(Binomial(n, target) <= n_errors)`` is a
    valid p-value.
    """
    return binom.cdf(np.asarray(n_errors), n, target)


def regret_p_values(mean, n, target):
    """Hoeffding-Bentkus p-values (MAPIE's) of the nulls ``R_k > target``."""
    _, hb_p_value = _mapie_risk_control()
    return np.asarray(hb_p_value(np.asarray(mean, float), n, target))[:, 0]


def fixed_sequence_levels(p_values, delta):
    """Indices certified by fixed-sequence testing of ordered hypotheses.

    ``p_values[k]`` tests the null of level ``k``, in the order in which they
    are to be tested (the easiest first); MAPIE's FWER control
    (``mapie.risk_control.control_fwer(..., "fixed_sequence")``) tests them in
    that order at the full level ``delta`` and stops at the first p-value
    above it. The family-wise error rate is at most ``delta`` whatever the
    dependence between the tests (Bauer 1991), so with probability at least
    ``1 - delta`` no certified level is a true null.
    """
    control_fwer, _ = _mapie_risk_control()
    p_values = np.asarray(p_values, float)
    return np.asarray(control_fwer(p_values, delta, "fixed_sequence"), dtype=int)


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
    correction : {"band", "bonferroni", "none"}
        ``"band"`` (the estimator's default): never looser than
        ``"bonferroni"`` at any level, for both quantities. Miscoverage: a
        fixed-sequence test (from the widest set down, each at
        LTT-Bonferroni's per-level level ``delta / (2K)``) certifies ``m``
        levels to miss at most a fraction ``high = 0.95`` of the time; their
        Bonferroni budget ``m delta / (2K)`` goes to one simultaneous
        binomial band on ``[low, high]`` (``share`` of it,
        :func:`band_allocation`) and to the regret bounds (the rest, spread
        over the ``K`` levels on top of ``delta / (2K)`` each). A level's
        miscoverage bound is the band's when that is below ``high``, else
        LTT-Bonferroni's (the fallback per level); the band is
        used only when its per-count level ``delta'`` is at least
        ``delta / (2K)``, and its floor ``low`` is below the smallest
        Bonferroni bound, so each band bound is at most LTT-Bonferroni's.
        *Validity*: a wrong rejection of the test is a failure of the
        LTT-Bonferroni bound of a level above ``high``, which the union
        bound counts anyway; outside that event the budget split between the
        band and the regret is at most the Bonferroni budget
        ``K_le delta / (2K)`` of the ``K_le`` levels that truly miss at most
        that often (band and regret failures are nested in their levels), so
        all bounds hold with probability at least
        ``1 - (K_hi + K_le) delta / (2K) - K delta / (2K) = 1 - delta``.
        When the band's level would fall below ``delta / (2K)`` the
        miscoverage bounds are LTT-Bonferroni's and only the regret gains.
        ``"bonferroni"`` (Learn-then-Test with Bonferroni) splits ``delta`` over the two
        quantities and the levels. Either way every bound holds
        simultaneously with probability at least ``1 - delta``. ``"none"``
        gives pointwise bounds at level ``delta`` each (for comparison in
        benchmarks).
    regret_bound : {"betting", "hoeffding_bentkus"}
        The bound on the mean regret.

    Returns
    -------
    miscoverage_upper, regret_upper : ndarray of shape (n_levels,)
        ``regret_upper`` is None when ``regret`` is None.
    """
    n, n_levels = miscovered.shape
    with_regret = regret is not None
    counts = miscovered.sum(axis=0)
    ltt_level = _per_level_delta(delta, n_levels, with_regret)
    bet_delta = None
    if correction == "band":
        mis_upper, delta_k, _ = _capped_band(counts, n, delta, n_levels, with_regret)
        # The betting fractions of LTT-Bonferroni's level, so that a larger
        # level only lowers the threshold (never a looser bound).
        bet_delta = ltt_level
    elif correction == "bonferroni":
        delta_k = ltt_level
        mis_upper = binomial_upper_bound(counts, n, delta_k)
    else:
        delta_k = delta
        mis_upper = binomial_upper_bound(counts, n, delta_k)
    # The true miscoverage is non-increasing in the radius (nested sets), so a
    # bound valid at a smaller radius is valid at every larger one as well.
    mis_upper = np.minimum.accumulate(mis_upper)
    if regret is None:
        return mis_upper, None
    if regret_bound == "betting":
        reg_upper = betting_upper_bound(regret, delta_k, bet_delta=bet_delta)
    else:
        reg_upper = hoeffding_bentkus_upper_bound(regret.mean(axis=0), n, delta_k)
    return mis_upper, reg_upper
