"""Bad run-time parameters are refused with the reason and the value in force stays; a calibrator fed one
pose stamped in the far future keeps calibrating, and `~/reset` forgets every stamp.

Every node checks its parameters against one declarative set of ranges (lockstep_ros::ParamRules), at start
and on every `~/set_parameters`: a refused set answers `successful: false` with
`parameter '<name>' = <value>: must be finite and in [<min>, <max>] <unit>`.
"""

import math

from geometry_msgs.msg import PoseWithCovarianceStamped, TwistStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from std_srvs.srv import Trigger

from lockstep_interfaces.msg import CalibrationStatus
from lockstep_testing.harness import REPO_ROOT, reliable

SIM = "lockstep_sim_node"
CALIBRATOR = "lockstep_calibrator"


def value(v):
    if isinstance(v, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=v)
    if isinstance(v, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=v)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(v))


def set_one(ros, node, name, v, proc):
    request = SetParameters.Request(parameters=[Parameter(name=name, value=value(v))])
    [result] = ros.call(SetParameters, f"/{node}/set_parameters", request).results
    assert proc.alive()
    return result


def get_one(ros, node, name):
    [got] = ros.call(GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=[name])).values
    return {ParameterType.PARAMETER_DOUBLE: got.double_value, ParameterType.PARAMETER_STRING: got.string_value,
            ParameterType.PARAMETER_INTEGER: got.integer_value}.get(got.type)


def assert_refused(ros, node, proc, name, bad, expected_reason):
    before = get_one(ros, node, name)
    result = set_one(ros, node, name, bad, proc)
    assert not result.successful, (name, bad, result)
    assert f"parameter '{name}' = " in result.reason and expected_reason in result.reason, result.reason
    assert get_one(ros, node, name) == before, (name, "the value in force must stay")


def test_the_simulator_refuses_nan_and_out_of_range_parameters_with_the_range(ros, tmp_path):
    sim = ros.start(SIM, params={
        "scene_file": str(REPO_ROOT / "config/scenes/floor.scene"),
        "rule_files": str(REPO_ROOT / "config/rules/surface.dl"),
        "mode": "commanded", "start_column": 60, "start_row": 60, "watch_files": False,
    })
    ros.wait_until(lambda: ros.node.count_publishers("/odom"), 60, "the simulator", proc=sim)
    ros.call(GetParameters, f"/{SIM}/get_parameters", GetParameters.Request(names=["time_scale"]), timeout=60)
    for name, bad, reason in [
        ("time_scale", math.nan, "must be finite and in [0, 10000]"),
        ("time_scale", math.inf, "must be finite and in [0, 10000]"),
        ("time_scale", -1.0, "must be finite and in [0, 10000]"),
        ("nominal_vehicle.track_width_m", math.nan, "must be finite and in [0.01, 10] m"),
        ("true_vehicle.wheel_radius_m", 1e308, "must be finite and in [0.001, 5] m"),
        ("nominal_vehicle.delay_secs", -math.inf, "must be finite and in [0, 10] s"),
        ("min_step_m", math.nan, "must be finite and in [0, 100] m"),
        ("rate_hz", 0.0, "must be finite and in (0, 10000] Hz"),
        ("map_frame", "", "must not be empty"),
    ]:
        assert_refused(ros, SIM, sim, name, bad, reason)
    # A drive script that does not parse is refused in the answer with its file and line (it used to be
    # accepted, then quietly set back to the script in force).
    garbage = tmp_path / "garbage.drive"
    garbage.write_text("not a drive script at all\n")
    result = set_one(ros, SIM, "drive_script", str(garbage), sim)
    assert not result.successful and f"{garbage}:1" in result.reason, result
    assert get_one(ros, SIM, "drive_script") == ""
    # A good value of a run-time parameter is still taken.
    assert set_one(ros, SIM, "time_scale", 2.0, sim).successful
    assert get_one(ros, SIM, "time_scale") == 2.0
    assert sim.alive() and sim.stop() == 0


def test_the_calibrator_refuses_bad_parameters_with_the_range_and_good_ones_with_restart(ros):
    calibrator = ros.start(CALIBRATOR, params={"cmd_vel_stamped": True})
    ros.call(GetParameters, f"/{CALIBRATOR}/get_parameters", GetParameters.Request(names=["window_secs"]),
             timeout=60)
    for name, bad, reason in [
        ("window_secs", math.nan, "must be finite and in [0.1, 3600] s"),
        ("pose_sigma_xy_m", math.inf, "must be finite and in [1e-6, 100] m"),
        ("nominal.wheel_radius_m", math.nan, "must be finite and in [0.001, 5] m"),
        ("threshold2", -1.0, "must be finite and in (0, 1000000]"),
        ("accumulate_windows", 0, "must be an integer in [1, 100000]"),
        ("gate", "loose", "must be one of `fixed`, `best_of_candidates`"),
    ]:
        assert_refused(ros, CALIBRATOR, calibrator, name, bad, reason)
    # It reads its parameters at start: a good value is refused too, saying so, rather than taken and ignored.
    result = set_one(ros, CALIBRATOR, "window_secs", 5.0, calibrator)
    assert not result.successful and "read at start only; restart the node" in result.reason, result
    assert get_one(ros, CALIBRATOR, "window_secs") == 3.0
    assert calibrator.alive() and calibrator.stop() == 0


def test_a_far_future_pose_is_dropped_counted_and_reset_forgets_every_stamp(ros):
    calibrator = ros.start(CALIBRATOR, params={"cmd_vel_stamped": True})
    status = ros.collect(CalibrationStatus, f"/{CALIBRATOR}/status", reliable(depth=1000))
    cmd = ros.publisher(TwistStamped, "/cmd_vel", reliable(depth=1000))
    odom = ros.publisher(Odometry, "/odom", reliable(depth=1000))
    pose = ros.publisher(PoseWithCovarianceStamped, "/slam_pose", reliable(depth=1000))
    for p in (cmd, odom, pose):
        ros.wait_for_matched(p, timeout=60)

    def stamped(msg, t):
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int(round((t % 1) * 1e9))
        return msg

    def feed(t0, t1):
        """A vehicle at rest from t0 to t1 (s): odometry and poses at 10 Hz."""
        for k in range(int(round((t1 - t0) * 10)) + 1):
            t = t0 + 0.1 * k
            for pub, msg in ((odom, Odometry()), (pose, PoseWithCovarianceStamped()), (cmd, TwistStamped())):
                msg = stamped(msg, t)
                if not isinstance(msg, TwistStamped):
                    msg.pose.pose.orientation.w = 1.0
                pub.publish(msg)
        for p in (cmd, odom, pose):
            ros.wait_for_acked(p, proc=calibrator)

    def window_with_poses(after):
        """A status stamped after `after` whose window held the observed poses it needs."""
        for s in list(status):
            t = s.stamp.sec + s.stamp.nanosec * 1e-9
            if t > after and "observed poses and" not in s.reason and s.reason != "no odometry and observed pose yet":
                return s
        return None

    feed(1.0, 4.0)
    far = stamped(PoseWithCovarianceStamped(), 2**31 - 1)
    far.pose.pose.orientation.w = 1.0
    pose.publish(far)
    feed(4.1, 12.0)
    s = ros.wait_until(lambda: window_with_poses(8.0), 60, "a window holding poses after the far-future one",
                       proc=calibrator)
    assert s.pose_out_of_order >= 1, s
    assert "stamped in the far future" in calibrator.log()

    # A restarted data source: stamps from the start again. Without the reset they are out of order;
    # after it they are taken and the calibrator steps on them.
    assert ros.call(Trigger, f"/{CALIBRATOR}/reset", Trigger.Request()).success
    status.clear()
    feed(1.0, 9.0)
    s = ros.wait_until(lambda: window_with_poses(5.0), 60, "a window holding poses after the reset",
                       proc=calibrator)
    assert s.windows_accepted + s.windows_rejected + s.windows_unchanged + s.windows_skipped \
        + s.windows_waiting < 20, s
    assert calibrator.alive() and calibrator.stop() == 0
