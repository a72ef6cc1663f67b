"""Per-task lower confidence bounds on a policy's expected return.

Each function takes a NaN-padded ``(n_tasks, n_episodes)`` matrix of episode
returns that lie in ``[low, high]`` and returns, per task (row), a number ``L``
such that ``P(L <= J) >= 1 - delta`` for that task's expected return ``J``,
provided the row's returns are i.i.d. draws whose count was fixed in advance.
Bounds are clipped to ``[low, high]``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.utils._bounds import binomial_upper_bound

__all__ = ["TASK_BOUNDS", "check_massart_level", "task_lower_bounds"]


def _normalised(returns, low, high):
    """Returns mapped to [0, 1], the episode counts and the means."""
    z = (returns - low) / (high - low)
    m = np.sum(~np.isnan(z), axis=1)
    return z, m, np.nansum(z, axis=1) / m


def _clopper_pearson(z, m, mean, delta):
    # Returns are {0, 1} after normalisation: k successes out of m; the lower
    # bound on the success rate is one minus the upper bound on the failures'.
    k = np.rint(mean * m)
    return 1.0 - binomial_upper_bound(m - k, m, delta)


def _hoeffding(z, m, mean, delta):
    return mean - np.sqrt(np.log(1.0 / delta) / (2.0 * m))


def _empirical_bernstein(z, m, mean, delta):
    # Maurer and Pontil (2009), Theorem 4, for variables in [0, 1].
    var = np.nansum((z - mean[:, None]) ** 2, axis=1) / (m - 1)
    log_term = np.log(2.0 / delta)
    return mean - np.sqrt(2.0 * var * log_term / m) - 7.0 * log_term / (3.0 * (m - 1))


def check_massart_level(delta, what):
    """Refuse a DKW level above 1/2, where Massart's constant is not proven.

    Massart (1990) proves ``P(sup (F_m - F) > eps) <= exp(-2 m eps^2)`` for
    ``exp(-2 m eps^2) <= 1/2``: the one-sided band at level ``delta`` needs
    ``delta <= 1/2``.
    """
    if not 0.0 < delta <= 0.5:
        raise ValueError(
            f"{what} needs a level in (0, 0.5] (Massart's one-sided DKW "
            f"constant holds only there); got {delta!r}."
        )


def _dkw(z, m, mean, delta):
    # One-sided DKW band with Massart's constant: the true CDF lies below the
    # empirical one plus eps. The smallest mean inside the band moves eps of
    # the mass from the top of the sample down to the lower end (0 here):
    # E[Z] >= integral over [0, 1] of max(0, 1 - F_m(x) - eps) dx.
    check_massart_level(delta, "task_bound='dkw'")
    eps = np.sqrt(np.log(1.0 / delta) / (2.0 * m))
    x = np.sort(z, axis=1)  # NaN padding goes last
    n_cols = x.shape[1]
    gaps = np.diff(np.concatenate([np.zeros((len(x), 1)), x], axis=1), axis=1)
    j = np.arange(n_cols)[None, :]  # x[:, j] is the (j+1)-th smallest
    survival = (m[:, None] - j) / m[:, None]  # 1 - F_m on [x_(j), x_(j+1))
    weight = np.clip(survival - eps[:, None], 0.0, None)
    return np.nansum(np.where(j < m[:, None], weight * gaps, 0.0), axis=1)


TASK_BOUNDS = {
    "clopper-pearson": _clopper_pearson,
    "hoeffding": _hoeffding,
    "empirical-bernstein": _empirical_bernstein,
    "dkw": _dkw,
}


def task_lower_bounds(returns, *, bound, delta, return_range):
    """Lower confidence bound of each task's expected return.

    Parameters
    ----------
    returns : ndarray of shape (n_tasks, n_episodes)
        Episode returns per task, NaN-padded; already validated: every value in
        ``return_range``, at least one episode per task (two for
        ``"empirical-bernstein"``), and only the two ends of the range for
        ``"clopper-pearson"``.
    bound : {"clopper-pearson", "hoeffding", "empirical-bernstein", "dkw"}
        The per-task bound.
    delta : float
        Failure probability of each task's bound.
    return_range : (float, float)
        Known lower and upper ends of an episode's return.

    Returns
    -------
    lower_bounds : ndarray of shape (n_tasks,)
    """
    low, high = return_range
    z, m, mean = _normalised(np.asarray(returns, dtype=float), low, high)
    lcb = TASK_BOUNDS[bound](z, m, mean, delta)
    return low + (high - low) * np.clip(lcb, 0.0, 1.0)
