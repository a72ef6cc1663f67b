"""Fingerprints of the model_selection family's benchmarks (see the package
docstring)."""

from ._common import concat as _concat


def ipbt():
    """IPBT at its defaults (restarts, 1% first interval) on a small MLP search.

    The MLP on 300 digits with the benchmark's search space, 4 members and 100
    epochs each: the stagnation test fires two restarts (shrink-and-perturb
    weights, GP-proposed settings) and the refit replays the best lineage;
    plus plain PBT with a fixed interval of 4 epochs (30 epochs each), and a
    short search over ``NBCGClassifier``, the package's estimator that one of
    the benchmark's tasks trains.
    """
    import warnings

    from scipy.stats import loguniform, uniform
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    from sklearn_ext.model_selection import IPBTSearchCV
    from sklearn_ext.multilabel import NBCGClassifier

    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16, y[:300]
    space = {
        "learning_rate_init": loguniform(1e-4, 0.3),
        "momentum": uniform(0.0, 0.99),
        "alpha": loguniform(1e-6, 1e-1),
    }
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for epochs, kw in ((100, {}), (30, {"restarts": False, "ready_interval": 4})):
            search = IPBTSearchCV(
                MLPClassifier((16,), solver="sgd", batch_size=64, random_state=0),
                space,
                population_size=4,
                budget=4 * epochs,
                random_state=0,
                **kw,
            ).fit(X, y)
            out += [
                search.best_score_,
                search.n_restarts_,
                search.cv_results_["mean_test_score"],
                search.predict_proba(X[:20]),
            ]
        # One task of the benchmark trains this package's NBCGClassifier.
        search = IPBTSearchCV(
            NBCGClassifier(
                hidden_layer_sizes=(16,),
                n_iter_no_change=10_000,
                device="cpu",
                random_state=0,
            ),
            {"learning_rate_init": loguniform(1e-4, 0.1)},
            population_size=3,
            budget=3 * 6,
            random_state=0,
        ).fit(X[:200], y[:200])
        out += [search.cv_results_["mean_test_score"], search.predict_proba(X[:20])]
    return _concat(*out)


def lamps():
    """LAMPS' policy meta-learned on LCDB curves, replayed on held-out data sets,
    and the selector's landmark evaluations on real data.

    The policy (one quantile and threshold, as the selector's default) learns
    on 40 LCDB data sets and searches 10 others, beside successive halving,
    Hyperband-style brackets and random order at its cost. The live part runs
    ``ParetoModelSelector`` with error objectives only (fit times are measured
    and would make the fingerprint vary): its landmark fits, cross-validation
    and front under successive halving and the exhaustive search.
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_ext.datasets import load_lcdb_curves
    from sklearn_ext.model_selection import MetaAllocationPolicy, ParetoModelSelector
    from sklearn_ext.model_selection._allocation import (
        hyperband,
        random_search,
        successive_halving,
    )

    lcdb = load_lcdb_curves()
    policy = MetaAllocationPolicy(
        quantiles=(0.05,), thresholds=(0.03,), max_iter=30, random_state=0
    ).fit(lcdb, datasets=list(range(40)))
    out = [policy.quantile_, policy.threshold_]
    for d in range(40, 50):
        problem = policy.problem(lcdb, d)
        if problem is None:
            continue
        ours = policy.search(problem)
        for result in (
            ours,
            policy.search(problem, budget=0.3),
            successive_halving(problem),
            hyperband(problem, ours.spent, random_state=0),
            random_search(problem, ours.spent, random_state=0),
        ):
            out += [result.hv_ratio, result.time_saved]
    X, y = load_breast_cancer(return_X_y=True)
    candidates = [
        GaussianNB(),
        DecisionTreeClassifier(random_state=0),
        KNeighborsClassifier(),
        LogisticRegression(max_iter=2000),
    ]
    for name in ("successive_halving", "exhaustive"):
        sel = ParetoModelSelector(
            candidates,
            objectives=("error", "log_loss"),
            policy=name,
            random_state=0,
        ).fit(X, y)
        out += [
            sorted(sel.pareto_front_["candidates"]),
            sel.pareto_front_["objectives"],
            [h["error"] for h in sel.history_],
        ]
    return _concat(*out)


FINGERPRINTS = {
    "ipbt": ipbt,
    "lamps": lamps,
}
