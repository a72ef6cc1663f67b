"""Sheaf-ADMM in torch: a differentiable layer that solves a sheaf-constrained QP.

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
than a Cholesky factor's triangular solves).

Gradients reach ``Q``, ``q`` and the restriction maps in one of two ways:

- ``backward="unrolled"`` (the default): every iteration is differentiable,
  so the gradient is that of the truncated iteration actually run (what a
  model trained with a few iterations relies on);
- ``backward="implicit"``: the iterations run without a graph and the
  gradient is that of the exact solution map of the QP, from its KKT system
  at the returned point (:class:`_ImplicitQP`): exact at convergence, memory
  independent of the number of iterations.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from torch import nn
from torch.autograd.function import once_differentiable

__all__ = ["SheafADMM", "SheafADMMStates"]

_BACKWARDS = ("unrolled", "implicit")


class SheafADMMStates:
    """Trajectories of one call of :class:`SheafADMM`: iterates and residuals.

    Attributes
    ----------
    primal : list of Tensor of shape (batch, n_agents, stalk_dim)
        ``x`` after each iteration.
    consensus : list of Tensor of shape (batch, n_edges, edge_dim)
        ``z`` after each iteration.
    dual : list of Tensor of shape (batch, n_edges, 2, edge_dim)
        The scaled duals ``u`` after each iteration.
    primal_residual : Tensor of shape (n_iterations, batch)
        ``||F x - z||`` over all edge ends (disagreement with the consensus).
    dual_residual : Tensor of shape (n_iterations, batch)
        ``rho ||F' (z_k - z_{k-1})||`` summed into the agents (how far the
        consensus still moves).
    disagreement : Tensor of shape (n_iterations, batch)
        ``||F_{e,0} x_i - F_{e,1} x_j||`` over all edges (the constraint).
    dual_norm : Tensor of shape (n_iterations, batch)
        ``||u||``.
    n_iter : LongTensor of shape (batch,)
        Iterations each problem ran (with ``tol``, each problem stops when it
        has converged; its iterates then stay put while the others go on).
    converged : BoolTensor of shape (batch,) or None
        Whether each problem met ``tol``; None when no ``tol`` was given.
    """

    def __init__(self):
        self.primal, self.consensus, self.dual = [], [], []
        self.primal_residual, self.disagreement, self.dual_norm = [], [], []
        self.dual_residual = []
        self.n_iter = self.converged = None

    def _finish(self, n_iter, converged):
        for name in ("primal_residual", "dual_residual", "disagreement", "dual_norm"):
            setattr(self, name, torch.stack(getattr(self, name)))
        self.n_iter, self.converged = n_iter, converged
        return self


def _check_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _check_tol(tol):
    if tol is not None and (
        isinstance(tol, bool) or not isinstance(tol, Real) or not tol >= 0
    ):
        raise ValueError(f"tol must be None or a number >= 0; got {tol!r}.")
    return None if tol is None else float(tol)


class SheafADMM(nn.Module):
    """Differentiable solver of a sheaf-constrained QP by consensus ADMM.

    For a batch of problems, each over ``n_agents`` agents with states
    ``x_i`` of size ``stalk_dim`` on a fixed graph ``edges``, the layer solves

    ``min sum_i 1/2 x_i' Q_i x_i + q_i' x_i``  subject to
    ``F_{e,0} x_i = F_{e,1} x_j`` for every edge ``e = (i, j)``,

    where the restriction maps ``F`` (``edge_dim x stalk_dim``) say which
    aspects of neighbouring states must agree (a cellular sheaf). The maps
    are learned inside the module (normalised, so that they cannot shrink
    to zero) or passed in with each call. The solution comes out as a tensor
    through which gradients reach ``Q``, ``q`` and the maps, either through
    the unrolled iterations or implicitly, from the QP's KKT system at the
    solution (``backward="implicit"``).

    Parameters
    ----------
    edges : array-like of int of shape (n_edges, 2)
        The graph: agent indices at the two ends of each edge.
    n_agents : int
        Number of agents.
    stalk_dim : int
        ``d_v``, the size of each agent's state.
    edge_dim : int
        ``d_e``, the size of each edge stalk (what neighbours must agree on).
    n_iter : int
        ADMM iterations: exactly this many without ``tol``, at most this many
        with it.
    rho : float, default=1.0
        Initial ADMM step size (learned on a log scale when ``learn_rho``).
    learn_sheaf : bool, default=True
        Learn the restriction maps; otherwise they stay at their start, the
        first ``d_e`` coordinates of each end (a constant sheaf).
    learn_rho : bool, default=True
        Learn the step size (through the unrolled iterations; the exact
        solution, hence the implicit gradient, does not depend on it).
    edge_types : array-like of int of shape (n_edges,), default=None
        Edges of one type share their restriction maps (e.g. "same row",
        "same column", "same box" in Sudoku); None gives each edge its own.
        The edges are then stored sorted by type (stably): ``self.edges``,
        consensus and duals, and maps passed in, follow that order.
    tol : float, default=None
        Stop each problem of the batch once its primal and dual residuals
        ``r = ||F x - z||`` and ``s = rho ||F' (z_k - z_{k-1})||`` are below
        ``tol * sqrt(size) + tol * scale`` (absolute and relative tolerance
        ``tol``, with the scales of Boyd et al., 2011, section 3.3.1). None
        runs ``n_iter`` iterations, as a fixed-depth unrolled network.
    backward : {"unrolled", "implicit"}, default="unrolled"
        How gradients are computed. ``"unrolled"`` backpropagates through
        every iteration: the gradient of the (possibly truncated) iteration,
        memory linear in the iterations. ``"implicit"`` runs the iterations
        without recording them and differentiates the QP's KKT system at the
        returned solution (a dense solve of size ``n_edges * edge_dim`` per
        problem): the exact gradient of the optimum when the iterations have
        converged (use it with ``tol``), constant memory; no gradient reaches
        ``rho`` or a warm start.

    Attributes
    ----------
    edges : LongTensor of shape (n_edges, 2)
        The graph, sorted by edge type when ``edge_types`` is given.
    restriction : Parameter of shape (n_types, 2, edge_dim, stalk_dim)
        The learned restriction maps of each edge type, before normalisation.
    log_rho : Parameter of shape ()
        The logarithm of the ADMM step size.
    n_iter_ : LongTensor of shape (batch,)
        Iterations each problem of the last call ran.
    converged_ : BoolTensor of shape (batch,) or None
        Whether each problem of the last call met ``tol`` (None without it).

    References
    ----------
    .. [1] J. Seely, B. Cupiał and L. Jones, "Learning Multi-Agent
       Coordination via Sheaf-ADMM", arXiv:2605.31005.
    .. [2] S. Boyd, N. Parikh, E. Chu, B. Peleato and J. Eckstein,
       "Distributed Optimization and Statistical Learning via the Alternating
       Direction Method of Multipliers", Foundations and Trends in Machine
       Learning 3(1), 2011.
    .. [3] B. Amos and J. Z. Kolter, "OptNet: Differentiable Optimization as
       a Layer in Neural Networks", ICML 2017.

    Examples
    --------
    Three agents on a path must agree on the first coordinate of their
    two-dimensional states:

    >>> import torch
    >>> from sklearn_ext.coordination import SheafADMM
    >>> layer = SheafADMM([[0, 1], [1, 2]], 3, 2, 1, n_iter=500, tol=1e-9,
    ...                   learn_sheaf=False, backward="implicit").double()
    >>> Q = torch.eye(2, dtype=torch.float64).expand(1, 3, 2, 2)
    >>> q = torch.tensor([[[-1.0, 0.0], [-2.0, 1.0], [-3.0, 2.0]]],
    ...                  dtype=torch.float64, requires_grad=True)
    >>> x = layer(Q, q)
    >>> x[0, :, 0].detach().round(decimals=6)     # the mean of 1, 2 and 3
    tensor([2., 2., 2.], dtype=torch.float64)
    >>> bool(layer.converged_.all()), int(layer.n_iter_[0]) < 500
    (True, True)
    >>> x[0, 0, 0].backward()
    >>> q.grad[0, :, 0].round(decimals=6)         # d x_00 / d q_i0 = -1/3
    tensor([-0.3333, -0.3333, -0.3333], dtype=torch.float64)
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
        *,
        tol=None,
        backward="unrolled",
    ):
        super().__init__()
        n_agents = _check_int(n_agents, "n_agents", 1)
        _check_int(stalk_dim, "stalk_dim", 1)
        _check_int(edge_dim, "edge_dim", 1)
        _check_int(n_iter, "n_iter", 1)
        if isinstance(rho, bool) or not isinstance(rho, Real) or not rho > 0:
            raise ValueError(f"rho must be a number > 0; got {rho!r}.")
        if backward not in _BACKWARDS:
            raise ValueError(f"backward must be one of {_BACKWARDS}; got {backward!r}.")
        # A copy: the buffer is overwritten when a state dict is loaded, and
        # the caller's array may be read-only (a memory-mapped fitted model).
        edges = np.asarray(edges)
        if edges.size and not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(f"edges must hold integers; got dtype {edges.dtype}.")
        if edges.size % 2:
            raise ValueError(
                f"edges must have shape (n_edges, 2); got shape {edges.shape}."
            )
        edges = edges.astype(np.int64).reshape(-1, 2)
        if edges.size and (edges.min() < 0 or edges.max() >= n_agents):
            raise ValueError(
                f"edges must join agents 0..{n_agents - 1} (n_agents={n_agents}); "
                f"got agent indices from {edges.min()} to {edges.max()}."
            )
        if edge_types is None:
            types = np.arange(len(edges))
        else:
            # Stored sorted by type (stably), the order of the per-edge
            # states in ``self.edges`` since the first release (fitted models
            # keep it).
            types = np.asarray(edge_types)
            if types.shape != (len(edges),) or (
                types.size and not np.issubdtype(types.dtype, np.integer)
            ):
                raise ValueError(
                    f"edge_types must hold one integer per edge ({len(edges)}); "
                    f"got shape {types.shape} and dtype {types.dtype}."
                )
            types = types.astype(np.int64)
            if types.size and types.min() < 0:
                raise ValueError("edge_types must be integers >= 0.")
            order = np.argsort(types, kind="stable")
            edges, types = edges[order], types[order]
        self.register_buffer("edges", torch.tensor(edges))
        self.register_buffer("edge_types", torch.tensor(types))
        n_types = int(types.max()) + 1 if len(types) else 0
        self.n_agents = int(n_agents)
        self.stalk_dim = int(stalk_dim)
        self.edge_dim = int(edge_dim)
        self.n_iter = int(n_iter)
        self.tol = _check_tol(tol)
        self.backward = backward
        self.n_iter_ = self.converged_ = None
        start = torch.eye(edge_dim, stalk_dim).expand(n_types, 2, -1, -1).clone()
        self.restriction = nn.Parameter(start, requires_grad=learn_sheaf)
        self.log_rho = nn.Parameter(
            torch.tensor(math.log(rho)), requires_grad=learn_rho
        )

    def extra_repr(self):
        """Return the sizes and stopping rule that ``print(layer)`` shows.

        Returns
        -------
        text : str
            One line of ``name=value`` pairs.
        """
        return (
            f"n_agents={self.n_agents}, n_edges={len(self.edges)}, "
            f"stalk_dim={self.stalk_dim}, edge_dim={self.edge_dim}, "
            f"n_iter={self.n_iter}, tol={self.tol}, backward={self.backward!r}"
        )

    def init_parameters(self, generator):
        """Start from the constant sheaf, perturbed when it is learned.

        Parameters
        ----------
        generator : torch.Generator
            Source of the perturbation (``0.1`` times standard normal noise).
        """
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

        Returns
        -------
        maps : Tensor of shape (n_types, 2, edge_dim, stalk_dim)
            The maps of both ends of each edge type.
        """
        F = self.restriction
        norm = F.flatten(2).norm(dim=2).clamp_min(1e-8)[..., None, None]
        return F * (math.sqrt(self.edge_dim) / norm)

    def maps(self):
        """Restriction maps of each edge (the learned ones, normalised).

        Returns
        -------
        maps : Tensor of shape (n_edges, 2, edge_dim, stalk_dim)
            ``maps[e, s]`` restricts the state of the agent at end ``s`` of
            edge ``e``.
        """
        return self.type_maps()[self.edge_types]

    def _restrict(self, F, x_ends, adjoint=False):
        """Apply each edge end's map (or its transpose) to (batch, E, 2, d)."""
        if F.dim() == 5:  # one set of maps per problem
            pattern = "besdv,besd->besv" if adjoint else "besdv,besv->besd"
        else:
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

    def forward(self, Q, q, return_states=False, *, maps=None, max_iter=None, tol=None):
        """Solve the sheaf-constrained QP of each problem of a batch.

        Parameters
        ----------
        Q : Tensor of shape (batch, n_agents, stalk_dim, stalk_dim)
            Symmetric positive definite per-agent curvatures; a leading
            dimension of 1 shares them across the batch.
        q : Tensor of shape (batch, n_agents, stalk_dim)
            Linear terms.
        return_states : bool, default=False
            Also return the iterates and residuals of every iteration.
        maps : Tensor of shape (n_edges, 2, edge_dim, stalk_dim) or \
(batch, n_edges, 2, edge_dim, stalk_dim), default=None
            Restriction maps to use as given (one set for the batch, or one
            per problem) instead of the module's learned ones, in the order
            of ``self.edges``.
        max_iter : int, default=None
            Most iterations of this call (default ``n_iter``).
        tol : float, default=None
            Tolerance of this call (default: the module's ``tol``).

        Returns
        -------
        x : Tensor of shape (batch, n_agents, stalk_dim)
            The primal solution.
        states : SheafADMMStates
            Only with ``return_states=True``.
        """
        x, _, _, states = self.iterate(
            Q, q, return_states=return_states, maps=maps, max_iter=max_iter, tol=tol
        )
        return (x, states) if return_states else x

    def iterate(
        self,
        Q,
        q,
        z=None,
        u=None,
        return_states=False,
        *,
        maps=None,
        max_iter=None,
        tol=None,
    ):
        """ADMM from a given consensus and dual (zeros by default).

        Starting from the ``(z, u)`` where an earlier problem on the same
        graph stopped warm-starts the iterations (the objective may have
        changed in between, as between the rounds of a puzzle solver); from
        a converged ``(z, u)`` of the same problem, one iteration is enough.

        Parameters
        ----------
        Q : Tensor of shape (batch, n_agents, stalk_dim, stalk_dim)
            Symmetric positive definite per-agent curvatures; a leading
            dimension of 1 shares them across the batch.
        q : Tensor of shape (batch, n_agents, stalk_dim)
            Linear terms.
        z : Tensor of shape (batch, n_edges, edge_dim), default=None
            Consensus to start from; None starts from zeros (give both ``z``
            and ``u`` or neither).
        u : Tensor of shape (batch, n_edges, 2, edge_dim), default=None
            Scaled duals to start from.
        return_states : bool, default=False
            Also return the iterates and residuals of every iteration.
        maps : Tensor, default=None
            Restriction maps to use instead of the learned ones (see
            :meth:`forward`).
        max_iter : int, default=None
            Most iterations of this call (default ``n_iter``).
        tol : float, default=None
            Tolerance of this call (default: the module's ``tol``).

        Returns
        -------
        x : Tensor of shape (batch, n_agents, stalk_dim)
            The last primal iterate.
        z : Tensor of shape (batch, n_edges, edge_dim)
            The last consensus.
        u : Tensor of shape (batch, n_edges, 2, edge_dim)
            The last scaled duals.
        states : SheafADMMStates or None
            The trajectories, with ``return_states=True``.
        """
        max_iter = self.n_iter if max_iter is None else max_iter
        max_iter = _check_int(max_iter, "max_iter", 1)
        tol = self.tol if tol is None else _check_tol(tol)
        F = self.maps() if maps is None else maps
        self._check_problem(Q, q, z, u, F, given_maps=maps is not None)
        if self.backward == "implicit":
            with torch.no_grad():
                x, z, u, states, active = self._admm(
                    Q, q, z, u, F, max_iter, tol, return_states
                )
            x = _ImplicitQP.apply(x, Q, q, F, self.edges)
        else:
            x, z, u, states, active = self._admm(
                Q, q, z, u, F, max_iter, tol, return_states
            )
        if active is not None and bool(active.any()):
            warnings.warn(
                f"SheafADMM: {int(active.sum())} of {len(active)} problems did not "
                f"reach tol={tol} in {max_iter} iterations; raise max_iter (or "
                "n_iter), or tune rho.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return x, z, u, states

    def _check_problem(self, Q, q, z, u, F, given_maps):
        N, d, d_e, E = self.n_agents, self.stalk_dim, self.edge_dim, len(self.edges)
        for name, value in (("Q", Q), ("q", q), ("z", z), ("u", u), ("maps", F)):
            if value is not None and not isinstance(value, torch.Tensor):
                raise TypeError(
                    f"{name} must be a torch.Tensor; got {type(value).__name__}."
                )
        if q.dim() != 3 or tuple(q.shape[1:]) != (N, d):
            raise ValueError(
                f"q must have shape (batch, n_agents={N}, stalk_dim={d}); "
                f"got {tuple(q.shape)}."
            )
        batch = q.shape[0]
        if (
            Q.dim() != 4
            or tuple(Q.shape[1:]) != (N, d, d)
            or Q.shape[0]
            not in (
                1,
                batch,
            )
        ):
            raise ValueError(
                f"Q must have shape (batch={batch} or 1, n_agents={N}, "
                f"stalk_dim={d}, stalk_dim={d}); got {tuple(Q.shape)}."
            )
        if given_maps and (
            tuple(F.shape[-4:]) != (E, 2, d_e, d)
            or F.dim() not in (4, 5)
            or (F.dim() == 5 and F.shape[0] != batch)
        ):
            raise ValueError(
                f"maps must have shape (n_edges={E}, 2, edge_dim={d_e}, "
                f"stalk_dim={d}) or (batch={batch}, {E}, 2, {d_e}, {d}); "
                f"got {tuple(F.shape)}."
            )
        if (z is None) != (u is None):
            raise ValueError("Give both z and u to warm-start, or neither.")
        if z is not None and (
            tuple(z.shape) != (batch, E, d_e) or tuple(u.shape) != (batch, E, 2, d_e)
        ):
            raise ValueError(
                f"z must have shape (batch={batch}, n_edges={E}, edge_dim={d_e}) "
                f"and u ({batch}, {E}, 2, {d_e}); got {tuple(z.shape)} and "
                f"{tuple(u.shape)}."
            )
        dtype = self.log_rho.dtype
        for name, value in (("Q", Q), ("q", q), ("z", z), ("u", u), ("maps", F)):
            if value is None:
                continue
            if value.dtype != dtype:
                raise TypeError(
                    f"{name} has dtype {value.dtype} but the layer computes in "
                    f"{dtype}; convert one of them (e.g. layer.double())."
                )
            if value.device != self.log_rho.device:
                raise ValueError(
                    f"{name} is on {value.device} but the layer is on "
                    f"{self.log_rho.device}."
                )

    def _admm(self, Q, q, z, u, F, max_iter, tol, return_states):
        """The iterations; ``active`` marks problems not converged (or None)."""
        batch = q.shape[0]
        rho = self.log_rho.exp()
        FtF = F.transpose(-1, -2) @ F  # (E, 2, d_v, d_v), or per problem
        if F.dim() == 4:
            S = FtF.new_zeros(self.n_agents, self.stalk_dim, self.stalk_dim)
            S = S.index_add(0, self.edges.reshape(-1), FtF.reshape(-1, *FtF.shape[2:]))
        else:
            S = FtF.new_zeros(batch, self.n_agents, self.stalk_dim, self.stalk_dim)
            S = S.index_add(
                1, self.edges.reshape(-1), FtF.reshape(batch, -1, *FtF.shape[3:])
            )
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
        track = tol is not None
        x = active = None
        count = torch.zeros(batch, dtype=torch.long, device=q.device)
        if track:
            active = torch.ones(batch, dtype=torch.bool, device=q.device)
            x = q.new_zeros(batch, self.n_agents, self.stalk_dim)
            Fx = q.new_zeros(batch, n_edges, 2, self.edge_dim)
            s_prev = q.new_zeros(batch)
            all_active = True
        for _ in range(max_iter):
            pull = self._restrict(F, z[:, :, None] - u, adjoint=True)
            rhs = -q + rho * self._scatter(pull, batch)
            x_new = (inverse * rhs[..., None, :]).sum(-1)
            x_ends = x_new.index_select(1, ends).reshape(
                batch, n_edges, 2, x_new.shape[-1]
            )
            Fx_new = self._restrict(F, x_ends)
            z_new = (Fx_new + u).mean(dim=2)
            u_new = u + Fx_new - z_new[:, :, None]
            if track or states is not None:
                with torch.no_grad():
                    s = self._dual_residual(F, rho, z_new - z, batch)
            if track:
                keep = active
                with torch.no_grad():
                    done = self._converged(F, rho, Fx_new, z_new, u_new, s, tol, batch)
                if all_active:  # nothing frozen yet: no masking needed
                    x, z, u, Fx = x_new, z_new, u_new, Fx_new
                else:
                    s = torch.where(keep, s, s_prev)
                    x = torch.where(keep[:, None, None], x_new, x)
                    z = torch.where(keep[:, None, None], z_new, z)
                    u = torch.where(keep[:, None, None, None], u_new, u)
                    Fx = torch.where(keep[:, None, None, None], Fx_new, Fx)
                s_prev = s
                count += keep
                active = keep & ~done
            else:
                x, z, u, Fx = x_new, z_new, u_new, Fx_new
                count += 1
            if states is not None:
                states.primal.append(x)
                states.consensus.append(z)
                states.dual.append(u)
                states.primal_residual.append(
                    (Fx - z[:, :, None]).flatten(1).norm(dim=1)
                )
                states.dual_residual.append(s)
                states.disagreement.append(
                    (Fx[:, :, 0] - Fx[:, :, 1]).flatten(1).norm(dim=1)
                )
                states.dual_norm.append(u.flatten(1).norm(dim=1))
            if track:
                n_active = int(active.sum())
                if n_active == 0:
                    break
                all_active = n_active == batch
        converged = None if active is None else ~active
        self.n_iter_, self.converged_ = count, converged
        if states is not None:
            states._finish(count, converged)
        return x, z, u, states, active

    def _dual_residual(self, F, rho, dz, batch):
        """``rho ||F' (z_k - z_{k-1})||`` summed into the agents, per problem."""
        pull = self._restrict(F, dz[:, :, None].expand(-1, -1, 2, -1), adjoint=True)
        return rho * self._scatter(pull, batch).flatten(1).norm(dim=1)

    def _converged(self, F, rho, Fx, z, u, s, tol, batch):
        """Boyd et al.'s stopping rule with ``eps_abs = eps_rel = tol``."""
        r = (Fx - z[:, :, None]).flatten(1).norm(dim=1)
        n_ends = Fx[0].numel()
        scale_pri = torch.maximum(
            Fx.flatten(1).norm(dim=1), math.sqrt(2) * z.flatten(1).norm(dim=1)
        )
        scale_dual = rho * self._scatter(
            self._restrict(F, u, adjoint=True), batch
        ).flatten(1).norm(dim=1)
        n_primal = self.n_agents * self.stalk_dim
        return (r <= tol * (math.sqrt(n_ends) + scale_pri)) & (
            s <= tol * (math.sqrt(n_primal) + scale_dual)
        )


def _constraint_matrix(F, edges, n_agents, batch):
    """Dense ``C`` (batch, E d_e, N d_v): ``C x = F_{e,0} x_i - F_{e,1} x_j``."""
    F = F.expand(batch, *F.shape[-4:]) if F.dim() == 4 else F
    E, d_e, d_v = F.shape[1], F.shape[3], F.shape[4]
    C = F.new_zeros(batch, E, n_agents, d_e, d_v)
    rows = torch.arange(E, device=F.device)
    C[:, rows, edges[:, 0]] += F[:, :, 0]
    C[:, rows, edges[:, 1]] -= F[:, :, 1]
    return C.permute(0, 1, 3, 2, 4).reshape(batch, E * d_e, n_agents * d_v)


class _ImplicitQP(torch.autograd.Function):
    """Identity on the ADMM solution, whose backward is the QP's implicit gradient.

    At the optimum of ``min 1/2 x'Hx + q'x s.t. C x = 0`` (``H`` block
    diagonal in the ``Q_i``), the KKT conditions ``H x + q + C' lam = 0``,
    ``C x = 0`` define ``x`` and ``lam`` as functions of ``(Q, q, C)``.
    Differentiating them (OptNet's derivation for equality constraints), the
    gradient of a loss with ``dL/dx = g`` is ``dL/dq = d_x``,
    ``dL/dQ_i = d_x_i x_i'`` and ``dL/dC = lam d_x' + d_lam x'``, where
    ``H d_x + C' d_lam = -g`` and ``C d_x = 0``. Both systems are solved
    through the Schur complement ``M = C H^{-1} C'`` (a pseudo-inverse:
    constraints may be redundant, e.g. around a cycle of a constant sheaf,
    which leaves ``x`` and ``d_x`` unique; ``lam`` and ``d_lam`` are then
    the minimum-norm multipliers, and the gradient with respect to the maps
    is that of the minimum-norm choice).
    """

    @staticmethod
    def forward(ctx, x, Q, q, F, edges):
        ctx.save_for_backward(x, Q, q, F, edges)
        return x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, Q, q, F, edges = ctx.saved_tensors
        _, need_Q, need_q, need_F, _ = ctx.needs_input_grad
        batch, N, d_v = x.shape
        Qinv = torch.linalg.inv(Q).expand(batch, -1, -1, -1)

        def hinv(v):  # H^{-1} v for v of shape (batch, N, d_v)
            return (Qinv @ v[..., None])[..., 0]

        if len(edges) == 0:
            d_x = -hinv(g)
        else:
            C = _constraint_matrix(F, edges, N, batch)
            CH = (C.reshape(batch, -1, N, d_v)[..., None, :] @ Qinv[:, None]).reshape(
                C.shape
            )  # C H^{-1}
            M = CH @ C.transpose(1, 2)
            M_pinv = torch.linalg.pinv((M + M.transpose(1, 2)) / 2, hermitian=True)

            def multipliers(v):  # -M^+ C H^{-1} v, v flat (batch, N * d_v)
                return -(M_pinv @ (CH @ v[..., None]))[..., 0]

            d_lam = multipliers(g.reshape(batch, -1))
            CtL = (C.transpose(1, 2) @ d_lam[..., None])[..., 0]
            d_x = -hinv(g + CtL.reshape(batch, N, d_v))
        grad_Q = grad_q = grad_F = None
        if need_q:
            grad_q = d_x
        if need_Q:
            grad_Q = d_x[..., :, None] * x[..., None, :]
            if Q.shape[0] == 1 and batch > 1:
                grad_Q = grad_Q.sum(0, keepdim=True)
        if need_F:
            if len(edges) == 0:
                grad_F = torch.zeros_like(F)
            else:
                # lam from the stationarity at the returned x (exact at the
                # optimum): C' lam = -(H x + q), in the least-squares sense of
                # the Schur complement.
                Hx = (Q @ x[..., None])[..., 0]
                lam = multipliers((Hx + q).reshape(batch, -1))
                E, d_e = F.shape[-4], F.shape[-2]
                dC = lam[:, :, None] * d_x.reshape(batch, 1, -1) + d_lam[
                    :, :, None
                ] * x.reshape(batch, 1, -1)
                dC = dC.reshape(batch, E, d_e, N, d_v).permute(0, 1, 3, 2, 4)
                rows = torch.arange(E, device=F.device)
                grad_F = torch.stack(
                    [dC[:, rows, edges[:, 0]], -dC[:, rows, edges[:, 1]]], dim=2
                )
                if F.dim() == 4:
                    grad_F = grad_F.sum(0)
        return None, grad_Q, grad_q, grad_F, None
