"""The simulator's battery: sensor_msgs/BatteryState on battery_state, drained with distance (and time), the
vehicle stopped once empty whatever drives it, and charged while it stands at a charger."""

import math

from sensor_msgs.msg import BatteryState

from lockstep_testing.harness import reliable
from sim_support import NODE, Sim, copy_rules, sim_params, stamp_secs

WAIT_SECS = 120.0


def battery_params(**overrides):
    return {f"battery.{k}": v for k, v in overrides.items()}


def test_an_empty_battery_stops_the_vehicle_short_of_its_destination(ros, tmp_path):
    # 0.05 Wh at 0.01 Wh per metre and no idle drain: 5 m of driving, where the destination is 15 m away.
    states = ros.collect(BatteryState, "/battery_state", reliable(depth=1000))
    params = sim_params(copy_rules(tmp_path), **battery_params(
        capacity_wh=0.05, drive_wh_per_m=0.01, idle_w=0.0, rate_hz=5.0))
    sim = Sim(ros, params)
    ros.wait_until(lambda: states and states[-1].percentage == 0.0, WAIT_SECS, "the battery empty", sim.proc)
    first = states[0]
    assert first.present and math.isclose(first.voltage, 24.0)
    assert math.isclose(first.capacity, 0.05 / 24.0, rel_tol=1e-6), first.capacity
    assert first.power_supply_status in (BatteryState.POWER_SUPPLY_STATUS_DISCHARGING,
                                         BatteryState.POWER_SUPPLY_STATUS_FULL)
    levels = [m.percentage for m in list(states)]
    assert all(a >= b for a, b in zip(levels, levels[1:])), "the charge never rises without a charger"
    assert any(m.current < 0.0 for m in list(states)), "a draining battery has a negative current"
    # Empty: the vehicle comes to rest within a braking distance of 5 m, and stays there.
    emptied_at = len(sim.truth)
    ros.wait_until(lambda: len(sim.truth) > emptied_at + 100, WAIT_SECS, "100 more poses", sim.proc)
    poses = [(m.pose.position.x, m.pose.position.y) for m in list(sim.truth)]
    resting = poses[emptied_at + 50:]
    assert max(math.dist(resting[0], p) for p in resting) < 0.01, resting[:3]
    # From the start cell's centre (the first poses may go by before the subscription matches).
    path = [(2.5, 5.5), *poses]
    driven = sum(math.dist(a, b) for a, b in zip(path, path[1:]))
    assert 4.8 < driven < 5.5, driven
    assert "arrived" not in sim.state_names()


def test_the_battery_charges_standing_at_a_charger_up_to_full(ros, tmp_path):
    # No destination: the vehicle stands at its start, (2.5, 5.5), where the charger is. From 10 % of 10 Wh at
    # 190 W net: 170 simulated seconds, 8.5 wall seconds at time_scale 20, long enough for this subscriber to
    # match while it still charges, also on a loaded machine.
    states = ros.collect(BatteryState, "/battery_state", reliable(depth=1000))
    params = sim_params(copy_rules(tmp_path), destination_column=-1, destination_row=-1, time_scale=20.0,
                        **battery_params(capacity_wh=10.0, start_percent=10.0, charge_w=200.0,
                                         chargers="2.5 5.5, 17.5 5.5", rate_hz=1.0))
    sim = Sim(ros, params)
    ros.wait_until(lambda: states and states[-1].power_supply_status == BatteryState.POWER_SUPPLY_STATUS_FULL,
                   WAIT_SECS, "the battery full", sim.proc)
    charging = [m for m in list(states) if m.power_supply_status == BatteryState.POWER_SUPPLY_STATUS_CHARGING]
    assert charging, "charging before full"
    assert all(m.current > 0.0 for m in charging)
    levels = [m.percentage for m in list(states)]
    assert levels[0] < 1.0 and levels[-1] == 1.0, levels
    assert all(a <= b for a, b in zip(levels, levels[1:])), levels
    # 200 W in, 10 W out, into 10 Wh: 0.528 % per simulated second.
    a, b = charging[0], charging[-1]
    rate = (b.percentage - a.percentage) / (stamp_secs(b.header) - stamp_secs(a.header))
    assert math.isclose(rate, 190.0 / 3600.0 / 10.0, rel_tol=0.02), rate


def test_a_charger_that_is_not_a_position_is_named_at_start(ros, tmp_path):
    params = sim_params(copy_rules(tmp_path), **battery_params(capacity_wh=1.0, chargers="2.5 5.5, north"))
    proc = ros.start(NODE, params=params)
    assert proc.popen.wait(timeout=WAIT_SECS) != 0
    assert "battery.chargers`: charger 2 is `north`" in proc.log(), proc.log()
