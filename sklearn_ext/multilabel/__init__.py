"""Multi-label classification: long-tailed labels as a bargaining game."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.multilabel._bargaining import nash_bargaining_weights
from sklearn_ext.multilabel._label_graph import learn_label_graph
from sklearn_ext.multilabel._nbcg import NBCGClassifier
from sklearn_ext.multilabel._thresholds import f1_thresholds, validation_split

__all__ = [
    "NBCGClassifier",
    "f1_thresholds",
    "learn_label_graph",
    "nash_bargaining_weights",
    "validation_split",
]
