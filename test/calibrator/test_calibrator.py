"""Black-box tests of the calibrator node `lockstep_calibrator` against the simulator over DDS:
the simulator's vehicle is off nominal (radius +5 %, track -4 %, delay 80 ms, beta 0.3, SLAM noise 2 cm and
0.5 deg, pinned in calibrator_support.py) and drives a script in simulated time; rclpy watches both."""

import math
import re

from geometry_msgs.msg import PoseWithCovarianceStamped, TwistStamped
from nav_msgs.msg import Odometry
from std_srvs.srv import Trigger

from calibrator_support import (CALIBRATOR, DRIVES, NOMINAL, SIM, TRUE, Outputs, drift_m, get_doubles,
                                stamp_secs,
                                set_params, sim_params, start_calibrator)
from lockstep_interfaces.msg import CalibrationStatus
from lockstep_testing.harness import reliable

FIGURE_EIGHT_SECS = 60.0
MIXED_SECS = 150.0


def wait_sim(ros, out, t, proc, what):
    ros.wait_until(lambda: out.sim_secs() >= t, 4 * t + 60, f"{what} (simulated t >= {t:.0f} s)", proc=proc)


def test_calibration_pushed_to_the_simulator_cuts_odometry_drift_fivefold(ros):
    """A 60 s figure-eight on nominal parameters; then a mixed drive with the calibrator pushing what it
    accepts into the simulator's nominal_vehicle; then the same figure-eight again."""
    out = Outputs(ros)
    sim = ros.start(SIM, params=sim_params("figure_eight.drive"))
    wait_sim(ros, out, FIGURE_EIGHT_SECS + 0.5, sim, "the first figure-eight")
    drift_m(out.odom, out.truth, 0.0, FIGURE_EIGHT_SECS)  # enough pairs (compared below, over equal spans)

    calibrator = start_calibrator(ros, push_node=f"/{SIM}")
    ros.wait_until(lambda: ros.node.count_publishers("/cmd_vel_out") and out.results, 20,
                   "the calibrator's nominal parameters", proc=calibrator)
    assert not out.results[-1].accepted and out.results[-1].wheel_radius_m == NOMINAL["wheel_radius_m"]
    set_params(ros, SIM, {"drive_script": str(DRIVES / "mixed.drive")})
    t_mixed = out.sim_secs()
    wait_sim(ros, out, t_mixed + MIXED_SECS, sim, "the mixed drive")

    accepted = out.accepted()
    assert accepted, [s.reason for s in list(out.status)[-10:]]
    last = accepted[-1]
    log = "\n".join(f"{r.wheel_radius_m:.5f} {r.track_width_m:.5f} {r.delay_secs:.3f} {r.centripetal_factor:.3f}"
                    for r in accepted)
    # The target tolerance: radius and track width within 0.5 %, delay within 10 ms.
    assert abs(last.wheel_radius_m / TRUE["wheel_radius_m"] - 1) < 0.005, log
    assert abs(last.track_width_m / TRUE["track_width_m"] - 1) < 0.005, log
    assert abs(last.delay_secs - TRUE["delay_secs"]) <= 0.010, log
    assert last.centripetal_factor_std > 0.0 and last.wheel_radius_std_m > 0.0, last
    assert all(s.passed for s in last.validation) and len(last.validation) == 2, last.validation
    # The push took effect in the simulator, not only answered: its parameters are the calibrated ones...
    assert last.pushed, last.push_result
    radius, track = get_doubles(ros, SIM, ["nominal_vehicle.wheel_radius_m", "nominal_vehicle.track_width_m"])
    assert any(abs(radius - r.wheel_radius_m) < 1e-12 and abs(track - r.track_width_m) < 1e-12
               for r in accepted if r.pushed), (radius, track)
    assert "nominal_vehicle is now" in sim.log()

    # ...and its odometry follows them: the same figure-eight drifts at least five times less.
    set_params(ros, SIM, {"drive_script": str(DRIVES / "figure_eight.drive")})
    t_eight = out.sim_secs()
    wait_sim(ros, out, t_eight + FIGURE_EIGHT_SECS + 0.5, sim, "the second figure-eight")
    odom, truth = out.odom, out.truth  # deserialized once
    after, span = drift_m(odom, truth, t_eight + 0.1, t_eight + FIGURE_EIGHT_SECS)
    before, _ = drift_m(odom, truth, 0.0, min(span, FIGURE_EIGHT_SECS))
    print(f"odometry drift over {span:.1f} s of a figure-eight: {before:.3f} m on nominal, {after:.3f} m "
          f"calibrated; "
          f"accepted {last.wheel_radius_m:.5f} m, {last.track_width_m:.5f} m, {last.delay_secs:.3f} s, "
          f"beta {last.centripetal_factor:.3f} +- {last.centripetal_factor_std:.3f}")
    assert after * 5 <= before, (before, after)
    assert calibrator.stop() == 0 and sim.stop() == 0


def test_standing_still_changes_nothing_and_straight_driving_refuses_track_and_beta(ros):
    out = Outputs(ros)
    sim = ros.start(SIM, params=sim_params("", time_scale=8.0))
    calibrator = start_calibrator(ros)
    ros.wait_until(lambda: len(out.status) >= 30, 60, "30 steps standing still", proc=calibrator)
    still = list(out.status)
    assert not out.accepted() and all(s.outcome in ("waiting", "unchanged") for s in still), \
        [(s.outcome, s.reason) for s in still]
    assert any(s.outcome == "unchanged" for s in still), [(s.outcome, s.reason) for s in still]
    # Every parameter is still nominal: the reason names the driving that would determine each.
    reason = next(s.reason for s in reversed(still) if s.outcome == "unchanged")
    for needs in ("wheel radius: needs straight runs of at least 0.3 m", "track width: needs turns in place",
                  "delay: needs command steps", "centripetal factor (beta): needs turns of at least 0.5 rad"):
        assert needs in reason, (needs, reason)

    set_params(ros, SIM, {"drive_script": str(DRIVES / "straight.drive")})
    t0 = out.sim_secs()
    wait_sim(ros, out, t0 + 40.0, sim, "40 s of straight driving")
    driving = [s for s in list(out.status) if stamp_secs(s.stamp) > t0 + 5.0]
    refusals = [r for s in driving for r in s.refused]
    assert any("track width" in r for r in refusals), refusals
    assert any("beta" in r for r in refusals), refusals
    for r in out.accepted():
        assert r.track_width_m == NOMINAL["track_width_m"] and r.centripetal_factor == 0.0, r
    last = driving[-1].reason
    assert "still nominal: " in last and "track width: needs turns in place of at least 0.5 rad" in last, last
    assert calibrator.stop() == 0 and sim.stop() == 0


def test_nan_out_of_order_and_missing_inputs_are_counted_never_a_crash(ros):
    calibrator = start_calibrator(ros)
    status = ros.collect(CalibrationStatus, f"/{CALIBRATOR}/status", reliable(depth=100))
    # Nothing yet: calibrating now says what is missing. (Asked again until answered: on a loaded machine the
    # first request can go out before the server's reader matched; asking twice changes nothing here.)
    answer = ros.call(Trigger, f"/{CALIBRATOR}/calibrate", Trigger.Request(), timeout=60, retry_every=5.0)
    assert not answer.success and "no odometry and observed pose yet" in answer.message, answer
    cmd = ros.publisher(TwistStamped, "/cmd_vel_out")
    odom = ros.publisher(Odometry, "/odom")
    pose = ros.publisher(PoseWithCovarianceStamped, "/slam_pose")
    for p in (cmd, odom, pose):
        ros.wait_for_matched(p)

    def stamped(msg, t):
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int(round((t % 1) * 1e9))
        return msg
    for t in (1.0, 2.0, 1.5):  # the last is out of order
        odom.publish(stamped(Odometry(), t))
        pose.publish(stamped(PoseWithCovarianceStamped(), t))
        cmd.publish(stamped(TwistStamped(), t))
    bad = stamped(Odometry(), 3.0)
    bad.pose.pose.position.x = math.nan
    odom.publish(bad)
    bad = stamped(PoseWithCovarianceStamped(), 3.0)
    bad.pose.pose.orientation.z = math.inf
    pose.publish(bad)
    bad = stamped(TwistStamped(), 3.0)
    bad.twist.angular.z = math.nan
    cmd.publish(bad)

    def counted():
        ros.call(Trigger, f"/{CALIBRATOR}/calibrate", Trigger.Request(), timeout=60, retry_every=5.0)
        s = status[-1] if status else None
        return s and (s.odom_received, s.pose_received, s.cmd_vel_received) == (4, 4, 4) and s
    s = ros.wait_until(counted, 20, "the inputs counted", proc=calibrator)
    assert (s.odom_out_of_order, s.pose_out_of_order, s.cmd_vel_out_of_order) == (1, 1, 1), s
    assert (s.odom_not_finite, s.pose_not_finite, s.cmd_vel_not_finite) == (1, 1, 1), s
    assert s.outcome == "waiting", s
    # Still serving: reset answers, and the process exits cleanly.
    assert ros.call(Trigger, f"/{CALIBRATOR}/reset", Trigger.Request()).success
    assert calibrator.alive() and calibrator.stop() == 0


STEP_AT_SECS = 90.0
STEP_ACCEPTED_WITHIN_SECS = 30.0


def test_a_three_percent_radius_step_is_accepted_within_30_s(ros):
    """The mixed drive for 90 s, then the true wheel radius grows by 3 % (a new tyre, a new load): the calibrator
    accepts the new radius, within 1 % of it, within 30 s of simulated time, and never accepts a radius from the
    old vehicle after that."""
    out = Outputs(ros)
    sim = ros.start(SIM, params=sim_params("mixed.drive", time_scale=8.0))
    calibrator = start_calibrator(ros)
    wait_sim(ros, out, STEP_AT_SECS, sim, "the mixed drive before the step")
    old = out.accepted()
    assert old and abs(old[-1].wheel_radius_m / TRUE["wheel_radius_m"] - 1) < 0.01, old[-1:]
    stepped = TRUE["wheel_radius_m"] * 1.03
    set_params(ros, SIM, {"true_vehicle.wheel_radius_m": stepped})
    # The simulated time of the step, as the simulator logs it (what rclpy has seen of the 1,600 messages per
    # second at time_scale 8 can lag it by tens of simulated seconds).
    changed = ros.wait_until(lambda: re.search(r"t=([0-9.]+) s: true_vehicle is now", sim.log()), 10,
                             "the simulator to log the new true vehicle", proc=sim)
    t_step = float(changed.group(1))
    wait_sim(ros, out, t_step + STEP_ACCEPTED_WITHIN_SECS + 5.0, sim, "the drive after the step")

    after = [r for r in out.accepted() if stamp_secs(r.stamp) > t_step]
    log = [(round(stamp_secs(r.stamp) - t_step, 1), round(r.wheel_radius_m, 5)) for r in after]
    steps = [f"{stamp_secs(s.stamp) - t_step:.0f} {s.outcome}: {s.reason[:90]}" for s in list(out.status)
             if t_step < stamp_secs(s.stamp) < t_step + STEP_ACCEPTED_WITHIN_SECS]
    log = f"{log}\n" + "\n".join(steps)
    new = [r for r in after if abs(r.wheel_radius_m / stepped - 1) < 0.01]
    assert new, log
    took = stamp_secs(new[0].stamp) - t_step
    print(f"a +3 % radius step was accepted {took:.1f} s after it: {log}")
    assert took <= STEP_ACCEPTED_WITHIN_SECS, log
    # Once the new radius is in, nothing drags it back to the old one.
    later = [r for r in after if stamp_secs(r.stamp) >= stamp_secs(new[0].stamp)]
    assert all(abs(r.wheel_radius_m / stepped - 1) < 0.01 for r in later), log
    assert calibrator.stop() == 0 and sim.stop() == 0
