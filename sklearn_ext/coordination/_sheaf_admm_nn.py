"""Networks of agents coordinated by sheaf-ADMM (image patches, puzzle cells).

The differentiable solver itself is :class:`SheafADMM` in ``_sheaf_layer``.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn

from sklearn_ext.coordination._sheaf_layer import SheafADMM, SheafADMMStates

__all__ = ["CellAgentsNet", "PatchAgentsNet", "SheafADMM", "SheafADMMStates"]


class PatchAgentsNet(nn.Module):
    """Image classifier: one agent per patch, coordinated by sheaf-ADMM.

    A shared encoder maps each patch (and a learned embedding of its
    position) to the agent's quadratic objective: a linear term ``q_i`` and a
    diagonal curvature ``Q_i = diag(softplus(s_i) + 0.1)`` (the agent's
    confidence: at the constrained optimum, what neighbours must agree on is
    a curvature-weighted average of their preferences). After ``n_iter`` ADMM
    steps a shared linear layer reads class scores from each agent's state.

    ``readout`` says how the agents' scores become the decision:
    ``"center"``, the central agent's (index ``n_agents // 2``), which knows
    the rest of the image only from what the coordination brought it;
    ``"agents"``, the mean of every agent's log-probabilities; ``"mean"``,
    the mean of the scores. The estimator trains every agent on the label
    with the first two (``agent_logits``), the pooled scores with the last.
    """

    def __init__(
        self,
        patch_dim,
        n_agents,
        edges,
        stalk_dim,
        edge_dim,
        hidden,
        n_classes,
        n_iter,
        rho,
        learn_sheaf,
        readout="mean",
    ):
        super().__init__()
        self.patch_dim, self.stalk_dim = int(patch_dim), int(stalk_dim)
        self.readout_mode = readout
        self.encode = nn.Linear(patch_dim, hidden)
        self.position = nn.Embedding(n_agents, hidden)
        self.head = nn.Linear(hidden, 2 * stalk_dim)
        self.admm = SheafADMM(
            edges, n_agents, stalk_dim, edge_dim, n_iter, rho, learn_sheaf
        )
        self.readout = nn.Linear(stalk_dim, n_classes)

    def objectives(self, patches):
        """``(Q, q)`` of each agent from patches (batch, n_agents, patch_dim)."""
        h = torch.relu(self.encode(patches) + self.position.weight)
        q, s = self.head(h).split(self.stalk_dim, dim=-1)
        diag = nn.functional.softplus(s) + 0.1
        return torch.diag_embed(diag), q

    def agent_logits(self, patches, return_states=False):
        """Class scores of every agent: (batch, n_agents, n_classes)."""
        Q, q = self.objectives(patches)
        out = self.admm(Q, q, return_states=return_states)
        x, states = out if return_states else (out, None)
        logits = self.readout(x)
        return (logits, states) if return_states else logits

    def pool(self, agent_logits):
        """The decision from the agents' scores: (batch, n_classes)."""
        mode = getattr(self, "readout_mode", "mean")
        if mode == "agents":
            return torch.log_softmax(agent_logits, dim=-1).mean(dim=1)
        if mode == "center":
            return agent_logits[:, agent_logits.shape[1] // 2]
        return agent_logits.mean(dim=1)

    def forward(self, patches, return_states=False):
        out = self.agent_logits(patches, return_states=return_states)
        logits, states = out if return_states else (out, None)
        logits = self.pool(logits)
        return (logits, states) if return_states else logits


class CellAgentsNet(nn.Module):
    """Puzzle solver: one agent per cell, several rounds of sheaf-ADMM.

    Serves Sudoku (a cell's symbol is its given digit, 0 for a blank; the
    graph joins cells of a row, column or box) and mazes (wall, open, start
    or goal; the graph joins 4-neighbours). Each round encodes a cell's
    symbol and its state from the previous round into a quadratic
    objective (no position embedding: the agents are interchangeable and
    the graph, with its typed restriction maps, carries the geometry, so
    that the solver learns the rule rather than the training grids);
    ``n_iter`` ADMM steps over the constraint graph
    (one restriction-map pair per edge type) give the new states, read out
    by a shared linear layer as per-cell scores. With ``warm_start_admm``
    each round's ADMM starts from the consensus and dual variables where the
    previous round's stopped, so that coordination accumulates across rounds
    (restarting from zero forgets it, and the first iteration of a round is
    then purely local). Returns the scores of every round (deep supervision,
    as in recurrent relational networks).
    """

    def __init__(
        self,
        n_symbols,
        n_cells,
        n_outputs,
        edges,
        edge_types,
        stalk_dim,
        edge_dim,
        hidden,
        n_rounds,
        n_iter,
        rho,
        learn_sheaf=True,
        warm_start_admm=True,
    ):
        super().__init__()
        self.stalk_dim, self.n_rounds = int(stalk_dim), int(n_rounds)
        self.warm_start_admm = bool(warm_start_admm)
        self.given = nn.Embedding(n_symbols, hidden)
        self.carry = nn.Linear(stalk_dim, hidden)
        self.mix = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 2 * stalk_dim)
        self.admm = SheafADMM(
            edges,
            n_cells,
            stalk_dim,
            edge_dim,
            n_iter,
            rho,
            learn_sheaf=learn_sheaf,
            edge_types=edge_types,
        )
        self.readout = nn.Linear(stalk_dim, n_outputs)

    def forward(self, cells, return_states=False):
        """Per-cell scores after each round.

        Parameters
        ----------
        cells : LongTensor of shape (batch, n_cells)
            Symbol of each cell.
        return_states : bool, default=False
            Also return the ADMM states of every round.

        Returns
        -------
        scores : list of Tensor (batch, n_cells, n_outputs)
        states : list of SheafADMMStates
            Only with ``return_states=True``.
        """
        base = self.given(cells)
        x = base.new_zeros(*cells.shape, self.stalk_dim)
        z = u = None
        scores, states = [], []
        for _ in range(self.n_rounds):
            h = torch.relu(self.mix(torch.relu(base + self.carry(x))))
            q, s = self.head(h).split(self.stalk_dim, dim=-1)
            Q = torch.diag_embed(nn.functional.softplus(s) + 0.1)
            x, z_new, u_new, st = self.admm.iterate(
                Q, q, z, u, return_states=return_states
            )
            if self.warm_start_admm:
                z, u = z_new, u_new
            states.append(st)
            scores.append(self.readout(x))
        return (scores, states) if return_states else scores
