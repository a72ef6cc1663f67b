"""Input checks shared by every estimator: sample weights, column parameters."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np

from sklearn_ext.utils._sklearn_compat import _check_sample_weight

__all__ = ["check_integer_ids", "check_sample_weight", "column_index"]


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


def column_index(estimator, column, n_columns, *, param):
    """Position of one column named by an estimator's column parameter.

    The package's one rule for column parameters (``task_column``,
    ``dyad_columns``, ``views``, ...): an int is a position (negative counts
    from the end); a str is a column name, looked up in the
    ``feature_names_in_`` that ``validate_data`` set when X was a DataFrame.

    Parameters
    ----------
    estimator : estimator instance
        After ``validate_data(..., reset=True)`` in ``fit``.
    column : int or str
    n_columns : int
        Number of columns of X.
    param : str
        The parameter's name, for error messages.

    Returns
    -------
    int
        A position in ``range(n_columns)``.

    Raises
    ------
    ValueError
        If the name is not a column of X, X has no column names, or the
        position is out of range.
    TypeError
        If ``column`` is neither an int nor a str (bools are refused).
    """
    if isinstance(column, str):
        names = getattr(estimator, "feature_names_in_", None)
        if names is None:
            raise ValueError(
                f"{param} names the column {column!r}, but X has no column names; "
                "pass a pandas DataFrame, or give column positions."
            )
        names = list(names)
        if column not in names:
            shown = ", ".join(repr(n) for n in names[:10])
            more = ", ..." if len(names) > 10 else ""
            raise ValueError(
                f"{param} names the column {column!r}, which X does not have "
                f"(its columns: {shown}{more})."
            )
        return names.index(column)
    if isinstance(column, bool) or not isinstance(column, numbers.Integral):
        raise TypeError(
            f"{param} must hold column positions (int) or column names (str); "
            f"got {column!r} of type {type(column).__name__}."
        )
    if not -n_columns <= column < n_columns:
        raise ValueError(
            f"{param}={column} is out of range for X with {n_columns} columns."
        )
    return int(column) % n_columns


def check_integer_ids(values, column, *, kind, owner):
    """Integer ids from a float column of X (documents, clients, ...).

    Parameters
    ----------
    values : array-like of shape (n_samples,)
    column : int or str
        The column, for the message.
    kind : str
        What the ids name (``"document"``, ``"client"``).
    owner : str
        What each row is (``"token"``, ``"sample"``).

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        If a value is not finite or not an integer.
    """
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        raise ValueError(
            f"The {kind} id column {column} of X must hold integers (each "
            f"{owner}'s {kind} id); it holds non-integer values such as "
            f"{values[bad][0]!r}."
        )
    return values.astype(np.int64)
