"""Eight candidate classifiers and the hypervolume ratio LAMPS is judged by.

Shared by the demo, ``benchmarks/bench_lamps.py`` and the LAMPS example.
"""

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
