"""A small power-distribution grid with separate voltage and line-rating costs.

The structure follows gym-anm's ANM6Easy (a 6-bus radial feeder with loads, a
solar and a wind generator, a storage unit and a slack bus; the reward is
minus the energy lost), computed with the linearised DistFlow equations in
numpy so that it needs no power-flow solver. gym-anm itself pins pandas below
3 and exact websocket versions, which conflict with this package's test
environment, so it is not a dependency.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.rl._base import require_gymnasium

gym = require_gymnasium("DistributionGridEnv")
spaces = gym.spaces

__all__ = ["DistributionGridEnv"]

# Radial feeder: (from bus, to bus, resistance, reactance, rating), per unit.
# Bus 0 is the substation (slack, voltage 1). Loads at 1, 3, 5; solar at 2;
# wind at 4; storage at 5.
_LINES = np.array(
    [
        (0, 1, 0.02, 0.04, 0.90),
        (1, 2, 0.06, 0.05, 0.40),
        (2, 3, 0.05, 0.04, 0.40),
        (1, 4, 0.06, 0.06, 0.35),
        (4, 5, 0.05, 0.05, 0.35),
    ]
)
_N_BUS = 6
_LOAD_BUSES = np.array([1, 3, 5])
_LOAD_PEAK = np.array([0.25, 0.20, 0.15])
_SOLAR_BUS, _WIND_BUS, _STORAGE_BUS = 2, 4, 5
_SOLAR_PEAK, _WIND_PEAK = 1.0, 0.7
_STORAGE_POWER, _STORAGE_ENERGY = 0.3, 1.0
_VOLTAGE_BAND = 0.05
# Per-step cost scales: a voltage 0.01 per unit outside its band for one step
# costs 1, as does a line loaded 0.1 per unit over its rating.
_COST_SCALE = np.array([100.0, 10.0])


def _downstream():
    """Matrix (n_lines, n_buses): 1 where the bus is fed through the line."""
    children = {int(f): [] for f in _LINES[:, 0]}
    for f, t in _LINES[:, :2].astype(int):
        children.setdefault(f, []).append(t)

    def below(bus):
        out = [bus]
        for c in children.get(bus, []):
            out += below(c)
        return out

    M = np.zeros((len(_LINES), _N_BUS))
    for i, t in enumerate(_LINES[:, 1].astype(int)):
        M[i, below(t)] = 1.0
    return M


_FEED = _downstream()


class DistributionGridEnv(gym.Env):
    """Operate a 6-bus distribution feeder: use renewables, respect two limits.

    Each step is half an hour of one day (48 steps). Loads follow a daily
    profile, the solar generator a clear-sky bell with passing clouds, the
    wind generator a random walk. The agent sets, in [-1, 1] each, (0) the
    share of the available solar power injected, (1) the share of the
    available wind power injected, (2) the reactive power of both generators
    (absorbing when negative) and (3) the storage's power (charging when
    negative).

    The reward is minus the energy lost: renewable energy curtailed, the
    network's resistive losses, the storage's conversion losses, in per-unit
    energy. Injecting every renewable kilowatt raises the voltage near the
    generators above its band and overloads the lines that carry the
    surplus. ``info["costs"]`` holds the two constraint costs of the step:
    voltage (the per-unit excess of every bus voltage outside [0.95, 1.05],
    summed, times 100) and line rating (the per-unit apparent power above
    every line's rating, summed, times 10). Absorbing reactive power
    lowers the voltage but loads the lines: the two constraints pull apart.

    Voltages and flows come from the linearised DistFlow equations of the
    radial feeder (squared voltage drops by ``2 (r P + x Q)`` along each
    line), the losses from ``r (P^2 + Q^2)``.

    Parameters
    ----------
    horizon : int, default=48
        Steps per episode.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import DistributionGridEnv
    >>> env = DistributionGridEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.ones(4))
    >>> obs.shape, info["costs"].shape
    ((9,), (2,))
    """

    metadata = {"render_modes": []}
    n_constraints = 2

    def __init__(self, horizon=48):
        if int(horizon) != horizon or horizon < 1:
            raise ValueError(f"horizon must be a positive integer; got {horizon!r}.")
        self.horizon = int(horizon)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.observation_space = spaces.Box(
            -np.inf, np.inf, shape=(9,), dtype=np.float64
        )

    def _profiles(self):
        t = np.arange(self.horizon) / self.horizon * 24.0
        rng = self.np_random
        daily = (
            0.6
            + 0.4 * np.exp(-((t - 19.0) ** 2) / 8.0)
            + 0.2 * np.exp(-((t - 8.0) ** 2) / 4.0)
        )
        loads = _LOAD_PEAK[None, :] * daily[:, None]
        loads = loads * (1 + 0.1 * rng.standard_normal(loads.shape))
        clouds = np.clip(1 - 0.5 * rng.random(self.horizon) ** 3, 0, 1)
        solar = _SOLAR_PEAK * np.clip(np.sin((t - 6.0) / 12.0 * np.pi), 0, None)
        wind = np.clip(
            0.5 + np.cumsum(0.08 * rng.standard_normal(self.horizon)), 0.05, 1.0
        )
        return loads, solar * clouds, _WIND_PEAK * wind

    def reset(self, *, seed=None, options=None):
        """Start a day: draw its load, solar and wind profiles.

        Parameters
        ----------
        seed : int, default=None
            Seeds the environment's generator.
        options : dict, default=None
            Unused.

        Returns
        -------
        observation : ndarray of shape (9,)
            Loads (3), available solar and wind power, storage charge
            (fraction), time of day (sine, cosine) and the last step's
            largest voltage deviation.
        info : dict
            ``{"costs": zeros(2)}``.
        """
        super().reset(seed=seed)
        self._loads, self._solar, self._wind = self._profiles()
        self._t, self._soc, self._dev = 0, 0.5, 0.0
        return self._obs(), {"costs": np.zeros(2)}

    def _obs(self):
        t = min(self._t, self.horizon - 1)
        angle = 2 * np.pi * t / self.horizon
        return np.array(
            [
                *self._loads[t],
                self._solar[t],
                self._wind[t],
                self._soc,
                np.sin(angle),
                np.cos(angle),
                self._dev,
            ]
        )

    def power_flow(self, injections_p, injections_q):
        """Voltages, line flows and losses for net bus injections (per unit).

        Parameters
        ----------
        injections_p, injections_q : ndarray of shape (6,)
            Net active and reactive injections (generation minus load); the
            substation's entry is ignored (it balances the rest).

        Returns
        -------
        voltage : ndarray of shape (6,)
            Voltage magnitude of each bus.
        apparent : ndarray of shape (5,)
            Apparent power through each line.
        losses : float
            Resistive losses of the lines.
        """
        P = -_FEED @ injections_p  # flow from parent to child = load downstream
        Q = -_FEED @ injections_q
        r, x = _LINES[:, 2], _LINES[:, 3]
        v2 = np.ones(_N_BUS)
        for i, (f, t) in enumerate(_LINES[:, :2].astype(int)):
            v2[t] = v2[f] - 2 * (r[i] * P[i] + x[i] * Q[i])
        voltage = np.sqrt(np.clip(v2, 0.25, None))
        return voltage, np.hypot(P, Q), float(np.sum(r * (P**2 + Q**2)))

    def step(self, action):
        """Apply the set-points for half an hour.

        Parameters
        ----------
        action : array-like of shape (4,)
            Solar share, wind share, reactive power, storage power, each in
            [-1, 1] (values outside are clipped).

        Returns
        -------
        observation : ndarray of shape (9,)
            As :meth:`reset` describes it.
        reward : float
            Minus the energy lost in the step.
        terminated : bool
            Always False.
        truncated : bool
            The day is over.
        info : dict
            ``{"costs": ndarray of shape (2,)}``: voltage and line-rating
            costs of the step.
        """
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (4,) or not np.all(np.isfinite(a)):
            raise ValueError(f"action must be 4 finite numbers; got {action!r}.")
        a = np.clip(a, -1.0, 1.0)
        t = self._t
        solar = self._solar[t] * (a[0] + 1) / 2
        wind = self._wind[t] * (a[1] + 1) / 2
        q_gen = 0.25 * a[2]
        # Storage: positive discharges; limited by the charge left.
        dt = 0.5  # hours
        storage = _STORAGE_POWER * a[3]
        storage = np.clip(
            storage,
            -(1 - self._soc) * _STORAGE_ENERGY / dt,
            self._soc * _STORAGE_ENERGY / dt,
        )
        self._soc -= storage * dt / _STORAGE_ENERGY
        p = np.zeros(_N_BUS)
        q = np.zeros(_N_BUS)
        p[_LOAD_BUSES] -= self._loads[t]
        q[_LOAD_BUSES] -= 0.3 * self._loads[t]
        p[_SOLAR_BUS] += solar
        p[_WIND_BUS] += wind
        q[[_SOLAR_BUS, _WIND_BUS]] += q_gen / 2
        p[_STORAGE_BUS] += storage
        voltage, apparent, losses = self.power_flow(p, q)
        curtailed = (self._solar[t] - solar) + (self._wind[t] - wind)
        lost = curtailed + losses + 0.05 * abs(storage)
        excess_v = np.clip(np.abs(voltage - 1) - _VOLTAGE_BAND, 0, None).sum()
        excess_s = np.clip(apparent - _LINES[:, 4], 0, None).sum()
        self._dev = float(np.max(np.abs(voltage - 1)))
        self._t += 1
        costs = _COST_SCALE * np.array([excess_v, excess_s])
        info = {"costs": costs, "voltage": voltage, "apparent_power": apparent}
        return self._obs(), -float(lost * dt), False, self._t >= self.horizon, info
