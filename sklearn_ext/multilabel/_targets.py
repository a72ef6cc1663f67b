"""NBCG's target: a binary indicator matrix, or 1-D class labels."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target

from sklearn_ext.utils._messages import warn

__all__ = ["encode_targets", "warn_degenerate_labels"]


def _is_label_lists(y):
    """Whether ``y`` is a sequence of label lists (``[["a"], ["a", "b"], []]``)."""
    if isinstance(y, (str, bytes)) or not isinstance(y, (list, tuple)) or not y:
        return False
    if not all(isinstance(row, (list, tuple, set, frozenset)) for row in y):
        return False
    # A rectangular 0/1 list of lists is an indicator matrix written as lists.
    lengths = {len(row) for row in y}
    if len(lengths) == 1 and all(isinstance(row, (list, tuple)) for row in y):
        values = {v for row in y for v in row}
        if values <= {0, 1} and all(
            isinstance(v, (int, float, np.integer, np.floating)) for v in values
        ):
            return False
    return True


def _check_targets(y, name):
    """``y`` as an array, its mode ("multilabel"/"multiclass") and label names."""
    if y is None:
        raise ValueError(
            f"{name} requires y to be passed, but the target y is None; pass y, "
            "a binary indicator matrix (or 1-D class labels)."
        )
    if _is_label_lists(y):
        from sklearn.preprocessing import MultiLabelBinarizer

        binarizer = MultiLabelBinarizer()
        try:
            indicator = binarizer.fit_transform(y)
        except TypeError as exc:
            raise ValueError(
                "y looks like a list of label lists, but its labels cannot be "
                f"sorted together ({exc}); use labels of one type."
            ) from None
        return indicator, "multilabel", binarizer.classes_
    names = None
    if hasattr(y, "columns") and getattr(y, "ndim", 1) == 2:
        names = np.asarray(y.columns)
        if names.dtype.kind in "iu" and (names == np.arange(len(names))).all():
            names = None  # a default RangeIndex: no names
        y = y.to_numpy()
    if sp.issparse(y):
        y = y.toarray()
    y = np.asarray(y) if not isinstance(y, np.ndarray) else y
    kind = type_of_target(y, input_name="y")
    if kind == "multilabel-indicator" and np.isin(y, (0, 1)).all():
        return y, "multilabel", names
    if kind in ("binary", "multiclass"):
        return y.reshape(-1) if y.ndim == 2 else y, "multiclass", None
    if kind == "unknown":
        kind = "unknown (Unknown label type)"
    if kind == "multilabel-indicator":
        kind = "indicator with values other than 0 and 1"
    raise ValueError(
        "y must be a binary indicator matrix of shape (n_samples, n_labels) "
        "with values 0 and 1, or a 1-D array of class labels; got a target "
        f"of type {kind!r}"
        + (
            f" with values {np.unique(y)[:10].tolist()}."
            if np.asarray(y).dtype.kind in "biuf"
            else "."
        )
    )


def encode_targets(y, n_samples, name):
    """Encode ``y`` for training.

    Parameters
    ----------
    y : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_labels), \
list of label lists, or array-like of shape (n_samples,)
    n_samples : int
        Rows of X, which y must match.
    name : str
        The estimator's name, for the messages.

    Returns
    -------
    T : ndarray of shape (n_samples, n_labels)
        0/1 float matrix: the indicator matrix, or the one-hot classes.
    mode : {"multilabel", "multiclass"}
    classes : ndarray
        The label names (a DataFrame's columns, the sorted labels of a list
        of label lists) or ``arange(n_labels)``; or the sorted class labels.
    y_dtype : str or None
        The indicator matrix's dtype as a string such as ``"<i8"`` (for
        ``predict``; a string, which secure persistence such as skops loads
        without trusting ``numpy.dtype``); None for classes.
    """
    y, mode, names = _check_targets(y, name)
    if y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different numbers of samples: X has {n_samples}, "
            f"y has {y.shape[0]}."
        )
    if mode == "multilabel":
        classes = np.arange(y.shape[1]) if names is None else names
        return y.astype(np.float64), mode, classes, y.dtype.str
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes in y; got 1 class "
            f"({classes[0]!r})."
        )
    T = np.zeros((len(y), len(classes)))
    T[np.arange(len(y)), codes.ravel()] = 1.0
    return T, mode, classes, None


def warn_degenerate_labels(T, freq):
    """Warn about labels that carry no information and rows without a label."""
    never = np.flatnonzero(freq == 0)
    always = np.flatnonzero(freq == 1)
    if never.size or always.size:
        parts = []
        if never.size:
            parts.append(f"never occur: labels {never.tolist()[:20]}")
        if always.size:
            parts.append(f"always occur: labels {always.tolist()[:20]}")
        warn(
            "Some labels of y carry no information and will be predicted at "
            f"their training frequency ({'; '.join(parts)}). Drop them, or "
            "use a split that contains both classes of every label.",
            UserWarning,
        )
    empty = int((T.sum(1) == 0).sum())
    if empty:
        warn(
            f"{empty} of {T.shape[0]} rows of y have no label; they are used "
            "as negatives for every label.",
            UserWarning,
        )
