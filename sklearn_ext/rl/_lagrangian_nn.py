"""The actor and critics of LagrangianActorCritic."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn

from sklearn_ext.cluster._correlated_imvc_nn import _mlp

__all__ = ["ActorCritic"]


class ActorCritic(nn.Module):
    """A policy network and a critic network with one value head per signal.

    Parameters
    ----------
    n_features : int
        Width of the encoded observation.
    n_actions : int
        Discrete actions, or dimensions of a continuous action.
    continuous : bool
        Gaussian policy (state-independent log standard deviation) or
        categorical.
    n_heads : int
        Value heads: ``1 + n_constraints`` (dedicated) or 1 (mixed).
    hidden : int
        Width of the two hidden layers of each network.
    """

    def __init__(self, n_features, n_actions, continuous, n_heads, hidden):
        super().__init__()
        self.continuous = bool(continuous)
        self.actor = _mlp([n_features, hidden, hidden, n_actions])
        self.critic = _mlp([n_features, hidden, hidden, n_heads])
        start = -0.5 if continuous else 0.0
        self.log_std = nn.Parameter(torch.full((n_actions,), start))

    def distribution(self, obs):
        """The action distribution at each observation."""
        out = torch.tanh(self.actor(obs)) if self.continuous else self.actor(obs)
        if self.continuous:
            return torch.distributions.Normal(out, self.log_std.exp().expand_as(out))
        return torch.distributions.Categorical(logits=out)

    def log_prob(self, dist, actions):
        lp = dist.log_prob(actions)
        return lp.sum(-1) if self.continuous else lp

    def entropy(self, dist):
        ent = dist.entropy()
        return ent.sum(-1) if self.continuous else ent

    def values(self, obs):
        """Value heads, shape (n, n_heads)."""
        return self.critic(obs)
