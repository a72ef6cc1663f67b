"""The candidates and the CLI demo of ParetoModelSelector."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.model_selection._landmarks import comparable, normalised_hypervolume


def eight_candidates(random_state=0):
    """Eight scikit-learn classifiers of different cost and accuracy."""
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    return [
        GaussianNB(),
        DecisionTreeClassifier(random_state=random_state),
        KNeighborsClassifier(),
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        make_pipeline(StandardScaler(), SVC()),
        RandomForestClassifier(n_estimators=300, random_state=random_state),
        ExtraTreesClassifier(n_estimators=300, random_state=random_state),
        HistGradientBoostingClassifier(random_state=random_state),
    ]


def hv_ratio(selector, exhaustive):
    """Hypervolume of ``selector``'s front over the exhaustive selector's,
    both scaled by the exhaustive selector's range."""
    kinds = selector._kinds
    ref = comparable(
        np.array([[h[o] for o in selector.objectives] for h in exhaustive.history_]),
        kinds,
    )
    lo, hi = ref.min(axis=0), ref.max(axis=0)
    own = comparable(selector.pareto_front_["objectives"], kinds)
    best = comparable(exhaustive.pareto_front_["objectives"], kinds)
    return normalised_hypervolume(own, lo, hi) / normalised_hypervolume(best, lo, hi)


def demo():
    """Breast cancer, 8 classifiers: the front LAMPS finds and what it costs,
    against successive halving, both as shares of the exhaustive search."""
    from sklearn.datasets import load_breast_cancer

    from sklearn_ext.model_selection._lamps import ParetoModelSelector

    X, y = load_breast_cancer(return_X_y=True)
    runs = {
        policy: ParetoModelSelector(
            eight_candidates(), policy=policy, random_state=0
        ).fit(X, y)
        for policy in ("meta", "successive_halving", "exhaustive")
    }
    ex = runs["exhaustive"]
    return {
        "data": "breast cancer, 8 classifiers (error, fit time)",
        "metric": "front hypervolume / exhaustive",
        "score": hv_ratio(runs["meta"], ex),
        "baseline": "successive halving",
        "baseline_score": hv_ratio(runs["successive_halving"], ex),
        "greater_is_better": True,
        "time_saved": 1 - runs["meta"].spent_ / ex.spent_,
        "baseline_time_saved": 1 - runs["successive_halving"].spent_ / ex.spent_,
    }


def policy_demo(cls):
    """Meta-learn on 70% of the LCDB data sets (the selector's default
    parameters, no policy search); replay on the other 30%: mean hypervolume
    ratio to the exhaustive front, against successive halving."""
    from sklearn_ext.datasets import load_lcdb_curves
    from sklearn_ext.model_selection._allocation import successive_halving

    lcdb = load_lcdb_curves()
    order = np.random.default_rng(0).permutation(len(lcdb.final_error))
    cut = int(0.7 * len(order))
    policy = cls(quantiles=(0.05,), thresholds=(0.03,), random_state=0)
    policy.fit(lcdb, datasets=order[:cut])
    problems = [policy.problem(lcdb, d) for d in order[cut:]]
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
