"""Torch modules of Knothe-Rosenblatt quantile regression.

A Knothe-Rosenblatt (KR) map sends a point ``tau`` of the unit cube
``(0, 1)^d`` to ``y`` in ``R^d`` one component at a time::

    y_1 = Q_1(tau_1 | c)
    y_k = Q_k(tau_k | c, y_1, ..., y_{k-1})

where ``Q_k`` is the conditional quantile function of output ``k`` given the
context ``c`` (the features, or a state-action pair) and the earlier outputs'
*realisations*. Drawing ``tau`` uniformly on the cube and pushing it through
the map samples the joint conditional law; a quantile network that learns
each ``Q_k`` by quantile regression on the observed (teacher-forced) earlier
outputs therefore learns the joint law, dependence included. It is IQN
(Dabney et al. 2018) extended to several outputs.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import math

import torch
from torch import nn

__all__ = [
    "KRQuantileNet",
    "cycled_ranks",
    "quantile_huber_loss",
    "random_ranks",
    "rearrangement_grid",
]


def rearrangement_grid(n_grid=48, z_max=4.75):
    """Levels and cell masses of the grid on which quantiles are rearranged.

    ``n_grid`` levels ``Phi(z)`` for ``z`` evenly spaced on
    ``[-z_max, z_max]`` (dense in the tails, from about 1e-6 to 1 - 1e-6),
    each carrying the probability of its cell (cells split halfway between
    neighbouring ``z``; the masses sum to 1).
    """
    from scipy.stats import norm

    z = torch.linspace(-z_max, z_max, n_grid, dtype=torch.float64)
    levels = torch.as_tensor(norm.cdf(z.numpy()))
    cuts = torch.as_tensor(norm.cdf(((z[1:] + z[:-1]) / 2).numpy()))
    edges = torch.cat([torch.zeros(1, dtype=torch.float64), cuts, torch.ones(1)])
    return levels, edges.diff()


def rearrange(values, mass, tau):
    """Monotone rearrangement of quantile values, read at the levels ``tau``.

    ``values`` (b, G, d): a quantile function of each row and output at the
    grid levels whose cells carry ``mass`` (G,). Sorting the values gives the
    increasing quantile function of the same law (Chernozhukov, Fernandez-Val
    and Galichon 2010): the k-th smallest value sits at the middle of the
    cumulative mass of the k smallest. It is read at ``tau`` (b, d) by linear
    interpolation, flat beyond the extreme grid levels. Returns (b, d).
    """
    ordered, order = values.sort(dim=1)
    m = mass.to(values)[order]  # (b, G, d)
    mid = (m.cumsum(dim=1) - 0.5 * m).transpose(1, 2).contiguous()  # (b, d, G)
    ordered = ordered.transpose(1, 2).contiguous()
    G = ordered.shape[-1]
    hi = torch.searchsorted(mid, tau[..., None].contiguous()).clamp(1, G - 1)
    lo = hi - 1
    x0, x1 = mid.gather(-1, lo), mid.gather(-1, hi)
    y0, y1 = ordered.gather(-1, lo), ordered.gather(-1, hi)
    w = ((tau[..., None] - x0) / (x1 - x0).clamp_min(1e-12)).clamp(0, 1)
    return (y0 + w * (y1 - y0))[..., 0]


def quantile_huber_loss(target, quantile, tau, kappa):
    """Quantile-Huber loss of ``quantile`` at level ``tau`` against ``target``.

    All three tensors have the same shape; ``kappa=0`` is the pinball loss.
    Returned elementwise.
    """
    u = target - quantile
    weight = (tau - (u.detach() < 0).to(u.dtype)).abs()
    if kappa == 0:
        return weight * u.abs()
    a = u.abs()
    huber = torch.where(a <= kappa, 0.5 * u * u / kappa, a - 0.5 * kappa)
    return weight * huber


def random_ranks(n, d, generator, device=None):
    """``n`` uniform random KR orders of ``d`` outputs, as ranks (n, d).

    ``rank[i, k]`` is the position of output ``k`` in row ``i``'s order.
    """
    order = torch.rand(n, d, generator=generator).argsort(dim=1)
    return order.argsort(dim=1).to(device)


def cycled_ranks(m, d, device=None):
    """Ranks (m, d) that share ``m`` levels out among the KR orders of ``d`` outputs.

    When ``d! <= m``, the levels come in ``d!`` consecutive blocks of (near)
    equal size, block ``i`` taking the ``i``-th order in lexicographic order
    (the first is ``0, 1, ..., d-1``); beyond that, orders drawn with a fixed
    seed. Blocks, not ``j mod d!``: consecutive points of a Sobol sequence
    alternate between halves of the cube, so a residue class of its indices
    is not spread over the cube, while a block of consecutive points is.
    """
    if math.factorial(d) <= m:
        orders = torch.tensor(list(itertools.permutations(range(d))))
        order = orders[torch.arange(m) * len(orders) // m]
    else:
        gen = torch.Generator().manual_seed(0)
        order = torch.rand(m, d, generator=gen).argsort(dim=1)
        order[0] = torch.arange(d)
    return order.argsort(dim=1).to(device)


class CosineEmbedding(nn.Module):
    """IQN's embedding of a level: ``relu(W cos(pi i tau))``, i = 0..n-1."""

    def __init__(self, n_cos, hidden):
        super().__init__()
        self.register_buffer("freq", math.pi * torch.arange(n_cos).float())
        self.linear = nn.Linear(n_cos, hidden)

    def forward(self, tau):
        return torch.relu(self.linear(torch.cos(tau[..., None] * self.freq)))


class KRQuantileNet(nn.Module):
    """Conditional quantile functions of the KR map of a d-dimensional output.

    Parameters
    ----------
    context_dim : int
        Size of the context vector each row is conditioned on.
    n_outputs : int
        ``d``.
    embedding_dim : int
        Cosines in the level embedding.
    hidden : int
        Width of every layer.
    ordering : {"transformer", "fixed"}
        ``"fixed"``: output ``k`` has its own network, fed the context and the
        earlier outputs as a vector in the KR order. ``"transformer"``: one
        shared cross-attention block without positional encoding: output
        ``k``'s query (an identity embedding of the output plus its level)
        attends to a context token and to one token per earlier output (its
        value plus the output's identity embedding). The earlier outputs are a
        set, not a sequence, so relabelling the outputs relabels the tokens
        and nothing else: the order enters only through which outputs are
        visible (the mask). The mask may differ per row (``rank``), so one
        network can learn the KR maps of every order of the outputs.
    conditional : bool, default=True
        False hides every earlier output: the outputs' quantiles become
        independent given the context (the per-output baseline).
    n_heads : int, default=4
    """

    def __init__(
        self,
        context_dim,
        n_outputs,
        embedding_dim,
        hidden,
        ordering,
        conditional=True,
        n_heads=4,
    ):
        super().__init__()
        self.n_outputs = d = n_outputs
        self.ordering = ordering
        self.conditional = conditional
        self.tau_embedding = CosineEmbedding(embedding_dim, hidden)
        visible = torch.tril(torch.ones(d, d), diagonal=-1)
        if not conditional:
            visible.zero_()
        self.register_buffer("visible", visible)  # [k, j]: j < k
        if ordering == "fixed":
            # One network per output, vectorised over the outputs.
            # Initialised by init_parameters (the estimator draws them from
            # its generator).
            self.w_in = nn.Parameter(torch.zeros(d, context_dim + d, hidden))
            self.b_in = nn.Parameter(torch.zeros(d, hidden))
            self.w_mid = nn.Parameter(torch.zeros(d, hidden, hidden))
            self.b_mid = nn.Parameter(torch.zeros(d, hidden))
            self.w_out = nn.Parameter(torch.zeros(d, hidden))
            self.b_out = nn.Parameter(torch.zeros(d))
        else:
            self.context_token = nn.Linear(context_dim, hidden)
            self.value_token = nn.Linear(1, hidden)
            self.identity = nn.Embedding(d, hidden)
            self.attention = nn.MultiheadAttention(hidden, n_heads, batch_first=True)
            self.norm1 = nn.LayerNorm(hidden)
            self.norm2 = nn.LayerNorm(hidden)
            self.feedforward = nn.Sequential(
                nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
            )
            self.head = nn.Sequential(
                nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
            )

    def init_parameters(self, generator):
        """Draw the per-output weights (``ordering="fixed"``) from ``generator``.

        Each output's layer gets PyTorch's Linear default: uniform in
        +-1/sqrt(fan_in) for weights and biases alike.
        """
        if self.ordering != "fixed":
            return
        fan_in = {"in": self.w_in.shape[1], "mid": self.w_mid.shape[1]}
        fan_in["out"] = self.w_out.shape[1]
        for name, param in self.named_parameters(recurse=False):
            bound = 1 / math.sqrt(fan_in[name.split("_")[1]])
            values = torch.rand(param.shape, generator=generator) * (2 * bound) - bound
            param.copy_(values.to(dtype=param.dtype))

    def _visible(self, rank):
        """Float mask [k, j] (or [b, k, j]): 1 where output k sees output j."""
        if rank is None:
            return self.visible
        if self.ordering == "fixed":
            raise ValueError("ordering='fixed' has one KR order: rank must be None.")
        visible = (rank[:, None, :] < rank[:, :, None]).to(self.visible.dtype)
        return visible if self.conditional else torch.zeros_like(visible)

    def forward(self, context, tau, y, rank=None):
        """Quantile of output k at ``tau[:, k]`` given the outputs before k in ``y``.

        Parameters
        ----------
        context : Tensor of shape (batch, context_dim)
        tau : Tensor of shape (batch, d)
        y : Tensor of shape (batch, d)
            Realisations of the outputs; output k sees only the outputs
            before it.
        rank : LongTensor of shape (batch, d), optional
            Position of each output in each row's KR order (a permutation of
            ``0..d-1``); None is the order ``0, 1, ..., d-1`` for every row.
            Only ``ordering="transformer"`` takes one.

        Returns
        -------
        Tensor of shape (batch, d)
        """
        phi = self.tau_embedding(tau)  # (B, d, H)
        visible = self._visible(rank)  # (d, d) or (B, d, d)
        if self.ordering == "fixed":
            seen = y[:, None, :] * visible  # (B, d, d)
            ctx = context[:, None, :].expand(-1, self.n_outputs, -1)
            h = torch.einsum("bki,kih->bkh", torch.cat([ctx, seen], dim=2), self.w_in)
            h = torch.relu(h + self.b_in) * phi
            h = torch.relu(torch.einsum("bkh,khg->bkg", h, self.w_mid) + self.b_mid)
            return (h * self.w_out).sum(-1) + self.b_out
        ident = self.identity.weight  # (d, H)
        c = self.context_token(context)[:, None, :]  # (B, 1, H)
        keys = torch.cat([c, self.value_token(y[..., None]) + ident], dim=1)
        query = ident + phi + c  # (B, d, H)
        # Boolean mask, True where attention is not allowed: the context token
        # is always visible, output j to output k only when j comes first.
        blocked = torch.cat([torch.ones_like(visible[..., :1]), visible], -1) == 0
        if blocked.dim() == 3:
            blocked = blocked.repeat_interleave(self.attention.num_heads, dim=0)
        attended, _ = self.attention(
            query, keys, keys, attn_mask=blocked, need_weights=False
        )
        h = self.norm1(query + attended)
        h = self.norm2(h + self.feedforward(h))
        return self.head(h * phi)[..., 0]

    def _monotone(self, context, tau, y, rank, grid):
        """:meth:`forward`, each output's quantile function rearranged in its level.

        Output k's quantile function given the context and the earlier
        outputs is evaluated on the grid (output k depends on its own level
        only), sorted, and read at ``tau[:, k]`` (:func:`rearrange`). Rows
        whose context, earlier outputs and order coincide share one grid
        evaluation.
        """
        levels, mass = grid
        keys = [context, y] + ([] if rank is None else [rank.to(context.dtype)])
        distinct, inverse = torch.unique(
            torch.cat(keys, dim=1), dim=0, return_inverse=True
        )
        width = context.shape[1]
        c, yy = distinct[:, :width], distinct[:, width : width + y.shape[1]]
        r = None if rank is None else distinct[:, width + y.shape[1] :].long()
        G, d, n = len(levels), y.shape[1], len(distinct)
        g = levels.to(tau)[None, :, None].expand(n, G, d).reshape(-1, d)
        q = self.forward(
            c.repeat_interleave(G, dim=0),
            g,
            yy.repeat_interleave(G, dim=0),
            None if r is None else r.repeat_interleave(G, dim=0),
        ).reshape(n, G, d)
        return rearrange(q[inverse], mass, tau)

    def kr_map(self, context, tau, rank=None, grid=None):
        """Push ``tau`` through the KR map: one output at a time.

        Parameters
        ----------
        context : Tensor of shape (batch, context_dim)
        tau : Tensor of shape (batch, d)
        rank : LongTensor of shape (batch, d), optional
            Each row's KR order, as in :meth:`forward`.
        grid : tuple of Tensor, optional
            ``(levels, masses)`` of :func:`rearrangement_grid`: each output's
            conditional quantile function is monotonely rearranged on it, so
            that the map never decreases in an output's own level (quantiles
            do not cross). None: the network's raw outputs.

        Returns
        -------
        Tensor of shape (batch, d)
        """
        y = torch.zeros_like(tau)

        def quantiles(y):
            if grid is None:
                return self.forward(context, tau, y, rank)
            return self._monotone(context, tau, y, rank, grid)

        if not self.conditional:
            # Nothing is conditioned on: one pass gives every output.
            return quantiles(y)
        # Position p fills the output of rank p (output p in the default order).
        ranks = (
            torch.arange(self.n_outputs, device=tau.device) if rank is None else rank
        )
        for position in range(self.n_outputs):
            q = quantiles(y)
            y = torch.where(ranks == position, q, y)
        return y


class KRRegressorNet(nn.Module):
    """Feature encoder (two ReLU layers) feeding a :class:`KRQuantileNet`."""

    def __init__(self, n_features, n_outputs, embedding_dim, hidden, ordering):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.kr = KRQuantileNet(hidden, n_outputs, embedding_dim, hidden, ordering)

    def forward(self, X, tau, y, rank=None):
        return self.kr(self.encoder(X), tau, y, rank)

    def kr_map(self, X, tau, rank=None, grid=None):
        return self.kr.kr_map(self.encoder(X), tau, rank, grid)


class MOCriticNet(nn.Module):
    """Return-vector critic: KR quantiles of Z(s, a) from state features and action."""

    def __init__(
        self,
        obs_dim,
        n_actions,
        n_outputs,
        embedding_dim,
        hidden,
        ordering,
        conditional,
    ):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.action = nn.Embedding(n_actions, hidden)
        self.mix = nn.Linear(2 * hidden, hidden)
        self.kr = KRQuantileNet(
            hidden, n_outputs, embedding_dim, hidden, ordering, conditional
        )

    def context(self, obs, actions):
        h = torch.cat([self.encoder(obs), self.action(actions)], dim=-1)
        return torch.relu(self.mix(h))


class MOCriticEnsemble(nn.Module):
    """``n_critics`` independent critics (MO-TQC pools and truncates their draws)."""

    def __init__(self, n_critics, *args):
        super().__init__()
        self.critics = nn.ModuleList(MOCriticNet(*args) for _ in range(n_critics))

    def draws(self, obs, taus, ranks=None):
        """Return-vector draws of every action at the levels ``taus``.

        Parameters
        ----------
        obs : Tensor of shape (batch, obs_dim)
        taus : Tensor of shape (m, d)
        ranks : LongTensor of shape (m, d), optional
            The KR order of each level (see :meth:`KRQuantileNet.forward`).

        Returns
        -------
        Tensor of shape (batch, n_actions, n_critics * m, d)
            Critic c's draws are at positions ``c * m`` to ``(c + 1) * m``.
        """
        batch, m = len(obs), len(taus)
        n_actions = self.critics[0].action.num_embeddings
        actions = torch.arange(n_actions, device=obs.device).repeat(batch)
        rows = obs.repeat_interleave(n_actions, dim=0)
        out = []
        for critic in self.critics:
            ctx = critic.context(rows, actions).repeat_interleave(m, dim=0)
            rank = None if ranks is None else ranks.repeat(batch * n_actions, 1)
            y = critic.kr.kr_map(ctx, taus.repeat(batch * n_actions, 1), rank)
            out.append(y.reshape(batch, n_actions, m, -1))
        return torch.cat(out, dim=2)
