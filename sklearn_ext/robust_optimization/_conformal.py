"""Conformal robust predict-then-optimize: a calibrated miscoverage-regret frontier."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real
from warnings import warn

import numpy as np
from scipy.stats import binom
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.metrics import r2_score
from sklearn.model_selection import check_cv, train_test_split
from sklearn.utils import check_array, check_random_state, get_tags
from sklearn.utils.validation import has_fit_parameter

from sklearn_ext.robust_optimization._bounds import (
    fixed_sequence_levels,
    frontier_bounds,
    min_calibration_size,
    miscoverage_p_values,
    regret_p_values,
)
from sklearn_ext.robust_optimization._frontier import (
    normalised_regret,
    pareto_mask,
    robust_regret,
    select_level,
)
from sklearn_ext.utils._sklearn_compat import (
    HasMethods,
    Interval,
    RealNotInt,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._validation import check_sample_weight

__all__ = ["ConformalRobustOptimizer"]

_DEFAULT_N_LEVELS = 50
_PROBLEM_METHODS = ["solve", "solve_robust", "cost", "cost_range"]


def _fit_weighted(estimator, X, y, sample_weight):
    """``estimator.fit(X, y)``, with ``sample_weight`` only when there are weights."""
    if sample_weight is None:
        return estimator.fit(X, y)
    return estimator.fit(X, y, sample_weight=sample_weight)


class ConformalRobustOptimizer(RegressorMixin, BaseEstimator):
    r"""Robust predict-then-optimize with a calibrated robustness level.

    A regressor predicts the uncertain parameters ``c`` of a linear program (a
    cost vector, asset returns) from a context ``x``. The robust policy at
    level :math:`\lambda` hedges against every ``c`` in the uncertainty set

    .. math::

        U_\lambda(x) = \{\hat c(x) + \sigma(x) \odot u : \|u\|_p \le \lambda\},

    centred on the prediction :math:`\hat c(x)` and shaped by a per-coordinate
    scale :math:`\sigma(x)` (``p`` = 2 or :math:`\infty`, the ``norm``), and
    takes the decision minimising the worst-case cost over the set. The
    radius :math:`\lambda` trades coverage against cost: a small set is often
    missed by the realised ``c``, a large one gives conservative, costly
    decisions. This estimator measures both sides, distribution-free and with
    finite-sample validity, for every level of a grid, so that the level can be
    chosen by the user's cost-risk preference instead of a priori.

    ``fit`` splits the data into a training and a calibration part. On the
    training part it fits a clone of ``estimator``, the scale (from
    cross-validated residuals) and, by default, the grid of radii (quantiles of
    the cross-validated nonconformity scores, with 0 -- the nominal policy --
    as the first level). On the calibration part it computes for every sample
    :math:`i` and level :math:`k` the miscoverage indicator
    :math:`1\{c_i \notin U_{\lambda_k}(x_i)\}`, i.e. the score
    :math:`\|(c_i - \hat c(x_i)) / \sigma(x_i)\|_p > \lambda_k`, and the
    normalised regret of the robust decision :math:`w_k(x_i)`,

    .. math::

        r_{ik} = \frac{f(c_i, w_k(x_i)) - \min_w f(c_i, w)}
                      {\max_w f(c_i, w) - \min_w f(c_i, w)} \in [0, 1],

    the bound in the denominator being the range of the cost over the feasible
    set that the problem provides (``problem.cost_range``; 0/0 counts as 0).

    **Guarantee.** Let :math:`\alpha(\lambda) = P(c \notin U_\lambda(x))` and
    :math:`R(\lambda) = E[r(x, c; \lambda)]` for a fresh pair ``(x, c)`` from
    the data distribution, conditionally on the training part. If the
    calibration pairs are i.i.d. from that distribution, then with probability
    at least ``1 - delta`` over the calibration sample, simultaneously for
    every level :math:`\lambda_k` of the grid,

    .. math::

        \alpha(\lambda_k) \le \bar\alpha_k
        \quad\text{and}\quad
        R(\lambda_k) \le \bar R_k,

    where :math:`\bar\alpha_k` and :math:`\bar R_k` are
    ``frontier_["miscoverage_upper"]`` and ``frontier_["regret_upper"]``.
    How they are built depends on ``bound``:

    - ``"simultaneous"`` and ``"fixed-sequence"`` (the same frontier): **never
      looser than ``"ltt-bonferroni"`` at any level**, for both quantities.
      A fixed-sequence test (each at LTT-Bonferroni's level ``delta / (2K)``)
      certifies the ``m`` levels that miss at most a fraction ``high = 0.95``
      of the time; their
      LTT-Bonferroni budget ``m delta / (2K)`` pays for one simultaneous
      binomial band on the miscoverage curve and for raising every regret
      bound's level above ``delta / (2K)``, in a split fixed by ``n``, ``K``
      and ``delta`` alone. Miscoverage is the survival function of the score,
      non-increasing in the radius, so a single band covers every radius at
      once: each level's count of misses gets the Clopper-Pearson bound at one
      level ``delta'`` calibrated on the joint law of uniform order
      statistics; a level whose band bound is above ``high``, and every level
      when ``delta' < delta / (2K)``, keeps LTT-Bonferroni's bound (the
      fallback per level). The regret bound of each level is a betting
      (Waudby-Smith-Ramdas) or Hoeffding-Bentkus bound on a mean of [0, 1]
      losses (``regret_bound``), at ``delta / (2K)`` plus its share of the
      freed budget. See
      :func:`~sklearn_ext.robust_optimization._bounds.frontier_bounds` for
      the proof that all bounds hold at once with probability ``1 - delta``:
      a wrong certification is a failure of an LTT-Bonferroni bound that the
      union bound counts anyway. Regret is not monotone in the radius, so it
      has no band; with 500 samples and 50 levels the band rarely beats
      Bonferroni and the freed budget goes to the regret.
    - ``"ltt-bonferroni"``: Learn-then-Test with Bonferroni, the textbook
      baseline: ``delta`` split over the two quantities and the ``K`` levels,
      each miscoverage bound the Clopper-Pearson bound at ``delta / (2K)``.

    Because the statement holds for all levels at once, it also holds at a
    level chosen from the frontier after looking at it (:meth:`select`): if
    the chosen level has :math:`\bar\alpha \le a`, its true miscoverage is
    at most ``a`` with probability at least ``1 - delta``.

    **Fixed-sequence selection.** With ``bound="fixed-sequence"``,
    :meth:`select` with ``max_miscoverage=a`` (or ``max_regret=r``) does not
    read the frontier's bounds but certifies levels for that target by
    Learn-then-Test with fixed-sequence testing (MAPIE's FWER control, the
    ``conformal`` extra): the nulls ``alpha(lambda_k) > a`` are tested with
    exact binomial p-values from the widest set down, and
    ``R(lambda_k) > r`` with Hoeffding-Bentkus p-values from radius 0 up,
    each sequence at the full ``delta`` (``delta / 2`` each when both targets
    are given), stopping at the first non-rejection. *Theorem* (Bauer 1991;
    Angelopoulos et al. 2021): for a target fixed before the calibration data
    are seen, with probability at least ``1 - delta`` every certified level
    meets it, so the chosen one does. Since miscoverage decreases with the
    radius, this certifies the same radius as a split-conformal set with a
    training-conditional ``(a, delta)`` guarantee would, and then picks the
    certified level of lowest regret bound, so it is never more conservative
    than that set fixed a priori. The guarantee is for the one target; to
    compare several targets after looking, use the frontier.

    The guarantee is marginal over ``x``, not conditional on it, and needs
    the grid, model and scale to be fixed before the calibration data are
    seen, which ``fit`` ensures.

    With ``problem=None`` there is no decision: the estimator is a
    (multi-output) regressor whose ``predict`` returns the point prediction of
    the wrapped estimator, ``predict_set`` returns calibrated sets, and the
    frontier holds only miscoverage (the regret entries are NaN and the whole
    ``delta`` goes to the miscoverage bounds).

    Parameters
    ----------
    estimator : regressor
        Predicts ``c`` from ``x``; must support 2-D targets when ``c`` has more
        than one coordinate (wrap it in
        :class:`~sklearn.multioutput.MultiOutputRegressor` otherwise). It is
        cloned and fitted on the training part only.

    problem : problem object, default=None
        The optimisation problem: an instance of
        :class:`~sklearn_ext.robust_optimization.ShortestPathProblem`,
        :class:`~sklearn_ext.robust_optimization.PortfolioProblem`,
        :class:`~sklearn_ext.robust_optimization.LinearProblem`, or any object
        with their ``solve``, ``solve_robust``, ``cost`` and ``cost_range``
        methods and ``n_params`` attribute. None makes the estimator a plain
        calibrated regressor.

    levels : int or array-like of shape (n_levels,), default=None
        The grid of radii :math:`\lambda`. An int ``K`` (None means 50) takes
        radius 0 and the ``1/(K-1), 2/(K-1), ..., 1`` quantiles of the
        cross-validated training scores (repeated radii are merged). An array
        gives the radii themselves: non-negative, finite and strictly
        increasing.

    norm : {"l2", "linf", "mahalanobis"}, default="l2"
        The norm of the scaled residual, i.e. the nonconformity score
        :math:`\|(c - \hat c(x)) / \sigma(x)\|_p`: a ball (an ellipsoid once
        scaled) or a box. ``"mahalanobis"``: the score
        :math:`\|L^{-1} (c - \hat c(x)) / \sigma(x)\|_2` with :math:`L L^\top`
        the Ledoit-Wolf estimate of the correlation of the scaled
        cross-validated training residuals (``shape_``), so the sets are
        ellipsoids aligned with the residuals' correlation,
        :math:`\{\hat c + \sigma \odot (L u) : \|u\|_2 \le \lambda\}`: when the
        coordinates' errors move together (a common factor in returns or
        travel times), these sets are much smaller than axis-aligned ones for
        the same coverage. (Named ``norm`` rather than ``score`` because
        ``score`` is the estimator's scoring method.)

    scale : {"constant", "none"} or regressor, default="constant"
        The per-coordinate scale :math:`\sigma(x)`. ``"constant"``: the root
        mean square of each coordinate's cross-validated training residual.
        ``"none"``: 1 for every coordinate. A regressor: a clone is fitted to
        the absolute cross-validated residuals (one output per coordinate),
        its predictions floored at 1% of each coordinate's residual RMS.

    calibration_size : float or int, default=0.3
        Fraction (float in (0, 1)) or number (int) of samples held out for
        calibration.

    cv : int or cross-validation generator, default=3
        Splits of the training part that give honest residuals for the scale
        and the default grid. Not used with ``scale="none"`` and an explicit
        array of ``levels``.

    delta : float, default=0.1
        The bounds hold simultaneously with probability at least
        ``1 - delta``.

    regret_bound : {"betting", "hoeffding_bentkus"}, default="betting"
        The upper bound on the mean regret. ``"betting"``: the
        Waudby-Smith-Ramdas betting bound, which adapts to the variance of the
        regret and is typically 2-3 times closer to the truth when the regret
        varies little; it reads the calibration samples in an order drawn from
        ``random_state``. ``"hoeffding_bentkus"``: depends on the mean only.

    bound : {"simultaneous", "fixed-sequence", "ltt-bonferroni"}, default="simultaneous"
        How the frontier is certified (see the guarantee above):
        ``"simultaneous"`` (a band on the miscoverage curve paid for by the
        levels that certifiably miss at most a fraction ``high = 0.95`` of
        the time, never looser
        than ``"ltt-bonferroni"`` at any level), ``"fixed-sequence"`` (the
        same frontier, and
        :meth:`select` certifies its targets by fixed-sequence testing at the
        full ``delta``; needs ``mapie``), or ``"ltt-bonferroni"`` (the
        Bonferroni split over every level, for comparison).

    regret_normalisation : {"total", "per-sample"}, default="total"
        The regret that :meth:`score` reports. ``"total"``: PyEPO's
        normalised regret, ``sum_i (f(c_i, w_i) - z*_i) / sum_i |z*_i|`` with
        ``z*_i`` the optimal cost under ``c_i`` (the predict-then-optimize
        literature's metric). ``"per-sample"``: the mean of each sample's
        regret divided by its cost range, the quantity the frontier bounds.

    prefit : bool, default=False
        ``estimator`` is already fitted and is used as it is (not cloned, not
        refitted). ``fit`` then uses its training split only for the scale
        and the default grid (residuals of the fitted model; no
        cross-validation), and the calibration split for the frontier; with
        ``scale="none"`` and an array of ``levels`` nothing needs a training
        split, so every sample calibrates (``calibration_size`` is ignored).
        The fitted model must not have seen the data passed to ``fit``.

    verbose : int, default=0
        With ``verbose >= 1``, ``fit`` and :meth:`calibrate` print the size
        of the calibration set and the level that the default selection
        picked.

    random_state : int, RandomState instance or None, default=None
        Seeds the training/calibration split and the order in which the
        betting bound reads the calibration samples.

    Attributes
    ----------
    estimator_ : regressor
        The clone of ``estimator`` fitted on the training part.

    scale_estimator_ : regressor or None
        The fitted scale regressor when ``scale`` is a regressor.

    shape_ : ndarray of shape (n_params, n_params) or None
        With ``norm="mahalanobis"``, the lower Cholesky factor ``L`` of the
        correlation of the scaled training residuals (Ledoit-Wolf); None
        otherwise.

    levels_ : ndarray of shape (n_levels,)
        The radii of the grid.

    frontier_ : dict of ndarray of shape (n_levels,)
        Per level: ``"radius"``, ``"miscoverage"`` and ``"regret"`` (empirical,
        on the calibration part), ``"miscoverage_upper"`` and
        ``"regret_upper"`` (the simultaneous bounds), and ``"pareto"``
        (boolean: the level is not dominated in the upper bounds; without a
        problem, in miscoverage bound and radius).

    level_ : int
        Index into ``frontier_`` of the level that ``predict`` uses, chosen by
        :meth:`select` (after ``fit`` and :meth:`calibrate`:
        ``select(tradeoff=1.0)``).

    radius_ : float
        The radius of that level.

    n_calibration_ : int
        Number of calibration samples behind the frontier.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, when ``X`` has string column
        names.

    See Also
    --------
    sklearn_ext.robust_optimization.ShortestPathProblem : The grid shortest path.

    Notes
    -----
    The model is not refitted on the calibration part: a model that has seen
    the calibration data would void the guarantee. Fitting costs one fit of
    ``estimator`` plus ``cv`` fits for the residuals, and ``n_levels`` robust
    decisions per calibration sample, batched into one call of
    ``problem.solve_robust``.

    ``sample_weight`` weighs the training part only (the fits of
    ``estimator``, the ``"constant"`` scale, and a scale regressor that
    accepts weights); the grid of default radii takes unweighted quantiles and
    the calibration part is never weighted. The guarantee rests on the
    calibration pairs being exchangeable with the test pair, which sample
    weights would break (weighted conformal prediction needs likelihood-ratio
    weights of the test point, not per-sample importance). So integer weights
    act as repeated rows for the model, but not for the frontier.

    References
    ----------
    .. [1] W. Zhou and S. Zhu, "Calibrating decision robustness via inverse
       conformal risk control", ICML 2026; arXiv:2510.07750.
    .. [2] A. N. Angelopoulos, S. Bates, E. J. Candes, M. I. Jordan and L. Lei,
       "Learn then test: calibrating predictive algorithms to achieve risk
       control", arXiv:2110.01052, 2021.
    .. [3] S. Bates, A. Angelopoulos, L. Lei, J. Malik and M. I. Jordan,
       "Distribution-free, risk-controlling prediction sets", Journal of the
       ACM 68(6), 2021.
    .. [4] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random
       variables by betting", Journal of the Royal Statistical Society B
       86(1), 2024.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ext.datasets import make_shortest_path
    >>> from sklearn_ext.robust_optimization import (
    ...     ConformalRobustOptimizer, ShortestPathProblem)
    >>> X, C = make_shortest_path(n_samples=600, degree=2, random_state=0)
    >>> model = ConformalRobustOptimizer(
    ...     Ridge(), ShortestPathProblem((5, 5)), levels=20, random_state=0
    ... ).fit(X, C)
    >>> model.select(max_miscoverage=0.2).predict(X[:2]).shape
    (2, 40)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "problem": [HasMethods(_PROBLEM_METHODS), None],
        "levels": [Interval(Integral, 2, None, closed="left"), "array-like", None],
        "norm": [StrOptions({"l2", "linf", "mahalanobis"})],
        "scale": [StrOptions({"constant", "none"}), HasMethods(["fit", "predict"])],
        "calibration_size": [
            Interval(RealNotInt, 0, 1, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "cv": ["cv_object"],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "regret_bound": [StrOptions({"betting", "hoeffding_bentkus"})],
        "bound": [StrOptions({"simultaneous", "fixed-sequence", "ltt-bonferroni"})],
        "regret_normalisation": [StrOptions({"total", "per-sample"})],
        "prefit": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    _paper = "Zhou & Zhu, ICML 2026 (arXiv:2510.07750)"
    _bench_name = "conformal_robust"

    def __init__(
        self,
        estimator,
        problem=None,
        *,
        levels=None,
        norm="l2",
        scale="constant",
        calibration_size=0.3,
        cv=3,
        delta=0.1,
        regret_bound="betting",
        bound="simultaneous",
        regret_normalisation="total",
        prefit=False,
        verbose=0,
        random_state=None,
    ):
        self.estimator = estimator
        self.problem = problem
        self.levels = levels
        self.norm = norm
        self.scale = scale
        self.calibration_size = calibration_size
        self.cv = cv
        self.delta = delta
        self.regret_bound = regret_bound
        self.bound = bound
        self.regret_normalisation = regret_normalisation
        self.prefit = prefit
        self.verbose = verbose
        self.random_state = random_state

    def _x_finiteness(self):
        """NaN in X passes when ``estimator`` (and a scale regressor) accept it.

        ``y`` (the realised parameters) must always be finite: it enters the
        scores, the regrets and the problem's solvers.
        """
        models = [self.estimator] + (
            [] if isinstance(self.scale, str) else [self.scale]
        )
        if all(get_tags(m).input_tags.allow_nan for m in models):
            return "allow-nan"
        return True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = get_tags(self.estimator).input_tags.allow_nan
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = self.problem is None
        return tags

    # ------------------------------------------------------------------ fit

    def _n_levels(self):
        if self.levels is None:
            return _DEFAULT_N_LEVELS
        if isinstance(self.levels, Integral):
            return int(self.levels)
        return len(self._explicit_levels())

    def _explicit_levels(self):
        levels = np.asarray(self.levels)
        if levels.ndim != 1 or levels.size == 0:
            raise ValueError(
                "levels must be an int or a non-empty 1-D array of radii; got an "
                f"array of shape {levels.shape}."
            )
        if not np.issubdtype(levels.dtype, np.number):
            raise ValueError(f"levels must be numeric radii; got dtype {levels.dtype}.")
        levels = levels.astype(float)
        if not np.all(np.isfinite(levels)):
            raise ValueError("levels must be finite radii; got NaN or inf.")
        if np.any(levels < 0):
            raise ValueError(
                f"levels must be non-negative radii; got min {levels.min():g}."
            )
        if np.any(np.diff(levels) <= 0):
            raise ValueError(
                "levels must be strictly increasing radii (the uncertainty sets "
                "are nested by radius)."
            )
        return levels

    def _check_y(self, y):
        """Return y as a 2-D float array checked against the problem's width."""
        y2 = y.reshape(-1, 1) if y.ndim == 1 else y
        if self.problem is not None and y2.shape[1] != self.problem.n_params:
            raise ValueError(
                f"y has {y2.shape[1]} column(s) but {self.problem!r} has "
                f"{self.problem.n_params} uncertain parameters: each row of y must "
                "be one realised parameter vector of the problem."
            )
        return y2.astype(float, copy=False)

    def _split_sizes(self, n_samples):
        if isinstance(self.calibration_size, Integral):
            n_cal = int(self.calibration_size)
        else:
            n_cal = int(np.ceil(self.calibration_size * n_samples))
        return n_samples - n_cal, n_cal

    def _check_calibration_size(self, n_cal):
        needed = min_calibration_size(
            self.delta, self._n_levels(), self.problem is not None
        )
        if n_cal < needed:
            raise ValueError(
                f"The calibration split has {n_cal} samples, too few for "
                f"delta={self.delta} over {self._n_levels()} levels: at least "
                f"{needed} calibration samples are needed for any bound to fall "
                "below 1/2. Use more data, a larger calibration_size, fewer "
                "levels or a larger delta."
            )

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the model and scale on a training split, calibrate on the rest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,) or (n_samples, n_params)
            Realised uncertain parameters, one row per context.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the *training* part only: the fits of
            ``estimator`` (the model and its cross-validated copies), the
            root mean square of the ``"constant"`` scale, and the fit of a
            scale regressor whose ``fit`` accepts ``sample_weight``. The
            calibration part is never weighted: the guarantee counts its
            samples as exchangeable draws, which weights would break, so the
            frontier is the same for any weights given the training fit. Raw
            weights are passed on (integer weights act as repeated training
            rows); ``estimator.fit`` must accept ``sample_weight``.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y = validate_data(
            self,
            X,
            y,
            multi_output=True,
            y_numeric=True,
            ensure_all_finite=self._x_finiteness(),
        )
        Y = self._check_y(y)
        sample_weight = check_sample_weight(sample_weight, X, normalize=False)
        if self.levels is not None and not isinstance(self.levels, Integral):
            explicit = self._explicit_levels()
        else:
            explicit = None
        n_samples = X.shape[0]
        self._y_ndim = y.ndim
        if self.prefit:
            check_is_fitted(self.estimator)
            if (
                explicit is not None
                and self.scale == "none"
                and self.norm != "mahalanobis"
            ):
                # Nothing needs a training split: every sample calibrates.
                self.estimator_ = self.estimator
                self.scale_estimator_ = None
                self.shape_ = None
                self.scale_ = np.ones(Y.shape[1])
                self.levels_ = explicit
                self._check_calibration_size(n_samples)
                return self._calibrate(X, Y)
        n_train, n_cal = self._split_sizes(n_samples)
        if n_samples < 2 or n_train < 1 or n_cal < 1:
            raise ValueError(
                f"n_samples={n_samples} with calibration_size="
                f"{self.calibration_size} leaves {n_train} training and {n_cal} "
                "calibration samples; both need at least one."
            )
        self._check_calibration_size(n_cal)
        rng = check_random_state(self.random_state)
        train, cal = train_test_split(
            np.arange(n_samples), test_size=n_cal, random_state=rng
        )
        w_train = self._training_weights(sample_weight, train)
        y_fit = y[train]

        need_cv = self.norm == "mahalanobis" or not (
            explicit is not None and self.scale == "none"
        )
        residual = None
        if self.prefit:
            # The fitted model is used as it is; its residuals on the training
            # split (which it has not seen) give the scale and the grid.
            self.estimator_ = self.estimator
            residual = Y[train] - self._as_2d(self.estimator_.predict(X[train]))
        else:
            if need_cv:
                residual = self._cv_residual(X[train], Y[train], y_fit, w_train)
            self.estimator_ = _fit_weighted(
                clone(self.estimator), X[train], y_fit, w_train
            )
        self._fit_scale(X[train], residual, Y.shape[1], w_train)

        if explicit is not None:
            self.levels_ = explicit
        else:
            scores = self._scores(residual, self._scale(X[train]))
            n_levels = self._n_levels()
            radii = np.quantile(scores, np.linspace(0.0, 1.0, n_levels)[1:])
            self.levels_ = np.unique(np.concatenate([[0.0], radii]))
        return self._calibrate(X[cal], Y[cal])

    def _training_weights(self, sample_weight, train):
        """The training part of ``sample_weight``, checked against the estimator."""
        if sample_weight is None:
            return None
        # With prefit the model is not refitted: the weights act on the scale.
        if not self.prefit and not has_fit_parameter(self.estimator, "sample_weight"):
            raise ValueError(
                f"sample_weight was given but {type(self.estimator).__name__}.fit "
                "does not accept sample_weight: the weights act on the fit of "
                "estimator on the training part."
            )
        w_train = sample_weight[train]
        if not w_train.sum() > 0:
            raise ValueError(
                "sample_weight is zero on every sample of the training part: "
                "the estimator has nothing to fit (the calibration part is never "
                "weighted)."
            )
        return w_train

    def _cv_residual(self, X, Y, y, sample_weight):
        """Residuals of ``Y`` from out-of-fold predictions on the training part.

        ``cross_val_predict`` by hand, so that the weights reach each fold's
        fit directly, with metadata routing enabled or not.
        """
        cv = check_cv(self.cv, y, classifier=False)
        prediction = np.zeros(Y.shape)
        seen = np.zeros(Y.shape[0], dtype=int)
        for tr, te in cv.split(X, y):
            w = None if sample_weight is None else sample_weight[tr]
            model = _fit_weighted(clone(self.estimator), X[tr], y[tr], w)
            prediction[te] = self._as_2d(model.predict(X[te]))
            seen[te] += 1
        if not np.all(seen == 1):
            raise ValueError(
                "cv must partition the training part (every sample in exactly "
                f"one test fold) to give one honest residual per sample; {cv!r} "
                f"puts {int((seen == 0).sum())} samples in no test fold and "
                f"{int((seen > 1).sum())} in several."
            )
        return Y - prediction

    def _fit_scale(self, X, residual, n_params, sample_weight=None):
        self.scale_estimator_ = None
        self.shape_ = None
        if self.scale == "none":
            self.scale_ = np.ones(n_params)
            self._fit_shape(X, residual)
            return
        rms = np.sqrt(np.average(residual**2, axis=0, weights=sample_weight))
        positive = rms[rms > 0]
        floor = positive.min() * 1e-6 if positive.size else 1.0
        self.scale_ = np.maximum(rms, floor)
        if not isinstance(self.scale, str):
            target = np.abs(residual)
            if not has_fit_parameter(self.scale, "sample_weight"):
                sample_weight = None
            self.scale_estimator_ = _fit_weighted(
                clone(self.scale),
                X,
                target[:, 0] if n_params == 1 else target,
                sample_weight,
            )
            self._scale_floor = 0.01 * self.scale_
        self._fit_shape(X, residual)

    def _fit_shape(self, X, residual):
        """``shape_``: Cholesky factor of the scaled residuals' correlation."""
        if self.norm != "mahalanobis":
            return
        from sklearn.covariance import LedoitWolf

        ratio = residual / self._scale(X)
        cov = LedoitWolf(assume_centered=True).fit(ratio).covariance_
        d = np.sqrt(np.diag(cov))
        corr = cov / d[:, None] / d[None, :]
        self.shape_ = np.linalg.cholesky(corr)

    def _as_2d(self, prediction):
        prediction = np.asarray(prediction, dtype=float)
        return prediction.reshape(prediction.shape[0], -1)

    def _scale(self, X):
        if self.scale_estimator_ is None:
            return np.broadcast_to(self.scale_, (X.shape[0], self.scale_.size))
        return np.maximum(
            self._as_2d(self.scale_estimator_.predict(X)), self._scale_floor
        )

    def _scores(self, residual, scale):
        ratio = residual / scale
        if self.norm == "mahalanobis":
            from scipy.linalg import solve_triangular

            ratio = solve_triangular(self.shape_, ratio.T, lower=True).T
        if self.norm in ("l2", "mahalanobis"):
            return np.sqrt(np.sum(ratio**2, axis=1))
        return np.max(np.abs(ratio), axis=1)

    def _set_shape(self):
        """``(norm, shape)`` of the problem's robust solve for this ``norm``."""
        if self.norm == "mahalanobis":
            return "l2", self.shape_
        return self.norm, None

    def _calibrate(self, X, Y):
        """Frontier on calibration data, then the default selection."""
        center = self._as_2d(self.estimator_.predict(X))
        scale = self._scale(X)
        scores = self._scores(Y - center, scale)
        radii = self.levels_
        miscovered = scores[:, None] > radii[None, :]
        if self.problem is not None:
            regret = robust_regret(
                self.problem, self.levels_, Y, center, scale, *self._set_shape()
            )
        else:
            regret = None
        return self._frontier_from(miscovered, regret, scores)

    def _frontier_from(self, miscovered, regret, scores):
        """Frontier and default selection from the calibration losses.

        ``miscovered`` (n, K) bool and ``regret`` (n, K) or None, one row per
        calibration sample, at the levels ``levels_``; ``scores`` (n,) the
        calibration scores.
        """
        radii = self.levels_
        self._calibration_scores = np.sort(scores)
        if regret is not None and self.regret_bound == "betting":
            # The betting bound reads the samples sequentially: in a random
            # order, so that a sorted calibration set cannot bias it.
            order = check_random_state(self.random_state).permutation(len(regret))
            regret = regret[order]
        correction = "bonferroni" if self.bound == "ltt-bonferroni" else "band"
        mis_upper, reg_upper = frontier_bounds(
            miscovered,
            regret,
            self.delta,
            correction=correction,
            regret_bound=self.regret_bound,
        )
        self._n_miscovered = miscovered.sum(axis=0)
        nan = np.full(radii.shape, np.nan)
        self.frontier_ = {
            "radius": radii.copy(),
            "miscoverage": miscovered.mean(axis=0),
            "miscoverage_upper": mis_upper,
            "regret": nan if regret is None else regret.mean(axis=0),
            "regret_upper": nan.copy() if reg_upper is None else reg_upper,
            "pareto": pareto_mask(mis_upper, radii if reg_upper is None else reg_upper),
        }
        self.n_calibration_ = miscovered.shape[0]
        self.select()
        self._selected_by_user = False
        self._warned_default = False
        if self.verbose:
            print(
                f"[ConformalRobustOptimizer] frontier of {radii.size} levels on "
                f"{self.n_calibration_} calibration samples (bound={self.bound!r}); "
                f"default level {self.level_} of {radii.size} (radius "
                f"{self.radius_:.4g}, select(tradeoff=1.0)): call select() "
                "with your target to choose."
            )
        return self

    def calibrate(self, X, y):
        """Recompute the frontier on new calibration data.

        The fitted model, scale and grid are kept; only the bounds change. Use
        it with data that neither the model nor the scale has seen, e.g. a
        fresh batch. The selection is reset to ``select(tradeoff=1.0)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,) or (n_samples, n_params)
            Realised uncertain parameters.

        Returns
        -------
        self : object
            The recalibrated estimator.
        """
        check_is_fitted(self)
        X, y = validate_data(
            self,
            X,
            y,
            reset=False,
            multi_output=True,
            y_numeric=True,
            ensure_all_finite=self._x_finiteness(),
        )
        Y = self._check_y(y)
        self._check_calibration_size(X.shape[0])
        return self._calibrate(X, Y)

    # ----------------------------------------------------------- selection

    def select(self, max_miscoverage=None, max_regret=None, tradeoff=None):
        """Choose the level that ``predict`` uses from the frontier.

        Among the levels whose upper bounds meet the constraints, pick the one
        minimising ``tradeoff * miscoverage_upper + regret_upper`` when
        ``tradeoff`` is given; otherwise the smallest ``regret_upper`` when
        ``max_miscoverage`` is given, the smallest ``miscoverage_upper`` when
        only ``max_regret`` is given, and ``tradeoff=1.0`` when nothing is.
        Ties go to the smaller radius. Without a problem the regret counts as
        0, so ``max_miscoverage`` picks the smallest radius that meets it.
        The guarantee of the class covers the chosen level. With
        ``bound="fixed-sequence"``, the levels that meet ``max_miscoverage``
        and ``max_regret`` are those certified by fixed-sequence testing for
        these targets (see the class's guarantee), not those whose frontier
        bounds meet them; and when ``max_miscoverage`` alone picks the
        smallest certified grid level, ``radius_`` is the smallest certified
        radius itself (the training-conditional split-conformal radius), which
        may lie below that level's radius: ``level_`` still indexes the
        frontier.

        Parameters
        ----------
        max_miscoverage : float in [0, 1], default=None
            Largest acceptable miscoverage upper bound.
        max_regret : float in [0, 1], default=None
            Largest acceptable regret upper bound (needs a problem).
        tradeoff : float >= 0, default=None
            Price of one unit of miscoverage in units of normalised regret.

        Returns
        -------
        self : object
            The estimator, with ``level_`` and ``radius_`` set.
        """
        check_is_fitted(self, "frontier_")
        for name, value, upper in (
            ("max_miscoverage", max_miscoverage, 1.0),
            ("max_regret", max_regret, 1.0),
            ("tradeoff", tradeoff, np.inf),
        ):
            if value is not None and not (
                isinstance(value, Real) and 0.0 <= value <= upper
            ):
                raise ValueError(
                    f"{name} must be a number in [0, {upper:g}] or None; got {value!r}."
                )
        if max_regret is not None and self.problem is None:
            raise ValueError(
                "max_regret needs a problem: without one there is no regret."
            )
        level = self._select(max_miscoverage, max_regret, tradeoff)
        if level is None:
            raise ValueError(self._infeasible_message(max_miscoverage, max_regret))
        self.level_ = level
        self.radius_ = float(self.frontier_["radius"][level])
        if (
            self.bound == "fixed-sequence"
            and max_miscoverage is not None
            and max_regret is None
            and tradeoff is None
        ):
            smallest = self._smallest_certified_radius(max_miscoverage)
            certified = self.frontier_["radius"] >= smallest
            if level == int(np.flatnonzero(certified)[0]):
                # The lowest regret bound sits at the edge of the certified
                # radii: go to the edge itself, between two grid levels.
                self.radius_ = smallest
        self._selected_by_user = True
        return self

    def _smallest_certified_radius(self, max_miscoverage):
        """Smallest radius that fixed-sequence testing certifies for the target.

        Miscoverage falls with the radius, so testing every radius from the
        widest down certifies exactly the radii with at most ``m`` calibration
        misses, ``m`` the largest count with
        ``P(Binomial(n, target) <= m) <= delta``: the radii from the
        ``(n - m)``-th smallest calibration score up (the training-conditional
        split-conformal radius).
        """
        scores, n = self._calibration_scores, self.n_calibration_
        ok = np.flatnonzero(binom.cdf(np.arange(n), n, max_miscoverage) <= self.delta)
        if not ok.size:
            return np.inf
        return float(scores[n - 1 - ok[-1]])

    def _select(self, max_miscoverage, max_regret, tradeoff):
        """The level chosen by :meth:`select`'s rule, or None (checked arguments)."""
        certified = None
        if self.bound == "fixed-sequence" and (
            max_miscoverage is not None or max_regret is not None
        ):
            certified = self._certified(max_miscoverage, max_regret)
        return select_level(
            self.frontier_,
            self.problem is not None,
            max_miscoverage,
            max_regret,
            tradeoff,
            certified=certified,
        )

    def _certified(self, max_miscoverage, max_regret):
        """Levels certified for the targets by fixed-sequence testing."""
        n, K = self.n_calibration_, self.frontier_["radius"].size
        share = self.delta
        if max_miscoverage is not None and max_regret is not None:
            share = self.delta / 2
        certified = np.ones(K, dtype=bool)
        if max_miscoverage is not None:
            # Miscoverage falls with the radius: the widest set first.
            order = np.arange(K)[::-1]
            p = miscoverage_p_values(self._n_miscovered, n, max_miscoverage)
            keep = np.zeros(K, dtype=bool)
            keep[order[fixed_sequence_levels(p[order], share)]] = True
            certified &= keep
        if max_regret is not None:
            # Regret grows with conservativeness: the nominal policy first.
            p = regret_p_values(self.frontier_["regret"], n, max_regret)
            keep = np.zeros(K, dtype=bool)
            keep[fixed_sequence_levels(p, share)] = True
            certified &= keep
        return certified

    def _infeasible_message(self, max_miscoverage, max_regret):
        front = self.frontier_
        parts = []
        if max_miscoverage is not None:
            parts.append(
                f"miscoverage upper bound <= {max_miscoverage:g} (smallest bound: "
                f"{front['miscoverage_upper'].min():.4g})"
            )
        if max_regret is not None:
            parts.append(
                f"regret upper bound <= {max_regret:g} (smallest bound: "
                f"{front['regret_upper'].min():.4g})"
            )
        how = (
            "is certified by fixed-sequence testing for "
            if self.bound == "fixed-sequence"
            else "has "
        )
        return (
            "No level of the grid " + how + " and ".join(parts) + f" with "
            f"{self.n_calibration_} calibration samples and delta={self.delta} "
            f"(bound={self.bound!r}). Loosen the target, add calibration data "
            "or raise delta."
        )

    # ------------------------------------------------------------ predict

    def _validated_center_scale(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, ensure_all_finite=self._x_finiteness())
        return self._as_2d(self.estimator_.predict(X)), self._scale(X)

    def predict(self, X):
        """Robust decisions at the selected level (the prediction without a problem).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.

        Returns
        -------
        decisions : ndarray of shape (n_samples, n_decisions)
            With a problem, the decision minimising the worst-case cost over the
            uncertainty set of radius ``radius_``. Without one, the point
            prediction of ``estimator_`` (1-D when ``y`` was 1-D).
        """
        center, scale = self._validated_center_scale(X)
        if self.problem is None:
            return center[:, 0] if self._y_ndim == 1 else center
        if not getattr(self, "_selected_by_user", True) and not getattr(
            self, "_warned_default", False
        ):
            self._warned_default = True
            warn(
                f"ConformalRobustOptimizer: predicting at the default level "
                f"{self.level_} of {self.frontier_['radius'].size} (radius "
                f"{self.radius_:.4g}, miscoverage bound "
                f"{self.frontier_['miscoverage_upper'][self.level_]:.3g}, "
                "chosen by select(tradeoff=1.0)). Call select(max_miscoverage=...) "
                "or select(tradeoff=...) to choose the level for your cost-risk "
                "preference.",
                UserWarning,
                stacklevel=2,
            )
        return self.problem.solve_robust(
            center, self.radius_ * scale, *self._set_shape()
        )

    def predict_set(self, X, max_miscoverage=None):
        """The uncertainty sets at the selected level, or for a target miscoverage.

        The set of a context is ``{center + half_widths * u : ||u|| <= 1}`` in
        the ``norm``: a box with these half-widths for ``"linf"``, an
        axis-aligned ellipsoid with these semi-axes for ``"l2"``, and
        ``{center + half_widths * (shape_ @ u) : ||u||_2 <= 1}`` for
        ``"mahalanobis"``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.

        max_miscoverage : float in (0, 1), default=None
            A shortcut for a coverage target, as MAPIE's ``confidence_level``
            (``1 - max_miscoverage``): the sets of the smallest radius whose
            miscoverage is certified to be at most this (by the frontier's
            bound, or by fixed-sequence testing with
            ``bound="fixed-sequence"``), without changing the level that
            :meth:`predict` uses. None uses ``radius_``.

        Returns
        -------
        center : ndarray of shape (n_samples, n_params)
            The point predictions.
        half_widths : ndarray of shape (n_samples, n_params)
            ``radius_`` times the scale of each coordinate.
        """
        center, scale = self._validated_center_scale(X)
        radius = self.radius_
        if max_miscoverage is not None:
            if not (isinstance(max_miscoverage, Real) and 0 < max_miscoverage < 1):
                raise ValueError(
                    "max_miscoverage must be a number in (0, 1) or None; got "
                    f"{max_miscoverage!r}."
                )
            radius = self._tightest_radius(max_miscoverage)
        return center, radius * np.array(scale)

    def _tightest_radius(self, max_miscoverage):
        """Smallest radius certified for the target (ValueError if none)."""
        if self.bound == "fixed-sequence":
            radius = self._smallest_certified_radius(max_miscoverage)
        else:
            ok = np.flatnonzero(self.frontier_["miscoverage_upper"] <= max_miscoverage)
            radius = self.frontier_["radius"][ok[0]] if ok.size else np.inf
        if not np.isfinite(radius):
            raise ValueError(self._infeasible_message(max_miscoverage, None))
        return float(radius)

    def score(self, X, y):
        """Negative normalised regret of the decisions (R^2 without a problem).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,) or (n_samples, n_params)
            Realised parameters.

        Returns
        -------
        score : float
            Minus the regret of the decisions at the selected level, so that
            higher is better: PyEPO's ``sum(regret) / sum(|z*|)`` with
            ``regret_normalisation="total"``, the mean of the per-sample
            regrets divided by the cost range with ``"per-sample"``. The
            coefficient of determination of the point prediction without a
            problem.
        """
        if self.problem is None:
            return r2_score(y, self.predict(X))
        decisions = self.predict(X)
        Y = self._check_y(
            check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        )
        if self.regret_normalisation == "per-sample":
            return -float(np.mean(normalised_regret(self.problem, Y, decisions)))
        best = self.problem.cost(Y, self.problem.solve(Y))
        excess = float(np.sum(self.problem.cost(Y, decisions) - best))
        total = float(np.sum(np.abs(best)))
        return -(excess / total if total > 0 else 0.0)

    # --------------------------------------------------- harness contract

    _expected_failed_checks: dict = {
        "check_sample_weight_equivalence_on_dense_data": (
            "weights act on the training part only; the calibration part counts "
            "samples (weights would break its exchangeability), so weight 2 and a "
            "duplicated row give different calibration splits and frontiers"
        ),
    }

    @classmethod
    def _get_test_params(cls):
        from sklearn.linear_model import Ridge

        return {"estimator": Ridge(alpha=1e-3), "levels": 4, "delta": 0.5}
