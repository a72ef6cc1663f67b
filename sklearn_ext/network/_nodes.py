"""Node ids of dyads: checked, encoded as positions, looked up again."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np

__all__ = ["check_node_ids", "encode_nodes", "node_positions"]


def check_node_ids(values):
    """Node ids as int64 (numeric ids) or as an object array of str.

    Numeric ids must be non-negative integers (stored as ints or as floats
    below 2**53, where floats hold integers exactly); string ids may be any
    strings. One array may not mix the two.

    Parameters
    ----------
    values : array-like
        Raw ids, e.g. the ``dyad_columns`` of ``X`` (of dtype object when they
        are strings).

    Returns
    -------
    ndarray of the shape of ``values``
        int64, or object holding Python ``str``.

    Raises
    ------
    ValueError
        If an id is negative, not an integer, not finite, a float of 2**53 or
        more, neither a number nor a string, or if strings and numbers mix.
    """
    values = np.asarray(values)
    if values.dtype.kind in "OUS":
        flat = values.ravel()
        is_str = np.fromiter((isinstance(v, str) for v in flat), bool, len(flat))
        if flat.size and is_str.all():
            return np.array([str(v) for v in flat], dtype=object).reshape(values.shape)
        if is_str.any():
            raise ValueError(
                "The node id columns (dyad_columns) mix strings and numbers; "
                f"found {str(flat[is_str][0])!r} and {flat[~is_str][0]!r}. Use one "
                "kind of node id."
            )
        numeric = np.asarray(flat.tolist())
        if numeric.dtype.kind not in "iuf":
            bad = next((v for v in flat if not isinstance(v, Real)), flat[0])
            raise ValueError(
                "The node id columns (dyad_columns) must hold non-negative "
                f"integers or strings; found {bad!r}."
            )
        values = numeric.reshape(values.shape)
    if values.dtype.kind not in "iuf":
        raise ValueError(
            "The node id columns (dyad_columns) must hold non-negative integers "
            f"or strings; got an array of dtype {values.dtype}."
        )
    if values.dtype.kind == "f" and values.size:
        if not np.isfinite(values).all():
            raise ValueError("The node id columns (dyad_columns) hold NaN or infinity.")
        if np.abs(values).max() >= 2**53:
            raise ValueError(
                "Numeric node ids must be below 2**53 when they are read from a "
                f"float array; found {values.max().item()!r}. Renumber the nodes, or "
                "give them as integers or strings."
            )
    if values.dtype.kind == "u" and values.size and values.max() > 2**63 - 1:
        raise ValueError(f"Node id {values.max().item()} is too large for int64.")
    bad = (values < 0) | (values != np.round(values))
    if bad.any():
        raise ValueError(
            "Numeric node ids (dyad_columns) must be non-negative integers; "
            f"found {values[bad][0].item()!r}."
        )
    return values.astype(np.int64)


def encode_nodes(ids):
    """The sorted distinct node ids and each id's position among them.

    Parameters
    ----------
    ids : ndarray
        From :func:`check_node_ids`.

    Returns
    -------
    nodes : ndarray of shape (n_nodes,)
    positions : ndarray of the shape of ``ids``
    """
    nodes, positions = np.unique(ids, return_inverse=True)
    return nodes, positions.reshape(ids.shape)


def node_positions(nodes, ids):
    """Positions of ``ids`` in the sorted ``nodes``; a ValueError names an unseen one.

    Parameters
    ----------
    nodes : ndarray of shape (n_nodes,)
        From :func:`encode_nodes`.
    ids : ndarray
        From :func:`check_node_ids`.

    Returns
    -------
    ndarray of the shape of ``ids``
    """
    string_ids = nodes.dtype == object
    if (ids.dtype == object) != string_ids or not len(nodes):  # str against int
        unseen = np.ones(ids.shape, dtype=bool)
        pos = np.zeros(ids.shape, dtype=np.intp)
    else:
        if string_ids:
            nodes, ids = nodes.astype(str), ids.astype(str)
        pos = np.minimum(np.searchsorted(nodes, ids), len(nodes) - 1)
        unseen = nodes[pos] != ids
    if unseen.any():
        node = ids[unseen][0]
        shown = repr(str(node)) if isinstance(node, str) else str(int(node))
        raise ValueError(
            f"Node {shown} was not seen during fit; TGINEE has no factors for it."
        )
    return pos
