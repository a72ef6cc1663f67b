"""The T-GINEE fitting algorithm.

:func:`solve_tginee` runs the two stages that :class:`~sklearn_ext.network.TGINEE`
documents: the independence (likelihood) stage, an L-BFGS minimisation started
from a spectral decomposition, then rounds of working-correlation update,
Fisher scoring of the GEE for the coefficients and Gauss-Newton steps of the
GEE for the factors; it ends with the sandwich covariance. The pieces
(moments, the GEE blocks, the correlation estimate, the sandwich) are
functions of arrays, so that tests can check them against their definitions.

Dyad weights are frequency weights throughout: a dyad of weight ``w`` enters
every sum over dyads (the log-likelihood, the moment estimates of the
dispersion and of the correlation, the estimating equations and both halves of
the sandwich) ``w`` times, exactly as ``w`` copies of the dyad would.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from sklearn_ext.utils._messages import progress
from sklearn_ext.utils._torch import (
    conjugate_gradient,
    import_torch,
    lbfgs_minimize,
    to_numpy,
    to_tensor,
)

__all__ = [
    "MaskedInverse",
    "TGINEEResult",
    "gee_blocks",
    "link_of",
    "moments",
    "missing_layout",
    "sandwich",
    "solve_tginee",
    "spectral_init",
    "update_correlation",
]

# L-BFGS iterations of the independence start; Fisher-scoring steps of each
# round's coefficient update.
_INIT_ITER = 300
_SCORING_STEPS = 5
_MAX_STEP = 5.0
# Stopping rules of every L-BFGS solve (on the gradient, on the change).
_TOLERANCE_GRAD = 1e-9
_TOLERANCE_CHANGE = 1e-12
# Smallest eigenvalue kept in an unstructured working correlation.
_MIN_EIG = 1e-3


def _links(torch):
    """Inverse link, its derivative and the variance function, per link."""
    return {
        "logit": (
            torch.sigmoid,
            lambda eta: torch.sigmoid(eta) * (1 - torch.sigmoid(eta)),
            lambda mu: mu * (1 - mu),
        ),
        "probit": (
            torch.special.ndtr,
            lambda eta: torch.exp(-0.5 * eta**2) / math.sqrt(2 * math.pi),
            lambda mu: mu * (1 - mu),
        ),
        "cloglog": (
            lambda eta: -torch.expm1(-torch.exp(eta.clamp(max=30.0))),
            lambda eta: torch.exp(eta - torch.exp(eta.clamp(max=30.0))),
            lambda mu: mu * (1 - mu),
        ),
        "log": (torch.exp, torch.exp, lambda mu: mu),
        "identity": (
            lambda eta: eta,
            torch.ones_like,
            torch.ones_like,
        ),
    }


def link_of(means, link):
    """The link function at ``means`` (clipped away from the boundary)."""
    eps = 1e-4
    if link == "logit":
        m = np.clip(means, eps, 1 - eps)
        return np.log(m / (1 - m))
    if link == "probit":
        from scipy.special import ndtri

        return ndtri(np.clip(means, eps, 1 - eps))
    if link == "cloglog":
        return np.log(-np.log1p(-np.clip(means, eps, 1 - eps)))
    if link == "log":
        return np.log(np.maximum(means, eps))
    return means.copy()


def moments(eta, link):
    """Mean, d mean / d eta and variance function at ``eta``, in NumPy."""
    if link == "logit":
        mu = 1.0 / (1.0 + np.exp(-np.clip(eta, -35, 35)))
        return mu, mu * (1 - mu), mu * (1 - mu)
    if link == "probit":
        from scipy.special import ndtr

        mu = ndtr(eta)
        return mu, np.exp(-0.5 * eta**2) / np.sqrt(2 * np.pi), mu * (1 - mu)
    if link == "cloglog":
        e = np.exp(np.clip(eta, -35, 5))
        mu = -np.expm1(-e)
        return mu, e * np.exp(-e), mu * (1 - mu)
    if link == "log":
        mu = np.exp(np.clip(eta, -35, 35))
        return mu, mu, mu
    return eta, np.ones_like(eta), np.ones_like(eta)


# Entries per chunk of the low-rank Gram rows (memory stays bounded).
_CHUNK_ENTRIES = 2**22


@dataclass
class MissingLayout:
    """Which layers each dyad misses, grouped for batched solves.

    A dyad's ``R_O^{-1}`` is written either from its missing layers ``M``
    (when it misses at most as many layers as it observes) or from its
    observed layers ``O``; ``groups`` holds, per side and count ``c``, the
    dyads and their ``c`` layer positions.

    Attributes
    ----------
    groups : list of (sign, rows, cols)
        ``sign`` -1 for the missing side, +1 for the observed side; ``rows``
        (g,) long tensor of dyads, ``cols`` (g, c) long tensor of layers.
    base : tensor of shape (n_dyads,)
        1.0 for the dyads written from their missing side (whose inverse
        starts from ``R^{-1}``), else 0.0.
    mask : tensor of shape (n_dyads, n_layers)
        1.0 where observed.
    """

    groups: list
    base: object
    mask: object


def missing_layout(mask, device, dtype=None):
    """The :class:`MissingLayout` of a boolean (n_dyads, n_layers) mask."""
    torch = import_torch()
    dtype = torch.float64 if dtype is None else dtype
    mask = np.asarray(mask, dtype=bool)
    n_observed = mask.sum(1)
    n_missing = mask.shape[1] - n_observed
    from_missing = n_missing <= n_observed
    groups = []
    for sign, counts, chosen, pick in (
        (-1.0, n_missing, from_missing, ~mask),
        (1.0, n_observed, ~from_missing, mask),
    ):
        for c in np.unique(counts[chosen]):
            if c == 0:  # complete dyads (R^{-1}) or none observed (0)
                continue
            rows = np.flatnonzero(chosen & (counts == c))
            cols = np.nonzero(pick[rows])[1].reshape(len(rows), c)
            groups.append(
                (
                    sign,
                    torch.as_tensor(rows, device=device),
                    torch.as_tensor(cols, device=device),
                )
            )
    return MissingLayout(
        groups=groups,
        base=torch.as_tensor(from_missing, dtype=dtype, device=device),
        mask=torch.as_tensor(mask, dtype=dtype, device=device),
    )


class MaskedInverse:
    """Per dyad, ``R_O^{-1}``: the working correlation's inverse on its layers.

    The inverse of ``R`` restricted to a dyad's observed layers ``O``, zero in
    the rows and columns of its missing layers ``M``, is kept as a low-rank
    form, ``R_O^{-1} = base * P + sign * T^T T`` with ``P = R^{-1}``:

    - a dyad missing few layers (``|M| <= |O|``) uses the identity
      ``(R_OO)^{-1} = P_OO - P_OM (P_MM)^{-1} P_MO``, so ``base = 1``,
      ``sign = -1`` and ``T = L_M^{-1} P_M.`` (``L_M`` the Cholesky factor of
      ``P_MM``), with ``|M|`` rows; on the missing layers this form is zero;
    - a dyad missing most layers uses ``T = L_O^{-1} E_O`` (``L_O`` the
      Cholesky factor of ``R_OO``, ``E_O`` the selection of its layers), so
      ``base = 0`` and ``sign = +1``, with ``|O|`` rows.

    Each form costs ``min(|M|, |O|)`` rows per dyad, in one batched Cholesky
    per group of dyads with the same count (at most ``n_layers`` groups, on
    ``R``'s device), so no Python loop runs over patterns of missing layers
    and complete dyads cost what a plain Gram matrix costs.

    An exchangeable ``R = (1 - rho) I + rho 1 1^T`` (which includes the
    identity) has the closed form ``R_O^{-1} = (I_O - c_d 1_O 1_O^T) /
    (1 - rho)``, ``c_d = rho / (1 - rho + rho |O|)`` (Sherman-Morrison): one
    rank-one term per dyad whatever it misses, so missing entries cost
    nothing extra. It is used whenever the off-diagonal entries of ``corr``
    are all equal.

    Parameters
    ----------
    corr : tensor of shape (n_layers, n_layers)
    layout : MissingLayout
    """

    def __init__(self, corr, layout):
        torch = import_torch()
        self.layout = layout
        self.parts = []
        L = corr.shape[0]
        off = corr[~torch.eye(L, dtype=torch.bool, device=corr.device)]
        self.exchangeable = bool((off == off[0]).all()) if L > 1 else True
        if self.exchangeable:
            rho = float(off[0]) if L > 1 else 0.0
            self.scale = 1.0 / (1.0 - rho)
            n_obs = layout.mask.sum(1)
            self.c = rho / (1.0 - rho + rho * n_obs)  # (n_dyads,)
            return
        self.P = torch.cholesky_inverse(torch.linalg.cholesky(corr))
        for sign, rows, cols in layout.groups:
            c = cols.shape[1]
            if sign < 0:
                block = self.P[cols[:, :, None], cols[:, None, :]]  # P_MM
                right = self.P[cols]  # P_M. of shape (g, c, L)
            else:
                block = corr[cols[:, :, None], cols[:, None, :]]  # R_OO
                right = corr.new_zeros(len(rows), c, L)
                right.scatter_(2, cols[:, :, None], 1.0)  # E_O
            chol = torch.linalg.cholesky(block)
            T = torch.linalg.solve_triangular(chol, right, upper=False)
            self.parts.append((sign, rows, T))

    def matvec(self, e):
        """``R_O^{-1} e_d`` for every dyad: (n_dyads, L) -> (n_dyads, L)."""
        mask = self.layout.mask
        if self.exchangeable:
            total = (e * mask).sum(1, keepdim=True)
            return (e - self.c[:, None] * total) * mask * self.scale
        base = self.layout.base
        out = (e * base[:, None]) @ self.P
        for sign, rows, T in self.parts:
            Te = (T @ e[rows][:, :, None])[..., 0]  # (g, c)
            out.index_add_(0, rows, sign * (T.transpose(1, 2) @ Te[..., None])[..., 0])
        return out * self.layout.mask

    def gram(self, a, Zt, w):
        """``sum_d w_d (diag(a_d) R_O^{-1} diag(a_d)) kron (z_d z_d^T)``.

        ``a`` is zero where unobserved. In layer-major order ``(l, a)``:
        shape (L * q, L * q).
        """
        torch = import_torch()
        L, q = a.shape[1], Zt.shape[1]
        if self.exchangeable:
            # (diag(a^2) - c_d a a^T) / (1 - rho): block-diagonal plus rank one.
            K = (Zt[:, :, None] * Zt[:, None, :]).reshape(-1, q * q)
            blocks = ((w[:, None] * a * a).T @ K).reshape(L, q, q)
            H = torch.block_diag(*blocks)
            F = (a[:, :, None] * Zt[:, None, :]).reshape(-1, L * q)
            # c_d < 0 when rho < 0: weighted, not square-rooted.
            return (H - F.T @ (F * (w * self.c)[:, None])) * self.scale
        wb = w * self.layout.base
        F = (a[:, :, None] * Zt[:, None, :]).reshape(-1, L * q) * wb.sqrt()[:, None]
        H = (F.T @ F) * torch.kron(self.P.contiguous(), a.new_ones(q, q))
        if not self.parts:
            return H
        for sign, rows, T in self.parts:
            c = T.shape[1]
            step = max(1, _CHUNK_ENTRIES // (c * L * q))
            for start in range(0, len(rows), step):
                r = rows[start : start + step]
                # Rows (T_dk * a_d) kron z_d, one per row k of T_d.
                B = T[start : start + step] * a[r][:, None, :]  # (g, c, L)
                z = Zt[r] * w[r, None].sqrt()
                G = (B[:, :, :, None] * z[:, None, None, :]).reshape(-1, L * q)
                H = H + sign * (G.T @ G)
        return H


def gee_blocks(dmu, inv_sd, resid, inverse, Zt, weights):
    """GEE matrices for the per-layer coefficients (beta_l, b_l), in torch.

    Returns ``H = sum_d w_d D_d^T V_d^{-1} D_d`` and the per-dyad estimating
    function rows ``S_d = D_d^T V_d^{-1} r_d`` (unweighted: the estimating
    function is ``sum_d w_d S_d``), with ``V_d^{-1} = A^{-1/2} R_O^{-1}
    A^{-1/2}`` and ``D_d[l, (l, a)] = dmu_l z_a``.

    Parameters
    ----------
    dmu, inv_sd, resid : tensor of shape (n_dyads, n_layers)
        ``d mu / d eta``, ``1 / sqrt(v(mu))`` (0 where unobserved) and the
        residuals ``y - mu`` (0 where unobserved).
    inverse : MaskedInverse
        The per-dyad ``R_O^{-1}``.
    Zt : tensor of shape (n_dyads, n_coef)
        Covariates, with a column of ones for the intercept.
    weights : tensor of shape (n_dyads,)
        Dyad (frequency) weights.

    Returns
    -------
    H : tensor of shape (n_layers * n_coef, n_layers * n_coef)
    S : tensor of shape (n_dyads, n_layers * n_coef)
    """
    a = dmu * inv_sd
    e = resid * inv_sd  # Pearson residuals (0 where unobserved)
    H = inverse.gram(a, Zt, weights)
    S = (a * inverse.matvec(e))[:, :, None] * Zt[:, None, :]
    return H, S.reshape(len(S), -1)


def sandwich(dmu, inv_sd, resid, inverse, Zt, weights):
    """Robust covariance ``H^{-1} M H^{-1}`` of the per-layer (beta_l, b_l).

    ``M = sum_d w_d S_d S_d^T``: each dyad is an independent cluster, and a
    dyad of weight ``w`` counts as ``w`` of them. Arguments as in
    :func:`gee_blocks`; returns a float64 numpy array.
    """
    H, S = gee_blocks(dmu, inv_sd, resid, inverse, Zt, weights)
    H, S = to_numpy(H).astype(np.float64), to_numpy(S).astype(np.float64)
    Hinv = np.linalg.pinv(H)
    S = S * np.sqrt(to_numpy(weights).astype(np.float64))[:, None]
    return Hinv @ (S.T @ S) @ Hinv


def update_correlation(e, M, w, structure, torch):
    """Moment estimate of the working correlation from Pearson residuals.

    Parameters
    ----------
    e, M : tensor of shape (n_dyads, n_layers)
        Pearson residuals (0 where unobserved) and the observed mask.
    w : tensor of shape (n_dyads, 1)
        Dyad weights.
    structure : {"independence", "exchangeable", "unstructured"}
    torch : module

    Returns
    -------
    tensor of shape (n_layers, n_layers)
    """
    L = M.shape[1]
    if structure == "independence" or L == 1:
        return torch.eye(L, dtype=e.dtype, device=e.device)
    phi = (w * e**2).sum() / (w * M).sum()
    cross = e.T @ (w * e)  # weighted sum over dyads of e_l e_k
    counts = M.T @ (w * M)
    C = cross / counts.clamp_min(1) / phi
    if structure == "exchangeable":
        off = ~torch.eye(L, dtype=torch.bool, device=e.device)
        total = (cross * off).sum() / (counts * off).sum().clamp_min(1) / phi
        rho = float(total.clamp(-1 / (L - 1) + 1e-3, 1 - 1e-3))
        out = torch.full((L, L), rho, dtype=e.dtype, device=e.device)
        out.fill_diagonal_(1.0)
        return out
    # Unstructured: the moment matrix, made a positive definite correlation.
    C = 0.5 * (C + C.T)
    C.fill_diagonal_(1.0)
    vals, vecs = torch.linalg.eigh(C)
    C = (vecs * vals.clamp_min(_MIN_EIG)) @ vecs.T
    d = C.diagonal().sqrt()
    return C / d[:, None] / d[None, :]


def spectral_init(
    pairs, Y0, mask, weights, means, n_nodes, R, link, random_state, directed=False
):
    """Factors from the top eigenpairs of the layer-averaged, centred adjacency.

    Each node pair's entry is the weighted mean, over the dyads of that pair,
    of the dyad's mean deviation from the layer means. An undirected fit
    symmetrises the matrix and takes its eigenpairs; a directed fit takes the
    top singular triplets of the (asymmetric) matrix, the left singular
    vectors for the senders and the right ones for the receivers.

    Returns
    -------
    factors : tuple of ndarray
        ``(U, W)`` undirected, ``(U, V, W)`` directed: ``U`` and ``V`` of
        shape (n_nodes, R), ``W`` of shape (n_layers, R).
    """
    dev = np.where(mask, Y0 - means, 0.0).sum(1) / np.maximum(mask.sum(1), 1)
    wdev = weights * dev
    if directed:
        rows, cols, w = pairs[:, 0], pairs[:, 1], weights
    else:
        rows = np.r_[pairs[:, 0], pairs[:, 1]]
        cols = np.r_[pairs[:, 1], pairs[:, 0]]
        wdev, w = np.r_[wdev, wdev], np.r_[weights, weights]
    shape = (n_nodes, n_nodes)
    total = sp.csr_matrix((wdev, (rows, cols)), shape=shape)
    count = sp.csr_matrix((w, (rows, cols)), shape=shape)
    # Weighted mean deviation per node pair (duplicates summed by csr_matrix).
    S = total.copy()
    S.data = total.data / count.data
    scale = 1.0
    if link in ("logit", "probit", "cloglog"):  # a rough scale for binary edges
        p = np.clip(means.mean(), 0.05, 0.95)
        scale = 1.0 / (p * (1 - p))
    elif link == "log":
        scale = 1.0 / max(means.mean(), 1e-3)
    S = S * scale
    if directed:
        rng = check_random_state(random_state)
        if n_nodes > 500 and R < n_nodes - 1:
            from scipy.sparse.linalg import svds

            v0 = rng.uniform(-1, 1, n_nodes)
            left, vals, right_t = svds(S, k=R, v0=v0)
        else:
            left, vals, right_t = np.linalg.svd(S.toarray())
        order = np.argsort(-vals)[:R]
        vals, left, right = vals[order], left[:, order], right_t[order].T
        if len(vals) < R:  # fewer nodes than components
            pad = R - len(vals)
            vals = np.concatenate([vals, np.full(pad, 1e-3)])
            left = np.hstack([left, np.zeros((n_nodes, pad))])
            right = np.hstack([right, np.zeros((n_nodes, pad))])
        root = np.sqrt(vals + 1e-6)
        W = 1 + 0.1 * rng.standard_normal((Y0.shape[1], R))
        return left * root, right * root, W
    if n_nodes > 500 and R < n_nodes - 1:
        from scipy.sparse.linalg import eigsh

        v0 = check_random_state(random_state).uniform(-1, 1, n_nodes)
        vals, vecs = eigsh(S, k=R, which="LM", v0=v0)
    else:
        vals, vecs = np.linalg.eigh(S.toarray())
    order = np.argsort(-np.abs(vals))[:R]
    vals, vecs = vals[order], vecs[:, order]
    if len(vals) < R:  # fewer nodes than components
        vals = np.concatenate([vals, np.full(R - len(vals), 1e-3)])
        vecs = np.hstack([vecs, np.zeros((n_nodes, R - vecs.shape[1]))])
    U = vecs * np.sqrt(np.abs(vals) + 1e-6)
    rng = check_random_state(random_state)
    W = np.sign(vals + 1e-12) * (1 + 0.1 * rng.standard_normal((Y0.shape[1], R)))
    return U, W


def _norm2(parts):
    return float(sum((x * x).sum() for x in parts))


def _fisher_product(eta_of, point, pullback, inverse, wa, a, alpha, v):
    """``J v`` of the factors' Fisher matrix at ``point`` (see factor_gee_step)."""
    from torch.func import jvp

    _, d_eta = jvp(eta_of, point, v)
    back = pullback(wa * inverse.matvec(a * d_eta))
    return tuple(b + alpha * x for b, x in zip(back, v))


def _joint_fisher(eta_of, point, pullback, inverse, wa, a, alpha, v):
    """``B v`` of all parameters' Fisher matrix, the ridge on the factors."""
    from torch.func import jvp

    _, d_eta = jvp(eta_of, point, v)
    back = pullback(wa * inverse.matvec(a * d_eta))
    return (back[0],) + tuple(b + alpha * x for b, x in zip(back[1:], v[1:]))


@dataclass
class TGINEEResult:
    """What :func:`solve_tginee` estimates (numpy arrays, float64)."""

    coef: np.ndarray  # (n_layers, n_covariates)
    intercept: np.ndarray  # (n_layers,)
    node_factors: object  # (n_nodes, R), or None without factors
    receiver_factors: object  # (n_nodes, R) when directed, else None
    layer_weights: object  # (n_layers, R), or None without factors
    working_correlation: np.ndarray
    scale: float
    covariance: np.ndarray
    n_iter: int
    converged: bool


class _Problem:
    """The data and parameters of one fit, as tensors on the compute device."""

    def __init__(
        self, Y, Z, pairs, weights, *, R, link, alpha, fit_intercept, ctx, directed
    ):
        torch = self.torch = import_torch()
        self.ctx, self.R, self.link, self.alpha = ctx, R, link, alpha
        self.directed = directed
        # The factors' parameters: node factors (senders' when directed),
        # the receivers' factors when directed, and the layer weights.
        self.factor_names = ("U", "V", "W") if directed else ("U", "W")
        self.fit_intercept = fit_intercept
        self.mask = ~np.isnan(Y)
        self.Y0 = np.where(self.mask, Y, 0.0)
        self.weights = weights
        self.Zt = np.hstack([Z, np.ones((len(Z), 1))]) if fit_intercept else Z
        self.n_covariates = Z.shape[1]
        self.pairs = pairs
        self.inv_link, self.d_inv_link, self.variance = _links(torch)[link]
        tensor = self.tensor
        self.t = {
            "Y": tensor(self.Y0),
            "M": tensor(self.mask),
            "w": tensor(weights[:, None]),
            "Z": tensor(Z),
        }
        # The mask times the weights: the weight of each entry in the sums.
        self.t["MW"] = self.t["M"] * self.t["w"]
        if R:
            self.t["i"] = torch.as_tensor(pairs[:, 0], device=ctx.device)
            self.t["j"] = torch.as_tensor(pairs[:, 1], device=ctx.device)
        self.layout = missing_layout(self.mask, ctx.device, ctx.dtype)
        self.t["Zt"] = tensor(self.Zt)
        self.t["wv"] = tensor(weights)
        self.params = {}

    def tensor(self, array):
        return to_tensor(array, dtype=self.ctx.dtype, device=self.ctx.device)

    def initialise(self, n_nodes, random_state):
        """Intercepts at the link of the layer means, factors spectrally."""
        torch, ctx = self.torch, self.ctx
        wm = self.weights[:, None] * self.mask
        means = (self.weights[:, None] * self.Y0).sum(0) / wm.sum(0)
        L = self.Y0.shape[1]
        b0 = link_of(means, self.link) if self.fit_intercept else np.zeros(L)
        self.params = {
            # Transposed (beta^T, W^T), so that eta = Z beta^T + ... reads well.
            "beta": torch.zeros(
                self.n_covariates, L, dtype=ctx.dtype, device=ctx.device
            ).requires_grad_(),
            "b": self.tensor(b0).requires_grad_(self.fit_intercept),
        }
        if self.R:
            *nodes, W0 = spectral_init(
                self.pairs,
                self.Y0,
                self.mask,
                self.weights,
                means,
                n_nodes,
                self.R,
                self.link,
                random_state,
                directed=self.directed,
            )
            for name, value in zip(self.factor_names, [*nodes, W0.T]):
                self.params[name] = self.tensor(value).requires_grad_()

    @property
    def factor_params(self):
        return [self.params[name] for name in self.factor_names] if self.R else []

    def linear_predictor(self):
        p, t = self.params, self.t
        eta = t["Z"] @ p["beta"] + p["b"]
        if self.R:
            eta = self._factor_eta(eta, *self.factor_params)
        return eta

    def objective(self, eta=None):
        """Weighted negative log-likelihood of the link's family plus the ridge.

        Its gradient is the quasi-score, i.e. the independence estimating
        equations: for the canonical links, and for every binary link, since
        the Bernoulli variance is the GEE's variance function ``mu (1 - mu)``.
        """
        torch, t = self.torch, self.t
        eta = self.linear_predictor() if eta is None else eta
        if self.link == "logit":
            nll = torch.nn.functional.softplus(eta) - t["Y"] * eta
        elif self.link == "probit":
            nll = -(
                t["Y"] * torch.special.log_ndtr(eta)
                + (1 - t["Y"]) * torch.special.log_ndtr(-eta)
            )
        elif self.link == "cloglog":
            # log(mu) = log(1 - exp(-exp(eta))), log(1 - mu) = -exp(eta);
            # eta is capped at 30 (mu = 1 to double precision) so that the
            # line search never meets an infinite loss.
            e = torch.exp(eta.clamp(max=30.0))
            log_mu = torch.log((-torch.expm1(-e)).clamp_min(1e-300))
            nll = -(t["Y"] * log_mu - (1 - t["Y"]) * e)
        elif self.link == "log":
            nll = torch.exp(eta) - t["Y"] * eta
        else:
            nll = 0.5 * (t["Y"] - eta) ** 2
        loss = (nll * t["MW"]).sum()
        if self.R:
            ridge = sum((x**2).sum() for x in self.factor_params)
            loss = loss + 0.5 * self.alpha * ridge
        return loss

    def minimise(self, params, max_iter, objective=None):
        """L-BFGS on ``objective`` (the likelihood's by default) over ``params``."""
        fixed = [v for v in self.params.values() if all(v is not q for q in params)]
        held = [v.requires_grad for v in fixed]
        for v in fixed:
            v.requires_grad_(False)
        try:
            lbfgs_minimize(
                params,
                self.objective if objective is None else objective,
                max_iter=max_iter,
                tolerance_grad=_TOLERANCE_GRAD,
                tolerance_change=_TOLERANCE_CHANGE,
            )
        finally:
            for v, grad in zip(fixed, held):
                v.requires_grad_(grad)

    def residuals(self):
        """Mean, ``1 / sqrt(v(mu))`` (0 where unobserved) and Pearson residuals."""
        t = self.t
        with self.torch.no_grad():
            eta = self.linear_predictor()
            mu, _, inv_sd = self._moments(eta)
            return eta, mu, inv_sd, (t["Y"] - mu) * inv_sd

    def inverse(self, corr):
        """The per-dyad ``R_O^{-1}`` of the working correlation ``corr``."""
        return MaskedInverse(corr, self.layout)

    def _moments(self, eta):
        """Mean, d mean / d eta and ``1 / sqrt(v(mu))`` (0 where unobserved)."""
        M = self.t["M"]
        mu = self.inv_link(eta)
        var = self.variance(mu).clamp_min(1e-10)
        return mu, self.d_inv_link(eta), M / var.sqrt()

    def coefficient_step(self, inverse):
        """Fisher-scoring steps of the GEE for (beta, b), factors as an offset."""
        torch, p, t = self.torch, self.params, self.t
        L, q = self.Y0.shape[1], self.Zt.shape[1]
        with torch.no_grad():
            eta = self.linear_predictor()
            parts = [p["beta"].T] + ([p["b"][:, None]] if self.fit_intercept else [])
            gamma = torch.cat(parts, 1)
            eye = torch.eye(L * q, dtype=eta.dtype, device=eta.device)
            for _ in range(_SCORING_STEPS):
                mu, dmu, inv_sd = self._moments(eta)
                H, S = gee_blocks(
                    dmu, inv_sd, (t["Y"] - mu) * t["M"], inverse, t["Zt"], t["wv"]
                )
                # A tiny ridge keeps H invertible when a layer is separated
                # (e.g. all zeros); steps are damped to at most 5 on the link
                # scale, so that such a layer cannot drag the others.
                ridge = 1e-8 * max(float(torch.trace(H)) / len(H), 1e-12)
                step = torch.linalg.solve(
                    H + ridge * eye, (S * t["wv"][:, None]).sum(0)
                )
                step = step * min(1.0, _MAX_STEP / max(float(step.abs().max()), 1e-300))
                step = step.reshape(L, q)
                gamma = gamma + step
                eta = eta + t["Zt"] @ step.T
                if float(step.abs().max()) < 1e-8:
                    break
            p["beta"].copy_(gamma[:, : self.n_covariates].T)
            if self.fit_intercept:
                p["b"].copy_(gamma[:, self.n_covariates])

    def _factor_equations(self, inverse, base, factors):
        """The factors' GEE at ``factors``, and the weights of their Fisher matrix.

        Returns ``F = sum_d w_d X_d^T a_d * R_O^{-1} e_d - alpha factors``, one
        part per factor (``(F_U, F_W)``, or ``(F_U, F_V, F_W)`` directed), and
        ``a = (d mu / d eta) / sd`` (0 where unobserved).
        """
        from torch.func import vjp

        t = self.t
        with self.torch.no_grad():
            eta = self._factor_eta(base, *factors)
            mu, dmu, inv_sd = self._moments(eta)
            a = dmu * inv_sd
            s_eta = t["w"] * a * inverse.matvec((t["Y"] - mu) * inv_sd)
        _, pullback = vjp(partial(self._factor_eta, base), *factors)
        grads = pullback(s_eta)
        return tuple(g - self.alpha * x for g, x in zip(grads, factors)), a

    def _factor_eta(self, base, *factors):
        """``base`` plus the CP factor term of every dyad.

        ``sum_r u_ir u_jr w_lr`` from ``(U, W)``, or ``sum_r u_ir v_jr w_lr``
        from the directed ``(U, V, W)``.
        """
        U, *V, W = factors
        receivers = V[0] if V else U
        return base + (U[self.t["i"]] * receivers[self.t["j"]]) @ W

    def factor_gee_step(self, inverse, n_steps=1, cg_iter=10):
        """Gauss-Newton steps of the factors' GEE under the working covariance.

        The estimating equations ``F(U, W) = 0`` (``F(U, V, W) = 0`` directed)
        of :meth:`_factor_equations`
        are solved by Fisher scoring, ``J delta = F`` with
        ``J = sum_d w_d X_d^T diag(a_d) R_O^{-1} diag(a_d) X_d + alpha I``
        (``X_d`` the derivative of the linear predictor in the factors), by
        conjugate gradients on Jacobian-vector products (no Jacobian is
        formed); each step is halved until ``|F|`` decreases.
        """
        from torch.func import vjp

        torch, t, p = self.torch, self.t, self.params
        with torch.no_grad():
            base = t["Z"] @ p["beta"] + p["b"]
        factors = tuple(x.detach().clone() for x in self.factor_params)
        F, a = self._factor_equations(inverse, base, factors)
        for _ in range(n_steps):
            fixed_eta = partial(self._factor_eta, base)
            _, pullback = vjp(fixed_eta, *factors)
            fisher = partial(
                _fisher_product,
                fixed_eta,
                factors,
                pullback,
                inverse,
                t["w"] * a,
                a,
                self.alpha,
            )
            delta = conjugate_gradient(fisher, F, max_iter=cg_iter)
            current, scale = _norm2(F), 1.0
            for _ in range(6):
                trial = tuple(x + scale * d for x, d in zip(factors, delta))
                F_trial, a_trial = self._factor_equations(inverse, base, trial)
                if _norm2(F_trial) < current:
                    factors, F, a = trial, F_trial, a_trial
                    break
                scale *= 0.5
            else:
                break
        with torch.no_grad():
            for param, value in zip(self.factor_params, factors):
                param.copy_(value)

    def rounds(self, structure, max_iter, tol, verbose):
        """Stage 2; returns (working correlation, rounds run, converged)."""
        torch, t = self.torch, self.t
        L = self.Y0.shape[1]
        corr = torch.eye(L, dtype=self.ctx.dtype, device=self.ctx.device)
        if structure == "independence" or L == 1:
            return corr, 0, True
        eta_prev = None
        bar = progress(total=max_iter, desc="TGINEE: rounds", verbose=verbose)
        with bar:
            for round_ in range(max_iter):
                *_, pearson = self.residuals()
                corr = update_correlation(pearson, t["M"], t["w"], structure, torch)
                inverse = self.inverse(corr)
                if self.Zt.shape[1]:
                    self.coefficient_step(inverse)
                if self.R:
                    self.factor_gee_step(inverse)
                with torch.no_grad():
                    eta = self.linear_predictor()
                if not torch.isfinite(eta).all():
                    raise ValueError(
                        "TGINEE: the estimating equations diverged (non-finite "
                        "linear predictor). Scale the covariates, raise alpha, or "
                        "check that the link fits the data."
                    )
                change = (
                    math.inf
                    if eta_prev is None
                    else float((eta - eta_prev).abs().max())
                    / max(float(eta.abs().max()), 1.0)
                )
                eta_prev = eta
                bar.set_postfix(change=f"{change:.3g}", refresh=False)
                bar.update(1)
                if change < tol:
                    return corr, round_ + 1, True
        return corr, max_iter, False

    def joint_sandwich(self, corr, cg_iter=200):
        """Sandwich covariance of (beta, b) with the factors' uncertainty in it.

        The estimating equations of all parameters, ``psi(beta, b, U, W)``
        (``psi(beta, b, U, V, W)`` directed),
        give the sandwich ``B^{-1} M B^{-1}``, ``B`` their Fisher matrix
        (plus the ridge on the factors) and ``M = sum_d w_d psi_d psi_d^T``.
        Its (beta, b) block is ``C^T M C`` with ``C = B^{-1} E`` (``E`` the
        coefficients' unit vectors): each column by conjugate gradients on
        Jacobian-vector products, and ``psi_d^T c = s_d . (J c)_d``, with
        ``s_d`` the dyad's score on the linear-predictor scale, so no matrix
        of the size of the parameters is formed. Unlike the coefficients'
        sandwich at fixed factors, it does not treat the estimated factors as
        known.
        """
        from torch.func import jvp, vjp

        torch, t, p = self.torch, self.t, self.params
        inverse = self.inverse(corr)
        with torch.no_grad():
            parts = [p["beta"].T] + ([p["b"][:, None]] if self.fit_intercept else [])
            gamma = torch.cat(parts, 1).detach()
            factors = tuple(x.detach() for x in self.factor_params)
            eta = self.linear_predictor()
            mu, dmu, inv_sd = self._moments(eta)
            a = dmu * inv_sd
            score = a * inverse.matvec((t["Y"] - mu) * inv_sd)
        Zt = t["Zt"]

        def eta_of(g, *factors_):
            return self._factor_eta(Zt @ g.T, *factors_)

        point = (gamma, *factors)
        _, pullback = vjp(eta_of, *point)
        wa = t["w"] * a
        fisher = partial(
            _joint_fisher, eta_of, point, pullback, inverse, wa, a, self.alpha
        )
        columns = []
        for k in range(gamma.numel()):
            unit = torch.zeros_like(gamma).reshape(-1)
            unit[k] = 1.0
            rhs = (unit.reshape(gamma.shape),) + tuple(map(torch.zeros_like, factors))
            c = conjugate_gradient(fisher, rhs, max_iter=cg_iter)
            _, d_eta = jvp(eta_of, point, c)
            columns.append((score * d_eta).sum(1))
        V = torch.stack(columns, 1)
        cov = (V * t["wv"][:, None]).T @ V
        return to_numpy(cov).astype(np.float64)

    def result(self, corr, n_iter, converged):
        """Dispersion, sandwich covariance and the estimates, in NumPy."""
        t, p = self.t, self.params
        eta, mu, inv_sd, pearson = self.residuals()
        scale = float((t["w"] * pearson**2).sum() / t["MW"].sum())
        if self.Zt.shape[1] and self.R:
            covariance = self.joint_sandwich(corr)
        elif self.Zt.shape[1]:
            covariance = sandwich(
                self.d_inv_link(eta),
                inv_sd,
                (t["Y"] - mu) * t["M"],
                self.inverse(corr),
                t["Zt"],
                t["wv"],
            )
        else:  # nothing to infer
            covariance = np.zeros((0, 0))
        return TGINEEResult(
            coef=to_numpy(p["beta"]).T.copy(),
            intercept=to_numpy(p["b"]),
            node_factors=to_numpy(p["U"]) if self.R else None,
            receiver_factors=to_numpy(p["V"]) if self.R and self.directed else None,
            layer_weights=to_numpy(p["W"]).T.copy() if self.R else None,
            working_correlation=to_numpy(corr).astype(np.float64),
            scale=scale,
            covariance=covariance,
            n_iter=n_iter,
            converged=converged,
        )


def solve_tginee(
    Y,
    Z,
    pairs,
    n_nodes,
    weights,
    *,
    n_components,
    directed,
    link,
    working_covariance,
    alpha,
    fit_intercept,
    max_iter,
    tol,
    random_state,
    verbose,
    context,
):
    """Fit the T-GINEE model; see :class:`~sklearn_ext.network.TGINEE`.

    Parameters
    ----------
    Y : ndarray of shape (n_dyads, n_layers)
        Responses, NaN where unobserved; every layer has an observed entry.
    Z : ndarray of shape (n_dyads, n_covariates)
        Dyad covariates.
    pairs : ndarray of shape (n_dyads, 2) or None
        Positions ``0 .. n_nodes - 1`` of each dyad's nodes; None fits no
        factors.
    n_nodes : int
    weights : ndarray of shape (n_dyads,)
        Positive frequency weights of the dyads.
    n_components, directed, link, working_covariance, alpha, fit_intercept, \
max_iter, tol, random_state, verbose
        The estimator's parameters.
    context : object
        The torch context (``device``, ``dtype``) of the fit.

    Returns
    -------
    TGINEEResult
        ``n_iter`` counts the independence stage as the first round.
    """
    R = n_components if pairs is not None else 0
    problem = _Problem(
        Y,
        Z,
        pairs,
        weights,
        R=R,
        link=link,
        alpha=alpha,
        fit_intercept=fit_intercept,
        ctx=context,
        directed=directed,
    )
    problem.initialise(n_nodes, random_state)
    # Stage 1: the independence equations are the quasi-score of the link's
    # exponential family (canonical links), so they are solved by minimising
    # its negative log-likelihood; a stable start for stage 2.
    trainable = [v for v in problem.params.values() if v.requires_grad]
    problem.minimise(trainable, _INIT_ITER)
    # Stage 2: rounds. Each re-estimates R from the Pearson residuals, takes
    # Fisher-scoring steps of the GEE for (beta, b) with the factor term as an
    # offset (the exact GEE update for these parameters), then Gauss-Newton
    # steps of the GEE for the factors given (beta, b).
    corr, rounds, converged = problem.rounds(working_covariance, max_iter, tol, verbose)
    return problem.result(corr, 1 + rounds, converged)
