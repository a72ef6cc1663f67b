"""The toy problem of the PBT paper, as an incrementally trained estimator.

Jaderberg et al. (2017, Fig. 2) maximise Q(θ) = 1.2 − (θ₀² + θ₁²) from
θ = (0.9, 0.9), but each member only ascends the surrogate
Q̂(θ | h) = 1.2 − (h₀θ₀² + h₁θ₁²), so the hyperparameters h decide which
coordinates move. The optimum Q = 1.2 needs h near (1, 1); a member whose h
leaves one coordinate out stalls below it. Used by the tests and by
``benchmarks/bench_ipbt.py``, as is :func:`_covertype_like`, the data of the
search's demo and of the benchmark's covertype-like tasks.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler


def _covertype_like():
    """6,000 samples, 54 standardised features, 7 classes (like covertype).

    ``make_classification`` with 20 informative and 10 redundant features, two
    clusters per class, ``class_sep=0.8`` and 2% flipped labels; the features
    are standardised once on all samples (an unsupervised per-feature scaling
    of generated data, which leaks nothing about the labels).
    """
    X, y = make_classification(
        n_samples=6000,
        n_features=54,
        n_informative=20,
        n_redundant=10,
        n_classes=7,
        n_clusters_per_class=2,
        class_sep=0.8,
        flip_y=0.02,
        random_state=0,
    )
    return StandardScaler().fit_transform(X), y


class _PBTToyProblem(BaseEstimator):
    """One member of the PBT toy problem: ``partial_fit`` is one gradient step.

    The weights are held in ``theta_``, a name shrink-and-perturb does not look
    for, so IPBT restarts this problem from fresh members (θ = (0.9, 0.9)).
    Shrinking θ towards 0 would move it straight to the optimum and flatter
    IPBT.

    Parameters
    ----------
    h0, h1 : float, default=1.0
        Weights of the two coordinates in the surrogate objective.
    learning_rate : float, default=0.01
        Step size of gradient ascent on the surrogate.
    """

    def __init__(self, h0=1.0, h1=1.0, learning_rate=0.01):
        self.h0 = h0
        self.h1 = h1
        self.learning_rate = learning_rate

    def fit(self, X=None, y=None):
        """One gradient step from the start θ = (0.9, 0.9)."""
        if hasattr(self, "theta_"):
            del self.theta_
        return self.partial_fit(X, y)

    def partial_fit(self, X=None, y=None):
        """One gradient step on the surrogate from the current θ."""
        if not hasattr(self, "theta_"):
            self.theta_ = np.array([0.9, 0.9])
        h = np.array([self.h0, self.h1], dtype=float)
        self.theta_ = self.theta_ + self.learning_rate * (-2.0 * h * self.theta_)
        return self

    def score(self, X=None, y=None):
        """The true objective Q(θ) (the one the search sees)."""
        return float(1.2 - np.sum(self.theta_**2))
