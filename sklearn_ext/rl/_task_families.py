"""A task family whose distribution of per-task returns is known in closed form."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.stats import norm
from sklearn.utils import check_random_state

__all__ = ["BridgeTaskFamily"]


class BridgeTaskFamily:
    r"""Crossing a bridge with a task-specific chance of slipping off.

    A task is a bridge of ``width`` cells with a slip probability :math:`s`;
    walking from the first cell to the last takes ``width - 1`` steps, each of
    which slips off (episode return 0) with probability :math:`s`; arriving
    returns 1. Walking straight ahead, the task's expected return is

    .. math:: J(s) = (1 - s)^{w - 1}.

    Slip probabilities are drawn from a two-component Gaussian mixture
    (``weights``, ``means``, ``sd``) clipped to [0, 1], so the share of new
    tasks whose expected return reaches :math:`g \in (0, 1]` is known exactly:

    .. math:: P(J \ge g) = F_s\bigl(1 - g^{1/(w-1)}\bigr),

    with :math:`F_s` the mixture's CDF (the simple grid of Schnitzer et al.,
    2026, used there to check soundness). Returns are success/failure, so
    every per-task bound of :class:`MultiTaskGuarantee` applies.

    Parameters
    ----------
    width : int, default=4
        Cells of the bridge (at least 2).
    weights : tuple of float, default=(0.8, 0.2)
        Mixture weights of the slip probability.
    means : tuple of float, default=(0.03, 0.10)
        Mixture means.
    sd : float, default=0.01
        Standard deviation of each component.

    Examples
    --------
    >>> from sklearn_ext.rl import BridgeTaskFamily
    >>> family = BridgeTaskFamily()
    >>> returns = family.sample_returns(5, 20, random_state=0)
    >>> returns.shape
    (5, 20)
    >>> round(float(family.survival(0.8)), 3)   # tasks from the first component
    0.8
    """

    def __init__(self, width=4, weights=(0.8, 0.2), means=(0.03, 0.10), sd=0.01):
        if int(width) != width or width < 2:
            raise ValueError(f"width must be an integer >= 2; got {width!r}.")
        weights = np.asarray(weights, dtype=float)
        means = np.asarray(means, dtype=float)
        if weights.shape != means.shape or weights.ndim != 1 or weights.size == 0:
            raise ValueError("weights and means must be 1-D of the same length.")
        if (weights < 0).any() or not np.isclose(weights.sum(), 1.0):
            raise ValueError("weights must be non-negative and sum to one.")
        if not sd > 0:
            raise ValueError(f"sd must be positive; got {sd!r}.")
        self.width = int(width)
        self.weights = weights
        self.means = means
        self.sd = float(sd)

    def sample_tasks(self, n_tasks, random_state=None):
        """Draw the slip probabilities of ``n_tasks`` tasks from the mixture.

        Parameters
        ----------
        n_tasks : int
            Number of tasks.
        random_state : int, RandomState instance or None, default=None
            Source of randomness.

        Returns
        -------
        slip : ndarray of shape (n_tasks,)
            Slip probabilities in [0, 1].
        """
        rng = check_random_state(random_state)
        component = rng.choice(len(self.weights), size=n_tasks, p=self.weights)
        slip = rng.normal(self.means[component], self.sd)
        return np.clip(slip, 0.0, 1.0)

    def expected_return(self, slip):
        """Compute the success probability :math:`J(s) = (1 - s)^{w-1}`.

        Parameters
        ----------
        slip : float or array-like
            Slip probabilities.

        Returns
        -------
        J : ndarray
            Expected returns of the straight-ahead policy.
        """
        return (1.0 - np.asarray(slip, dtype=float)) ** (self.width - 1)

    def _slip_cdf(self, t):
        t = np.asarray(t, dtype=float)
        cdf = np.sum(
            self.weights[:, None]
            * norm.cdf((t.ravel() - self.means[:, None]) / self.sd),
            axis=0,
        ).reshape(t.shape)
        return np.where(t >= 1.0, 1.0, np.where(t < 0.0, 0.0, cdf))

    def survival(self, g):
        """Compute the true share of tasks with expected return at least ``g``.

        Parameters
        ----------
        g : float or array-like
            Return levels.

        Returns
        -------
        share : ndarray
            :math:`P(J \\ge g)`, exactly.
        """
        g = np.asarray(g, dtype=float)
        threshold = 1.0 - np.clip(g, 0.0, 1.0) ** (1.0 / (self.width - 1))
        p = np.where(g <= 0.0, 1.0, self._slip_cdf(threshold))
        return np.where(g > 1.0, 0.0, p)

    def sample_returns(self, n_tasks, n_episodes, random_state=None):
        """Success/failure returns of ``n_episodes`` episodes on fresh tasks.

        The same distribution as rolling the straight-ahead policy out on
        :meth:`make_task` environments, drawn directly (fast enough for
        hundreds of repetitions).

        Parameters
        ----------
        n_tasks : int
            Number of tasks (rows).
        n_episodes : int
            Episodes per task (columns).
        random_state : int, RandomState instance or None, default=None
            Source of randomness.

        Returns
        -------
        returns : ndarray of shape (n_tasks, n_episodes)
            Success (1) or failure (0) of each episode.
        """
        rng = check_random_state(random_state)
        J = self.expected_return(self.sample_tasks(n_tasks, rng))
        return (rng.random_sample((n_tasks, n_episodes)) < J[:, None]).astype(float)

    def make_task(self, rng):
        """A gymnasium environment of one task drawn with ``rng``.

        Parameters
        ----------
        rng : int, RandomState or numpy Generator
            Draws the task's slip probability.

        Returns
        -------
        env : BridgeWorld
            The environment of the drawn task.
        """
        from sklearn_ext.rl._environments import BridgeWorld

        if isinstance(rng, np.random.Generator):
            rng = np.random.RandomState(rng.integers(2**31 - 1))
        return BridgeWorld(width=self.width, slip=float(self.sample_tasks(1, rng)[0]))

    def __repr__(self):
        return (
            f"BridgeTaskFamily(width={self.width}, weights={tuple(self.weights)}, "
            f"means={tuple(self.means)}, sd={self.sd})"
        )
