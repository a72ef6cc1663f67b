"""The network of CorrelatedVariationalIMVC: encoders, decoders, fusion, losses.

torch is imported at the top of this module; the estimator module imports it
lazily, inside its functions, so that importing :mod:`sklearn_ext.cluster`
stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import torch
from torch import nn

__all__ = ["CorrelatedIMVCNet"]

# Jitter that keeps the learned correlation matrix positive definite:
# R = (1 - eps) L L^T + eps I still has a unit diagonal.
CORR_JITTER = 1e-3
# Floor of the per-view variances (softplus output).
MIN_VAR = 1e-4


def _mlp(sizes):
    """Linear layers of the given widths with ReLU between them."""
    layers = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(sizes[-2], sizes[-1]))
    return nn.Sequential(*layers)


class CorrelatedIMVCNet(nn.Module):
    """Per-view encoders and decoders, the correlation factor and the mixture prior.

    Parameters
    ----------
    view_sizes : sequence of int
        Columns of every view.
    latent_dim : int
    hidden : tuple of int
        Hidden widths of every encoder (reversed for the decoders).
    n_clusters : int
    learned : bool
        Learn the correlation of the views' errors (else it is the identity
        and the fusion is the product of experts).
    """

    def __init__(self, view_sizes, latent_dim, hidden, n_clusters, learned):
        super().__init__()
        view_sizes = [int(d) for d in view_sizes]
        self.encoders = nn.ModuleList(
            _mlp([d, *hidden, 2 * latent_dim]) for d in view_sizes
        )
        self.decoders = nn.ModuleList(
            _mlp([latent_dim, *hidden[::-1], d]) for d in view_sizes
        )
        n_views = len(view_sizes)
        # Strictly lower part of the (unnormalised) Cholesky factor; the
        # diagonal is fixed to 1 before the rows are normalised, which still
        # reaches every correlation matrix.
        self.corr_factor = nn.Parameter(torch.zeros(n_views, n_views))
        self.prior_logits = nn.Parameter(torch.zeros(n_clusters))
        self.prior_means = nn.Parameter(torch.zeros(n_clusters, latent_dim))
        self.prior_log_vars = nn.Parameter(torch.zeros(n_clusters, latent_dim))
        self.learned = learned
        # Each view's squared error is averaged over its columns and scaled by
        # the mean view width: wide views do not drown narrow ones.
        self.mean_width = sum(view_sizes) / n_views

    def init_parameters(self, generator):
        """Start at the independent model (R = I) and a standard-normal prior.

        k-means on the pretrained latent space sets the mixture before the
        variational phase (see the estimator's ``_init_mixture``).
        """
        with torch.no_grad():
            for p in (
                self.corr_factor,
                self.prior_logits,
                self.prior_means,
                self.prior_log_vars,
            ):
                p.zero_()

    # ------------------------------------------------------- the fusion

    def correlation(self):
        """The correlation matrix R of the views' errors, (V, V)."""
        n_views = self.corr_factor.shape[0]
        eye = torch.eye(
            n_views, dtype=self.corr_factor.dtype, device=self.corr_factor.device
        )
        if not self.learned:
            return eye
        factor = torch.tril(self.corr_factor, diagonal=-1) + eye
        factor = factor / factor.norm(dim=1, keepdim=True)
        return (1 - CORR_JITTER) * factor @ factor.T + CORR_JITTER * eye

    def encode(self, views):
        """Per-view means and variances, (n, V, d) each."""
        means, variances = [], []
        for encoder, x in zip(self.encoders, views):
            out = encoder(x)
            mean, raw = out.chunk(2, dim=1)
            means.append(mean)
            variances.append(nn.functional.softplus(raw) + MIN_VAR)
        return torch.stack(means, 1), torch.stack(variances, 1)

    def fuse(self, means, variances, observed, correlation=None):
        """Correlated Gaussian fusion of the observed views' estimates.

        Per latent dimension the view estimates are treated as
        ``mean_v = z + e_v`` with errors ``e ~ N(0, S R S)``, ``S`` the
        diagonal of standard deviations and ``R`` the correlation. The fused
        posterior is the generalised least-squares estimate over the observed
        views: precision ``1' Sigma_O^-1 1`` and mean
        ``1' Sigma_O^-1 mean_O / precision``. With ``R = I`` it is the product
        of experts.
        """
        mask = observed.to(means.dtype)
        u = mask.unsqueeze(-1) / variances.sqrt()  # 1/s_v on observed views
        w = u * means
        if not self.learned:
            precision = (u * u).sum(1)
            numerator = (u * w).sum(1)
        else:
            R = self.correlation() if correlation is None else correlation
            R_inv = self._masked_inverses(R, mask)
            solved_u = R_inv @ u
            precision = (u * solved_u).sum(1)
            numerator = (w * solved_u).sum(1)
        return numerator / precision, 1.0 / precision

    @staticmethod
    def average_views(means, observed):
        """Plain average of the observed views' means (the pretraining fusion)."""
        u = observed.to(means.dtype).unsqueeze(-1)
        return (u * means).sum(1) / u.sum(1)

    def _masked_inverses(self, R, mask, logdet=False):
        """Per sample, the inverse of R restricted to its observed views.

        Rows and columns of missing views are zero, so that they drop out.
        With few views, every missing pattern's inverse is computed once and
        gathered; otherwise one batched Cholesky solve per sample. With
        ``logdet``, also ``log det R_O`` per sample.
        """
        n_views = R.shape[0]
        eye = torch.eye(n_views, dtype=R.dtype, device=R.device)
        mask = mask.to(R.dtype)
        if n_views <= 10:
            bits = 2 ** torch.arange(n_views, device=R.device)
            codes = torch.arange(2**n_views, device=R.device)[:, None]
            table = ((codes & bits) > 0).to(R.dtype)
            ids = ((mask > 0.5).long() * bits).sum(1)
        else:
            table, ids = mask, slice(None)
        pair = table[:, :, None] * table[:, None, :]
        chol = torch.linalg.cholesky(R * pair + torch.diag_embed(1 - table) * eye)
        inv = (torch.cholesky_inverse(chol) * pair)[ids]
        if not logdet:
            return inv
        half_logdet = torch.log(torch.diagonal(chol, dim1=1, dim2=2)).sum(1)
        return inv, 2 * half_logdet[ids]

    # ------------------------------------------------ the loss terms

    def error_nll(self, means, variances, mask):
        """-log-likelihood of the views' disagreement, per sample.

        Under ``mean_v = z + e_v``, ``e ~ N(0, S R S)``, the contrasts between
        the observed views' estimates do not depend on ``z``; their
        (restricted) likelihood is, up to constants,
        ``-1/2 [log det R_O + r' Sigma_O^-1 r + log(1' Sigma_O^-1 1)]`` per
        latent dimension, ``r`` the residuals around the generalised
        least-squares mean. It is unbiased for R, unlike the likelihood at the
        fitted mean. The estimates are detached: they are the data of this
        term, so only R learns from it and the views cannot lower it by
        collapsing their disagreement. Samples with one view add zero.
        """
        means, variances = means.detach(), variances.detach()
        m = mask.to(means.dtype).unsqueeze(-1)
        R = self.correlation()
        eye = torch.eye(R.shape[0], dtype=R.dtype, device=R.device)

        def nll(corr):
            mean, var = self.fuse(means, variances, mask, corr)
            resid = m * (means - mean.unsqueeze(1)) / variances.sqrt()
            inv, logdet = self._masked_inverses(corr, mask, True)
            quad = (resid * (inv @ resid)).sum((1, 2))
            return 0.5 * (means.shape[2] * logdet + quad - torch.log(var).sum(1))

        # Relative to independent errors (a log-likelihood ratio): the same
        # gradient in R, but no drift from the detached estimates, so the
        # training loss stays a usable stopping signal.
        with torch.no_grad():
            baseline = nll(eye)
        return nll(R) - baseline

    def cluster_log_resp(self, mean, var):
        """log q(c | x) of the mixture prior given q(z | x) = N(mean, var)."""
        log_pi = torch.log_softmax(self.prior_logits, 0)
        pv = self.prior_log_vars.exp()
        diff = mean.unsqueeze(1) - self.prior_means.unsqueeze(0)
        expected = -0.5 * (
            self.prior_log_vars.unsqueeze(0)
            + (var.unsqueeze(1) + diff**2) / pv.unsqueeze(0)
            + math.log(2 * math.pi)
        ).sum(2)
        joint = log_pi.unsqueeze(0) + expected
        return joint - torch.logsumexp(joint, 1, keepdim=True), joint

    def reconstruction(self, z, views, observed):
        """Half the width-scaled squared error of the observed views, per sample."""
        mask = observed.to(z.dtype)
        total = 0.0
        for v, (decoder, x) in enumerate(zip(self.decoders, views)):
            err = ((decoder(z) - x) ** 2).mean(1) * self.mean_width
            total = total + 0.5 * err * mask[:, v]
        return total

    def pretraining_loss(self, views, observed):
        """Autoencoder loss on the plain average of the views' means, per sample."""
        means, _ = self.encode(views)
        return self.reconstruction(self.average_views(means, observed), views, observed)

    def negative_elbo(self, views, observed, generator):
        """The training loss per sample: -ELBO minus the disagreement likelihood.

        ``-ELBO = reconstruction - E_c[log p(z|c) + log p(c)] + E_q log q(z, c)``
        with one reparameterised draw of ``z`` (noise from ``generator``) for
        the reconstruction and the responsibilities in closed form.
        """
        means, variances = self.encode(views)
        mean, var = self.fuse(means, variances, observed)
        eps = torch.randn(
            mean.shape, generator=generator, device=mean.device, dtype=mean.dtype
        )
        z = mean + var.sqrt() * eps
        log_resp, joint = self.cluster_log_resp(mean, var)
        resp = log_resp.exp()
        entropy_z = 0.5 * (torch.log(2 * math.pi * var) + 1).sum(1)
        loss = (
            self.reconstruction(z, views, observed)
            - (resp * joint).sum(1)
            + (resp * log_resp).sum(1)
            - entropy_z
        )
        if self.learned:
            loss = loss + self.error_nll(means, variances, observed)
        return loss

    def forward(self, views, observed):
        """Inference: fused means, variances and log q(c | x), side by side."""
        means, variances = self.encode(views)
        mean, var = self.fuse(means, variances, observed)
        log_resp, _ = self.cluster_log_resp(mean, var)
        return torch.cat([mean, var, log_resp], dim=1)
