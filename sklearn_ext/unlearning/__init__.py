"""Machine unlearning: remove the influence of a forget set from a fitted model."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.unlearning._hamu import HAMUUnlearner, forget_retain_similarity
from sklearn_ext.unlearning._hamu_update import HAMUStep, hamu_step
from sklearn_ext.unlearning._membership import (
    lira_membership_auc,
    membership_inference_auc,
)
from sklearn_ext.unlearning._mlp import UnlearnableMLPClassifier

__all__ = [
    "HAMUStep",
    "HAMUUnlearner",
    "UnlearnableMLPClassifier",
    "forget_retain_similarity",
    "hamu_step",
    "lira_membership_auc",
    "membership_inference_auc",
]
