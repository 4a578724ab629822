"""The task manager checks new tasks against the robots' batteries (their battery_state): a task whose drives
need more energy than any battery holds above its reserve is rejected at once with the figures; one that fits
is taken. The simulator is the robot, with a 1 Wh battery."""

from __future__ import annotations

import json

from geometry_msgs.msg import PoseStamped
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
