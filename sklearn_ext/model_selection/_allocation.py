"""Budget allocation over landmark evaluations: the LAMPS policy and baselines.

The allocation is a reinforcement-learning problem over one search:

- state: every candidate's fidelity so far (a landmark, or the full training
  set), its observed objectives there, and the budget spent;
- action: which candidate to advance, and whether to its next landmark or
  straight to the full training set; or stop;
- reward: the gain in hypervolume of the front of fully evaluated candidates,
  per unit of cost (the return is the hypervolume reached against the cost
  paid).

The policy scores each candidate by the hypervolume its *optimistic* full
objectives (a lower quantile predicted from its landmarks) would add to the
current front, divided by the predicted cost of the action raised to
``cost_exponent``. A candidate whose optimistic gain is at most ``threshold``
is not advanced; a candidate whose *expected* gain also exceeds the threshold
goes straight to the full training set, otherwise it is first refined at its
next landmark. The search stops when no candidate's optimistic gain exceeds
the threshold, or the budget is spent.

Meta-learning has two parts, both on a meta-dataset of learning curves: the
predictors of the full objectives from the landmarks (gradient-boosted
regressors of the mean and of lower quantiles, by supervised learning), and
the policy's parameters (quantile, threshold) by direct policy search:
episodes replayed on held-out meta-training problems, keeping the parameters
that save the most cost at a mean hypervolume ratio of at least
``target_hypervolume``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from itertools import product
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import GroupKFold
from sklearn.utils import check_random_state

from sklearn_ext.model_selection._landmarks import (
    LandmarkProblem,
    check_landmarks,
    comparable,
    finish,
    normalised_hypervolume,
)
from sklearn_ext.model_selection._pareto import pareto_mask
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    _fit_context,
    check_is_fitted,
)

__all__ = [
    "MetaAllocationPolicy",
    "allocate",
    "exhaustive_search",
    "hyperband",
    "random_search",
    "successive_halving",
]


# --- baselines ---------------------------------------------------------------


def exhaustive_search(problem):
    """Evaluate every candidate in full, without landmarks."""
    problem.reset()
    for i in range(problem.n_candidates):
        problem.evaluate(i, problem.n_levels - 1)
    return finish(problem, range(problem.n_candidates))


def _price(problem, i, level):
    """What evaluating candidate ``i`` at ``level`` costs now (0 once paid)."""
    key = (int(i), int(level))
    return 0.0 if key in problem.evaluated else float(problem.costs[key])


def _best_partial(problem, full):
    """The most promising candidate not yet evaluated in full, or None.

    The one seen at the highest landmark, by the lowest error there.
    """
    top = problem.n_levels - 1
    seen = [(lvl, i) for (i, lvl) in problem.evaluated if lvl < top and i not in full]
    if not seen:
        return None
    level = max(lvl for lvl, _ in seen)
    at = [i for lvl, i in seen if lvl == level]
    return min(at, key=lambda i: (problem.evaluated[(i, level)][0], i))


class _Budget:
    """A cost cap that never lets a search spend more than ``cost``.

    ``fits(i, level)`` is whether an evaluation fits, keeping back the price
    of a final full fit of the best candidate seen at a landmark while no
    candidate has been evaluated in full (so that a capped search always ends
    with the full fit of its best). The replay knows every cost in advance,
    which favours the capped baselines: they never overshoot.
    """

    def __init__(self, problem, cost, full):
        self.problem, self.cost, self.full = problem, float(cost), full

    def _reserve(self, i, level):
        p = self.problem
        if self.full or level == p.n_levels - 1:
            return 0.0
        best = _best_partial(p, self.full)
        if best is None or best == i:
            # The candidate about to be evaluated may become the best: keep
            # its own full fit back.
            return _price(p, i, p.n_levels - 1)
        return max(_price(p, best, p.n_levels - 1), _price(p, i, p.n_levels - 1))

    def fits(self, i, level):
        p = self.problem
        return p.spent + _price(p, i, level) + self._reserve(i, level) <= self.cost

    def finish(self):
        """Spend what is left on full fits of the candidates seen at landmarks.

        Best first (the highest landmark reached, then the lowest error
        there); one that does not fit is skipped for the next.
        """
        p, top = self.problem, self.problem.n_levels - 1
        skipped = set()
        while (best := _best_partial(p, self.full + sorted(skipped))) is not None:
            if p.spent + _price(p, best, top) <= self.cost:
                p.evaluate(best, top)
                self.full.append(int(best))
            else:
                skipped.add(int(best))


def random_search(problem, cost, random_state=None, skip=True):
    """Evaluate candidates in full in a random order, within ``cost``.

    With ``skip``, a candidate whose full fit would take it over ``cost`` is
    skipped for the next one, so that the budget is used as fully as the
    costs allow (this reads every full fit's cost in advance). Without, the
    search stops at the first such fit, as one that cannot know a fit's cost
    before running it would (it would run it and lose it to the deadline).
    """
    problem.reset()
    rng = check_random_state(random_state)
    full = []
    for i in rng.permutation(problem.n_candidates):
        if problem.spent + _price(problem, i, problem.n_levels - 1) <= cost:
            problem.evaluate(i, problem.n_levels - 1)
            full.append(int(i))
        elif not skip:
            break
    return finish(problem, full)


def _rank(points):
    """Non-dominated sorting rank of each point (0 = the front)."""
    rank = np.full(len(points), -1)
    left = np.arange(len(points))
    r = 0
    while len(left):
        nd = pareto_mask(points[left])
        rank[left[nd]] = r
        left = left[~nd]
        r += 1
    return rank


def _halve(problem, alive, start, eta, full, budget=None):
    """Successive halving from level ``start``; survivors evaluated in full.

    With a :class:`_Budget`, an evaluation that does not fit ends the run
    (returns False); True when it ran to the end.
    """
    for level in range(start, problem.n_levels - 1):
        obj = []
        for i in alive:
            if budget is not None and not budget.fits(i, level):
                return False
            obj.append(problem.evaluate(i, level)[0])
        obj = comparable(np.array(obj), problem.kinds)
        order = np.lexsort((obj[:, 0], _rank(obj)))
        alive = alive[order[: max(1, int(np.ceil(len(alive) / eta)))]]
    for i in alive:
        if budget is not None and not budget.fits(i, problem.n_levels - 1):
            return False
        problem.evaluate(i, problem.n_levels - 1)
        full.append(int(i))
    return True


def successive_halving(problem, eta=2, finish_search=True, cost=None):
    """Multi-objective successive halving over the landmarks.

    Every candidate is evaluated at the first landmark; at each landmark the
    best ``1 / eta`` (by non-dominated rank, ties by the error) go on to the
    next; the survivors of the last landmark are evaluated in full. Returns
    the :class:`SearchResult` (or, with ``finish_search=False``, the list of
    candidates evaluated in full).

    With ``cost``, the search spends up to it and no more: capped where its
    own run would cost more, and what is left (after the cap or the run)
    goes to full fits of the candidates seen at landmarks, best first
    (:meth:`_Budget.finish`).
    """
    problem.reset()
    full = []
    if cost is None:
        _halve(problem, np.arange(problem.n_candidates), 0, eta, full)
        return finish(problem, full) if finish_search else full
    budget = _Budget(problem, cost, full)
    _halve(problem, np.arange(problem.n_candidates), 0, eta, full, budget)
    budget.finish()
    return finish(problem, full) if finish_search else full


def hyperband(problem, cost, eta=2, random_state=None):
    """Hyperband's brackets of successive halving, within ``cost``.

    Bracket ``b`` draws ``ceil(n / eta**b)`` candidates not yet evaluated in
    full, at random, and runs successive halving on them from landmark ``b``
    (the last bracket evaluates its draw in full directly). The brackets run
    in Hyperband's order, the most exploratory first, and cycle until the
    budget is spent. No evaluation takes it over ``cost``; while nothing has
    been evaluated in full the price of a full fit of the best candidate
    seen is kept back, and what is left at the end goes to full fits of the
    candidates seen at landmarks, best first.
    """
    problem.reset()
    rng = check_random_state(random_state)
    full = []
    budget = _Budget(problem, cost, full)
    n, top = problem.n_candidates, problem.n_levels - 1
    running = True
    while running and len(full) < n:
        before = len(problem.evaluated)
        for b in range(top + 1):
            left = np.setdiff1d(np.arange(n), full)
            if not len(left):
                break
            k = min(len(left), int(np.ceil(n / eta**b)))
            if not _halve(
                problem, rng.choice(left, k, replace=False), b, eta, full, budget
            ):
                running = False
                break
        if len(problem.evaluated) == before:
            break
    budget.finish()
    return finish(problem, full)


# --- the learned predictor ---------------------------------------------------


def _features(err, time, sizes, level):
    """Learner-agnostic features of candidates observed up to ``level``.

    ``err``/``time``: (n, >= level + 1) errors and fit times per level;
    ``sizes``: (n, n_levels) training rows, the last column the full size.
    """
    lt = np.log10(np.maximum(time[:, : level + 1], 1e-6))
    ls = np.log10(sizes)
    cols = [
        err[:, level],
        lt[:, level],
        ls[:, -1] - ls[:, level],
        ls[:, -1],
    ]
    if level > 0:
        step = np.maximum(ls[:, level] - ls[:, level - 1], 1e-6)
        cols += [
            err[:, level] - err[:, level - 1],
            (lt[:, level] - lt[:, level - 1]) / step,
        ]
    else:
        cols += [np.zeros(len(err)), np.ones(len(err))]
    return np.column_stack(cols)


def _training_rows(problems, level):
    X, Y, groups = [], [], []
    for g, p in enumerate(problems):
        err, time = p.objectives[:, :, 0], p.costs
        X.append(_features(err, time, p.sizes, level))
        Y.append(
            np.column_stack(
                [err[:, -1] - err[:, level], np.log10(time[:, -1] / time[:, level])]
            )
        )
        groups.append(np.full(len(err), g))
    return np.vstack(X), np.vstack(Y), np.concatenate(groups)


def _fit_predictors(problems, n_landmarks, quantiles, max_iter, random_state):
    """Per landmark: mean and lower-quantile regressors of the full error and
    log fit time (as deltas from the landmark's values)."""
    from sklearn.ensemble import HistGradientBoostingRegressor  # not at import

    models = []
    for level in range(n_landmarks):
        X, Y, _ = _training_rows(problems, level)
        per_level = {}
        for q in ("mean", *quantiles):
            kw = {"loss": "quantile", "quantile": q} if q != "mean" else {}
            per_level[q] = [
                HistGradientBoostingRegressor(
                    max_iter=max_iter,
                    learning_rate=0.05,
                    max_leaf_nodes=15,
                    random_state=random_state,
                    **kw,
                ).fit(X, Y[:, k])
                for k in range(2)
            ]
        models.append(per_level)
    return models


# --- the policy --------------------------------------------------------------


def _row_deltas(models, quantile, err, time, sizes):
    """Predicted (mean, lower-quantile) deltas of one candidate observed so far."""

    def deltas(i, level):
        X = _features(err[i : i + 1], time[i : i + 1], sizes[i : i + 1], level)
        return tuple(
            np.array([m.predict(X)[0] for m in models[level][q]])
            for q in ("mean", quantile)
        )

    return deltas


def _table_deltas(models, quantile, problem):
    """The same deltas for a recorded problem, predicted in one batch per level
    (a candidate's features only use levels it has reached, so the values are
    those a live search would compute)."""
    err, time = problem.objectives[:, :, 0], problem.costs
    table = {}

    def deltas(i, level):
        if level not in table:
            X = _features(err, time, problem.sizes, level)
            table[level] = tuple(
                np.column_stack([m.predict(X) for m in models[level][q]])
                for q in ("mean", quantile)
            )
        return table[level][0][i], table[level][1][i]

    return deltas


def allocate(
    evaluate,
    sizes,
    kinds,
    models,
    quantile,
    threshold,
    cost_exponent,
    budget=None,
    deltas=None,
    refine=True,
    learned=None,
    choose=None,
):
    """Run one search of the landmark policy (see the module docstring).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(candidate, level)`` returns ``(objectives, cost)``: the
        objective vector at that fidelity and its cost (fit time).
    sizes : ndarray of shape (n_candidates, n_levels)
        Training rows of each fidelity; the last level is the full set.
    kinds : tuple of str
        ``"error"`` or ``"cost"`` per objective, the first an error.
    models : list of dict
        The fitted predictors of :class:`MetaAllocationPolicy`.
    quantile, threshold, cost_exponent : float
        The policy's parameters.
    refine : bool, default=True
        False sends every advanced candidate straight to the full set (the
        ablation without intermediate landmarks).
    deltas : callable, default=None
        ``deltas(candidate, level)`` returns the predicted (mean, lower
        quantile) changes of the error and log10 fit time from that level
        to the full set; by default the models predict each row as it is
        observed.
    budget : float or None
        Fraction of the predicted cost of evaluating every candidate in full
        (predicted after the first landmark pass); the search stops before
        an action whose predicted cost would take the spending past it.
    learned : tuple of bool, default=None
        Per objective, whether the predicted change applies: the error's to
        the first objective, the fit time's to a cost. An objective marked
        False is taken at its measured value until it is measured in full.
        None marks all True (every error-kind objective moves with the
        error, every cost with the fit time).
    choose : callable, default=None
        A learned policy in place of the rule: ``choose(features, actions)``
        gets one row of :func:`action_features` per action (every candidate
        not yet in full, to its next landmark and to the full set, within the
        budget) and the ``(candidate, level, price)`` of each, and returns
        the index of the action to take, or -1 to stop. None is the rule
        (``threshold`` and ``cost_exponent``).

    Returns
    -------
    level : ndarray of int
        Highest fidelity reached by each candidate.
    """
    n, top = sizes.shape[0], sizes.shape[1] - 1
    n_obj = len(kinds)
    cost_cols = [j for j, k in enumerate(kinds) if k == "cost"]
    costs = np.zeros((n, top + 1))
    err = np.zeros((n, top + 1))
    mean = np.zeros((n, n_obj))
    low = np.zeros((n, n_obj))
    full_time = np.zeros(n)
    spent = 0.0
    if deltas is None:
        deltas = _row_deltas(models, quantile, err, costs, sizes)

    def observe(i, lv):
        nonlocal spent
        obj, cost = evaluate(i, lv)
        obj = np.asarray(obj, dtype=np.float64)
        costs[i, lv], err[i, lv] = max(cost, 1e-6), obj[0]
        spent += cost
        here = comparable(obj, kinds)
        if lv == top:
            mean[i] = low[i] = here
            return
        predicted = deltas(i, lv)
        for target, (d_err, d_time) in zip((mean, low), predicted):
            target[i, 0] = here[0] + d_err
            for j in range(1, n_obj):
                change = d_time if j in cost_cols else d_err
                target[i, j] = here[j] + (change if learned[j] else 0.0)
        full_time[i] = costs[i, lv] * 10 ** predicted[0][1]
        low[i] = np.minimum(low[i], mean[i])

    learned = (True,) * n_obj if learned is None else tuple(learned)
    level = np.zeros(n, dtype=int)
    for i in range(n):
        observe(i, 0)
    cap = np.inf if budget is None else budget * full_time.sum()
    while True:
        cand = np.flatnonzero(level < top)
        if not len(cand):
            break
        done = np.flatnonzero(level == top)
        lo, hi = mean.min(axis=0), mean.max(axis=0)
        front = mean[done]
        base = normalised_hypervolume(front, lo, hi)

        def gain(point, front=front, lo=lo, hi=hi, base=base):
            return normalised_hypervolume(np.vstack([front, point]), lo, hi) - base

        g_opt = np.array([gain(low[i]) for i in cand])
        if choose is not None:
            g_mean = np.array([gain(mean[i]) for i in cand])
            feats, actions = action_features(
                cand, level, top, g_opt, g_mean, costs, sizes, full_time, spent
            )
            if budget is not None:
                ok = [a for a in range(len(actions)) if spent + actions[a][2] <= cap]
                feats, actions = feats[ok], [actions[a] for a in ok]
            j = int(choose(feats, actions)) if len(actions) else -1
            if j < 0:
                break
            i, lv, _ = actions[j]
            level[i] = lv
            observe(i, lv)
            continue
        keep = g_opt > threshold
        if not keep.any():
            break
        cand, g_opt = cand[keep], g_opt[keep]
        g_mean = np.array([gain(mean[i]) for i in cand])
        to_full = (g_mean > threshold) | (level[cand] == top - 1) | (not refine)
        nxt = np.where(to_full, top, level[cand] + 1)
        price = np.where(
            to_full,
            full_time[cand],
            costs[cand, level[cand]] * sizes[cand, nxt] / sizes[cand, level[cand]],
        )
        if budget is not None:
            ok = spent + price <= cap
            if not ok.any():
                break
            cand, g_opt, nxt, price = cand[ok], g_opt[ok], nxt[ok], price[ok]
        j = int(np.argmax(g_opt / np.maximum(price, 1e-6) ** cost_exponent))
        level[cand[j]] = nxt[j]
        observe(cand[j], nxt[j])
    return level


def action_features(cand, level, top, g_opt, g_mean, costs, sizes, full_time, spent):
    """Features of every allocation action in a state, and the actions.

    Per candidate not yet in full, two actions (one when its next landmark is
    the full set): to its next landmark and to the full set. The features are
    scale-free, so that one policy applies to problems of any cost: the
    candidate's optimistic and expected hypervolume gains, whether the action
    goes to the full set, the candidate's landmark as a fraction of the top,
    the action's predicted price and the cost spent so far as shares of the
    predicted cost of evaluating every candidate in full (log10), the share
    of candidates in full, and the optimistic gain per share of cost (log10).
    Returns ``(features, actions)``: an array of shape (n_actions, 8) and a
    list of ``(candidate, level, predicted price)``.
    """
    total = max(float(full_time.sum()), 1e-12)
    done = float(np.mean(level == top))
    rows, actions = [], []
    for k, i in enumerate(cand):
        lv = level[i]
        options = [top] if lv == top - 1 else [lv + 1, top]
        for nxt in options:
            if nxt == top:
                price = full_time[i]
            else:
                price = costs[i, lv] * sizes[i, nxt] / sizes[i, lv]
            share = max(price / total, 1e-9)
            rows.append(
                [
                    g_opt[k],
                    g_mean[k],
                    float(nxt == top),
                    lv / top,
                    np.log10(share),
                    np.log10(max(spent / total, 1e-9)),
                    done,
                    np.log10(max(g_opt[k], 1e-9) / share),
                ]
            )
            actions.append((int(i), int(nxt), float(price)))
    return np.array(rows, dtype=np.float64).reshape(-1, 8), actions


def _replay(
    problem, policy_models, quantile, threshold, cost_exponent, budget=None, refine=True
):
    problem.reset()
    level = allocate(
        problem.evaluate,
        problem.sizes,
        problem.kinds,
        policy_models,
        quantile,
        threshold,
        cost_exponent,
        budget=budget,
        deltas=_table_deltas(policy_models, quantile, problem),
        refine=refine,
    )
    return finish(problem, np.flatnonzero(level == problem.n_levels - 1))


def _check_rows(datasets, n_datasets):
    """``datasets`` as row indices of an LCDB Bunch of ``n_datasets`` rows."""
    rows = np.asarray(list(datasets))
    if rows.size and (
        rows.ndim != 1
        or not np.issubdtype(rows.dtype, np.integer)
        or rows.min() < 0
        or rows.max() >= n_datasets
    ):
        raise ValueError(
            f"datasets must be row indices of learning_curves, integers in "
            f"[0, {n_datasets}); got {datasets!r}."
        )
    return rows.tolist()


class MetaAllocationPolicy(BaseEstimator):
    """LAMPS' budget allocation policy, meta-learned from learning curves.

    The reinforcement-learning formulation and the policy are stated in
    :mod:`the module <sklearn_ext.model_selection._allocation>`'s docstring:
    the state is each candidate's landmark observations and the budget spent,
    an action advances one candidate (to its next landmark or to the full
    training set), the reward is the hypervolume gained per cost.

    ``fit`` learns, from a meta-dataset of learning curves, the predictors of
    each candidate's full objectives from its landmarks (learner-agnostic
    features: the error and log fit time at the landmark, their slopes since
    the previous one, the log size ratio to the full set), and the policy's
    optimism ``quantile`` and stopping ``threshold`` by policy search on
    held-out folds of the meta-dataset (split by data set). ``search``
    replays the policy on a :class:`~sklearn_ext.model_selection.
    ParetoModelSelector`-style problem; the selector runs it live.

    Parameters
    ----------
    landmarks : tuple of float, default=(0.05, 0.1, 0.25)
        Training fractions of the landmarks the meta-dataset is cut at.
    quantiles : tuple of float, default=(0.02, 0.05, 0.1)
        Candidate optimism levels: the lower quantile of the predicted full
        objectives a candidate is judged by.
    thresholds : tuple of float, default=(0.01, 0.02, 0.03)
        Candidate stopping thresholds on the optimistic hypervolume gain
        (normalised hypervolume, reference point ``1.1``).
    cost_exponent : float, default=1.0
        The action's score divides the gain by its predicted cost to this
        power.
    target_hypervolume : float, default=0.99
        The policy search keeps the parameters that save the most cost among
        those whose mean hypervolume ratio on held-out meta-training problems
        reaches this; if none does, the ones with the highest ratio.
    n_splits : int, default=3
        Folds (of data sets) of the policy search; unused when there is one
        parameter pair.
    max_iter : int, default=200
        Boosting iterations of each predictor.
    random_state : int, RandomState instance or None, default=None
        Seeds the folds and the regressors.

    Attributes
    ----------
    models_ : list of dict
        Per landmark, ``{"mean": mean, q: quantile}`` regressors of the full
        error and log10 fit time (deltas from the landmark).
    quantile_, threshold_ : float
        The parameters the policy search chose.
    search_results_ : list of dict
        Per parameter pair: the held-out mean hypervolume ratio and time
        saved (empty with one pair).
    n_problems_ : int
        Meta-training problems.

    See Also
    --------
    ParetoModelSelector : Runs the policy on live candidates.

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
    >>> from sklearn_ext.datasets import load_lcdb_curves
    >>> from sklearn_ext.model_selection import MetaAllocationPolicy
    >>> lcdb = load_lcdb_curves()
    >>> policy = MetaAllocationPolicy(quantiles=(0.05,), thresholds=(0.02,),
    ...                               max_iter=50, random_state=0)
    >>> policy = policy.fit(lcdb, datasets=range(100))
    >>> result = policy.search(policy.problem(lcdb, 200))
    >>> 0 <= result.hv_ratio <= 1
    True
    """

    _not_a_data_estimator = (
        "fit takes a meta-dataset of learning curves (an LCDB Bunch or a list of "
        "LandmarkProblem), not (X, y): scikit-learn's data checks do not apply; "
        "tests/test_family_contracts.py checks clone, parameter validation, "
        "pickling, skops, set_params and bad input"
    )
    _paper = "LAMPS: LAnguage Model Pareto Selection, ICML 2026"
    _bench_name = "lamps"

    _parameter_constraints: dict = {
        "landmarks": [tuple, list],
        "quantiles": [tuple, list],
        "thresholds": [tuple, list],
        "cost_exponent": [Interval(Real, 0, None, closed="left")],
        "target_hypervolume": [Interval(Real, 0, 1, closed="both")],
        "n_splits": [Interval(Integral, 2, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        landmarks=(0.05, 0.1, 0.25),
        quantiles=(0.02, 0.05, 0.1),
        thresholds=(0.01, 0.02, 0.03),
        cost_exponent=1.0,
        target_hypervolume=0.99,
        n_splits=3,
        max_iter=200,
        random_state=None,
    ):
        self.landmarks = landmarks
        self.quantiles = quantiles
        self.thresholds = thresholds
        self.cost_exponent = cost_exponent
        self.target_hypervolume = target_hypervolume
        self.n_splits = n_splits
        self.max_iter = max_iter
        self.random_state = random_state

    def __sklearn_tags__(self):
        # fit takes learning curves, not a table: outside scikit-learn's data
        # checks (see _not_a_data_estimator).
        tags = super().__sklearn_tags__()
        tags._skip_test = True
        return tags

    def problem(self, lcdb, dataset):
        """The :class:`LandmarkProblem` of one LCDB data set at ``landmarks``.

        Parameters
        ----------
        lcdb : Bunch
            :func:`~sklearn_ext.datasets.load_lcdb_curves`.
        dataset : int
            Row of the data set.

        Returns
        -------
        problem : LandmarkProblem or None
            None when fewer than two learners have every landmark.
        """
        return LandmarkProblem.from_lcdb(lcdb, dataset, tuple(self.landmarks))[0]

    def _check(self):
        check_landmarks(self.landmarks)
        for name, hi, bracket in (("quantiles", 0.5, "]"), ("thresholds", 1, ")")):
            v = np.asarray(getattr(self, name), dtype=np.float64)
            above = v > hi if bracket == "]" else v >= hi
            if v.ndim != 1 or not len(v) or np.any(v <= 0) or np.any(above):
                raise ValueError(
                    f"{name} must be a non-empty tuple of values in (0, {hi}{bracket}; "
                    f"got {getattr(self, name)!r}."
                )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, learning_curves, y=None, *, datasets=None):
        """Learn the predictors and the policy's parameters.

        Parameters
        ----------
        learning_curves : Bunch or list of LandmarkProblem
            The meta-dataset: :func:`~sklearn_ext.datasets.load_lcdb_curves`
            (cut at ``landmarks``), or problems already cut.
        y : None
            Ignored.
        datasets : iterable of int, default=None
            Rows of ``learning_curves`` to learn from (all by default); the
            benchmark holds the others out.

        Returns
        -------
        self : MetaAllocationPolicy
            Fitted policy.
        """
        self._check()
        if isinstance(learning_curves, (list, tuple)):
            if datasets is not None:
                raise ValueError(
                    "datasets selects rows of an LCDB Bunch; with a list of "
                    "LandmarkProblem, pass only the problems to learn from."
                )
            problems = [p for p in learning_curves if p is not None]
            if not all(isinstance(p, LandmarkProblem) for p in problems):
                raise TypeError(
                    "learning_curves must be an LCDB Bunch or a list of "
                    "LandmarkProblem."
                )
        elif hasattr(learning_curves, "final_error"):
            n_datasets = len(learning_curves.final_error)
            rows = (
                range(n_datasets)
                if datasets is None
                else _check_rows(datasets, n_datasets)
            )
            problems = [self.problem(learning_curves, d) for d in rows]
            problems = [p for p in problems if p is not None]
        else:
            raise TypeError(
                "learning_curves must be the Bunch of load_lcdb_curves() or a list of "
                f"LandmarkProblem; got {type(learning_curves).__name__}."
            )
        n_landmarks = len(self.landmarks)
        if any(p.n_levels != n_landmarks + 1 for p in problems):
            raise ValueError(
                f"every problem must have {n_landmarks} landmarks plus the full level."
            )
        if len(problems) < self.n_splits:
            raise ValueError(
                f"the meta-dataset has {len(problems)} problems; at least "
                f"n_splits={self.n_splits} are needed."
            )
        rng = check_random_state(self.random_state)
        seed = rng.randint(np.iinfo(np.int32).max)
        pairs = list(product(self.quantiles, self.thresholds))
        self.search_results_ = []
        if len(pairs) > 1:
            scores = np.zeros((len(pairs), 2))
            folds = GroupKFold(self.n_splits).split(
                np.zeros(len(problems)), groups=rng.permutation(len(problems))
            )
            for train, test in folds:
                models = _fit_predictors(
                    [problems[i] for i in train],
                    n_landmarks,
                    self.quantiles,
                    self.max_iter,
                    seed,
                )
                for k, (q, tau) in enumerate(pairs):
                    for i in test:
                        r = _replay(problems[i], models, q, tau, self.cost_exponent)
                        scores[k] += (r.hv_ratio, r.time_saved)
            scores /= len(problems)
            self.search_results_ = [
                {"quantile": q, "threshold": t, "hv_ratio": s[0], "time_saved": s[1]}
                for (q, t), s in zip(pairs, scores)
            ]
            ok = scores[:, 0] >= self.target_hypervolume
            best = (
                int(np.argmax(np.where(ok, scores[:, 1], -np.inf)))
                if ok.any()
                else int(np.argmax(scores[:, 0]))
            )
        else:
            best = 0
        self.quantile_, self.threshold_ = (float(v) for v in pairs[best])
        self.models_ = _fit_predictors(
            problems, n_landmarks, (self.quantile_,), self.max_iter, seed
        )
        self.n_problems_ = len(problems)
        return self

    def search(self, problem, budget=None):
        """Replay the policy on a recorded problem.

        Parameters
        ----------
        problem : LandmarkProblem
            With the policy's number of landmarks.
        budget : float, default=None
            Cap on the cost, as a fraction of the predicted cost of
            evaluating every candidate in full; None lets the policy stop
            by itself.

        Returns
        -------
        result : SearchResult
            Front, cost spent, hypervolume ratio and time saved against the
            exhaustive search.
        """
        check_is_fitted(self, "models_")
        if not isinstance(problem, LandmarkProblem):
            raise TypeError(
                "problem must be a LandmarkProblem (see MetaAllocationPolicy."
                f"problem); got {type(problem).__name__}."
            )
        if problem.n_levels != len(self.models_) + 1:
            raise ValueError(
                f"problem has {problem.n_levels - 1} landmarks; the policy was "
                f"fitted on {len(self.models_)}."
            )
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, Real):
                raise TypeError(
                    "budget must be a number (a fraction of the predicted full "
                    f"cost) or None; got {type(budget).__name__}."
                )
            if not budget > 0:
                raise ValueError(
                    "budget must be a positive fraction of the predicted full "
                    f"cost, or None; got {budget!r}."
                )
        return _replay(
            problem,
            self.models_,
            self.quantile_,
            self.threshold_,
            self.cost_exponent,
            budget=budget,
        )

    @classmethod
    def _get_test_params(cls):
        return {"quantiles": (0.05,), "thresholds": (0.02,), "max_iter": 20}
