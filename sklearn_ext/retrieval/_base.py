"""What the retrieval family shares: the document ids of a token table.

A collection is one 2-D table with one row per token: a column of document
ids (floats holding integers) and the token's embedding. The compressor and
the index read the ids the same way.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.utils._validation import check_integer_ids

__all__ = ["check_groups", "given_column"]


def given_column(X, column):
    """One column of X as the caller gave it, before any conversion, or None.

    None when X has no such column to read (the caller's conversion then
    reports what is wrong) or the column is not numeric.
    """
    try:
        values = X.iloc[:, column].to_numpy() if hasattr(X, "iloc") else np.asarray(X)
        values = values if hasattr(X, "iloc") else values[:, column]
    except (IndexError, TypeError, ValueError):
        return None
    return values if values.dtype.kind in "iuf" else None


def check_groups(values, column, *, given=None, name="X", kind="document"):
    """Integer ids from a float column; a clear error otherwise.

    Parameters
    ----------
    values : ndarray of shape (n_tokens,)
        The id column after the table's conversion to floats.
    column : int or str
        The column, for the messages.
    given : ndarray of shape (n_tokens,), default=None
        The same column as the caller gave it (:func:`given_column`).
    name : str, default="X"
        The table, for the messages.
    kind : str, default="document"
        What the ids name.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        If an id is not an integer, or is one that a float dtype of the column
        (as given or as converted) may not hold exactly: above 2**24 for
        float32, where distinct integers share one float, so ids may have been
        merged by the cast. Integer ids as given are checked before the
        conversion; float ids at or above the bound are refused, since the
        merge, if any, happened before they came here.
    """
    values = np.asarray(values)
    if given is not None and given.dtype.kind in "iu":
        # Integers as given: the check comes before the cast, exactly.
        if values.dtype.kind == "f":
            bits = np.finfo(values.dtype).nmant + 1
            bad = np.flatnonzero(np.abs(given) > 2**bits)
            if bad.size:
                raise _inexact(
                    f"The {kind} id {int(given[bad[0]])} (row {bad[0]}, column "
                    f"{column} of {name}) is above 2**{bits} = {2**bits}, the "
                    f"bound up to which {values.dtype.name} holds every integer "
                    "exactly: there distinct ids share one float, so the cast to "
                    f"{values.dtype.name} would merge them.",
                    name,
                    kind,
                )
    else:
        # Floats as given: a cast to them may already have merged ids.
        dtypes = [values.dtype] + ([] if given is None else [given.dtype])
        floats = [np.dtype(d) for d in dtypes if np.dtype(d).kind == "f"]
        if floats:
            dtype = min(floats, key=lambda d: np.finfo(d).nmant)
            bits = np.finfo(dtype).nmant + 1
            bad = np.flatnonzero(np.abs(values) >= 2.0**bits)
            if bad.size:
                raise _inexact(
                    f"The {kind} id {values[bad[0]]:.0f} (row {bad[0]}, column "
                    f"{column} of {name}) is not below 2**{bits} = {2**bits}: "
                    f"from there on {dtype.name} does not hold every integer "
                    "exactly, so distinct ids may have been merged by a cast to "
                    f"{dtype.name} before they came here.",
                    name,
                    kind,
                )
    where = column if name == "X" else f"{column} of {name}"
    return check_integer_ids(values, where, kind=kind, owner="token")


def _inexact(message, name, kind):
    return ValueError(
        f"{message} Pass {name} as float64 (exact up to 2**53; e.g. "
        "np.column_stack of int64 ids and float32 embeddings), or renumber the "
        f"{kind} ids from 0."
    )
