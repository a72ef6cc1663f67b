"""NBCG's network and its bargaining minibatch loss (torch)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn
from torch.nn import functional as F

from sklearn_ext.multilabel._bargaining import nash_bargaining_weights
from sklearn_ext.utils._torch import weighted_mean

__all__ = ["BargainingLoss", "NBCGNet"]


class _MaskedLinear(nn.Linear):
    """A linear layer whose weight is multiplied by a fixed 0/1 mask.

    Masked weights take part neither in the output nor in the gradient, so the
    restriction is structural: no setting of the parameters reaches them.
    """

    def __init__(self, n_in, n_out, mask, bias=True):
        super().__init__(n_in, n_out, bias=bias)
        self.register_buffer("mask", torch.as_tensor(mask, dtype=torch.float32))

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


def _block_mask(sizes_in, sizes_out):
    """(sum out, sum in) 0/1 mask: block ``c`` of the outputs reads block ``c``."""
    mask = torch.zeros(int(sum(sizes_out)), int(sum(sizes_in)))
    i = o = 0
    for a, b in zip(sizes_in, sizes_out):
        mask[o : o + b, i : i + a] = 1.0
        i, o = i + a, o + b
    return mask


class NBCGNet(nn.Module):
    """One sub-encoder per coalition, masked label heads.

    Coalition ``c`` has its own encoder from the features to its block of
    channels (``widths[c]`` of them): hidden layers of ``hidden`` units per
    coalition (ReLU), computed together as block-diagonal masked layers. The
    head of label ``l`` reads only the channels that ``read_mask[:, l]``
    allows: those of its coalition and of its coalition's ancestors in the
    label graph. The logits of a coalition's labels are thus exactly
    unchanged by the channels, the encoders and hence the weights of any
    coalition outside its ancestry.

    Parameters
    ----------
    n_features : int
    hidden : tuple of int
        Hidden units per coalition, per layer; ``()`` makes each encoder
        linear.
    widths : sequence of int
        Channels of each coalition's block.
    n_labels : int
    read_mask : array-like of shape (sum(widths), n_labels)
        0/1: which channels each label's head reads.
    """

    def __init__(self, n_features, hidden, widths, n_labels, read_mask):
        super().__init__()
        K = len(widths)
        layers, sizes = [], None
        for h in hidden:
            if sizes is None:  # first layer: every coalition reads the features
                layers += [nn.Linear(n_features, K * h), nn.ReLU()]
            else:
                mask = _block_mask(sizes, [h] * K)
                layers += [_MaskedLinear(sum(sizes), K * h, mask), nn.ReLU()]
            sizes = [h] * K
        self.encoders = nn.Sequential(*layers)
        if sizes is None:
            self.channels = nn.Linear(n_features, int(sum(widths)), bias=False)
        else:
            mask = _block_mask(sizes, widths)
            self.channels = _MaskedLinear(sum(sizes), int(sum(widths)), mask, False)
        read = torch.as_tensor(read_mask, dtype=torch.float32).T
        self.heads = _MaskedLinear(int(sum(widths)), n_labels, read)

    def readout(self):
        """(n_labels, channels): the effective (masked) head weights."""
        return self.heads.weight * self.heads.mask

    def forward(self, X, *, head_grad_scale=None):
        """Logits and channels.

        ``head_grad_scale``, a callable returning a (n_labels,) tensor, scales
        the gradient that reaches each label's head; it is called during the
        backward pass, so the scale may be set after the forward pass.
        """
        z = self.channels(self.encoders(X))
        W, b = self.readout(), self.heads.bias * 1.0
        if head_grad_scale is not None and torch.is_grad_enabled():
            W.register_hook(lambda g: g * head_grad_scale()[:, None])
            b.register_hook(lambda g: g * head_grad_scale())
        return F.linear(z, W, b), z


class BargainingLoss:
    """The minibatch loss of NBCG's stage 3: coalitions bargain over the encoders.

    Called with a minibatch's indices (by the shared training loop), it
    returns a loss whose gradient is

    - for the encoders (shared by a coalition and its descendants):
      ``sum_c alpha_c grad L_c / K``, the Nash bargaining combination of the
      coalitions' gradients (Nash-MTL's update direction on the shared
      parameters);
    - for each coalition's label heads: ``grad L_c / K``, its own loss only
      (the bargaining weight is divided back out of the heads' gradient).

    Its value is the unweighted mean coalition loss, which early stopping
    watches. ``L_c`` is the (sample-weighted) mean over the batch of the
    coalition's per-sample loss: the mean over its labels of the binary
    cross-entropy divided by the label's prior entropy. The weights ``alpha``
    solve the bargaining problem over the coalitions' gradients at the
    channels (closed form, the heads being linear: an upper-bound surrogate of
    the gradients on the encoders, as in MGDA-UB) and their surpluses over a
    disagreement point that trails each coalition's loss. With ``nash=False``
    every weight is 1 (the plain sum, the ablation). Everything stays on the
    model's device.

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
        self.coalition_of = member.argmax(1)
        self.disagreement = disagreement
        self.rate = rate
        self.nash = nash
        self.step_weights = []
        self._previous = None  # raw bargaining solution of the previous step

    def _weights(self, logits, yb, wb, losses):
        """Bargaining weights from the gradients at the channels (closed form)."""
        if not self.nash:
            return torch.ones_like(losses)
        # d(L_c)/d(logit_l) of each sample, for l in c.
        E = (torch.sigmoid(logits) - yb) * self.label_scale / len(yb)
        if wb is not None:
            E = E * wb[:, None]
        U = self.module.readout()  # (labels, channels)
        gram = self.member.T @ ((E.T @ E) * (U @ U.T)) @ self.member
        surplus = (self.disagreement - losses).clamp_min(0) / self.disagreement
        weights, self._previous = nash_bargaining_weights(
            gram, surplus, init=self._previous, return_raw=True
        )
        return weights.to(losses)

    def coalition_losses(self, logits, yb):
        """(batch, K): each sample's relative loss in each coalition."""
        bce = F.binary_cross_entropy_with_logits(logits, yb, reduction="none")
        return (bce * self.label_scale) @ self.member

    def __call__(self, idx):
        xb, yb, wb = self.rows(idx)
        logits, _ = self.module(xb, head_grad_scale=lambda: self._head_scale)
        per_sample = self.coalition_losses(logits, yb)
        K = per_sample.shape[1]
        with torch.no_grad():
            losses = weighted_mean(per_sample, wb)
            weights = self._weights(logits, yb, wb, losses)
            self.disagreement = self.disagreement + self.rate * (
                losses - self.disagreement
            )
            self.step_weights.append(weights)
            # The heads take their own coalition's loss: divide alpha back out.
            self._head_scale = 1.0 / weights[self.coalition_of]
        weighted = weighted_mean(per_sample @ weights / K, wb)
        # Report the unweighted mean coalition loss (for early stopping).
        return weighted + (losses.sum() / K - weighted).detach()
