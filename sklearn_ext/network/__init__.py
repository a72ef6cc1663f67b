"""Networks: multilayer networks (T-GINEE) and brain-network classification (MuHL)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.network._connectome import ConnectomeVectorizer
from sklearn_ext.network._dyads import dyads_to_tensor, tensor_to_dyads
from sklearn_ext.network._muhl import MuHLClassifier
from sklearn_ext.network._tginee import TGINEE
from sklearn_ext.network._tginee_selection import (
    NodeKFold,
    get_observed_scorer,
    observed_accuracy_score,
    observed_log_loss,
    observed_r2_score,
    observed_roc_auc_score,
)
from sklearn_ext.network._tginee_summary import TGINEESummary

__all__ = [
    "TGINEE",
    "ConnectomeVectorizer",
    "MuHLClassifier",
    "NodeKFold",
    "TGINEESummary",
    "dyads_to_tensor",
    "get_observed_scorer",
    "observed_accuracy_score",
    "observed_log_loss",
    "observed_r2_score",
    "observed_roc_auc_score",
    "tensor_to_dyads",
]
