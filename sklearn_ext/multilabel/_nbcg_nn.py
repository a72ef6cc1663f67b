"""NBCG's network and its bargaining-weighted minibatch loss (torch)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn
from torch.nn import functional as F

from sklearn_ext.multilabel._bargaining import nash_bargaining_weights
from sklearn_ext.utils._torch import weighted_mean

__all__ = ["BargainingLoss", "NBCGNet"]


class NBCGNet(nn.Module):
    """Shared trunk, coalition channels, masked label heads.

    ``channels`` maps the shared representation to one block of channels per
    coalition; label ``l`` reads the blocks its coalition's mask allows
    (``read_mask``, a fixed 0/1 buffer of shape (total width, n_labels)).
    Everything after the trunk is linear, so the gradient of each coalition's
    loss at the shared representation has a closed form (:meth:`readout`).

    Parameters
    ----------
    n_features : int
    hidden : tuple of int
        Widths of the trunk's hidden layers (ReLU); ``()`` makes the trunk the
        identity.
    widths : sequence of int
        Channels of each coalition's block.
    n_labels : int
    read_mask : ndarray of shape (sum(widths), n_labels)
    """

    def __init__(self, n_features, hidden, widths, n_labels, read_mask):
        super().__init__()
        layers, d = [], n_features
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.trunk = nn.Sequential(*layers)
        self.channels = nn.Linear(d, int(sum(widths)), bias=False)
        self.heads = nn.Linear(int(sum(widths)), n_labels)
        self.register_buffer("read_mask", torch.as_tensor(read_mask).float())

    def readout(self):
        """Effective linear map from the shared representation to logits."""
        return self.channels.weight.T @ (self.heads.weight.T * self.read_mask)

    def forward(self, X):
        shared = self.trunk(X)
        z = self.channels(shared)
        logits = z @ (self.heads.weight.T * self.read_mask) + self.heads.bias
        return logits, shared


class BargainingLoss:
    """The minibatch loss of NBCG's stage 3: coalitions bargain over the step.

    Called with a minibatch's indices (by the shared training loop), it
    returns the bargaining-weighted loss ``sum_c alpha_c L_c / K`` for the
    gradient, while its value is the unweighted mean coalition loss (which
    early stopping watches). ``L_c`` is the (sample-weighted) mean over the
    batch of the coalition's per-sample loss: the mean over its labels of the
    binary cross-entropy divided by the label's prior entropy. The weights
    ``alpha`` are the Nash bargaining solution over the coalitions' gradients
    at the shared representation (closed form, see :meth:`NBCGNet.readout`)
    and their surpluses over a disagreement point that trails each
    coalition's loss; with ``nash=False`` every weight is 1.

    Parameters
    ----------
    module : NBCGNet
    rows : callable
        ``rows(idx) -> (X_batch, y_batch, sample_weight_batch or None)`` on the
        device; the weights have mean 1 over the training set.
    label_scale : tensor of shape (n_labels,)
        ``1 / (prior entropy * size of the label's coalition)``.
    member : tensor of shape (n_labels, n_coalitions)
        0/1 membership of each label in its coalition.
    disagreement : tensor of shape (n_coalitions,)
        Starting disagreement point.
    rate : float
        Per-step rate at which the disagreement point follows the losses.
    nash : bool
        Bargaining weights (True) or all weights 1 (False, the ablation).
    """

    def __init__(self, module, rows, label_scale, member, disagreement, rate, nash):
        self.module = module
        self.rows = rows
        self.label_scale = label_scale
        self.member = member
        self.disagreement = disagreement
        self.rate = rate
        self.nash = nash
        self.step_weights = []
        self._previous = None  # raw bargaining solution of the previous step

    def _weights(self, logits, yb, wb, losses):
        if not self.nash:
            return torch.ones_like(losses)
        # d(L_c)/d(logit_l) of each sample, for l in c: the closed form of the
        # coalitions' gradients at the shared representation.
        E = (torch.sigmoid(logits) - yb) * self.label_scale / len(yb)
        if wb is not None:
            E = E * wb[:, None]
        U = self.module.readout()
        gram = self.member.T @ ((E.T @ E) * (U.T @ U)) @ self.member
        surplus = (self.disagreement - losses).clamp_min(0) / self.disagreement
        weights, self._previous = nash_bargaining_weights(
            gram.double().cpu().numpy(),
            surplus.double().cpu().numpy(),
            init=self._previous,
            return_raw=True,
        )
        return torch.as_tensor(weights).to(losses)

    def __call__(self, idx):
        xb, yb, wb = self.rows(idx)
        logits, _ = self.module(xb)
        bce = F.binary_cross_entropy_with_logits(logits, yb, reduction="none")
        # (batch, K): each sample's relative loss in each coalition.
        per_sample = (bce * self.label_scale) @ self.member
        K = per_sample.shape[1]
        with torch.no_grad():
            losses = weighted_mean(per_sample, wb)
            weights = self._weights(logits, yb, wb, losses)
            self.disagreement = self.disagreement + self.rate * (
                losses - self.disagreement
            )
            self.step_weights.append(weights)
        weighted = weighted_mean(per_sample @ weights / K, wb)
        # Report the unweighted mean coalition loss (for early stopping); the
        # gradient is the bargaining-weighted one.
        return weighted + (losses.sum() / K - weighted).detach()
