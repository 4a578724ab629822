"""Lock-step re-simulation over DDS: a recording of the example pipeline replayed through the live
module processes in step mode (`-p lockstep_step_mode:=true`), by `lockstep replay` and the `lockstep_replay`
node. One recording (made by the first test that needs it) serves every test of this file."""

import json
import os
import subprocess
from pathlib import Path

from mcap.reader import make_reader
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Range

from lockstep_testing import alignment
from lockstep_testing.png import read_rgb, rows_with_colour
from lockstep_testing.harness import binary, run_tool
from lockstep_testing.recordings import copy_mcap
from test_pipeline import HOLD, M1, M2, M3
from test_pipeline_recording import bag_hashes, lockstep_replay, record_pipeline

STEP_SERVICES = {M1: "/obstacle_fusion/lockstep/step", M2: "/motion_controller/lockstep/step",
                 M3: "/mission_planner/lockstep/step"}
_RECORDING: dict = {}


def recording(ros, tmp_path_factory) -> Path:
    """The pipeline recording shared by this file's tests (recorded on first use)."""
    if "bag" not in _RECORDING:
        bag = tmp_path_factory.mktemp("lockstep_recording") / "bag"
        record_pipeline(ros, bag, ticks=80)
        _RECORDING["bag"] = bag
    return _RECORDING["bag"]


def start_step_modules(ros, modules=(M1, M2, M3), m2_params=None, delay_ms=0, namespace="",
                       m2_binary="lockstep_module_m2"):
    """The module processes in step mode (under `namespace`, e.g. "/robot1", if given); returns once each one's
    step service is advertised. `m2_binary`: the motion controller to run (`lockstep_module_m2_py`: Python)."""
    binaries = {M1: "lockstep_module_m1", M2: m2_binary, M3: "lockstep_module_m3"}
    procs = []
    for m in modules:
        params = {"lockstep_step_mode": True, "processing_delay_ms": delay_ms}
        if m == M3:
            params["hold"] = HOLD
        if m == M2:
            params.update(m2_params or {})
        procs.append(ros.start(binaries[m], params=params, remaps={"__ns": namespace} if namespace else None))
    for m in modules:
        service = namespace.rstrip("/") + STEP_SERVICES[m]
        ros.wait_until(lambda s=service: any(name == s for name, _ in ros.node.get_service_names_and_types()),
                       20, f"the step service {service}")
    return procs


def stop(procs):
    for p in procs:
        assert p.stop() == 0, p.log()


def replay(ros, bag, out: Path, *args, node_binary=False, expect_ok=True):
    """`lockstep replay <bag> --output <out>` (or the `lockstep_replay` node) over DDS on the test's domain;
    (completed process, report or None)."""
    command = [str(binary("lockstep_replay"))] if node_binary else [os.environ["LOCKSTEP_BIN"], "replay"]
    command += [str(bag), "--output", str(out), "--quiet", *args]
    run = run_tool(command, ros.env, timeout=180)
    if expect_ok:
        assert run.returncode == 0, run.stderr
        return run, json.loads((out / "report.json").read_text())
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr and "panicked" not in run.stderr, run.stderr
    return run, None


def assert_exact(report):
    for name, c in report["channels"].items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)
        assert c["first_difference"] is None and c["numeric"]["max_abs"] == 0.0, (name, c)


def test_lockstep_over_dds_is_exact_byte_identical_and_aligned(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    procs = start_step_modules(ros)
    hashes = []
    for run in range(3):
        out = tmp_path / f"dds{run}" / "simulated"  # file names follow the directory's name
        out.parent.mkdir()
        completed, report = replay(ros, bag, out, node_binary=(run == 2))
        assert report["mode"] == "dds", report
        assert_exact(report)
        assert sorted(report["channels"]) == ["/cmd_vel", "/mission", "/obstacles"]
        assert report["modules_not_live"] == []
        assert report["channels_published_from_recording"] == ["/odom", "/scan_front", "/scan_rear"]
        # Every module consumed exactly the recorded inputs, frame for frame.
        for name, m in report["modules"].items():
            assert m["frames"] > 0 and m["inputs_as_recorded"] == m["frames"], (name, m)
        assert "live modules over DDS" in completed.stdout, completed.stdout
        hashes.append(bag_hashes(out))
    stop(procs)
    # Byte-identical every time, and identical to the in-process replay of the same modules' logic.
    in_process = tmp_path / "in_process" / "simulated"
    in_process.parent.mkdir()
    lockstep_replay(bag, in_process, f"mission_planner.hold={HOLD}")
    assert hashes[0] == hashes[1] == hashes[2] == bag_hashes(in_process), hashes


def test_modules_not_running_are_fed_from_the_recording_and_changes_are_found(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    # Only m2 runs, with an extra input (/scan_front, recorded): m1's and m3's recorded outputs feed it.
    procs = start_step_modules(ros, modules=(M2,), m2_params={"extra_range_input": "/scan_front"})
    _, report = replay(ros, bag, tmp_path / "m2_only", "--modules", M2)
    assert_exact(report)
    assert sorted(report["channels"]) == ["/cmd_vel"]
    assert report["modules_not_live"] == [M3, M1], report["modules_not_live"]
    assert report["channels_published_from_recording"] == ["/mission", "/obstacles", "/odom", "/scan_front"]
    assert report["wiring"]["new_inputs"] == [{"module": M2, "channel": "/scan_front"}], report["wiring"]
    # m2 waits for the /scan_front each step names: the replay served the latest recorded one to every frame.
    frames = report["channels"]["/cmd_vel"]["simulated"]
    assert report["wiring"]["inputs_served"] == [{"module": M2, "channel": "/scan_front", "frames": frames}]
    stop(procs)

    # A changed controller (a lower speed limit, set on the live node) is found over DDS where in-process
    # finds it: the same channel and first differing frame.
    procs = start_step_modules(ros, m2_params={"max_linear_mps": 0.05})
    _, changed = replay(ros, bag, tmp_path / "changed")
    stop(procs)
    expected = lockstep_replay(bag, tmp_path / "changed_in_process", f"mission_planner.hold={HOLD}",
                               "motion_controller.max_linear_mps=0.05")
    cmd = changed["channels"]["/cmd_vel"]
    assert cmd["exact"] < cmd["simulated"] and cmd["first_difference"]["module"] == M2, cmd
    assert cmd["first_difference"] == expected["channels"]["/cmd_vel"]["first_difference"]
    assert changed["channels"]["/obstacles"]["exact"] == changed["channels"]["/obstacles"]["simulated"]
    # The numbers say by how much: only linear.x moves.
    moved = {f for f, d in cmd["fields"].items() if d["max_abs"] > 0}
    assert moved == {"linear.x"}, cmd["fields"]
    assert 0 < cmd["numeric"]["max_abs"] <= 0.5, cmd["numeric"]
    # Its inputs were still exactly the recorded ones: only its own output changed.
    assert changed["modules"][M2]["inputs_as_recorded"] == changed["modules"][M2]["frames"]
    assert_plot_shows_the_change(tmp_path / "changed" / changed["plot"])


CURVE = (31, 119, 180)  # the first colour of lockstep_plot's palette
TITLE_PX, PANEL_PX = 40, 260  # lockstep_plot's title band; the replay's panel height


def assert_plot_shows_the_change(path):
    """The differences plot has one panel per output channel (sorted: /cmd_vel, /mission, /obstacles); the
    changed channel's curve moves up and down, the unchanged ones' lie flat at zero."""
    width, height, rows = read_rgb(path)
    assert (width, height) == (1000, TITLE_PX + 3 * PANEL_PX), (width, height)
    spans = {}
    for i, channel in enumerate(["/cmd_vel", "/mission", "/obstacles"]):
        top = TITLE_PX + i * PANEL_PX
        spans[channel] = len(rows_with_colour(rows, CURVE, top, top + PANEL_PX))
    assert spans["/cmd_vel"] > 20, spans
    assert 0 < spans["/mission"] <= 4 and 0 < spans["/obstacles"] <= 4, spans


def test_wiring_errors_and_step_timeouts_name_what_is_wrong(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    odom, scans = ros.collect(Odometry, "/odom"), ros.collect(Range, "/scan_front")

    # m2 now reads a channel the recording lacks and nobody live writes: refused before anything is published.
    procs = start_step_modules(ros, m2_params={"extra_range_input": "/not_recorded"})
    run, _ = replay(ros, bag, tmp_path / "missing", expect_ok=False)
    assert "motion_controller" in run.stderr and "/not_recorded" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) <= 2, run.stderr
    assert odom == [] and scans == [], "the replay published before refusing"
    stop(procs)

    # A module that does not answer in time: the error names the module and the frame.
    procs = start_step_modules(ros, m2_params={"processing_delay_ms": 3000})
    run, _ = replay(ros, bag, tmp_path / "slow", "--timeout-ms", "300", expect_ok=False)
    assert "motion_controller" in run.stderr and "/cmd_vel #" in run.stderr, run.stderr
    assert "within 300 ms" in run.stderr, run.stderr
    stop(procs)

    # No live module at all: says how to start them.
    run, _ = replay(ros, bag, tmp_path / "none", "--discovery-ms", "500", expect_ok=False)
    assert "lockstep_step_mode:=true" in run.stderr, run.stderr
    run, _ = replay(ros, bag, tmp_path / "unknown", "--modules", "no_such_module", expect_ok=False)
    assert "--modules no_such_module: not a module of the recording" in run.stderr, run.stderr


def rewrite_mcap(bag: Path, dst: Path, keep=lambda log_time: True, topology=None) -> Path:
    """A one-file copy of `bag` keeping the messages `keep(log_time)` accepts, with the `lockstep_topology`
    metadata record replaced by `topology` if given."""
    return copy_mcap(bag, dst, keep=lambda topic, log_time, data: keep(log_time),
                     metadata=lambda name, data: topology if topology is not None and name == "lockstep_topology"
                     else data)


def test_cycles_and_cut_recordings(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    cyclic = rewrite_mcap(bag, tmp_path / "cyclic.mcap", topology={
        M1: "reads=/cmd_vel,/scan_front,/scan_rear;writes=/obstacles",
        M2: "reads=/mission,/obstacles,/odom;writes=/cmd_vel",
        M3: "reads=;writes=/mission"})
    scans = ros.collect(Range, "/scan_front")
    run, _ = replay(ros, cyclic, tmp_path / "out_cyclic", expect_ok=False)
    assert "cycle" in run.stderr and M1 in run.stderr and M2 in run.stderr, run.stderr
    assert scans == []

    # Cut in the middle (the recording "started" half-way): frames whose inputs precede the cut are skipped
    # and counted by default, and with --strict the first one is an error naming module, channel and number.
    # The cut falls right on an /obstacles output half-way through: the inputs that output was computed from
    # came before it, so at least that frame is skipped, whatever the timing of the recording.
    with open(sorted(bag.glob("*.mcap"))[0], "rb") as f:
        stamped = sorted((m.log_time, c.topic) for _, c, m in make_reader(f).iter_messages())
    half = stamped[len(stamped) // 2][0]
    middle = next(t for t, topic in stamped if topic == "/obstacles" and t >= half)
    cut = rewrite_mcap(bag, tmp_path / "cut.mcap", keep=lambda t: t >= middle)
    report = lockstep_replay(cut, tmp_path / "out_cut", f"mission_planner.hold={HOLD}")
    skipped = report["frames_skipped"]
    assert skipped and report["frames_replayed"] > 0, report
    assert report["frames_selected"] == report["frames_replayed"] + len(skipped)
    assert all(c["exact"] == c["simulated"] for c in report["channels"].values()), report["channels"]
    args = [os.environ["LOCKSTEP_BIN"], "replay", str(cut), "--output", str(tmp_path / "out_strict"),
            "--in-process", "--strict", "--quiet", "--param", f"mission_planner.hold={HOLD}"]
    strict = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert strict.returncode != 0
    first = skipped[0]
    assert f"{first['channel']} #{first['sequence_num']} of `{first['module']}` cannot be replayed" in strict.stderr, (
        strict.stderr, first)


def test_lockstep_aligns_every_frame_where_timed_playback_does_not(ros, tmp_path, tmp_path_factory):
    """The headline comparison, measured on the headers of the live modules' outputs: every recorded frame of m1
    and m2 is reproduced with exactly the recorded inputs in lock-step; timed playback of the same bag into
    the same modules at rate 2 cannot: m2 fires on its own wall-clock timer, so it publishes about half as many
    frames as the recording holds (at rate 1 the timer's phase decides, and it may by chance hit every frame)."""
    bag = recording(ros, tmp_path_factory)
    procs = start_step_modules(ros)
    _, report = replay(ros, bag, tmp_path / "lockstep")
    stop(procs)
    recorded = alignment.replayable(alignment.recorded_headers(bag), report)
    lockstep = alignment.recorded_headers(tmp_path / "lockstep")
    for channel, (hits, total) in alignment.alignment_table(recorded, lockstep).items():
        assert total > 0 and hits == total, (channel, hits, total)

    live = alignment.timed_playback(ros, bag, rate=2.0)
    timed = alignment.alignment_table(recorded, live)
    hits, total = timed["/cmd_vel"]
    distinct = len({alignment.inputs_of(h) for h in live["/cmd_vel"]})
    print(f"timed playback at rate 2: {timed}, {distinct} distinct input sets in the live /cmd_vel frames")
    assert 0 < distinct < total, (distinct, total)  # the timer ticked too seldom to reproduce every frame
    assert hits < total, timed
