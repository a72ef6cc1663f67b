"""The multi-view column parser: which columns of X belong to which view."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np

from sklearn_ext.utils._validation import column_index

__all__ = ["check_views", "observed_column_scaling", "observed_views"]


def _is_int(value):
    return isinstance(value, Integral | np.integer) and not isinstance(
        value, bool | np.bool_
    )


def _list_some(items, limit=10):
    items = [i if isinstance(i, str) else int(i) for i in items]
    shown = ", ".join(map(repr, items[:limit]))
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


class _ColumnNames:
    """What :func:`column_index` reads from an estimator: X's column names."""

    def __init__(self, names):
        self.feature_names_in_ = None if names is None else list(names)


def check_views(views, n_features, feature_names=None):
    """Parse a ``views`` specification into one array of column indices per view.

    Parameters
    ----------
    views : None, sequence of int, or sequence of sequences of int or str
        ``None``: a single view holding every column. A sequence of positive
        integers: the sizes of consecutive column blocks, which must add up to
        ``n_features``. A sequence of column sequences: the columns of each
        view; together they must use every column exactly once. A column is a
        position (an int; negative counts from the end) or, when
        ``feature_names`` are given, a column name (a str); the rule is the
        one of every column parameter
        (:func:`sklearn_ext.utils._validation.column_index`).
    n_features : int
        Number of columns of X.
    feature_names : array-like of str, default=None
        The column names of X (an estimator's ``feature_names_in_``, set when
        X is a pandas DataFrame with string column names); None when X has
        none, so that a name is an error.

    Returns
    -------
    list of ndarray of int
        Column positions of each view, in the order given.

    Raises
    ------
    ValueError
        If the sizes do not add up, a position is out of range, a name is not
        a column of X (or X has no column names), a column sits in two views
        or in none, or a view is empty.
    TypeError
        If ``views`` is neither of the accepted forms, or a column is neither
        an int nor a str.

    Examples
    --------
    >>> from sklearn_ext.utils import check_views
    >>> [v.tolist() for v in check_views([2, 1], n_features=3)]
    [[0, 1], [2]]
    >>> [v.tolist() for v in check_views([[2], [0, 1]], n_features=3)]
    [[2], [0, 1]]
    >>> names = ["age", "height", "income"]
    >>> [v.tolist() for v in check_views([["income"], ["age", 1]], 3, names)]
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
        return _blocks_of_sizes([int(v) for v in views], n_features)
    return _column_lists(views, n_features, feature_names)


def _blocks_of_sizes(sizes, n_features):
    """Consecutive column blocks of the given sizes."""
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


def _column_lists(views, n_features, feature_names):
    """One list of columns (positions or names) per view, a partition of X's."""
    columns = _ColumnNames(feature_names)
    names = columns.feature_names_in_

    def label(c):
        return repr(names[c]) if names is not None else str(c)

    parsed = []
    owner = np.full(n_features, -1)
    for v, cols in enumerate(views):
        if _is_int(cols) or isinstance(cols, str) or not hasattr(cols, "__len__"):
            raise TypeError(
                "views must be all sizes (ints) or all column index lists "
                f"(positions or names); view {v} is {cols!r}."
            )
        # Entry by entry, each keeping its type: np.asarray would turn a mix of
        # names and positions into strings.
        cols = list(cols)
        if not cols:
            raise ValueError(
                f"view {v} must be a non-empty 1-D list of column indices."
            )
        cols = np.array(
            [column_index(columns, c, n_features, param=f"views[{v}]") for c in cols],
            dtype=np.intp,
        )
        unique, counts = np.unique(cols, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"view {v} lists column {label(unique[counts > 1][0])} more than once."
            )
        taken = owner[cols] >= 0
        if taken.any():
            c = int(cols[taken][0])
            raise ValueError(
                f"column {label(c)} is in view {owner[c]} and in view {v}."
            )
        owner[cols] = v
        parsed.append(cols)
    orphans = np.flatnonzero(owner < 0)
    if orphans.size:
        shown = orphans if names is None else [names[c] for c in orphans]
        raise ValueError(
            f"column(s) {_list_some(shown)} belong to no view; every column of X "
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


def observed_column_scaling(X, weights=None):
    """Mean and standard deviation of every column over its observed (non-NaN) rows.

    The standardisation of multi-view data with missing views: a column's
    statistics come from the samples that have its view (weighted by
    ``weights`` when given). A column with no observed row gets mean 0, and a
    constant or unobserved column scale 1.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    weights : ndarray of shape (n_samples,), default=None

    Returns
    -------
    mean, scale : ndarray of shape (n_features,)
    """
    seen = ~np.isnan(X)
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    ws = seen * w[:, None]
    total = np.maximum(ws.sum(axis=0), 1e-300)
    values = np.where(seen, X, 0.0)
    mean = (ws * values).sum(axis=0) / total
    var = (ws * (values - mean) ** 2).sum(axis=0) / total
    scale = np.sqrt(var)
    return mean, np.where(scale > 1e-12, scale, 1.0)
