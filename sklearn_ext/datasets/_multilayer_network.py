"""Multilayer networks from a latent-factor GLM with a Gaussian copula across layers."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, logsumexp, ndtr
from scipy.stats import poisson
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, StrOptions, validate_params

__all__ = ["make_multilayer_network"]

# Standard deviation of a node's factors around its community centre, before the
# common rescaling of U.
_FACTOR_NOISE = 0.3
# Standard deviation of the factor term, pooled over dyads and layers.
_FACTOR_TERM_STD = 1.25
# Candidate sets of community centres; the best-separated one is kept.
_N_CENTRE_CANDIDATES = 100
_LOGIT_DENSITY = 0.2
_LOG_MEAN_COUNT = 2.0
# Above this mean the Poisson quantile comes from scipy, below it from a
# vectorised search over the cumulative probabilities.
_POISSON_SEARCH_MAX_MEAN = 50.0


def _community_centres(n_communities, n_components, separation, rng):
    """Best-separated of several draws of centres, root-mean-square norm separation."""
    candidates = rng.normal(size=(_N_CENTRE_CANDIDATES, n_communities, n_components))
    rms = np.sqrt((candidates**2).sum(axis=2).mean(axis=1))
    candidates /= rms[:, None, None]
    if n_communities == 1:
        return separation * candidates[0]
    diff = candidates[:, :, None, :] - candidates[:, None, :, :]
    dist = np.sqrt((diff**2).sum(axis=3))
    diagonal = np.arange(n_communities)
    dist[:, diagonal, diagonal] = np.inf
    best = np.argmax(dist.min(axis=(1, 2)))
    return separation * candidates[best]


def _logit_intercepts(offset, density):
    """``b`` with ``mean(expit(offset[:, l] + b[l])) == density`` for every ``l``.

    Newton's method on ``h(b) = logit(mean(expit(offset + b))) - logit(density)``,
    increasing with slope in (0, 1], kept inside a bracket that it narrows.
    """
    target = np.log(density / (1.0 - density))
    lower = target - offset.max(axis=0)
    upper = target - offset.min(axis=0)
    b = target - offset.mean(axis=0)
    for _ in range(100):
        p = expit(offset + b)
        m = p.mean(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.log(m) - np.log1p(-m) - target
            slope = (p * (1.0 - p)).mean(axis=0) / (m * (1.0 - m))
        lower = np.where(h < 0, b, lower)
        upper = np.where(h > 0, b, upper)
        step = b - h / slope
        outside = ~((step > lower) & (step < upper)) | ~np.isfinite(step)
        new = np.where(outside, 0.5 * (lower + upper), step)
        if np.all(np.abs(new - b) <= 1e-12 * (1.0 + np.abs(b))):
            return new
        b = new
    return b


def _poisson_quantile(u, mu):
    """``F^{-1}(u)`` of Poisson(``mu``), elementwise, for 1-D arrays."""
    u = np.clip(u, np.finfo(np.float64).tiny, 1.0 - 1e-12)
    y = np.zeros(u.shape)
    large = mu > _POISSON_SEARCH_MAX_MEAN
    if large.any():
        y[large] = poisson.ppf(u[large], mu[large])
    # Smallest k with P(Y <= k) >= u, adding the probabilities one k at a time
    # for the dyads not yet placed.
    idx = np.flatnonzero(~large)
    m = mu[idx]
    pmf = np.exp(-m)
    cdf = pmf.copy()
    k = 0
    while idx.size:
        done = cdf >= u[idx]
        y[idx[done]] = k
        keep = ~done
        idx, m, pmf, cdf = idx[keep], m[keep], pmf[keep], cdf[keep]
        if k >= 1000:
            y[idx] = poisson.ppf(u[idx], m)
            break
        k += 1
        pmf = pmf * m / k
        cdf = cdf + pmf
    return y


@validate_params(
    {
        "n_nodes": [Interval(Integral, 2, None, closed="left")],
        "n_layers": [Interval(Integral, 1, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "link": [StrOptions({"logit", "log", "identity"})],
        "layer_correlation": [Interval(Real, -1, 1, closed="neither")],
        "n_covariates": [Interval(Integral, 0, None, closed="left")],
        "n_communities": [Interval(Integral, 1, None, closed="left")],
        "directed": ["boolean"],
        "asymmetric": ["boolean"],
        "community_separation": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multilayer_network(
    n_nodes=100,
    n_layers=4,
    n_components=2,
    *,
    link="logit",
    layer_correlation=0.0,
    n_covariates=2,
    n_communities=3,
    directed=False,
    asymmetric=False,
    community_separation=2.0,
    random_state=None,
):
    """Generate a multilayer network with latent node factors and correlated layers.

    The same ``n`` nodes are linked in ``L`` layers (relationship types). With
    ``R = n_components``, ``K = n_communities`` and ``p = n_covariates``, the
    model is, in the order of the random draws:

    - communities ``z_i`` uniform over ``0 .. K - 1``;
    - community centres ``m_1 .. m_K`` in ``R^R``: of 100 independent draws of
      ``K`` points from ``N(0, I_R)``, each rescaled to a root-mean-square norm
      of ``community_separation``, the draw whose smallest distance between two
      centres is largest;
    - node factors ``u_i = c (m_{z_i} + 0.3 e_i)``, ``e_i ~ N(0, I_R)``: within a
      community, the factors spread with standard deviation 0.3 around the
      centre (before the rescaling by ``c``, which changes nothing to how
      distinct the communities are);
    - with ``asymmetric=True`` (directed networks only), receiver factors
      ``v_i = c (m_{z_i + 1 mod K} + 0.3 e'_i)``, ``e'_i ~ N(0, I_R)``, and the
      factor term below is ``sum_r u_ir v_jr W[l, r]``: a node of community
      ``k + 1`` links most to the nodes of community ``k`` (a cycle of
      directed flows between communities), which no symmetric factor term
      ``sum_r u_ir u_jr W[l, r]`` can express; otherwise ``v_i = u_i``;
    - layer weights ``W[l, r] ~ Uniform(0.5, 1.5)``, positive, so that every
      layer is assortative: nodes of the same community link more;
    - the scalar ``c > 0`` that makes the standard deviation of the factor term
      ``f_lij = sum_r u_ir v_jr W[l, r]``, pooled over the layers and the dyads,
      equal to 1.25;
    - coefficients ``beta[l, k] ~ N(0, 0.5 ** 2)``;
    - dyad covariates ``x_ij ~ N(0, I_p)``, independent over dyads, with
      ``x_ji = x_ij`` for an undirected network;
    - linear predictor ``eta_lij = f_lij + x_ij . beta_l + b_l`` and mean
      ``mu_lij = g^{-1}(eta_lij)``, where the intercepts ``b_l`` make the mean
      of ``mu_l`` over the dyads 0.2 (the edge density) for ``link="logit"``, 2
      for ``link="log"``, and ``b_l = 0`` for ``link="identity"``;
    - edge values through a Gaussian copula across the layers: for each dyad,
      ``v ~ N(0, Sigma)`` with ``Sigma`` exchangeable (1 on the diagonal,
      ``rho = layer_correlation`` off it) and ``y_l = F_l^{-1}(Phi(v_l))``, with
      ``F_l`` the distribution function of Bernoulli(``mu_l``) (logit),
      Poisson(``mu_l``) (log) or ``N(eta_l, 1)`` (identity, where
      ``y_l = eta_l + v_l``).

    Each edge value thus has exactly the marginal distribution ``F_l``, with
    mean ``mu_l``, and the layers of a dyad are positively (or negatively)
    dependent. The correlation of the layers' Pearson residuals
    ``(y - mu) / sqrt(var)`` within a dyad is ``rho`` for ``link="identity"``
    and smaller in magnitude for the discrete links. In a directed network the
    ordered pairs ``(i, j)`` and ``(j, i)`` are two dyads, with their own
    covariates and copula draws (the factor term is symmetric unless
    ``asymmetric=True``); in an undirected one each pair ``i < j`` is drawn
    once and mirrored.

    Parameters
    ----------
    n_nodes : int, default=100
        Number of nodes ``n``, at least 2.
    n_layers : int, default=4
        Number of layers ``L``.
    n_components : int, default=2
        Dimension ``R`` of the node factors.
    link : {"logit", "log", "identity"}, default="logit"
        Link ``g``: binary edges (Bernoulli), counts (Poisson) or weighted edges
        (Gaussian with unit variance).
    layer_correlation : float, default=0.0
        Off-diagonal entry ``rho`` of the copula's exchangeable correlation
        matrix; ``-1 / (L - 1) < rho < 1``, so that the matrix is positive
        definite (``-1 < rho < 1`` for ``L = 1``, where it plays no role).
    n_covariates : int, default=2
        Number of dyad covariates ``p``; 0 gives none.
    n_communities : int, default=3
        Number of communities ``K``, at most ``n_nodes``.
    directed : bool, default=False
        Whether the network is directed.
    asymmetric : bool, default=False
        Give the nodes receiver factors distinct from their sender factors
        (see above); needs ``directed=True``.
    community_separation : float, default=2.0
        Root-mean-square norm of the community centres, against the
        within-community standard deviation of the factors (``0.3``): the
        larger, the more distinct the communities.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    A : ndarray of shape (n_layers, n_nodes, n_nodes)
        Edge values ``A[l, i, j] = y_lij``, float64, NaN on the diagonal;
        symmetric in its last two axes when ``directed=False``.
    covariates : ndarray of shape (n_nodes, n_nodes, n_covariates)
        Dyad covariates ``x_ij``, float64, 0 on the diagonal; symmetric in its
        first two axes when ``directed=False``.
    truth : :class:`~sklearn.utils.Bunch`
        The model: ``communities`` (ndarray of shape (n_nodes,), int),
        ``node_factors`` (``U``, shape (n_nodes, n_components)),
        ``layer_weights`` (``W``, shape (n_layers, n_components)), ``coef``
        (``beta``, shape (n_layers, n_covariates)), ``receiver_factors``
        (``V``, shape (n_nodes, n_components); ``node_factors`` itself unless
        ``asymmetric=True``), ``intercept`` (``b``, shape
        (n_layers,)), ``linear_predictor`` (``eta``) and ``mean`` (``mu``), both
        of shape (n_layers, n_nodes, n_nodes) with NaN on the diagonal.

    Notes
    -----
    The model is a multiplicative latent-factor model of a network [1]_ with one
    weight vector per layer, as a generalized linear model per layer whose
    responses, the layers of a dyad, are correlated as in generalized estimating
    equations [2]_; the correlation comes from a Gaussian copula [3]_, which
    leaves each marginal distribution as it is.

    References
    ----------
    .. [1] P. D. Hoff, "Multiplicative latent factor models for description and
       prediction of social networks", Computational and Mathematical
       Organization Theory, 15(4), 261-272, 2009.
    .. [2] K.-Y. Liang and S. L. Zeger, "Longitudinal data analysis using
       generalized linear models", Biometrika, 73(1), 13-22, 1986.
    .. [3] P. X.-K. Song, "Multivariate dispersion models generated from
       Gaussian copula", Scandinavian Journal of Statistics, 27(2), 305-320,
       2000.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.datasets import make_multilayer_network
    >>> A, covariates, truth = make_multilayer_network(
    ...     n_nodes=50, n_layers=3, layer_correlation=0.5, random_state=0
    ... )
    >>> A.shape, covariates.shape, truth.node_factors.shape
    ((3, 50, 50), (50, 50, 2), (50, 2))
    >>> bool(np.array_equal(A, A.transpose(0, 2, 1), equal_nan=True))
    True
    >>> sorted(np.unique(A[~np.isnan(A)]).tolist())
    [0.0, 1.0]
    """
    if n_communities > n_nodes:
        raise ValueError(
            f"n_communities={n_communities} exceeds n_nodes={n_nodes}; it must be "
            "at most n_nodes."
        )
    if n_layers > 1 and layer_correlation <= -1.0 / (n_layers - 1):
        raise ValueError(
            f"layer_correlation={layer_correlation} must be greater than "
            f"-1 / (n_layers - 1) = {-1.0 / (n_layers - 1):.6g} for "
            f"n_layers={n_layers}, so that the exchangeable correlation matrix "
            "is positive definite."
        )
    if asymmetric and not directed:
        raise ValueError(
            "asymmetric=True needs directed=True: an undirected network has "
            "one factor per node."
        )
    rng = check_random_state(random_state)

    communities = rng.randint(n_communities, size=n_nodes)
    centres = _community_centres(
        n_communities, n_components, float(community_separation), rng
    )
    U = centres[communities] + _FACTOR_NOISE * rng.normal(size=(n_nodes, n_components))
    if asymmetric:
        V = centres[(communities + 1) % n_communities] + _FACTOR_NOISE * rng.normal(
            size=(n_nodes, n_components)
        )
    else:
        V = U
    W = rng.uniform(0.5, 1.5, size=(n_layers, n_components))
    coef = rng.normal(scale=0.5, size=(n_layers, n_covariates))

    if directed:
        rows, cols = np.nonzero(~np.eye(n_nodes, dtype=bool))
    else:
        rows, cols = np.triu_indices(n_nodes, k=1)
    n_dyads = rows.size
    x = rng.normal(size=(n_dyads, n_covariates))

    factor_term = (U[rows] * V[cols]) @ W.T  # (n_dyads, n_layers)
    spread = factor_term.std()
    if spread > 0:
        scale = _FACTOR_TERM_STD / spread
        factor_term *= scale
        U *= np.sqrt(scale)
        if asymmetric:
            V *= np.sqrt(scale)
    offset = factor_term + x @ coef.T
    if link == "logit":
        intercept = _logit_intercepts(offset, _LOGIT_DENSITY)
    elif link == "log":
        intercept = (
            np.log(_LOG_MEAN_COUNT) + np.log(n_dyads) - logsumexp(offset, axis=0)
        )
    else:
        intercept = np.zeros(n_layers)
    eta = offset + intercept
    if link == "logit":
        mu = expit(eta)
    elif link == "log":
        mu = np.exp(eta)
    else:
        mu = eta

    sigma = np.full((n_layers, n_layers), float(layer_correlation))
    np.fill_diagonal(sigma, 1.0)
    v = rng.normal(size=(n_dyads, n_layers)) @ np.linalg.cholesky(sigma).T
    if link == "logit":
        # F^{-1}(Phi(v)) = 1[Phi(v) > 1 - mu] = 1[Phi(-v) < mu].
        y = (ndtr(-v) < mu).astype(np.float64)
    elif link == "log":
        y = _poisson_quantile(ndtr(v).ravel(), mu.ravel()).reshape(mu.shape)
    else:
        y = eta + v

    def to_tensor(values, shape):
        out = np.full(shape, np.nan)
        out[..., rows, cols] = values.T
        if not directed:
            out[..., cols, rows] = values.T
        return out

    cube = (n_layers, n_nodes, n_nodes)
    covariates = np.zeros((n_covariates, n_nodes, n_nodes))
    covariates[:, rows, cols] = x.T
    if not directed:
        covariates[:, cols, rows] = x.T
    truth = Bunch(
        communities=communities,
        node_factors=U,
        receiver_factors=V if asymmetric else U.copy(),
        layer_weights=W,
        coef=coef,
        intercept=intercept,
        linear_predictor=to_tensor(eta, cube),
        mean=to_tensor(mu, cube),
    )
    covariates = np.ascontiguousarray(covariates.transpose(1, 2, 0))
    return to_tensor(y, cube), covariates, truth
