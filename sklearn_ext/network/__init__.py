"""Multilayer networks: tensor generalized estimating equations (T-GINEE)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_ext.network._dyads import dyads_to_tensor, tensor_to_dyads
from sklearn_ext.network._tginee import TGINEE

__all__ = ["TGINEE", "dyads_to_tensor", "tensor_to_dyads"]
