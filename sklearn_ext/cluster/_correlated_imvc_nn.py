"""The network of CorrelatedVariationalIMVC: encoders, decoders, fusions, losses.

torch is imported at the top of this module; the estimator module imports it
lazily, inside its functions, so that importing :mod:`sklearn_ext.cluster`
stays cheap.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import torch
from torch import nn

from sklearn_ext.utils._torch_nn import mlp

__all__ = ["CorrelatedIMVCNet"]

# Jitter that keeps the learned correlation matrix positive definite:
# R = (1 - eps) L L^T + eps I still has a unit diagonal.
CORR_JITTER = 1e-3
# Floor of the per-view variances (softplus output).
MIN_VAR = 1e-4


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
        Learn the correlation of the views' errors (else R is the identity:
        independent errors, with learned per-view scales all the same).
    """

    def __init__(self, view_sizes, latent_dim, hidden, n_clusters, learned):
        super().__init__()
        view_sizes = [int(d) for d in view_sizes]
        self.encoders = nn.ModuleList(
            mlp([d, *hidden, 2 * latent_dim]) for d in view_sizes
        )
        self.decoders = nn.ModuleList(
            mlp([latent_dim, *hidden[::-1], d]) for d in view_sizes
        )
        n_views = len(view_sizes)
        # Strictly lower part of the (unnormalised) Cholesky factor; the
        # diagonal is fixed to 1 before the rows are normalised, which still
        # reaches every correlation matrix.
        self.corr_factor = nn.Parameter(torch.zeros(n_views, n_views))
        # Per-view scale of the views' errors around their cluster's centre.
        self.log_scale = nn.Parameter(torch.zeros(n_views))
        self.prior_logits = nn.Parameter(torch.zeros(n_clusters))
        self.prior_means = nn.Parameter(torch.zeros(n_clusters, latent_dim))
        self.prior_log_vars = nn.Parameter(torch.zeros(n_clusters, latent_dim))
        self.learned = learned
        # Each view's squared error is averaged over its columns and scaled by
        # the mean view width: wide views do not drown narrow ones.
        self.mean_width = sum(view_sizes) / n_views

    def init_parameters(self, generator):
        """Start at the independent model (R = I, unit scales), standard prior.

        k-means on the pretrained latent space sets the mixture and the error
        scales before the variational phase (the estimator's ``_init_mixture``).
        """
        with torch.no_grad():
            for p in (
                self.corr_factor,
                self.log_scale,
                self.prior_logits,
                self.prior_means,
                self.prior_log_vars,
            ):
                p.zero_()

    # ------------------------------------------------------ the fusions

    def error_parameters(self):
        """The error model's parameters (trained by ``error_nll`` alone)."""
        return [self.corr_factor, self.log_scale]

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

    def error_covariance(self):
        """``Omega = S R S``: covariance of the views' errors, (V, V)."""
        scale = self.log_scale.exp()
        return self.correlation() * scale[:, None] * scale[None, :]

    def encode(self, views):
        """Per-view means and variances, (n, V, d) each."""
        means, variances = [], []
        for encoder, x in zip(self.encoders, views):
            out = encoder(x)
            mean, raw = out.chunk(2, dim=1)
            means.append(mean)
            variances.append(nn.functional.softplus(raw) + MIN_VAR)
        return torch.stack(means, 1), torch.stack(variances, 1)

    def fuse(self, means, variances, observed):
        """Correlated Gaussian fusion of the observed views: ``q(z | x_O)``.

        Per sample and latent dimension the views' estimates are
        ``mean_v = z + e_v`` with errors ``e ~ N(0, Sigma)``,
        ``Sigma = D R D``, ``D`` the encoders' standard deviations and ``R``
        the learned correlation. Under a flat prior on ``z`` the posterior is
        the GLS one: precision ``1' Sigma_O^-1 1`` and mean
        ``1' Sigma_O^-1 mean_O / 1' Sigma_O^-1 1``, i.e. with ``a = 1 / D``,
        precision ``a' R_O^-1 a`` and mean ``a' R_O^-1 (a * mean) /
        precision``. With ``R = I`` this is the product of experts (DVIMC's
        fusion); the ELBO's gradient reaches ``R`` through it, so the
        encoders, decoders and prior train under the correlation they fuse
        with.
        """
        mask = observed.to(means.dtype)
        a = mask.unsqueeze(-1) / variances.sqrt()  # (n, V, d), 0 where missing
        if not self.learned:
            u = a * a
            precision = u.sum(1)
            return (u * means).sum(1) / precision, 1.0 / precision
        inv = self._masked_inverses(self.correlation(), mask)  # (n, V, V)
        b = inv @ a  # R_O^-1 a, per dimension
        precision = (a * b).sum(1).clamp_min(1e-8)
        mean = (b * a * means).sum(1) / precision
        return mean, 1.0 / precision

    def calibrated_posterior(self, means, observed, covariance=None):
        """Generalised least squares over the observed views, and q(c | x).

        Per latent dimension the views' estimates are modelled as
        ``mean_v = m_c + e_v`` around their cluster's centre ``m_c`` with
        errors ``e ~ N(0, Omega)``. The fused estimate over the observed views
        ``O`` is ``t = 1' Omega_O^-1 mean_O / 1' Omega_O^-1 1`` with variance
        ``v = 1 / 1' Omega_O^-1 1``, and ``q(c | x)`` is proportional to
        ``pi_c N(t; m_c, v I)`` (the exact posterior of the cluster under
        this model: ``t`` is sufficient for ``m_c``). Returns ``t``, ``v``
        (broadcast to ``t``'s shape) and ``log q(c | x)``.
        """
        omega = self.error_covariance() if covariance is None else covariance
        mask = observed.to(means.dtype)
        solved = self._masked_inverses(omega, mask) @ mask.unsqueeze(-1)
        precision = solved.sum(1)  # (n, 1)
        t = (means * solved).sum(1) / precision
        var = 1.0 / precision
        log_pi = torch.log_softmax(self.prior_logits, 0)
        diff = t.unsqueeze(1) - self.prior_means.unsqueeze(0)
        joint = log_pi - 0.5 * (diff**2).sum(2) / var
        log_resp = joint - torch.logsumexp(joint, 1, keepdim=True)
        return t, var.expand_as(t), log_resp

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

    def error_nll(self, means, observed, resp):
        """-log-likelihood of the views' estimates around the centres, per sample.

        ``sum_c resp_c * 1/2 [d log det Omega_O + sum_d r_cd' Omega_O^-1 r_cd]``
        with ``r_cd`` the observed views' estimates of dimension ``d`` minus
        the centre ``m_c``: the Gaussian likelihood of the error model, each
        sample weighted over the clusters by ``resp`` (its calibrated q(c|x)).
        Estimates, centres and responsibilities are data here (detached), so
        only ``Omega`` (scales and correlation) learns from this term, and the
        encoders cannot lower it by moving their estimates. A sample with one
        view informs that view's scale. The value returned is the difference
        to the same likelihood at the current (detached) ``Omega``: zero, with
        the likelihood's gradient, so that the training loss reported and used
        for early stopping is the ELBO alone.
        """
        means, resp = means.detach(), resp.detach()
        mask = observed.to(means.dtype)
        inv, logdet = self._masked_inverses(self.error_covariance(), mask, logdet=True)
        # Residuals to every centre at once: (n, C, V, d).
        r = mask[:, None, :, None] * (
            means.unsqueeze(1) - self.prior_means.detach()[None, :, None, :]
        )
        quad = (r * (inv.unsqueeze(1) @ r)).sum((2, 3))  # (n, C)
        nll = 0.5 * (means.shape[2] * logdet + (resp * quad).sum(1))
        return nll - nll.detach()

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
        """The training loss per sample: -ELBO, plus the error model's term.

        ``-ELBO = reconstruction - E_c[log p(z|c) + log p(c)] + E_q log q(z, c)``
        with ``q(z | x_O)`` the correlated fusion of the observed views
        (:meth:`fuse`: GLS under ``D R D``, the product of experts when
        ``R = I``), so the ELBO's gradient reaches ``R``; one
        reparameterised draw of ``z`` (noise from ``generator``) for the
        reconstruction and the responsibilities in closed form. The error
        model's term (:meth:`error_nll`, value zero, gradient to ``Omega``
        only) uses the calibrated responsibilities.
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
        with torch.no_grad():
            calibrated = self.calibrated_posterior(means, observed)[2].exp()
        return loss + self.error_nll(means, observed, calibrated)

    def forward(self, views, observed):
        """Inference: calibrated fused means, variances and log q(c | x)."""
        means, _ = self.encode(views)
        return torch.cat(self.calibrated_posterior(means, observed), dim=1)
