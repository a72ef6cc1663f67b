"""A three-zone building heated through a cold day: one comfort per zone.

A lumped resistance-capacitance (RC) model in numpy, stepped with explicit
Euler. Each zone's comfort is an objective of its own (the reward is a vector,
as in MO-Gymnasium) and the heating energy is the constraint's cost, the
setting of the building experiment of constrained max-min multi-objective
reinforcement learning.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import numbers

import numpy as np

from sklearn_ext.rl._base import require_gymnasium

gym = require_gymnasium("BuildingThermalEnv")
spaces = gym.spaces

__all__ = ["BuildingThermalEnv"]

# Zones 1, 2, 3 in a row (index 0, 1, 2): from the best insulated to the
# leakiest. Units: kWh/K, K/kW, kW.
_CAPACITY = (3.0, 2.5, 2.0)
_R_OUTSIDE = (8.0, 5.0, 2.5)
_R_BETWEEN = 4.0
_SOLAR_PEAK = (1.2, 0.6, 0.1)
_HEATER_POWER = (6.0, 8.0, 12.0)
_LEVELS = (0.0, 0.5, 1.0)
_INITIAL_SPREAD = 1.5  # initial temperatures: target +- this, uniformly (K)
_N_ZONES = 3
_DAY = 24.0  # hours
_ENCODINGS = ("multidiscrete", "joint")


def _conductances():
    """Matrix G (kW/K) with ``C dT/dt = -G T + T_out / R_out + gains``."""
    G = np.diag(1.0 / np.asarray(_R_OUTSIDE))
    for z in range(_N_ZONES - 1):
        g = 1.0 / _R_BETWEEN
        G[z, z] += g
        G[z + 1, z + 1] += g
        G[z, z + 1] -= g
        G[z + 1, z] -= g
    return G


_G = _conductances()
# Heat exchange between zones alone: ``-_BETWEEN @ T`` (kW).
_BETWEEN = _G - np.diag(1.0 / np.asarray(_R_OUTSIDE))
# Largest step (h) for which every zone keeps a non-negative weight on its own
# temperature in the Euler update: dt <= C_z / G_zz.
_MAX_DT = float(np.min(np.asarray(_CAPACITY) / np.diag(_G)))
_MIN_HORIZON = math.ceil(_DAY / _MAX_DT)


def _cold_day_outdoor(hour):
    """Outdoor temperature of the fixed cold day (°C).

    Parameters
    ----------
    hour : float
        Time of day in hours (periodic with period 24).

    Returns
    -------
    temperature : float
        ``-1 - 5 cos(2 pi (hour - 3) / 24)``: -6 °C at 3:00, +4 °C at 15:00.
    """
    return -1.0 - 5.0 * math.cos(2.0 * math.pi * (hour - 3.0) / _DAY)


def _solar_gains(hour):
    """Solar heat gains of the three zones (kW).

    Parameters
    ----------
    hour : float
        Time of day in hours (periodic with period 24).

    Returns
    -------
    gains : ndarray of shape (3,)
        ``peak_z sin(pi (hour - 8) / 8)`` between 8:00 and 16:00, else 0,
        with peaks (1.2, 0.6, 0.1) kW.
    """
    h = float(hour) % _DAY
    shape = math.sin(math.pi * (h - 8.0) / 8.0) if 8.0 <= h <= 16.0 else 0.0
    return np.asarray(_SOLAR_PEAK) * shape


class BuildingThermalEnv(gym.Env):
    r"""Heat three zones of a building through a cold day, one comfort each.

    Three zones in a row (1 - 2 - 3) lose heat to the outside and exchange
    it through the walls between neighbours; the sun warms them around
    noon; each zone has an electric heater that the agent sets, every step,
    to off, half or full power. The reward is a vector: the comfort of each
    zone, minus its distance to the target temperature. ``info["costs"]``
    holds the step's heating energy, the cost of an energy-budget
    constraint. Zone 3 is the leakiest and needs the most energy: holding
    every zone at the target costs more than a tight budget allows, so the
    budget decides which zone gives way. The day's weather is fixed; the
    only randomness is the initial zone temperatures.

    Parameters
    ----------
    horizon : int, default=96
        Steps of the day; the step lasts :math:`\Delta t = 24 / H` hours
        (96: 15 minutes, 48: 30 minutes). At least 8 (:math:`\Delta t \le 3`
        h), for the explicit Euler step to be stable (see Notes).
    target : float, default=21.0
        Target temperature of every zone (°C).
    action_encoding : {"multidiscrete", "joint"}, default="multidiscrete"
        ``"multidiscrete"``: the action is the three heater levels,
        ``MultiDiscrete([3, 3, 3])``. ``"joint"``: one index,
        ``Discrete(27)``, with ``index = 9 a_1 + 3 a_2 + a_3``.
    outdoor : float, default=None
        None is the cold day's outdoor temperature profile (see Notes); a
        number holds the outdoor temperature constant (°C).

    Attributes
    ----------
    action_space : MultiDiscrete or Discrete
        ``MultiDiscrete([3, 3, 3])`` or ``Discrete(27)``; level 0 is off, 1
        half power, 2 full power.
    observation_space : Box of shape (7,), float32
        :math:`(T_z - T^\star)/5` for the three zones, :math:`T_{out}/10`,
        :math:`\sin` and :math:`\cos` of the hour angle :math:`2\pi h/24`,
        and the fraction of the day elapsed :math:`t/H`.
    reward_space : Box of shape (3,), float64
        Bounds of the reward vector, :math:`(-\infty, 0]` each
        (MO-Gymnasium's convention).
    n_objectives : int
        3, one comfort per zone.
    n_constraints : int
        1, the heating energy.
    dt : float
        Step length in hours, ``24 / horizon``.
    capacity : ndarray of shape (3,)
        Heat capacities :math:`C_z` (kWh/K).
    r_outside : ndarray of shape (3,)
        Resistances to the outside :math:`R_{out,z}` (K/kW).
    r_between : float
        Resistance of the walls between zones 1-2 and 2-3, :math:`R_b`
        (K/kW).
    solar_peak : ndarray of shape (3,)
        Peak solar gains :math:`S_z` (kW).
    heater_power : ndarray of shape (3,)
        Maximum heater powers :math:`\bar P_z` (kW). These five are the
        model's constants (the table in Notes), for reference; changing
        them does not change the model.

    Notes
    -----
    **Dynamics.** Zone :math:`z`'s temperature :math:`T_z` (°C) follows

    .. math::

        C_z \frac{dT_z}{dt} = \frac{T_{out}(h) - T_z}{R_{out,z}}
            + \sum_{j \sim z} \frac{T_j - T_z}{R_b} + s_z(h) + P_z,

    where :math:`j \sim z` are the neighbours of :math:`z` (1-2 and 2-3)
    and :math:`h` the hour. Explicit Euler with :math:`\Delta t = 24/H`
    hours, the forcing taken at the start of step :math:`t`,
    :math:`h_t = t \Delta t`:

    .. math::

        T_z^{t+1} = T_z^t + \frac{\Delta t}{C_z}\Big(
            \frac{T_{out}(h_t) - T_z^t}{R_{out,z}}
            + \sum_{j \sim z} \frac{T_j^t - T_z^t}{R_b}
            + s_z(h_t) + P_z^t\Big).

    The weight of :math:`T_z^t` in its own update,
    :math:`1 - \frac{\Delta t}{C_z}(1/R_{out,z} + \sum_{j \sim z} 1/R_b)`,
    is non-negative for :math:`\Delta t \le 3.08` h, hence ``horizon >= 8``:
    the update is then a non-negative averaging, without oscillation, and
    with no heating and a constant outdoor temperature the largest
    :math:`|T_z - T_{out}|` shrinks at every step.

    **Weather.** A fixed cold day, its minimum at 3:00 and maximum at 15:00,

    .. math::

        T_{out}(h) = -1 - 5 \cos\Big(\frac{2\pi (h - 3)}{24}\Big)
            \in [-6, 4] \text{ °C},

    and clear-sky solar gains, a half sine from 8:00 to 16:00,

    .. math::

        s_z(h) = S_z \sin\Big(\frac{\pi (h - 8)}{8}\Big)
            \text{ for } 8 \le h \le 16, \quad 0 \text{ otherwise}.

    **Actions.** Heater level :math:`a_z \in \{0, 1, 2\}` gives the power
    :math:`P_z = \ell_{a_z} \bar P_z` with :math:`\ell = (0, 0.5, 1)`.

    **Reward** (vector, degree-hours): the comfort of each zone at the end
    of the step,

    .. math::

        r_z^t = -|T_z^{t+1} - T^\star| \, \Delta t \le 0,

    so a day's return is minus the zone's degree-hours away from the target.

    **Cost** (kWh): the step's heating energy,
    ``info["costs"] = [sum_z P_z dt]``, shape (1,). The environment does
    not enforce a budget; a constrained agent bounds the day's total.

    **Initial state.** Midnight, every :math:`T_z` drawn uniformly in
    :math:`T^\star \pm 1.5` °C with the seeded generator (or given with
    ``reset(options={"temperatures": ...})``). The episode is truncated
    (never terminated) after ``horizon`` steps.

    ========================  ====================  ===========  ======
    Parameter                 Zone 1                Zone 2       Zone 3
    ========================  ====================  ===========  ======
    :math:`C_z` (kWh/K)       3.0                   2.5          2.0
    :math:`R_{out,z}` (K/kW)  8                     5            2.5
    :math:`R_b` (K/kW)        4 (1-2)               4 (2-3)
    :math:`S_z` (kW)          1.2                   0.6          0.1
    :math:`\bar P_z` (kW)     6                     8            12
    ========================  ====================  ===========  ======

    At the coldest hour (-6 °C) with every zone at 21 °C the zones lose
    3.4, 5.4 and 10.8 kW to the outside: each heater at full power holds its
    zone (zone 3 with a 1.2 kW margin), none at half power. With 15-minute
    steps the three-level :meth:`thermostat` keeps every zone within 1 K of
    the target after the first two hours; with half-hour steps
    (``horizon=48``) zone 3 swings about 1.5 K below it at night.

    References
    ----------
    .. [1] Park et al., "Constrained Multi-Objective Reinforcement Learning
       with Max-Min Criterion", ICML 2026 (building thermal control: one
       comfort objective per zone, an energy budget as the constraint).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import BuildingThermalEnv
    >>> env = BuildingThermalEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.action_space
    ((7,), MultiDiscrete([3 3 3]))
    >>> obs, reward, terminated, truncated, info = env.step(env.thermostat(obs))
    >>> reward.shape, info["costs"].shape, bool(np.all(reward <= 0))
    ((3,), (1,), True)
    """

    metadata = {"render_modes": []}
    n_objectives = _N_ZONES
    n_constraints = 1

    def __init__(
        self, horizon=96, target=21.0, action_encoding="multidiscrete", outdoor=None
    ):
        if (
            isinstance(horizon, bool)
            or not isinstance(horizon, numbers.Integral)
            or horizon < _MIN_HORIZON
        ):
            raise ValueError(
                f"horizon must be an integer >= {_MIN_HORIZON} (a step of at most "
                f"{_DAY / _MIN_HORIZON:g} h keeps the explicit Euler step "
                f"stable); got {horizon!r}."
            )
        if not isinstance(target, numbers.Real) or not np.isfinite(target):
            raise ValueError(f"target must be a finite number (°C); got {target!r}.")
        if action_encoding not in _ENCODINGS:
            raise ValueError(
                f"action_encoding must be 'multidiscrete' or 'joint'; got "
                f"{action_encoding!r}."
            )
        if outdoor is not None and (
            not isinstance(outdoor, numbers.Real) or not np.isfinite(outdoor)
        ):
            raise ValueError(
                f"outdoor must be None (the cold day) or a finite number (°C); got "
                f"{outdoor!r}."
            )
        self.horizon = int(horizon)
        self.target = float(target)
        self.action_encoding = action_encoding
        self.outdoor = None if outdoor is None else float(outdoor)
        self.dt = _DAY / self.horizon
        self.capacity = np.array(_CAPACITY)
        self.r_outside = np.array(_R_OUTSIDE)
        self.r_between = _R_BETWEEN
        self.solar_peak = np.array(_SOLAR_PEAK)
        self.heater_power = np.array(_HEATER_POWER)
        if action_encoding == "joint":
            self.action_space = spaces.Discrete(len(_LEVELS) ** _N_ZONES)
        else:
            self.action_space = spaces.MultiDiscrete([len(_LEVELS)] * _N_ZONES)
        inf = np.inf
        self.observation_space = spaces.Box(
            low=np.array([-inf, -inf, -inf, -inf, -1.0, -1.0, 0.0], np.float32),
            high=np.array([inf, inf, inf, inf, 1.0, 1.0, 1.0], np.float32),
            dtype=np.float32,
        )
        self.reward_space = spaces.Box(
            low=-np.inf, high=0.0, shape=(_N_ZONES,), dtype=np.float64
        )
        self._t = None

    def _outdoor(self, hour):
        if self.outdoor is not None:
            return self.outdoor
        return _cold_day_outdoor(hour)

    def _obs(self):
        hour = self._t * self.dt
        angle = 2.0 * math.pi * hour / _DAY
        obs = np.empty(7, dtype=np.float32)
        obs[:_N_ZONES] = (self._T - self.target) / 5.0
        obs[3:] = (
            self._outdoor(hour) / 10.0,
            math.sin(angle),
            math.cos(angle),
            self._t / self.horizon,
        )
        return obs

    def _info(self, costs, outdoor):
        return {
            "costs": np.array([costs]),
            "temperatures": self._T.copy(),
            "outdoor": outdoor,
        }

    def reset(self, *, seed=None, options=None):
        """Start the day at midnight with fresh zone temperatures.

        Parameters
        ----------
        seed : int, default=None
            Seeds the environment's generator (gymnasium's convention).
        options : dict, default=None
            ``{"temperatures": array-like of shape (3,)}`` sets the initial
            zone temperatures (°C) instead of drawing them uniformly in
            ``target +- 1.5``.

        Returns
        -------
        observation : ndarray of shape (7,), float32
            As ``observation_space`` describes it.
        info : dict
            ``{"costs": zeros(1), "temperatures": ndarray of shape (3,),
            "outdoor": float}``.
        """
        super().reset(seed=seed)
        options = options or {}
        if "temperatures" in options:
            T = np.asarray(options["temperatures"], dtype=np.float64)
            if T.shape != (_N_ZONES,) or not np.all(np.isfinite(T)):
                raise ValueError(
                    "options['temperatures'] must be 3 finite temperatures (°C); "
                    f"got {options['temperatures']!r}."
                )
            self._T = T.copy()
        else:
            self._T = self.np_random.uniform(
                self.target - _INITIAL_SPREAD,
                self.target + _INITIAL_SPREAD,
                size=_N_ZONES,
            )
        self._t = 0
        return self._obs(), self._info(0.0, self._outdoor(0.0))

    def _levels(self, action):
        """Heater levels (3 ints in 0..2) of an action, or ValueError."""
        a = np.asarray(action)
        if self.action_encoding == "joint":
            ok = a.shape == () and np.issubdtype(a.dtype, np.integer)
            if not ok or not 0 <= int(a) < self.action_space.n:
                raise ValueError(
                    "action must be an integer in 0..26 (9 a1 + 3 a2 + a3, each "
                    f"heater level in 0..2); got {action!r}."
                )
            i = int(a)
            return np.array([i // 9, (i // 3) % 3, i % 3])
        ok = a.shape == (_N_ZONES,) and np.issubdtype(a.dtype, np.integer)
        if not ok or not 0 <= a.min() <= a.max() < len(_LEVELS):
            raise ValueError(
                "action must be 3 integer heater levels in 0..2 (off, half, full); "
                f"got {action!r}."
            )
        return a.astype(int)

    def step(self, action):
        """Run the heaters at the chosen levels for one step.

        Parameters
        ----------
        action : array-like of shape (3,) or int
            Heater levels (0 off, 1 half, 2 full) of zones 1, 2, 3; with
            ``action_encoding="joint"`` one integer ``9 a1 + 3 a2 + a3``.

        Returns
        -------
        observation : ndarray of shape (7,), float32
            As ``observation_space`` describes it, at the end of the step.
        reward : ndarray of shape (3,), float64
            Comfort of each zone, ``-|T_z - target| * dt`` (degree-hours) at
            the end of the step.
        terminated : bool
            Always False.
        truncated : bool
            The day is over (``horizon`` steps).
        info : dict
            ``{"costs": ndarray of shape (1,)}`` (heating energy of the step,
            kWh), ``"temperatures"`` (zone temperatures at the end of the
            step, °C) and ``"outdoor"`` (outdoor temperature during the
            step, °C).
        """
        if self._t is None or self._t >= self.horizon:
            raise RuntimeError("call reset before step (the day is over).")
        levels = self._levels(action)
        power = np.asarray(_LEVELS)[levels] * self.heater_power
        hour = self._t * self.dt
        outdoor = self._outdoor(hour)
        flow = (
            (outdoor - self._T) / self.r_outside
            - _BETWEEN @ self._T
            + _solar_gains(hour)
            + power
        )
        self._T = self._T + self.dt / self.capacity * flow
        self._t += 1
        reward = -np.abs(self._T - self.target) * self.dt
        energy = float(power.sum() * self.dt)
        truncated = self._t >= self.horizon
        return self._obs(), reward, False, truncated, self._info(energy, outdoor)

    def thermostat(self, observations, setpoint=None, band=0.5):
        """Compute the actions of a three-level thermostat: the plain baseline.

        Each zone's heater runs at full power below ``setpoint - band``, at
        half power within ``setpoint +- band`` and is off above
        ``setpoint + band``, judged from the zone temperature in the
        observation. A setpoint of ``-inf`` keeps a zone's heater off.

        Parameters
        ----------
        observations : array-like of shape (7,) or (n, 7)
            One observation or a batch of them.
        setpoint : float or array-like of shape (3,), default=None
            Setpoint of each zone (°C); None is ``target``.
        band : float, default=0.5
            Half-width of the half-power band (K).

        Returns
        -------
        actions : ndarray or int
            In the environment's encoding: shape (3,) (one observation) or
            (n, 3) with ``"multidiscrete"``; an int or shape (n,) with
            ``"joint"``.
        """
        obs = np.asarray(observations, dtype=np.float64)
        if obs.ndim not in (1, 2) or obs.shape[-1] != 7:
            raise ValueError(
                f"observations must have shape (7,) or (n, 7); got {obs.shape}."
            )
        setpoint = self.target if setpoint is None else setpoint
        setpoint = np.broadcast_to(np.asarray(setpoint, dtype=np.float64), (3,))
        temperatures = self.target + 5.0 * np.atleast_2d(obs)[:, :_N_ZONES]
        levels = np.where(
            temperatures < setpoint - band,
            2,
            np.where(temperatures > setpoint + band, 0, 1),
        )
        if self.action_encoding == "joint":
            actions = levels @ np.array([9, 3, 1])
            return int(actions[0]) if obs.ndim == 1 else actions
        return levels[0] if obs.ndim == 1 else levels
