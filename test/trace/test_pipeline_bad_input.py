"""Bad input on the example pipeline's modules: m1, m2 and m3 each get NaN, +-inf and huge
numbers on every input (`lockstep_testing.bad_input`), must keep running, must never publish a non-finite number,
must keep computing from their last valid inputs, and must count what they drop in a throttled log line.

The sleeps here only pace rclpy's publishers of valid inputs (`Steady`), on purpose; every wait is on a
condition.
"""

import math
import re
import threading
import time

import pytest

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, PoseArray, PoseStamped, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Range

from lockstep_testing.bad_input import Input, bad_variants, check_bad_input, wait_for_log
from test_pipeline import WAYPOINTS, expected_command, range_msg

DROP_LINE = "invalid input(s) dropped so far"
REPORT_INTERVAL_S = 5.0  # lockstep_examples::validate::DROP_REPORT_INTERVAL


class Steady:
    """Publishes fixed valid messages on some topics every `period_s` from a thread, until stopped (the sleep
    paces the publishers: it is their rate, not a wait)."""

    def __init__(self, ros, messages, period_s=0.05):
        self.publishers = [(ros.publisher(type(msg), topic), msg) for topic, msg in messages]
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for pub, msg in self.publishers:
                pub.publish(msg)
            self._stop.wait(self.period_s)

    def start(self, ros, timeout=20.0):
        for pub, _ in self.publishers:
            ros.wait_until(lambda pub=pub: pub.get_subscription_count() >= 1, timeout,
                           f"a subscriber on {pub.topic_name}")
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)


def drop_lines(proc):
    return [line for line in proc.log().splitlines() if DROP_LINE in line]


def assert_drops_counted_and_throttled(ros, proc, started):
    """The node logged its drops with a running count, at most one line per report interval."""
    wait_for_log(ros, proc, DROP_LINE)
    lines = drop_lines(proc)
    counts = [int(re.search(r"(\d+) " + re.escape(DROP_LINE), line).group(1)) for line in lines]
    assert counts == sorted(counts) and counts[0] >= 1, lines
    elapsed = time.monotonic() - started
    assert len(lines) <= 1 + elapsed / REPORT_INTERVAL_S, (elapsed, lines)


def test_obstacle_fusion_drops_bad_readings_and_fuses_only_valid_ones(ros):
    started = time.monotonic()
    m1 = ros.start("lockstep_module_m1", params={"processing_delay_ms": 0})
    front, rear = range_msg(1.0, 0), range_msg(2.0, 0)
    steady = Steady(ros, [("/scan_front", front), ("/scan_rear", rear)]).start(ros)
    try:
        report = check_bad_input(ros, m1, topics=[(Range, "/scan_front"), (Range, "/scan_rear")],
                                 outputs=[(PoseArray, "/obstacles")])
        # After the flood the steady valid readings fuse again. (The last output right after the flood may
        # still pair a valid reading with the flood's last -inf one, so wait for the pair instead of taking
        # the last message.)
        fused = report.received["/obstacles"]
        ros.wait_until(lambda: [p.position.x for p in fused[-1].poses] == [1.0, -2.0], 10,
                       "the valid pair fused after the flood")
    finally:
        steady.stop()
    assert report.published["/scan_front"] >= 25 and report.published["/scan_rear"] >= 25, report.published
    # Every obstacle comes from a valid reading: the front one at +1 m, the rear one at -2 m. Of the bad readings
    # only +-inf ranges pass (REP 117): +inf leaves its side out, -inf ("too close to measure") is an obstacle at
    # the reading's min_range, 0 in the flood's template. Nothing else: without the checks, a reading with
    # max_range 3.4e38 and range 1e38 would put an obstacle at 1e38.
    received = report.received["/obstacles"]
    assert received
    for msg in received:
        xs = [p.position.x for p in msg.poses]
        assert len(xs) <= 2 and all(x in (1.0, -2.0, 0.0) for x in xs), xs
    assert_drops_counted_and_throttled(ros, m1, started)


def reading(value: float, sec: int) -> Range:
    msg = range_msg(value, 0)
    msg.header.stamp = Time(sec=sec, nanosec=0)
    return msg


def test_obstacle_fusion_fuses_no_bad_reading(ros):
    """One bad reading at a time, each followed by valid ones, so that what m1 fuses is known exactly: a dropped
    reading leaves its side waiting for the next valid one; a reading m1 accepts (only a +-inf range, "no
    return" for +inf, "too close to measure" for -inf) is fused at once: no obstacle on its side for +inf, one
    at the reading's min_range for -inf."""
    m1 = ros.start("lockstep_module_m1", params={"processing_delay_ms": 0})
    obstacles = ros.collect(PoseArray, "/obstacles")
    publishers = {t: ros.publisher(Range, t) for t in ("/scan_front", "/scan_rear")}
    for pub in publishers.values():
        ros.wait_until(lambda pub=pub: pub.get_subscription_count() >= 1, 20,
                       f"m1's subscription to {pub.topic_name}")
    ros.wait_for_topic("/obstacles")
    good_x = {"/scan_front": 1.0, "/scan_rear": -2.0}  # where m1 puts the valid readings below
    template = reading(1.5, 0)  # a detection at 1.5 m: a bad reading m1 used would show

    def expect(stamp_sec, xs):
        ros.wait_until(lambda: any(m.header.stamp.sec == stamp_sec for m in obstacles), 20,
                       f"obstacles stamped {stamp_sec}", proc=m1)
        (msg,) = [m for m in obstacles if m.header.stamp.sec == stamp_sec]
        assert [p.position.x for p in msg.poses] == xs, (stamp_sec, msg.poses)

    # Valid pairs (front stamped 2a+1, rear 2a+2) until m1 fuses one: then m1's side of both links is matched
    # too, so nothing later is lost. Each topic is taken in order, so every earlier reading was taken before.
    # A pair fused with the rear reading of an earlier attempt (stamp 2a+1) leaves the newer rear one waiting:
    # one more front reading uses it, so that the checks below start with no reading waiting.
    for attempt in range(20):
        publishers["/scan_front"].publish(reading(1.0, 2 * attempt + 1))
        publishers["/scan_rear"].publish(reading(2.0, 2 * attempt + 2))
        stamps = (2 * attempt + 1, 2 * attempt + 2)
        try:
            fused = ros.wait_until(
                lambda s=stamps: next((m.header.stamp.sec for m in obstacles if m.header.stamp.sec in s), None),
                1.0, "a pair", proc=m1)
        except TimeoutError:
            continue
        if fused == stamps[0]:
            publishers["/scan_front"].publish(reading(1.0, stamps[1] + 1))
            expect(stamps[1] + 1, [1.0, -2.0])
        break
    else:
        raise TimeoutError("m1 fused none of 20 valid pairs")
    sec = 10_000

    checked = 0
    for bad_topic, other in [("/scan_front", "/scan_rear"), ("/scan_rear", "/scan_front")]:
        for variant in bad_variants(template):
            # The rules of lockstep_examples::validate for this template: only a +-inf range passes.
            others = ("field_of_view", "min_range", "max_range", "variance")
            accepted = math.isinf(variant.range) and all(
                getattr(variant, f) == getattr(template, f) for f in others)
            publishers[bad_topic].publish(variant)
            sec += 1
            publishers[other].publish(reading(abs(good_x[other]), sec))
            if accepted:
                # Fused with the other side's valid reading: nothing on its own side for +inf, an obstacle at
                # min_range for -inf (front first, the rear side negative).
                own = [] if variant.range > 0 else [variant.min_range if bad_topic == "/scan_front"
                                                    else -variant.min_range]
                xs = own + [good_x[other]] if bad_topic == "/scan_front" else [good_x[other]] + own
                expect(sec, [pytest.approx(x) for x in xs])
                sec += 1
                publishers[bad_topic].publish(reading(abs(good_x[bad_topic]), sec))
                sec += 1
                publishers[other].publish(reading(abs(good_x[other]), sec))
            else:
                # Dropped: the other side's reading waits for this side's next valid one.
                sec += 1
                publishers[bad_topic].publish(reading(abs(good_x[bad_topic]), sec))
            expect(sec, [1.0, -2.0])
            checked += 1
    assert checked == 2 * len(bad_variants(template)) >= 50
    assert len(obstacles) == len({m.header.stamp.sec for m in obstacles}), "one output per pair, no other"
    assert m1.alive()


def test_motion_controller_keeps_its_last_valid_inputs(ros):
    started = time.monotonic()
    m2 = ros.start("lockstep_module_m2", params={"rate_hz": 20.0, "processing_delay_ms": 0,
                                                   "modules_traced": False})
    obstacle = Pose()
    obstacle.position.x = 0.7  # in the slow-down zone: the command depends on it
    obstacles = PoseArray(poses=[obstacle])
    goal = PoseStamped()
    goal.pose.position.x, goal.pose.position.y = WAYPOINTS[0]
    odom = Odometry()
    expected = expected_command([0.7], WAYPOINTS[0], odom)
    assert math.isclose(expected[0], 0.25) and expected[1] == 0.0, expected
    commands = ros.collect(Twist, "/cmd_vel")
    # Valid inputs until m2 commands from them, then only bad ones: m2 must go on commanding from the valid ones.
    steady = Steady(ros, [("/obstacles", obstacles), ("/mission", goal), ("/odom", odom)]).start(ros)
    try:
        ros.wait_for_messages(commands, 1, what="a first command")
    finally:
        steady.stop()
    report = check_bad_input(
        ros, m2,
        # A template with one pose: the default PoseArray has no number to spoil.
        topics=[Input(PoseArray, "/obstacles", template=PoseArray(poses=[Pose()])),
                (PoseStamped, "/mission"), (Odometry, "/odom")],
        outputs=[(Twist, "/cmd_vel")])
    # Every command, during and after the flood, is the one computed from the valid inputs. (Without the checks,
    # a NaN goal or pose would stop the robot: a zero command.)
    received = report.received["/cmd_vel"]
    assert len(received) >= 3
    for msg in received:
        got = (msg.linear.x, msg.angular.z)
        assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(got, expected)), (got, expected)
    assert_drops_counted_and_throttled(ros, m2, started)


def test_motion_controller_refuses_unusable_gains_at_start(ros):
    m2 = ros.start("lockstep_module_m2", params={"max_angular_rps": -1.0})
    ros.wait_until(lambda: not m2.alive(), 20, "m2 to refuse a negative max_angular_rps", proc=m2)
    assert m2.popen.returncode != 0
    assert "max_angular_rps" in m2.log(), m2.log()


def test_mission_planner_has_no_input_to_spoil_and_publishes_finite_goals(ros):
    # m3 reads no topic: the check floods nothing and confirms its goals stay finite (and are the waypoints).
    m3 = ros.start("lockstep_module_m3", params={"rate_hz": 20.0, "hold": 1})
    report = check_bad_input(ros, m3, outputs=[(PoseStamped, "/mission")])
    goals = {(g.pose.position.x, g.pose.position.y) for g in report.received["/mission"]}
    assert goals and goals <= set(WAYPOINTS), goals


def test_mission_planner_refuses_unusable_rates_at_start(ros):
    # Its only numeric inputs are parameters, read at start.
    for rate in (-1.0, ".nan", ".inf"):
        bad = ros.start("lockstep_module_m3", name=f"m3_rate_{rate}", params={"rate_hz": rate})
        ros.wait_until(lambda: not bad.alive(), 20, f"m3 to refuse rate_hz {rate}", proc=bad)
        assert bad.popen.returncode != 0 and "rate_hz" in bad.log(), bad.log()
