"""Lockstep's whole story on the embedded simulator (run by scripts/demo.sh), into one output folder:

  1. drive    launch/system.launch.xml (`lockstep launch`): the adaptive vehicle drives the sample warehouse
              (behaviour from Datalog rules, a tour of destinations set through the simulator's services) and
              feeds the example pipeline (obstacle fusion m1, motion controller m2, mission planner m3) its range sensors and odometry while
              lockstep_recorder records every topic; stopped with Ctrl-C (SIGINT)
  2. replay   launch/replay_system.launch.xml replay:=true: the bag replayed lock-step into the live modules
              (timed, differences.png; frames whose inputs preceded the recording are skipped and reported
              apart), and the alignment comparison over the frames replayed: recorded frames reproduced with
              exactly the recorded inputs, lock-step vs timed playback (`lockstep bag play`)
  3. calibrate  the motion model calibrated from the recorded run (`lockstep calibrate`): parameters before
              and after against the simulator's true vehicle, dead-reckoning drift before and after
  4. player   an interpolation file played to the mock joints with a pause, a resume and a speed change
  5. task     the warehouse transport task (config/tasks/warehouse.yaml) on the simulator
  6. report   `lockstep report`: PNG plots and one self-contained report.html

Writes report.json (the figures), data/*.json (the series the plots draw), the bags, logs/ and the plots into
--out (default demo-output/<UTC timestamp>/ in the repository) and prints that folder. Node processes and
launches run on a private ROS_DOMAIN_ID through the test harness (test/lockstep_testing/harness.py). Exit status 0 when every
stage ran and its checks held.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "trace"), str(REPO / "test" / "interpolation"),
                str(REPO / "test" / "tasks")]

import yaml  # noqa: E402  (PyYAML comes with the ROS 2 wheels)

from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary, reliable  # noqa: E402
from demo_progress import Progress  # noqa: E402
from demo_timeline import task_timeline  # noqa: E402

SIM = "lockstep_sim_node"
SEED = 42
TIME_SCALE = 6.0  # simulated seconds per wall second while the vehicle drives
DRIVE_SIM_S = 80.0  # simulated seconds of driving (and recording), at TIME_SCALE: the same data every run
LAUNCH_DIR = REPO / "launch"
# The warehouse tour (column, row): the rules drive the vehicle to each in turn (config/scenes/warehouse.scene).
TOUR = [(17, 9), (17, 2), (2, 2), (4, 13), (17, 12), (10, 1), (2, 9)]
SLAM_SIGMA_XY_M = 0.02
SLAM_SIGMA_YAW_RAD = 0.0087
# Tolerances the demo holds the calibration to (the calibrator's issue: radius and track within 0.5 %).
CAL_TOLERANCE = {"wheel_radius_m": 0.01, "track_width_m": 0.01}


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


# ----------------------------------------------------------------------------------------------------------
# The demo's ROS world. Every node process is started through Demo.start (one place to change how systems
# come up; the drive and the replay start the shipped launch files through it with `lockstep launch`); helpers
# reused from the tests start theirs through the same context.
# ----------------------------------------------------------------------------------------------------------
class Demo:
    def __init__(self, out: Path):
        self.out = out
        (out / "logs").mkdir(parents=True, exist_ok=True)
        (out / "data").mkdir(exist_ok=True)
        os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))
        self.ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=out / "logs")
        self.report: dict = {"seed": SEED, "created_utc": utc_stamp(), "stages": {}, "figures": {}, "plots": {}}
        self.failed = False

    def start(self, binary_name: str, *args: str, **kw):
        return self.ros.start(binary_name, *args, **kw)

    def launch(self, launch_file: str, *arguments: str, name: str):
        """`lockstep launch launch/<launch_file> <arguments>` on the demo's domain, its nodes' logs in logs/<name>."""
        return self.start("lockstep", "launch", str(LAUNCH_DIR / launch_file), *arguments, "--color", "never",
                          "--log-dir", str(self.out / "logs" / name), name=name)

    def lockstep(self, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
        """The `lockstep` command on the demo's domain."""
        run = subprocess.run([os.environ["LOCKSTEP_BIN"], *args], capture_output=True, text=True,
                             timeout=timeout, env=self.ros.env)
        if run.returncode != 0:
            raise RuntimeError(f"lockstep {args[0]} failed: {run.stderr.strip()[-500:]}")
        return run

    def write_data(self, name: str, data) -> str:
        path = self.out / "data" / name
        path.write_text(json.dumps(data, separators=(",", ":")))
        return f"data/{name}"

    def close(self) -> None:
        self.ros.close(print_logs=False)

    def save(self) -> None:
        (self.out / "report.json").write_text(json.dumps(self.report, indent=2) + "\n")


# ----------------------------------------------------------------------------------------------------------
# 1. drive: the vehicle tours the warehouse while the pipeline runs and the recorder records.
# ----------------------------------------------------------------------------------------------------------
def sim_yaml() -> dict:
    return yaml.safe_load((REPO / "config/sim.yaml").read_text())[SIM]["ros__parameters"]


def read_scene(path: Path) -> dict:
    lines = [l for l in path.read_text().splitlines() if l.strip() and not l.lstrip().startswith("#")]
    columns, rows, *rest = lines[0].split()
    cell = float(rest[0]) if rest else 1.0
    grid = [l.split() for l in lines[1:1 + int(rows)]]
    return {"columns": int(columns), "rows": int(rows), "cell_m": cell,
            "obstacles": [[c, r] for r, line in enumerate(grid) for c, code in enumerate(line) if code == "0"]}


def cell_centre(scene: dict, column: int, row: int) -> list[float]:
    s = scene["cell_m"]
    return [(column + 0.5) * s, (scene["rows"] - 1 - row + 0.5) * s]


def sim_params_file(demo: Demo) -> Path:
    """config/sim.yaml with the demo's changes, for system.launch.xml's params_file: odometry at 50 Hz and a
    finer and faster SLAM pose for the calibration (the range sensors, the pipeline's inputs, stay at 10 Hz),
    paused (time_scale 0) until the recorder listens, the tour's first destination."""
    doc = yaml.safe_load((REPO / "config/sim.yaml").read_text())
    doc[SIM]["ros__parameters"].update({
        "time_scale": 0.0, "publish_rate_hz": 50.0, "range_rate_hz": 10.0, "slam_rate_hz": 20.0, "slam_sigma_xy_m": SLAM_SIGMA_XY_M,
        "slam_sigma_yaw_rad": SLAM_SIGMA_YAW_RAD, "seed": SEED, "watch_files": False, "publish_clock": False,
        "marker_rate_hz": 1.0, "destination_column": TOUR[0][0], "destination_row": TOUR[0][1]})
    path = demo.out / "sim.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# What the recorder must be subscribed to before the vehicle moves: the pipeline's inputs and outputs (with their
# dependency headers) and the calibration's topics.
RECORDED_BEFORE_START = ["/scan_front", "/scan_rear", "/odom", "/obstacles", "/obstacles/lockstep_header",
                         "/cmd_vel", "/cmd_vel/lockstep_header", "/mission", "/mission/lockstep_header",
                         "/cmd_vel_out", "/slam_pose"]


def message_counts(bag: Path) -> dict[str, int]:
    """Topic -> messages in the bag (from the MCAP summaries)."""
    from mcap.reader import make_reader
    counts: dict[str, int] = {}
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            summary = make_reader(f).get_summary()
        if summary and summary.statistics:
            for cid, n in summary.statistics.channel_message_counts.items():
                topic = summary.channels[cid].topic
                counts[topic] = counts.get(topic, 0) + n
    return counts


def stage_drive(demo: Demo) -> str:
    from geometry_msgs.msg import PoseStamped
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from std_msgs.msg import String

    from lockstep_interfaces.srv import SetDestination

    ros = demo.ros
    params = sim_yaml()
    scene = read_scene(REPO / params["scene_file"])
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000))
    states = ros.collect(String, f"/{SIM}/state", reliable(depth=1000, latched=True))
    bag = demo.out / "run"
    # The whole system as a user starts it: simulator (autonomous, feeding the pipeline's range sensors and
    # odometry), the pipeline m1/m2/m3 and the recorder recording every topic.
    system = demo.launch("system.launch.xml", f"recorder_output:={bag}", "time_scale:=0.0",
                         f"params_file:={sim_params_file(demo)}", name="system")
    ros.wait_until(lambda: states, 60, "the simulator's first state", proc=system)

    def recorder_on(topic: str) -> bool:
        return any("lockstep_recorder" in i.node_name for i in ros.node.get_subscriptions_info_by_topic(topic))

    ros.wait_until(lambda: all(recorder_on(t) for t in RECORDED_BEFORE_START), 60,
                   "the recorder subscribed to the system's topics", proc=system)

    def set_time_scale(value: float) -> None:
        ros.call(SetParameters, f"/{SIM}/set_parameters", SetParameters.Request(parameters=[
            Parameter(name="time_scale", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                                                double_value=value))]))

    # The tour: a new destination at each arrival (or give-up), for DRIVE_SIM_S of simulated time (from the
    # ground truth's stamps, so every run records as much, whatever the machine's speed).
    visited: list[dict] = []

    def simulated_s() -> float:
        now = list(truth)
        stamp = lambda p: p.header.stamp.sec + p.header.stamp.nanosec * 1e-9  # noqa: E731
        return stamp(now[-1]) - stamp(now[0]) if len(now) >= 2 else 0.0

    set_time_scale(TIME_SCALE)
    deadline = time.monotonic() + 3 * DRIVE_SIM_S / TIME_SCALE + 30
    seen, leg = 0, 0
    while simulated_s() < DRIVE_SIM_S:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the simulator ran {simulated_s():.1f} of {DRIVE_SIM_S} simulated s in time")
        if not system.alive():
            raise AssertionError(f"system.launch.xml exited with {system.popen.returncode} during the drive")
        now = list(states)
        for s in now[seen:]:
            if s.data in ("arrived", "blocked"):
                visited.append({"destination": list(TOUR[leg % len(TOUR)]), "outcome": s.data})
                leg += 1
                nxt = TOUR[leg % len(TOUR)]
                ros.call(SetDestination, f"/{SIM}/set_destination", SetDestination.Request(column=nxt[0], row=nxt[1]))
        seen = len(now)
        time.sleep(0.05)
    set_time_scale(0.0)
    time.sleep(1.0)  # the last outputs of the pipeline reach the recorder
    code = system.stop(timeout=30)
    assert code == 0, f"system.launch.xml exited with {code} after SIGINT: {system.log()[-2000:]}"
    poses = sorted((p.header.stamp.sec + p.header.stamp.nanosec * 1e-9, p.pose.position.x, p.pose.position.y)
                   for p in list(truth))
    length = sum(math.dist(a[1:], b[1:]) for a, b in zip(poses, poses[1:]))
    transitions = re.findall(r"t=([0-9.]+) s: (\w+) -> (\w+)", system.log())
    demo.report["plots"]["vehicle_path"] = demo.write_data("vehicle_path.json", {
        "scene": scene, "start": cell_centre(scene, params["start_column"], params["start_row"]),
        "destinations": [cell_centre(scene, c, r) for c, r in TOUR],
        "truth": [[round(x, 4), round(y, 4)] for _, x, y in poses[::5]]})
    counts = message_counts(bag)
    drive = {
        "scene": params["scene_file"], "rules": params["rule_files"], "time_scale": TIME_SCALE,
        "launch": "launch/system.launch.xml", "drive_simulated_s": DRIVE_SIM_S,
        "simulated_s": round(poses[-1][0] - poses[0][0], 2) if poses else 0.0, "path_length_m": round(length, 2),
        "destinations_reached": sum(1 for v in visited if v["outcome"] == "arrived"), "legs": visited,
        "state_changes": len(transitions), "states": sorted({to for _, _, to in transitions}),
        "sensor_messages": sum(counts.get(t, 0) for t in ("/scan_front", "/scan_rear", "/odom")),
        "pipeline_outputs": {t: counts.get(t, 0) for t in ("/obstacles", "/cmd_vel", "/mission")},
        "bag": "run", "bag_bytes": sum(f.stat().st_size for f in bag.glob("*")),
    }
    demo.report["drive"] = drive
    assert drive["destinations_reached"] >= 1, visited
    return (f"{drive['path_length_m']:.1f} m in {drive['simulated_s']:.0f} simulated s, "
            f"{drive['destinations_reached']} destinations reached, {drive['state_changes']} state changes; "
            f"bag {drive['bag_bytes'] / 1e6:.1f} MB")


# ----------------------------------------------------------------------------------------------------------
# 2. replay: lock-step (replay_system.launch.xml replay:=true); alignment against timed playback.
# ----------------------------------------------------------------------------------------------------------
REPLAY_RATES = (1.0, 5.0)


def stage_replay(demo: Demo) -> str:
    from lockstep_testing import alignment

    ros, bag, out = demo.ros, demo.out / "run", demo.out / "replay"
    # The modules in step mode and the replay; the launch ends by itself when the replay is done.
    replay = demo.launch("replay_system.launch.xml", "replay:=true", f"bag:={bag}", f"output:={out}",
                         name="replay_system")
    ros.wait_until(lambda: not replay.alive(), 300, "replay_system.launch.xml to end by itself", proc=None)
    code = replay.stop()
    assert code == 0, f"replay_system.launch.xml exited with {code}: {replay.log()[-2000:]}"
    report = json.loads((out / "report.json").read_text())
    # Lock-step alignment over the frames replayed: frames whose inputs went out before the recorder matched
    # cannot be replayed; the replay skips them (reported apart below).
    skipped = report.get("frames_skipped", [])
    recorded = alignment.replayable(alignment.recorded_headers(bag), report)
    rows = {"lock-step": alignment.alignment_table(recorded, alignment.recorded_headers(out))}
    for rate in REPLAY_RATES:
        rows[f"timed playback, rate {rate:g}"] = alignment.alignment_table(
            recorded, alignment.timed_playback(ros, bag, rate))
    table = [{"replay": name, **{c: {"aligned": h, "frames": t, "percent": round(100.0 * h / max(t, 1), 1)}
                                 for c, (h, t) in cells.items()}} for name, cells in rows.items()]
    timing = report["timing"]
    channels = report["channels"]  # name -> recorded / simulated / exact

    def equal(name: str, c: dict) -> bool:
        gone = sum(1 for f in skipped if f["channel"] == name)
        return c["exact"] == c["simulated"] == c["recorded"] - gone
    equal_names = [n for n, c in channels.items() if equal(n, c)]
    reasons: dict[str, int] = {}
    for f in skipped:
        reasons[f["reason"]] = reasons.get(f["reason"], 0) + 1
    demo.report["replay"] = {
        "frames_replayed": report["frames_replayed"], "wall_s": round(timing["wall_s"], 3),
        "frames_per_s": round(timing["frames_per_s"], 1),
        "overhead_per_frame_ms": round(timing["overhead_per_frame_ms"], 3),
        "alignment": table, "report": "replay/report.json", "bag": "replay",
        "launch": "launch/replay_system.launch.xml",
        "channels_equal_to_recording": len(equal_names), "channels": len(channels),
        "frames_skipped": len(skipped), "skip_reasons": reasons}
    demo.report["plots"]["replay_differences"] = "replay/differences.png"
    lock = table[0]
    assert all(lock[c]["percent"] == 100.0 for c in alignment.OUTPUTS), lock
    assert len(equal_names) == len(channels), channels
    timed = ", ".join(f"rate {r:g} {row['/obstacles']['percent']:.0f}/{row['/cmd_vel']['percent']:.0f} %"
                      for r, row in zip(REPLAY_RATES, table[1:]))
    return (f"{report['frames_replayed']} frames in {timing['wall_s']:.2f} s ({len(skipped)} skipped); aligned "
            f"/obstacles, /cmd_vel: lock-step {lock['/obstacles']['percent']:.0f}/{lock['/cmd_vel']['percent']:.0f} %, "
            f"timed {timed}")


# ----------------------------------------------------------------------------------------------------------
# 3. calibrate: the motion model from the recorded run.
# ----------------------------------------------------------------------------------------------------------
def stage_calibrate(demo: Demo) -> str:
    params = sim_yaml()
    true, nominal = params["true_vehicle"], params["nominal_vehicle"]
    out = demo.out / "calibration"
    run = demo.lockstep("calibrate", str(demo.out / "run"), "--cmd-topic", "/cmd_vel_out",
                        "--odom-topic", "/odom", "--pose-topic", "/slam_pose",
                        "--nominal-radius-m", str(nominal["wheel_radius_m"]),
                        "--nominal-track-m", str(nominal["track_width_m"]),
                        "--pose-sigma-xy-m", str(SLAM_SIGMA_XY_M), "--pose-sigma-yaw-rad", str(SLAM_SIGMA_YAW_RAD),
                        "--output", str(out), "--quiet")
    (out / "summary.txt").write_text(run.stdout)
    text = (out / "calibration.yaml").read_text()
    calibrated = yaml.safe_load(text)[SIM]["ros__parameters"]["nominal_vehicle"]
    drift = re.search(r"RMS distance to the observed poses: nominal ([0-9.]+) m, calibrated ([0-9.]+) m", text)
    windows = re.search(r"windows: (\d+) accepted", text)
    rows = []
    for key in ("wheel_radius_m", "track_width_m", "delay_secs", "centripetal_factor"):
        error = calibrated[key] - true[key]
        rows.append({"parameter": key, "true": true[key], "before": nominal[key], "after": calibrated[key],
                     "error_percent": round(100.0 * error / true[key], 3) if true[key] else None,
                     "tolerance_percent": 100.0 * CAL_TOLERANCE[key] if key in CAL_TOLERANCE else None})
    before, after = float(drift.group(1)), float(drift.group(2))
    demo.report["calibration"] = {"parameters": rows, "windows_accepted": int(windows.group(1)),
                                  "drift_rms_before_m": before, "drift_rms_after_m": after,
                                  "drift_reduction": round(before / after, 2) if after > 0 else None,
                                  "yaml": "calibration/calibration.yaml"}
    demo.report["plots"]["calibration"] = "calibration/trajectories.png"
    within = all(abs(r["error_percent"]) <= r["tolerance_percent"] for r in rows if r["tolerance_percent"])
    assert within and after < before, (rows, before, after)
    r, t = rows[0], rows[1]
    return (f"radius {r['after']:.5f} m ({r['error_percent']:+.2f} %), track {t['after']:.4f} m "
            f"({t['error_percent']:+.2f} %), delay {rows[2]['after'] * 1e3:.0f} ms (true {true['delay_secs'] * 1e3:.0f}); "
            f"drift {before:.2f} m -> {after:.2f} m")


# ----------------------------------------------------------------------------------------------------------
# 4. player: an interpolation file with a pause, a resume and a speed change.
# ----------------------------------------------------------------------------------------------------------
PLAYER_WAYPOINTS = "shoulder,elbow\n0,0\n0.8,-0.5\n0.2,0.4\n-0.6,0.1\n0.4,-0.3\n0,0\n"
PLAYER_SPEED = 1.3


def stage_player(demo: Demo) -> str:
    import player_support as ps
    from lockstep_interfaces.srv import PauseMotion, ResumeMotion, SetSpeed
    from std_msgs.msg import Float64MultiArray

    ros = demo.ros
    folder = demo.out / "player"
    folder.mkdir()
    commands = ros.collect(Float64MultiArray, "/forward_position_controller/commands", reliable(depth=5000))
    root, mock, player, alarms, _states, client = ps.start(ros, folder, files={"waypoints": PLAYER_WAYPOINTS})
    feedback: list = []
    events: list[dict] = []

    def mark(label: str) -> None:
        events.append({"label": label, "tick": len(commands)})

    handle = ros.send_goal(client, ps.goal("move.csv"), feedback)
    assert handle.accepted
    ros.wait_until(lambda: feedback and feedback[-1].tau_secs > 0.8, 20, "0.8 s into the file")
    mark("pause")
    paused = ros.call(PauseMotion, "/pause", PauseMotion.Request())
    assert paused.success, paused.message
    ros.wait_until(lambda: feedback[-1].state == "paused", paused.stop_time_secs + 5, "paused")
    time.sleep(0.5)  # held for half a second of the demo's time (the hold point keeps coming)
    mark("resume")
    resumed = ros.call(ResumeMotion, "/resume", ResumeMotion.Request())
    assert resumed.success, resumed.message
    ros.wait_until(lambda: feedback[-1].state == "playing", 10, "playing again")
    tau = feedback[-1].tau_secs
    ros.wait_until(lambda: feedback[-1].tau_secs > tau + 0.5, 10, "0.5 s more of the file")
    mark(f"speed x{PLAYER_SPEED:g}")
    faster = ros.call(SetSpeed, "/set_speed", SetSpeed.Request(speed_factor=PLAYER_SPEED))
    assert faster.success, faster.message
    result = ros.result(handle, timeout=60).result
    ros.wait_until(lambda: len(commands) >= events[-1]["tick"] + 10, 5, "the last commands")
    time.sleep(0.3)
    player.stop()
    mock.stop()
    limits = yaml.safe_load(ps.LIMITS)["joint_limits"]
    series = [list(m.data) for m in list(commands)]
    # Velocity and acceleration as differences over 10 ms (5 ticks): at a speed factor other than 1 the player
    # interpolates between the file's 2 ms points, and tick-to-tick second differences of that are noise.
    k, dt = 5, 5 * ps.PERIOD
    v = [[(b[j] - a[j]) / dt for j in range(len(ps.JOINTS))] for a, b in zip(series, series[k:])]
    acc = [[(b[j] - a[j]) / dt for j in range(len(ps.JOINTS))] for a, b in zip(v, v[k:])]
    vf = {n: [round(abs(x[j]) / limits[n]["max_velocity"], 4) for x in v] for j, n in enumerate(ps.JOINTS)}
    af = {n: [round(abs(x[j]) / limits[n]["max_acceleration"], 4) for x in acc] for j, n in enumerate(ps.JOINTS)}
    demo.report["plots"]["player"] = demo.write_data("player.json", {
        "period_s": ps.PERIOD, "window_s": dt, "joints": ps.JOINTS, "velocity_fraction": vf, "acceleration_fraction": af,
        "events": [{"label": e["label"], "t_s": round(e["tick"] * ps.PERIOD, 3)} for e in events]})
    peak_v = max(max(x) for x in vf.values())
    peak_a = max(max(x) for x in af.values())
    demo.report["player"] = {
        "file_points": len(ps.rows(root / "move.csv")), "points_played": result.points_played,
        "commands": len(series), "alarms": len(alarms), "alarm_count": result.alarm_count, "valid": result.valid,
        "pause": True, "resume": True, "speed_factor": PLAYER_SPEED, "pause_stop_time_s": paused.stop_time_secs,
        "peak_velocity_fraction": dict(zip(result.joint_names, result.peak_velocity_fraction)),
        "peak_acceleration_fraction": dict(zip(result.joint_names, result.peak_acceleration_fraction)),
        "commanded_peak_velocity_fraction": peak_v, "commanded_peak_acceleration_fraction": peak_a,
        "max_tracking_error": result.max_tracking_error, "message": result.message}
    assert result.valid and result.alarm_count == 0 and not alarms, (result, [a.data for a in alarms])
    return (f"{result.points_played} points played, pause/resume/speed x{PLAYER_SPEED:g} done; alarms "
            f"{len(alarms)}; peak |a| {max(result.peak_acceleration_fraction):.3f} of the limit")


# ----------------------------------------------------------------------------------------------------------
# 5. task: the warehouse transport task.
# ----------------------------------------------------------------------------------------------------------
TASK_TIME_SCALE = 2.0
TASK = ("move_material", {"from": "A", "to": "B", "speed": 1.0})


def stage_task(demo: Demo) -> str:
    from geometry_msgs.msg import PoseStamped
    from lockstep_interfaces.msg import TaskEvent
    from lockstep_interfaces.srv import ListTasks

    import tasks_support as ts

    ros = demo.ros
    truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=5000))
    sim = demo.start(SIM, params=ts.sim_params(
        mode="commanded", time_scale=TASK_TIME_SCALE, watch_files=False, publish_clock=False,
        **{"battery.capacity_wh": 1.0, "battery.start_percent": 25.0, "battery.idle_w": 0.0,
           "battery.drive_wh_per_m": 0.01, "battery.charge_w": 300.0, "battery.rate_hz": 5.0,
           "battery.chargers": "2.5 12.5, 17.5 12.5"}))
    ros.wait_until(lambda: truth, 60, "the first ground truth", proc=sim)
    ts.actuator(ros, "navigation")
    ts.actuator(ros, "loader", duration_s=0.5)
    ts.actuator(ros, "roller", duration_s=0.5)
    # The robot starts low (25 % of 1 Wh, below recharge_below): the manager sends it to the nearest
    # charger (C) first, and the transport goes from there once it holds 90 %.
    manager = ts.Manager(ros, ts.WAREHOUSE, map_file=str(ts.WAREHOUSE_MAP), start_stations="A",
                         drive_wh_per_m=0.01, idle_w=0.0, recharge_below=30.0, charge_to=90.0)
    # Every event from the first (the charging task starts as soon as the manager hears the battery, maybe
    # before a volatile subscription matches): the topic keeps its history for late subscribers.
    history = ros.collect(TaskEvent, "/task_events", reliable(depth=5000, latched=True))
    ros.wait_until(lambda: manager.status_events(new="charging"), 180, "the robot charging", manager.proc)
    started = time.monotonic()
    result = manager.result(manager.send(*TASK), timeout=240)
    wall = time.monotonic() - started
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), retry_every=5.0)
    types = {t.task_id: t.task_type for t in listed.tasks}
    ros.wait_until(lambda: len(history) >= len(manager.events), 30, "every task event", manager.proc)
    events = list(history)
    for p in ros.processes:
        p.stop()
    bars, names = task_timeline(events, yaml.safe_load(ts.WAREHOUSE.read_text()), types)
    demo.report["plots"]["task_timeline"] = demo.write_data("task_timeline.json", {
        "task": TASK[0], "outcome": result.outcome, "bars": bars, "names": names})
    demo.report["task"] = {"type": TASK[0], "parameters": TASK[1], "outcome": result.outcome,
                           "success": result.success, "leaves_executed": result.leaves_executed,
                           "group_reports": result.group_reports, "events": len(events), "wall_s": round(wall, 2),
                           "time_scale": TASK_TIME_SCALE,
                           "charging_s": round(sum(b["end_s"] - b["start_s"] for b in bars
                                                   if b["status"] == "charging"), 2)}
    assert result.success, result
    return (f"{TASK[0]} A -> B: {result.outcome}, {result.leaves_executed} actions, {result.group_reports} group "
            f"reports, {len(events)} events")


# ----------------------------------------------------------------------------------------------------------
# 6. report: the plots and report.html (`lockstep report`).
# ----------------------------------------------------------------------------------------------------------
def figures(report: dict) -> list[dict]:
    """The key figures, for the report's table (and the test)."""
    out = []
    d = report.get("drive")
    if d:
        out.append({"stage": "drive", "name": "destinations reached (rules)", "value": str(d["destinations_reached"]),
                    "ok": d["destinations_reached"] >= 1})
        out.append({"stage": "drive", "name": "path driven", "value": f"{d['path_length_m']:.1f} m in "
                    f"{d['simulated_s']:.0f} simulated s", "ok": True})
    r = report.get("replay")
    if r:
        for row in r["alignment"]:
            for c in ("/obstacles", "/cmd_vel"):
                out.append({"stage": "replay", "name": f"{row['replay']}: {c} aligned",
                            "value": f"{row[c]['percent']:.1f} % ({row[c]['aligned']}/{row[c]['frames']})",
                            "ok": row[c]["percent"] == 100.0 if row["replay"] == "lock-step" else None})
        out.append({"stage": "replay", "name": "lock-step replay speed", "value":
                    f"{r['frames_replayed']} frames in {r['wall_s']:.2f} s ({r['overhead_per_frame_ms']:.2f} ms "
                    "overhead per frame)", "ok": True})
    c = report.get("calibration")
    if c:
        for p in c["parameters"]:
            tol = p["tolerance_percent"]
            out.append({"stage": "calibrate", "name": p["parameter"], "value":
                        f"{p['before']:g} -> {p['after']:.5g} (true {p['true']:g}, error "
                        f"{p['error_percent']:+.2f} %{f', tolerance {tol:g} %' if tol else ''})",
                        "ok": abs(p["error_percent"]) <= tol if tol else None})
        out.append({"stage": "calibrate", "name": "dead-reckoning drift (RMS)", "value":
                    f"{c['drift_rms_before_m']:.3f} m -> {c['drift_rms_after_m']:.3f} m",
                    "ok": c["drift_rms_after_m"] < c["drift_rms_before_m"]})
    p = report.get("player")
    if p:
        out.append({"stage": "player", "name": "alarms (mock joints)", "value": str(p["alarms"]),
                    "ok": p["alarms"] == 0 and p["alarm_count"] == 0})
        out.append({"stage": "player", "name": "pause, resume, speed change", "value":
                    f"done (speed x{p['speed_factor']:g})", "ok": p["valid"]})
        out.append({"stage": "player", "name": "peak |acceleration| / limit", "value":
                    f"{max(p['peak_acceleration_fraction'].values()):.3f}",
                    # (the player computes it in floating point: 1.000 may come as 1 + 1e-15)
                    "ok": max(p["peak_acceleration_fraction"].values()) <= 1.0 + 1e-9})
    t = report.get("task")
    if t:
        out.append({"stage": "task", "name": "warehouse task outcome", "value": t["outcome"], "ok": t["success"]})
    return out


def stage_report(demo: Demo) -> str:
    demo.report["figures"] = figures(demo.report)
    demo.save()
    run = demo.lockstep("report", str(demo.out))
    pngs = sorted(p.name for p in (demo.out / "plots").glob("*.png"))
    return f"report.html ({(demo.out / 'report.html').stat().st_size / 1e6:.1f} MB), plots: {', '.join(pngs)}" + (
        "" if run.returncode == 0 else " (failed)")


STAGES = [("drive", stage_drive), ("replay", stage_replay), ("calibrate", stage_calibrate),
          ("player", stage_player), ("task", stage_task), ("report", stage_report)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="output folder (default: demo-output/<UTC timestamp>)")
    parser.add_argument("--stages", default=",".join(name for name, _ in STAGES),
                        help="comma-separated subset of the stages (development)")
    args = parser.parse_args()
    out = (args.out or REPO / "demo-output" / utc_stamp()).resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"{out} is not empty: give a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    chosen = [(n, f) for n, f in STAGES if n in args.stages.split(",")]
    print(f"Lockstep demo: {len(chosen)} stages on the embedded simulator; output folder {out}", flush=True)
    demo = Demo(out)
    progress = Progress([n for n, _ in chosen])
    ok = True
    try:
        for k, (name, fn) in enumerate(chosen):
            good = progress.run(k, fn, demo)
            row = {"ok": good, "wall_s": round(progress.rows[-1][2], 2), "summary": progress.rows[-1][3]}
            if progress.error:
                log = out / "logs" / f"{name}.log"
                log.write_text(progress.error)
                row.update(error=progress.error, log=str(log.relative_to(out)))
            demo.report["stages"][name] = row
            ok &= good
            demo.save()
    finally:
        demo.close()
    demo.report["total_wall_s"] = round(time.monotonic() - progress.t0, 1)
    demo.save()
    print()
    print(progress.table())
    print(f"\noutput folder: {out}")
    if (out / "report.html").exists():
        print(f"report:        {out / 'report.html'}")
    print("demo:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
