"""Jerk limits: with max_jerk in the joint limits the player interpolates
with a cubic spline (interpolation:=auto) and plans every change of s as an S-curve; the mock checks each
command's finite-difference jerk and raises the overspeed alarm over the limit."""

from __future__ import annotations

import random

from lockstep_interfaces.srv import PauseMotion, ResumeMotion, SetSpeed

from player_support import goal, start

# Played at these limits; generated at half of them (so s_max is above 1 and changes have room).
JERK_LIMITS = """joint_limits:
  shoulder: {max_velocity: 2.0, max_acceleration: 8.0, max_jerk: 60.0}
  elbow: {max_velocity: 1.6, max_acceleration: 6.0, max_jerk: 40.0}
"""
JERK_PLANNED = """joint_limits:
  shoulder: {max_velocity: 1.0, max_acceleration: 4.0, max_jerk: 30.0}
  elbow: {max_velocity: 0.8, max_acceleration: 3.0, max_jerk: 20.0}
"""
# Back and forth through fifteen waypoints: about 14 s at speed 1, so 20 requests fit even when rclpy is slow.
LONG_WAYPOINTS = ("shoulder,elbow\n0,0\n0.8,-0.5\n0.2,0.4\n0.9,0.1\n-0.3,-0.6\n0.5,0.5\n0.0,-0.2\n0.6,0.3\n"
                  "-0.2,0.6\n0.7,-0.4\n0.1,0.2\n0.8,0.5\n-0.4,-0.3\n0.3,0.4\n0,0\n")
FILES = {"limits": JERK_LIMITS, "planned": JERK_PLANNED, "waypoints": LONG_WAYPOINTS}


def test_no_jerk_alarm_through_20_random_pause_resume_and_speed_changes(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path, files=FILES)
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_until(lambda: feedback and feedback[-1].state == "playing", 10, "playing")
    rng = random.Random(12)
    answers = []
    for _ in range(20):
        # Somewhere 60-300 ms after the last request (by the player's own feedback, every 50 ms).
        seen = len(feedback)
        ros.wait_for_messages(feedback, seen + rng.randint(1, 6), what="feedback between two requests")
        assert feedback[-1].state != "done", f"the file ended after {len(answers)} requests: {answers}"
        # What a user would ask in that state (so most of the run is at a changing or fractional s).
        paused = feedback[-1].state in ("paused", "pausing")
        kind = rng.choice(["resume" if paused else "pause", "speed"])
        if kind == "pause":
            answer = ros.call(PauseMotion, "/pause", PauseMotion.Request())
        elif kind == "resume":
            answer = ros.call(ResumeMotion, "/resume", ResumeMotion.Request(speed_factor=rng.uniform(0.3, 1.0)))
        else:
            answer = ros.call(SetSpeed, "/set_speed", SetSpeed.Request(speed_factor=rng.uniform(0.3, 1.0)))
        answers.append((kind, answer.success, answer.message))
    accepted = [a for a in answers if a[1]]
    assert len(answers) == 20 and len(accepted) >= 15, answers
    # The ones refused are a resume while playing, a pause while paused or a factor above s_max; never a ramp.
    assert all(any(k in m for k in ("not paused", "already paused", "above s_max")) for _, ok, m in answers if not ok), \
        answers
    # Play to the end: resume if the player is paused (its own state: feedback may predate the last request).
    last = ros.call(ResumeMotion, "/resume", ResumeMotion.Request(speed_factor=1.0))
    assert last.success or "not paused" in last.message, last
    result = ros.result(handle, timeout=120).result
    assert result.valid and result.alarm_count == 0 and not alarms, (result, [a.data for a in alarms])
    # The jerk was measured and used: at most the limit, and not far below it.
    assert 0.3 < max(result.peak_jerk_fraction) <= 1.0 + 1e-6, result.peak_jerk_fraction  # `valid`'s slack
    assert player.stop() == 0 and mock.stop() == 0


def test_linear_interpolation_with_jerk_limits_is_refused_with_the_reason(ros, tmp_path):
    root, mock, player, alarms, states, client = start(ros, tmp_path, files=FILES, interpolation="linear")
    result = ros.result(ros.send_goal(client, goal("move.csv")), timeout=30).result
    assert not result.valid, result
    assert "joint `shoulder` has a jerk limit" in result.message and "`cubic` or `auto`" in result.message, \
        result.message
    assert player.stop() == 0 and mock.stop() == 0
