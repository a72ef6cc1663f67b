"""GCIB's network: sparse LightGCN views, the auxiliary-edge mask, the losses."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings

import torch
from torch import nn
from torch.nn import functional as F

from sklearn_ext.utils._torch import weighted_mean

__all__ = [
    "BipartiteGraph",
    "GCIBNet",
    "direct_scores",
    "gcib_batch_loss",
    "pair_lookup",
]

# Temperature of the binary-concrete relaxation of the edge mask in training.
MASK_TEMPERATURE = 0.5
_EPS = 1e-8


class _Orientation:
    """One orientation (rows -> columns) of a bipartite edge list, in CSR order.

    An edge list may hold a (row, column) pair more than once (one edge per
    behaviour); products sum them. The sampled products run on the pattern
    of distinct pairs, which torch's kernel requires, and are read back per
    edge through ``inverse``.
    """

    def __init__(self, crow, col, rows, shape):
        self.crow, self.col, self.rows, self.shape = crow, col, rows, shape
        keys = rows * shape[1] + col
        distinct, inverse = torch.unique_consecutive(keys, return_inverse=True)
        if distinct.numel() == keys.numel():
            self.pattern, self.inverse = (crow, col), None
        else:
            counts = torch.bincount(distinct // shape[1], minlength=shape[0])
            crow_d = torch.zeros_like(crow)
            crow_d[1:] = torch.cumsum(counts, 0)
            self.pattern, self.inverse = (crow_d, distinct % shape[1]), inverse

    def matrix(self, values, pattern=None):
        crow, col = (self.crow, self.col) if pattern is None else pattern
        with warnings.catch_warnings():
            # torch flags its CSR support as beta on first use.
            warnings.filterwarnings("ignore", "Sparse CSR tensor support")
            return torch.sparse_csr_tensor(
                crow, col, values, self.shape, check_invariants=False
            )

    def sddmm(self, left, right):
        """``(left[rows] * right[cols]).sum(1)`` per edge, without gathering.

        A sampled dense-dense product (``torch.sparse.sampled_addmm``) at the
        edges' positions: faster on the CPU than indexing the two factors
        for a million edges (a timing made when it was written, not kept in
        the benchmarks), and no (n_edges, dim) temporary.
        """
        crow, col = self.pattern
        zeros = torch.zeros(col.numel(), dtype=left.dtype, device=left.device)
        values = torch.sparse.sampled_addmm(
            self.matrix(zeros, self.pattern), left, right.T, beta=0.0
        ).values()
        return values if self.inverse is None else values[self.inverse]


class _WeightedSpMM(torch.autograd.Function):
    """``A(values) @ dense`` with gradients for both the edge values and ``dense``.

    torch's own sparse products either give no gradient for the values of a
    CSR matrix or go through COO kernels several times slower on the CPU; here
    the forward and the input gradient are CSR products (the latter with the
    transposed orientation) and the value gradient is the row-wise dot product
    ``grad[rows] . dense[cols]``, gathered in chunks.
    """

    @staticmethod
    def forward(ctx, values, graph, forward_orient, dense):
        ctx.save_for_backward(values, dense)
        ctx.graph, ctx.forward_orient = graph, forward_orient
        orient = graph.users_to_items if forward_orient else graph.items_to_users
        return orient.matrix(values) @ dense

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        graph, fwd = ctx.graph, ctx.forward_orient
        orient = graph.users_to_items if fwd else graph.items_to_users
        other = graph.items_to_users if fwd else graph.users_to_items
        perm = graph.to_items_order if fwd else graph.to_users_order
        grad_values = grad_dense = None
        if ctx.needs_input_grad[3]:
            grad_dense = other.matrix(values[perm]) @ grad
        if ctx.needs_input_grad[0]:
            grad_values = orient.sddmm(grad, dense)
        return grad_values, None, None, grad_dense


class _EdgeBilinear(torch.autograd.Function):
    """Edge logits ``sum_d h_u[d] h_i[d] w_b[d] + c_b`` with gradients for w, c.

    Forward: one sampled dense-dense product per behaviour, ``(h_users * w_b)
    . h_items`` at the edges' positions, each edge taking its behaviour's.
    Backward: ``dL/dw_b = sum_u h_u * (G_b @ h_items)_u`` with ``G_b`` the
    sparse matrix of the edge gradients of behaviour b (one sparse product),
    and ``dL/dc_b`` the sum of those gradients.
    """

    @staticmethod
    def forward(ctx, weight, bias, graph, h_users, h_items, behavior_masks):
        orient = graph.users_to_items
        logits = torch.zeros(graph.n_edges, dtype=h_users.dtype, device=h_users.device)
        for b, mask in enumerate(behavior_masks):
            values = orient.sddmm(h_users * weight[b], h_items) + bias[b]
            logits = logits + mask * values
        ctx.save_for_backward(h_users, h_items)
        ctx.graph, ctx.masks = graph, behavior_masks
        return logits

    @staticmethod
    def backward(ctx, grad):
        h_users, h_items = ctx.saved_tensors
        orient = ctx.graph.users_to_items
        grad_w = torch.stack(
            [
                (h_users * (orient.matrix(grad * mask) @ h_items)).sum(0)
                for mask in ctx.masks
            ]
        )
        grad_b = torch.stack([(grad * mask).sum() for mask in ctx.masks])
        return grad_w, grad_b, None, None, None, None


class BipartiteGraph:
    """A user-item edge list held in both CSR orientations.

    Edges are in user-major order (that of ``users_to_items``); ``values`` of a
    propagation are given in that order. ``to_items_order`` permutes them into
    the item-major order of ``items_to_users`` and ``to_users_order`` back.

    Parameters
    ----------
    users, items : LongTensor of shape (n_edges,)
        Sorted by user, then item.
    n_users, n_items : int
    """

    def __init__(self, users, items, n_users, n_items):
        device = users.device
        self.users, self.items = users, items
        self.n_users, self.n_items = n_users, n_items
        self.n_edges = users.numel()
        crow = torch.zeros(n_users + 1, dtype=torch.long, device=device)
        crow[1:] = torch.cumsum(torch.bincount(users, minlength=n_users), 0)
        self.users_to_items = _Orientation(crow, items, users, (n_users, n_items))
        order = torch.argsort(items * n_users + users)
        crow_t = torch.zeros(n_items + 1, dtype=torch.long, device=device)
        crow_t[1:] = torch.cumsum(torch.bincount(items, minlength=n_items), 0)
        self.items_to_users = _Orientation(
            crow_t, users[order], items[order], (n_items, n_users)
        )
        self.to_items_order = order
        self.to_users_order = torch.argsort(order)

    def normalized_values(self, weights=None):
        """``w_e / sqrt(d_u d_i)`` with the (weighted) degrees of the graph."""
        if weights is None:
            weights = torch.ones(
                self.n_edges, device=self.users.device, dtype=torch.float32
            )
        d_u = torch.zeros(self.n_users, device=weights.device, dtype=weights.dtype)
        d_i = torch.zeros(self.n_items, device=weights.device, dtype=weights.dtype)
        d_u = d_u.index_add(0, self.users, weights)
        d_i = d_i.index_add(0, self.items, weights)
        return weights * torch.rsqrt(d_u[self.users] * d_i[self.items] + _EPS)

    def propagate(self, values, user_emb, item_emb, n_layers):
        """LightGCN: the mean of the layer-0 to layer-L embeddings."""
        users, items = [user_emb], [item_emb]
        u, i = user_emb, item_emb
        values_t = values[self.to_items_order]
        for _ in range(n_layers):
            u, i = (
                _WeightedSpMM.apply(values, self, True, i),
                _WeightedSpMM.apply(values_t, self, False, u),
            )
            users.append(u)
            items.append(i)
        return torch.stack(users).mean(0), torch.stack(items).mean(0)


class GCIBNet(nn.Module):
    """Shared layer-0 embeddings, a target view and a denoised auxiliary view.

    The target view is LightGCN over the target-behaviour graph. The auxiliary
    view is LightGCN over the auxiliary graph whose edges are weighted by a
    learned keep probability: for an edge (u, i) of auxiliary behaviour b,
    ``logit = w_b . (h_u * h_i) + c_b`` with ``h`` the target view's
    (detached) embeddings, so that an edge is kept as far as its two ends agree
    in the target behaviour's geometry. In training the mask is sampled from a
    binary-concrete relaxation (temperature ``MASK_TEMPERATURE``); otherwise it
    is the keep probability itself.

    Parameters
    ----------
    n_users, n_items, n_components, n_aux_behaviors : int
    """

    def __init__(self, n_users, n_items, n_components, n_aux_behaviors):
        super().__init__()
        self.user_emb = nn.Parameter(torch.empty(n_users, n_components))
        self.item_emb = nn.Parameter(torch.empty(n_items, n_components))
        self.mask_weight = nn.Parameter(
            torch.empty(max(n_aux_behaviors, 1), 2 * n_components)
        )
        self.mask_bias = nn.Parameter(torch.empty(max(n_aux_behaviors, 1)))
        self.edge_weight = nn.Parameter(torch.empty(max(n_aux_behaviors, 1)))
        # How far an item's auxiliary edges are to be trusted (e.g. clickbait).
        self.mask_item_bias = nn.Parameter(torch.empty(n_items))

    def init_parameters(self, generator):
        """Embeddings ~ N(0, 0.1^2); the mask starts near keep-all (p = 0.88)."""
        with torch.no_grad():
            for p in (self.user_emb, self.item_emb):
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            self.mask_weight.copy_(
                0.01 * torch.randn(self.mask_weight.shape, generator=generator)
            )
            self.mask_bias.fill_(2.0)
            self.edge_weight.fill_(1.0)
            self.mask_item_bias.zero_()

    def keep_logits(self, h_users, h_items, aux, behavior_masks):
        """Keep logits of the auxiliary edges (u, i, b) from target-view embeddings.

        ``logit_e = sum_d h_u[d] h_i[d] w_b[d] + c_b + a_i``, with ``a_i`` a
        learned trust of item i's auxiliary edges. ``h_users`` and
        ``h_items`` carry no gradient: the products ``h_u * h_i`` are the
        edges' features and the logits are linear in them, one weight vector
        per behaviour.
        """
        logits = _EdgeBilinear.apply(
            self.mask_weight, self.mask_bias, aux, h_users, h_items, behavior_masks
        )
        return logits + self.mask_item_bias[aux.items]

    def forward(self, target, aux, aux_behavior, n_layers, *, mode, generator=None):
        """The two views' embeddings and the auxiliary keep logits.

        Parameters
        ----------
        target : BipartiteGraph
        aux : BipartiteGraph or None
            The auxiliary edges (all auxiliary behaviours together).
        aux_behavior : list of tensor of shape (aux.n_edges,)
            Per auxiliary behaviour, a 0/1 float mask of its edges.
        n_layers : int
        mode : {"denoised", "all", "none"}
        generator : torch.Generator, default=None
            Draws the concrete noise in training; None gives the expected mask.

        Returns
        -------
        views : dict
            ``users_t, items_t`` and, unless ``mode="none"``, ``users_a,
            items_a``; with ``mode="denoised"`` also ``logits``, ``keep`` and
            ``edge_scores`` (each auxiliary edge's direct evidence).
        """
        target_values = target.normalized_values()
        users_t, items_t = target.propagate(
            target_values, self.user_emb, self.item_emb, n_layers
        )
        views = {"users_t": users_t, "items_t": items_t}
        if mode == "none" or aux is None:
            return views
        if mode == "all":
            weights = None
        else:
            with torch.no_grad():
                # What the whole auxiliary graph says of the two ends.
                aux_values = aux.normalized_values()
                users_f, items_f = aux.propagate(
                    aux_values, self.user_emb, self.item_emb, n_layers
                )
                # A user is read from its items (one normalised hop from the
                # item embeddings), as a new user is folded in: the mask of a
                # training row and of the same row given anew are one
                # function.
                hop = target.users_to_items.matrix(target_values) @ items_t
                users_f = aux.users_to_items.matrix(aux_values) @ items_f
                h_users = torch.cat([hop, users_f], 1)
                h_items = torch.cat([items_t, items_f], 1)
            logits = self.keep_logits(h_users, h_items, aux, aux_behavior)
            if generator is not None:
                u = torch.rand(logits.shape, generator=generator).to(logits.device)
                u = u.clamp(1e-6, 1 - 1e-6)
                noise = torch.log(u) - torch.log1p(-u)
                weights = torch.sigmoid((logits + noise) / MASK_TEMPERATURE)
            else:
                weights = torch.sigmoid(logits)
            views["logits"], views["keep"] = logits, weights
        users_a, items_a = aux.propagate(
            aux.normalized_values(weights), self.user_emb, self.item_emb, n_layers
        )
        views["users_a"], views["items_a"] = users_a, items_a
        if mode == "denoised":
            # Direct evidence, for the bottleneck's sufficiency term: each kept
            # auxiliary edge adds its behaviour's weight times its keep
            # probability to the score of its (user, item) pair.
            per_edge = sum(m * w for m, w in zip(aux_behavior, self.edge_weight))
            views["edge_scores"] = per_edge * weights
        return views


def pair_lookup(keys, users, items, n_items, max_dup):
    """Positions of the sorted auxiliary ``keys`` matching each (user, item) pair.

    Returns ``(positions, found)``, each of shape (n_pairs, max_dup): a pair
    has at most one edge per auxiliary behaviour, stored consecutively.
    """
    query = users * n_items + items
    start = torch.searchsorted(keys, query)
    pos = start[:, None] + torch.arange(max_dup, device=keys.device)
    inside = pos < keys.numel()
    pos = pos.clamp(max=keys.numel() - 1)
    found = (keys[pos] == query[:, None]) & inside
    return pos, found


def direct_scores(views, lookup):
    """The direct-evidence score of (user, item) pairs from ``pair_lookup``."""
    pos, found = lookup
    return (views["edge_scores"][pos] * found).sum(1)


def _bpr(users, pos, neg, u_emb, i_emb, weights=None, direct=0.0):
    """Per-edge BPR loss ``-log sigmoid(s(u, pos) - s(u, neg))``, weighted mean.

    ``direct`` is added to each score difference (the direct evidence).
    """
    u = u_emb[users]
    diff = (u * (i_emb[pos] - i_emb[neg])).sum(1) + direct
    return weighted_mean(F.softplus(-diff), weights)


def _info_nce(a, b, temperature):
    """Symmetric InfoNCE: row r of ``a`` and of ``b`` are the positive pair."""
    a, b = F.normalize(a, dim=1), F.normalize(b, dim=1)
    logits = a @ b.T / temperature
    labels = torch.arange(a.shape[0], device=a.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))


def _bernoulli_kl(logits, prior):
    """Mean KL(Bernoulli(sigmoid(logits)) || Bernoulli(prior))."""
    p = torch.sigmoid(logits)
    log_p, log_q = F.logsigmoid(logits), F.logsigmoid(-logits)
    return (
        p * (log_p - math.log(prior)) + (1 - p) * (log_q - math.log1p(-prior))
    ).mean()


def gcib_batch_loss(views, users, pos, neg, params, contrast_idx, lookups, aux_batch):
    """GCIB's minibatch objective on target edges (users, pos) with negatives.

    ``BPR(final) + BPR(aux view) + BPR_keep(aux view, aux edges)
    + beta * KL(mask || prior)
    + contrast_weight * (InfoNCE(users) + InfoNCE(items)) + alpha * L2``,
    where the final score is the sum of the two views' dot products. The
    second term is the bottleneck's sufficiency part: the denoised auxiliary
    graph alone must predict the target behaviour, through its propagated
    embeddings and through its own edges (the direct evidence of the pair's
    kept auxiliary edges, ``sum_b gamma_b keep_{u,i,b}``, enters this term
    only, not the final score). The KL is its compression
    part (keep no more of the original auxiliary graph than that needs). The
    third term trains the auxiliary view on a sample of auxiliary edges, each
    weighted by its current keep probability: the denoised graph, not the
    original one, is what the embeddings reproduce.

    Parameters
    ----------
    views : dict
        From :meth:`GCIBNet.forward`.
    users, pos, neg : LongTensor of shape (batch,)
    params : dict
        ``beta``, ``keep_prior``, ``contrast_weight``, ``temperature``,
        ``alpha``, ``emb`` (the layer-0 user and item embeddings).
    contrast_idx : tuple of LongTensor
        The users and items contrasted in this batch.
    lookups : tuple or None
        :func:`pair_lookup` of the positive and of the negative pairs, with
        the denoised auxiliary view.
    aux_batch : tuple of LongTensor or None
        ``(edges, negatives)``: a sample of auxiliary edges (positions in the
        graph) and one random item each, for the auxiliary view's own BPR
        term, weighted by each edge's (detached) keep probability.

    Returns
    -------
    loss : scalar tensor
    """
    users_t, items_t = views["users_t"], views["items_t"]
    if "users_a" in views:
        u_final = torch.cat([users_t, views["users_a"]], 1)
        i_final = torch.cat([items_t, views["items_a"]], 1)
    else:
        u_final, i_final = users_t, items_t
    direct = 0.0
    if "edge_scores" in views:
        direct = direct_scores(views, lookups[0]) - direct_scores(views, lookups[1])
    loss = _bpr(users, pos, neg, u_final, i_final)
    if "keep" in views:
        loss = loss + _bpr(
            users, pos, neg, views["users_a"], views["items_a"], direct=direct
        )
        loss = loss + params["beta"] * _bernoulli_kl(
            views["logits"], params["keep_prior"]
        )
    if aux_batch is not None and "users_a" in views:
        edges, aux_neg = aux_batch
        aux_users, aux_pos = params["aux_ends"]
        keep = views["keep"][edges].detach() if "keep" in views else None
        loss = loss + _bpr(
            aux_users[edges],
            aux_pos[edges],
            aux_neg,
            views["users_a"],
            views["items_a"],
            keep,
        )
    if "users_a" in views and params["contrast_weight"] > 0:
        cu, ci = contrast_idx
        loss = loss + params["contrast_weight"] * (
            _info_nce(users_t[cu], views["users_a"][cu], params["temperature"])
            + _info_nce(items_t[ci], views["items_a"][ci], params["temperature"])
        )
    user_emb, item_emb = params["emb"]
    reg = (
        user_emb[users].pow(2).sum()
        + item_emb[pos].pow(2).sum()
        + item_emb[neg].pow(2).sum()
    ) / users.numel()
    return loss + params["alpha"] * reg
