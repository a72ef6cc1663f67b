"""The T-GINEE fitting algorithm.

:func:`solve_tginee` runs the two stages that :class:`~sklearn_ext.network.TGINEE`
documents: the independence (likelihood) stage, an L-BFGS minimisation started
from a spectral decomposition, then rounds of working-correlation update,
Fisher scoring of the GEE for the coefficients and L-BFGS for the factors; it
ends with the sandwich covariance. The pieces (moments, the GEE blocks, the
correlation estimate, the sandwich) are functions of arrays, so that tests can
check them against their definitions.

Dyad weights are frequency weights throughout: a dyad of weight ``w`` enters
every sum over dyads (the log-likelihood, the moment estimates of the
dispersion and of the correlation, the estimating equations and both halves of
the sandwich) ``w`` times, exactly as ``w`` copies of the dyad would.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from sklearn_ext.utils._messages import progress
from sklearn_ext.utils._torch import import_torch, lbfgs_minimize, to_numpy, to_tensor

__all__ = [
    "TGINEEResult",
    "gee_blocks",
    "link_of",
    "moments",
    "pattern_groups",
    "sandwich",
    "solve_tginee",
    "spectral_init",
    "update_correlation",
]

# L-BFGS iterations of the independence start and of each round's factor
# update; Fisher-scoring steps of each round's coefficient update.
_INIT_ITER = 300
_INNER_ITER = 20
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
    if link == "log":
        return np.log(np.maximum(means, eps))
    return means.copy()


def moments(eta, link):
    """Mean, d mean / d eta and variance function at ``eta``, in NumPy."""
    if link == "logit":
        mu = 1.0 / (1.0 + np.exp(-np.clip(eta, -35, 35)))
        return mu, mu * (1 - mu), mu * (1 - mu)
    if link == "log":
        mu = np.exp(np.clip(eta, -35, 35))
        return mu, mu, mu
    return eta, np.ones_like(eta), np.ones_like(eta)


def pattern_groups(mask):
    """Dyads grouped by their pattern of observed layers: ``[(pattern, rows)]``.

    ``rows`` is None for a single group holding every dyad.
    """
    if mask.all():
        return [(np.ones(mask.shape[1], dtype=bool), None)]
    patterns, inverse = np.unique(mask, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return [(pat, np.flatnonzero(inverse == g)) for g, pat in enumerate(patterns)]


def gee_blocks(dmu, inv_sd, resid, groups, Zt, corr, weights=None):
    """GEE matrices for the per-layer coefficients (beta_l, b_l).

    Returns ``H = sum_d w_d D_d^T V_d^{-1} D_d`` and the per-dyad estimating
    function rows ``S_d = D_d^T V_d^{-1} r_d`` (unweighted: the estimating
    function is ``sum_d w_d S_d``), with ``V_d^{-1} = A^{-1/2} R_O^{-1}
    A^{-1/2}`` and ``D_d[l, (l, a)] = dmu_l z_a``.

    Parameters
    ----------
    dmu, inv_sd, resid : ndarray of shape (n_dyads, n_layers)
        ``d mu / d eta``, ``1 / sqrt(v(mu))`` (0 where unobserved) and the
        residuals ``y - mu`` (0 where unobserved).
    groups : list
        From :func:`pattern_groups`.
    Zt : ndarray of shape (n_dyads, n_coef)
        Covariates, with a column of ones for the intercept.
    corr : ndarray of shape (n_layers, n_layers)
        Working correlation ``R``.
    weights : ndarray of shape (n_dyads,), default=None
        Dyad (frequency) weights; None weighs the dyads equally.

    Returns
    -------
    H : ndarray of shape (n_layers * n_coef, n_layers * n_coef)
    S : ndarray of shape (n_dyads, n_layers * n_coef)
    """
    n, L = dmu.shape
    q = Zt.shape[1]
    if weights is None:
        weights = np.ones(n)
    root = np.sqrt(weights)
    a = dmu * inv_sd
    e = resid * inv_sd  # Pearson residuals (0 where unobserved)
    H = np.zeros((L * q, L * q))
    S = np.empty((n, L * q))
    ones = np.ones((q, q))
    for pattern, rows in groups:
        obs = pattern.astype(np.float64)
        outer = obs[:, None] * obs[None, :]
        P = np.linalg.inv(corr * outer + np.diag(1 - obs)) * outer
        sel = slice(None) if rows is None else rows
        F = (a[sel][:, :, None] * Zt[sel][:, None, :]).reshape(-1, L * q)
        # sqrt(w) on both sides: numpy's symmetric product, exact for w = 1.
        F = F * root[sel][:, None]
        H += (F.T @ F) * np.kron(P, ones)
        S[sel] = ((a[sel] * (e[sel] @ P))[:, :, None] * Zt[sel][:, None, :]).reshape(
            -1, L * q
        )
    return H, S


def sandwich(dmu, inv_sd, resid, groups, Zt, corr, weights=None):
    """Robust covariance ``H^{-1} M H^{-1}`` of the per-layer (beta_l, b_l).

    ``M = sum_d w_d S_d S_d^T``: each dyad is an independent cluster, and a
    dyad of weight ``w`` counts as ``w`` of them. Arguments as in
    :func:`gee_blocks`.

    Returns
    -------
    ndarray of shape (n_layers * n_coef, n_layers * n_coef)
    """
    if weights is None:
        weights = np.ones(dmu.shape[0])
    H, S = gee_blocks(dmu, inv_sd, resid, groups, Zt, corr, weights)
    Hinv = np.linalg.pinv(H)
    S = S * np.sqrt(weights)[:, None]
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


def spectral_init(pairs, Y0, mask, weights, means, n_nodes, R, link, random_state):
    """Factors from the top eigenpairs of the layer-averaged, centred adjacency.

    Each node pair's entry is the weighted mean, over the dyads of that pair,
    of the dyad's mean deviation from the layer means.

    Returns
    -------
    U : ndarray of shape (n_nodes, R)
    W : ndarray of shape (n_layers, R)
    """
    dev = np.where(mask, Y0 - means, 0.0).sum(1) / np.maximum(mask.sum(1), 1)
    rows = np.r_[pairs[:, 0], pairs[:, 1]]
    cols = np.r_[pairs[:, 1], pairs[:, 0]]
    shape = (n_nodes, n_nodes)
    wdev = weights * dev
    total = sp.csr_matrix((np.r_[wdev, wdev], (rows, cols)), shape=shape)
    count = sp.csr_matrix((np.r_[weights, weights], (rows, cols)), shape=shape)
    # Weighted mean deviation per node pair (duplicates summed by csr_matrix).
    S = total.copy()
    S.data = total.data / count.data
    scale = 1.0
    if link == "logit":  # a rough link scale for binary edges
        p = np.clip(means.mean(), 0.05, 0.95)
        scale = 1.0 / (p * (1 - p))
    elif link == "log":
        scale = 1.0 / max(means.mean(), 1e-3)
    S = S * scale
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


@dataclass
class TGINEEResult:
    """What :func:`solve_tginee` estimates (numpy arrays, float64)."""

    coef: np.ndarray  # (n_layers, n_covariates)
    intercept: np.ndarray  # (n_layers,)
    node_factors: object  # (n_nodes, R), or None without factors
    layer_weights: object  # (n_layers, R), or None without factors
    working_correlation: np.ndarray
    scale: float
    covariance: np.ndarray
    n_iter: int
    converged: bool


class _Problem:
    """The data and parameters of one fit, as tensors on the compute device."""

    def __init__(self, Y, Z, pairs, weights, *, R, link, alpha, fit_intercept, ctx):
        torch = self.torch = import_torch()
        self.ctx, self.R, self.link, self.alpha = ctx, R, link, alpha
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
        self.groups = pattern_groups(self.mask)
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
            U0, W0 = spectral_init(
                self.pairs,
                self.Y0,
                self.mask,
                self.weights,
                means,
                n_nodes,
                self.R,
                self.link,
                random_state,
            )
            self.params["U"] = self.tensor(U0).requires_grad_()
            self.params["W"] = self.tensor(W0.T).requires_grad_()

    @property
    def factor_params(self):
        return [self.params["U"], self.params["W"]] if self.R else []

    def linear_predictor(self):
        p, t = self.params, self.t
        eta = t["Z"] @ p["beta"] + p["b"]
        if self.R:
            eta = eta + (p["U"][t["i"]] * p["U"][t["j"]]) @ p["W"]
        return eta

    def objective(self):
        """Weighted negative log-likelihood of the link's family plus the ridge.

        For these canonical links its gradient is the quasi-score, i.e. the
        independence estimating equations.
        """
        torch, t = self.torch, self.t
        eta = self.linear_predictor()
        if self.link == "logit":
            nll = torch.nn.functional.softplus(eta) - t["Y"] * eta
        elif self.link == "log":
            nll = torch.exp(eta) - t["Y"] * eta
        else:
            nll = 0.5 * (t["Y"] - eta) ** 2
        loss = (nll * t["MW"]).sum()
        if self.R:
            U, W = self.params["U"], self.params["W"]
            loss = loss + 0.5 * self.alpha * ((U**2).sum() + (W**2).sum())
        return loss

    def minimise(self, params, max_iter):
        """L-BFGS on the objective over ``params``, the others held fixed."""
        fixed = [v for v in self.params.values() if all(v is not q for q in params)]
        held = [v.requires_grad for v in fixed]
        for v in fixed:
            v.requires_grad_(False)
        try:
            lbfgs_minimize(
                params,
                self.objective,
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
            mu = self.inv_link(eta)
            var = self.variance(mu).clamp_min(1e-10) * t["M"]
            inv_sd = t["M"] / var.clamp_min(1e-10).sqrt()
            return eta, mu, inv_sd, (t["Y"] - mu) * inv_sd

    def coefficient_step(self, corr):
        """Fisher-scoring steps of the GEE for (beta, b), factors as an offset."""
        torch, p = self.torch, self.params
        L, q = self.Y0.shape[1], self.Zt.shape[1]
        groups = self.groups
        with torch.no_grad():
            eta = to_numpy(self.linear_predictor())
        gamma = np.hstack(
            [to_numpy(p["beta"]).T]
            + ([to_numpy(p["b"])[:, None]] if self.fit_intercept else [])
        )
        M_np = self.mask.astype(np.float64)
        w = self.weights
        for _ in range(_SCORING_STEPS):
            mu, dmu, var = moments(eta, self.link)
            inv_sd = M_np / np.sqrt(np.maximum(var, 1e-10))
            H, S = gee_blocks(
                dmu, inv_sd, (self.Y0 - mu) * M_np, groups, self.Zt, corr, w
            )
            # A tiny ridge keeps H invertible when a layer is separated
            # (e.g. all zeros); steps are damped to at most 5 on the link
            # scale, so that such a layer cannot drag the others.
            ridge = 1e-8 * max(np.trace(H) / len(H), 1e-12)
            step = np.linalg.solve(H + ridge * np.eye(len(H)), (S * w[:, None]).sum(0))
            step = step * min(1.0, _MAX_STEP / max(np.abs(step).max(), 1e-300))
            step = step.reshape(L, q)
            gamma = gamma + step
            eta = eta + self.Zt @ step.T
            if np.abs(step).max() < 1e-8:
                break
        with torch.no_grad():
            p["beta"].copy_(torch.as_tensor(gamma[:, : self.n_covariates].T))
            if self.fit_intercept:
                p["b"].copy_(torch.as_tensor(gamma[:, self.n_covariates]))

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
                if self.Zt.shape[1]:
                    self.coefficient_step(to_numpy(corr))
                if self.R:
                    self.minimise(self.factor_params, _INNER_ITER)
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

    def result(self, corr, n_iter, converged):
        """Dispersion, sandwich covariance and the estimates, in NumPy."""
        t, p = self.t, self.params
        eta, mu, inv_sd, pearson = self.residuals()
        scale = float((t["w"] * pearson**2).sum() / t["MW"].sum())
        corr = to_numpy(corr)
        if self.Zt.shape[1]:
            covariance = sandwich(
                to_numpy(self.d_inv_link(eta)),
                to_numpy(inv_sd),
                to_numpy(t["Y"] - mu),
                self.groups,
                self.Zt,
                corr,
                self.weights,
            )
        else:  # nothing to infer
            covariance = np.zeros((0, 0))
        return TGINEEResult(
            coef=to_numpy(p["beta"]).T.copy(),
            intercept=to_numpy(p["b"]),
            node_factors=to_numpy(p["U"]) if self.R else None,
            layer_weights=to_numpy(p["W"]).T.copy() if self.R else None,
            working_correlation=corr,
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
    n_components, link, working_covariance, alpha, fit_intercept, max_iter, \
tol, random_state, verbose
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
    )
    problem.initialise(n_nodes, random_state)
    # Stage 1: the independence equations are the quasi-score of the link's
    # exponential family (canonical links), so they are solved by minimising
    # its negative log-likelihood; a stable start for stage 2.
    trainable = [v for v in problem.params.values() if v.requires_grad]
    problem.minimise(trainable, _INIT_ITER)
    # Stage 2: rounds. Each re-estimates R from the Pearson residuals, takes
    # Fisher-scoring steps of the GEE for (beta, b) with the factor term as an
    # offset (the exact GEE update for these parameters), then updates the
    # factors given (beta, b).
    corr, rounds, converged = problem.rounds(working_covariance, max_iter, tol, verbose)
    return problem.result(corr, 1 + rounds, converged)
