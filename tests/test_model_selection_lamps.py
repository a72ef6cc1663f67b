"""LAMPS: landmark problems, allocation baselines, the meta-learned policy and
ParetoModelSelector."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression, RidgeClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_ext.datasets import load_lcdb_curves
from sklearn_ext.model_selection import (
    LandmarkProblem,
    MetaAllocationPolicy,
    ParetoModelSelector,
    pareto_mask,
)
from sklearn_ext.model_selection._allocation import (
    exhaustive_search,
    hyperband,
    random_search,
    successive_halving,
)
from sklearn_ext.model_selection._landmarks import comparable


@pytest.fixture(scope="module")
def lcdb():
    return load_lcdb_curves()


@pytest.fixture(scope="module")
def split(lcdb):
    order = np.random.default_rng(0).permutation(len(lcdb.final_error))
    return order[:150], order[200:240]


@pytest.fixture(scope="module")
def policy(lcdb, split):
    return MetaAllocationPolicy(
        quantiles=(0.05,), thresholds=(0.02,), max_iter=60, random_state=0
    ).fit(lcdb, datasets=split[0])


def test_lcdb_problem_landmarks_are_increasing_fractions(lcdb):
    problem, learners = LandmarkProblem.from_lcdb(lcdb, 3)
    assert problem.objectives.shape == (len(learners), 4, 2)
    assert np.all(np.diff(problem.sizes, axis=1) > 0)
    ratio = problem.sizes[:, :3] / problem.sizes[:, 3:]
    assert np.all((ratio > 0.02) & (ratio < 0.5))
    np.testing.assert_array_equal(
        problem.objectives[:, -1, 0], lcdb.final_error[3, learners]
    )


def test_baselines_account_their_cost(lcdb):
    problem = LandmarkProblem.from_lcdb(lcdb, 7)[0]
    full = exhaustive_search(problem)
    assert full.hv_ratio == pytest.approx(1.0)
    assert full.time_saved == pytest.approx(0.0)
    assert set(full.front) == set(problem.true_front())
    sh = successive_halving(problem)
    n = problem.n_candidates
    for _ in range(3):  # halved at each of the three landmarks
        n = int(np.ceil(n / 2))
    assert 0 <= sh.hv_ratio <= 1 and len(sh.full) == n
    for share in (0.05, 0.3, 0.8):
        cost = share * problem.exhaustive_cost()
        results = (
            random_search(problem, cost, 0),
            hyperband(problem, cost, 2, 0),
            successive_halving(problem, cost=cost),
        )
        for result in results:
            # Equal cost: no baseline spends more than it is given.
            assert result.spent <= cost + 1e-9
            assert 0 <= result.hv_ratio <= 1
        # Hyperband (its last bracket fits in full directly) ends with a full
        # fit whenever one fits; halving needs a whole first landmark round.
        cheapest_full = problem.costs[:, -1].min() + problem.costs[:, :-1].min()
        if cost > 2 * cheapest_full:
            assert results[1].full
        if cost > sh.spent:
            assert results[2].full
    # Given more than its own run costs, halving spends the rest on full fits.
    more = successive_halving(problem, cost=sh.spent + problem.costs[:, -1].max())
    assert more.spent > sh.spent and len(more.full) > len(sh.full)
    assert more.hv_ratio >= sh.hv_ratio


def test_policy_finds_the_front_cheaper_than_exhaustive(policy, lcdb, split):
    results = [policy.search(p) for d in split[1] if (p := policy.problem(lcdb, d))]
    hv = np.mean([r.hv_ratio for r in results])
    saved = np.mean([r.time_saved for r in results])
    halving = [
        successive_halving(p) for d in split[1] if (p := policy.problem(lcdb, d))
    ]
    assert hv > 0.98
    assert saved > 0.3
    assert hv > np.mean([r.hv_ratio for r in halving]) + 0.05


def test_optimism_is_what_keeps_the_front(lcdb, split, policy):
    """Judging candidates by their median prediction loses front members."""
    median = MetaAllocationPolicy(
        quantiles=(0.5,), thresholds=(0.02,), max_iter=60, random_state=0
    ).fit(lcdb, datasets=split[0])
    problems = [p for d in split[1] if (p := policy.problem(lcdb, d))]
    ours = np.mean([policy.search(p).hv_ratio for p in problems])
    assert np.mean([median.search(p).hv_ratio for p in problems]) < ours - 0.01


def test_budget_caps_the_spending(policy, lcdb, split):
    cut = 0
    problems = [p for d in split[1] if (p := policy.problem(lcdb, d))]
    for problem in problems:
        free, capped = policy.search(problem), policy.search(problem, budget=0.1)
        assert capped.spent <= free.spent + 1e-12
        assert capped.time_saved > 0.5  # the landmark pass plus at most ~10%
        cut += capped.spent < free.spent - 1e-12
    assert cut >= len(problems) // 2  # the cap binds on most data sets


def test_planted_dominated_expensive_candidate_is_never_fit_in_full(policy):
    """A slow candidate whose landmarks are far worse than a fast one's is
    dropped at its first landmark."""
    sizes = np.tile([100.0, 200.0, 500.0, 2000.0], (3, 1))
    err = np.array(
        [[0.30, 0.25, 0.20, 0.15], [0.20, 0.17, 0.14, 0.12], [0.60, 0.60, 0.60, 0.60]]
    )
    time = np.array(
        [[0.01, 0.02, 0.05, 0.2], [0.05, 0.1, 0.25, 1.0], [5.0, 10.0, 25.0, 100.0]]
    )
    problem = LandmarkProblem(np.stack([err, time], -1), time.copy(), sizes)
    result = policy.search(problem)
    assert 2 not in result.full
    assert set(result.front) == {0, 1}
    assert result.time_saved > 0.9


def test_policy_search_respects_the_target(lcdb):
    problems = [p for d in range(24) if (p := LandmarkProblem.from_lcdb(lcdb, d)[0])]
    common = {"quantiles": (0.02, 0.2), "thresholds": (0.01, 0.05), "max_iter": 15}
    strict = MetaAllocationPolicy(target_hypervolume=1.0, **common).fit(problems)
    loose = MetaAllocationPolicy(target_hypervolume=0.0, **common).fit(problems)
    table = strict.search_results_
    assert len(table) == 4
    best_hv = max(table, key=lambda r: r["hv_ratio"])
    assert (strict.quantile_, strict.threshold_) == (
        best_hv["quantile"],
        best_hv["threshold"],
    )
    best_saved = max(loose.search_results_, key=lambda r: r["time_saved"])
    assert (loose.quantile_, loose.threshold_) == (
        best_saved["quantile"],
        best_saved["threshold"],
    )


# --- the live selector -----------------------------------------------------------


def _data():
    return make_classification(
        n_samples=400, n_features=10, n_informative=5, random_state=0
    )


CANDIDATES = [
    DummyClassifier(),
    GaussianNB(),
    LogisticRegression(),
    DecisionTreeClassifier(random_state=0),
]


@pytest.mark.parametrize("policy", ["meta", "successive_halving", "exhaustive"])
def test_selector_front_is_the_front_of_its_full_evaluations(policy):
    X, y = _data()
    # 267 rows per training fold: below exhaustive_below, so switch the
    # small-data fallback off for the meta policy to run its landmarks.
    sel = ParetoModelSelector(
        CANDIDATES, policy=policy, exhaustive_below=None, random_state=0
    ).fit(X, y)
    assert not sel.fallback_
    top = len(sel.landmarks) if policy != "exhaustive" else 0
    full = [h for h in sel.history_ if h["level"] == "full"]
    assert {h["candidate"] for h in full} == set(np.flatnonzero(sel.levels_ == top))
    values = np.array([[h["error"], h["fit_time"]] for h in full])
    front = {
        full[i]["candidate"]
        for i in np.flatnonzero(
            pareto_mask(np.round(comparable(values, ("error", "cost")), 10))
        )
    }
    assert set(sel.pareto_front_["candidates"]) == front
    # spent_ counts every evaluation and the refits of the front on all of X.
    evaluations = sum(h["seconds"] for h in sel.history_)
    assert sel.refit_time_ > 0
    assert sel.spent_ == pytest.approx(evaluations + sel.refit_time_)
    res = sel.cv_results_
    assert len(res["candidate"]) == len(sel.history_)
    assert res["on_front"].sum() == len(sel.pareto_front_["candidates"])
    np.testing.assert_allclose(
        res["mean_test_error"], [h["error"] for h in sel.history_]
    )
    np.testing.assert_allclose(res["mean_test_error"], 1 - res["mean_test_score"])
    at_landmark = res["level"] < top
    assert (res["rank_test_score"].mask == at_landmark).all()
    assert 0 < sel.hypervolume_ <= 1.1**2
    assert sel.predict(X).shape == y.shape
    if policy == "exhaustive":
        assert all(h["level"] == "full" for h in sel.history_)


def test_small_data_falls_back_to_the_exhaustive_search():
    X, y = _data()  # 267 rows per training fold, under the default 1000
    sel = ParetoModelSelector(CANDIDATES, random_state=0).fit(X, y)
    ex = ParetoModelSelector(CANDIDATES, policy="exhaustive", random_state=0)
    ex.fit(X, y)
    assert sel.fallback_ and not ex.fallback_
    assert all(h["level"] == "full" for h in sel.history_)
    assert (sel.levels_ == len(sel.landmarks)).all()
    # the same evaluations (fit times differ by timing noise, errors do not)
    for res in (sel.cv_results_, ex.cv_results_):
        np.testing.assert_array_equal(res["candidate"], np.arange(len(CANDIDATES)))
    np.testing.assert_array_equal(
        sel.cv_results_["mean_test_error"], ex.cv_results_["mean_test_error"]
    )
    below = ParetoModelSelector(CANDIDATES, exhaustive_below=200, random_state=0)
    assert not below.fit(X, y).fallback_


def test_scoring_gives_the_error_and_extra_objectives():
    X, y = _data()
    sel = ParetoModelSelector(
        CANDIDATES[1:],
        objectives=("error", "roc_auc", "fit_time"),
        scoring=["balanced_accuracy", "roc_auc"],
        policy="exhaustive",
        random_state=0,
    ).fit(X, y)
    res = sel.cv_results_
    for name in ("balanced_accuracy", "roc_auc"):
        assert f"split2_test_{name}" in res and f"rank_test_{name}" in res
    # "error" is the loss of the first scorer, a scorer objective its own loss
    np.testing.assert_allclose(
        res["mean_test_error"], 1 - res["mean_test_balanced_accuracy"]
    )
    rows = {c: i for i, c in enumerate(res["candidate"])}
    for c, obj in zip(sel.pareto_front_["candidates"], sel.pareto_front_["objectives"]):
        assert obj[1] == pytest.approx(1 - res["mean_test_roc_auc"][rows[c]])
    assert sel.pareto_front_["objectives"].shape[1] == 3
    pd = pytest.importorskip("pandas")
    assert len(pd.DataFrame(res)) == len(CANDIDATES) - 1


def test_select_scalarises_the_front():
    X, y = _data()
    sel = ParetoModelSelector(CANDIDATES, policy="exhaustive", random_state=0).fit(X, y)
    obj = sel.pareto_front_["objectives"]
    cands = sel.pareto_front_["candidates"]
    assert sel.best_index_ == cands[np.argmin(obj[:, 0])]  # the default
    assert sel.select(weights=(0, 1)).best_index_ == cands[np.argmin(obj[:, 1])]
    assert sel.best_estimator_ is sel.front_estimators_[sel.best_index_]
    np.testing.assert_array_equal(sel.predict(X), sel.best_estimator_.predict(X))


def test_log_loss_objective_and_objective_order():
    X, y = _data()
    sel = ParetoModelSelector(
        [GaussianNB(), LogisticRegression()],
        objectives=("fit_time", "log_loss"),
        policy="exhaustive",
        random_state=0,
    ).fit(X, y)
    assert sel.pareto_front_["objectives"].shape[1] == 2
    # Columns follow ``objectives``: the first is a time, the second a loss.
    h = {x["candidate"]: x for x in sel.history_}
    for i, row in zip(sel.pareto_front_["candidates"], sel.pareto_front_["objectives"]):
        assert row.tolist() == [h[i]["fit_time"], h[i]["log_loss"]]


def test_regression_candidates():
    X, y = make_regression(n_samples=300, n_features=5, noise=1.0, random_state=0)
    sel = ParetoModelSelector(
        [LinearRegression(), DecisionTreeRegressor(random_state=0)], random_state=0
    ).fit(X, y)
    assert sel.predict(X).shape == y.shape
    assert sel.pareto_front_["objectives"][:, 0].min() < 0.05  # 1 - R^2 of OLS


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"candidates": [GaussianNB()]}, "at least two candidates"),
        ({"objectives": ("error", "memory")}, "objectives must be distinct names"),
        ({"objectives": ("fit_time",)}, "must include a quality objective"),
        ({"scoring": "no_such_scorer"}, "not a valid scoring value"),
        ({"objectives": ("roc_auc", "fit_time")}, "objectives must be distinct"),
        (
            {"objectives": ("roc_auc", "fit_time"), "scoring": "roc_auc"},
            "policy='meta' needs the objective 'error'",
        ),
        ({"scoring": {"error": "accuracy"}}, "also a built-in objective"),
        ({"objectives": ("error", "error")}, "distinct"),
        (
            {
                "candidates": [GaussianNB(), RidgeClassifier()],
                "objectives": ("log_loss",),
            },
            r"needs predict_proba.*1 \(RidgeClassifier\)",
        ),
        ({"candidates": [GaussianNB(), LinearRegression()]}, "all classifiers or all"),
        ({"budget": 0.02}, "below the cost of one landmark pass"),
        ({"landmarks": (0.2, 0.1, 0.3)}, "increasing fractions"),
        ({"landmarks": (0.1, 0.2)}, "learned with 3 landmarks"),
    ],
)
def test_selector_bad_input(kwargs, match):
    X, y = _data()
    params = {"candidates": [GaussianNB(), LogisticRegression()], **kwargs}
    with pytest.raises(ValueError, match=match):
        ParetoModelSelector(**params).fit(X, y)


def test_select_bad_weights():
    X, y = _data()
    sel = ParetoModelSelector(CANDIDATES[:2], policy="exhaustive").fit(X, y)
    for w, match in (
        ((1,), "2 non-negative"),
        ((-1, 1), "non-negative"),
        ((0, 0), "all be zero"),
    ):
        with pytest.raises(ValueError, match=match):
            sel.select(w)


def test_policy_bad_input(lcdb):
    with pytest.raises(
        TypeError, match=r"Bunch of load_lcdb_curves\(\) or a list of LandmarkProblem"
    ):
        MetaAllocationPolicy().fit(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="at least n_splits=3"):
        MetaAllocationPolicy().fit([LandmarkProblem.from_lcdb(lcdb, 0)[0]])
    with pytest.raises(ValueError, match="increasing fractions of the training set"):
        MetaAllocationPolicy(landmarks=(0.5, 0.1)).fit(lcdb)
    with pytest.raises(ValueError, match="quantiles must be"):
        MetaAllocationPolicy(quantiles=(0.7,)).fit(lcdb)


# --- the learned allocation policy ---------------------------------------------


def test_learned_policy_prices_cost_as_its_reward_says(lcdb, split):
    from sklearn_ext.model_selection._allocation_rl import fit_q_policy, q_search

    train, test = split
    policy = MetaAllocationPolicy(
        quantiles=(0.05,), thresholds=(0.02,), max_iter=50, random_state=0
    ).fit(lcdb, datasets=train[:60])
    problems = [policy.problem(lcdb, d) for d in train[60:72]]
    held_out = [policy.problem(lcdb, d) for d in test[:10]]
    groups = [([p for p in problems if p is not None], policy.models_)]
    q, t = policy.quantile_, policy.threshold_
    results = {}
    for lam in (0.0, 50.0):
        qf = fit_q_policy(groups, q, t, lam=lam, n_iter=2, random_state=0)
        results[lam] = [q_search(p, policy.models_, q, qf) for p in held_out if p]
    # Free evaluations: the learned policy evaluates until the front is found.
    assert np.mean([r.hv_ratio for r in results[0.0]]) > 0.95
    # Evaluations priced far above any gain: it evaluates little in full.
    saved = {lam: np.mean([r.time_saved for r in res]) for lam, res in results.items()}
    full = {lam: np.mean([len(r.full) for r in res]) for lam, res in results.items()}
    assert saved[50.0] > saved[0.0] + 0.3
    assert full[50.0] < full[0.0] / 2


def test_learned_stop_follows_the_rule_and_prices_cost(lcdb, split):
    from sklearn_ext.model_selection._allocation_rl import (
        _stopped_run,
        fit_stop_policy,
        hindsight_stop,
        search_return,
        stop_search,
    )

    train, test = split
    policy = MetaAllocationPolicy(
        quantiles=(0.05,), thresholds=(0.02,), max_iter=50, random_state=0
    ).fit(lcdb, datasets=train[:60])
    q, t = policy.quantile_, policy.threshold_
    problems = [p for p in (policy.problem(lcdb, d) for d in train[60:72]) if p]
    held_out = [p for p in (policy.problem(lcdb, d) for d in test[:10]) if p]
    # Its ranking is the rule's: not continued and never stopped, the same search.
    for p in held_out[:4]:
        rule = policy.search(p)
        ranked = _stopped_run(p, policy.models_, q, t, explore=t)[0]
        assert (ranked.hv_ratio, ranked.time_saved) == (rule.hv_ratio, rule.time_saved)
    # No stop beats the best one chosen in hindsight on the same choices.
    value = fit_stop_policy([(problems, policy.models_)], q, t, random_state=0)
    for p in held_out:
        r = stop_search(p, policy.models_, q, t, value, margin=0.0)
        bound = hindsight_stop(p, policy.models_, q, t)
        assert search_return(r) <= bound + 1e-12
    results = {}
    for lam in (0.0, 50.0):
        value = fit_stop_policy(
            [(problems, policy.models_)], q, t, lam=lam, random_state=0
        )
        results[lam] = [
            stop_search(p, policy.models_, q, t, value, margin=0.0) for p in held_out
        ]
    # Free evaluations: it goes on until the front is found.
    assert np.mean([r.hv_ratio for r in results[0.0]]) > 0.95
    # Evaluations priced far above any gain: it stops soon after the first
    # full fit (it may not stop before one).
    saved = {lam: np.mean([r.time_saved for r in res]) for lam, res in results.items()}
    full = {lam: np.mean([len(r.full) for r in res]) for lam, res in results.items()}
    assert saved[50.0] > saved[0.0] + 0.2
    assert full[50.0] < full[0.0] - 1
    assert all(len(r.full) >= 1 for r in results[50.0])
