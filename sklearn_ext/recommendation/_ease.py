"""EASE, the closed-form item-item ridge regression of recommender systems.

One implementation, used by :class:`GCIBRecommender` (its scorer over the
denoised behaviour matrix) and by the benchmark's EASE peer.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.linalg
import scipy.sparse as sp

__all__ = ["ease_weights"]


def ease_weights(X, l2_reg):
    """Item-item weights ``B`` of EASE; ``X @ B`` scores every item.

    ``B = argmin ||X - X B||^2 + l2_reg ||B||^2`` subject to ``diag(B) = 0``,
    in closed form: with ``P = (X^T X + l2_reg I)^-1``, ``B = I - P
    diag(1 / diag(P))`` (Steck, "Embarrassingly Shallow Autoencoders for
    Sparse Data", WWW 2019). An item is predicted from the user's other
    items only. The Gram matrix is dense (n_items x n_items): memory and
    time grow with the square and the cube of the number of items.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_users, n_items)
        Non-negative interactions (weights allowed).
    l2_reg : float
        The ridge penalty, > 0.

    Returns
    -------
    ndarray of shape (n_items, n_items), float64
    """
    gram = X.T @ X
    gram = gram.toarray() if sp.issparse(gram) else np.array(gram, dtype=np.float64)
    gram = np.asarray(gram, dtype=np.float64)
    gram[np.diag_indices_from(gram)] += l2_reg
    inverse = scipy.linalg.inv(gram, overwrite_a=True, check_finite=False)
    weights = -inverse / np.diag(inverse)
    np.fill_diagonal(weights, 0.0)
    return weights
