"""Input checks shared by every estimator: sample weights."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.utils._sklearn_compat import _check_sample_weight

__all__ = ["check_sample_weight"]


def check_sample_weight(sample_weight, X, *, normalize=True):
    """Validate ``sample_weight`` for ``X``; None stays None.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), float or None
        A scalar weights every sample alike.
    X : array-like of shape (n_samples, n_features)
    normalize : bool, default=True
        Divide by the mean weight, so that the weights sum to ``n_samples``:
        a loss averaged with them keeps the scale of the unweighted loss, and
        the regularisation keeps its meaning.

    Returns
    -------
    ndarray of shape (n_samples,), float64, or None
        A new array; the caller's is never modified.

    Raises
    ------
    ValueError
        If the weights have the wrong shape, are negative or not finite, or
        are all zero.
    """
    if sample_weight is None:
        return None
    weights = np.array(
        _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        ),
        dtype=np.float64,
        copy=True,
    )
    total = weights.sum()
    if not total > 0:
        raise ValueError(
            "sample_weight sums to 0: at least one sample needs a positive weight."
        )
    return weights * (len(weights) / total) if normalize else weights
