"""T-GINEE: estimating equations with CP node factors for multilayer networks."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array
from sklearn.utils.metaestimators import available_if

from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.network._dyads import tensor_to_dyads
from sklearn_ext.network._nodes import check_node_ids, encode_nodes, node_positions
from sklearn_ext.network._tginee_selection import (
    observed_r2_score,
    observed_roc_auc_score,
)
from sklearn_ext.network._tginee_solver import moments, solve_tginee
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._messages import warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import import_torch
from sklearn_ext.utils._validation import check_sample_weight, column_index

__all__ = ["TGINEE"]


def _has_factors(estimator):
    if hasattr(estimator, "dyad_columns_"):  # fitted: whether it fitted factors
        return estimator.dyad_columns_ is not None
    # Unfitted: only explicit columns promise factors ("auto" decides in fit).
    return estimator.dyad_columns is not None and estimator.dyad_columns != "auto"


_BINARY_LINKS = ("logit", "probit", "cloglog")


def _binary_link(estimator):
    return estimator.link in _BINARY_LINKS


def _id_like_columns(Z, max_columns=10):
    """Two columns of ``Z`` that look like a dyad's node ids, or None.

    Both hold non-negative integers with at least three distinct values, and
    every row is a distinct pair: the layout of
    :func:`~sklearn_ext.network.tensor_to_dyads`.
    """
    n_rows = len(Z)
    if n_rows < 3:
        return None
    head = Z[:, :max_columns]
    integer = [
        c
        for c in range(head.shape[1])
        if (head[:, c] >= 0).all()
        and (head[:, c] == np.round(head[:, c])).all()
        and np.unique(head[:, c]).size >= 3
    ]
    for a_pos, a in enumerate(integer):
        for b in integer[a_pos + 1 :]:
            if np.unique(head[:, [a, b]], axis=0).shape[0] == n_rows:
                return a, b
    return None


def _dyad_layout(X):
    """Whether columns 0 and 1 of ``X`` hold node ids as tensor_to_dyads writes them.

    Both columns numeric, non-negative integers, at least three distinct ids,
    no row pairs a node with itself, and every row a distinct pair: the
    layout of :func:`~sklearn_ext.network.tensor_to_dyads` (whose first two
    columns are ``i`` and ``j``).
    """
    if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 3:
        return False
    head = X[:, :2]
    if head.dtype.kind not in "iuf":
        try:
            head = head.astype(np.float64)
        except (TypeError, ValueError):
            return False
    if not np.isfinite(head).all() or (head < 0).any():
        return False
    if (head != np.round(head)).any() or (head[:, 0] == head[:, 1]).any():
        return False
    if np.unique(head).size < 3:
        return False
    return np.unique(head, axis=0).shape[0] == len(head)


@fill_doc
class TGINEE(MultiOutputMixin, RegressorMixin, TorchDeviceMixin, BaseEstimator):
    """Tensor generalized estimating equations for multilayer networks (T-GINEE).

    A multilayer network has the same nodes in ``L`` layers (relationship
    types). T-GINEE [1]_ models the layers' edges jointly:

    - a CP decomposition with shared node factors ``U`` (n_nodes, R) and layer
      weights ``W`` (L, R) captures the structure common to the layers (with
      ``directed=True``, each node has a sender factor ``u_i`` and a receiver
      factor ``v_i``);
    - a link function ``g`` fits binary ("logit", "probit", "cloglog"), count
      ("log") or weighted
      ("identity") edges;
    - generalized estimating equations (GEE) [2]_ with a working covariance
      across layers model the correlation of a dyad's edges in the different
      layers.

    **Data layout.** A dyad is a sample (the GEE "subject"); its edge values in
    the ``L`` layers are its correlated responses. Each row of ``X`` is a dyad:
    ``dyad_columns=(i, j)`` names the two columns holding its node ids (they
    travel inside ``X``, so cross-validation, scorers and pipelines work
    unchanged), and the other columns are dyad covariates. ``y`` (n_dyads, L)
    holds the responses, NaN marking an unobserved entry: T-GINEE is a
    multi-output regressor. :func:`~sklearn_ext.network.tensor_to_dyads` turns
    an (L, n, n) adjacency tensor into this form. Splitting dyads between
    train and test is link prediction. With ``dyad_columns=None`` there are no
    factors and the estimator is a multivariate GEE regression.

    **Node ids** are non-negative integers or strings. Strings need an ``X``
    of dtype object, typically a DataFrame whose node columns hold strings:
    ``X`` is then validated column-wise, the covariate columns as float64 and
    the two id columns as ids; ``fit`` encodes the ids it sees (``nodes_``
    keeps them, sorted) and a node not seen in ``fit`` is a ValueError naming
    it at prediction time.

    **Model.** For dyad ``(i, j)`` with covariates ``x_ij`` and layer ``l``,

    ``E[y_ijl] = mu_ijl = g^{-1}(sum_r u_ir u_jr w_lr + x_ij . beta_l + b_l)``,

    or, with ``directed=True``, the asymmetric CP term ``sum_r u_ir v_jr w_lr``
    (``u`` the sender's factors, ``v`` the receiver's), so that the factor
    term of ``(i, j)`` may differ from that of ``(j, i)``;
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
    ``D_ij = d mu_ij / d (beta, b)`` and the factor term as an offset; and
    Gauss-Newton (Fisher-scoring) steps solve the same GEE for the factors,
    ``sum_ij X_ij^T A_ij^{1/2} R_O^{-1} e_ij - alpha (U, W) = 0`` (``X_ij``
    the derivative of the linear predictor in ``(U, W)``, ``e_ij`` the
    Pearson residuals), by conjugate gradients on Jacobian-vector products,
    each step halved until the equations' norm decreases. The working
    covariance thus enters the equations of every parameter: a dyad whose
    layers are correlated counts less than independent evidence, in the
    coefficients and in the factors. (Two simpler schemes were tried and
    dropped: minimising the working quadratic form diverges on binary edges,
    and the likelihood with a frozen GEE correction diverged with an
    unstructured correlation.)

    **Inference.** ``bse_`` holds the robust (sandwich) standard errors of
    ``coef_``, ``H^{-1} M H^{-1}`` with ``H = sum D^T V^{-1} D`` and
    ``M = sum D^T V^{-1} r r^T V^{-1} D`` over the dyads, each dyad an
    independent cluster. With node factors, the derivatives are taken over
    all the parameters ``(beta, b, U, W)`` (the ridge included in ``H``) and
    the ``(beta, b)`` block is kept, so that the intervals account for the
    estimated factors; it is computed without forming ``H``, by conjugate
    gradients on Jacobian-vector products, one solve per coefficient. (At
    fixed factors the intervals covered 0.93 at 100 nodes and about 0.83 at
    50; with the factors' uncertainty, 0.944 and 0.883.) GEE stay consistent
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
    dyad_columns : "auto", tuple of two int or str, or None, default="auto"
        Columns of ``X`` holding the dyad's node ids: positions, or column
        names when ``X`` is a DataFrame. None fits a GEE regression on all
        columns without node factors. "auto" takes columns ``(0, 1)`` when
        they look like the output of
        :func:`~sklearn_ext.network.tensor_to_dyads` (non-negative integers,
        at least three distinct ids, no row pairing a node with itself, every
        row a distinct pair), so that ``TGINEE().fit(*tensor_to_dyads(A))``
        fits the network model, and no factors otherwise; ``dyad_columns_``
        records the choice. String ids need explicit columns. With
        ``directed=True`` the first column is the sender and the second the
        receiver.
    directed : bool, default=False
        Fit sender and receiver factors (an asymmetric CP decomposition), for
        directed layers in which ``(i, j)`` and ``(j, i)`` are different
        dyads. False fits one factor per node, the same factor term for
        ``(i, j)`` and ``(j, i)``; on a symmetric network the two fits agree
        closely, and the undirected one has half the factor parameters.
    link : {"logit", "probit", "cloglog", "log", "identity"}, default="logit"
        Link function: binary ("logit", "probit", or the complementary
        log-log "cloglog", asymmetric, for rare edges), count or real-valued
        edges.
    working_covariance : {"independence", "exchangeable", "unstructured"}, \
            default="exchangeable"
        Working correlation across layers.
    alpha : float, default=1.0
        Ridge penalty on the node factors and layer weights.
    fit_intercept : bool, default=True
        Fit one intercept per layer.
    max_iter : int, default=30
        Most rounds of the estimating equations (working covariance update
        plus the weighted solve). Reaching it before the linear predictor
        settles raises a :class:`~sklearn.exceptions.ConvergenceWarning`.
    tol : float, default=1e-5
        The rounds stop when the largest change of the linear predictor is
        below ``tol`` times its scale.
    %(device)s
        Computations run in float64 on the CPU and in float32 on a GPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the small perturbation of the initial layer weights (and the
        start vector of the sparse eigensolver for more than 500 nodes). The
        fit is otherwise deterministic.
    %(verbose)s

    Attributes
    ----------
    node_factors_ : ndarray of shape (n_nodes, n_components)
        ``U`` (the senders' factors when ``directed=True``); row ``k``
        belongs to node ``nodes_[k]``.
    receiver_factors_ : ndarray of shape (n_nodes, n_components)
        ``V``, the receivers' factors when ``directed=True``; a copy of
        ``node_factors_`` otherwise.
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
        Dispersion ``phi`` (weighted mean squared Pearson residual).
    dyad_columns_ : tuple of two int or None
        Positions in ``X`` of the node-id columns used by ``fit`` (resolved
        from ``dyad_columns``), or None when no factors were fitted.
    nodes_ : ndarray of shape (n_nodes,)
        Node ids seen in ``fit`` (of a dyad with positive weight), sorted: int64
        for numeric ids, object (str) for string ids; empty without factors.
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
    With ``directed=False`` the factor term ``sum_r u_ir u_jr w_lr`` is
    symmetric in ``i`` and ``j``, so a directed network gets the same factor
    term for ``(i, j)`` and ``(j, i)`` (its covariates may still differ); pass
    ``directed=True`` when the direction of an edge matters. ``score`` is the mean over
    layers of ROC AUC for binary edges (the binary links) and of R^2
    otherwise, on the observed entries
    (:func:`~sklearn_ext.network.observed_roc_auc_score`,
    :func:`~sklearn_ext.network.observed_r2_score`). With
    ``dyad_columns=None``, two columns of ``X`` that look like node ids
    (non-negative integers, every row a distinct pair) raise a UserWarning:
    they would be fitted as covariates.

    **Incomplete networks and cross-validation.** scikit-learn's string
    scorers (``scoring="roc_auc"``) reject NaN in ``y``; pass
    ``scoring=get_observed_scorer("roc_auc")`` (or "neg_log_loss",
    "accuracy", "r2"), which skips the unobserved entries, as ``score``
    does. Use ``cv=NodeKFold(5)`` so that every training fold holds every
    node. A dyad whose node was not seen in ``fit`` (as with ``KFold`` on
    dyads in node order) is predicted with a zero factor for that node, the
    value the ridge-penalised fit gives a node without data, that is from
    its covariates and intercepts alone, and ``predict`` warns
    (:class:`UserWarning`) naming how many nodes were unseen.

    ``sample_weight`` holds frequency weights: a dyad of weight ``w`` counts as
    ``w`` observations of that dyad in every sum over dyads (the likelihood
    stage, the dispersion and working-correlation moments, the estimating
    equations and both halves of the sandwich, where each copy is an
    independent cluster). Integer weights therefore give exactly the fit on
    the data with each dyad repeated that many times, and a zero weight
    removes the dyad (a node seen only in such dyads is unseen). The ridge
    penalty is not rescaled, so more total weight means more data against
    the same penalty. Weights that stand for one observation's importance
    rather than for repeated observations leave the estimates meaningful, but
    not ``bse_``.

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
    >>> X, y = tensor_to_dyads(A, C)
    >>> model = TGINEE(2, dyad_columns=(0, 1), device="cpu", random_state=0)
    >>> model.fit(X, y).node_factors_.shape, model.coef_.shape
    ((60, 2), (3, 2))
    >>> model.predict(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "dyad_columns": [tuple, list, StrOptions({"auto"}), None],
        "directed": ["boolean"],
        "link": [StrOptions({*_BINARY_LINKS, "log", "identity"})],
        "working_covariance": [
            StrOptions({"independence", "exchangeable", "unstructured"})
        ],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    # No torch module is fitted: the estimates are numpy arrays.
    _module_attributes = ()

    _paper = "T-GINEE: tensor-based multilayer graph representation learning, ICML 2026"
    _bench_name = "tginee"

    def __init__(
        self,
        n_components=2,
        *,
        dyad_columns="auto",
        directed=False,
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
        self.directed = directed
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
        """(node id column positions or None, covariate column positions)."""
        n_cols = X.shape[1]
        if self.dyad_columns == "auto":
            if _dyad_layout(X):
                return (0, 1), np.arange(2, n_cols)
            return None, np.arange(n_cols)
        if self.dyad_columns is None:
            return None, np.arange(n_cols)
        if len(self.dyad_columns) != 2:
            raise ValueError(
                f"dyad_columns must be two columns (i, j); got {self.dyad_columns!r}."
            )
        cols = tuple(
            column_index(self, c, n_cols, param="dyad_columns")
            for c in self.dyad_columns
        )
        if cols[0] == cols[1]:
            raise ValueError(
                "dyad_columns must be two different columns (i, j); "
                f"{self.dyad_columns!r} names column {cols[0]} twice."
            )
        return cols, np.setdiff1d(np.arange(n_cols), cols)

    def _validate_X(self, X, *, reset):
        """Covariates as float64 and the raw node ids (or None).

        ``X`` is validated as a whole with its own dtype (object when it holds
        string ids), then its covariate columns as float64 and its id columns
        as node ids, so that a string in a covariate is still an error.
        """
        X = validate_data(self, X, reset=reset, dtype=None)
        if reset:
            self._columns = self._split_columns(X)
            self.dyad_columns_ = self._columns[0]
        cols, rest = self._columns
        Z = check_array(
            X[:, rest],
            dtype=np.float64,
            ensure_min_features=0,
            input_name="X",
        )
        ids = None if cols is None else check_node_ids(X[:, list(cols)])
        return Z, ids

    def _check_y(self, y, n_samples, reset):
        """``y`` as a float64 (n_dyads, n_layers) array, and whether it was 1-D."""
        if y is None:
            raise ValueError(
                "TGINEE requires y to be passed, but the target y is None; pass "
                "y of shape (n_dyads, n_layers)."
            )
        Y = check_array(
            y,
            ensure_2d=False,
            dtype=np.float64,
            ensure_all_finite="allow-nan",
            input_name="y",
        )
        if Y.ndim == 1:
            Y = Y[:, None]
            one_d = True
        elif Y.ndim == 2:
            one_d = False
        else:
            raise ValueError(f"y must be 1-D or 2-D; got {Y.ndim} dimensions.")
        if Y.shape[0] != n_samples:
            raise ValueError(
                f"X and y have different numbers of dyads: X has {n_samples}, "
                f"y has {Y.shape[0]}."
            )
        if np.isinf(Y).any():
            raise ValueError("y contains infinity; NaN marks unobserved entries.")
        if not reset and Y.shape[1] != self.n_layers_:
            raise ValueError(
                f"y has {Y.shape[1]} layers, but the model was fitted with "
                f"{self.n_layers_}."
            )
        observed = Y[~np.isnan(Y)]
        if self.link in _BINARY_LINKS and not np.isin(observed, (0.0, 1.0)).all():
            raise ValueError(
                f'link="{self.link}" needs binary edges (0 or 1) in y; found values '
                f"{np.setdiff1d(np.unique(observed), [0.0, 1.0])[:5].tolist()}. Use "
                'link="log" for counts or link="identity" for weights.'
            )
        if self.link == "log" and (observed < 0).any():
            raise ValueError(
                'link="log" needs non-negative edges (counts) in y; found '
                f'{observed.min()!r}. Use link="identity" for signed weights.'
            )
        return Y, one_d

    def _check_layers(self, Y):
        """Every layer observed; warn about layers with a single value."""
        seen = ~np.isnan(Y)
        if not seen.any(axis=0).all():
            empty = np.flatnonzero(~seen.any(axis=0)).tolist()
            raise ValueError(
                f"Layers {empty} of y have no observed entry (all NaN): nothing "
                "can be fitted for them; drop those columns of y."
            )
        constant = [
            k for k in range(Y.shape[1]) if np.unique(Y[seen[:, k], k]).size == 1
        ]
        if constant and self.link != "identity":
            warn(
                f"Layers {constant} of y take a single value: their "
                "coefficients are not identified (the estimates drift "
                "towards infinity, damped by the step control).",
                UserWarning,
            )

    # ---------------------------------------------------------------- fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Solve the estimating equations for the factors, weights and coefficients.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_dyads, n_features)
            One row per dyad: the two node-id columns named by
            ``dyad_columns`` and the dyad covariates.
        y : array-like of shape (n_dyads, n_layers) or (n_dyads,)
            Edge values per layer; NaN marks an unobserved entry.
        sample_weight : array-like of shape (n_dyads,), default=None
            Frequency weights of the dyads (see Notes): integer weights act
            as repeated dyads, a zero weight drops the dyad. None weighs the
            dyads equally.

        Returns
        -------
        self : TGINEE
            Fitted estimator.
        """
        Z, ids = self._validate_X(X, reset=True)
        Y, self._one_d = self._check_y(y, Z.shape[0], reset=True)
        columns = getattr(y, "columns", None)
        self._layer_names = (
            [str(c) for c in columns]
            if columns is not None and len(columns) == Y.shape[1]
            else [f"layer {k}" for k in range(Y.shape[1])]
        )
        weights = check_sample_weight(sample_weight, Z, normalize=False)
        if weights is None:
            weights = np.ones(Z.shape[0])
        elif not (weights > 0).all():  # a zero weight: as if the dyad were absent
            keep = weights > 0
            Z, Y, weights = Z[keep], Y[keep], weights[keep]
            ids = None if ids is None else ids[keep]
        self._check_layers(Y)
        self._n_dyads = len(Y)
        if ids is None and (cols := _id_like_columns(Z)) is not None:
            warn(
                f"Columns {cols[0]} and {cols[1]} of X look like node ids "
                "(non-negative integers, every row a distinct pair), but "
                "dyad_columns=None treats them as covariates and fits no node "
                f"factors. Pass dyad_columns=({cols[0]}, {cols[1]}) to fit the "
                "network model.",
                UserWarning,
            )
        self.n_layers_ = Y.shape[1]
        if ids is None:
            self.nodes_, pairs = np.empty(0, dtype=np.int64), None
        else:
            self.nodes_, pairs = encode_nodes(ids)

        torch = import_torch()
        # float64 on the CPU, where it costs little; float32 on a GPU.
        ctx = self._torch_context(cpu_dtype=torch.float64)
        result = solve_tginee(
            Y,
            Z,
            pairs,
            len(self.nodes_),
            weights,
            n_components=self.n_components,
            directed=self.directed,
            link=self.link,
            working_covariance=self.working_covariance,
            alpha=self.alpha,
            fit_intercept=self.fit_intercept,
            max_iter=self.max_iter,
            tol=self.tol,
            random_state=self.random_state,
            verbose=self.verbose,
            context=ctx,
        )
        if not result.converged:
            warn(
                f"TGINEE: stopped at max_iter={self.max_iter} rounds before the "
                f"linear predictor settled (tol={self.tol}). Increase max_iter.",
                ConvergenceWarning,
            )
        self._store(result)
        self._record_device(ctx)
        return self

    def _store(self, result):
        """Fitted attributes from the solver's result."""
        L, p = result.coef.shape
        self.n_iter_ = result.n_iter
        self.coef_ = result.coef
        self.intercept_ = result.intercept
        self.working_correlation_ = result.working_correlation
        self.scale_ = result.scale
        self.covariance_ = result.covariance
        q = p + int(self.fit_intercept)
        if q:
            se = np.sqrt(np.maximum(np.diag(result.covariance), 0)).reshape(L, q)
        else:
            se = np.zeros((L, 0))
        self.bse_ = se[:, :p]
        self.intercept_bse_ = se[:, p] if self.fit_intercept else np.zeros(L)
        for attr in ("node_factors_", "receiver_factors_", "layer_weights_"):
            if hasattr(self, attr):
                delattr(self, attr)
        if result.node_factors is not None:
            self.node_factors_ = result.node_factors
            self.layer_weights_ = result.layer_weights
            receivers = result.receiver_factors
            self.receiver_factors_ = (
                result.node_factors.copy() if receivers is None else receivers
            )

    # ------------------------------------------------------------ predict

    def _eta(self, X):
        check_is_fitted(self)
        Z, ids = self._validate_X(X, reset=False)
        eta = Z @ self.coef_.T + self.intercept_
        if ids is not None:
            pos, seen = self._known_positions(ids)
            U, V = self.node_factors_, self.receiver_factors_
            # An unseen node's factor is zero: what the ridge-penalised fit
            # gives a node without data; its dyads keep covariates and
            # intercepts.
            term = (U[pos[:, 0]] * V[pos[:, 1]]) @ self.layer_weights_.T
            eta = eta + term * seen.all(1)[:, None]
        return eta

    def _known_positions(self, ids):
        """Rows of the factors for ``ids`` (0 where unseen) and the seen mask.

        A node not seen in ``fit`` raises a UserWarning naming how many there
        are and the first of them.
        """
        nodes = self.nodes_
        if (ids.dtype == object) != (nodes.dtype == object) or not len(nodes):
            seen = np.zeros(ids.shape, dtype=bool)
            pos = np.zeros(ids.shape, dtype=np.intp)
        else:
            keys, look = (
                (nodes.astype(str), ids.astype(str))
                if (nodes.dtype == object)
                else (nodes, ids)
            )
            pos = np.minimum(np.searchsorted(keys, look), len(nodes) - 1)
            seen = keys[pos] == look
            pos = np.where(seen, pos, 0)
        if not seen.all():
            unseen = np.unique(ids[~seen])
            first = unseen[0]
            shown = repr(str(first)) if isinstance(first, str) else str(int(first))
            warn(
                f"{len(unseen)} node(s) of X were not seen during fit (e.g. node "
                f"{shown}); TGINEE has no factors for them and predicts their "
                f"{int((~seen).any(1).sum())} dyad(s) from the covariates and "
                "intercepts alone (a zero factor). In cross-validation, "
                "cv=NodeKFold(...) keeps every node in each training fold.",
                UserWarning,
            )
        return pos, seen

    def _positions(self, ids):
        """Rows of ``node_factors_`` for node ids; a ValueError names an unseen one."""
        return node_positions(self.nodes_, ids)

    def predict(self, X):
        """Mean edge value of every layer for each dyad.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_dyads, n_features)
            Dyads as in ``fit``.

        Returns
        -------
        mu : ndarray of shape (n_dyads, n_layers) or (n_dyads,)
            ``g^{-1}(eta)``: edge probabilities for "logit", expected counts
            for "log"; 1-D when ``fit`` got a 1-D ``y``. A dyad with a node
            not seen in ``fit`` gets a zero factor term, with a UserWarning
            (see Notes).
        """
        mu = moments(self._eta(X), self.link)[0]
        return mu[:, 0] if self._one_d else mu

    @available_if(_binary_link)
    def decision_function(self, X):
        """Linear predictor of every layer: the log-odds of an edge.

        Only for the binary links (the log-odds for "logit", the linear
        predictor ``g(mu)`` for "probit" and "cloglog"). It ranks dyads as
        :meth:`predict` does, so that scikit-learn's ``scoring="roc_auc"``
        works on complete binary ``y`` (its macro average over layers). That
        scorer rejects NaN entries: on an incomplete ``y`` pass
        ``scoring=get_observed_scorer("roc_auc")``, which skips them, as
        :meth:`score` does.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_dyads, n_features)
            Dyads as in ``fit``.

        Returns
        -------
        eta : ndarray of shape (n_dyads, n_layers) or (n_dyads,)
            1-D when ``fit`` got a 1-D ``y``.
        """
        eta = self._eta(X)
        return eta[:, 0] if self._one_d else eta

    def score(self, X, y, sample_weight=None):
        """Mean over layers of ROC AUC (binary edges) or R^2, on observed entries.

        For a binary link the score of a layer is the ROC AUC of the
        predicted edge probabilities (a layer whose observed entries are all
        of one class is skipped): :func:`~sklearn_ext.network.observed_roc_auc_score`;
        for "log" and "identity" it is R^2,
        :func:`~sklearn_ext.network.observed_r2_score`. The scorers of
        :func:`~sklearn_ext.network.get_observed_scorer` compute the same.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_dyads, n_features)
            Dyads as in ``fit``.
        y : array-like of shape (n_dyads, n_layers) or (n_dyads,)
            Edge values; NaN marks unobserved entries, which are skipped.
        sample_weight : array-like of shape (n_dyads,), default=None
            Weights of the dyads.

        Returns
        -------
        score : float
            Mean of the layers' AUC (binary links) or R^2.
        """
        check_is_fitted(self)
        mu = self.predict(X)
        Y, _ = self._check_y(y, mu.shape[0], reset=False)
        metric = observed_roc_auc_score if _binary_link(self) else observed_r2_score
        return metric(Y, mu.reshape(Y.shape), sample_weight=sample_weight)

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

    def summary(self, alpha=0.05):
        """Summarise the coefficients: robust standard errors, z, p-values, intervals.

        As statsmodels' ``GEEResults.summary()``: one row per layer and term
        (each covariate, then the intercept), with the estimate
        (``coef_``, ``intercept_``), its robust (sandwich) standard error
        (``bse_``, ``intercept_bse_``), ``z = coef / std err``, the two-sided
        normal p-value ``2 (1 - Phi(|z|))`` and the Wald interval of
        :meth:`conf_int`. With node factors, the standard errors account for
        the estimated factors (see Inference).

        Parameters
        ----------
        alpha : float, default=0.05
            The intervals cover with probability ``1 - alpha``.

        Returns
        -------
        summary : TGINEESummary
            ``print(summary)`` shows the tables (statsmodels' table classes
            when statsmodels is installed, plain text otherwise), a notebook
            shows its HTML, and ``summary.table`` holds the numbers (a pandas
            DataFrame indexed by (layer, term) when pandas is installed).

        Examples
        --------
        >>> from sklearn_ext.datasets import make_multilayer_network
        >>> from sklearn_ext.network import TGINEE, tensor_to_dyads
        >>> A, C, _ = make_multilayer_network(40, 2, 2, random_state=0)
        >>> model = TGINEE(device="cpu", random_state=0).fit(*tensor_to_dyads(A, C))
        >>> table = model.summary().table
        >>> list(table.columns)
        ['coef', 'std err', 'z', 'P>|z|', '[0.025', '0.975]']
        >>> len(table)  # 2 layers x (2 covariates + intercept)
        6
        """
        from sklearn_ext.network._tginee_summary import TGINEESummary

        check_is_fitted(self)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
        L, p = self.coef_.shape
        _, rest = self._columns
        names = getattr(self, "feature_names_in_", None)
        covariates = [str(names[c]) if names is not None else f"x{c}" for c in rest]
        terms = covariates + (["intercept"] if self.fit_intercept else [])
        coef = np.hstack([self.coef_, self.intercept_[:, None]])[:, : len(terms)]
        bse = np.hstack([self.bse_, self.intercept_bse_[:, None]])[:, : len(terms)]
        layers = self._layer_names
        info = [
            ("Model:", "TGINEE (GEE)"),
            ("Link:", self.link),
            ("Working covariance:", self.working_covariance),
            ("Covariance type:", "robust (sandwich)"),
            ("No. dyads:", str(self._n_dyads)),
            ("No. layers:", str(L)),
            ("No. nodes:", str(len(self.nodes_))),
            ("Rank:", str(self.n_components if len(self.nodes_) else 0)),
            ("Scale:", f"{self.scale_:.4g}"),
            ("Rounds:", str(self.n_iter_)),
        ]
        return TGINEESummary(
            info,
            np.repeat(layers, len(terms)),
            terms * L,
            coef.ravel(),
            bse.ravel(),
            alpha,
        )

    @available_if(_has_factors)
    def transform(self, X):
        """Node factors of the given nodes.

        Available with explicit ``dyad_columns``, or after a fit whose
        ``dyad_columns="auto"`` found node ids.

        Parameters
        ----------
        X : array-like of shape (n_nodes_query,) or (n_nodes_query, 1)
            Node ids seen in ``fit`` (integers or strings, as in ``fit``).

        Returns
        -------
        factors : ndarray of shape (n_nodes_query, n_components) or \
                (n_nodes_query, 2 * n_components)
            Rows of ``node_factors_``; with ``directed=True``, each node's
            sender factors followed by its receiver factors (rows of
            ``node_factors_`` and ``receiver_factors_`` side by side), so
            that nodes with the same roles are close.
        """
        check_is_fitted(self)
        ids = np.asarray(X)
        if ids.ndim == 2 and ids.shape[1] == 1:
            ids = ids[:, 0]
        if ids.ndim != 1:
            raise ValueError(
                "transform takes a 1-D array of node ids (or one column); "
                f"got shape {ids.shape}."
            )
        pos = self._positions(check_node_ids(ids))
        if self.directed:
            return np.hstack([self.node_factors_[pos], self.receiver_factors_[pos]])
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
        """Three-output regression data, or about ``n_samples`` dyads of a network."""
        if self.dyad_columns is None or self.dyad_columns == "auto":
            from sklearn.datasets import make_regression

            # Several layers, so that the GEE rounds (and max_iter) matter.
            return make_regression(
                n_samples, 4, n_targets=3, noise=0.1, random_state=random_state
            )
        from sklearn_ext.datasets import make_multilayer_network

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
