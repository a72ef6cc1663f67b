"""LAMPS: Pareto model selection with landmark evaluations and a learned budget
allocation policy."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import time
from functools import lru_cache
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    clone,
    is_classifier,
    is_regressor,
)
from sklearn.metrics import get_scorer, log_loss
from sklearn.model_selection import check_cv
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if

from sklearn_ext.model_selection._allocation import (
    MetaAllocationPolicy,
    allocate,
    successive_halving,
)
from sklearn_ext.model_selection._landmarks import (
    check_landmarks,
    comparable,
    normalised_hypervolume,
)
from sklearn_ext.model_selection._pareto import pareto_mask
from sklearn_ext.utils._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)

__all__ = ["ParetoModelSelector"]

#: Objective name -> kind ("error": compared as is; "cost": a time, in log10).
#: A name of ``scoring`` (or a scikit-learn scorer name) is of kind "error",
#: its loss 1 - score.
OBJECTIVES = {
    "error": "error",
    "log_loss": "error",
    "fit_time": "cost",
    "predict_time": "cost",
}
#: The objectives whose change from a landmark to the full set the meta-learned
#: policy predicts; the others are taken at their last measured value.
LEARNED = ("error", "fit_time")


def _kind(name):
    return OBJECTIVES.get(name, "error")


def _scorers(scoring):
    """``scoring`` as an ordered dict of name -> scorer ({} for None)."""
    if scoring is None:
        return {}
    if isinstance(scoring, str):
        return {scoring: get_scorer(scoring)}
    if callable(scoring):
        return {"score": scoring}
    if isinstance(scoring, dict):
        items = list(scoring.items())
    else:
        items = [(s, s) for s in scoring]
    if not items:
        raise ValueError("scoring must name at least one scorer; got an empty one.")
    out = {}
    for name, sc in items:
        if not isinstance(name, str):
            raise ValueError(f"scorer names must be strings; got {name!r}.")
        if name in OBJECTIVES:
            raise ValueError(
                f"scorer name {name!r} is also a built-in objective; rename it."
            )
        if name in out:
            raise ValueError(f"scoring names {name!r} twice.")
        out[name] = get_scorer(sc) if isinstance(sc, str) else sc
        if not callable(out[name]):
            raise ValueError(f"scorer {name!r} is not callable; got {sc!r}.")
    return out


#: OpenML ids of the LCDB data sets that scikit-learn ships (28: optdigits,
#: the source of ``load_digits``; 61: iris). The shipped policy never learns
#: from them, so that examples, demos and benchmarks on scikit-learn's data
#: evaluate it on data it was not trained on. (Breast cancer, OpenML 1510,
#: and wine, 187, are not in LCDB.)
SKLEARN_SOURCES = (28, 61)


def demo_split(lcdb):
    """Rows of LCDB that the CLI demo learns from and that it evaluates on.

    A permutation of the data sets by ``numpy.random.default_rng(0)``: the
    first 70% learn (without :data:`SKLEARN_SOURCES`), the rest are held out.
    The shipped policy's quantile and threshold were chosen on the learning
    rows only (``benchmarks/bench_lamps.py --part policy``).
    """
    order = np.random.default_rng(0).permutation(len(lcdb.final_error))
    cut = int(0.7 * len(order))
    ids = np.asarray(lcdb.openmlid)
    train = [int(d) for d in order[:cut] if ids[d] not in SKLEARN_SOURCES]
    return train, [int(d) for d in order[cut:]]


#: The optimism quantile and stopping threshold of the shipped policy: the
#: pair the policy search of ``MetaAllocationPolicy(random_state=0)`` picks on
#: the demo's meta-training split (:func:`demo_split`), recorded in
#: ``benchmarks/results/lamps_policy.md`` (``bench_lamps.py --part policy``).
DEFAULT_PAIR = (0.05, 0.02)


@lru_cache(maxsize=1)
def default_meta_policy():
    """The policy the selector uses by default, fitted once per process.

    What it was trained on: the LCDB learning curves shipped with the package
    (20 scikit-learn classifiers on OpenML data sets), all of them except the
    sources of scikit-learn's own classification data sets
    (:data:`SKLEARN_SOURCES`: optdigits for ``load_digits`` and iris), so that
    scikit-learn's data are held out. Its optimism quantile and stopping
    threshold (:data:`DEFAULT_PAIR`) were chosen by the policy search on the
    CLI demo's meta-training split only, so the demo's held-out data sets did
    not choose them either.
    """
    from sklearn_ext.datasets import load_lcdb_curves

    lcdb = load_lcdb_curves()
    rows = np.flatnonzero(~np.isin(np.asarray(lcdb.openmlid), SKLEARN_SOURCES))
    q, t = DEFAULT_PAIR
    policy = MetaAllocationPolicy(quantiles=(q,), thresholds=(t,), random_state=0)
    return policy.fit(lcdb, datasets=rows)


def _best_has(attr):
    """The method exists when the chosen candidate has it (before fitting:
    when every candidate has it)."""

    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, attr)
        return all(hasattr(c, attr) for c in self.candidates)

    return check


class _LiveProblem:
    """Evaluations of live candidates: cross-validated fits on landmark rows.

    ``scorers`` maps names to scorers (an empty dict: the estimator's own
    ``score``, named "score"); the first is the primary one, whose loss
    ``1 - score`` is the objective "error".
    """

    def __init__(self, selector, X, y, splits, orders, rows, objectives, scorers):
        self.selector, self.X, self.y = selector, X, y
        self.splits, self.orders, self.rows = splits, orders, rows
        self.names = objectives
        self.scorers = scorers
        self.kinds = tuple(_kind(o) for o in objectives)
        self.n_candidates = len(selector.candidates)
        self.n_levels = rows.shape[1]
        self.history = []
        self.records = []
        self.reset()

    def reset(self):
        self.spent, self.evaluated = 0.0, {}
        return self

    def _one_fold(self, estimator, fold, level):
        test = self.splits[fold][1]
        idx = self.orders[fold][: self.rows[fold, level]]
        est = clone(estimator)
        start = time.perf_counter()
        est.fit(self.X[idx], self.y[idx])
        fit_time = time.perf_counter() - start
        start = time.perf_counter()
        X_test, y_test = self.X[test], self.y[test]
        if self.scorers:
            scores = {
                n: float(sc(est, X_test, y_test)) for n, sc in self.scorers.items()
            }
        else:
            scores = {"score": float(est.score(X_test, y_test))}
        primary = next(iter(scores.values()))
        out = {}
        for name in self.names:
            if name == "error":
                out[name] = 1.0 - primary
            elif name == "log_loss":
                proba = est.predict_proba(X_test)
                out[name] = log_loss(y_test, proba, labels=est.classes_)
            elif name == "predict_time":
                t = time.perf_counter()
                est.predict(X_test)
                out[name] = time.perf_counter() - t
            elif name in scores:
                out[name] = 1.0 - scores[name]
        out["fit_time"] = fit_time
        return out, scores, fit_time, time.perf_counter() - start

    def evaluate(self, candidate, level):
        key = (int(candidate), int(level))
        if key in self.evaluated:
            return self.evaluated[key]
        estimator = self.selector.candidates[candidate]
        runs = Parallel(n_jobs=self.selector.n_jobs)(
            delayed(self._one_fold)(estimator, f, level)
            for f in range(len(self.splits))
        )
        obj = np.array([np.mean([r[0][n] for r in runs]) for n in self.names])
        wall = float(sum(r[2] + r[3] for r in runs))
        cost = float(np.mean([r[2] for r in runs]))
        self.spent += cost
        self.evaluated[key] = (obj, cost)
        top = self.n_levels - 1
        self.history.append(
            {
                "candidate": key[0],
                "level": "full" if level == top else key[1],
                "n_rows": int(self.rows[:, level].mean()),
                **dict(zip(self.names, obj.tolist())),
                "seconds": wall,
            }
        )
        self.records.append(
            {
                "candidate": key[0],
                "level": key[1],
                "n_rows": int(self.rows[:, level].mean()),
                "scores": {n: [r[1][n] for r in runs] for n in runs[0][1]},
                "objectives": {n: [r[0][n] for r in runs] for n in self.names},
                "fit_times": [r[2] for r in runs],
                "score_times": [r[3] for r in runs],
            }
        )
        return obj, cost

    def cv_results(self, on_front):
        """The evaluations in the layout of scikit-learn's ``cv_results_``."""
        from scipy.stats import rankdata

        recs = self.records
        cands = self.selector.candidates
        top = self.n_levels - 1
        out = {
            "candidate": np.array([r["candidate"] for r in recs], dtype=int),
            "level": np.array([r["level"] for r in recs], dtype=int),
            "n_rows": np.array([r["n_rows"] for r in recs], dtype=int),
            "params": [cands[r["candidate"]].get_params(deep=False) for r in recs],
        }
        full = out["level"] == top
        for key, col in (("fit", "fit_times"), ("score", "score_times")):
            times = np.array([r[col] for r in recs], dtype=float)
            out[f"mean_{key}_time"] = times.mean(axis=1)
            out[f"std_{key}_time"] = times.std(axis=1)
        columns = [(n, "scores", 1.0) for n in recs[0]["scores"]]
        columns += [
            (n, "objectives", -1.0)
            for n in self.names
            if n in ("error", "log_loss", "predict_time")
        ]
        for name, where, sign in columns:
            split = np.array([r[where][name] for r in recs], dtype=float)
            for k in range(split.shape[1]):
                out[f"split{k}_test_{name}"] = split[:, k]
            mean = split.mean(axis=1)
            out[f"mean_test_{name}"] = mean
            out[f"std_test_{name}"] = split.std(axis=1)
            # Ranked among the full evaluations only (1 is best); a landmark
            # row is not comparable with them and is masked.
            good = np.where(np.isfinite(mean), -sign * mean, np.inf)
            rank = np.zeros(len(recs), dtype=np.int32)
            if full.any():
                rank[full] = rankdata(good[full], method="min")
            out[f"rank_test_{name}"] = np.ma.masked_array(rank, mask=~full)
        out["on_front"] = np.array(
            [bool(r["level"] == top and r["candidate"] in on_front) for r in recs]
        )
        return out


class ParetoModelSelector(MetaEstimatorMixin, BaseEstimator):
    """Pareto model selection under a budget with landmark evaluations (LAMPS).

    Finds the candidates on the Pareto front of several objectives (an
    error, fit time, ...) without fitting every candidate on the whole
    training set. Each candidate is first cross-validated on a small
    fraction of the training rows (a *landmark*); a budget allocation policy
    then decides, candidate by candidate, whether to refine it at the next
    landmark, fit it on the full training folds, or drop it. The default
    policy is meta-learned (:class:`MetaAllocationPolicy`) from the learning
    curves of 20 scikit-learn classifiers on 248 OpenML data sets (LCDB 1.0,
    shipped with the package): it predicts each candidate's full objectives
    and their optimistic lower quantile from its landmarks, and advances the
    candidate whose optimistic point would add the most hypervolume to the
    current front per unit of predicted cost, until no candidate's
    optimistic gain exceeds a threshold.

    Parameters
    ----------
    candidates : list of estimators
        At least two, all classifiers or all regressors; cloned, never
        fitted in place.
    objectives : tuple of str, default=("error", "fit_time")
        Minimised, among ``"error"`` (1 - the primary score: the first
        scorer of ``scoring``, or the candidates' own ``score``, accuracy for
        classifiers and R^2 for regressors), ``"log_loss"`` (classifiers with
        ``predict_proba``), the names of ``scoring`` (each as its loss,
        1 - score), ``"fit_time"`` and ``"predict_time"`` (seconds, measured,
        compared on their log10; the prediction time of the validation
        fold). At least one quality objective (not a time); ``"error"`` with
        ``policy="meta"``, whose predictors read it. The meta-learned policy
        predicts how the error and the fit time change from a landmark to the
        full training set; every other objective enters its decisions at its
        last measured value, not through a borrowed prediction.
    landmarks : tuple of float, default=(0.05, 0.1, 0.25)
        Increasing fractions of each training fold. A landmark fits on the
        first rows of a fixed random order of the fold that holds one row
        of each class first, and at least ``min(10, n_fold)`` rows. The
        ``"meta"`` policy needs as many landmarks as its meta-policy.
    budget : float or None, default=None
        Cap on the fit time spent, as a fraction of the predicted time of
        fitting every candidate in full (predicted after the first landmark
        pass). None lets the policy stop by itself. Must be at least the
        first landmark's fraction (one landmark pass).
    policy : {"meta", "successive_halving", "exhaustive"}, default="meta"
        ``"successive_halving"``: every candidate at the first landmark,
        the best half (non-dominated rank, ties by the error) on to the
        next, the survivors of the last landmark in full.
        ``"exhaustive"``: every candidate in full, no landmarks.
    meta_policy : MetaAllocationPolicy or None, default=None
        A fitted policy; None uses the one meta-learned on LCDB (fitted on
        first use in a process, a few seconds).
    exhaustive_below : int or None, default=1000
        With ``policy="meta"``, training folds of fewer rows (on average) are
        searched exhaustively (``fallback_`` records it). On a few hundred
        rows a fit costs about as much on 5% of the rows as on all of them
        (fixed costs dominate), and the landmarks only add to the bill: in
        ``benchmarks/bench_lamps.py``'s live part the meta policy saved no
        time against the exhaustive search on breast cancer (379 rows per
        training fold) and most of it on the digits (1198). The threshold is
        ours, set between those two; None never falls back.
    scoring : str, callable, list, tuple, dict or None, default=None
        Scorers, as in scikit-learn's searches (greater is better): a scorer
        name, a callable ``scorer(estimator, X, y)``, a list of names or a
        dict of name to scorer (or scorer name). The first is the primary
        score behind ``"error"``; every scorer is recorded in
        ``cv_results_``, and its name may be listed in ``objectives``. None
        uses the candidates' ``score``.
    cv : int, cross-validation generator or iterable, default=3
        As in :func:`~sklearn.model_selection.check_cv` (stratified for
        classifiers).
    n_jobs : int or None, default=None
        Folds evaluated in parallel.
    random_state : int, RandomState instance or None, default=None
        Seeds the order of the rows landmarks fit on.

    Attributes
    ----------
    pareto_front_ : dict
        ``"candidates"`` (indices into ``candidates``, ordered by the error)
        and ``"objectives"`` (their cross-validated values in full, shape
        (n_front, n_objectives), columns in the order of ``objectives``).
    hypervolume_ : float
        Hypervolume of the front, each objective (times in log10) scaled to
        [0, 1] by the range over the candidates evaluated in full, with the
        reference point at 1.1.
    spent_ : float
        Wall seconds of every evaluation (all folds, fits and scoring) plus
        the final refits of the front members on all of ``X``.
    refit_time_ : float
        Wall seconds of those refits (part of ``spent_``).
    fallback_ : bool
        Whether the meta policy fell back to evaluating every candidate in
        full because the training folds have fewer than ``exhaustive_below``
        rows.
    cv_results_ : dict of numpy (masked) arrays
        One row per evaluation (a candidate at a landmark or in full), in
        scikit-learn's layout (``pandas.DataFrame(cv_results_)`` works):
        ``candidate``, ``level`` (a landmark index; ``len(landmarks)`` is the
        full training fold), ``n_rows`` (mean training rows), ``params``
        (the candidate's ``get_params(deep=False)``), ``mean_fit_time``,
        ``std_fit_time``, ``mean_score_time`` and ``std_score_time`` (per
        fold), then per score (each scorer's name, or ``"score"``) and per
        measured objective (``error``, ``log_loss``, ``predict_time``):
        ``split<k>_test_<name>``, ``mean_test_<name>``, ``std_test_<name>``
        and ``rank_test_<name>`` (1 is best, among the full evaluations;
        masked at landmarks), and ``on_front``.
    history_ : list of dict
        Every evaluation in order: candidate, level (a landmark index or
        ``"full"``), mean training rows, the objectives, seconds.
    levels_ : ndarray of int
        Highest fidelity each candidate reached (``len(landmarks)`` = full).
    front_estimators_ : dict
        Front candidates refitted on all of ``X``, by index.
    best_index_ : int
        The candidate :meth:`select` chose (the lowest error after ``fit``).
    best_estimator_ : estimator
        That candidate, refitted on all of ``X``.
    classes_ : ndarray
        Class labels (classifiers).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    See Also
    --------
    MetaAllocationPolicy : The meta-learned allocation policy.
    sklearn.model_selection.HalvingGridSearchCV : Single-objective
        successive halving.

    References
    ----------
    .. [1] LAMPS (LAnguage Model Pareto Selection): landmark fine-tuning and a
       resource-allocation policy meta-learned by reinforcement learning,
       ICML 2026.
    .. [2] F. Mohr, T. J. Viering, M. Loog and J. N. van Rijn, "LCDB 1.0: An
       Extensive Learning Curves Database for Classification Tasks", ECML
       PKDD 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn_ext.model_selection import ParetoModelSelector
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> candidates = [GaussianNB(), LogisticRegression(max_iter=5000),
    ...               DecisionTreeClassifier(random_state=0)]
    >>> sel = ParetoModelSelector(candidates, random_state=0).fit(X, y)
    >>> sel.pareto_front_["objectives"].shape[1]
    2
    >>> fastest = sel.select(weights=(0.0, 1.0)).best_index_
    >>> fastest in sel.pareto_front_["candidates"]
    True
    """

    _parameter_constraints: dict = {
        "candidates": [list, tuple],
        "objectives": [tuple, list],
        "landmarks": [tuple, list],
        "budget": [Interval(Real, 0, 1, closed="right"), None],
        "policy": [StrOptions({"meta", "successive_halving", "exhaustive"})],
        "meta_policy": [HasMethods(["search"]), None],
        "exhaustive_below": [Interval(Integral, 1, None, closed="left"), None],
        "scoring": [str, callable, list, tuple, dict, None],
        "cv": ["cv_object"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    _no_sample_weight = (
        "candidates are compared by cross-validated objectives on row subsets; "
        "a weighted comparison would need every candidate to accept weights"
    )
    _paper = "LAMPS: LAnguage Model Pareto Selection, ICML 2026"
    _bench_name = "lamps"

    def __init__(
        self,
        candidates,
        *,
        objectives=("error", "fit_time"),
        landmarks=(0.05, 0.1, 0.25),
        budget=None,
        policy="meta",
        meta_policy=None,
        exhaustive_below=1000,
        scoring=None,
        cv=3,
        n_jobs=None,
        random_state=None,
    ):
        self.candidates = candidates
        self.objectives = objectives
        self.landmarks = landmarks
        self.budget = budget
        self.policy = policy
        self.meta_policy = meta_policy
        self.exhaustive_below = exhaustive_below
        self.scoring = scoring
        self.cv = cv
        self.n_jobs = n_jobs
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        first = self.candidates[0] if len(self.candidates) else None
        if first is not None:
            sub = first.__sklearn_tags__()
            tags.estimator_type = sub.estimator_type
            tags.classifier_tags = sub.classifier_tags
            tags.regressor_tags = sub.regressor_tags
            tags.input_tags.sparse = False
        return tags

    # --- validation -----------------------------------------------------------

    def _check_params(self):
        cands = list(self.candidates)
        if len(cands) < 2:
            raise ValueError(
                f"ParetoModelSelector needs at least two candidates; got {len(cands)}."
            )
        for i, c in enumerate(cands):
            if not (hasattr(c, "fit") and hasattr(c, "get_params")):
                raise TypeError(
                    f"candidate {i} ({c!r}) is not a scikit-learn estimator."
                )
        if all(is_classifier(c) for c in cands):
            task = "classifier"
        elif all(is_regressor(c) for c in cands):
            task = "regressor"
        else:
            raise ValueError(
                "candidates must be all classifiers or all regressors; got "
                + ", ".join(type(c).__name__ for c in cands)
                + "."
            )
        scorers = _scorers(self.scoring)
        objectives = tuple(self.objectives)
        known = sorted(OBJECTIVES) + list(scorers)
        unknown = [o for o in objectives if o not in known]
        if unknown or not objectives or len(set(objectives)) != len(objectives):
            raise ValueError(
                f"objectives must be distinct names among {known} (the built-in "
                f"objectives and the names of scoring); got {self.objectives!r}."
            )
        if not any(_kind(o) == "error" for o in objectives):
            raise ValueError(
                "objectives must include a quality objective ('error', 'log_loss' "
                f"or a name of scoring), not only times; got {objectives!r}."
            )
        if "log_loss" in objectives:
            lacking = [
                f"{i} ({type(c).__name__})"
                for i, c in enumerate(cands)
                if task != "classifier" or not hasattr(c, "predict_proba")
            ]
            if lacking:
                raise ValueError(
                    "objective 'log_loss' needs predict_proba, which these "
                    f"candidates do not have: {', '.join(lacking)}."
                )
        if self.policy == "meta" and "error" not in objectives:
            raise ValueError(
                "policy='meta' needs the objective 'error' (its predictors read "
                "the error at each landmark); add it to objectives or choose "
                f"policy='successive_halving' or 'exhaustive'; got {objectives!r}."
            )
        if self.policy == "exhaustive":
            return cands, task, objectives, np.zeros(0), scorers
        landmarks = check_landmarks(self.landmarks, "the training fold")
        if self.budget is not None and self.budget < landmarks[0]:
            raise ValueError(
                f"budget={self.budget} is below the cost of one landmark pass: every "
                f"candidate is first fitted on {landmarks[0]:g} of the data, so the "
                f"budget must be at least {landmarks[0]:g} of the full cost."
            )
        return cands, task, objectives, landmarks, scorers

    def _policy(self, landmarks, load=True):
        """The meta policy, checked against ``landmarks``. With ``load=False``
        only the check: the default policy is not fitted for it."""
        policy = None
        if self.meta_policy is None and not load:
            n = len(MetaAllocationPolicy().landmarks)  # the default policy's
        else:
            policy = (
                default_meta_policy() if self.meta_policy is None else self.meta_policy
            )
            check_is_fitted(policy, "models_")
            n = len(policy.models_)
        if n != len(landmarks):
            raise ValueError(
                f"meta_policy was learned with {n} landmarks; "
                f"landmarks has {len(landmarks)}."
            )
        return policy

    # --- fitting --------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Search the candidates' Pareto front and refit its members on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : ParetoModelSelector
            Fitted selector.
        """
        cands, task, objectives, landmarks, scorers = self._check_params()
        X, y = validate_data(
            self, X, y, multi_output=False, y_numeric=task == "regressor"
        )
        if task == "classifier":
            from sklearn.utils.multiclass import check_classification_targets

            check_classification_targets(y)
            self.classes_ = np.unique(y)
        rng = check_random_state(self.random_state)
        splits = list(check_cv(self.cv, y, classifier=task == "classifier").split(X, y))
        orders, rows = [], []
        for train, _ in splits:
            order = train[rng.permutation(len(train))]
            if task == "classifier":
                _, first = np.unique(y[order], return_index=True)
                rest = np.setdiff1d(np.arange(len(order)), first)
                order = np.concatenate([order[first], order[rest]])
            n = len(order)
            floor = min(n, 10)
            rows.append([max(floor, int(np.ceil(f * n))) for f in landmarks] + [n])
            orders.append(order)
        rows = np.array(rows)
        # Internally the first objective is a quality objective: "error" when
        # listed (the predictors' input), else the first one listed.
        first = (
            objectives.index("error")
            if "error" in objectives
            else next(i for i, o in enumerate(objectives) if _kind(o) == "error")
        )
        perm = [first] + [i for i in range(len(objectives)) if i != first]
        names = tuple(objectives[i] for i in perm)
        self.candidates_ = cands
        live = _LiveProblem(self, X, y, splits, orders, rows, names, scorers)
        top = len(landmarks)

        n_fold = float(rows[:, -1].mean()) if len(rows) else 0.0
        small = self.exhaustive_below is not None and n_fold < self.exhaustive_below
        self.fallback_ = bool(self.policy == "meta" and small)
        # The meta policy is checked against the landmarks even where the
        # small-data fallback leaves it unused (without fitting the default).
        if self.policy == "meta":
            policy = self._policy(landmarks, load=not self.fallback_)
        if self.policy == "exhaustive" or self.fallback_:
            for i in range(len(cands)):
                live.evaluate(i, top)
        elif self.policy == "successive_halving":
            successive_halving(live, finish_search=False)
        else:
            sizes = np.broadcast_to(rows.mean(axis=0), (len(cands), top + 1))
            allocate(
                live.evaluate,
                np.array(sizes),
                live.kinds,
                policy.models_,
                policy.quantile_,
                policy.threshold_,
                policy.cost_exponent,
                budget=self.budget,
                learned=tuple(n in LEARNED for n in names),
            )
        levels = np.zeros(len(cands), dtype=int)
        for i, lv in live.evaluated:
            levels[i] = max(levels[i], lv)
        self.levels_ = levels
        full = np.flatnonzero(levels == top)
        values = np.array([live.evaluated[i, top][0] for i in full])
        comp = comparable(values, live.kinds)
        # Fold means of equal scores differ in the last bits (1 - 0.97 over
        # folds in another order): compare on 10 decimals, so that such ties
        # do not put a dominated candidate on the front.
        on_front = pareto_mask(np.round(comp, 10))
        order = np.argsort(values[on_front, 0], kind="stable")
        inverse = np.argsort(perm)
        self.pareto_front_ = {
            "candidates": full[on_front][order],
            "objectives": values[on_front][order][:, inverse],
        }
        self.hypervolume_ = normalised_hypervolume(
            comp[on_front], comp.min(axis=0), comp.max(axis=0)
        )
        self._front_comparable = comp[on_front][order][:, inverse]
        self._kinds = tuple(_kind(o) for o in objectives)
        self.history_ = live.history
        self.cv_results_ = live.cv_results(set(self.pareto_front_["candidates"]))
        start = time.perf_counter()
        self.front_estimators_ = {
            int(i): clone(cands[i]).fit(X, y) for i in self.pareto_front_["candidates"]
        }
        self.refit_time_ = time.perf_counter() - start
        self.spent_ = float(sum(h["seconds"] for h in live.history)) + self.refit_time_
        error_col = np.zeros(len(objectives))
        error_col[first] = 1.0
        return self.select(error_col)

    def select(self, weights=None):
        """Choose the front member that minimises a weighted sum.

        Each objective is scaled to [0, 1] over the front (times on their
        log10) before weighting.

        Parameters
        ----------
        weights : array-like of shape (n_objectives,), default=None
            Non-negative, not all zero, in the order of ``objectives``;
            None weighs them equally.

        Returns
        -------
        self : ParetoModelSelector
            With ``best_index_`` and ``best_estimator_`` set.
        """
        check_is_fitted(self, "pareto_front_")
        n_obj = len(self.objectives)
        w = np.ones(n_obj) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (n_obj,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(
                f"weights must be {n_obj} non-negative numbers, one per objective "
                f"{tuple(self.objectives)}; got {weights!r}."
            )
        if not w.any():
            raise ValueError("weights must not all be zero.")
        v = self._front_comparable
        span = np.ptp(v, axis=0)
        scaled = (v - v.min(axis=0)) / np.where(span > 0, span, 1.0)
        k = int(np.argmin(scaled @ w))
        self.best_index_ = int(self.pareto_front_["candidates"][k])
        self.best_estimator_ = self.front_estimators_[self.best_index_]
        return self

    # --- delegation -----------------------------------------------------------

    @available_if(_best_has("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities, columns in the order of ``classes_``.
        """
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray
            As ``best_estimator_.decision_function``.
        """
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.decision_function(X)

    @available_if(_best_has("score"))
    def score(self, X, y):
        """Score of ``best_estimator_`` (its own ``score`` method).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True targets.

        Returns
        -------
        score : float
            Accuracy for classifiers, R^2 for regressors (as the candidate
            defines it).
        """
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.score(X, y)

    # --- the package's harness -----------------------------------------------

    @classmethod
    def _get_test_params(cls):
        from sklearn.linear_model import LogisticRegression
        from sklearn.naive_bayes import GaussianNB

        return {
            "candidates": [
                LogisticRegression(),
                GaussianNB(),
            ],
            "cv": 2,
            "random_state": 0,
        }
