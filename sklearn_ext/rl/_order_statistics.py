"""Simultaneous upper bounds on uniform order statistics, and the composition.

For ``n`` i.i.d. uniform variables with order statistics ``U_(1) <= ... <=
U_(n)`` and a non-decreasing boundary ``b``, :func:`band_coverage` computes
``P(U_(k) <= b_k for every k)`` exactly, by propagating the distribution of the
number of points below the current boundary: given ``j`` points below
``b_{k-1}``, the remaining ``n - j`` are uniform above it, so the count that
falls in ``(b_{k-1}, b_k]`` is binomial. Each step is one matrix product over the
live states (``O(n^3)`` in all, cached per ``n`` and level).

:func:`equal_level_band` calibrates the band whose every ``b_k`` is the
``1 - alpha`` quantile of ``U_(k) ~ Beta(k, n - k + 1)`` (the same pointwise
level everywhere, which keeps the band narrow in both tails where a
constant-width Kolmogorov band is loose), choosing ``alpha`` so that the
simultaneous coverage is exactly ``1 - delta``.

:func:`compose` picks the number ``v`` of per-task bounds allowed to fail and
the band level from ``n``, the per-task level ``beta`` and the overall
``delta`` only (never from the data).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta as beta_dist
from scipy.stats import binom

from sklearn_ext.rl._bounds import check_massart_level

# Binomial tail dropped per step of the recursion (see band_coverage), and
# the precision of the band's log pointwise level.
_TAIL = 1e-15
_XTOL = 1e-2

__all__ = [
    "band_coverage",
    "compose",
    "equal_level_band",
    "task_level_probabilities",
]


def band_coverage(b):
    """``P(U_(k) <= b_k for all k)`` for ``n = len(b)`` i.i.d. uniforms.

    Parameters
    ----------
    b : array-like of shape (n,)
        Non-decreasing boundary in [0, 1].

    Returns
    -------
    probability : float
        Exact up to the binomial tail beyond ``_TAIL`` that each step drops
        (which can only lower the result, i.e. err on the safe side).
    """
    b = np.clip(np.asarray(b, dtype=float), 0.0, 1.0)
    n = len(b)
    # prob[j]: probability that j points lie below the current boundary and
    # every constraint so far holds.
    prob = np.zeros(n + 1)
    prob[0] = 1.0
    previous = 0.0
    for k in range(1, n + 1):
        if b[k - 1] > previous and previous < 1.0:
            r = (b[k - 1] - previous) / (1.0 - previous)
            live = np.arange(k - 1, n + 1)  # states below k - 1 are dead
            # j -> j + d with d ~ Bin(n - j, r), truncated where negligible.
            d_max = int(min(n - k + 1, binom.isf(_TAIL, n - k + 1, r) + 1))
            d = np.arange(d_max + 1)
            pmf = binom.pmf(d[None, :], (n - live)[:, None], r)
            new = np.zeros(n + 1)
            for step in range(d_max + 1):
                stop = n + 1 - step  # j + step <= n
                new[k - 1 + step :] += prob[k - 1 : stop] * pmf[: stop - k + 1, step]
            prob = new
            previous = b[k - 1]
        prob[:k] = 0.0  # the k-th order statistic must lie below b_k
    return float(prob.sum())


def _beta_quantiles(n, alpha):
    k = np.arange(1, n + 1)
    return beta_dist.ppf(1.0 - alpha, k, n - k + 1)


@lru_cache(maxsize=64)
def equal_level_band(n, delta):
    """Boundary ``b`` with ``P(U_(k) <= b_k for all k) = 1 - delta``.

    Every ``b_k`` is the ``1 - alpha`` quantile of ``U_(k)``; ``alpha`` lies
    between ``delta / n`` (a union bound, coverage at least ``1 - delta``) and
    ``delta`` (one constraint alone) and is found by root finding on
    ``log(alpha)``.

    Returns
    -------
    b : ndarray of shape (n,)
        Read-only.
    """
    if n == 1:
        b = _beta_quantiles(1, delta)
    else:

        def excess(log_alpha):
            return band_coverage(_beta_quantiles(n, np.exp(log_alpha))) - (1 - delta)

        lo, hi = np.log(delta / n), np.log(delta)
        if excess(hi) >= 0:
            log_alpha = hi
        else:
            # The root is found within xtol; step to its safe side.
            log_alpha = brentq(excess, lo, hi, xtol=_XTOL) - _XTOL
        b = _beta_quantiles(n, np.exp(log_alpha))
        while band_coverage(b) < 1 - delta:  # guards rounding only
            log_alpha -= _XTOL
            b = _beta_quantiles(n, np.exp(log_alpha))
    b.setflags(write=False)
    return b


def failures_tail(n, beta, v):
    """``P(Bin(n, beta) > v)``: more than ``v`` of ``n`` bounds fail."""
    return float(binom.sf(v, n, beta))


@lru_cache(maxsize=64)
def compose(n, beta, delta, task_level="order-statistics", reserved=0.0):
    """Allowed failures ``v`` and the task-level probabilities.

    The per-task bounds fail independently with probability at most ``beta``,
    so more than ``v`` fail with probability at most ``delta_1 = P(Bin(n,
    beta) > v)``, whatever the tasks. ``reserved`` is the failure probability
    spent elsewhere on the same per-task events (a second set of bounds, all
    required to hold). The task-level band gets ``delta_2`` with ``(1 -
    reserved - delta_1)(1 - delta_2) = 1 - delta``. Among the ``v`` for which
    ``reserved + delta_1 < delta``, the one with the largest total certified
    probability ``sum_k p_{k+v}`` is kept (a criterion free of the data),
    scanning ``v`` upwards until the criterion stops improving.

    Returns
    -------
    v : int
    probabilities : ndarray of shape (n,)
        Read-only, non-increasing: ``probabilities[j-1]`` is certified at the
        j-th smallest expected return of the sampled tasks, hence at the
        ``(j - v)``-th smallest lower bound.
    """
    if not reserved < delta:
        raise ValueError(f"reserved={reserved} leaves nothing of delta={delta}.")
    best = None
    for v in range(n):
        delta_1 = failures_tail(n, beta, v)
        if reserved + delta_1 >= delta:
            continue
        delta_2 = 1.0 - (1.0 - delta) / (1.0 - reserved - delta_1)
        p = task_level_probabilities(n, delta_2, task_level)
        if best is not None and p[v:].sum() <= best[1][best[0] :].sum():
            break  # the criterion has peaked: more failures only cost ranks
        best = (v, p)
    if best is None:
        raise ValueError(
            f"with {n} tasks and task_delta={beta:g}, every number of allowed "
            f"per-task failures v < {n} leaves P(Bin({n}, task_delta) > v) "
            f"above what delta={delta:g} allows: lower task_delta or sample "
            "more tasks."
        )
    v, p = best
    p = np.array(p)
    p.setflags(write=False)
    return v, p


def task_level_probabilities(n, delta, task_level):
    """``p_j`` with ``P(q(J_(j)) >= p_j for all j) >= 1 - delta``."""
    if task_level == "order-statistics":
        return 1.0 - equal_level_band(n, delta)
    # Kolmogorov band with Massart's constant: F(J_(j)) <= j / n + eps.
    check_massart_level(delta, "the DKW task-level band")
    eps = np.sqrt(np.log(1.0 / delta) / (2.0 * n))
    return np.clip(1.0 - np.arange(1, n + 1) / n - eps + 1.0 / n, 0.0, 1.0)
