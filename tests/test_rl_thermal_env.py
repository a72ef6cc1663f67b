"""Behaviour of the three-zone building thermal environment."""

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from sklearn_ext.rl._thermal_env import BuildingThermalEnv  # noqa: E402

OFF = np.zeros(3, dtype=int)
FULL = np.full(3, 2)


def _day(env, policy, seed=0, options=None):
    """Roll out one day; return rewards, costs, temperatures, observations."""
    obs, info = env.reset(seed=seed, options=options)
    rewards, costs, temps, observations = [], [], [info["temperatures"]], [obs]
    truncated = False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        assert not terminated
        rewards.append(reward)
        costs.append(info["costs"])
        temps.append(info["temperatures"])
        observations.append(obs)
    return (
        np.array(rewards),
        np.array(costs),
        np.array(temps),
        np.array(observations),
    )


@pytest.mark.parametrize("horizon", [96, 48])
def test_spaces_and_shapes(horizon):
    env = BuildingThermalEnv(horizon=horizon)
    assert env.dt == pytest.approx(24 / horizon)
    assert env.n_objectives == 3 and env.n_constraints == 1
    assert env.action_space == BuildingThermalEnv().action_space
    assert tuple(env.action_space.nvec) == (3, 3, 3)
    assert env.observation_space.shape == (7,)
    assert env.observation_space.dtype == np.float32
    assert env.reward_space.shape == (3,)
    assert np.all(env.reward_space.high == 0)
    assert BuildingThermalEnv(action_encoding="joint").action_space.n == 27

    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert info["costs"].shape == (1,) and info["costs"][0] == 0
    assert info["temperatures"].shape == (3,)
    np.testing.assert_allclose(obs[:3], (info["temperatures"] - 21) / 5, rtol=1e-6)
    assert obs[3] == pytest.approx(info["outdoor"] / 10)
    np.testing.assert_allclose(obs[4:], [0, 1, 0], atol=1e-7)

    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs)
    assert reward.shape == (3,) and reward.dtype == np.float64
    assert env.reward_space.contains(reward)
    assert info["costs"].shape == (1,)
    assert obs[6] == pytest.approx(1 / horizon)


@pytest.mark.parametrize("encoding", ["multidiscrete", "joint"])
def test_gymnasium_env_checker(encoding):
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        # Unbounded temperatures and a vector reward (MO-Gymnasium) are meant.
        warnings.simplefilter("ignore", UserWarning)
        check_env(BuildingThermalEnv(action_encoding=encoding), skip_render_check=True)


def test_rewards_costs_and_truncation():
    env = BuildingThermalEnv(horizon=48)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=3)
    for t in range(1, env.horizon + 1):
        levels = rng.integers(0, 3, size=3)
        obs, reward, terminated, truncated, info = env.step(levels)
        assert np.all(reward <= 0)
        np.testing.assert_allclose(reward, -np.abs(info["temperatures"] - 21) * env.dt)
        energy = np.sum(np.array([0.0, 0.5, 1.0])[levels] * env.heater_power) * 0.5
        assert info["costs"][0] >= 0
        assert info["costs"][0] == pytest.approx(energy)
        assert not terminated
        assert truncated == (t == env.horizon)
    assert obs[6] == pytest.approx(1.0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(OFF)


def test_hour_features_and_weather():
    env = BuildingThermalEnv()
    _, _, _, observations = _day(env, lambda o: OFF)
    hours = np.arange(97) * 0.25
    np.testing.assert_allclose(
        observations[:, 4], np.sin(2 * np.pi * hours / 24), atol=1e-6
    )
    np.testing.assert_allclose(
        observations[:, 5], np.cos(2 * np.pi * hours / 24), atol=1e-6
    )
    outdoor = 10 * observations[:, 3]
    assert outdoor.min() == pytest.approx(-6, abs=1e-5)
    assert outdoor.max() == pytest.approx(4, abs=1e-5)
    assert hours[np.argmin(outdoor)] == 3 and hours[np.argmax(outdoor)] == 15


def test_relaxation_towards_constant_outdoor():
    env = BuildingThermalEnv(outdoor=5.0)
    # From equal temperatures every zone cools monotonically towards 5 °C.
    _, costs, temps, _ = _day(env, lambda o: OFF, options={"temperatures": [21] * 3})
    assert np.all(costs == 0)
    assert np.all(np.diff(temps, axis=0) < 0)
    assert np.all(temps > 5)
    # The leakiest zone (3) cools fastest, the best insulated (1) slowest.
    assert temps[-1, 2] < temps[-1, 1] < temps[-1, 0]
    assert np.all(temps[-1] - 5 < 0.35 * (21 - 5))
    # From any start, the largest distance to the outdoor temperature shrinks.
    for seed in range(3):
        _, _, temps, _ = _day(env, lambda o: OFF, seed=seed)
        assert np.all(np.diff(np.abs(temps - 5).max(axis=1)) < 0)
    # Below the outdoor temperature the zones warm up towards it.
    _, _, temps, _ = _day(env, lambda o: OFF, options={"temperatures": [0] * 3})
    assert np.all(np.diff(temps, axis=0) > 0) and np.all(temps < 5)


def test_steady_state_energy_balance():
    # Held at the outdoor temperature with no heating, nothing moves; heating
    # raises each zone by the energy put in over its heat capacity (first step).
    env = BuildingThermalEnv(outdoor=21.0)
    env.reset(options={"temperatures": [21.0] * 3})
    _, reward, _, _, info = env.step(OFF)
    np.testing.assert_allclose(info["temperatures"], 21.0)
    np.testing.assert_allclose(reward, 0.0)
    env.reset(options={"temperatures": [21.0] * 3})
    _, _, _, _, info = env.step(FULL)
    np.testing.assert_allclose(
        info["temperatures"] - 21, env.heater_power * env.dt / env.capacity
    )


def test_determinism_given_seed():
    env = BuildingThermalEnv()
    a = _day(env, env.thermostat, seed=7)
    b = _day(BuildingThermalEnv(), BuildingThermalEnv().thermostat, seed=7)
    c = _day(env, env.thermostat, seed=8)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.allclose(a[2][0], c[2][0])
    assert np.all(np.abs(a[2][0] - 21) <= 1.5)


# Largest deviation after 2 hours, mean deviation over the day (K). Half-hour
# steps let zone 3 fall further at half power before the thermostat reacts.
@pytest.mark.parametrize("horizon, largest, mean", [(96, 1.5, 0.6), (48, 2.0, 0.8)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thermostat_holds_every_zone_near_target(horizon, largest, mean, seed):
    env = BuildingThermalEnv(horizon=horizon)
    rewards, costs, temps, _ = _day(env, env.thermostat, seed=seed)
    after = temps[int(2 / env.dt) :]
    assert np.all(np.abs(after - 21) <= largest)
    assert np.all(rewards.sum(axis=0) > -mean * 24)


def test_heaters_off_and_full_bracket_the_thermostat():
    env = BuildingThermalEnv()
    r_t, c_t, temps_t, _ = _day(env, env.thermostat)
    r_off, c_off, temps_off, _ = _day(env, lambda o: OFF)
    r_full, c_full, temps_full, _ = _day(env, lambda o: FULL)
    assert np.all(temps_off[1:] < temps_t[1:])
    assert np.all(temps_full[-1] > temps_t[-1])
    assert np.all(r_off.sum(axis=0) < r_t.sum(axis=0))
    assert np.all(r_full.sum(axis=0) < r_t.sum(axis=0))
    assert c_off.sum() == 0 < c_t.sum() < c_full.sum()
    assert c_full.sum() == pytest.approx(env.heater_power.sum() * 24)
    # Zone 3, the leakiest, takes over a third of the thermostat's energy:
    # leaving its heater off saves that at the cost of zone 3's comfort (and a
    # little of zone 2's, which loses heat through the shared wall).
    r_3, c_3, _, _ = _day(env, lambda o: env.thermostat(o, setpoint=(21, 21, -np.inf)))
    assert c_3.sum() < 0.7 * c_t.sum()
    assert r_3.sum(axis=0)[2] < 10 * r_t.sum(axis=0)[2]
    assert r_3.sum(axis=0)[1] < r_t.sum(axis=0)[1]
    assert np.all(r_3.sum(axis=0)[:2] > -0.75 * 24)


def test_thermostat_levels_and_batches():
    env = BuildingThermalEnv()
    obs = np.zeros(7, dtype=np.float32)
    obs[:3] = np.array([-1.0, 0.2, 1.0]) / 5  # 20, 21.2, 22 °C
    np.testing.assert_array_equal(env.thermostat(obs), [2, 1, 0])
    np.testing.assert_array_equal(env.thermostat(obs, setpoint=22.0), [2, 2, 1])
    np.testing.assert_array_equal(env.thermostat(obs, band=2.0), [1, 1, 1])
    batch = np.stack([obs, np.zeros(7)])
    np.testing.assert_array_equal(env.thermostat(batch), [[2, 1, 0], [1, 1, 1]])
    joint = BuildingThermalEnv(action_encoding="joint")
    assert joint.thermostat(obs) == 2 * 9 + 1 * 3 + 0
    np.testing.assert_array_equal(joint.thermostat(batch), [21, 13])
    assert joint.action_space.contains(joint.thermostat(obs))
    with pytest.raises(ValueError, match=r"shape \(7,\) or \(n, 7\)"):
        env.thermostat(np.zeros(5))


def test_joint_and_multidiscrete_encodings_agree():
    md = BuildingThermalEnv(horizon=48)
    joint = BuildingThermalEnv(horizon=48, action_encoding="joint")
    md.reset(seed=4)
    joint.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(48):
        levels = rng.integers(0, 3, size=3)
        index = int(levels[0] * 9 + levels[1] * 3 + levels[2])
        o1, r1, _, t1, i1 = md.step(levels)
        o2, r2, _, t2, i2 = joint.step(index)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(i1["costs"], i2["costs"])
        assert t1 == t2
    assert t1


@pytest.mark.parametrize(
    "encoding, action, message",
    [
        ("multidiscrete", [0, 1, 3], "3 integer heater levels"),
        ("multidiscrete", [0, -1, 2], "3 integer heater levels"),
        ("multidiscrete", [0, 1], "3 integer heater levels"),
        ("multidiscrete", [0.5, 1.0, 2.0], "3 integer heater levels"),
        ("multidiscrete", 4, "3 integer heater levels"),
        ("joint", 27, "integer in 0..26"),
        ("joint", -1, "integer in 0..26"),
        ("joint", 1.5, "integer in 0..26"),
        ("joint", [1, 2, 0], "integer in 0..26"),
    ],
)
def test_invalid_actions_raise(encoding, action, message):
    env = BuildingThermalEnv(action_encoding=encoding)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message) as excinfo:
        env.step(action)
    assert repr(action) in str(excinfo.value)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"horizon": 7}, "horizon must be an integer >= 8"),
        ({"horizon": 0}, "horizon must be an integer >= 8"),
        ({"horizon": 96.0}, "horizon must be an integer >= 8"),
        ({"target": np.nan}, "target must be a finite number"),
        ({"target": "21"}, "target must be a finite number"),
        ({"action_encoding": "flat"}, "action_encoding must be"),
        ({"outdoor": np.inf}, "outdoor must be None"),
    ],
)
def test_bad_parameters_raise(params, message):
    with pytest.raises(ValueError, match=message):
        BuildingThermalEnv(**params)


def test_bad_initial_temperatures_raise():
    env = BuildingThermalEnv()
    with pytest.raises(ValueError, match="3 finite temperatures"):
        env.reset(options={"temperatures": [20.0, 21.0]})
    with pytest.raises(RuntimeError, match="reset"):
        BuildingThermalEnv().step(OFF)
