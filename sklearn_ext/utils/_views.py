"""The multi-view column parser: which columns of X belong to which view."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np

__all__ = ["check_views", "observed_views"]


def _is_int(value):
    return isinstance(value, Integral | np.integer) and not isinstance(
        value, bool | np.bool_
    )


def _list_some(indices, limit=10):
    indices = [int(i) for i in indices]
    shown = ", ".join(map(str, indices[:limit]))
    return shown + (f", ... ({len(indices)} in all)" if len(indices) > limit else "")


def check_views(views, n_features):
    """Parse a ``views`` specification into one array of column indices per view.

    Parameters
    ----------
    views : None, sequence of int, or sequence of sequences of int
        ``None``: a single view holding every column. A sequence of positive
        integers: the sizes of consecutive column blocks, which must add up to
        ``n_features``. A sequence of index sequences: the columns of each view;
        together they must use every column exactly once.
    n_features : int
        Number of columns of X.

    Returns
    -------
    list of ndarray of int
        Column indices of each view, in the order given.

    Raises
    ------
    ValueError
        If the sizes do not add up, an index is out of range, a column sits in two
        views or in none, or a view is empty.
    TypeError
        If ``views`` is neither of the accepted forms.

    Examples
    --------
    >>> from sklearn_ext.utils import check_views
    >>> [v.tolist() for v in check_views([2, 1], n_features=3)]
    [[0, 1], [2]]
    >>> [v.tolist() for v in check_views([[2], [0, 1]], n_features=3)]
    [[2], [0, 1]]
    """
    if views is None:
        return [np.arange(n_features)]
    if isinstance(views, str) or not hasattr(views, "__len__"):
        raise TypeError(
            "views must be None, a sequence of view sizes, or a sequence of column "
            f"index lists; got {type(views).__name__}."
        )
    views = list(views)
    if len(views) == 0:
        raise ValueError("views must name at least one view; got an empty sequence.")

    if all(_is_int(v) for v in views):
        sizes = [int(v) for v in views]
        bad = [i for i, s in enumerate(sizes) if s < 1]
        if bad:
            raise ValueError(
                f"views sizes must be positive; view {bad[0]} has size {sizes[bad[0]]}."
            )
        if sum(sizes) != n_features:
            raise ValueError(
                f"views sizes {sizes} add up to {sum(sizes)} columns, but X has "
                f"{n_features} features."
            )
        edges = np.cumsum([0, *sizes])
        return [np.arange(a, b) for a, b in zip(edges[:-1], edges[1:])]

    parsed = []
    owner = np.full(n_features, -1)
    for v, cols in enumerate(views):
        if _is_int(cols) or isinstance(cols, str) or not hasattr(cols, "__len__"):
            raise TypeError(
                "views must be all sizes (ints) or all column index lists; view "
                f"{v} is {cols!r}."
            )
        cols = np.asarray(cols)
        if cols.ndim != 1 or cols.size == 0:
            raise ValueError(
                f"view {v} must be a non-empty 1-D list of column indices."
            )
        if not all(_is_int(c) for c in cols.tolist()) and cols.dtype.kind not in "iu":
            raise TypeError(f"view {v} holds non-integer column indices: {cols!r}.")
        cols = cols.astype(np.intp)
        out = cols[(cols < 0) | (cols >= n_features)]
        if out.size:
            raise ValueError(
                f"view {v} refers to column(s) {_list_some(out)}, outside the "
                f"{n_features} features of X."
            )
        _, counts = np.unique(cols, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"view {v} lists a column more than once.")
        taken = owner[cols] >= 0
        if taken.any():
            c = int(cols[taken][0])
            raise ValueError(f"column {c} is in view {owner[c]} and in view {v}.")
        owner[cols] = v
        parsed.append(cols)
    orphans = np.flatnonzero(owner < 0)
    if orphans.size:
        raise ValueError(
            f"column(s) {_list_some(orphans)} belong to no view; every column of X "
            "must be in exactly one view."
        )
    return parsed


def observed_views(X, views, *, require_one=True):
    """Which views each sample has: a view is missing when its block is all NaN.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense data in which NaN marks missing values.
    views : list of ndarray of int
        Output of :func:`check_views`.
    require_one : bool, default=True
        Raise if a sample has no view at all.

    Returns
    -------
    observed : ndarray of bool, shape (n_samples, n_views)
        True where the sample has the view.

    Raises
    ------
    ValueError
        If a sample's view is only partly NaN (the message names the sample and the
        view), or, with ``require_one``, if a sample lacks every view.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.utils import check_views, observed_views
    >>> X = np.array([[1.0, 2.0, np.nan], [np.nan, np.nan, 3.0]])
    >>> observed_views(X, check_views([2, 1], 3))
    array([[ True, False],
           [False,  True]])
    """
    X = np.asarray(X)
    observed = np.empty((X.shape[0], len(views)), dtype=bool)
    for v, cols in enumerate(views):
        nan = np.isnan(X[:, cols])
        all_nan = nan.all(axis=1)
        partial = nan.any(axis=1) & ~all_nan
        if partial.any():
            rows = np.flatnonzero(partial)
            raise ValueError(
                f"sample(s) {_list_some(rows)} have view {v} only partly missing: a "
                "missing view must be NaN in all of its columns, and an observed view "
                "in none."
            )
        observed[:, v] = ~all_nan
    if require_one:
        empty = np.flatnonzero(~observed.any(axis=1))
        if empty.size:
            raise ValueError(
                f"sample(s) {_list_some(empty)} have no observed view; every sample "
                "must keep at least one view."
            )
    return observed
