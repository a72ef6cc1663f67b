"""T-GINEE: estimating equations with CP node factors for multilayer networks."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils.metaestimators import available_if

from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    DeviceConstraint,
    import_torch,
    resolve_device,
    to_numpy,
    to_tensor,
)

__all__ = ["TGINEE"]

# L-BFGS iterations of the independence start and of each round's factor
# update; Fisher-scoring steps of each round's coefficient update.
_INIT_ITER = 300
_INNER_ITER = 20
_SCORING_STEPS = 5
_MAX_STEP = 5.0
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


def _has_factors(estimator):
    return estimator.dyad_columns is not None


class TGINEE(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Tensor generalized estimating equations for multilayer networks (T-GINEE).

    A multilayer network has the same nodes in ``L`` layers (relationship
    types). T-GINEE [1]_ models the layers' edges jointly:

    - a CP decomposition with shared node factors ``U`` (n_nodes, R) and layer
      weights ``W`` (L, R) captures the structure common to the layers;
    - a link function ``g`` fits binary ("logit"), count ("log") or weighted
      ("identity") edges;
    - generalized estimating equations (GEE) [2]_ with a working covariance
      across layers model the correlation of a dyad's edges in the different
      layers.

    **Data layout.** A dyad is a sample (the GEE "subject"); its edge values in
    the ``L`` layers are its correlated responses. Each row of ``X`` is a dyad:
    ``dyad_columns=(i, j)`` names the two columns holding its node indices
    (non-negative integers; they travel inside ``X``, so cross-validation,
    scorers and pipelines work unchanged), and the other columns are dyad
    covariates. ``Y`` (n_dyads, L) holds the responses, NaN marking an
    unobserved entry. :func:`~sklearn_ext.network.tensor_to_dyads` turns an
    (L, n, n) adjacency tensor into this form. Splitting dyads between train
    and test is link prediction. With ``dyad_columns=None`` there are no
    factors and the estimator is a multivariate GEE regression (a
    multi-output regressor).

    **Model.** For dyad ``(i, j)`` with covariates ``x_ij`` and layer ``l``,

    ``E[y_ijl] = mu_ijl = g^{-1}(sum_r u_ir u_jr w_lr + x_ij . beta_l + b_l)``,

    with ``Var(y_ijl) = phi v(mu_ijl)`` (v = mu(1 - mu), mu or 1) and the
    working covariance ``V_ij = phi A^{1/2} R A^{1/2}``, ``A = diag(v(mu_ij))``
    restricted to the observed layers. ``R`` is the identity
    ("independence"), one common correlation ("exchangeable"), or a free
    correlation matrix ("unstructured"), estimated by moments from the
    Pearson residuals.

    **Estimation.** First all parameters solve the independence equations,
    which for these canonical links are the score of the link's exponential
    family (Bernoulli, Poisson, Gaussian): an L-BFGS minimisation of its
    negative log-likelihood plus the ridge penalty
    ``alpha (|U|^2 + |W|^2) / 2`` on the factors (which fixes their scale),
    started from a spectral decomposition of the layer-averaged adjacency.
    Then rounds alternate, as long as the linear predictor moves: ``R`` is
    re-estimated from the Pearson residuals; Fisher-scoring steps solve the
    GEE for the coefficients and intercepts,
    ``sum_ij D_ij^T V_ij^{-1} (y_ij - mu_ij) = 0`` with
    ``D_ij = d mu_ij / d (beta, b)`` and the factor term as an offset; and the
    factors are updated given the coefficients. The working covariance thus
    enters the equations of ``beta`` and ``b``; the factors solve the
    independence equations, which stay unbiased under any correlation
    across layers.

    **Inference.** ``bse_`` holds the robust (sandwich) standard errors of
    ``coef_``, ``H^{-1} M H^{-1}`` with ``H = sum D^T V^{-1} D`` and
    ``M = sum D^T V^{-1} r r^T V^{-1} D`` over the dyads. The derivatives are
    taken over ``(beta, b)`` with the factors held at their estimates, and
    each dyad is treated as an independent cluster. GEE stay consistent
    under a wrong working covariance; a working covariance close to the truth
    buys efficiency (smaller ``bse_``). How much depends on the design: when
    each layer has its own coefficients and every layer sees the same dyad
    covariates (the usual layout), the layers are seemingly unrelated
    regressions with identical regressors, for which generalized and
    ordinary least squares coincide in the linear case; the gain is then
    small, and it comes from non-linear links and unobserved entries.

    Parameters
    ----------
    n_components : int, default=2
        Rank ``R`` of the CP decomposition (ignored when ``dyad_columns`` is
        None).
    dyad_columns : tuple of two int or None, default=None
        Columns of ``X`` holding the dyad's node indices; None fits a GEE
        regression on all columns without node factors.
    link : {"logit", "log", "identity"}, default="logit"
        Link function: binary, count or real-valued edges.
    working_covariance : {"independence", "exchangeable", "unstructured"}, \
            default="exchangeable"
        Working correlation across layers.
    alpha : float, default=1.0
        Ridge penalty on the node factors and layer weights.
    fit_intercept : bool, default=True
        Fit one intercept per layer.
    max_iter : int, default=30
        Most rounds of the estimating equations (working covariance update
        plus the weighted solve).
    tol : float, default=1e-5
        The rounds stop when the largest change of the linear predictor is
        below ``tol`` times its scale.
    device : str or torch.device, default="auto"
        "auto" (CUDA when available), "cpu", "cuda", "cuda:N" or "mps".
    random_state : int, RandomState instance or None, default=None
        Seeds the small perturbation of the initial layer weights.
    verbose : int, default=0
        ``>= 1`` prints one line per round.

    Attributes
    ----------
    node_factors_ : ndarray of shape (n_nodes, n_components)
        ``U``; row ``k`` belongs to node ``nodes_[k]``.
    layer_weights_ : ndarray of shape (n_layers, n_components)
        ``W``.
    coef_ : ndarray of shape (n_layers, n_covariates)
        ``beta``, one row per layer.
    intercept_ : ndarray of shape (n_layers,)
        Layer intercepts (zeros when ``fit_intercept=False``).
    bse_ : ndarray of shape (n_layers, n_covariates)
        Robust (sandwich) standard errors of ``coef_``.
    intercept_bse_ : ndarray of shape (n_layers,)
        Robust standard errors of ``intercept_``.
    covariance_ : ndarray of shape (n_layers * n_coef, n_layers * n_coef)
        Sandwich covariance of the per-layer ``(beta_l, b_l)`` blocks, in
        layer-major order (``n_coef`` = covariates plus the intercept).
    working_correlation_ : ndarray of shape (n_layers, n_layers)
        Final working correlation ``R``.
    scale_ : float
        Dispersion ``phi`` (mean squared Pearson residual).
    nodes_ : ndarray of shape (n_nodes,)
        Node indices seen in ``fit`` (sorted).
    n_layers_ : int
        Number of layers.
    n_iter_ : int
        Rounds run, counting the independence start as the first.
    device_ : str
        Device used for fitting.
    n_features_in_ : int
        Number of columns of ``X``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the columns of ``X``, when it has string column names.

    See Also
    --------
    sklearn_ext.network.tensor_to_dyads : Adjacency tensor to dyad rows.
    sklearn_ext.network.dyads_to_tensor : Dyad rows back to a tensor.

    Notes
    -----
    The factor term ``sum_r u_ir u_jr w_lr`` is symmetric in ``i`` and ``j``,
    so a directed network gets the same factor term for ``(i, j)`` and
    ``(j, i)``; its covariates may still differ. Node identities are
    arbitrary non-negative integers; predicting a dyad with a node not seen in
    ``fit`` raises a ValueError naming the node. ``score`` is the mean over
    layers of R^2 on the observed entries.

    References
    ----------
    .. [1] M. Wang et al., "T-GINEE: a tensor-based multilayer graph
       representation learning", ICML 2026.
    .. [2] K.-Y. Liang and S. L. Zeger, "Longitudinal data analysis using
       generalized linear models", Biometrika 73(1), 1986.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_multilayer_network
    >>> from sklearn_ext.network import TGINEE, tensor_to_dyads
    >>> A, C, truth = make_multilayer_network(60, 3, 2, random_state=0)
    >>> X, Y = tensor_to_dyads(A, C)
    >>> model = TGINEE(2, dyad_columns=(0, 1), device="cpu", random_state=0)
    >>> model.fit(X, Y).node_factors_.shape, model.coef_.shape
    ((60, 2), (3, 2))
    >>> model.predict(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "dyad_columns": [tuple, list, None],
        "link": [StrOptions({"logit", "log", "identity"})],
        "working_covariance": [
            StrOptions({"independence", "exchangeable", "unstructured"})
        ],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "device": [DeviceConstraint()],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    _paper = "T-GINEE: tensor-based multilayer graph representation learning, ICML 2026"
    _bench_name = "tginee"

    def __init__(
        self,
        n_components=2,
        *,
        dyad_columns=None,
        link="logit",
        working_covariance="exchangeable",
        alpha=1.0,
        fit_intercept=True,
        max_iter=30,
        tol=1e-5,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.dyad_columns = dyad_columns
        self.link = link
        self.working_covariance = working_covariance
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ input

    def _split_columns(self, X):
        """(node index columns or None, covariate column indices)."""
        n_cols = X.shape[1]
        if self.dyad_columns is None:
            return None, np.arange(n_cols)
        cols = tuple(self.dyad_columns)
        if len(cols) != 2 or not all(
            isinstance(c, Integral) and not isinstance(c, bool) for c in cols
        ):
            raise ValueError(
                "dyad_columns must be two column indices (i, j); "
                f"got {self.dyad_columns!r}."
            )
        if not all(-n_cols <= c < n_cols for c in cols):
            raise ValueError(
                f"dyad_columns={self.dyad_columns!r} is out of range for X with "
                f"{n_cols} columns."
            )
        cols = tuple(int(c) % n_cols for c in cols)
        if cols[0] == cols[1]:
            raise ValueError(
                "dyad_columns must be two different column indices (i, j); "
                f"{self.dyad_columns!r} names column {cols[0]} twice."
            )
        rest = np.setdiff1d(np.arange(n_cols), cols)
        return cols, rest

    def _node_ids(self, X, cols):
        ids = X[:, list(cols)]
        if ids.size and np.abs(ids).max() >= 2**53:
            raise ValueError(
                "Node indices must be below 2**53 (they are read from a float "
                f"array); found {ids.max()!r}. Renumber the nodes."
            )
        if np.any(ids < 0) or np.any(ids != np.round(ids)):
            bad = ids[(ids < 0) | (ids != np.round(ids))][0]
            raise ValueError(
                "The node index columns (dyad_columns) must hold non-negative "
                f"integers; found {bad!r}."
            )
        return ids.astype(np.int64)

    def _check_y(self, Y, n_samples, reset, allow_empty_layers=False):
        if Y is None:
            raise ValueError(
                "TGINEE requires y to be passed, but the target y is None; pass "
                "Y of shape (n_dyads, n_layers)."
            )
        Y = check_array(
            Y,
            ensure_2d=False,
            dtype=np.float64,
            ensure_all_finite="allow-nan",
            input_name="Y",
        )
        if Y.ndim == 1:
            Y = Y[:, None]
            one_d = True
        elif Y.ndim == 2:
            one_d = False
        else:
            raise ValueError(f"Y must be 1-D or 2-D; got {Y.ndim} dimensions.")
        if Y.shape[0] != n_samples:
            raise ValueError(
                f"X and Y have different numbers of dyads: X has {n_samples}, "
                f"Y has {Y.shape[0]}."
            )
        if np.isinf(Y).any():
            raise ValueError("Y contains infinity; NaN marks unobserved entries.")
        if not reset and Y.shape[1] != self.n_layers_:
            raise ValueError(
                f"Y has {Y.shape[1]} layers, but the model was fitted with "
                f"{self.n_layers_}."
            )
        if not allow_empty_layers and np.isnan(Y).all(axis=0).any():
            empty = np.flatnonzero(np.isnan(Y).all(axis=0)).tolist()
            raise ValueError(f"Layers {empty} of Y have no observed entry.")
        observed = Y[~np.isnan(Y)]
        if self.link == "logit" and not np.isin(observed, (0.0, 1.0)).all():
            raise ValueError(
                'link="logit" needs binary edges (0 or 1) in Y; found values '
                f"{np.setdiff1d(np.unique(observed), [0.0, 1.0])[:5].tolist()}. Use "
                'link="log" for counts or link="identity" for weights.'
            )
        if self.link == "log" and (observed < 0).any():
            raise ValueError(
                'link="log" needs non-negative edges (counts) in Y; found '
                f'{observed.min()!r}. Use link="identity" for signed weights.'
            )
        if reset:
            constant = [
                k
                for k in range(Y.shape[1])
                if np.unique(Y[~np.isnan(Y[:, k]), k]).size == 1
            ]
            if constant and self.link in ("logit", "log"):
                warnings.warn(
                    f"Layers {constant} of Y take a single value: their "
                    "coefficients are not identified (the estimates drift "
                    "towards infinity, damped by the step control).",
                    UserWarning,
                    stacklevel=3,
                )
        return Y, one_d

    # ---------------------------------------------------------------- fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y):
        """Solve the estimating equations for the factors, weights and coefficients.

        Parameters
        ----------
        X : array-like of shape (n_dyads, n_features)
            One row per dyad: the two node-index columns named by
            ``dyad_columns`` and the dyad covariates.
        Y : array-like of shape (n_dyads, n_layers) or (n_dyads,)
            Edge values per layer; NaN marks an unobserved entry.

        Returns
        -------
        self : TGINEE
            Fitted estimator.
        """
        torch = import_torch()
        X = validate_data(self, X, dtype=np.float64)
        cols, rest = self._split_columns(X)
        Y, self._one_d = self._check_y(Y, X.shape[0], reset=True)
        n, L = Y.shape
        self.n_layers_ = L
        Z = X[:, rest]
        p = Z.shape[1]
        if cols is not None:
            ids = self._node_ids(X, cols)
            self.nodes_, pairs = np.unique(ids, return_inverse=True)
            pairs = pairs.reshape(ids.shape)
            R = self.n_components
        else:
            self.nodes_ = np.empty(0, dtype=np.int64)
            pairs = None
            R = 0
        n_nodes = len(self.nodes_)

        device = resolve_device(self.device)
        dtype = torch.float64 if device.type == "cpu" else torch.float32
        inv_link, d_inv_link, variance = _links(torch)[self.link]
        mask_np = ~np.isnan(Y)
        t = {
            "Y": to_tensor(np.where(mask_np, Y, 0.0), dtype=dtype, device=device),
            "M": to_tensor(mask_np, dtype=dtype, device=device),
            "Z": to_tensor(Z, dtype=dtype, device=device),
        }
        if pairs is not None:
            t["i"] = torch.as_tensor(pairs[:, 0], device=device)
            t["j"] = torch.as_tensor(pairs[:, 1], device=device)

        # Initial values: intercepts at the link of the layer means, factors
        # from the layer-averaged adjacency.
        means = np.nanmean(Y, axis=0)
        b0 = self._link_of(means) if self.fit_intercept else np.zeros(L)
        U0 = W0 = None
        if R:
            U0, W0 = self._spectral_init(pairs, Y, mask_np, means, n_nodes, R)
        params = {
            # Transposed (beta^T, W^T), so that eta = Z beta^T + ... reads well.
            "beta": torch.zeros(p, L, dtype=dtype, device=device, requires_grad=True),
            "b": to_tensor(b0, dtype=dtype, device=device).requires_grad_(
                self.fit_intercept
            ),
        }
        if R:
            params["U"] = to_tensor(U0, dtype=dtype, device=device).requires_grad_()
            params["W"] = to_tensor(W0.T, dtype=dtype, device=device).requires_grad_()
        trainable = [v for v in params.values() if v.requires_grad]

        def linear_predictor():
            eta = t["Z"] @ params["beta"] + params["b"]
            if R:
                Ui, Uj = params["U"][t["i"]], params["U"][t["j"]]
                eta = eta + (Ui * Uj) @ params["W"]
            return eta

        def penalty():
            if not R:
                return 0.0
            return (
                0.5 * self.alpha * ((params["U"] ** 2).sum() + (params["W"] ** 2).sum())
            )

        def minimise(criterion, max_iter):
            optimizer = torch.optim.LBFGS(
                trainable,
                max_iter=max_iter,
                line_search_fn="strong_wolfe",
                tolerance_grad=1e-9,
                tolerance_change=1e-12,
            )

            def closure():
                optimizer.zero_grad()
                loss = criterion()
                loss.backward()
                return loss

            optimizer.step(closure)

        # Stage 1: the independence equations are the quasi-score of the
        # link's exponential family (canonical links), so they are solved by
        # minimising its negative log-likelihood; a stable start for stage 2.
        def neg_log_likelihood():
            eta = linear_predictor()
            if self.link == "logit":
                nll = torch.nn.functional.softplus(eta) - t["Y"] * eta
            elif self.link == "log":
                nll = torch.exp(eta) - t["Y"] * eta
            else:
                nll = 0.5 * (t["Y"] - eta) ** 2
            return (nll * t["M"]).sum() + penalty()

        minimise(neg_log_likelihood, _INIT_ITER)
        self.n_iter_ = 1

        # Stage 2: rounds. Each round re-estimates R from the Pearson
        # residuals, takes Fisher-scoring steps of the GEE for (beta, b) with
        # the factor term as an offset (the exact GEE update for these
        # parameters), then updates the factors given (beta, b).
        groups = self._pattern_groups(mask_np)
        corr = torch.eye(L, dtype=dtype, device=device)
        eta_prev = None
        converged = False
        independent = self.working_covariance == "independence" or L == 1
        Zt = np.hstack([Z, np.ones((n, 1))]) if self.fit_intercept else Z
        Y_np, M_np = np.where(mask_np, Y, 0.0), mask_np.astype(np.float64)

        def coefficient_step(corr_np):
            with torch.no_grad():
                eta = to_numpy(linear_predictor())
            gamma = np.hstack(
                [to_numpy(params["beta"]).T]
                + ([to_numpy(params["b"])[:, None]] if self.fit_intercept else [])
            )
            for _ in range(_SCORING_STEPS):
                mu, dmu, var = self._moments(eta)
                inv_sd = M_np / np.sqrt(np.maximum(var, 1e-10))
                H, S = self._gee_blocks(
                    dmu, inv_sd, (Y_np - mu) * M_np, groups, Zt, corr_np
                )
                # A tiny ridge keeps H invertible when a layer is separated
                # (e.g. all zeros); steps are damped to at most 5 on the
                # link scale, so that such a layer cannot drag the others.
                ridge = 1e-8 * max(np.trace(H) / len(H), 1e-12)
                step = np.linalg.solve(H + ridge * np.eye(len(H)), S.sum(0))
                step = step * min(1.0, _MAX_STEP / max(np.abs(step).max(), 1e-300))
                step = step.reshape(L, -1)
                gamma = gamma + step
                eta = eta + Zt @ step.T
                if np.abs(step).max() < 1e-8:
                    break
            with torch.no_grad():
                params["beta"].copy_(torch.as_tensor(gamma[:, :p].T))
                if self.fit_intercept:
                    params["b"].copy_(torch.as_tensor(gamma[:, p]))

        coef_params = [params["beta"]] + ([params["b"]] if self.fit_intercept else [])
        factor_params = [params["U"], params["W"]] if R else []
        for round_ in range(0 if independent else self.max_iter):
            with torch.no_grad():
                eta = linear_predictor()
                mu = inv_link(eta)
                var = variance(mu).clamp_min(1e-10) * t["M"]
                inv_sd = t["M"] / var.clamp_min(1e-10).sqrt()
                corr = self._update_correlation(
                    (t["Y"] - mu) * inv_sd, t["M"], corr, torch
                )
            if Zt.shape[1]:
                coefficient_step(to_numpy(corr))
            if factor_params:
                for v in coef_params:
                    v.requires_grad_(False)
                trainable[:] = factor_params
                minimise(neg_log_likelihood, _INNER_ITER)
                for v in coef_params:
                    v.requires_grad_(True)
                trainable[:] = [v for v in params.values() if v.requires_grad]
            self.n_iter_ = round_ + 2
            with torch.no_grad():
                eta = linear_predictor()
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
            if self.verbose:
                print(f"TGINEE round {round_ + 1}: change {change:.3g}")
            if change < self.tol:
                converged = True
                break
        if independent:
            converged = True
        if not converged:
            warnings.warn(
                f"TGINEE: stopped at max_iter={self.max_iter} rounds before the "
                f"linear predictor settled (tol={self.tol}). Increase max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )

        with torch.no_grad():
            eta = linear_predictor()
            mu = inv_link(eta)
            var = variance(mu).clamp_min(1e-10) * t["M"]
            inv_sd = t["M"] / var.clamp_min(1e-10).sqrt()
            pearson = (t["Y"] - mu) * inv_sd
            self.scale_ = float((pearson**2).sum() / t["M"].sum())
            self.working_correlation_ = to_numpy(corr)
            self._sandwich(
                to_numpy(d_inv_link(eta)),
                to_numpy(inv_sd),
                to_numpy(t["Y"] - mu),
                groups,
                Z,
                self.working_correlation_,
            )
        self.coef_ = to_numpy(params["beta"]).T.copy()
        self.intercept_ = to_numpy(params["b"])
        for attr in ("node_factors_", "layer_weights_"):
            if hasattr(self, attr):
                delattr(self, attr)
        if R:
            self.node_factors_ = to_numpy(params["U"])
            self.layer_weights_ = to_numpy(params["W"]).T.copy()
        self.device_ = str(device)
        return self

    def _link_of(self, means):
        eps = 1e-4
        if self.link == "logit":
            m = np.clip(means, eps, 1 - eps)
            return np.log(m / (1 - m))
        if self.link == "log":
            return np.log(np.maximum(means, eps))
        return means.copy()

    def _spectral_init(self, pairs, Y, mask, means, n_nodes, R):
        """Factors from the top eigenpairs of the layer-averaged, centred adjacency."""
        import scipy.sparse as sp

        dev = np.where(mask, Y - means, 0.0).sum(1) / np.maximum(mask.sum(1), 1)
        rows = np.r_[pairs[:, 0], pairs[:, 1]]
        cols = np.r_[pairs[:, 1], pairs[:, 0]]
        shape = (n_nodes, n_nodes)
        total = sp.csr_matrix((np.r_[dev, dev], (rows, cols)), shape=shape)
        count = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
        # Mean deviation per node pair (duplicates summed by csr_matrix).
        S = total.copy()
        S.data = total.data / count.data
        scale = 1.0
        if self.link == "logit":  # a rough link scale for binary edges
            p = np.clip(means.mean(), 0.05, 0.95)
            scale = 1.0 / (p * (1 - p))
        elif self.link == "log":
            scale = 1.0 / max(means.mean(), 1e-3)
        S = S * scale
        if n_nodes > 500 and R < n_nodes - 1:
            from scipy.sparse.linalg import eigsh

            v0 = check_random_state(self.random_state).uniform(-1, 1, n_nodes)
            vals, vecs = eigsh(S, k=R, which="LM", v0=v0)
        else:
            vals, vecs = np.linalg.eigh(S.toarray())
        order = np.argsort(-np.abs(vals))[:R]
        vals, vecs = vals[order], vecs[:, order]
        if len(vals) < R:  # fewer nodes than components
            vals = np.concatenate([vals, np.full(R - len(vals), 1e-3)])
            vecs = np.hstack([vecs, np.zeros((n_nodes, R - vecs.shape[1]))])
        U = vecs * np.sqrt(np.abs(vals) + 1e-6)
        rng = check_random_state(self.random_state)
        W = np.sign(vals + 1e-12) * (1 + 0.1 * rng.standard_normal((Y.shape[1], R)))
        return U, W

    def _update_correlation(self, e, M, corr, torch):
        """Moment estimate of the working correlation from Pearson residuals."""
        L = M.shape[1]
        if self.working_covariance == "independence" or L == 1:
            return torch.eye(L, dtype=e.dtype, device=e.device)
        phi = (e**2).sum() / M.sum()
        cross = e.T @ e  # sum over dyads of e_l e_k (zeros where unobserved)
        counts = M.T @ M
        C = cross / counts.clamp_min(1) / phi
        if self.working_covariance == "exchangeable":
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

    @staticmethod
    def _pattern_groups(mask):
        """Dyads grouped by their pattern of observed layers: (pattern, rows)."""
        if mask.all():
            return [(np.ones(mask.shape[1], dtype=bool), None)]
        patterns, inverse = np.unique(mask, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        return [(pat, np.flatnonzero(inverse == g)) for g, pat in enumerate(patterns)]

    def _moments(self, eta):
        """Mean, d mean / d eta and variance function, in NumPy."""
        if self.link == "logit":
            mu = 1.0 / (1.0 + np.exp(-np.clip(eta, -35, 35)))
            return mu, mu * (1 - mu), mu * (1 - mu)
        if self.link == "log":
            mu = np.exp(np.clip(eta, -35, 35))
            return mu, mu, mu
        return eta, np.ones_like(eta), np.ones_like(eta)

    @staticmethod
    def _gee_blocks(dmu, inv_sd, resid, groups, Zt, corr):
        """GEE matrices for the per-layer coefficients (beta_l, b_l).

        Returns ``H = sum_d D_d^T V_d^{-1} D_d`` and the per-dyad estimating
        function rows ``S_d = D_d^T V_d^{-1} r_d`` (their sum is the
        estimating function), with ``V_d^{-1} = A^{-1/2} R_O^{-1} A^{-1/2}``
        and ``D_d[l, (l, a)] = dmu_l z_a``.
        """
        n, L = dmu.shape
        q = Zt.shape[1]
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
            H += (F.T @ F) * np.kron(P, ones)
            S[sel] = (
                (a[sel] * (e[sel] @ P))[:, :, None] * Zt[sel][:, None, :]
            ).reshape(-1, L * q)
        return H, S

    def _sandwich(self, dmu, inv_sd, resid, groups, Z, corr):
        """Robust covariance of (beta, b), with the factors at their estimates."""
        n, L = dmu.shape
        Zt = np.hstack([Z, np.ones((n, 1))]) if self.fit_intercept else Z
        if Zt.shape[1] == 0:  # nothing to infer
            self.covariance_ = np.zeros((0, 0))
            self.bse_ = np.zeros((L, 0))
            self.intercept_bse_ = np.zeros(L)
            return
        H, S = self._gee_blocks(dmu, inv_sd, resid, groups, Zt, corr)
        Hinv = np.linalg.pinv(H)
        cov = Hinv @ (S.T @ S) @ Hinv
        se = np.sqrt(np.maximum(np.diag(cov), 0)).reshape(L, Zt.shape[1])
        self.covariance_ = cov
        p = Z.shape[1]
        self.bse_ = se[:, :p]
        self.intercept_bse_ = se[:, p] if self.fit_intercept else np.zeros(L)

    # ------------------------------------------------------------ predict

    def _eta(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        cols, rest = self._split_columns(X)
        eta = X[:, rest] @ self.coef_.T + self.intercept_
        if cols is not None:
            ids = self._node_ids(X, cols)
            pos = self._positions(ids)
            U = self.node_factors_
            eta = eta + (U[pos[:, 0]] * U[pos[:, 1]]) @ self.layer_weights_.T
        return eta

    def _positions(self, ids):
        """Rows of ``node_factors_`` for node ids; a ValueError names an unseen one."""
        pos = np.minimum(np.searchsorted(self.nodes_, ids), len(self.nodes_) - 1)
        unseen = self.nodes_[pos] != ids
        if unseen.any():
            raise ValueError(
                f"Node {int(ids[unseen][0])} was not seen during fit; T-GINEE "
                "has no factors for it."
            )
        return pos

    def predict(self, X):
        """Mean edge value of every layer for each dyad.

        Parameters
        ----------
        X : array-like of shape (n_dyads, n_features)
            Dyads as in ``fit``.

        Returns
        -------
        mu : ndarray of shape (n_dyads, n_layers) or (n_dyads,)
            ``g^{-1}(eta)``: edge probabilities for "logit", expected counts
            for "log"; 1-D when ``fit`` got a 1-D ``Y``.
        """
        eta = self._eta(X)
        if self.link == "logit":
            mu = 1.0 / (1.0 + np.exp(-eta))
        elif self.link == "log":
            mu = np.exp(eta)
        else:
            mu = eta
        return mu[:, 0] if self._one_d else mu

    def score(self, X, y, sample_weight=None):
        """Mean over layers of R^2 on the observed entries.

        Parameters
        ----------
        X : array-like of shape (n_dyads, n_features)
            Dyads as in ``fit``.
        y : array-like of shape (n_dyads, n_layers) or (n_dyads,)
            Edge values; NaN marks unobserved entries, which are skipped.
        sample_weight : array-like of shape (n_dyads,), default=None
            Weights of the dyads.

        Returns
        -------
        score : float
            Mean of the layers' R^2.
        """
        from sklearn.metrics import r2_score

        check_is_fitted(self)
        mu = self.predict(X)
        Y, _ = self._check_y(y, mu.shape[0], reset=False, allow_empty_layers=True)
        mu = mu.reshape(Y.shape)
        w = None if sample_weight is None else np.asarray(sample_weight)
        scores = []
        for layer in range(Y.shape[1]):
            seen = ~np.isnan(Y[:, layer])
            if seen.sum() < 2:
                continue
            scores.append(
                r2_score(
                    Y[seen, layer],
                    mu[seen, layer],
                    sample_weight=None if w is None else w[seen],
                )
            )
        return float(np.mean(scores))

    def conf_int(self, alpha=0.05):
        """Wald confidence intervals of ``coef_`` from the sandwich errors.

        Parameters
        ----------
        alpha : float, default=0.05
            Level: the intervals cover with probability ``1 - alpha``.

        Returns
        -------
        intervals : ndarray of shape (n_layers, n_covariates, 2)
            Lower and upper bounds.
        """
        check_is_fitted(self)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
        z = stats.norm.ppf(1 - alpha / 2)
        return np.stack([self.coef_ - z * self.bse_, self.coef_ + z * self.bse_], -1)

    @available_if(_has_factors)
    def transform(self, X):
        """Node factors of the given nodes.

        Parameters
        ----------
        X : array-like of shape (n_nodes_query,) or (n_nodes_query, 1)
            Node indices seen in ``fit``.

        Returns
        -------
        U : ndarray of shape (n_nodes_query, n_components)
            Rows of ``node_factors_``.
        """
        check_is_fitted(self)
        ids = np.asarray(X)
        if ids.ndim == 2 and ids.shape[1] == 1:
            ids = ids[:, 0]
        if ids.ndim != 1:
            raise ValueError(
                "transform takes a 1-D array of node indices (or one column); "
                f"got shape {ids.shape}."
            )
        ids = self._node_ids(ids.astype(np.float64)[:, None], (0,)).ravel()
        pos = self._positions(ids)
        return self.node_factors_[pos]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    # --------------------------------------------------- harness contract

    @classmethod
    def _get_test_params(cls):
        return {"link": "identity", "device": "cpu", "max_iter": 10}

    def _make_test_data(self, n_samples, random_state):
        """Regression data, or about ``n_samples`` dyads of a generated network."""
        if self.dyad_columns is None:
            from sklearn.datasets import make_regression

            return make_regression(n_samples, 4, noise=0.1, random_state=random_state)
        from sklearn_ext.datasets import make_multilayer_network
        from sklearn_ext.network import tensor_to_dyads

        n_nodes = max(10, int(math.sqrt(2 * n_samples)) + 1)
        A, C, _ = make_multilayer_network(
            n_nodes, 3, self.n_components, link=self.link, random_state=random_state
        )
        return tensor_to_dyads(A, C)

    @classmethod
    def _gpu_check_params(cls):
        # The factor model on about 200k dyads (633 nodes, 3 layers).
        params = {"dyad_columns": (0, 1), "n_components": 2, "max_iter": 5}
        return params, 200_000

    @classmethod
    def _demo(cls):
        """Link prediction on a 4-layer network with correlated layers."""
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import train_test_split

        from sklearn_ext.datasets import make_multilayer_network
        from sklearn_ext.network import tensor_to_dyads

        A, C, _ = make_multilayer_network(
            200, 4, 2, layer_correlation=0.6, random_state=0
        )
        X, Y = tensor_to_dyads(A, C)
        X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, random_state=0)

        def auc(model, cols):
            P = model.fit(X_tr[:, cols], Y_tr).predict(X_te[:, cols])
            return float(
                np.mean([roc_auc_score(Y_te[:, k], P[:, k]) for k in range(4)])
            )

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours = auc(cls(2, dyad_columns=(0, 1), random_state=0), slice(None))
            plain = auc(cls(dyad_columns=None), slice(2, None))
        return {
            "data": "make_multilayer_network(200 nodes, 4 layers, rho=0.6)",
            "metric": "held-out link AUC",
            "score": ours,
            "baseline": "GEE on the dyad covariates alone",
            "baseline_score": plain,
        }
