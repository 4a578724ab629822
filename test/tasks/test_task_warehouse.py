"""The warehouse task ("move material from A to B", config/tasks/warehouse.yaml) end to end: the
task manager, the loader and roller, and the navigation actuator driving the simulator vehicle over cmd_vel."""

from __future__ import annotations

import math

from geometry_msgs.msg import PoseStamped
from lockstep_interfaces.action import Navigate
from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import PauseTask, ResumeTask
from nav_msgs.msg import Path
from std_msgs.msg import String

from lockstep_testing.harness import reliable
from tasks_support import CANCELLED, WAREHOUSE, Manager, actuator, secs, sim_params

TIME_SCALE = 1.0
LIMIT = 0.8  # the A-B area map's speed limit in warehouse.yaml
B = (12.5, 2.5)
A_TO_B = {"from": "A", "to": "B", "speed": 1.0}


def start(ros):
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000))
    nav_feedback = ros.collect(Navigate.Impl.FeedbackMessage, "/navigate/_action/feedback", reliable(depth=1000))
    sim = ros.start("lockstep_sim_node", params=sim_params(mode="commanded", time_scale=TIME_SCALE))
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    actuator(ros, "navigation")
    actuator(ros, "loader", duration_s=0.3)
    actuator(ros, "roller", duration_s=0.3)
    manager = Manager(ros, WAREHOUSE)
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
    assert result.group_reports == 4 == len([e for e in m.events if e.kind == TaskEvent.GROUP_COMPLETED])
    # The actuator goals in the order the decomposition gives: load, drive; drive, unload.
    accepted = sorted((stamp, kind) for kind in ("loader", "navigation", "roller")
                      for stamp, _ in m.goals(kind).values())
    assert [k for _, k in accepted] == ["loader", "navigation", "navigation", "roller"], accepted
    # The navigation goal asked min(task 1.0, map 0.8): the commanded speed reaches 0.8 and never passes it.
    commanded = [f.feedback.speed_mps for f in nav_feedback]
    assert commanded and LIMIT - 0.05 < max(commanded) <= LIMIT + 1e-9, max(commanded)
    fastest = max(v for _, v in speeds(truth))
    assert fastest <= LIMIT * 1.1, fastest
    end = truth[-1].pose.position
    assert math.hypot(end.x - B[0], end.y - B[1]) < 0.3, (end.x, end.y)
    # The path ahead on /plan (as Nav2 publishes it): from the vehicle at A through the first drive's
    # waypoints, in the map frame; empty once a drive ended.
    ros.wait_until(lambda: plans and not plans[-1].poses, 5, "an empty plan after the last drive")
    first = [(round(p.pose.position.x, 1), round(p.pose.position.y, 1)) for p in plans[0].poses]
    assert plans[0].header.frame_id == "map" and first[1:] == [(4.5, 5.5), (4.5, 2.5), (6.5, 2.5)], first
    assert math.hypot(first[0][0] - 2.5, first[0][1] - 5.5) < 0.1, first


def test_cancel_during_navigation_cancels_the_live_goal_and_the_vehicle_stops(ros):
    m, truth, _ = start(ros)
    handle = m.send("move_material", A_TO_B)
    m.wait_status("task/duty[0]/message[0]/action[1]", "running")
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
    drive = "task/duty[0]/message[0]/action[1]"
    m.wait_status(drive, "running")
    ros.wait_until(lambda: [f for f in nav_feedback if f.feedback.waypoint_index >= 1], 60, "past the first waypoint")
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
    first_drive, resumed = list(routes.values())[:2]
    assert first_drive[0] == (4.5, 5.5) and (4.5, 5.5) not in resumed, (first_drive, resumed)
    assert paused_at.reason == "paused"
    assert m.succeeded("loader") == 1 and m.succeeded("roller") == 1 and m.succeeded("navigation") == 2


def test_an_obstacle_fact_interrupts_the_drive_until_it_is_gone(ros):
    """warehouse.yaml's navigation is `blocked_by: obstacle(_)`: an obstacle reported on /task_facts interrupts
    the drive (one report per level), nothing drives while it is there, and the task resumes by itself."""
    m, truth, _ = start(ros)
    facts = ros.publisher(String, "/task_facts", reliable(depth=10))
    handle = m.send("move_material", A_TO_B)
    drive = "task/duty[0]/message[0]/action[1]"
    m.wait_status(drive, "running")
    ros.wait_until(lambda: speeds(truth) and speeds(truth)[-1][1] > 0.3, 30, "the vehicle driving")
    ros.wait_for_matched(facts)
    facts.publish(String(data="obstacle(pallet_3)."))

    def interrupts():
        return [(e.level, e.path, e.reason) for e in m.events if e.kind == TaskEvent.INTERRUPTED]
    ros.wait_until(lambda: len(interrupts()) >= 4, 10, "interrupt reports")
    reason = "blocked: obstacle(_)"
    assert interrupts() == [(3, drive, reason), (2, "task/duty[0]/message[0]", reason), (1, "task/duty[0]", reason),
                            (0, "task", reason)], interrupts()
    blocked_at = secs(truth[-1].header.stamp)
    ros.wait_until(lambda: secs(truth[-1].header.stamp) > blocked_at + 2.0, 20, "2 s of simulated time")
    assert speeds(truth)[-1][1] < 0.05, "the vehicle stands while the obstacle is there"
    assert len(m.status_events(path=drive, new="running")) == 1, "the drive is not sent again while blocked"
    facts.publish(String(data=""))
    result = m.result(handle, timeout=120)
    assert result.success and result.leaves_executed == 4, result
    assert len(m.status_events(path=drive, new="running")) == 2
