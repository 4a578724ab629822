"""Black-box tests of the calibrator's `~/predict` service and of its wheel-encoder input
(`wheel_source:=joint_states`), without the simulator: rclpy plays the robot."""

import math

from geometry_msgs.msg import Pose2D
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from calibrator_support import CALIBRATOR, calibrator_params
from lockstep_interfaces.msg import CalibrationStatus
from lockstep_interfaces.srv import PredictMotion
from lockstep_testing.harness import reliable


def predict(ros, **fields):
    # Asked again until answered: a reply can be lost while discovery settles, and a prediction is harmless twice.
    return ros.call(PredictMotion, f"/{CALIBRATOR}/predict", PredictMotion.Request(**fields), timeout=60,
                    retry_every=5.0)


def test_predict_answers_poses_and_refuses_bad_requests_with_the_field(ros):
    calibrator = ros.start(CALIBRATOR, params=calibrator_params())
    answer = predict(ros, start=Pose2D(x=1.0, y=2.0, theta=math.pi / 2), command_v_mps=[0.5, 0.0],
                     command_w_radps=[0.0, 1.0], command_duration_s=[2.0, 1.0], sample_period_s=0.0)
    assert answer.success, answer.message
    assert len(answer.poses) == len(answer.times_s) == 31 and answer.times_s[-1] == 3.0, answer.message
    # Nominal parameters (nothing calibrated yet): 1 m north, then a 1 rad turn in place.
    end = answer.poses[-1]
    assert abs(end.x - 1.0) < 1e-9 and abs(end.y - 3.0) < 1e-9 and abs(end.theta - (math.pi / 2 + 1.0)) < 1e-9, end
    assert answer.wheel_radius_m == 0.05 and answer.track_width_m == 0.40 and answer.delay_secs == 0.0

    for fields, reason in [
        (dict(command_v_mps=[0.1, 0.1], command_w_radps=[0.0, 0.0], command_duration_s=[1.0, -1.0]),
         "command_duration_s[1]: -1.0 is negative"),
        (dict(command_v_mps=[0.1], command_w_radps=[0.0, 0.0], command_duration_s=[1.0]),
         "they have 1, 2 and 1"),
        (dict(command_v_mps=[math.nan], command_w_radps=[0.0], command_duration_s=[1.0]),
         "command_v_mps[0]: NaN is not finite"),
        (dict(command_v_mps=[1e308], command_w_radps=[0.0], command_duration_s=[1.0]),
         "command_v_mps[0]: 1e308 is beyond +-1000"),
        (dict(command_v_mps=[0.1], command_w_radps=[0.0], command_duration_s=[3600.0], sample_period_s=0.001),
         "more than 100000"),
    ]:
        refused = predict(ros, **fields)
        assert not refused.success and not refused.poses, refused
        assert reason.replace("-1.0", "-1") in refused.message, (reason, refused.message)
    # Still running and answering.
    assert predict(ros, command_v_mps=[0.2], command_w_radps=[0.0], command_duration_s=[0.5]).success
    assert calibrator.alive()


def test_joint_states_feed_the_wheels_and_a_message_without_a_wheel_joint_is_named(ros):
    calibrator = ros.start(CALIBRATOR, params=calibrator_params(wheel_source="joint_states"))
    status = ros.collect(CalibrationStatus, f"/{CALIBRATOR}/status", reliable(depth=100))
    joints = ros.publisher(JointState, "/joint_states")
    ros.wait_for_matched(joints, timeout=60)
    ros.wait_for_acked(joints, proc=calibrator)

    def joint_state(t, names, positions):
        m = JointState(name=names, position=positions)
        m.header.stamp.sec, m.header.stamp.nanosec = int(t), int(round((t % 1) * 1e9))
        return m
    joints.publish(joint_state(1.0, ["left_wheel_joint", "right_wheel_joint"], [0.0, 0.0]))
    joints.publish(joint_state(1.1, ["right_wheel_joint", "left_wheel_joint"], [1.0, 1.0]))
    joints.publish(joint_state(1.2, ["left_wheel_joint", "caster"], [2.0, 0.0]))
    ros.wait_for_acked(joints, proc=calibrator)
    ros.wait_until(lambda: "without the position of the wheel joint `right_wheel_joint`" in calibrator.log(), 30,
                   "the warning about the missing joint", proc=calibrator)
    assert "names present: [left_wheel_joint, caster]" in calibrator.log(), calibrator.log()[-2000:]
    # Every message counts as received (odom_received: the wheel stream); the calibrator steps on demand.
    ros.call(Trigger, f"/{CALIBRATOR}/calibrate", Trigger.Request(), timeout=60, retry_every=5.0)
    ros.wait_until(lambda: any(s.odom_received == 3 for s in list(status)), 30, "a status with 3 wheel samples")
    assert calibrator.alive()
