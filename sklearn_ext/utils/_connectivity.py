"""Symmetric matrices as rows: the vectorised connectivity layout.

A graph per sample (e.g. a brain network) is one row of X: the lower triangle
of its symmetric matrix, row by row, as nilearn's
``ConnectivityMeasure(vectorize=True)`` gives it. The datasets that generate
such rows and the estimators that read them share these functions.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np

__all__ = ["matrices_to_vec", "tril_mask", "vec_to_matrices"]

_SQRT2 = math.sqrt(2.0)


def tril_mask(n_nodes, discard_diagonal):
    """The lower-triangle mask whose row-major order is nilearn's layout."""
    return np.tril(
        np.ones((n_nodes, n_nodes), dtype=bool), k=-1 if discard_diagonal else 0
    )


def matrices_to_vec(matrices, discard_diagonal=True):
    """Rows of the lower triangles of symmetric matrices, in nilearn's layout.

    The same values, in the same order, as nilearn's
    ``sym_matrix_to_vec(matrices, discard_diagonal)``: the lower triangle
    row by row; a kept diagonal is divided by sqrt(2) (so that the Euclidean
    norm of a row is the Frobenius norm of its matrix over sqrt(2)).
    """
    matrices = np.asarray(matrices)
    n_nodes = matrices.shape[-1]
    mask = tril_mask(n_nodes, discard_diagonal)
    vec = matrices[..., mask].astype(np.float64, copy=True)
    if not discard_diagonal:
        rows, cols = np.nonzero(mask)
        vec[..., rows == cols] /= _SQRT2
    return vec


def vec_to_matrices(vec, n_nodes, discard_diagonal=True):
    """The symmetric matrices of rows in nilearn's layout (inverse of the above).

    A discarded diagonal comes back as zeros.
    """
    vec = np.asarray(vec, dtype=np.float64)
    mask = tril_mask(n_nodes, discard_diagonal)
    rows, cols = np.nonzero(mask)
    if vec.ndim == 0 or vec.shape[-1] != rows.size:
        raise ValueError(
            f"Rows of {n_nodes} nodes (discard_diagonal={discard_diagonal}) hold "
            f"{rows.size} connectivity values; got shape {vec.shape}."
        )
    values = vec.copy()
    if not discard_diagonal:
        values[..., rows == cols] *= _SQRT2
    out = np.zeros((*vec.shape[:-1], n_nodes, n_nodes))
    out[..., rows, cols] = values
    out[..., cols, rows] = values
    return out
