"""lockstep_actuator driven from rclpy as the task manager drives it: a timed actuator (late acceptance, simulated
failure), the busy state (~/occupy, /actuator_states, rejected goals), the navigation actuator driving
lockstep_sim_node in commanded mode (route followed within the goal's speed; cancel stops the vehicle), and the
HMI prompt, bad goals and cancels."""

from __future__ import annotations

import math
import time

from action_msgs.msg import GoalStatus
from geometry_msgs.msg import Point, PoseStamped
from lockstep_interfaces.action import Load, Navigate, Prompt, Roll
from lockstep_interfaces.msg import ActuatorState
from lockstep_interfaces.srv import Occupy
from std_msgs.msg import String

from lockstep_testing.harness import REPO_ROOT, reliable

SIM = "lockstep_sim_node"
FAILURE = "simulated failure (parameter fail)"


def actuator(ros, node: str, kind: str, **params):
    """lockstep_actuator of `kind`, its node named `node` (so its services are /<node>/...)."""
    return ros.start("lockstep_actuator", name=node, params={"kind": kind, **params}, remaps={"__node": node})


def stamp_secs(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def speeds(poses, window: float = 0.2):
    """(start stamp, speed) over consecutive windows of at least `window` simulated seconds."""
    poses = sorted(poses, key=stamp_secs)
    out = []
    j = 0
    for i, a in enumerate(poses):
        j = max(j, i + 1)
        while j < len(poses) and stamp_secs(poses[j]) - stamp_secs(a) < window:
            j += 1
        if j == len(poses):
            break
        b = poses[j]
        dt = stamp_secs(b) - stamp_secs(a)
        d = math.dist((a.pose.position.x, a.pose.position.y), (b.pose.position.x, b.pose.position.y))
        out.append((stamp_secs(a), d / dt))
    return out


def test_a_timed_actuator_takes_its_duration_accepts_late_and_fails_on_request(ros):
    actuator(ros, "loader", "loader", duration_s=0.5)
    actuator(ros, "late_loader", "loader", duration_s=0.5, server="load_late", accept_delay_s=1.0)
    actuator(ros, "failing_loader", "loader", duration_s=0.5, server="load_fail", fail=True)
    client = ros.action_client(Load, "/load", timeout=30)
    late = ros.action_client(Load, "/load_late", timeout=30)
    failing = ros.action_client(Load, "/load_fail", timeout=30)

    feedback: list = []
    sent = time.monotonic()
    handle = ros.send_goal(client, Load.Goal(station="A"), feedback)
    assert handle.accepted
    answer = ros.result(handle, timeout=10)
    took = time.monotonic() - sent
    assert answer.status == GoalStatus.STATUS_SUCCEEDED, answer
    assert answer.result.success and "station `A`" in answer.result.message, answer.result
    assert took >= 0.5 and answer.result.duration_s >= 0.5, (took, answer.result)
    progress = [f.progress for f in feedback]
    assert len(progress) >= 3, progress
    assert all(b > a for a, b in zip(progress, progress[1:])), progress
    assert all(0.0 <= p <= 1.0 for p in progress), progress

    sent = time.monotonic()
    handle = ros.send_goal(late, Load.Goal(station="B"))
    answered = time.monotonic() - sent
    assert handle.accepted
    assert answered >= 1.0, answered
    assert ros.result(handle, timeout=10).result.success

    handle = ros.send_goal(failing, Load.Goal(station="C"))
    assert handle.accepted
    answer = ros.result(handle, timeout=10)
    assert answer.status == GoalStatus.STATUS_ABORTED, answer
    assert not answer.result.success and answer.result.message == FAILURE, answer.result
    assert answer.result.duration_s >= 0.5, answer.result


def test_an_occupied_actuator_reports_busy_and_rejects_goals_until_it_frees(ros):
    states = ros.collect(ActuatorState, "/actuator_states", reliable(depth=1000))
    loader = actuator(ros, "loader", "loader", duration_s=0.5)
    client = ros.action_client(Load, "/load", timeout=30)
    ros.wait_until(lambda: any(s.server == "/load" and not s.busy for s in list(states)), 15,
                   "an idle state of /load")
    # One goal first: the server then knows this client's response reader, so the rejection below cannot be
    # lost to discovery (and resent by send_goal once the actuator is free again).
    assert ros.result(ros.send_goal(client, Load.Goal(station="warm-up")), timeout=10).result.success

    refused = ros.call(Occupy, "/loader/occupy", Occupy.Request(duration_s=-1.0))
    assert not refused.success and "duration_s" in refused.message, refused
    seen = len(states)
    answer = ros.call(Occupy, "/loader/occupy", Occupy.Request(duration_s=2.0))
    assert answer.success, answer
    busy = ros.wait_until(lambda: [s for s in list(states)[seen:] if s.busy], 30, "a busy state")[0]
    assert busy.server == "/load"
    assert abs(busy.busy_remaining_s - 2.0) <= 0.3, busy

    rejected = ros.send_goal(client, Load.Goal(station="A"))
    # The actuator refuses it (its log says so). Under load the refusal's answer can still be lost in DDS (rmw
    # drops a reply whose reader it has not matched yet); the harness then sends the goal again once the
    # actuator is free, and that copy is accepted and runs.
    ros.wait_until(lambda: "rejected: busy: occupied for another" in loader.log(), 10, "the refusal in the log")
    if rejected.accepted:  # the copy sent again after the refusal's answer was lost
        assert loader.log().count("accepted") == 2, loader.log()
        assert ros.result(rejected, timeout=10).result.success

    seen = len(states)
    ros.wait_until(lambda: any(not s.busy for s in list(states)[seen:]), 30, "the actuator free again")
    seen = len(states)
    handle = ros.send_goal(client, Load.Goal(station="A"))
    assert handle.accepted
    # While the goal runs the actuator is busy for about its duration.
    running = ros.wait_until(lambda: [s for s in list(states)[seen:] if s.busy], 30, "busy while running")[0]
    assert 0.0 < running.busy_remaining_s <= 0.5 + 0.05, running
    assert ros.result(handle, timeout=10).result.success


def start_navigation(ros):
    params = {
        "scene_file": str(REPO_ROOT / "config/scenes/warehouse.scene"),
        "rule_files": f"{REPO_ROOT / 'config/rules/surface.dl'},{REPO_ROOT / 'config/rules/behaviour.dl'}",
        "mode": "commanded",
        "start_column": 2,
        "start_row": 9,
        "start_yaw_rad": 0.0,
        "time_scale": 1.0,
        "seed": 42,
        # Without the simulator's own stop on silence, only the actuator's zero Twist stops the vehicle.
        "cmd_timeout_secs": 0.0,
    }
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000))
    sim = ros.start(SIM, params=params)
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    actuator(ros, "navigation", "navigation")
    client = ros.action_client(Navigate, "/navigate", timeout=30)
    return sim, truth, client


def route(*points):
    return [Point(x=float(x), y=float(y), z=0.0) for x, y in points]


def test_navigation_follows_the_route_within_its_speed_and_a_cancel_stops_the_vehicle(ros):
    sim, truth, client = start_navigation(ros)
    feedback: list = []
    goal = Navigate.Goal(route=route((4.5, 5.5), (4.5, 2.5), (6.5, 2.5)), speed_mps=0.8)
    first = len(truth)
    handle = ros.send_goal(client, goal, feedback)
    assert handle.accepted
    answer = ros.result(handle, timeout=60)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED, answer
    assert answer.result.success, answer.result
    # The ground truth a second (simulated) after the result: the vehicle stopped at the last waypoint.
    ended = stamp_secs(truth[-1])
    ros.wait_until(lambda: stamp_secs(truth[-1]) >= ended + 1.0, 10, "ground truth after the end", proc=sim)
    last = truth[-1].pose.position
    assert math.dist((last.x, last.y), (6.5, 2.5)) <= 0.3, (last.x, last.y)
    driven = list(truth)[first:]
    measured = speeds(driven)
    top = max(v for _, v in measured)
    assert top <= 0.8 * 1.1, sorted(measured, key=lambda m: -m[1])[:5]
    assert top >= 0.5, top  # it did drive at about the goal's speed
    # The route is 2 + 3 + 2 m from the start at (2.5, 5.5); the last waypoint counts within 0.15 m.
    assert 6.5 <= answer.result.distance_m <= 7.5, answer.result
    assert feedback and all(f.speed_mps <= 0.8 for f in feedback), max(f.speed_mps for f in feedback)
    assert [f.waypoint_index for f in feedback] == sorted(f.waypoint_index for f in feedback)
    assert {f.waypoint_index for f in feedback} == {0, 1, 2}, {f.waypoint_index for f in feedback}
    assert abs(feedback[0].remaining_m - 7.0) < 0.1 and len(feedback[0].remaining_route) == 3, feedback[0]

    # Back along row 12, cancelled once the vehicle drives at speed.
    feedback.clear()
    handle = ros.send_goal(client, Navigate.Goal(route=route((1.5, 2.5)), speed_mps=0.8), feedback)
    assert handle.accepted

    def driving():
        recent = [v for t, v in speeds(list(truth)[-20:])]
        return recent and recent[-1] > 0.5

    ros.wait_until(driving, 30, "the vehicle driving back", proc=sim)
    cancel = ros.cancel(handle)
    assert len(cancel.goals_canceling) == 1, cancel
    cancelled_at = stamp_secs(truth[-1])
    answer = ros.result(handle, timeout=10)
    assert answer.status == GoalStatus.STATUS_CANCELED, answer
    assert not answer.result.success and answer.result.message == "cancelled", answer.result
    ros.wait_until(lambda: stamp_secs(truth[-1]) >= cancelled_at + 1.5, 10, "ground truth after the cancel",
                   proc=sim)
    after = [m for m in list(truth) if stamp_secs(m) >= cancelled_at + 0.5]
    moving = [(round(t - cancelled_at, 2), v) for t, v in speeds(after) if v >= 0.05]
    assert not moving, moving
    # It was still moving at the cancel (so the stop is the actuator's doing).
    before = [m for m in list(truth) if cancelled_at - 0.5 <= stamp_secs(m) <= cancelled_at]
    assert max(v for _, v in speeds(before)) > 0.5


def test_hmi_replies_and_timeouts_bad_goals_and_cancels(ros):
    actuator(ros, "hmi", "hmi")
    actuator(ros, "roller", "roller", duration_s=5.0)
    navigation = actuator(ros, "navigation", "navigation", pose_timeout_s=0.5)  # no simulator: no pose comes
    prompt = ros.action_client(Prompt, "/prompt", timeout=30)
    roll = ros.action_client(Roll, "/roll", timeout=30)
    navigate = ros.action_client(Navigate, "/navigate", timeout=30)
    reply = ros.publisher(String, "/hmi/reply")
    ros.wait_for_matched(reply)

    # The operator answers: the reply is the result.
    feedback: list = []
    handle = ros.send_goal(prompt, Prompt.Goal(prompt="Load pallet 7?", timeout_s=0.0), feedback)
    assert handle.accepted
    ros.wait_for_messages(feedback, 3, what="waited_s feedback")
    reply.publish(String(data="yes"))
    answer = ros.result(handle, timeout=10)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED and answer.result.reply == "yes", answer
    assert [f.waited_s for f in feedback] == sorted(f.waited_s for f in feedback)
    # Nobody answers within the goal's timeout.
    answer = ros.result(ros.send_goal(prompt, Prompt.Goal(prompt="Anyone?", timeout_s=0.5)), timeout=10)
    assert answer.status == GoalStatus.STATUS_ABORTED and not answer.result.success, answer
    assert "timed out" in answer.result.message and "/hmi/reply" in answer.result.message, answer.result

    # Bad goals are rejected in the goal response; the log names the field.
    assert not ros.send_goal(roll, Roll.Goal(station="B", direction=5)).accepted
    assert not ros.send_goal(navigate, Navigate.Goal(route=route((1, 1)), speed_mps=-1.0)).accepted
    assert not ros.send_goal(navigate, Navigate.Goal(route=[], speed_mps=0.5)).accepted
    assert not ros.send_goal(navigate, Navigate.Goal(route=route((1, float("nan"))), speed_mps=0.5)).accepted
    ros.wait_until(lambda: "rejected: route[0] is (1, NaN, 0)" in navigation.log(), 10, "the reason in the log")
    assert "rejected: speed_mps is -1" in navigation.log() and "rejected: route is empty" in navigation.log()
    answer = ros.result(ros.send_goal(navigate, Navigate.Goal(route=route((1, 1)), speed_mps=0.5)), timeout=10)
    assert answer.status == GoalStatus.STATUS_ABORTED and "/ground_truth" in answer.result.message, answer

    # A timed goal cancelled halfway ends canceled, and the actuator takes the next goal.
    feedback = []
    handle = ros.send_goal(roll, Roll.Goal(station="B", direction=1), feedback)
    assert handle.accepted
    ros.wait_until(lambda: feedback and feedback[-1].progress > 0.05, 10, "progress")
    busy = ros.send_goal(roll, Roll.Goal(station="B", direction=1))
    assert not busy.accepted
    assert len(ros.cancel(handle).goals_canceling) == 1
    answer = ros.result(handle, timeout=10)
    assert answer.status == GoalStatus.STATUS_CANCELED and answer.result.message == "cancelled", answer
    assert answer.result.duration_s < 4.0, answer.result
    again = ros.send_goal(roll, Roll.Goal(station="B", direction=-1))
    assert again.accepted
    ros.cancel(again)
