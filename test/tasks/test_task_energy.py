"""The task manager checks new tasks against the robots' batteries (their battery_state): a task whose drives
need more energy than any battery holds above its reserve is rejected at once with the figures; one that fits
is taken. A robot low on charge drives to the nearest charger of the map and charges before its next task.
The simulator is the robot, with a 1 Wh battery."""

from __future__ import annotations

import json
import math

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import BatteryState
from lockstep_interfaces.action import ExecuteTask

from lockstep_testing.harness import reliable
from tasks_support import WAREHOUSE, WAREHOUSE_MAP as MAP, Manager, actuator, sim_params

WAIT_SECS = 120.0


def test_a_task_too_long_for_any_battery_is_rejected_with_the_figures(ros):
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=100))
    sim = ros.start("lockstep_sim_node", params=sim_params(
        mode="commanded", start_column=2, start_row=9,
        **{"battery.capacity_wh": 1.0, "battery.idle_w": 0.0, "battery.drive_wh_per_m": 0.05}))
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    for kind in ("navigation", "loader", "roller"):
        actuator(ros, kind)
    m = Manager(ros, WAREHOUSE, map_file=str(MAP), start_stations="A", drive_wh_per_m=0.05, idle_w=0.0,
                battery_reserve_percent=20.0)
    ros.wait_until(lambda: "battery of the robot: 1.00 Wh of 1.00 Wh" in m.proc.log(), WAIT_SECS,
                   "the manager hearing the robot's battery", m.proc)
    # A to D: 22 m of lanes at 0.05 Wh/m is 1.1 Wh, more than the 0.8 Wh above the 20 % reserve (44 s: the
    # route is limited to 0.5 m/s over the grass).
    goal = ExecuteTask.Goal(task_type="move_material", parameters_json=json.dumps(
        {"from": "A", "to": "D", "speed": 1.0}))
    handle = ros.send_goal(m.client, goal)
    assert not handle.accepted
    words = ("the task needs 1.10 Wh (22.0 m at 0.05 Wh/m, 44 s at 0 W), more than any battery holds above its "
             "20 % reserve (at most 0.80 Wh of 1.00 Wh, the robot)")
    ros.wait_until(lambda: words in m.proc.log(), 30, "the figures in the log", m.proc)
    # A to B: 13 m, 0.65 Wh: taken.
    assert m.send("move_material", {"from": "A", "to": "B", "speed": 1.0})


def test_a_low_robot_charges_at_the_nearest_charger_before_its_transport(ros):
    # A 1 Wh battery at 25 %, 0.01 Wh per metre; chargers at C and D (the map's `charger: true` stations).
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=10000))
    batteries = ros.collect(BatteryState, "/battery_state", reliable(depth=10000))
    # The simulator at twice real time, as the demo's task stage runs it: the drives take half the wall time.
    sim = ros.start("lockstep_sim_node", params=sim_params(
        mode="commanded", start_column=2, start_row=9, time_scale=2.0,
        **{"battery.capacity_wh": 1.0, "battery.start_percent": 25.0, "battery.idle_w": 0.0,
           "battery.drive_wh_per_m": 0.01, "battery.charge_w": 300.0, "battery.rate_hz": 5.0,
           "battery.chargers": "2.5 12.5, 17.5 12.5"}))
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    for kind in ("navigation", "loader", "roller"):
        actuator(ros, kind)
    m = Manager(ros, WAREHOUSE, map_file=str(MAP), start_stations="A", drive_wh_per_m=0.01, idle_w=0.0,
                battery_reserve_percent=20.0, recharge_below=30.0, charge_to=90.0)
    m.wait_for_actuators("navigation", "loader", "roller")
    # Below 30 % and idle: the manager sends it to C (15 s from A), the nearest charger, at once.
    charging = ros.wait_until(lambda: m.status_events(new="charging"), WAIT_SECS, "the robot charging", m.proc)[0]
    # 11 m driven there: about 0.11 Wh spent on the way.
    at, wh = charging.reason.split(" Wh, charging to 0.90 Wh")[0].split(": ")
    assert at == "at C" and 0.10 < 0.25 - float(wh) < 0.16, charging.reason
    assert "charge on the robot: battery 0.25 of 1.00 Wh, below 30 %: charging at C to 0.90 Wh" in m.proc.log()
    # A transport sent while it charges waits for the charge, then goes from C.
    handle = m.send("move_material", {"from": "A", "to": "B", "speed": 1.0})
    result = m.result(handle, timeout=WAIT_SECS)
    assert result.success, result
    finished = m.finished(charging.task_id)
    assert finished and finished[0].reason == "completed"
    events = list(m.events)
    assert events.index(finished[0]) < min(i for i, e in enumerate(events) if e.task_id == result.task_id)
    pose_at = lambda x, y: any(math.dist((p.pose.position.x, p.pose.position.y), (x, y)) < 0.3  # noqa: E731
                               for p in list(truth))
    assert pose_at(2.5, 12.5), "the robot stood at C"
    charged = [b.percentage for b in list(batteries)
               if b.power_supply_status == BatteryState.POWER_SUPPLY_STATUS_CHARGING]
    assert charged and max(charged) >= 0.88, max(charged or [0])
