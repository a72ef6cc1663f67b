"""MuHL's network: multi-scale heat diffusion, learned soft hyperedges, readout."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import torch
from torch import nn

__all__ = ["MuHLNet", "graph_spectrum", "node_inputs"]

# Keeps the normalisations by hyperedge and node degree finite.
_EPS = 1e-6


def node_inputs(rows, spec):
    """Node inputs and propagation graphs of a batch of rows, as tensors.

    Parameters
    ----------
    rows : tensor of shape (batch, n_features)
        Raw rows of X (dtype and device of the computation).
    spec : dict
        The fitted layout (see ``MuHLClassifier._layout_spec``): ``layout``,
        ``n_nodes``, ``n_node_features``, edge positions ``edge_rows`` and
        ``edge_cols``, the sqrt(2) factor of diagonal entries ``edge_scale``,
        training standardisation ``feature_mean``/``feature_std`` and ``strength_mean``/
        ``strength_std``, and for the feature layout the fixed graph
        spectrum ``eigvals``/``eigvecs``.

    Returns
    -------
    eigvals : tensor of shape (batch, n_nodes)
        Eigenvalues of each subject's normalised Laplacian.
    eigvecs : tensor of shape (batch, n_nodes, n_nodes)
        Its eigenvectors (columns).
    inputs : tensor of shape (batch, n_nodes, n_node_features + 1)
        Per node: its standardised node features, then its standardised
        strength (sum of ``|A|`` over its connections); for the feature
        layout, the standardised column value alone.
    """
    kw = {"dtype": rows.dtype, "device": rows.device}
    batch, n = rows.shape[0], spec["n_nodes"]

    def const(name):
        return torch.as_tensor(spec[name], **kw)

    if spec["layout"] == "features":
        inputs = ((rows - const("feature_mean")) / const("feature_std"))[..., None]
        eigvals = const("eigvals").expand(batch, n)
        eigvecs = const("eigvecs").expand(batch, n, n)
        return eigvals, eigvecs, inputs
    r = torch.as_tensor(spec["edge_rows"], device=rows.device)
    c = torch.as_tensor(spec["edge_cols"], device=rows.device)
    n_edges = r.numel()
    edges = rows[:, :n_edges] * const("edge_scale")
    off = r != c
    weights = rows.new_zeros(batch, n, n)
    weights[:, r[off], c[off]] = edges[:, off].abs()
    weights[:, c[off], r[off]] = edges[:, off].abs()
    f = spec["n_node_features"]
    feats = rows[:, n_edges:].reshape(batch, n, f)
    feats = (feats - const("feature_mean")) / const("feature_std")
    strength = (weights.sum(-1) - const("strength_mean")) / const("strength_std")
    inputs = torch.cat([feats, strength[..., None]], dim=-1)
    return (*graph_spectrum(weights), inputs)


def graph_spectrum(weights):
    """Eigen-decomposition of the normalised Laplacians of weighted graphs.

    ``L = I - D^-1/2 W D^-1/2``; an isolated node keeps ``L_ii = 1``.
    """
    degree = weights.sum(-1)
    inv_sqrt = torch.where(degree > 0, degree.clamp_min(1e-300).rsqrt(), 0.0)
    lap = -inv_sqrt[..., :, None] * weights * inv_sqrt[..., None, :]
    lap = lap + torch.eye(weights.shape[-1], dtype=weights.dtype, device=weights.device)
    lap = (lap + lap.transpose(-1, -2)) / 2
    return torch.linalg.eigh(lap)


def knn_incidence(mean_weights, scales, knn):
    """Fixed hyperedges (the ablation): each node with its ``knn`` nearest.

    Nearness at scale ``t`` is the heat kernel ``exp(-t L)`` of the
    training-mean graph, so the hyperedges follow the same multi-resolution
    signals as the learned ones. Returns an array (n_scales, n_nodes,
    n_nodes): column j is the hyperedge centred on node j.
    """
    w = torch.as_tensor(mean_weights, dtype=torch.float64)
    eigvals, eigvecs = graph_spectrum(w)
    n = w.shape[0]
    k = min(knn, n - 1)
    out = np.zeros((len(scales), n, n))
    for s, t in enumerate(scales):
        kernel = (eigvecs * torch.exp(-t * eigvals)) @ eigvecs.T
        kernel = kernel.numpy().copy()
        np.fill_diagonal(kernel, -np.inf)
        nearest = np.argsort(-kernel, axis=0, kind="stable")[:k]
        out[s, nearest, np.arange(n)[None, :]] = 1.0
        out[s, np.arange(n), np.arange(n)] = 1.0
    return out


def cluster_logits(mean_weights, scales, n_hyperedges, seed):
    """Initial membership logits: clusters of the heat kernel at each scale.

    The regions are split into ``n_hyperedges`` groups by k-means on their
    rows of ``exp(-t L)`` of the training-mean graph, so that each scale's
    hyperedges start as its neighbourhoods (larger at coarser scales); a
    member starts at logit +1, a non-member at -3.
    """
    from sklearn.cluster import KMeans

    w = torch.as_tensor(mean_weights, dtype=torch.float64)
    eigvals, eigvecs = graph_spectrum(w)
    n = w.shape[0]
    out = np.full((len(scales), n, n_hyperedges), -3.0)
    for s, t in enumerate(scales):
        # Rounded, so that float noise in the mean graph (e.g. weights as
        # repeated rows) cannot change the clusters.
        kernel = ((eigvecs * torch.exp(-t * eigvals)) @ eigvecs.T).numpy().round(12)
        # No more clusters than distinct rows (k-means would warn).
        k = min(n_hyperedges, len(np.unique(kernel, axis=0)))
        labels = KMeans(k, n_init=1, random_state=seed).fit_predict(kernel)
        # Hyperedges numbered by their first region, not by k-means' order.
        _, first = np.unique(labels, return_index=True)
        rank = np.empty(k, dtype=np.int64)
        rank[np.argsort(first)] = np.arange(k)
        out[s, np.arange(n), rank[labels]] = 1.0
    return out


class MuHLNet(nn.Module):
    """Heat diffusion at several scales, a hypergraph layer per scale, readout.

    ``hypergraph`` is ``"learned"`` (soft incidence ``sigmoid(logits)``, one
    matrix per scale), ``"knn"`` (fixed incidence, a buffer) or ``"none"``
    (a plain GCN: each layer propagates by the normalised adjacency).
    """

    def __init__(
        self,
        n_nodes,
        n_inputs,
        hidden,
        n_hyperedges,
        scales,
        n_classes,
        hypergraph="learned",
        incidence=None,
        init_logits=None,
    ):
        super().__init__()
        self.scales = tuple(float(t) for t in scales)
        self.hypergraph = hypergraph
        self._init_logits = init_logits
        n_scales = len(self.scales)
        self.encode = nn.Linear(n_inputs, hidden)
        if hypergraph == "learned":
            self.membership_logits = nn.Parameter(
                torch.empty(n_scales, n_nodes, n_hyperedges)
            )
            n_edges = n_hyperedges
        elif hypergraph == "knn":
            self.register_buffer(
                "fixed_incidence", torch.as_tensor(incidence, dtype=torch.float32)
            )
            n_edges = self.fixed_incidence.shape[-1]
        else:
            n_edges = 0
        # Hyperedges read each member's state beside its diffused signal.
        self.edge_proj = nn.ModuleList(
            nn.Linear(2 * hidden, hidden) for _ in self.scales
        )
        self.node_update = nn.ModuleList(nn.Linear(hidden, hidden) for _ in self.scales)
        # One scalar per hyperedge (a score shared by the hyperedges of a
        # scale); the head weighs each hyperedge by its identity.
        self.edge_score = nn.ModuleList(nn.Linear(2 * hidden, 1) for _ in self.scales)
        self.head = nn.Linear(n_scales * (n_edges + hidden), n_classes)

    def init_parameters(self, generator):
        """Learned memberships: ``init_logits`` (see cluster_logits) plus noise."""
        if self.hypergraph == "learned":
            if self._init_logits is None:
                raise ValueError("learned hyperedges start from init_logits.")
            logits = self.membership_logits
            noise = torch.randn(logits.shape, generator=generator)
            values = 0.5 * noise + torch.as_tensor(self._init_logits)
            self._init_logits = None  # used once; not kept with the model
            logits.copy_(values.to(dtype=logits.dtype))

    def incidence(self):
        """The soft incidence matrices, (n_scales, n_nodes, n_hyperedges)."""
        if self.hypergraph == "learned":
            return torch.sigmoid(self.membership_logits)
        if self.hypergraph == "knn":
            return self.fixed_incidence
        return None

    def forward(self, eigvals, eigvecs, inputs, return_edges=False):
        h = torch.relu(self.encode(inputs))
        incidence = self.incidence()
        parts, edges = [], []
        basis_t = eigvecs.transpose(-1, -2)
        for s, t in enumerate(self.scales):
            if incidence is None:
                # Plain GCN layer: the normalised adjacency I - L.
                filt = 1.0 - eigvals
            else:
                filt = torch.exp(-t * eigvals)
            signal = eigvecs @ (filt[..., None] * (basis_t @ h))
            if incidence is None:
                h = h + torch.relu(self.node_update[s](signal))
                parts.append(h.mean(1))
                continue
            H = incidence[s].to(dtype=h.dtype)
            both = torch.cat([h, signal], dim=-1)
            e = torch.einsum("nm,bnh->bmh", H, both) / (H.sum(0)[:, None] + _EPS)
            # The head reads each hyperedge's mean signal through one linear
            # score; the convolution sends its transformed feature back.
            score = self.edge_score[s](e)[..., 0]
            sent = torch.relu(self.edge_proj[s](e))
            back = torch.einsum("nm,bmh->bnh", H, sent) / (H.sum(1)[:, None] + _EPS)
            h = h + torch.relu(self.node_update[s](back))
            edges.append(score)
            parts.append(score)
            parts.append(h.mean(1))
        logits = self.head(torch.cat(parts, dim=1))
        if return_edges:
            return logits, edges
        return logits

    def sparsity(self):
        """Mean membership of the learned incidence (0 for fixed or none)."""
        if self.hypergraph != "learned":
            return self.encode.weight.new_zeros(())
        return torch.sigmoid(self.membership_logits).mean()


def hyperedge_scores(net, scores):
    """Each hyperedge's weight in the head times the spread of its score.

    ``scores`` are, per scale, the hyperedge scores of the training subjects
    that the head reads, (n_subjects, n_hyperedges). A hyperedge matters as
    far as its score varies between subjects and the head listens to it.
    Returns (n_scales, n_hyperedges).
    """
    weight = net.head.weight.detach()
    hidden = net.node_update[0].weight.shape[1]
    offset, out = 0, []
    for values in scores:
        n_edges = values.shape[1]
        block = weight[:, offset : offset + n_edges]
        out.append(block.norm(dim=0) * values.std(0, unbiased=False))
        offset += n_edges + hidden
    return torch.stack(out)
