"""Networks: multilayer networks (T-GINEE) and brain-network classification (MuHL)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.network._connectome import ConnectomeVectorizer
from sklearn_ext.network._dyads import dyads_to_tensor, tensor_to_dyads
from sklearn_ext.network._muhl import MuHLClassifier
from sklearn_ext.network._tginee import TGINEE

__all__ = [
    "TGINEE",
    "ConnectomeVectorizer",
    "MuHLClassifier",
    "dyads_to_tensor",
    "tensor_to_dyads",
]
