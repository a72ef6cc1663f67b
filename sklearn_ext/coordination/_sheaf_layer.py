"""Unrolled sheaf-ADMM in torch: the differentiable core of the family.

Agents ``i = 0..N-1`` hold primal states ``x_i`` in a stalk ``R^{d_v}``; each
edge ``e = (i, j)`` of a fixed graph has an edge stalk ``R^{d_e}`` and two
restriction maps ``F_{e,0}, F_{e,1}`` (``d_e x d_v``). The agents solve

    minimise   sum_i  1/2 x_i' Q_i x_i + q_i' x_i
    subject to F_{e,0} x_i = F_{e,1} x_j   for every edge e = (i, j),

(a quadratic program whose constraints say which aspects of neighbouring
solutions must agree) by consensus ADMM with an edge variable ``z_e`` and
scaled duals ``u_{e,s}`` for each end ``s`` of each edge, step size ``rho``:

    x_i  <- (Q_i + rho S_i)^{-1} (-q_i + rho sum_{(e,s) at i} F_{e,s}' (z_e - u_{e,s}))
    z_e  <- mean_s (F_{e,s} x_{end s} + u_{e,s})
    u_es <- u_{e,s} + F_{e,s} x_{end s} - z_e

with ``S_i = sum_{(e,s) at i} F_{e,s}' F_{e,s}``. The x-update is one batched
product with the inverse of ``Q_i + rho S_i``, computed once per forward pass
(an LU inverse of these small blocks, whose backward is two products, cheaper
than a Cholesky factor's triangular solves). Every step is
differentiable, so encoders producing ``Q``, ``q`` and the restriction maps
train end to end through the ``n_iter`` unrolled iterations.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import torch
from torch import nn

__all__ = ["SheafADMM", "SheafADMMStates"]


class SheafADMMStates:
    """Trajectories of one forward pass: primal, consensus, dual, residuals.

    Attributes
    ----------
    primal : list of Tensor (batch, n_agents, d_v)
    consensus : list of Tensor (batch, n_edges, d_e)
    dual : list of Tensor (batch, n_edges, 2, d_e)
    primal_residual : Tensor (n_iter, batch)
        ``||F x - z||`` over all edge ends (disagreement with the consensus).
    disagreement : Tensor (n_iter, batch)
        ``||F_{e,0} x_i - F_{e,1} x_j||`` over all edges (the constraint).
    dual_norm : Tensor (n_iter, batch)
    """

    def __init__(self):
        self.primal, self.consensus, self.dual = [], [], []
        self.primal_residual, self.disagreement, self.dual_norm = [], [], []

    def finish(self):
        for name in ("primal_residual", "disagreement", "dual_norm"):
            setattr(self, name, torch.stack(getattr(self, name)))
        return self


class SheafADMM(nn.Module):
    """``n_iter`` unrolled consensus-ADMM steps over a cellular sheaf.

    Parameters
    ----------
    edges : LongTensor of shape (n_edges, 2)
        The graph: agent indices at the two ends of each edge.
    n_agents : int
    stalk_dim : int
        ``d_v``, the size of each agent's state.
    edge_dim : int
        ``d_e``, the size of each edge stalk (what neighbours must agree on).
    n_iter : int
        Unrolled iterations.
    rho : float, default=1.0
        Initial ADMM step size (learned on a log scale when ``learn_rho``).
    learn_sheaf : bool, default=True
        Learn the restriction maps; otherwise they stay at their start, the
        first ``d_e`` coordinates of each end (a constant sheaf).
    learn_rho : bool, default=True
    edge_types : array-like of shape (n_edges,), default=None
        Edges of one type share their restriction maps (e.g. "same row",
        "same column", "same box" in Sudoku); None gives each edge its own.
    """

    def __init__(
        self,
        edges,
        n_agents,
        stalk_dim,
        edge_dim,
        n_iter,
        rho=1.0,
        learn_sheaf=True,
        learn_rho=True,
        edge_types=None,
    ):
        super().__init__()
        # A copy: the buffer is overwritten when a state dict is loaded, and
        # the caller's array may be read-only (a memory-mapped fitted model).
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if edge_types is None:
            types = np.arange(len(edges))
        else:
            # Stored sorted by type (stably), the order of the per-edge
            # states in ``self.edges`` since the first release (fitted models
            # keep it).
            types = np.asarray(edge_types, dtype=np.int64)
            order = np.argsort(types, kind="stable")
            edges, types = edges[order], types[order]
        self.register_buffer("edges", torch.tensor(edges))
        self.register_buffer("edge_types", torch.tensor(types))
        n_types = int(types.max()) + 1 if len(types) else 0
        self.n_agents = int(n_agents)
        self.stalk_dim = int(stalk_dim)
        self.edge_dim = int(edge_dim)
        self.n_iter = int(n_iter)
        start = torch.eye(edge_dim, stalk_dim).expand(n_types, 2, -1, -1).clone()
        self.restriction = nn.Parameter(start, requires_grad=learn_sheaf)
        self.log_rho = nn.Parameter(
            torch.tensor(math.log(rho)), requires_grad=learn_rho
        )

    def init_parameters(self, generator):
        """Start from the constant sheaf, perturbed when it is learned."""
        F = self.restriction
        start = torch.eye(self.edge_dim, self.stalk_dim).expand(F.shape).clone()
        if F.requires_grad:
            start += 0.1 * torch.randn(F.shape, generator=generator)
        with torch.no_grad():
            F.copy_(start.to(dtype=F.dtype, device=F.device))

    def type_maps(self):
        """Restriction maps of each type, scaled to Frobenius norm ``sqrt(d_e)``.

        The scale is fixed so that the maps cannot shrink to zero, which
        would satisfy every constraint trivially.
        """
        F = self.restriction
        norm = F.flatten(2).norm(dim=2).clamp_min(1e-8)[..., None, None]
        return F * (math.sqrt(self.edge_dim) / norm)

    def maps(self):
        """Restriction maps of each edge, shape (n_edges, 2, d_e, d_v)."""
        return self.type_maps()[self.edge_types]

    def _restrict(self, F, x_ends, adjoint=False):
        """Apply each edge end's map (or its transpose) to (batch, E, 2, d)."""
        pattern = "esdv,besd->besv" if adjoint else "esdv,besv->besd"
        return torch.einsum(pattern, F, x_ends)

    def _scatter(self, per_end, batch):
        """Sum per-edge-end vectors (batch, E, 2, d) into their agents."""
        out = per_end.new_zeros(batch, self.n_agents, per_end.shape[-1])
        return out.index_add(
            1,
            self.edges.reshape(-1),
            per_end.reshape(batch, 2 * per_end.shape[1], per_end.shape[-1]),
        )

    def forward(self, Q, q, return_states=False):
        """Solve the sheaf-constrained QP approximately by ``n_iter`` steps.

        Parameters
        ----------
        Q : Tensor of shape (batch, n_agents, d_v, d_v)
            Symmetric positive definite per-agent curvatures.
        q : Tensor of shape (batch, n_agents, d_v)
        return_states : bool, default=False

        Returns
        -------
        x : Tensor of shape (batch, n_agents, d_v)
        states : SheafADMMStates
            Only with ``return_states=True``.
        """
        x, _, _, states = self.iterate(Q, q, return_states=return_states)
        return (x, states) if return_states else x

    def iterate(self, Q, q, z=None, u=None, return_states=False):
        """ADMM from a given consensus and dual (zeros by default).

        Starting from the ``(z, u)`` where an earlier problem on the same
        graph stopped warm-starts the iterations (the objective may have
        changed in between, as between the rounds of a puzzle solver).

        Returns
        -------
        x, z, u : Tensor
            The last primal, consensus (batch, n_edges, d_e) and scaled dual
            (batch, n_edges, 2, d_e) iterates.
        states : SheafADMMStates or None
        """
        batch = q.shape[0]
        F = self.maps()  # (E, 2, d_e, d_v): one einsum per restriction
        rho = self.log_rho.exp()
        FtF = F.transpose(-1, -2) @ F  # (E, 2, d_v, d_v)
        S = FtF.new_zeros(self.n_agents, self.stalk_dim, self.stalk_dim)
        S = S.index_add(0, self.edges.reshape(-1), FtF.reshape(-1, *FtF.shape[2:]))
        # The system matrix is the same in every iteration: invert it once
        # and apply the inverse as a product (of these small blocks, as a
        # broadcast product and a sum: cheaper than a batched matmul).
        inverse = torch.linalg.inv(Q + rho * S)
        ends = self.edges.reshape(-1)  # (2E,): both ends of each edge
        n_edges = len(self.edges)
        if z is None:
            z = q.new_zeros(batch, n_edges, self.edge_dim)
            u = q.new_zeros(batch, n_edges, 2, self.edge_dim)
        states = SheafADMMStates() if return_states else None
        x = None
        for _ in range(self.n_iter):
            pull = self._restrict(F, z[:, :, None] - u, adjoint=True)
            rhs = -q + rho * self._scatter(pull, batch)
            x = (inverse * rhs[..., None, :]).sum(-1)
            x_ends = x.index_select(1, ends).reshape(batch, n_edges, 2, x.shape[-1])
            Fx = self._restrict(F, x_ends)
            z = (Fx + u).mean(dim=2)
            u = u + Fx - z[:, :, None]
            if states is not None:
                states.primal.append(x)
                states.consensus.append(z)
                states.dual.append(u)
                states.primal_residual.append(
                    (Fx - z[:, :, None]).flatten(1).norm(dim=1)
                )
                states.disagreement.append(
                    (Fx[:, :, 0] - Fx[:, :, 1]).flatten(1).norm(dim=1)
                )
                states.dual_norm.append(u.flatten(1).norm(dim=1))
        return x, z, u, None if states is None else states.finish()
