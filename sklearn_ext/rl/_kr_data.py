"""Data of the KR quantile methods and how their joint draws are scored.

A regression whose two outputs' correlation changes sign with a feature, the
copula bandit (identical marginals, different dependence) and the energy
score. Shared by the demos, the benchmark, the example and the tests.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.stats import norm

__all__ = [
    "CopulaBanditEnv",
    "copula_bandit",
    "countermonotone_pulls",
    "energy_score",
    "kr_copula_bandit_truth",
    "sign_switch_copula",
]


def sign_switch_copula(n, random_state=0):
    """Two outputs whose correlation is +0.8 or -0.8 by the sign of ``X[:, 1]``.

    ``y1 = x0 + 0.5 z1``; ``y2 = -x0 + (1 + 0.5 x1) (rho z1 + sqrt(1 - rho^2) z2)``
    with ``rho = 0.8 sign(x1)``, ``X`` uniform on [-1, 1]^3 (``x2`` is noise).
    """
    rng = np.random.default_rng(random_state)
    X = rng.uniform(-1, 1, (n, 3))
    rho = 0.8 * np.sign(X[:, 1])
    z1, z2 = rng.normal(size=(2, n))
    y1 = X[:, 0] + 0.5 * z1
    y2 = -X[:, 0] + (1 + 0.5 * X[:, 1]) * (rho * z1 + np.sqrt(1 - rho**2) * z2)
    return X, np.column_stack([y1, y2])


def copula_bandit(n, shift=0.2, random_state=0):
    """Offline pulls of two arms with N(0, 1) marginals on both objectives.

    Arm 0 pays ``(x, x) + shift`` (comonotone), arm 1 ``(x, x')`` (independent
    copies). Returns the transition dataset and the exact CVaR_0.25 of the
    mean reward of each arm.
    """
    rng = np.random.default_rng(random_state)
    x = rng.normal(size=n)
    arms = rng.integers(0, 2, n)
    second = np.where(arms == 0, x, rng.normal(size=n))
    rewards = np.column_stack([x, second]) + np.where(arms == 0, shift, 0.0)[:, None]
    zeros = np.zeros(n, dtype=int)
    data = {
        "observations": zeros,
        "actions": arms,
        "rewards": rewards,
        "next_observations": zeros,
        "terminals": np.ones(n, dtype=bool),
    }
    tail = norm.pdf(norm.ppf(0.25)) / 0.25
    return data, np.array([shift - tail, -tail / np.sqrt(2)])


def energy_score(draws, y):
    """Mean energy score of draws (n, m, d) of observations y (n, d); lower wins."""
    fit = np.linalg.norm(draws - y[:, None], axis=-1).mean(1)
    spread = np.linalg.norm(draws[:, :, None] - draws[:, None], axis=-1).mean((1, 2))
    return float(np.mean(fit - 0.5 * spread))


def kr_copula_bandit_truth(shift=0.2, alpha=0.25):
    """Exact KR vector CVaR (equal weights) of the two arms of the online bandit.

    Arm 0 pays ``(x, x) + shift`` (comonotone): objective 2 given objective 1
    is objective 1, so the corner mean is ``shift - t`` on both, with ``t``
    the tail mean of N(0, 1) at ``alpha``. Arm 1 pays ``(x, -x)``
    (countermonotone): objective 2 given a low objective 1 is high, so the
    corner mean is ``(-t + t) / 2 = 0``. A critic of the product of the
    marginals sees ``-t`` for arm 1 and picks arm 0, as a risk-neutral one does.
    """
    tail = norm.pdf(norm.ppf(alpha)) / alpha
    return np.array([shift - tail, 0.0])


class CopulaBanditEnv:
    """The online copula bandit: one state, two arms, one pull per episode.

    Arm 0 pays ``(x, x) + shift`` (comonotone), arm 1 ``(x, -x)``
    (countermonotone), ``x ~ N(0, 1)``: equal marginals up to the shift, and
    the arm of higher KR vector CVaR is arm 1 (:func:`kr_copula_bandit_truth`).
    ``info["arm"]`` is the arm pulled.
    """

    def __init__(self, shift=0.2):
        import gymnasium as gym

        self.shift = shift
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(1)
        self.reward_space = gym.spaces.Box(-np.inf, np.inf, (2,))
        self._rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        return 0, {}

    def step(self, action):
        x = self._rng.normal()
        if int(action) == 0:
            reward = np.array([x, x]) + self.shift
        else:
            reward = np.array([x, -x])
        return 0, reward, True, False, {"arm": int(action)}


def countermonotone_pulls(n=600, shift=0.2, random_state=0):
    """Offline pulls of :class:`CopulaBanditEnv`, arms drawn uniformly.

    Returns the family's transition dict (one state, one pull an episode):
    arm 0 pays ``(x, x) + shift``, arm 1 ``(x, -x)``; the exact KR vector
    CVaR of each arm is :func:`kr_copula_bandit_truth`.
    """
    env = CopulaBanditEnv(shift)
    env.reset(seed=random_state)
    arms = np.random.default_rng(random_state).integers(0, 2, n)
    rewards = np.array([env.step(a)[1] for a in arms])
    zeros = np.zeros(n, dtype=int)
    return {
        "observations": zeros,
        "actions": arms,
        "rewards": rewards,
        "next_observations": zeros,
        "terminals": np.ones(n, dtype=bool),
    }
