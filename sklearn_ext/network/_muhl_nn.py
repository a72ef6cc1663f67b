"""MuHL's network: multi-scale heat diffusion, learned soft hyperedges, readout."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import torch
from torch import nn

__all__ = [
    "MuHLNet",
    "coactivation",
    "graph_spectrum",
    "node_inputs",
    "subject_hyperedges",
]

# Keeps the normalisations by hyperedge and node degree finite.
_EPS = 1e-6
# Thresholds of a hyperedge's joint-activation features, per sign.
_N_THRESHOLDS = 3
# A standardised signal above this level counts as active (co-activation).
_ACTIVE = 1.0


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
    edges : tensor of shape (batch, n_edge_columns)
        The connectivity columns standardised with the training statistics
        ``edge_mean``/``edge_std`` (width 0 for the feature layout).
    """
    kw = {"dtype": rows.dtype, "device": rows.device}
    batch, n = rows.shape[0], spec["n_nodes"]

    def const(name):
        return torch.as_tensor(spec[name], **kw)

    if spec["layout"] == "features":
        inputs = ((rows - const("feature_mean")) / const("feature_std"))[..., None]
        eigvals = const("eigvals").expand(batch, n)
        eigvecs = const("eigvecs").expand(batch, n, n)
        return eigvals, eigvecs, inputs, rows.new_zeros(batch, 0)
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
    z_edges = (rows[:, :n_edges] - const("edge_mean")) / const("edge_std")
    return (*graph_spectrum(weights), inputs, z_edges)


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


def standardised(signals):
    """Signals divided by their root mean square over nodes and channels.

    Per subject, so that diffused signals (smoother at larger heat-kernel
    times) keep the unit scale that the activation level assumes.
    """
    rms = signals.pow(2).mean((1, 2), keepdim=True).sqrt()
    return signals / (rms + _EPS)


def coactivation(signals):
    """Co-activation of every pair of nodes, per subject.

    ``c_ij = mean over channels of relu(x_ic - 1) relu(x_jc - 1)``, for
    standardised (diffused) signals ``x`` of shape (batch, n_nodes,
    n_channels): large when two nodes are active (above one standard
    deviation) in the same frames, wherever they lie on the network.
    Returns (batch, n_nodes, n_nodes).
    """
    active = torch.relu(signals - _ACTIVE)
    return active @ active.transpose(1, 2) / signals.shape[-1]


def joint_activation(H, signals, thresholds):
    """How often a hyperedge's members are active together.

    Per frame (channel) ``c``, the share of hyperedge ``j``'s members that
    are active, ``f_jc = sum_i H_ij a_ic / sum_i H_ij`` with ``a_ic =
    sigmoid(4 (x_ic - 1))``, and per threshold ``tau`` (and the same for
    deactivation, ``-x``) the soft count of frames ``sum_c
    sigmoid(8 (f_jc - tau))``: large when most members are active in the
    same frames. A product-like (AND) interaction of the members,
    which no sum over single nodes or pairs reproduces.

    Returns (batch, n_edges, 2 * n_thresholds).
    """
    size = H.sum(1)[..., None] + _EPS
    out = []
    for sign in (1.0, -1.0):
        active = torch.sigmoid(4.0 * (sign * signals - _ACTIVE))
        share = torch.einsum("bnm,bnc->bmc", H, active) / size
        out.append(torch.sigmoid(8.0 * (share[..., None] - thresholds)).sum(2))
    return torch.cat(out, dim=-1)


def subject_hyperedges(signals, prior, scale, knn):
    """Each subject's hyperedges from its own signals, sharpened to top-k.

    Hyperedge ``j`` is centred on node ``j``: the node and the ``knn`` nodes
    of largest logit ``prior_ij + scale * c_ij``, where ``c_ij`` is the
    subject's co-activation of nodes ``i`` and ``j`` (:func:`coactivation`)
    and ``prior`` a learned population-level term (it starts at the
    training subjects' mean co-activation). The forward pass uses the hard
    0/1 membership; the backward pass the gradient of the soft membership
    ``sigmoid((logit - threshold) / temperature)`` (straight-through), the
    threshold lying halfway between the ``knn``-th and the next logit and
    the temperature their gap, so that ``prior`` and ``scale`` move nodes in
    and out of the subjects' hyperedges.

    Parameters
    ----------
    signals : tensor of shape (batch, n_nodes, n_channels)
    prior : tensor of shape (n_nodes, n_nodes)
    scale : tensor of shape ()
    knn : int
        Members besides the centre (at most ``n_nodes - 1``).

    Returns
    -------
    tensor of shape (batch, n_nodes, n_nodes)
        Membership of node ``i`` (rows) in hyperedge ``j`` (columns).
    """
    n = signals.shape[1]
    logits = prior + scale * coactivation(signals)
    eye = torch.eye(n, dtype=torch.bool, device=signals.device)
    logits = logits.masked_fill(eye, float("inf"))
    k = min(knn, n - 1)
    # Along the rows of each column: the centre (infinite) and its k nearest.
    top, index = torch.topk(logits, min(k + 2, n), dim=1)
    kth = top[:, k : k + 1]
    nxt = top[:, k + 1 : k + 2] if k + 1 < n else kth - 1.0
    threshold = ((kth + nxt) / 2).detach()
    temperature = (kth - nxt).detach().clamp_min(1e-3)
    # Exactly k + 1 members (ties go to torch.topk's order).
    hard = torch.zeros_like(logits).scatter_(1, index[:, : k + 1], 1.0)
    soft = torch.sigmoid(((logits - threshold) / temperature).masked_fill(eye, 0.0))
    soft = soft.masked_fill(eye, 1.0)
    # Exactly the hard memberships forward; the soft ones' gradient backward.
    return hard + (soft - soft.detach())


class MuHLNet(nn.Module):
    """Heat diffusion at several scales, a hypergraph layer per scale, readout.

    ``hypergraph`` is ``"subject"`` (each subject's own hyperedges, see
    :func:`subject_hyperedges`, one per node and scale), ``"population"``
    (soft incidence ``sigmoid(logits)`` shared by subjects, one matrix per
    scale), ``"knn"`` (fixed incidence, a buffer) or ``"none"`` (a plain
    GCN: each layer propagates by the normalised adjacency). Every variant
    also reads the standardised connections through one linear layer.
    """

    def __init__(
        self,
        n_nodes,
        n_inputs,
        hidden,
        scales,
        n_classes,
        hypergraph="subject",
        incidence=None,
        init_logits=None,
        n_channels=1,
        n_edge_columns=0,
        knn=4,
        node_readout=False,
    ):
        super().__init__()
        self.scales = tuple(float(t) for t in scales)
        self.hypergraph = hypergraph
        self.n_channels = n_channels
        self.knn = knn
        self._init_logits = init_logits
        n_scales = len(self.scales)
        self.encode = nn.Linear(n_inputs, hidden)
        if hypergraph in ("subject", "population"):
            # The training subjects' mean co-activation (fixed), and the
            # learned weight of the subject's own (none for "population").
            self.register_buffer(
                "membership_prior", torch.zeros(n_scales, n_nodes, n_nodes)
            )
            if hypergraph == "subject":
                self.similarity_scale = nn.Parameter(torch.ones(n_scales))
            else:
                self.register_buffer("similarity_scale", torch.zeros(n_scales))
            n_edges = n_nodes
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
        # Joint activation of a hyperedge: soft counts, over the channels, of
        # its members' mean signal above (and below) learned thresholds.
        self.thresholds = nn.Parameter(torch.empty(n_scales, _N_THRESHOLDS))
        # One scalar per hyperedge (a score shared by the hyperedges of a
        # scale); the head weighs each hyperedge by its identity.
        self.edge_score = nn.ModuleList(
            nn.Linear(2 * _N_THRESHOLDS, 1) for _ in self.scales
        )
        # The feature layout (columns as regions) also reads each region's
        # state by its identity, as a network on the columns would.
        self.node_score = nn.Linear(hidden, 1) if node_readout else None
        n_node_scores = n_nodes if node_readout else 0
        self.head = nn.Linear(n_scales * (n_edges + hidden) + n_node_scores, n_classes)
        self.edge_linear = (
            nn.Linear(n_edge_columns, n_classes, bias=False) if n_edge_columns else None
        )

    def init_parameters(self, generator):
        """Membership prior (``init_logits``), subject weight, thresholds."""
        self.thresholds.copy_(
            torch.linspace(0.5, 0.9, _N_THRESHOLDS).expand_as(self.thresholds)
        )
        if self.hypergraph in ("subject", "population"):
            if self._init_logits is None:
                raise ValueError("data-driven hyperedges start from init_logits.")
            self.membership_prior.copy_(
                torch.as_tensor(self._init_logits).to(self.membership_prior.dtype)
            )
            self._init_logits = None  # used once; kept as the buffer
            if self.hypergraph == "subject":
                self.similarity_scale.fill_(0.05)

    def incidence(self):
        """Population incidence (n_scales, n_nodes, n_edges), or None.

        None for ``"none"`` and ``"subject"`` (whose hyperedges depend on
        the subject: see :meth:`forward` with ``return_edges=True``).
        """
        if self.hypergraph == "knn":
            return self.fixed_incidence
        return None

    def forward(self, eigvals, eigvecs, inputs, edges, return_edges=False):
        h = torch.relu(self.encode(inputs))
        channels = inputs[..., : self.n_channels]
        incidence = self.incidence()
        parts, scores, members = [], [], []
        basis_t = eigvecs.transpose(-1, -2)
        for s, t in enumerate(self.scales):
            if self.hypergraph == "none":
                # Plain GCN layer: the normalised adjacency I - L.
                filt = 1.0 - eigvals
                signal = eigvecs @ (filt[..., None] * (basis_t @ h))
                h = h + torch.relu(self.node_update[s](signal))
                parts.append(h.mean(1))
                continue
            filt = torch.exp(-t * eigvals)[..., None]
            signal = eigvecs @ (filt * (basis_t @ h))
            diffused = standardised(eigvecs @ (filt * (basis_t @ channels)))
            if self.hypergraph in ("subject", "population"):
                H = subject_hyperedges(
                    diffused,
                    self.membership_prior[s],
                    self.similarity_scale[s],
                    self.knn,
                )
            else:
                H = incidence[s].to(dtype=h.dtype).expand(h.shape[0], -1, -1)
            both = torch.cat([h, signal], dim=-1)
            size = H.sum(1)[..., None] + _EPS
            e = torch.einsum("bnm,bnh->bmh", H, both) / size
            feature = joint_activation(H, diffused, self.thresholds[s])
            # The head reads each hyperedge's feature through one linear
            # score; the convolution sends its transformed mean back.
            score = self.edge_score[s](feature)[..., 0]
            sent = torch.relu(self.edge_proj[s](e))
            back = torch.einsum("bnm,bmh->bnh", H, sent) / (H.sum(2)[..., None] + _EPS)
            h = h + torch.relu(self.node_update[s](back))
            scores.append(score)
            members.append(H.detach())
            parts.append(score)
            parts.append(h.mean(1))
        if self.node_score is not None:
            parts.append(self.node_score(h)[..., 0])
        logits = self.head(torch.cat(parts, dim=1))
        if self.edge_linear is not None:
            logits = logits + self.edge_linear(edges[:, : self.edge_linear.in_features])
        if return_edges:
            return logits, scores, members
        return logits


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
