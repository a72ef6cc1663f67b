"""The ``python -m sklearn_ext demo`` demos of the model-selection family.

Only the command line (and the test harness that runs the demos) imports this
module. Each ``demo_<ClassName>()`` returns the dict that
:func:`sklearn_ext.__main__.run_demo` documents; ``SECONDS`` holds each demo's
measured time on one core, which orders ``make demo`` (longest first).
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

SECONDS = {
    "IPBTSearchCV": 4,
    "MetaAllocationPolicy": 5,
    "ParetoModelSelector": 9,
}


def demo_IPBTSearchCV():
    """Covertype-like data (3,000 samples), MLP, equal epochs.

    The first 3,000 samples of the benchmark's covertype-like task (half of
    it, which keeps the demo short).
    """
    from scipy.stats import loguniform, uniform
    from sklearn.model_selection import (
        RandomizedSearchCV,
        StratifiedShuffleSplit,
        train_test_split,
    )
    from sklearn.neural_network import MLPClassifier

    from sklearn_ext.model_selection import IPBTSearchCV
    from sklearn_ext.model_selection._toy import _covertype_like

    # The benchmark's covertype-like task (54 features, 7 classes), where a
    # first run stalls early and a restarted population overtakes it.
    X, y = _covertype_like()
    X, y = X[:3000], y[:3000]
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    # Early stopping off: every candidate trains exactly its epochs.
    mlp = MLPClassifier(
        (64,), solver="sgd", batch_size=64, n_iter_no_change=10_000, random_state=0
    )
    space = {
        "learning_rate_init": loguniform(1e-4, 0.3),
        "momentum": uniform(0.0, 0.99),
        "alpha": loguniform(1e-6, 1e-1),
    }
    steps = 40  # epochs per member; both searches train 8 x 40 epochs
    validation = [
        next(
            StratifiedShuffleSplit(1, test_size=0.2, random_state=0).split(
                X_train, y_train
            )
        )
    ]
    ipbt = IPBTSearchCV(
        mlp,
        space,
        population_size=8,
        budget=8 * steps,
        cv=validation,
        random_state=0,
    ).fit(X_train, y_train)
    baseline = RandomizedSearchCV(
        mlp.set_params(max_iter=steps),
        space,
        n_iter=8,
        cv=validation,
        random_state=0,
    )
    with warnings.catch_warnings():
        # Equal budgets: each candidate trains exactly `steps` epochs, so
        # MLP's "maximum iterations reached" is the plan (as it is for the
        # IPBT members, whose search silences it), not a failure.
        warnings.filterwarnings(
            "ignore", "Stochastic Optimizer: Maximum iterations", ConvergenceWarning
        )
        baseline.fit(X_train, y_train)
    return {
        "data": "covertype-like make_classification (3,000 samples, 54 features, "
        "7 classes), MLP, 8 x 40 epochs",
        "metric": "test accuracy",
        "score": ipbt.score(X_test, y_test),
        "baseline": "RandomizedSearchCV",
        "baseline_score": baseline.score(X_test, y_test),
        "greater_is_better": True,
    }


def demo_ParetoModelSelector():
    """Digits, 8 classifiers: error and fit time.

    The forests have 100 trees and the gradient boosting 30 rounds (300 and
    100 in ``bench_lamps.py``'s live part), so that the demo stays short.

    The shipped policy never learned from the digits' source (OpenML 28 is
    held out of its training data). Both fronts are scored as shares of the
    exhaustive search's hypervolume, with what each saves of the exhaustive
    search's cost. (On breast cancer, whose training folds hold 379 rows, the
    selector falls back to the exhaustive search: see ``exhaustive_below``.)
    """
    from sklearn.datasets import load_digits

    from sklearn_ext.model_selection import ParetoModelSelector
    from sklearn_ext.model_selection._lamps_candidates import (
        eight_candidates,
        hv_ratio,
    )

    X, y = load_digits(return_X_y=True)

    def candidates():
        # smaller ensembles than the benchmark's, to keep the demo short
        out = eight_candidates()
        for est in out:
            params = est.get_params()
            if "n_estimators" in params:
                est.set_params(n_estimators=100)
            if type(est).__name__ == "HistGradientBoostingClassifier":
                est.set_params(max_iter=30)
        return out

    runs = {
        policy: ParetoModelSelector(candidates(), policy=policy, random_state=0).fit(
            X, y
        )
        for policy in ("meta", "successive_halving", "exhaustive")
    }
    ex = runs["exhaustive"]
    return {
        "data": "digits, 8 classifiers (error, fit time)",
        "metric": "front hypervolume / exhaustive",
        "score": hv_ratio(runs["meta"], ex),
        "baseline": "successive halving",
        "baseline_score": hv_ratio(runs["successive_halving"], ex),
        "greater_is_better": True,
        "time_saved": 1 - runs["meta"].spent_ / ex.spent_,
        "baseline_time_saved": 1 - runs["successive_halving"].spent_ / ex.spent_,
    }


def demo_MetaAllocationPolicy():
    """LCDB learning curves: 70% of data sets learn, 30% test.

    The shipped policy's quantile and threshold (chosen by the policy search
    on the learning 70% only), no policy search here; replayed on the
    held-out data sets: mean hypervolume ratio to the exhaustive front,
    against successive halving.
    """
    from sklearn_ext.datasets import load_lcdb_curves
    from sklearn_ext.model_selection import MetaAllocationPolicy
    from sklearn_ext.model_selection._allocation import successive_halving
    from sklearn_ext.model_selection._lamps import DEFAULT_PAIR, demo_split

    lcdb = load_lcdb_curves()
    train, test = demo_split(lcdb)
    # The shipped pair was chosen by the policy search on ``train`` only.
    q, t = DEFAULT_PAIR
    policy = MetaAllocationPolicy(quantiles=(q,), thresholds=(t,), random_state=0)
    policy.fit(lcdb, datasets=train)
    problems = [policy.problem(lcdb, d) for d in test]
    problems = [p for p in problems if p is not None]
    ours = [policy.search(p) for p in problems]
    halving = [successive_halving(p) for p in problems]
    return {
        "data": f"LCDB, {len(problems)} held-out data sets x 20 learners",
        "metric": "hypervolume / exhaustive",
        "score": float(np.mean([r.hv_ratio for r in ours])),
        "baseline": "successive halving",
        "baseline_score": float(np.mean([r.hv_ratio for r in halving])),
        "greater_is_better": True,
        "time_saved": float(np.mean([r.time_saved for r in ours])),
        "baseline_time_saved": float(np.mean([r.time_saved for r in halving])),
    }
