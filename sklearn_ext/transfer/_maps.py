"""Alignment maps between two models' hidden spaces, and the transport they give.

A map ``T`` of shape ``(a, b)`` takes a row of the source's ``a`` units to the
target's ``b`` units (``h_B ~ h_A @ T``). Every map here but the least-squares
transport is semi-orthogonal (orthonormal rows when ``a <= b``, orthonormal
columns otherwise), so that it keeps the geometry of what it moves; a linear
layer's update then moves as ``dW_B = T_out.T @ dW_A @ T_in`` (torch layout,
``(out, in)``) and ``db_B = db_A @ T_out``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.linalg import eigh, orthogonal_procrustes, svd
from scipy.optimize import linear_sum_assignment

__all__ = [
    "alignment_map",
    "matching_grams",
    "polar_factor",
    "ridge_from_grams",
    "ridge_matching",
]


def polar_factor(C):
    """The semi-orthogonal ``T`` maximising ``trace(T.T @ C)`` (rectangular Procrustes).

    ``C = U S V.T`` (thin SVD) gives ``T = U V.T``; for a square ``C`` this is
    scipy's ``orthogonal_procrustes`` solution.
    """
    U, _, Vt = svd(C, full_matrices=False)
    return U @ Vt


def _shrunk_inverse_root(G, power, ridge):
    """``(G + ridge * mean_eig * I) ** -power`` for a Gram matrix ``G``."""
    d = G.shape[0]
    w, V = eigh(G)
    w = np.clip(w, 0.0, None) + ridge * max(np.trace(G) / d, 1e-300)
    return (V * w**-power) @ V.T


def alignment_map(HA, HB, method, *, whiten=0.0, ridge=1e-3, random_state=None):
    """The ``(a, b)`` map from the source's units to the target's.

    Parameters
    ----------
    HA : ndarray of shape (n_samples, a)
        The source's activations on the calibration rows.
    HB : ndarray of shape (n_samples, b)
        The target's activations on the same rows.
    method : {"procrustes", "hungarian", "truncate", "random"}
        ``"procrustes"``: the semi-orthogonal ``T`` closest to mapping ``HA``
        on ``HB`` (scipy's ``orthogonal_procrustes`` when ``a == b``, the polar
        factor of ``HA.T @ HB`` otherwise). ``"hungarian"``: a one-to-one
        matching of units maximising their total correlation
        (``linear_sum_assignment``), as a partial permutation. ``"truncate"``:
        unit ``i`` to unit ``i`` for the first ``min(a, b)`` units (truncation
        or zero padding). ``"random"``: a uniformly random semi-orthogonal map.
    whiten : float in [0, 0.5], default=0.0
        Procrustes only: align ``GA^-p HA.T HB GB^-p`` instead of ``HA.T HB``
        (``G`` the Grams, ``p = whiten``), so that high-variance directions do
        not dominate the alignment.
    ridge : float, default=1e-3
        Shrinkage of the Grams towards a multiple of the identity (relative to
        their mean eigenvalue) before they are whitened.
    random_state : numpy Generator
        For ``"random"``.

    Returns
    -------
    T : ndarray of shape (a, b)
    """
    a, b = HA.shape[1], HB.shape[1]
    if method == "truncate":
        return np.eye(a, b)
    if method == "random":
        Q, R = np.linalg.qr(random_state.standard_normal((max(a, b), min(a, b))))
        Q = Q * np.sign(np.diag(R))
        return Q if a >= b else Q.T
    if method == "hungarian":
        A = HA - HA.mean(axis=0)
        B = HB - HB.mean(axis=0)
        na, nb = np.linalg.norm(A, axis=0), np.linalg.norm(B, axis=0)
        corr = (A.T @ B) / np.outer(np.where(na > 0, na, 1), np.where(nb > 0, nb, 1))
        rows, cols = linear_sum_assignment(corr, maximize=True)
        T = np.zeros((a, b))
        T[rows, cols] = 1.0
        return T
    if whiten == 0 and a == b:
        return orthogonal_procrustes(HA, HB)[0]
    C = HA.T @ HB
    if whiten > 0:
        C = (
            _shrunk_inverse_root(HA.T @ HA, whiten, ridge)
            @ C
            @ _shrunk_inverse_root(HB.T @ HB, whiten, ridge)
        )
    return polar_factor(C)


def matching_grams(XA, XB, bias):
    """The two Gram matrices a least-squares matching of a layer needs.

    ``[XB, 1].T @ [XB, 1]`` and ``[XB, 1].T @ [XA, 1]`` (the column of ones
    only when the layer has a bias): the target's design against itself and
    against the source's, so that a fitted transport keeps two small
    matrices per layer instead of the calibration activations.
    """
    if bias:
        XA = np.hstack([XA, np.ones((len(XA), 1))])
        XB = np.hstack([XB, np.ones((len(XB), 1))])
    return XB.T @ XB, XB.T @ XA


def ridge_matching(XA, XB, dW, db, T_out, ridge, prior=None):
    """The update of a target layer that best reproduces the source's effect.

    Solves ``min ||[XB, 1] [dW_B.T; db_B] - (XA dW.T + db) T_out||^2 +
    ridge * s * ||dW_B - prior||^2`` (``s`` the mean eigenvalue of
    ``XB.T XB``; ``prior`` zero when None): the functional matching of the
    update on the calibration activations, without the semi-orthogonal
    constraint, shrunk towards ``prior`` (the update the maps move). ``XA``
    and ``XB`` are what the two layers read on the same rows (for a
    convolution, its input patches).

    Returns
    -------
    dW_B : ndarray of shape (b_out, b_in)
    db_B : ndarray of shape (b_out,) or None
    """
    grams = matching_grams(XA, XB, db is not None)
    return ridge_from_grams(*grams, dW, db, T_out, ridge, prior)


def ridge_from_grams(gram, cross, dW, db, T_out, ridge, prior=None):
    """:func:`ridge_matching` from the Grams of :func:`matching_grams`.

    Returns
    -------
    dW_B : ndarray of shape (b_out, b_in)
    db_B : ndarray of shape (b_out,) or None
    """
    b_in = len(gram) - (db is not None)
    coef_a = dW.T if db is None else np.vstack([dW.T, db[None, :]])
    penalty = (
        ridge * max(np.trace(gram[:b_in, :b_in]) / b_in, 1e-300) * np.eye(len(gram))
    )
    if db is not None:
        penalty[-1, -1] = 0.0  # the bias is not shrunk
    rhs = cross @ coef_a @ T_out
    if prior is not None:
        rhs = rhs + penalty[:, :b_in] @ prior.T
    coef = np.linalg.lstsq(gram + penalty, rhs, rcond=None)[0]
    if db is None:
        return coef.T, None
    return coef[:-1].T, coef[-1]
