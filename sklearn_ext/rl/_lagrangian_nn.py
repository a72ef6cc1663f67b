"""The actor and critics of LagrangianActorCritic."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import torch
from torch import nn

from sklearn_ext.utils._torch_nn import mlp

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
    nvec : sequence of int, default=None
        Sizes of the sub-actions of a MultiDiscrete action: the policy is a
        product of independent categoricals, one per sub-action, its logits
        padded to the largest size (the padding has probability zero).
        ``n_actions`` is then ignored.
    """

    def __init__(self, n_features, n_actions, continuous, n_heads, hidden, nvec=None):
        super().__init__()
        self.continuous = bool(continuous)
        self.factorised = nvec is not None
        if self.factorised:
            nvec = [int(n) for n in nvec]
            width = max(nvec)
            n_actions = len(nvec) * width
            mask = torch.zeros(len(nvec), width)
            for i, n in enumerate(nvec):
                mask[i, n:] = -1e9
            self.register_buffer("mask", mask)
        self.actor = mlp([n_features, hidden, hidden, n_actions])
        self.critic = mlp([n_features, hidden, hidden, n_heads])
        start = -0.5 if continuous else 0.0
        self.log_std = nn.Parameter(torch.full((n_actions,), start))

    def distribution(self, obs):
        """The action distribution at each observation."""
        out = torch.tanh(self.actor(obs)) if self.continuous else self.actor(obs)
        if self.continuous:
            return torch.distributions.Normal(out, self.log_std.exp().expand_as(out))
        if self.factorised:
            out = out.reshape(-1, *self.mask.shape) + self.mask
        return torch.distributions.Categorical(logits=out)

    def log_prob(self, dist, actions):
        lp = dist.log_prob(actions)
        return lp.sum(-1) if self.continuous or self.factorised else lp

    def entropy(self, dist):
        ent = dist.entropy()
        return ent.sum(-1) if self.continuous or self.factorised else ent

    def values(self, obs):
        """Value heads, shape (n, n_heads)."""
        return self.critic(obs)


class GroupClippedAdam(torch.optim.Adam):
    """Adam that clips the gradient of each parameter group on its own.

    Before every step the gradient of each group is rescaled to at most
    ``max_norm`` (Euclidean, over the group's parameters), so that one group's
    large gradient (a critic chasing large value targets) does not shrink the
    step of another (the actor). With a single group this is the usual global
    clip. ``scales`` records, per step, the factor the clip applied to each
    group (1 where the norm was within ``max_norm``).
    """

    def __init__(self, groups, lr, max_norm):
        super().__init__(groups, lr=lr, foreach=True)
        self.max_norm = float(max_norm)
        self.scales = []

    @torch.no_grad()
    def step(self, closure=None):
        factors = []
        for group in self.param_groups:
            norm = float(nn.utils.clip_grad_norm_(group["params"], self.max_norm))
            factors.append(min(1.0, self.max_norm / (norm + 1e-6)))
        self.scales.append(factors)
        return super().step(closure)
