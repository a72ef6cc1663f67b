"""Multi-label classification: long-tailed labels as a bargaining game."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.multilabel._nbcg import (
    NBCGClassifier,
    learn_label_graph,
    nash_bargaining_weights,
)

__all__ = ["NBCGClassifier", "learn_label_graph", "nash_bargaining_weights"]
