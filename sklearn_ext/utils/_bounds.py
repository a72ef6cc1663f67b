"""Finite-sample confidence bounds that several families use.

:func:`binomial_upper_bound` is the exact (Clopper-Pearson) bound on a
Bernoulli mean: the conformal frontier bounds miscoverage with it
(``robust_optimization``), the multi-task guarantee bounds success rates
with it (``rl``).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.stats import beta

__all__ = ["binomial_upper_bound"]


def binomial_upper_bound(n_errors, n, delta):
    """Exact one-sided Clopper-Pearson upper bound on a Bernoulli mean.

    With probability at least ``1 - delta`` over ``n`` i.i.d. Bernoulli(p) draws
    with ``n_errors`` successes, ``p <= bound``.
    """
    n_errors = np.asarray(n_errors, dtype=float)
    with np.errstate(invalid="ignore"):
        bound = beta.ppf(1.0 - delta, n_errors + 1.0, n - n_errors)
    return np.where(n_errors >= n, 1.0, bound)
