"""The network of one FederatedMultiViewClustering client, and its losses.

torch is imported at the top of this module; the estimator module imports it
lazily, inside its functions, so that importing :mod:`sklearn_ext.cluster`
stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn

from sklearn_ext.utils._torch_nn import mlp

__all__ = ["FedMVCNet", "FederatedEncoders", "gaussian_w2_squared"]

# Temperature of the cross-view (sample-level) contrast on cosine similarities.
VIEW_TEMPERATURE = 0.5


def gaussian_w2_squared(mean_a, std_a, mean_b, std_b):
    r"""Squared 2-Wasserstein distances between diagonal Gaussians, all pairs.

    For :math:`N(\mu_a, \mathrm{diag}\,\sigma_a^2)` and
    :math:`N(\mu_b, \mathrm{diag}\,\sigma_b^2)` the closed form is
    :math:`\|\mu_a - \mu_b\|^2 + \|\sigma_a - \sigma_b\|^2` (the Bures term of
    commuting covariances). Rows of ``mean_a`` / ``std_a`` against rows of
    ``mean_b`` / ``std_b``; returns an (n_a, n_b) tensor.
    """
    return torch.cdist(mean_a, mean_b).square() + torch.cdist(std_a, std_b).square()


def clip_rows(h, clip_norm):
    """Scale every row to an L2 norm of at most ``clip_norm`` (DP clipping)."""
    norms = h.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return h * (clip_norm / norms).clamp(max=1.0)


class FedMVCNet(nn.Module):
    """Per-view encoders into one embedding space and per-view decoders.

    The fused embedding of a sample is the mean of its observed views'
    embeddings, clipped to the ball of radius ``clip_norm`` (which bounds
    what one sample adds to a prototype: the sensitivity of the Gaussian
    mechanism).

    Parameters
    ----------
    view_sizes : sequence of int
    latent_dim : int
    hidden : tuple of int
    clip_norm : float
    """

    def __init__(self, view_sizes, latent_dim, hidden, clip_norm):
        super().__init__()
        view_sizes = [int(d) for d in view_sizes]
        self.encoders = nn.ModuleList(mlp([d, *hidden, latent_dim]) for d in view_sizes)
        self.decoders = nn.ModuleList(
            mlp([latent_dim, *hidden[::-1], d]) for d in view_sizes
        )
        self.clip_norm = float(clip_norm)

    def embed(self, views, mask):
        """Per-view embeddings (a list) and the clipped fused embedding."""
        per_view = [enc(x) for enc, x in zip(self.encoders, views)]
        stacked = torch.stack(per_view, 1)
        weights = mask / mask.sum(1, keepdim=True).clamp_min(1.0)
        fused = (weights.unsqueeze(2) * stacked).sum(1)
        return per_view, clip_rows(fused, self.clip_norm)

    def forward(self, views, mask):
        return self.embed(views, mask)[1]

    def local_loss(
        self,
        views,
        mask,
        prototypes=None,
        labels=None,
        spreads=None,
        *,
        contrast,
        temperature,
        view_weight,
    ):
        """Per-sample loss: reconstruction, cross-view contrast, prototype term.

        ``prototypes`` is ``(means, stds)`` of the global Gaussian prototypes
        (None before the first aggregation), ``labels`` the aligned local
        cluster of every sample of the batch and ``spreads`` the per-dimension
        standard deviations of the client's local clusters (from its own
        noised statistics). Every sample's loss depends on that sample and on
        these fixed quantities only (the cross-view contrast excepted, whose
        negatives are the batch's other samples), as per-sample gradient
        clipping (DP-SGD) needs.
        """
        per_view, z = self.embed(views, mask)
        loss = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        n_seen = mask.sum(1).clamp_min(1.0)
        for v, (dec, x) in enumerate(zip(self.decoders, views)):
            err = (dec(z) - x).square().mean(1)
            loss = loss + mask[:, v] * err / n_seen
        if view_weight > 0 and len(views) > 1:
            loss = loss + view_weight * self._view_contrast(per_view, z, mask)
        if prototypes is not None and contrast != "none":
            loss = loss + self._prototype_loss(
                z,
                prototypes,
                labels,
                spreads,
                contrast=contrast,
                temperature=temperature,
            )
        return loss

    @staticmethod
    def _view_contrast(per_view, z, mask):
        """InfoNCE of every observed view's embedding against the fused ones."""
        target = nn.functional.normalize(z, dim=1)
        idx = torch.arange(z.shape[0], device=z.device)
        out = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        n_seen = mask.sum(1).clamp_min(1.0)
        for v, e in enumerate(per_view):
            logits = nn.functional.normalize(e, dim=1) @ target.T / VIEW_TEMPERATURE
            # Samples lacking the view neither anchor nor act as negatives.
            logits = logits.masked_fill(mask[:, v].unsqueeze(0) < 0.5, -1e9)
            ce = nn.functional.cross_entropy(logits, idx, reduction="none")
            out = out + mask[:, v] * ce / n_seen
        return out

    @staticmethod
    def _prototype_loss(z, prototypes, labels, spreads, *, contrast, temperature):
        """The prototype contrast, per sample.

        Sample ``i`` of local cluster ``l`` stands for the Gaussian
        ``N(z_i, diag(s_l^2))``, ``s_l`` its cluster's spread; it is
        classified among the global Gaussian prototypes by a softmax over
        minus their squared 2-Wasserstein distances over ``temperature``
        (``contrast="wasserstein"``: ``||z_i - mu_k||^2 + ||s_l - sigma_k||^2``,
        so that a prototype's spread counts as much as its place), or over
        the squared distances of the means alone (``"euclidean"``, clusters
        as points); its own global prototype ``l`` is the positive.
        """
        means, stds = prototypes
        if contrast == "wasserstein":
            dist = gaussian_w2_squared(z, spreads[labels], means, stds)
        else:
            dist = torch.cdist(z, means).square()
        return nn.functional.cross_entropy(
            -dist / temperature, labels, reduction="none"
        )


class FederatedEncoders(nn.Module):
    """The clients' networks side by side (one :class:`FedMVCNet` each)."""

    def __init__(self, n_clients, view_sizes, latent_dim, hidden, clip_norm):
        super().__init__()
        self.clients = nn.ModuleList(
            FedMVCNet(view_sizes, latent_dim, hidden, clip_norm)
            for _ in range(n_clients)
        )
