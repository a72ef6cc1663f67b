"""Knothe-Rosenblatt quantile regression of a multi-output target."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real

import numpy as np
from scipy.stats import qmc
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.utils import check_array, check_random_state

from sklearn_ext.base import TorchMixin
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import (
    adam,
    import_torch,
    init_parameters,
    to_tensor,
    weighted_mean,
)
from sklearn_ext.utils._validation import check_sample_weight

__all__ = ["KRQuantileRegressor", "check_taus", "kr_taus", "vector_risk_of_draws"]

# Quantile-Huber threshold on the standardised outputs: close to the pinball
# loss (exact quantile regression) while keeping its gradient continuous.
KAPPA = 0.05
RISK_MEASURES = ("cvar", "expectation")


def check_taus(taus, n_outputs, name="taus"):
    """``taus`` as a float64 array of shape (n_taus, n_outputs) in the open cube."""
    taus = check_array(
        taus, dtype=np.float64, ensure_2d=False, input_name=name, ensure_all_finite=True
    )
    if taus.ndim == 1:
        taus = taus[None, :] if n_outputs > 1 or taus.size == 1 else taus[:, None]
    if taus.ndim != 2 or taus.shape[1] != n_outputs:
        raise ValueError(
            f"{name} must have shape (n_taus, {n_outputs}): one level per output; "
            f"got shape {np.shape(taus)}."
        )
    if np.any(taus <= 0) or np.any(taus >= 1):
        bad = taus[(taus <= 0) | (taus >= 1)][0]
        raise ValueError(
            f"{name} must lie strictly inside (0, 1) (quantile levels); got {bad!r}."
        )
    return taus


def kr_taus(n_draws, n_outputs):
    """A fixed scrambled Sobol set of ``n_draws`` points of the open unit cube.

    Deterministic (seed 0), so that risk estimates do not change between calls;
    a low-discrepancy set integrates the KR map with less error than as many
    independent draws.
    """
    points = qmc.Sobol(n_outputs, scramble=True, seed=0).random(n_draws)
    return np.clip(points, 1e-6, 1 - 1e-6)


def _check_n_draws(n_draws):
    if isinstance(n_draws, bool) or not isinstance(n_draws, Integral) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}.")
    return int(n_draws)


def _check_weights(weights, n_outputs):
    if weights is None:
        return np.full(n_outputs, 1.0 / n_outputs)
    weights = check_array(
        weights, ensure_2d=False, dtype=np.float64, input_name="weights"
    )
    if weights.shape != (n_outputs,) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(
            f"weights must be {n_outputs} non-negative numbers, not all zero (one "
            f"per output); got {weights!r}."
        )
    return weights


def vector_risk_of_draws(draws, measure="cvar", alpha=0.1, weights=None):
    """The vector-risk of a joint law given by draws of it.

    Parameters
    ----------
    draws : ndarray or Tensor of shape (..., n_draws, n_outputs)
        Equally weighted draws of the output vector (higher is better).
    measure : {"cvar", "expectation"}, default="cvar"
        ``"cvar"``: the mean of the lowest ``alpha`` fraction of the
        scalarised outcomes ``weights @ y``, i.e. the conditional value at risk
        of the weighted sum under the *joint* law, which depends on how the
        outputs move together (a bad outcome on every output at once weighs
        more than bad outcomes that offset each other). ``"expectation"``:
        ``weights @ E[y]``, risk-neutral.
    alpha : float, default=0.1
        Tail fraction of ``"cvar"``, in (0, 1].
    weights : array-like of shape (n_outputs,), default=None
        Non-negative weights of the outputs; equal weights by default.

    Returns
    -------
    risk : ndarray or Tensor of shape draws.shape[:-2]
    """
    if draws.ndim < 2 or draws.shape[-2] == 0:
        raise ValueError(
            "draws must have shape (..., n_draws, n_outputs) with n_draws >= 1; "
            f"got shape {tuple(draws.shape)}."
        )
    n_draws, n_outputs = draws.shape[-2:]
    w = _check_weights(weights, n_outputs)
    if not isinstance(draws, np.ndarray):
        w = draws.new_tensor(w)
    scalar = draws @ w
    if measure == "expectation":
        return scalar.mean(-1)
    if measure != "cvar":
        raise ValueError(f"measure must be one of {RISK_MEASURES}; got {measure!r}.")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1]; got {alpha!r}.")
    k = max(1, math.ceil(alpha * n_draws))
    if isinstance(draws, np.ndarray):
        return np.sort(scalar, axis=-1)[..., :k].mean(-1)
    return scalar.sort(dim=-1).values[..., :k].mean(-1)


class KRQuantileRegressor(MultiOutputMixin, RegressorMixin, TorchMixin, BaseEstimator):
    r"""Joint conditional quantiles of a multi-output target by KR regression.

    The model learns the conditional law of ``y`` (``n_outputs`` columns)
    given ``X`` through its Knothe-Rosenblatt (KR) map: the quantile function
    of output 1 given ``X``, then of output 2 given ``X`` and output 1's
    value, and so on. Each conditional quantile function is an IQN-style
    network of the level :math:`\tau` (cosine embedding), trained by
    quantile-Huber regression on levels drawn uniformly per sample, the
    earlier outputs being fed their observed values. Pushing a point
    :math:`\tau` of the unit cube through the learned map gives a joint
    quantile; pushing uniform points gives draws of the joint law, so the
    dependence between outputs is kept, which independent per-output quantile
    regression loses.

    Quantiles do not cross: a network of :math:`\tau` need not be monotone,
    so :meth:`predict` and :meth:`predict_quantiles` read each conditional
    quantile function after its monotone
    rearrangement (Chernozhukov, Fernandez-Val and Galichon 2010): evaluated
    on a grid of 48 levels (dense in the tails), sorted, and interpolated;
    the KR map is then non-decreasing in each output's own level, given the
    earlier outputs. Rearranging leaves the law of the draws unchanged, so
    :meth:`sample` and the draw-based risks use the network's outputs; the
    ``"kr_cvar"`` risk integrates the network's map over the corner of the
    cube without rearranging it (a grid per corner point is too costly).

    ``X`` and ``y`` are standardised internally; predictions are returned on
    the original scale. A 1-D ``y`` is the single-output special case (IQN).

    Parameters
    ----------
    embedding_dim : int, default=32
        Cosines in the embedding of a quantile level.
    hidden : int, default=64
        Width of every layer.
    ordering : {"transformer", "fixed"}, default="transformer"
        How an output's quantile network sees the earlier outputs.
        ``"transformer"``: one shared cross-attention block without positional
        encoding: the earlier outputs are a set of tokens (value plus the
        output's identity embedding), so the same weights serve every output
        and relabelling the outputs changes nothing but the labels.
        ``"fixed"``: a separate network per output, fed the earlier outputs as
        a vector in the KR order.
    n_taus : int, default=4
        Quantile levels drawn per sample and training step.
    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` when "auto".
    learning_rate_init : float, default=1e-3
        Adam's step size.
    max_iter : int, default=300
        Training epochs at most.
    tol : float, default=1e-4
        Stop when the epoch loss has not improved by ``tol`` for
        ``n_iter_no_change`` epochs.
    n_iter_no_change : int, default=10
        Epochs without improvement that stop training.
    warm_start : bool, default=False
        Continue the fitted network (and its optimiser) on the next ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the shuffling and the levels drawn.
    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where to train; "auto" takes CUDA when available.
    verbose : int, default=0
        ``>= 1`` shows a progress bar.

    Attributes
    ----------
    n_outputs_ : int
    module_ : torch.nn.Module
        The fitted network (on the CPU).
    loss_curve_ : list of float
    n_iter_ : int
    device_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Only when ``X`` has string column names.

    See Also
    --------
    MOQuantileAgent : Reinforcement-learning agent whose critics are KR quantile
        networks of the return vector.

    References
    ----------
    .. [1] "Knothe-Rosenblatt Quantile Regression for Risk-sensitive
       Multi-objective Reinforcement Learning", ICML 2026.
    .. [2] W. Dabney, G. Ostrovski, D. Silver and R. Munos, "Implicit Quantile
       Networks for Distributional Reinforcement Learning", ICML 2018.
    .. [3] V. Chernozhukov, I. Fernandez-Val and A. Galichon, "Quantile and
       Probability Curves Without Crossing", Econometrica 78(3), 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import KRQuantileRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (400, 1))
    >>> z = rng.normal(size=400)
    >>> y = np.column_stack([X[:, 0] + 0.3 * z, X[:, 0] + 0.3 * z])  # comonotone
    >>> model = KRQuantileRegressor(max_iter=40, random_state=0).fit(X, y)
    >>> model.predict([[0.5]]).shape
    (1, 2)
    >>> model.sample([[0.5]], n_draws=50, random_state=0).shape
    (1, 50, 2)
    """

    _parameter_constraints = {
        **TorchMixin._parameter_constraints,
        "embedding_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden": [Interval(Integral, 1, None, closed="left")],
        "ordering": [StrOptions({"transformer", "fixed"})],
        "n_taus": [Interval(Integral, 1, None, closed="left")],
    }

    _paper = "KR quantile regression for risk-sensitive MORL, ICML 2026"
    _bench_name = "kr_morl"
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "the minibatches and the quantile levels drawn per sample differ "
            "between weighted and repeated rows, so the two fits agree in "
            "distribution, not exactly (tests/test_rl_kr_quantile.py checks "
            "that weights act as repetitions)"
        ),
    }

    def __init__(
        self,
        *,
        embedding_dim=32,
        hidden=64,
        ordering="transformer",
        n_taus=4,
        batch_size="auto",
        learning_rate_init=1e-3,
        max_iter=300,
        tol=1e-4,
        n_iter_no_change=10,
        warm_start=False,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.embedding_dim = embedding_dim
        self.hidden = hidden
        self.ordering = ordering
        self.n_taus = n_taus
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    @classmethod
    def _gpu_check_params(cls):
        # 8 levels per row through 256-wide layers, in batches of 1024 rows.
        params = {"hidden": 256, "embedding_dim": 64, "n_taus": 8}
        return {**params, "batch_size": 1024, "max_iter": 3}, 50_000

    @classmethod
    def _get_test_params(cls):
        return {
            "embedding_dim": 8,
            "hidden": 16,
            "max_iter": 60,
            "learning_rate_init": 1e-2,
            "device": "cpu",
        }

    def _build_module(self, attr="module_"):
        from sklearn_ext.rl._kr_quantile_nn import KRRegressorNet

        return KRRegressorNet(
            self.n_features_in_,
            self.n_outputs_,
            self.embedding_dim,
            self.hidden,
            self.ordering,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Learn the KR map of y given X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature rows.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets; a 1-D ``y``, or a single column, is the single-output
            case (IQN). Under ``warm_start`` the number of outputs must stay
            that of the first fit.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the loss.

        Returns
        -------
        self : KRQuantileRegressor
            Fitted estimator.
        """
        torch = import_torch()
        from sklearn_ext.rl._kr_quantile_nn import quantile_huber_loss, random_ranks

        warm = self.warm_start and hasattr(self, "module_")
        X, y = validate_data(
            self,
            X,
            y,
            dtype=np.float64,
            multi_output=True,
            y_numeric=True,
            ensure_min_samples=2,
            reset=not warm,
        )
        if y.dtype.kind not in "biuf":
            # validate_data converts only object targets; strings pass it.
            raise ValueError(
                f"y must hold numbers (the outputs to model); got dtype {y.dtype}."
            )
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1)
        module = self._fitted_module(
            {
                "n_features": X.shape[1],
                "n_outputs": Y.shape[1],
                "embedding_dim": self.embedding_dim,
                "hidden": self.hidden,
                "ordering": self.ordering,
            }
        )
        weights = check_sample_weight(sample_weight, X, normalize=False)
        if module is None:
            w = np.ones(len(X)) if weights is None else weights
            self._x_mean = np.average(X, axis=0, weights=w)
            self._x_std = np.sqrt(
                np.average((X - self._x_mean) ** 2, axis=0, weights=w)
            )
            self._x_std[self._x_std == 0] = 1.0
            self._y_mean = np.average(Y, axis=0, weights=w)
            self._y_std = np.sqrt(
                np.average((Y - self._y_mean) ** 2, axis=0, weights=w)
            )
            self._y_std[self._y_std == 0] = 1.0
        self.n_outputs_ = Y.shape[1]
        context = self._torch_context(size=X.shape[0] * self.n_taus, min_size=1e6)
        net = (
            module
            if module is not None
            else init_parameters(self._build_module(), context.generator)
        )
        net = net.to(device=context.device, dtype=context.dtype).train()
        Xt = to_tensor(
            (X - self._x_mean) / self._x_std, dtype=context.dtype, device=context.device
        )
        Yt = to_tensor(
            (Y - self._y_mean) / self._y_std, dtype=context.dtype, device=context.device
        )
        w = self._sample_weight(weights, X, context)
        m, d = self.n_taus, self.n_outputs_

        def batch_loss(idx):
            x = Xt[idx].repeat_interleave(m, dim=0)
            target = Yt[idx].repeat_interleave(m, dim=0)
            tau = torch.rand(len(x), d, generator=context.generator).to(
                device=x.device, dtype=x.dtype
            )
            rank = None
            if self.ordering == "transformer":
                # A random KR order per row and level: one network learns the
                # conditionals of every order (no positional encoding).
                rank = random_ranks(len(x), d, context.generator, x.device)
            per = quantile_huber_loss(target, net(x, tau, target, rank), tau, KAPPA)
            per_sample = per.sum(1).reshape(-1, m).mean(1)
            return weighted_mean(per_sample, None if w is None else w[idx])

        optimizer = adam(net.parameters(), lr=self.learning_rate_init)
        self._train({"module_": net}, batch_loss, X.shape[0], context, optimizer)
        return self

    # --- inference -----------------------------------------------------------

    def _kr_map(self, X, taus, mix_orders=False, monotone=True):
        """KR quantiles of every row at every level: (n_samples, n_taus, d).

        ``mix_orders``: with ``ordering="transformer"``, the levels are
        shared out in blocks among the KR orders (see ``cycled_ranks``), so
        that draws average over the orders; otherwise the order is
        ``0, 1, ..., d-1``. ``monotone``: each conditional quantile function
        is rearranged on a grid of levels (non-decreasing in its level);
        False gives the network's raw outputs, whose law is the same (draws
        need no rearrangement) but whose quantiles may cross.
        """
        torch = import_torch()
        from sklearn_ext.rl._kr_quantile_nn import cycled_ranks, rearrangement_grid

        n_taus = len(taus)
        mix = mix_orders and self.ordering == "transformer"
        grid = rearrangement_grid() if monotone else None

        def forward(net, batch):
            tau = torch.as_tensor(taus, dtype=batch.dtype, device=batch.device)
            x = batch.repeat_interleave(n_taus, dim=0)
            rank = None
            if mix:
                rank = cycled_ranks(n_taus, tau.shape[1], batch.device)
                rank = rank.repeat(len(batch), 1)
            out = net.kr_map(x, tau.repeat(len(batch), 1), rank, grid)
            return out.reshape(len(batch), n_taus, -1)

        X = (X - self._x_mean) / self._x_std
        size = 8192 // n_taus if grid is None else 65536 // (n_taus * len(grid[0]))
        out = self._predict_batches(forward, X, batch_size=max(1, size))
        return out * self._y_std + self._y_mean

    def _check_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, reset=False)

    def predict(self, X):
        """Conditional KR median: the KR map at the levels (0.5, ..., 0.5).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature rows.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            1-D when ``y`` was 1-D in ``fit``.
        """
        X = self._check_X(X)
        out = self._kr_map(X, np.full((1, self.n_outputs_), 0.5))[:, 0]
        return out[:, 0] if self._y_1d else out

    def predict_quantiles(self, X, taus):
        """Push quantile levels through the fitted KR map of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature rows.
        taus : array-like of shape (n_taus, n_outputs)
            Points of the open unit cube: ``taus[j, k]`` is the level of
            output k, conditional on the outputs before it taking their
            quantiles at ``taus[j, :k]``.

        Returns
        -------
        quantiles : ndarray of shape (n_samples, n_taus, n_outputs)
            The KR map of each row at each level, each conditional quantile
            function monotonely rearranged: ``quantiles[i, j, k]`` does not
            decrease as ``taus[j, k]`` grows with ``taus[j, :k]`` fixed.
        """
        X = self._check_X(X)
        taus = check_taus(taus, self.n_outputs_)
        return self._kr_map(X, taus)

    def sample(self, X, n_draws=100, random_state=None):
        """Draw from the learned joint conditional law of each row.

        The same uniform levels serve every row (common random numbers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature rows.
        n_draws : int, default=100
            Draws per row.
        random_state : int, RandomState instance or None, default=None
            Seeds the uniform levels.

        Returns
        -------
        draws : ndarray of shape (n_samples, n_draws, n_outputs)
            Draws of y given each row.
        """
        X = self._check_X(X)
        n_draws = _check_n_draws(n_draws)
        rng = check_random_state(random_state)
        taus = rng.uniform(1e-6, 1 - 1e-6, size=(n_draws, self.n_outputs_))
        # Rearranging a quantile function leaves the law of its draws as it
        # is, so draws take the network's outputs directly.
        return self._kr_map(X, taus, mix_orders=True, monotone=False)

    def vector_risk(self, X, measure="cvar", alpha=0.1, weights=None, n_draws=512):
        """Vector-risk of the conditional law of y given each row.

        Integrates the learned KR map over a fixed scrambled Sobol set of
        ``n_draws`` points of the cube (deterministic), then applies
        :func:`vector_risk_of_draws`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature rows.
        measure : {"cvar", "expectation", "kr_cvar"}, default="cvar"
            ``"cvar"``: mean of the lowest ``alpha`` fraction of
            ``weights @ y`` under the joint law (higher outputs are better);
            ``"expectation"``: ``weights @ E[y | X]``. ``"kr_cvar"``: the KR
            vector CVaR, ``weights`` times the mean of the KR map over the
            corner ``(0, alpha]^d`` of the cube (output 1 in its lower
            ``alpha`` tail, output 2 in its lower tail given output 1, and
            so on). It depends on the KR order: ``ordering="fixed"`` gives the
            value of the order of the columns of ``y``, so relabelling the
            outputs changes it; ``ordering="transformer"`` averages it over
            every order (the corner's Sobol points are shared out among
            them), so relabelling the outputs leaves it unchanged.
        alpha : float, default=0.1
            Tail fraction, in (0, 1].
        weights : array-like of shape (n_outputs,), default=None
            Non-negative output weights; equal weights by default.
        n_draws : int, default=512
            Points of the Sobol set.

        Returns
        -------
        risk : ndarray of shape (n_samples,)
            Higher is better.
        """
        X = self._check_X(X)
        measures = (*RISK_MEASURES, "kr_cvar")
        if measure not in measures:
            raise ValueError(f"measure must be one of {measures}; got {measure!r}.")
        if not isinstance(alpha, Real) or not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1]; got {alpha!r}.")
        w = _check_weights(weights, self.n_outputs_)
        taus = kr_taus(_check_n_draws(n_draws), self.n_outputs_)
        if measure == "kr_cvar":
            # The network's map, not its rearrangement: rearranging every
            # corner point's conditional costs a grid of evaluations per
            # point (about 50 s for 40 rows at the defaults on one CPU).
            corner = self._kr_map(X, alpha * taus, mix_orders=True, monotone=False)
            return corner.mean(1) @ w
        draws = self._kr_map(X, taus, mix_orders=True, monotone=False)
        return vector_risk_of_draws(draws, measure, alpha, weights)
