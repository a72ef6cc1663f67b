"""High-confidence performance guarantees for a multi-task policy on new tasks."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_array

from sklearn_ext.rl._base import NOT_A_DATA_ESTIMATOR, rl_tags
from sklearn_ext.rl._bounds import TASK_BOUNDS, task_lower_bounds
from sklearn_ext.rl._order_statistics import compose
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)

__all__ = ["MultiTaskGuarantee"]


class MultiTaskGuarantee(BaseEstimator):
    r"""Certify how well a policy will do on tasks it has not seen.

    Given the episode returns of one policy on ``n`` tasks drawn at random from
    a task distribution, ``fit`` computes a curve of pairs :math:`(g, p)`: with
    confidence at least ``1 - delta``, a new task drawn from the same
    (unknown) distribution has an expected return of at least :math:`g` with
    probability at least :math:`p`. The curve holds at all its points at once,
    so any number of points may be read off it (``guarantee``,
    ``probability``) without losing confidence.

    It composes two finite-sample steps (Schnitzer et al., 2026):

    1. **Per task**, a lower confidence bound :math:`L_i` on the task's
       expected return :math:`J_i` from its episodes, at level ``task_delta``
       (``task_bound``).
    2. **Across tasks**, a distribution-free bound on the probability that a
       new task's expected return exceeds a level, from the order statistics
       of the :math:`n` sampled tasks. The per-task bounds are allowed to
       fail: at most :math:`v` of them do, except with the binomial
       probability :math:`P(\mathrm{Bin}(n, \beta) > v)`, so each bound can
       use a moderate :math:`\beta` instead of a Bonferroni
       :math:`\delta / n`.

    Allowing :math:`v` failures gives up the top :math:`v` ranks, i.e. the
    highest probabilities. By default (``composition="hybrid"``, an extension
    of the paper's composition) a fifth of ``delta`` buys a second set of
    per-task bounds at :math:`0.2\delta / n` that must all hold; they certify
    the top ranks, and the curve is the upper envelope of both.

    **Theorem (what the code certifies).** Assume (A1) the tasks
    :math:`\tau_1, \dots, \tau_n` are i.i.d. draws from a distribution
    :math:`T`; (A2) given the tasks, the returns of task :math:`i` are i.i.d.
    with mean :math:`J_i = J(\tau_i)`, independent across tasks, their number
    :math:`m_i` fixed before seeing them (no adaptive stopping), every return
    in ``return_range = [a, b]`` (for ``"clopper-pearson"``: only :math:`a`
    or :math:`b`, a failure or a success); (A3) the new task
    :math:`\tau \sim T` is independent of them. Let :math:`L_{(1)} \le \dots
    \le L_{(n)}` be the sorted per-task bounds, each with
    :math:`P(L_i \le J_i \mid \tau_i) \ge 1 - \beta`, and let :math:`v` and the
    non-decreasing :math:`c_1, \dots, c_n` be fixed from :math:`(n, \beta,
    \delta)` alone with

    .. math::

        \bigl(1 - P(\mathrm{Bin}(n, \beta) > v)\bigr)
        \; P\bigl(U_{(j)} \le c_j \ \forall j\bigr) \;\ge\; 1 - \delta,

    :math:`U_{(j)}` the order statistics of :math:`n` i.i.d. uniforms. Then,
    with probability at least :math:`1 - \delta` over tasks and episodes,
    for every :math:`k = 1, \dots, n - v` at once,

    .. math::

        P_{\tau \sim T}\bigl(J(\tau) \ge L_{(k)}\bigr) \;\ge\; 1 - c_{k+v}.

    *Proof sketch.* Write :math:`J_i = Q(U_i)` with :math:`Q` the quantile
    function of :math:`J(\tau)` and :math:`U_i` i.i.d. uniform (the quantile
    coupling, which also covers atoms). Given the tasks the bound failures
    are independent with probability at most :math:`\beta`, so their number
    :math:`V` exceeds :math:`v` with probability at most
    :math:`P(\mathrm{Bin}(n, \beta) > v)` whatever the tasks; the product
    form follows by conditioning on the tasks. On both events, at least
    :math:`n - k + 1 - v` tasks have :math:`J_i \ge L_{(k)}`, so
    :math:`J_{(k+v)} \ge L_{(k)}` and
    :math:`P(J \ge L_{(k)}) \ge P(U \ge U_{(k+v)}) = 1 - U_{(k+v)} \ge 1 -
    c_{k+v}`.

    With ``task_level="order-statistics"`` the :math:`c_j` are the
    :math:`1 - \alpha` quantiles of :math:`U_{(j)} \sim \mathrm{Beta}(j, n -
    j + 1)`, one :math:`\alpha` for all :math:`j`, calibrated so that the
    simultaneous probability is exact (computed by a recursion over the
    binomial counts, not simulated); with ``"dkw"`` they are
    :math:`c_j = (j - 1)/n + \varepsilon`, Massart's one-sided
    Dvoretzky-Kiefer-Wolfowitz band. :math:`v` maximises the total certified
    probability :math:`\sum_k (1 - c_{k+v})`, a criterion free of the data.
    The hybrid composition adds bounds :math:`L'_i` at level :math:`\beta'`
    that must all hold; with probability :math:`(1 - n\beta' -
    P(\mathrm{Bin}(n, \beta) > v))\,P(U_{(j)} \le c_j \ \forall j) \ge 1
    - \delta` both :math:`P(J \ge L_{(k)}) \ge 1 - c_{k+v}` and
    :math:`P(J \ge L'_{(k)}) \ge 1 - c_k` hold for every :math:`k` (the same
    proof with :math:`v = 0`, on the same band event).

    Parameters
    ----------
    task_bound : str, default="clopper-pearson"
        The per-task lower confidence bound, one of:

        - ``"clopper-pearson"``: exact binomial bound, for success/failure
          returns (each return is one end of ``return_range``);
        - ``"hoeffding"``: mean minus :math:`(b - a)\sqrt{\ln(1/\beta)/(2m)}`;
        - ``"empirical-bernstein"``: Maurer and Pontil's bound (2009,
          Theorem 4), tighter when the returns vary little (needs two
          episodes per task);
        - ``"dkw"``: the smallest mean of a distribution inside the one-sided
          DKW band of the task's empirical return distribution.

    delta : float, default=0.01
        One minus the confidence of the whole curve, in (0, 1).

    task_delta : float in (0, 0.5] or "auto", default="auto"
        Failure probability :math:`\beta` of each per-task bound that may
        fail. At most 1/2: Massart's constant in the one-sided DKW bound
        (``task_bound="dkw"``) holds only there, and a per-task bound that
        fails more often than not certifies nothing. ``"auto"`` is
        ``1e-3``, and ``delta / (2 n)`` with ``composition="bonferroni"``
        (where every bound must hold). A larger
        :math:`\beta` tightens every such bound but allows more failures
        :math:`v`, whose ranks are lost at the top of the curve (with
        ``"binomial"`` alone, 200 tasks and the default, nothing above
        :math:`p \approx 0.92` is certified; ``"hybrid"`` covers them).

    return_range : tuple (low, high), default=(0.0, 1.0)
        Known bounds of one episode's return; every return must lie inside.

    composition : {"hybrid", "binomial", "bonferroni"}, default="hybrid"
        How the per-task failures are accounted for: ``"binomial"`` lets
        :math:`v` of them fail (the paper's composition); ``"bonferroni"``
        requires all of them to hold (:math:`v = 0`, :math:`n \beta <
        \delta`), the classical union bound; ``"hybrid"`` combines both, the
        Bonferroni bounds at :math:`0.2\delta / n` certifying the top ranks.
        The other two are kept as ablations and baselines.

    task_level : {"order-statistics", "dkw"}, default="order-statistics"
        The task-level band: the exact equal-level order-statistics band, or
        the DKW band (ablation and baseline; Massart's constant needs
        ``delta <= 0.5``, checked in ``fit``).

    Attributes
    ----------
    lower_bounds_ : ndarray of shape (n_tasks,)
        Per-task lower confidence bounds at ``task_delta_``, in the order of
        the rows.

    means_ : ndarray of shape (n_tasks,)
        Per-task mean returns.

    n_episodes_ : ndarray of shape (n_tasks,)
        Episodes per task (non-NaN entries of each row).

    task_delta_ : float or None
        :math:`\beta` of the bounds that may fail (None with
        ``"bonferroni"``).

    n_failures_allowed_ : int
        :math:`v`, the number of per-task bounds allowed to fail.

    curve_ : ndarray of shape (n_points, 2)
        The certified pairs ``(g, p)``, ``g`` increasing and ``p``
        decreasing; :meth:`probability` reads it as a step function.

    n_tasks_ : int
        Number of tasks (rows) seen in ``fit``.

    See Also
    --------
    sklearn_ext.rl.collect_returns : Returns of a policy on sampled tasks.

    Notes
    -----
    The band is computed once per number of tasks and level, then cached:
    about 1 s for 200 tasks, 3 s for 500 and 20 s for 1000 on one core; the
    rest of ``fit`` takes milliseconds.

    References
    ----------
    .. [1] Y. Schnitzer, M. Jackermeier, A. Abate and D. Parker,
       "Probabilistic Performance Guarantees for Multi-Task Reinforcement
       Learning", ICML 2026, arXiv:2602.02098.
    .. [2] A. Maurer and M. Pontil, "Empirical Bernstein Bounds and Sample
       Variance Penalization", COLT 2009.
    .. [3] P. Massart, "The tight constant in the Dvoretzky-Kiefer-Wolfowitz
       inequality", Annals of Probability 18(3), 1990.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import MultiTaskGuarantee
    >>> rng = np.random.default_rng(0)
    >>> success = rng.uniform(0.7, 1.0, size=200)       # one rate per task
    >>> returns = (rng.random((200, 100)) < success[:, None]).astype(float)
    >>> cert = MultiTaskGuarantee(delta=0.01).fit(returns)
    >>> g = cert.guarantee(0.9)   # level met by 90% of new tasks
    >>> round(g, 2)
    0.52
    >>> bool(np.mean(success >= g) >= 0.9)   # the truth, known here
    True
    >>> cert.probability(g) >= 0.9
    True
    """

    _parameter_constraints = {
        "task_bound": [StrOptions(set(TASK_BOUNDS))],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "task_delta": [
            Interval(Real, 0, 0.5, closed="right"),
            StrOptions({"auto"}),
        ],
        "return_range": [tuple, list],
        "composition": [StrOptions({"hybrid", "binomial", "bonferroni"})],
        "task_level": [StrOptions({"order-statistics", "dkw"})],
    }

    _paper = "Schnitzer et al., ICML 2026 (arXiv:2602.02098)"
    _bench_name = "rl_guarantee"
    _not_a_data_estimator = NOT_A_DATA_ESTIMATOR

    def __init__(
        self,
        *,
        task_bound="clopper-pearson",
        delta=0.01,
        task_delta="auto",
        return_range=(0.0, 1.0),
        composition="hybrid",
        task_level="order-statistics",
    ):
        self.task_bound = task_bound
        self.delta = delta
        self.task_delta = task_delta
        self.return_range = return_range
        self.composition = composition
        self.task_level = task_level

    def __sklearn_tags__(self):
        return rl_tags(super().__sklearn_tags__(), allow_nan=True)

    @classmethod
    def _get_test_params(cls):
        return [{}, {"task_bound": "empirical-bernstein", "task_level": "dkw"}]

    def _check_range(self):
        rr = self.return_range
        if len(rr) != 2 or not all(np.isfinite(np.asarray(rr, dtype=float))):
            raise ValueError(
                f"return_range must be two finite numbers (low, high); got {rr!r}."
            )
        low, high = float(rr[0]), float(rr[1])
        if not low < high:
            raise ValueError(f"return_range must have low < high; got {rr!r}.")
        return low, high

    def _check_returns(self, returns, low, high):
        returns = check_array(
            returns, ensure_all_finite="allow-nan", ensure_min_samples=1, copy=False
        )
        returns = np.asarray(returns, dtype=float)
        n_tasks = returns.shape[0]
        if n_tasks < 2:
            raise ValueError(
                f"returns has {n_tasks} task (row); a guarantee on new tasks "
                "needs at least two sampled tasks."
            )
        counts = np.sum(~np.isnan(returns), axis=1)
        minimum = 2 if self.task_bound == "empirical-bernstein" else 1
        short = np.flatnonzero(counts < minimum)
        if short.size:
            raise ValueError(
                f"{short.size} task(s) (rows {short[:5].tolist()}...) have fewer "
                f"than {minimum} episode(s) (non-NaN returns); "
                f"task_bound={self.task_bound!r} needs at least {minimum}."
            )
        values = returns[~np.isnan(returns)]
        outside = (values < low) | (values > high)
        if outside.any():
            raise ValueError(
                f"{outside.sum()} return(s) lie outside return_range=({low}, "
                f"{high}) (min {values.min():.4g}, max {values.max():.4g}); the "
                "bounds hold only for returns inside a range known in advance."
            )
        if self.task_bound == "clopper-pearson":
            inner = (values != low) & (values != high)
            if inner.any():
                raise ValueError(
                    f"task_bound='clopper-pearson' needs success/failure returns "
                    f"(each equal to {low} or {high}); {inner.sum()} return(s) "
                    "are neither. Use 'empirical-bernstein', 'hoeffding' or "
                    "'dkw' for other returns."
                )
        return returns, counts

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, returns, y=None):
        """Compute the per-task bounds and the certified curve.

        Parameters
        ----------
        returns : array-like of shape (n_tasks, n_episodes)
            Episode returns, one row per sampled task; NaN pads rows with
            fewer episodes.

        y : None
            Ignored.

        Returns
        -------
        self : MultiTaskGuarantee
            The fitted guarantee.
        """
        low, high = self._check_range()
        if self.task_level == "dkw" and self.delta > 0.5:
            raise ValueError(
                f"task_level='dkw' needs delta <= 0.5 (Massart's one-sided "
                f"DKW constant holds only there); got delta={self.delta!r}."
            )
        returns, counts = self._check_returns(returns, low, high)
        n = returns.shape[0]
        delta = float(self.delta)
        auto = self.task_delta == "auto"
        beta = (
            None
            if self.composition == "bonferroni"
            else (1e-3 if auto else float(self.task_delta))
        )
        if self.composition == "bonferroni":
            beta_all = delta / (2 * n) if auto else float(self.task_delta)
            if n * beta_all >= delta:
                raise ValueError(
                    f"composition='bonferroni' needs n_tasks * task_delta < delta; "
                    f"got {n} * {beta_all:g} >= {delta:g}."
                )
        elif self.composition == "hybrid":
            beta_all = _HYBRID_SHARE * delta / n
        else:
            beta_all = None
        reserved = 0.0 if beta_all is None else n * beta_all
        v, p = compose(n, beta or 0.0, delta, self.task_level, reserved)

        def bounds(level):
            return task_lower_bounds(
                returns, bound=self.task_bound, delta=level, return_range=(low, high)
            )

        curves = []
        if beta is not None:
            lower = bounds(beta)
            curves.append((np.sort(lower)[: n - v], p[v:]))
        if beta_all is not None:
            every = bounds(beta_all)
            curves.append((np.sort(every), p))
        self.n_tasks_ = n
        self.n_episodes_ = counts
        self.means_ = np.nanmean(returns, axis=1)
        self.task_delta_ = beta
        self.n_failures_allowed_ = v
        self.lower_bounds_ = lower if beta is not None else every
        self.curve_ = _upper_envelope(curves)
        return self

    def probability(self, g):
        """Certified probability that a new task's expected return is >= ``g``.

        Parameters
        ----------
        g : float or array-like
            Return level(s).

        Returns
        -------
        p : float or ndarray
            1 at or below the lower end of ``return_range`` (every return is
            at least that), 0 above the largest certified level.
        """
        check_is_fitted(self)
        g_arr = np.asarray(g, dtype=float)
        levels, probs = self.curve_[:, 0], self.curve_[:, 1]
        idx = np.searchsorted(levels, g_arr, side="left")
        padded = np.append(probs, 0.0)
        p = padded[idx]
        p = np.where(g_arr <= self._check_range()[0], 1.0, p)
        return float(p) if p.ndim == 0 else p

    def guarantee(self, p):
        """Largest level met by a new task with probability at least ``p``.

        Parameters
        ----------
        p : float or array-like
            Probability (or probabilities) in [0, 1].

        Returns
        -------
        g : float or ndarray
            The lower end of ``return_range`` (a trivial guarantee) where no
            certified point reaches ``p``.
        """
        check_is_fitted(self)
        p_arr = np.asarray(p, dtype=float)
        if np.any((p_arr < 0) | (p_arr > 1)) or np.any(np.isnan(p_arr)):
            raise ValueError(f"p must lie in [0, 1]; got {p!r}.")
        levels, probs = self.curve_[:, 0], self.curve_[:, 1]
        # probs is decreasing: count the points with probs >= p.
        n_ok = np.searchsorted(-probs, -p_arr, side="right")
        low = self._check_range()[0]
        padded = np.concatenate([[low], levels])
        g = np.maximum(padded[n_ok], low)
        return float(g) if g.ndim == 0 else g


# Share of delta that the hybrid composition spends on bounds that must all
# hold (they certify the top ranks, which the allowed failures give up).
_HYBRID_SHARE = 0.2


def _upper_envelope(curves):
    """The certified points of the pointwise maximum of step curves.

    Each curve is ``(levels, probabilities)``, levels non-decreasing and
    probabilities non-increasing, read as ``p(g) = p`` of the first level
    ``>= g``. Returns the points ``(g, p)`` of ``max_c p_c(g)`` that no other
    point dominates (a larger level with at least the same probability), by
    increasing ``g``.
    """
    g = np.concatenate([c[0] for c in curves])
    p = np.concatenate([c[1] for c in curves])
    order = np.lexsort((-p, -g))  # by level descending, then probability
    g, p = g[order], p[order]
    best_after = np.maximum.accumulate(np.concatenate([[-np.inf], p[:-1]]))
    keep = p > best_after
    return np.column_stack([g[keep], p[keep]])[::-1]
