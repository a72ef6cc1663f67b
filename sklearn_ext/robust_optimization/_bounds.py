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
- :func:`simultaneous_binomial_band`: upper bounds on a survival function at
  every radius at once (one band, not one bound per level).
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
    "betting_upper_bound",
    "fixed_sequence_levels",
    "frontier_bounds",
    "hoeffding_bentkus_upper_bound",
    "min_calibration_size",
    "miscoverage_p_values",
    "regret_p_values",
    "simultaneous_binomial_band",
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


def band_range(n):
    """The miscoverages ``[low, high]`` on which the band is calibrated.

    ``high = 1/2``; ``low = min(0.01, 10 / n)``: miscoverages below ``low``
    cannot be certified by ``n`` samples anyway unless ``n`` is large. Fixed by
    ``n`` alone, before any calibration score is seen.
    """
    return min(0.01, 10.0 / n), 0.5


@lru_cache(maxsize=64)
def _band_delta(n, delta, low, high):
    """Per-count level ``delta'`` of the simultaneous band (see below).

    For ``n`` i.i.d. uniforms with order statistics ``U_(1) <= ... <= U_(n)``
    the band fails iff some ``t`` in ``[low, high]`` exceeds the
    Clopper-Pearson bound ``b_j(delta')`` of the count ``j = #{U_i < t}``;
    on ``(U_(j), U_(j+1)]`` the worst ``t`` is ``min(U_(j+1), high)``, which
    exceeds ``b_j(delta')`` iff the exact p-value
    ``P(Beta(j + 1, n - j) >= t)`` is below ``delta'``. ``delta'`` is a
    conservative ``delta``-quantile of the smallest such p-value over
    ``_BAND_SIMULATIONS`` seeded simulations: the order statistic whose rank
    is the ``1 - _BAND_CONFIDENCE`` quantile of Binomial(simulations, delta),
    so that ``delta'`` lies below the exact quantile with probability at least
    ``_BAND_CONFIDENCE`` over the simulation.
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
    rank = int(binom.ppf(1.0 - _BAND_CONFIDENCE, _BAND_SIMULATIONS, delta))
    return float(np.sort(smallest)[max(rank - 1, 0)])


def simultaneous_binomial_band(n_errors, n, delta, band_share=0.9):
    """Upper bounds on a survival function at a grid of radii, all at once.

    Let ``S`` be a score and ``alpha(r) = P(S > r)``, non-increasing in ``r``.
    Given ``n`` i.i.d. scores and ``n_errors[k] = #{S_i > r_k}`` at ``K``
    radii ``r_k`` chosen before the scores are seen, the bound of radius
    ``r_k`` is

    - the Clopper-Pearson bound of its count at the single level ``delta'``
      of :func:`_band_delta` (calibrated for ``band_share * delta`` on the
      miscoverages ``[low, high]`` of :func:`band_range`), raised to
      ``low``, when that bound is below ``high = 1/2``;
    - otherwise its Clopper-Pearson bound at level
      ``(1 - band_share) * delta / K`` (Bonferroni over the grid, for the
      levels with large miscoverage, where a band costs most).

    **Theorem.** With probability at least ``1 - delta`` (up to the
    simulation error of ``delta'``, itself controlled with probability
    ``_BAND_CONFIDENCE``), ``alpha(r_k) <= bound_k`` for every ``k`` at
    once, so also at a level chosen after looking at the bounds. Proof
    sketch: write ``S_i > r`` iff ``U_i < alpha(r)`` with ``U_i`` uniform (the
    quantile transform, which also covers ties). On the band's event (of
    probability ``>= 1 - band_share * delta``), every ``t = alpha(r)`` in
    ``[low, high]`` is at most the band bound of its count; a radius with
    ``alpha(r) > high`` has at least ``#{U_i < high}`` misses and hence a band
    bound ``>= high``, so it is one of the Bonferroni levels; ``alpha(r) <
    low`` is below the floor. The Bonferroni bounds hold together with
    probability ``>= 1 - (1 - band_share) * delta``.

    The band's level ``delta'`` does not shrink with ``K``: about
    ``delta / 20`` at ``n = 500``, against ``delta / K`` for a Bonferroni
    split (``delta / 50`` at 50 levels).
    """
    n_errors = np.asarray(n_errors, dtype=float)
    low, high = band_range(n)
    delta_band = _band_delta(int(n), float(band_share * delta), low, high)
    band = binomial_upper_bound(n_errors, n, delta_band)
    rest = binomial_upper_bound(n_errors, n, (1 - band_share) * delta / n_errors.size)
    bound = np.where(band < high, np.maximum(band, low), rest)
    return bound, delta_band


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
        ``"band"`` (the estimator's default) spends half of ``delta`` (all of
        it without regret) on the simultaneous binomial band of the
        miscoverage (:func:`simultaneous_binomial_band`) and the other half
        on the regret bounds, split over the levels. ``"bonferroni"``
        (Learn-then-Test with Bonferroni) splits ``delta`` over the two
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
    if correction in ("bonferroni", "band"):
        delta_k = _per_level_delta(delta, n_levels, regret is not None)
    else:
        delta_k = delta
    if correction == "band":
        share = delta / 2 if regret is not None else delta
        mis_upper, _ = simultaneous_binomial_band(miscovered.sum(axis=0), n, share)
    else:
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
