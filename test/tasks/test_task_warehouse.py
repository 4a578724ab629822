"""The warehouse task ("move material from A to B", config/tasks/warehouse.yaml on the station map
config/tasks/warehouse_map.yaml) end to end: the task manager, the loader and roller, and the navigation
actuator driving the simulator vehicle over cmd_vel along routes planned on the map."""

from __future__ import annotations

import json
import math

from action_msgs.msg import GoalStatus, GoalStatusArray
from geometry_msgs.msg import PoseStamped
from lockstep_interfaces.action import ExecuteTask, Navigate
from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import PauseTask, ResumeTask
from nav_msgs.msg import Path
from std_msgs.msg import String

from lockstep_testing.harness import REPO_ROOT, reliable
from tasks_support import CANCELLED, WAREHOUSE, WAREHOUSE_MAP as MAP, Manager, actuator, secs, sim_params
DRIVE = "task/duty[0]/message[1]/action[1]"  # the drive from the load's station to the drop's

TIME_SCALE = 1.0
LIMIT = 0.8  # the lower corridor's lane speed limit in warehouse_map.yaml
B = (12.5, 2.5)
A_TO_B = {"from": "A", "to": "B", "speed": 1.0}


def start(ros, station: str = "A", cell: tuple = (2, 9)):
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000))
    nav_feedback = ros.collect(Navigate.Impl.FeedbackMessage, "/navigate/_action/feedback", reliable(depth=1000))
    sim = ros.start("lockstep_sim_node", params=sim_params(mode="commanded", time_scale=TIME_SCALE,
                                                           start_column=cell[0], start_row=cell[1]))
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    actuator(ros, "navigation")
    actuator(ros, "loader", duration_s=0.3)
    actuator(ros, "roller", duration_s=0.3)
    manager = Manager(ros, WAREHOUSE, map_file=str(MAP), start_stations=station)
    manager.wait_for_actuators("navigation", "loader", "roller")
    return manager, truth, nav_feedback


def speeds(truth, window: float = 0.25):
    """Ground-truth speeds over windows of at least `window` simulated seconds: (end time, m/s)."""
    poses = [(secs(p.header.stamp), p.pose.position.x, p.pose.position.y) for p in list(truth)]
    out, j = [], 0
    for i, (t, x, y) in enumerate(poses):
        while j < i and t - poses[j][0] > window:
            j += 1
        if j > 0 and t - poses[j - 1][0] >= window:
            t0, x0, y0 = poses[j - 1]
            out.append((t, math.hypot(x - x0, y - y0) / (t - t0)))
    return out


def test_a_to_b_runs_at_the_map_speed_limit_in_decomposition_order(ros):
    plans = ros.collect(Path, "/plan", reliable(depth=100))
    m, truth, nav_feedback = start(ros)
    result = m.result(m.send("move_material", A_TO_B), timeout=120)
    assert result.success, result
    # approach, pick_and_go, drop, the duty, the task.
    assert result.group_reports == 5 == len([e for e in m.events if e.kind == TaskEvent.GROUP_COMPLETED])
    # The actions ran in the order the decomposition gives: drive (to A, where it stands); load, drive; unload
    # (the manager's events, from one publisher, keep its order; the actuators' goal statuses come from four
    # processes, and the drive to where the robot stands ends within microseconds of the load's start).
    ran = [e.path.split("/", 2)[2] for e in m.status_events(new="running") if e.level == 3]
    assert ran == ["message[0]/action[0]", "message[1]/action[0]", "message[1]/action[1]",
                   "message[2]/action[0]"], ran
    assert [len(m.goals(kind)) for kind in ("navigation", "loader", "roller")] == [2, 1, 1]
    # The navigation goal asked min(task 1.0, the route's lowest lane limit 0.8): the commanded speed reaches
    # 0.8 and never passes it.
    commanded = [f.feedback.speed_mps for f in nav_feedback]
    assert commanded and LIMIT - 0.05 < max(commanded) <= LIMIT + 1e-9, max(commanded)
    fastest = max(v for _, v in speeds(truth))
    assert fastest <= LIMIT * 1.1, fastest
    end = truth[-1].pose.position
    assert math.hypot(end.x - B[0], end.y - B[1]) < 0.3, (end.x, end.y)
    # The path ahead on /plan (as Nav2 publishes it), in the map frame, through the planned stations
    # A, J1, J2, O, J3, B; empty once a drive ended.
    ros.wait_until(lambda: plans and not plans[-1].poses, 30, "an empty plan after the last drive")
    full = next(p for p in plans if len(p.poses) >= 5)
    ahead = [(round(p.pose.position.x, 1), round(p.pose.position.y, 1)) for p in full.poses]
    assert full.header.frame_id == "map", full.header.frame_id
    assert ahead[-5:] == [(4.5, 5.5), (4.5, 2.5), (6.5, 2.5), (9.5, 2.5), (12.5, 2.5)], ahead


def distance_to_polyline(x: float, y: float, points: list) -> float:
    best = math.inf
    for (ax, ay), (bx, by) in zip(points, points[1:]):
        dx, dy = bx - ax, by - ay
        t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / max(dx * dx + dy * dy, 1e-12)))
        best = min(best, math.hypot(x - ax - t * dx, y - ay - t * dy))
    return best


def test_c_to_d_drives_the_route_planned_on_the_map(ros):
    # The vehicle starts at C (column 2, row 2); the fastest route to D is the upper corridor: C, J6, J7, D.
    m, truth, nav_feedback = start(ros, station="C", cell=(2, 2))
    result = m.result(m.send("move_material", {"from": "C", "to": "D", "speed": 1.0}), timeout=180)
    assert result.success, result
    lanes = [(2.5, 12.5), (4.5, 12.5), (14.5, 12.5), (17.5, 12.5)]
    off = [(p.pose.position.x, p.pose.position.y) for p in list(truth)
           if distance_to_polyline(p.pose.position.x, p.pose.position.y, lanes) > 0.35]
    assert not off, f"{len(off)} poses off the planned lanes, first {off[:3]}"
    end = truth[-1].pose.position
    assert math.hypot(end.x - 17.5, end.y - 12.5) < 0.3, (end.x, end.y)
    routes: dict = {}
    for f in nav_feedback:
        routes.setdefault(bytes(f.goal_id.uuid), [(p.x, p.y) for p in f.feedback.remaining_route])
    assert any(r[-3:] == lanes[1:] for r in routes.values()), list(routes.values())


def test_a_station_off_the_map_or_out_of_reach_is_rejected_naming_both(ros, tmp_path):
    island = tmp_path / "map.yaml"
    island.write_text(MAP.read_text().replace("stations:\n", "stations:\n  X: {x: 10.5, y: 10.5}\n", 1))
    m = Manager(ros, WAREHOUSE, map_file=str(island), start_stations="A")
    for to, words in [("Z", "`Z`"), ("X", "no route from A to X")]:
        goal = ExecuteTask.Goal(task_type="move_material", parameters_json=json.dumps({"from": "A", "to": to,
                                                                                        "speed": 1.0}))
        handle = ros.send_goal(m.client, goal)
        assert not handle.accepted
        ros.wait_until(lambda words=words: words in m.proc.log(), 10, f"{words} in the log")


def test_cancel_during_navigation_cancels_the_live_goal_and_the_vehicle_stops(ros):
    m, truth, _ = start(ros)
    handle = m.send("move_material", A_TO_B)
    m.wait_status(DRIVE, "running")
    ros.wait_until(lambda: speeds(truth) and speeds(truth)[-1][1] > 0.3, 30, "the vehicle driving")
    ros.cancel(handle)
    cancelled_at = secs(truth[-1].header.stamp)
    assert m.result(handle).outcome == "cancelled"
    ros.wait_until(lambda: [s for _, s in m.goals("navigation").values() if s in CANCELLED], 10,
                   "the navigation goal cancelled")
    ros.wait_until(lambda: secs(truth[-1].header.stamp) > cancelled_at + 1.0, 10, "1 s of simulated time")
    stopped = [t for t, v in speeds(truth, 0.1) if t > cancelled_at and v < 0.05]
    assert stopped and stopped[0] - cancelled_at <= 0.5, (stopped[:1], cancelled_at)


def test_pause_and_resume_mid_route_finish_each_action_once(ros):
    m, truth, nav_feedback = start(ros)
    handle = m.send("move_material", A_TO_B)
    drive = DRIVE
    m.wait_status(drive, "running")
    ros.wait_until(lambda: [f for f in nav_feedback if f.feedback.waypoint_index >= 2], 60, "past J1")
    task_id = m.status_events(path=drive)[0].task_id
    answer = ros.call(PauseTask, "/pause_task", PauseTask.Request(task_id=task_id))
    assert answer.success and "1 actuator goal" in answer.message, answer.message
    m.wait_status(drive, "interrupted")
    answer = ros.call(ResumeTask, "/resume_task", ResumeTask.Request(task_id=task_id))
    assert answer.success, answer.message
    result = m.result(handle, timeout=120)
    assert result.success and result.leaves_executed == 4, result
    # The resumed drive went on with the route it had left: its first feedback no longer has waypoint 0.
    paused_at = m.status_events(path=drive, new="interrupted")[0]
    routes: dict = {}
    for f in nav_feedback:
        routes.setdefault(bytes(f.goal_id.uuid), [(p.x, p.y) for p in f.feedback.remaining_route])
    # (The drive to A, where the vehicle stands, may end before its first feedback.)
    first_drive, resumed = list(routes.values())[-2:]
    assert (4.5, 5.5) in first_drive and (4.5, 5.5) not in resumed, (first_drive, resumed)
    assert paused_at.reason == "paused"
    assert m.succeeded("loader") == 1 and m.succeeded("roller") == 1 and m.succeeded("navigation") == 2


def test_an_obstacle_fact_interrupts_the_drive_until_it_is_gone(ros):
    """warehouse.yaml's navigation is `blocked_by: obstacle(_)`: an obstacle reported on /task_facts interrupts
    the drive (one report per level), nothing drives while it is there, and the task resumes by itself."""
    m, truth, _ = start(ros)
    facts = ros.publisher(String, "/task_facts", reliable(depth=10))
    handle = m.send("move_material", A_TO_B)
    drive = DRIVE
    m.wait_status(drive, "running")
    ros.wait_until(lambda: speeds(truth) and speeds(truth)[-1][1] > 0.3, 30, "the vehicle driving")
    ros.wait_for_matched(facts)
    facts.publish(String(data="obstacle(pallet_3)."))

    def interrupts():
        return [(e.level, e.path, e.reason) for e in m.events if e.kind == TaskEvent.INTERRUPTED]
    ros.wait_until(lambda: len(interrupts()) >= 4, 10, "interrupt reports")
    reason = "blocked: obstacle(_)"
    assert interrupts() == [(3, drive, reason), (2, "task/duty[0]/message[1]", reason), (1, "task/duty[0]", reason),
                            (0, "task", reason)], interrupts()
    blocked_at = secs(truth[-1].header.stamp)
    ros.wait_until(lambda: secs(truth[-1].header.stamp) > blocked_at + 2.0, 20, "2 s of simulated time")
    assert speeds(truth)[-1][1] < 0.05, "the vehicle stands while the obstacle is there"
    assert len(m.status_events(path=drive, new="running")) == 1, "the drive is not sent again while blocked"
    facts.publish(String(data=""))
    result = m.result(handle, timeout=120)
    assert result.success and result.leaves_executed == 4, result
    assert len(m.status_events(path=drive, new="running")) == 2


def test_pick_and_deliver_picks_with_the_arm_between_the_drives(ros):
    """warehouse.yaml's pick_and_deliver: drive to A, the arm plays config/moves/pick.csv (the interpolation
    player on mock joints with config/joint_limits.yaml), drive to B, unload."""
    limits = REPO_ROOT / "config/joint_limits.yaml"
    alarms = ros.collect(String, "/lockstep_mock_joints/alarm")
    ros.start("lockstep_mock_joints", params={"joints": "shoulder,elbow", "initial_positions": "0,0",
                                              "limits_file": str(limits)})
    ros.start("lockstep_interpolation_player", params={"roots": str(REPO_ROOT / "config/moves"),
                                                       "limits_file": str(limits)})
    m, truth, _ = start(ros)
    arm = {}
    sub = ros.node.create_subscription(
        GoalStatusArray, "/move_play/_action/status",
        lambda a: arm.update({bytes(s.goal_info.goal_id.uuid): s.status for s in a.status_list}),
        reliable(depth=100, latched=True))
    ros.wait_for_publishers(sub, timeout=120)
    result = m.result(m.send("pick_and_deliver", {**A_TO_B, "arm_file": "pick.csv"}), timeout=180)
    assert result.success and result.leaves_executed == 4, result
    picked = m.status_events(result.task_id, "task/duty[0]/message[1]/action[0]", "completed")
    carried = m.status_events(result.task_id, "task/duty[0]/message[2]/action[0]", "running")
    assert picked and carried and secs(picked[0].stamp) <= secs(carried[0].stamp), "the drive waits for the arm"
    ros.wait_until(lambda: list(arm.values()) == [GoalStatus.STATUS_SUCCEEDED], 10, "the arm's one goal succeeded")
    assert not alarms, [a.data for a in alarms]
    end = truth[-1].pose.position
    assert math.hypot(end.x - B[0], end.y - B[1]) < 0.3, (end.x, end.y)
