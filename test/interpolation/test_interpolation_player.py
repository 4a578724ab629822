"""lockstep_interpolation_player driven from rclpy as its users drive it: a MovePlay goal, `ros2 service call
/pause` and friends; lockstep_mock_joints stands in for ros2_control and raises the overspeed alarm."""

from __future__ import annotations

import time

from lockstep_interfaces.srv import PauseMotion, ResumeMotion, SetSpeed
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from lockstep_testing.harness import reliable
from player_support import PERIOD, goal, rows, start


def test_a_generated_file_plays_and_the_joints_follow_it_without_alarm(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path)
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    assert handle.accepted
    result = ros.result(handle, timeout=60).result
    assert result.valid, result
    assert result.alarm_count == 0 and not alarms, (result, alarms)
    points = rows(root / "move.csv")
    assert abs(result.points_played - len(points)) <= 2, (result.points_played, len(points))
    assert max(result.peak_acceleration_fraction) <= 1.0 and max(result.peak_acceleration_fraction) > 0.3
    assert result.max_tracking_error < 0.05
    assert {f.state for f in feedback} >= {"playing"}
    ros.wait_until(lambda: states and list(states[-1].position) == points[-1], 30, "the joints at the last point")
    assert player.stop() == 0 and mock.stop() == 0


def test_a_lagging_drive_shows_in_the_tracking_error(ros, tmp_path):
    """The mock as a drive with a 50 ms first-order lag: the result's tracking error is about v * tau (the
    ramp-following error of a first-order lag), where the instant mock's is one tick of motion."""
    root, mock, player, alarms, states, client = start(ros, tmp_path, mock_params={"lag_time_constant_s": 0.05})
    result = ros.result(ros.send_goal(client, goal("move.csv")), timeout=60).result
    # The file peaks at 1.0 rad/s (shoulder) and 0.8 (elbow): v * tau is about 0.05 rad.
    assert 0.02 < result.max_tracking_error < 0.1, result.max_tracking_error
    assert result.alarm_count == 0 and not alarms, alarms
    last = rows(root / "move.csv")[-1]
    ros.wait_until(lambda: states and max(abs(a - b) for a, b in zip(states[-1].position, last)) < 1e-4, 5,
                   "the lagging joints settle on the last point")
    assert player.stop() == 0 and mock.stop() == 0


def test_pause_mid_motion_stops_on_the_path_and_resume_finishes(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path)
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_until(lambda: feedback and feedback[-1].tau_secs > 0.4, 10, "0.4 s into the file")
    too_short = ros.call(PauseMotion, "/pause", PauseMotion.Request(stop_time_secs=0.001))
    assert not too_short.success and "t_min" in too_short.message, too_short
    # Refused at once on the lower bound, without searching for the shortest feasible stop.
    assert too_short.t_min_secs > 0.001 and too_short.t_feasible_secs == 0, too_short
    answer = ros.call(PauseMotion, "/pause", PauseMotion.Request())
    assert answer.success and answer.stop_time_secs > 0, answer
    ros.wait_until(lambda: feedback[-1].state == "paused", answer.stop_time_secs + 2, "paused")
    # The hold point: the file's interpolation at the tau the feedback reports while paused, on the file's path.
    points = rows(root / "move.csv")
    ros.wait_until(lambda: len(feedback) >= 2 and feedback[-1].state == "paused", 30, "feedback while paused")
    tau = feedback[-1].tau_secs
    k = int(tau // PERIOD)
    w = tau / PERIOD - k
    on_path = [(1 - w) * a + w * b for a, b in zip(points[k], points[min(k + 1, len(points) - 1)])]
    # The joints get there (commands still on their way when the feedback said "paused" arrive first)...
    ros.wait_until(lambda: max(abs(h - p) for h, p in zip(states[-1].position, on_path)) < 1e-9, 5,
                   f"the joints at the hold point {on_path} (tau {tau})")
    # ...and stay there: the hold point keeps arriving.
    count = len(states)
    ros.wait_for_messages(states, count + 20, what="joint states while paused")
    moved = [list(s.position) for s in list(states)[count:]
             if max(abs(h - p) for h, p in zip(s.position, on_path)) >= 1e-9]
    assert not moved, ("the joints moved while paused", on_path, moved[:3])
    resumed = ros.call(ResumeMotion, "/resume", ResumeMotion.Request())
    assert resumed.success and resumed.speed_factor == 1.0, resumed
    result = ros.result(handle, timeout=60).result
    assert result.valid and result.alarm_count == 0 and not alarms, (result, alarms)
    assert player.stop() == 0 and mock.stop() == 0


def test_speed_override_and_its_bound(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path)
    duration = (len(rows(root / "move.csv")) - 1) * PERIOD
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_for_messages(feedback, 1, what="the first feedback (the goal is playing)")
    above = ros.call(SetSpeed, "/set_speed", SetSpeed.Request(speed_factor=50.0))
    assert not above.success and "s_max" in above.message and 1.2 < above.s_max < 50, above
    started = time.monotonic()
    faster = ros.call(SetSpeed, "/set_speed", SetSpeed.Request(speed_factor=1.2))
    assert faster.success, faster
    result = ros.result(handle, timeout=60).result
    took = time.monotonic() - started
    assert result.valid and not alarms, (result, alarms)
    assert took < duration, (took, duration)
    assert player.stop() == 0 and mock.stop() == 0


def test_alignment_is_inserted_when_the_joints_are_elsewhere(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path, initial="0.3,-0.2")
    feedback: list = []
    result = ros.result(ros.send_goal(client, goal("move.csv"), feedback), timeout=60).result
    assert result.valid and not alarms, (result, alarms)
    assert feedback and feedback[0].state == "aligning", [f.state for f in feedback[:3]]
    assert "playing" in {f.state for f in feedback}
    assert player.stop() == 0 and mock.stop() == 0


def test_without_alignment_the_first_command_jumps_and_the_hardware_alarms(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path, initial="0.3,-0.2", align=False)
    ros.result(ros.send_goal(client, goal("move.csv")), timeout=60)
    ros.wait_for_messages(alarms, 1, what="the mock's overspeed alarm")
    assert "overspeed alarm 1: joint `shoulder` commanded velocity" in alarms[0].data, alarms[0].data
    assert player.stop() == 0 and mock.stop() == 0


def test_bad_files_and_paths_outside_the_roots_are_refused_and_the_node_keeps_serving(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path)
    (root / "ragged.csv").write_text("# period_s: 0.002\nshoulder,elbow\n0,0\n0,0,0\n")
    (tmp_path / "outside.csv").write_text((root / "move.csv").read_text())
    (root / "link.csv").symlink_to(tmp_path / "outside.csv")
    cases = [
        ("ragged.csv", "ragged.csv:4: 3 values for 2 joints"),
        (str(tmp_path / "outside.csv"), "outside the configured roots"),
        ("../outside.csv", "outside the configured roots"),
        ("link.csv", "outside the configured roots"),
        ("missing.csv", "missing.csv"),
    ]
    for path, expected in cases:
        result = ros.result(ros.send_goal(client, goal(path)), timeout=30).result
        assert not result.valid and expected in result.message, (path, result.message)
    result = ros.result(ros.send_goal(client, goal("move.csv")), timeout=60).result
    assert result.valid, result
    assert player.stop() == 0 and mock.stop() == 0


def test_cancel_stops_along_the_path_like_a_pause(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path)
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_until(lambda: feedback and feedback[-1].tau_secs > 0.5, 10, "0.5 s into the file")
    ros.cancel(handle)
    result = ros.result(handle, timeout=30)
    assert result.status == 5, result.status  # CANCELED
    assert result.result.message.startswith("cancelled") and result.result.valid, result.result
    assert not alarms, alarms
    final = list(states[-1].position)
    assert final != rows(root / "move.csv")[-1], "it stopped before the end"
    assert player.stop() == 0 and mock.stop() == 0


def test_trajectory_output_in_the_controllers_joint_order(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path, output="trajectory",
                                                       controller_joints="elbow,shoulder")
    # Raw and deep, deserialized after the fact, so rclpy keeps up.
    received, subscription = ros.subscribe(JointTrajectory, "/forward_position_controller/joint_trajectory",
                                           reliable(depth=5000), raw=True)
    forward = ros.collect(Float64MultiArray, "/forward_position_controller/commands")
    ros.wait_for_publishers(subscription)
    result = ros.result(ros.send_goal(client, goal("move.csv")), timeout=60).result
    assert result.valid, result
    points = rows(root / "move.csv")
    last = [points[-1][1], points[-1][0]]

    def last_received():
        return list(deserialize_message(received[-1][0], JointTrajectory).points[-1].positions) if received else None
    try:
        ros.wait_until(lambda: last_received() == last, 30, "the last point as a JointTrajectory")
    except TimeoutError as e:
        raise AssertionError(f"{e}: {len(received)} received, the last {last_received()}, expected {last}") from None
    sent = [deserialize_message(m, JointTrajectory) for m, _ in list(received)]
    assert not forward, "nothing on the forward controller's topic"
    # Windows of trajectory_window_points (default 50) future commands (test_player_outputs.py drives a JTC).
    assert all(list(m.joint_names) == ["elbow", "shoulder"] and len(m.points) == 50 for m in sent)
    # Each window's first command, swapped back to the file's order, is on the file's path, in order; the last
    # window ends on its last point.
    commanded = [list(reversed(m.points[0].positions)) for m in sent] + [last[::-1]]
    assert commanded[-1] == points[-1], (commanded[-1], points[-1])
    k = 0
    for n, c in enumerate(commanded):
        while k + 1 < len(points) and distance_to_segment(c, points[k], points[k + 1]) > 1e-9:
            k += 1
        assert k + 1 < len(points), f"command {n} {c} is not on the path after point {k}"
    assert player.stop() == 0 and mock.stop() == 0


def distance_to_segment(c: list[float], a: list[float], b: list[float]) -> float:
    """Distance from c to the segment a-b."""
    ab = [y - x for x, y in zip(a, b)]
    length2 = sum(d * d for d in ab)
    w = 0.0 if length2 == 0 else max(0.0, min(1.0, sum((ci - ai) * d for ci, ai, d in zip(c, a, ab)) / length2))
    return max(abs(ci - (ai + w * d)) for ci, ai, d in zip(c, a, ab))
