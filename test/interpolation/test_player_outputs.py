"""The interpolation player's outputs as a real setup uses them: `output:=trajectory` feeding a
joint_trajectory_controller (an rclpy stand-in that interpolates each window the way JTC does), and two arms
side by side in namespaces /arm1 and /arm2."""

from __future__ import annotations

import bisect
import time

from lockstep_interfaces.action import MovePlay
from lockstep_interfaces.srv import PauseMotion, ResumeMotion
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from lockstep_testing.harness import reliable
from player_support import JOINTS, PERIOD, goal, rows, setup_files

LIMITS = {"shoulder": (2.0, 8.0), "elbow": (1.6, 6.0)}  # player_support.LIMITS: (max |v|, max |a|)
WINDOW, RESEND = 600, 400  # points per window (1.2 s), ticks between two windows (0.8 s)


def secs(duration) -> float:
    return duration.sec + duration.nanosec * 1e-9


class TrajectoryStandIn:
    """A joint_trajectory_controller in rclpy: takes every window on `<controller>/joint_trajectory` and
    publishes `joint_states` (the first point of the latest window, where the joints are a tick later).
    `rebuild()` makes what the controller commands the drive: each window replaces the trajectory from the
    moment it starts, from the state the previous one had reached then, linear between points by
    time_from_start (JTC with positions only). Timing is the ideal one: a window starts on the player tick
    that sent it, found by matching its first point to the previous window (delivery latency left out)."""

    def __init__(self, ros, start: list[float]):
        self.start = start
        self.windows, self.subscription = ros.subscribe(
            JointTrajectory, "/forward_position_controller/joint_trajectory", reliable(depth=100))
        self.states = ros.publisher(JointState, "/joint_states")
        ros.node.create_timer(0.01, self._publish_state)

    def _publish_state(self) -> None:
        msg = JointState()
        msg.name = JOINTS
        msg.position = self.points(self.windows[-1][0])[0][1] if self.windows else self.start
        self.states.publish(msg)

    @staticmethod
    def points(window: JointTrajectory) -> list[tuple[float, list[float]]]:
        """(time_from_start, positions in JOINTS order) of each point."""
        index = [list(window.joint_names).index(j) for j in JOINTS]
        return [(secs(p.time_from_start), [p.positions[i] for i in index]) for p in window.points]

    def offsets(self) -> list[tuple[int, bool]]:
        """For each window after the first: (ticks after the previous one, whether its first point is exactly
        one the previous predicted, at one tick only). The tick is the previous window's point nearest the
        new first point (ties, as in a hold: the nearest to what the source timestamps say; those alone are
        off when the loaded machine delays ticks)."""
        out = []
        for (prev, prev_info), (new, info) in zip(self.windows, self.windows[1:]):
            before, first = self.points(prev), self.points(new)[0][1]
            by_time = round((info["source_timestamp"] - prev_info["source_timestamp"]) * 1e-9 / PERIOD)
            candidates = range(len(before))
            gap = {k: max(abs(a - b) for a, b in zip(before[k][1], first)) for k in candidates}
            best = min(gap.values())
            ties = [k for k in candidates if gap[k] <= best + 1e-12]
            k = min(ties, key=lambda k: abs(k - by_time))
            out.append((k, best == 0.0 and len(ties) == 1))
        return out


def rebuild(stand_in: TrajectoryStandIn) -> list[tuple[float, list[float]]]:
    """The commanded trajectory as (time, positions) knots, linear between them; each window starts at its
    offset after the previous one."""
    knots = [(0.0, stand_in.start)]
    begin = 0.0
    offsets = stand_in.offsets()
    for n, (window, _) in enumerate(stand_in.windows):
        if n:
            begin += offsets[n - 1][0] * PERIOD
        state = sample(knots, begin)
        knots = [k for k in knots if k[0] < begin] + [(begin, state)]
        knots += [(begin + t, p) for t, p in stand_in.points(window)]
    return knots


def sample(knots: list[tuple[float, list[float]]], t: float) -> list[float]:
    times = [k[0] for k in knots]
    i = bisect.bisect_right(times, t)
    if i == 0:
        return list(knots[0][1])
    if i == len(knots):
        return list(knots[-1][1])
    (t0, a), (t1, b) = knots[i - 1], knots[i]
    w = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
    return [x + w * (y - x) for x, y in zip(a, b)]


def check_motion(knots, points: list[list[float]], tolerance: float = 0.01) -> tuple[float, float]:
    """Sample `knots` every 1 ms like a drive; velocity and acceleration are finite differences over one
    player period. Asserts both within the limits (+ `tolerance`) and every sample on the file's path; returns
    the peak velocity and acceleration as fractions of the limits."""
    dt, end = 0.001, knots[-1][0]
    xs = [sample(knots, k * dt) for k in range(int(end / dt) + 2)]
    step = round(PERIOD / dt)
    peak_v = peak_a = 0.0
    for k in range(step, len(xs) - step):
        for axis, joint in enumerate(JOINTS):
            v_max, a_max = LIMITS[joint]
            v = (xs[k + step][axis] - xs[k][axis]) / PERIOD
            a = (xs[k + step][axis] - 2 * xs[k][axis] + xs[k - step][axis]) / PERIOD ** 2
            peak_v, peak_a = max(peak_v, abs(v) / v_max), max(peak_a, abs(a) / a_max)
            assert abs(v) <= v_max * (1 + tolerance), f"{joint} at {k * dt:.3f} s: velocity {v:.4f} over {v_max}"
            assert abs(a) <= a_max * (1 + tolerance), f"{joint} at {k * dt:.3f} s: acceleration {a:.4f} over {a_max}"
    segment = 0
    for k, x in enumerate(xs):
        while segment + 1 < len(points) and distance_to_segment(x, points[segment], points[segment + 1]) > 1e-4:
            segment += 1
        assert segment + 1 < len(points), f"the motion at {k * dt:.3f} s, {x}, is off the file's path"
    return peak_v, peak_a


def distance_to_segment(c: list[float], a: list[float], b: list[float]) -> float:
    ab = [y - x for x, y in zip(a, b)]
    length2 = sum(d * d for d in ab)
    w = 0.0 if length2 == 0 else max(0.0, min(1.0, sum((ci - ai) * d for ci, ai, d in zip(c, a, ab)) / length2))
    return max(abs(ci - (ai + w * d)) for ci, ai, d in zip(c, a, ab))


def test_trajectory_windows_drive_a_jtc_within_the_limits_and_a_pause_replaces_the_window_at_once(ros, tmp_path):
    root, limits = setup_files(tmp_path)
    points = rows(root / "move.csv")
    stand_in = TrajectoryStandIn(ros, points[0])
    player = ros.start("lockstep_interpolation_player", params={
        "roots": str(root), "limits_file": str(limits), "period_s": PERIOD, "output": "trajectory",
        "trajectory_window_points": WINDOW, "trajectory_resend_ticks": RESEND})
    ros.wait_for_publishers(stand_in.subscription)
    client = ros.action_client(MovePlay, "/move_play")
    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_until(lambda: feedback and feedback[-1].tau_secs > 0.4, 20, "0.4 s into the file")
    before = len(stand_in.windows)
    asked = time.time_ns()
    answer = ros.call(PauseMotion, "/pause", PauseMotion.Request())
    answered = time.time_ns()
    assert answer.success, answer
    ros.wait_for_messages(stand_in.windows, before + 1, 10, "a window after the pause")
    replaced, info = stand_in.windows[before]
    # Sent when the pause was accepted, not at the next regular resend (up to 0.8 s after the previous one).
    assert asked < info["source_timestamp"] < answered + 0.3e9, (asked, info["source_timestamp"], answered)
    ticks, predicted = stand_in.offsets()[before - 1]
    assert ticks < RESEND, (ticks, RESEND)
    previous = stand_in.points(stand_in.windows[before - 1][0])
    new = stand_in.points(replaced)
    assert any(p != q[1] for (_, p), q in zip(new, previous[ticks:])), "the window after the pause is the old one"
    ros.wait_until(lambda: feedback[-1].state == "paused", answer.stop_time_secs + 5, "paused")
    assert ros.call(ResumeMotion, "/resume", ResumeMotion.Request()).success
    result = ros.result(handle, timeout=60).result
    assert result.valid, result
    ros.wait_until(lambda: stand_in.points(stand_in.windows[-1][0])[-1][1] == points[-1], 10,
                   "a window ending on the file's last point")

    windows = [w for w, _ in stand_in.windows]
    # Stamped with the tick that sent it (a controller samples at now - stamp): just before it was published.
    for w, info in stand_in.windows:
        stamp_ns = w.header.stamp.sec * 10**9 + w.header.stamp.nanosec
        assert 0 <= info["source_timestamp"] - stamp_ns < 50_000_000, (stamp_ns, info["source_timestamp"])
    assert all(len(w.points) == WINDOW and list(w.joint_names) == JOINTS for w in windows)
    assert all(abs(secs(p.time_from_start) - (k + 1) * PERIOD) < 1e-9
               for w in windows for k, p in enumerate(w.points))
    # Each window is an exact continuation RESEND ticks after the previous one, or a new plan (or the hold).
    offsets = stand_in.offsets()
    regular = [n for n, (k, exact) in enumerate(offsets) if exact]
    assert regular and all(offsets[n][0] == RESEND for n in regular), offsets
    knots = rebuild(stand_in)
    assert knots[-1][1] == points[-1], (knots[-1], points[-1])
    peak_v, peak_a = check_motion(knots, points)
    assert peak_a > 0.3, (peak_v, peak_a)
    assert player.stop() == 0


def test_two_arms_side_by_side_in_namespaces(ros, tmp_path):
    # One parameter file for both nodes of both arms: the mock takes the player's period_s.
    shared = tmp_path / "params.yaml"
    shared.write_text("/**:\n  ros__parameters:\n    period_s: 0.004\n")
    waypoints = {"arm1": "shoulder,elbow\n0,0\n0.8,-0.5\n0.2,0.4\n", "arm2": "shoulder,elbow\n0,0\n-0.6,0.3\n"}
    arms = {}
    for arm, path in waypoints.items():
        (tmp_path / arm).mkdir()
        root, limits = setup_files(tmp_path / arm, waypoints=path)
        remaps = {"__ns": f"/{arm}"}
        mock = ros.start("lockstep_mock_joints", params={"joints": ",".join(JOINTS), "limits_file": str(limits)},
                         remaps=remaps, params_file=shared)
        player = ros.start("lockstep_interpolation_player", params={"roots": str(root), "limits_file": str(limits)},
                           remaps=remaps, params_file=shared)
        arms[arm] = {"mock": mock, "player": player, "last": rows(root / "move.csv")[-1],
                     "states": ros.collect(JointState, f"/{arm}/joint_states"),
                     "alarms": ros.collect(String, f"/{arm}/lockstep_mock_joints/alarm"),
                     "client": ros.action_client(MovePlay, f"/{arm}/move_play")}
    assert arms["arm1"]["last"] != arms["arm2"]["last"]
    for a in arms.values():
        ros.wait_for_messages(a["states"], 1, 15, "joint states")
    handles = {arm: ros.send_goal(a["client"], goal("move.csv")) for arm, a in arms.items()}
    for arm, handle in handles.items():
        result = ros.result(handle, timeout=60).result
        assert result.valid and result.alarm_count == 0, (arm, result)
    for arm, a in arms.items():
        ros.wait_until(lambda a=a: list(a["states"][-1].position) == a["last"], 10, f"{arm} on its last point")
        assert not a["alarms"], (arm, a["alarms"])
    # Nothing in the root namespace: every name moved with __ns.
    names = dict(ros.node.get_topic_names_and_types())
    assert "/joint_states" not in names and "/forward_position_controller/commands" not in names, sorted(names)
    assert {"/arm1/forward_position_controller/commands", "/arm2/forward_position_controller/commands"} <= set(names)
    for a in arms.values():
        assert a["player"].stop() == 0 and a["mock"].stop() == 0
