"""The player as a joint_trajectory_controller (mode:=trajectory_controller, the node named
joint_trajectory_controller): rclpy sends control_msgs/FollowJointTrajectory goals as MoveIt would, publishes
SpeedScalingFactor on ~/speed_scaling_input, and reads ~/controller_state; lockstep_mock_joints stands in for
the hardware and raises its overspeed alarm whenever a command steps over a velocity, acceleration or jerk
limit."""

from __future__ import annotations

import time

from builtin_interfaces.msg import Duration, Time
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance, JointTrajectoryControllerState, SpeedScalingFactor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from player_support import PERIOD

JOINTS = [f"joint_{i}" for i in range(1, 7)]
LIMITS = "joint_limits:\n" + "".join(
    f"  {j}: {{max_velocity: 2.0, max_acceleration: 8.0, max_jerk: 80.0}}\n" for j in JOINTS)
NODE = "/joint_trajectory_controller"
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP = 0, -1, -2, -3
PATH_TOLERANCE_VIOLATED = -4


def start(ros, tmp_path, mock_params: dict | None = None, **player_params):
    """The mock joints and the player in trajectory-controller mode; (mock, player, alarms, FJT client)."""
    limits = tmp_path / "limits.yaml"
    limits.write_text(LIMITS)
    mock = ros.start("lockstep_mock_joints", params={
        "joints": ",".join(JOINTS), "limits_file": str(limits), "command_period_s": PERIOD,
        **(mock_params or {})})
    player = ros.start("lockstep_interpolation_player", remaps={"__node": "joint_trajectory_controller"}, params={
        "mode": "trajectory_controller", "controller_joints": ",".join(JOINTS), "limits_file": str(limits),
        "period_s": PERIOD, **player_params})
    alarms = ros.collect(String, "/lockstep_mock_joints/alarm")
    states = ros.collect(JointState, "/joint_states")
    ros.wait_for_messages(states, 1, what="/joint_states from the mock")
    client = ros.action_client(FollowJointTrajectory, f"{NODE}/follow_joint_trajectory")
    return mock, player, alarms, client


def duration(secs: float) -> Duration:
    return Duration(sec=int(secs), nanosec=int(round((secs - int(secs)) * 1e9)))


def trajectory(points: list[tuple[float, list[float]]], names: list[str] | None = None) -> JointTrajectory:
    """Points (time_from_start, positions), positions only, as a script would write them."""
    t = JointTrajectory(joint_names=names or JOINTS)
    t.points = [JointTrajectoryPoint(positions=[float(x) for x in p], time_from_start=duration(s))
                for s, p in points]
    return t


def fjt_goal(traj: JointTrajectory, path: float = 0.0, goal: float = 0.0, goal_time: float = 0.0):
    g = FollowJointTrajectory.Goal(trajectory=traj, goal_time_tolerance=duration(goal_time))
    if path:
        g.path_tolerance = [JointTolerance(name=j, position=path) for j in JOINTS]
    if goal:
        g.goal_tolerance = [JointTolerance(name=j, position=goal) for j in JOINTS]
    return g


def spread(scale: float) -> list[float]:
    return [scale * (0.5 + 0.1 * i) * (-1) ** i for i in range(6)]


def result_of(ros, handle, timeout=60.0):
    assert handle.accepted
    return ros.result(handle, timeout=timeout).result


def test_a_six_joint_goal_with_tolerances_succeeds_on_its_last_point(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path)
    states = ros.collect(JointState, "/joint_states")
    controller_states = ros.collect(JointTrajectoryControllerState, f"{NODE}/controller_state")
    feedback: list = []
    last = spread(0.6)
    handle = ros.send_goal(client, fjt_goal(trajectory([(1.0, spread(0.3)), (2.0, spread(0.8)), (3.0, last)]),
                                            path=0.1, goal=0.005, goal_time=1.0), feedback)
    result = result_of(ros, handle)
    assert result.error_code == SUCCESSFUL, result
    end = states[-1]
    for name, target in zip(JOINTS, last):
        assert abs(end.position[end.name.index(name)] - target) <= 0.005, (name, end.position, last)
    assert not alarms, [a.data for a in alarms]
    # Feedback as a joint_trajectory_controller gives it: desired with velocity and acceleration, actual, error.
    assert feedback and feedback[-1].joint_names == JOINTS
    moving = [f for f in feedback if any(abs(v) > 0.1 for v in f.desired.velocities)]
    assert moving and len(moving[0].actual.positions) == 6 and len(moving[0].error.positions) == 6
    assert controller_states and controller_states[-1].joint_names == JOINTS
    assert max(s.speed_scaling_factor for s in controller_states) == 1.0
    assert player.stop() == 0 and mock.stop() == 0


def test_bad_goals_end_with_their_standard_code_and_a_message_naming_the_joint_or_point(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path)
    unknown = trajectory([(1.0, spread(0.3))], names=JOINTS[:5] + ["gripper"])
    backwards = trajectory([(1.0, spread(0.1)), (2.0, spread(0.2)), (1.5, spread(0.3))])
    too_fast = trajectory([(1.0, spread(0.1)), (1.1, [0.1, -0.12, 0.14, -0.16, 1.5, -0.2])])
    old = trajectory([(1.0, spread(0.1))])
    old.header.stamp = Time(sec=int(time.time()) - 60)
    cases = [
        (unknown, INVALID_JOINTS, "joint `gripper`"),
        (backwards, INVALID_GOAL, "point 2: time_from_start 1.5 s is not after point 1"),
        (too_fast, INVALID_GOAL, "joint `joint_5` would need"),
        (old, OLD_HEADER_TIMESTAMP, "before now"),
    ]
    for traj, code, words in cases:
        result = result_of(ros, ros.send_goal(client, fjt_goal(traj)))
        assert result.error_code == code and words in result.error_string, (code, words, result)
    assert "point 0 (1 s) and point 1 (1.1 s)" in result_of(
        ros, ros.send_goal(client, fjt_goal(too_fast))).error_string
    # The node keeps serving: the next goal plays.
    result = result_of(ros, ros.send_goal(client, fjt_goal(trajectory([(1.0, spread(0.2))]))))
    assert result.error_code == SUCCESSFUL, result
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_a_new_goal_mid_motion_takes_over_without_a_step(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path)
    feedback: list = []
    first = ros.send_goal(client, fjt_goal(trajectory([(1.5, spread(0.6)), (3.0, spread(-0.4))])), feedback)
    ros.wait_until(lambda: any(any(abs(v) > 0.3 for v in f.desired.velocities) for f in feedback[-1:]), 20,
                   "the first goal moving fast")
    second = ros.send_goal(client, fjt_goal(trajectory([(1.0, spread(-0.2)), (2.0, spread(0.1))])))
    old = result_of(ros, first)
    assert old.error_code == INVALID_GOAL and "preempted" in old.error_string, old
    assert result_of(ros, second).error_code == SUCCESSFUL
    # The mock checks every command's velocity, acceleration and jerk against the limits.
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_speed_scaling_ramps_to_each_factor_within_the_limits(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path)
    controller_states = ros.collect(JointTrajectoryControllerState, f"{NODE}/controller_state")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    scaling = ros.publisher(SpeedScalingFactor, f"{NODE}/speed_scaling_input", latched)
    ros.wait_for_subscriber(f"{NODE}/speed_scaling_input")
    points = [(1.5 * (k + 1), spread(0.3 if k % 2 == 0 else -0.3)) for k in range(6)] + [(10.5, spread(0.0))]
    handle = ros.send_goal(client, fjt_goal(trajectory(points)))
    applied = lambda: controller_states[-1].speed_scaling_factor if controller_states else None  # noqa: E731
    ros.wait_until(lambda: applied() == 1.0, 20, "the goal playing at 1")
    for factor in (0.3, 0.0, 1.0):
        scaling.publish(SpeedScalingFactor(factor=factor))
        ros.wait_until(lambda: abs(applied() - factor) < 1e-9, 20, f"speed scaling at {factor}")
        if factor == 0.0:
            # Paused within the limits: the commands hold still.
            held = len(controller_states)
            ros.wait_for_messages(controller_states, held + 50, what="controller states while paused")
            outputs = {tuple(s.output.positions) for s in controller_states[held:]}
            assert len(outputs) == 1, len(outputs)
    # The factor was approached, not jumped to: values between 1 and 0.3 were applied on the way.
    seen = [s.speed_scaling_factor for s in controller_states]
    assert any(0.35 < f < 0.95 for f in seen), sorted(set(round(f, 2) for f in seen))
    assert result_of(ros, handle, timeout=90).error_code == SUCCESSFUL
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_a_lagging_drive_breaks_the_path_tolerance_and_stops_within_the_limits(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path, mock_params={"lag_time_constant_s": 0.2})
    handle = ros.send_goal(client, fjt_goal(trajectory([(1.0, spread(0.8)), (2.0, spread(0.0))]), path=0.05))
    result = result_of(ros, handle)
    assert result.error_code == PATH_TOLERANCE_VIOLATED, result
    assert "path tolerance" in result.error_string and "joint `" in result.error_string, result
    # The stop after the abort is planned like a cancel: no alarm from the hardware.
    ros.wait_until(lambda: "stopped after the abort" in player.log(), 30, "the stop after the abort")
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_cancel_stops_along_the_path_within_the_limits(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path)
    feedback: list = []
    handle = ros.send_goal(client, fjt_goal(trajectory([(1.5, spread(0.8)), (3.0, spread(0.0))])), feedback)
    ros.wait_until(lambda: any(any(abs(v) > 0.3 for v in f.desired.velocities) for f in feedback[-1:]), 20,
                   "the goal moving fast")
    assert ros.cancel(handle).return_code == 0
    from action_msgs.msg import GoalStatus
    assert ros.result(handle, timeout=30).status == GoalStatus.STATUS_CANCELED
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_a_joint_trajectory_message_plays_and_pause_resume_act_on_a_goal(ros, tmp_path):
    from lockstep_interfaces.srv import PauseMotion, ResumeMotion

    mock, player, alarms, client = start(ros, tmp_path)
    states = ros.collect(JointState, "/joint_states")
    topic = ros.publisher(JointTrajectory, f"{NODE}/joint_trajectory")
    ros.wait_for_subscriber(f"{NODE}/joint_trajectory")
    ros.wait_for_matched(topic)
    target = spread(0.4)

    def at(positions) -> bool:
        if not states:
            return False
        last = states[-1]
        return all(abs(last.position[last.name.index(j)] - p) < 1e-3 for j, p in zip(JOINTS, positions))

    topic.publish(trajectory([(1.0, target)]))
    ros.wait_until(lambda: at(target), 30, "the joints on the topic trajectory's last point")
    # The player's pause and resume services act on a FollowJointTrajectory goal too.
    controller_states = ros.collect(JointTrajectoryControllerState, f"{NODE}/controller_state")
    feedback: list = []
    handle = ros.send_goal(client, fjt_goal(trajectory([(2.0, spread(-0.4)), (3.0, spread(0.0))])), feedback)
    ros.wait_until(lambda: any(any(abs(v) > 0.2 for v in f.desired.velocities) for f in feedback[-1:]), 20,
                   "the goal moving")
    assert ros.call(PauseMotion, "/pause", PauseMotion.Request()).success
    ros.wait_until(lambda: controller_states and controller_states[-1].speed_scaling_factor == 0.0, 20, "paused")
    assert ros.call(ResumeMotion, "/resume", ResumeMotion.Request(speed_factor=1.0)).success
    assert result_of(ros, handle).error_code == SUCCESSFUL
    assert at(spread(0.0)) or ros.wait_until(lambda: at(spread(0.0)), 10, "the joints on the last point")
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0


def test_a_drive_too_slow_to_settle_in_the_goal_time_breaks_the_goal_tolerance(ros, tmp_path):
    mock, player, alarms, client = start(ros, tmp_path, mock_params={"lag_time_constant_s": 0.3})
    traj = trajectory([(1.0, spread(0.5))])
    result = result_of(ros, ros.send_goal(client, fjt_goal(traj, goal=0.001, goal_time=0.05)))
    assert result.error_code == -5, result  # GOAL_TOLERANCE_VIOLATED
    assert "goal_time_tolerance exceeding by" in result.error_string and "goal tolerance 0.001" in \
        result.error_string, result
    # With no goal time tolerance the same goal waits for the drive to settle, as a joint_trajectory_controller.
    result = result_of(ros, ros.send_goal(client, fjt_goal(trajectory([(1.0, spread(0.0))]), goal=0.001)))
    assert result.error_code == SUCCESSFUL, result
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0
