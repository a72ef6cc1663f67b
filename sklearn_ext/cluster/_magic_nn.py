"""The network of MAGICClustering: adapters, consensus, cluster head, losses.

torch is imported at the top of this module; the estimator module imports it
lazily, inside its functions, so that importing :mod:`sklearn_ext.cluster`
stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import torch
import torch.nn.functional as F
from torch import nn

from sklearn_ext.utils._torch import weighted_mean

# The one MLP builder of every family.
from sklearn_ext.utils._torch_nn import mlp

__all__ = ["MAGICNet", "robust_contrastive"]

# Temperature of the cluster head: cosine similarity to the prototypes / 0.1.
CLUSTER_TEMPERATURE = 0.1
# The superseded rule (weighting="softmax", kept as an ablation): softmax of
# the agreements at this fixed temperature, smoothed over batches with this
# momentum; it also weighted the alignment.
SOFTMAX_TEMPERATURE = 0.03
WEIGHTS_MOMENTUM = 0.9


def robust_contrastive(a, b, temperature, q, w=None):
    r"""Symmetric contrastive loss of paired rows, robust to wrong pairs.

    Row ``i`` of ``a`` and row ``i`` of ``b`` (unit vectors) are a positive
    pair and every other row a negative. With :math:`p_i` the softmax
    probability of the positive among row ``i``'s candidates, the loss is the
    generalised cross-entropy :math:`(1 - p_i^q) / q`; its gradient is InfoNCE's
    times :math:`p_i^q`, so a pair the model finds implausible (a wrong
    description) pulls with little force. ``q = 0`` is plain InfoNCE
    (:math:`-\log p_i`). Averaged over both directions and over the rows,
    weighted by ``w``.
    """
    logits = a @ b.T / temperature
    target = torch.arange(a.shape[0], device=a.device)
    total = 0.0
    for scores in (logits, logits.T):
        log_p = F.log_softmax(scores, dim=1).gather(1, target[:, None]).squeeze(1)
        if q > 0:
            total = total + (1.0 - torch.exp(q * log_p)) / q
        else:
            total = total - log_p
    return weighted_mean(total / 2.0, w)


class MAGICNet(nn.Module):
    """Semantic adapters, the fused consensus and the prototype cluster head.

    Parameters
    ----------
    image_dim : int
    text_dims : list of int
        Width of every text view (granularity), coarse to fine; may be empty.
    adapter_dim : int
    hidden : int
        Hidden width of the adapters.
    n_clusters : int
    adapters : bool
        False for the ablation without adapters: the standardised views
        themselves, unit-normalised, are fused by concatenation.
    robust_fusion : bool, default=True
        Weight each sample's text in the consensus by its agreement with the
        image code.
    weighting : {"agreement", "softmax", "uniform"}, default="agreement"
        "agreement" and "uniform": the weights are set by the estimator
        (:meth:`set_granularity_weights`); "softmax" is the superseded rule
        (weights updated in training at a fixed temperature). Each
        granularity's alignment loss is weighted by its weight.
    """

    def __init__(
        self,
        image_dim,
        text_dims,
        adapter_dim,
        hidden,
        n_clusters,
        adapters,
        robust_fusion=True,
        weighting="agreement",
    ):
        super().__init__()
        self.weighting = weighting
        text_dims = [int(d) for d in text_dims]
        self.n_text = len(text_dims)
        self.adapters = bool(adapters)
        self.robust_fusion = bool(robust_fusion)
        if self.adapters:
            mid = [hidden] if hidden else []
            self.image_adapter = mlp([int(image_dim), *mid, adapter_dim])
            # One adapter per granularity: descriptions of different detail
            # live in different regions of the text space, and a shared
            # adapter kept only what the coarsest level tells apart.
            self.text_adapters = nn.ModuleList(
                mlp([d, *mid, adapter_dim]) for d in text_dims
            )
            dim = adapter_dim
        else:
            dim = int(image_dim) + sum(text_dims)
        self.consensus_dim = dim
        self.prototypes = nn.Parameter(torch.zeros(n_clusters, dim))
        self.register_buffer(
            "granularity_weights",
            torch.full((self.n_text,), 1.0 / max(self.n_text, 1)),
        )

    # ------------------------------------------------------------ forward

    def adapt(self, image, texts):
        """Adapted features before normalisation: image (B, a), texts [(B, a)]."""
        if not self.adapters:
            return image, list(texts)
        h_image = self.image_adapter(image)
        h_texts = [self.text_adapters[g](x) for g, x in enumerate(texts)]
        return h_image, h_texts

    def set_granularity_weights(self, weights):
        """Fix the granularity weights (a sequence summing to one)."""
        with torch.no_grad():
            self.granularity_weights.copy_(
                torch.as_tensor(weights, dtype=self.granularity_weights.dtype)
            )

    def _text_weights(self, mask):
        """Per-sample weights of the granularities, over the observed ones."""
        w = self.granularity_weights.to(mask.dtype)[None, :] * mask
        return w / w.sum(1, keepdim=True).clamp_min(1e-12)

    def consensus(self, z_image, z_texts, mask):
        """The fused representation of each sample (unit rows)."""
        if self.n_text == 0:
            return z_image
        w = self._text_weights(mask)
        if not self.adapters:
            parts = [z_image] + [
                torch.sqrt(w[:, g : g + 1]) * z for g, z in enumerate(z_texts)
            ]
            return F.normalize(torch.cat(parts, dim=1), dim=1)
        text = sum(w[:, g : g + 1] * z for g, z in enumerate(z_texts))
        has_text = (mask.sum(1, keepdim=True) > 0).to(z_image.dtype)
        text = F.normalize(text, dim=1)
        gate = has_text
        if self.robust_fusion:
            # A description that disagrees with its image (likely wrong)
            # enters with less weight: (1 + cos) / 2, from 1 down to 0.
            cos = (z_image * text).sum(1, keepdim=True).detach()
            gate = gate * (1 + cos) / 2
        return F.normalize(z_image + gate * text, dim=1)

    def assign(self, z):
        """Soft cluster assignments of unit rows ``z`` (B, n_clusters)."""
        protos = F.normalize(self.prototypes, dim=1)
        return F.softmax(z @ protos.T / CLUSTER_TEMPERATURE, dim=1)

    def encode(self, image, texts, mask):
        """Normalised image and text codes and their consensus."""
        h_image, h_texts = self.adapt(image, texts)
        z_image = F.normalize(h_image, dim=1)
        z_texts = [F.normalize(h, dim=1) for h in h_texts]
        return z_image, z_texts, self.consensus(z_image, z_texts, mask)

    def forward(self, image, texts, mask):
        """Consensus codes and the cluster probabilities from them."""
        c = self.encode(image, texts, mask)[2]
        return torch.cat([c, self.assign(c)], dim=1)

    # ------------------------------------------------------------ losses

    def input_sparsity(self):
        """Group-lasso penalty on the adapters' input columns (mean column norm).

        Each input feature of a view enters an adapter through one column of
        its first layer; the penalty is the mean Euclidean norm of these
        columns, which drives the columns of features that carry nothing the
        losses need (task-irrelevant dimensions) toward zero.
        """
        norms = [self.image_adapter[0].weight.norm(dim=0)]
        norms += [a[0].weight.norm(dim=0) for a in self.text_adapters]
        return torch.cat(norms).mean()

    def warmup_loss(self, image, texts, mask, w, *, temperature, q, penalty):
        """Cross-modal alignment and the redundancy penalty (no clustering)."""
        z_image, z_texts, _ = self.encode(image, texts, mask)
        return self._alignment(z_image, z_texts, mask, w, temperature, q, penalty)

    def _alignment(self, z_image, z_texts, mask, w, temperature, q, penalty):
        if not self.adapters or self.n_text == 0:
            return z_image.sum() * 0.0
        loss, count = 0.0, 0
        # Each granularity's alignment counts by its weight (uniform in the
        # warm-up of the "softmax" rule): a granularity that says less about
        # the clusters teaches the image code less. The data-set weights of
        # "agreement" are zero only for a granularity at chance, so no
        # informative granularity is switched off.
        weights = self.granularity_weights * self.n_text
        for g, z in enumerate(z_texts):
            seen = mask[:, g] > 0.5
            if int(seen.sum()) < 2:
                continue
            wg = None if w is None else w[seen]
            term = robust_contrastive(z_image[seen], z[seen], temperature, q, wg)
            loss = loss + weights[g] * term
            count += 1
        loss = loss / max(count, 1)
        if penalty > 0:
            loss = loss + penalty * self.input_sparsity()
        return loss

    def clustering_loss(
        self,
        image,
        texts,
        mask,
        w,
        *,
        temperature,
        q,
        penalty,
        teacher,
        update_weights,
    ):
        """Alignment + distillation from the consensus teacher + balance."""
        z_image, z_texts, c = self.encode(image, texts, mask)
        loss = self._alignment(z_image, z_texts, mask, w, temperature, q, penalty)
        p_cons = self.assign(c)
        p_image = self.assign(z_image) if self.adapters else p_cons
        with torch.no_grad():
            if update_weights and self.adapters and self.n_text > 0:
                self._update_weights(p_image, z_texts, mask)
            source = p_cons if teacher == "consensus" else p_image
            freq = source.sum(0) if w is None else (w[:, None] * source).sum(0)
            target = source**2 / freq.clamp_min(1e-12)
            target = target / target.sum(1, keepdim=True)
        students = [p_cons] if p_image is p_cons else [p_cons, p_image]
        for p in students:
            loss = loss + weighted_mean(-(target * torch.log(p + 1e-8)).sum(1), w)
        if w is None:
            mean_p = p_cons.mean(0)
        else:
            mean_p = (w[:, None] * p_cons).sum(0) / w.sum().clamp_min(1e-12)
        k = p_cons.shape[1]
        balance = (mean_p * torch.log(mean_p + 1e-8)).sum() + math.log(k)
        return loss + balance

    def _update_weights(self, p_image, z_texts, mask):
        """The superseded rule: weights toward the softmax of the agreements.

        Kept for the ablation (``weighting="softmax"``): the softmax at the
        fixed temperature 0.03 of each granularity's agreement with the image
        head, smoothed over batches; it picked one granularity.
        """
        agreement = []
        for g, z in enumerate(z_texts):
            seen = mask[:, g] > 0.5
            if int(seen.sum()) == 0:
                agreement.append(self._last_agreement(g))
                continue
            p_text = self.assign(z[seen])
            agreement.append((p_image[seen] * p_text).sum(1).mean())
        agreement = torch.stack(agreement).to(self.granularity_weights.dtype)
        self.last_agreement = agreement
        target = F.softmax(agreement / SOFTMAX_TEMPERATURE, dim=0)
        self.granularity_weights.mul_(WEIGHTS_MOMENTUM).add_(
            (1 - WEIGHTS_MOMENTUM) * target
        )

    def _last_agreement(self, g):
        last = getattr(self, "last_agreement", None)
        if last is None:
            return self.granularity_weights.new_tensor(1.0 / self.prototypes.shape[0])
        return last[g]
