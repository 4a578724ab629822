"""Black-box tests of the calibrator's `~/drive_pattern` action on the simulator: the simulator in commanded
mode with no drive script (only the calibrator drives it) listens on /cmd_vel, where the calibrator both
publishes the pattern's commands and takes them in (`cmd_vel_stamped` false, stamped with the simulated clock:
`use_sim_time`), as on a robot whose base listens on cmd_vel. The vehicle is off nominal (calibrator_support)."""

import math

from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.serialization import deserialize_message

from calibrator_support import CALIBRATOR, SIM, calibrator_params, secs, sim_params
from lockstep_interfaces.action import DrivePattern
from lockstep_testing.harness import reliable

ACTION = f"/{CALIBRATOR}/drive_pattern"
RADIUS_M = 3.0
NAMES = ["wheel_radius_m", "track_width_m", "delay_secs", "centripetal_factor"]


class World:
    """The simulator, the calibrator driving it, and what rclpy sees: commands and the ground truth."""

    def __init__(self, ros):
        self.ros = ros
        self.commands = ros.collect(Twist, "/cmd_vel", reliable(depth=5000))
        self._truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000), raw=True)
        self.sim = ros.start(SIM, params=sim_params("", time_scale=4.0))
        self.calibrator = ros.start(CALIBRATOR, params=calibrator_params(cmd_vel_stamped=False, use_sim_time=True))
        ros.wait_until(lambda: self._truth, 60, "the simulator's ground truth", proc=self.sim)
        self.client = ros.action_client(DrivePattern, ACTION, timeout=60)

    def truth(self) -> list:
        return [deserialize_message(b, PoseStamped) for b in list(self._truth)]

    def sim_secs(self) -> float:
        """The simulated time of the latest ground truth (deserializing only that one)."""
        return secs(deserialize_message(self._truth[-1], PoseStamped).header)

    def send(self, timeout_s: float, feedback: list):
        goal = DrivePattern.Goal(max_radius_m=RADIUS_M, max_speed_mps=0.5, max_turn_rate_radps=0.0,
                                 timeout_s=timeout_s)
        handle = self.ros.send_goal(self.client, goal, feedback, timeout=120)
        assert handle.accepted
        return handle


def farthest_m(truth: list) -> float:
    start = truth[0].pose.position
    return max(math.hypot(m.pose.position.x - start.x, m.pose.position.y - start.y) for m in truth)


def test_the_pattern_drives_within_the_radius_and_ends_with_the_uncertainties(ros):
    world = World(ros)
    feedback: list = []
    handle = world.send(120.0, feedback)
    # 120 s of simulated time at time_scale 4, plus a loaded machine.
    answer = ros.result(handle, timeout=600)
    result = answer.result
    truth = world.truth()
    commands = list(world.commands)
    print(f"drive_pattern: status {answer.status}, {result.message!r}, uncertainty {list(result.uncertainty)}, "
          f"{len(commands)} commands, {len(feedback)} feedback, farthest {farthest_m(truth):.2f} m")

    # The result: success, or the timeout naming each parameter still above its target.
    assert list(result.parameter_names) == NAMES and len(result.uncertainty) == 4, result
    if result.success:
        assert answer.status == GoalStatus.STATUS_SUCCEEDED and "below its target" in result.message, result
    else:
        assert answer.status == GoalStatus.STATUS_ABORTED, answer.status
        assert result.message.startswith("timed out after") and "still above target: " in result.message, result
        named = result.message.split("still above target: ", 1)[1]
        assert any(name in named for name in NAMES), result.message
        assert 119.0 <= result.duration_s <= 130.0, result.duration_s

    # Commands came out, of every kind, and the last one stops the robot.
    assert any(c.linear.x > 0.0 and c.angular.z == 0.0 for c in commands), "no straight run"
    assert any(c.linear.x == 0.0 and c.angular.z != 0.0 for c in commands), "no turn in place"
    levels = {round(abs(c.linear.x * c.angular.z), 3) for c in commands if c.linear.x > 0.0 and c.angular.z != 0.0}
    assert len(levels) >= 2, levels
    assert commands[-1].linear.x == 0.0 and commands[-1].angular.z == 0.0, commands[-1]

    # The robot stayed within the radius of where it started (ground truth).
    assert len(truth) > 100 and farthest_m(truth) < RADIUS_M, farthest_m(truth)
    assert farthest_m(truth) > 0.5, "the robot hardly moved"

    # Feedback at 1 Hz or more (wall time), with the four uncertainties and their targets.
    assert len(feedback) >= 10, len(feedback)
    for f in feedback:
        assert list(f.parameter_names) == NAMES and len(f.uncertainty) == 4 and len(f.target) == 4, f
    phases = {f.phase for f in feedback}
    assert {"turn_left", "straight"} & phases, phases
    # The drive determined the wheel radius before its end.
    assert any(math.isfinite(f.uncertainty[0]) for f in feedback), \
        f"the radius's uncertainty stayed infinite: {[list(f.uncertainty) for f in feedback[-3:]]}"
    assert world.calibrator.alive() and world.sim.alive()


def test_a_cancel_stops_the_robot_and_a_second_goal_is_refused(ros):
    world = World(ros)
    feedback: list = []
    handle = world.send(300.0, feedback)
    ros.wait_until(lambda: any(c.linear.x != 0.0 or c.angular.z != 0.0 for c in list(world.commands)), 60,
                   "the pattern's first command", proc=world.calibrator)

    # A second goal while the first drives: refused with the reason, the first goes on.
    second = world.ros.send_goal(world.client, DrivePattern.Goal(max_radius_m=2.0, max_speed_mps=0.3), timeout=120)
    refused = ros.result(second, timeout=60)
    assert refused.status == GoalStatus.STATUS_ABORTED and not refused.result.success, refused
    assert "another drive_pattern goal is running" in refused.result.message, refused.result.message

    # Drive a while, then cancel.
    t_moving = world.sim_secs()
    ros.wait_until(lambda: world.sim_secs() > t_moving + 10.0, 120, "10 s of driving")
    sent_before = len(world.commands)
    cancel = ros.cancel(handle)
    assert len(cancel.goals_canceling) == 1, cancel
    answer = ros.result(handle, timeout=60)
    assert answer.status == GoalStatus.STATUS_CANCELED and not answer.result.success, answer
    assert answer.result.message.startswith("cancelled after"), answer.result.message

    # A zero command went out, and the robot stands still (ground truth) once the delay has passed.
    ros.wait_until(lambda: any(c.linear.x == 0.0 and c.angular.z == 0.0 for c in list(world.commands)[sent_before:]),
                   30, "a zero command after the cancel")
    t_cancel = world.sim_secs()
    ros.wait_until(lambda: world.sim_secs() > t_cancel + 3.0, 60, "3 s after the cancel")
    later = [m for m in world.truth() if secs(m.header) >= t_cancel + 1.0]
    assert len(later) > 10
    moved = math.hypot(later[-1].pose.position.x - later[0].pose.position.x,
                       later[-1].pose.position.y - later[0].pose.position.y)
    assert moved < 0.005, f"the robot moved {moved:.3f} m after the cancel"
    last = list(world.commands)[-1]
    assert last.linear.x == 0.0 and last.angular.z == 0.0, last
    assert world.calibrator.alive()
