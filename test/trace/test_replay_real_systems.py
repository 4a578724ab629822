"""Lock-step replay over DDS of recordings as real systems make them: cut recordings (backup inputs), modules
that gained an input or did not exist when recorded, modules that stamp with `now()` (simulated time on
/clock), and hosts whose clocks disagree. The modules run in step mode and are driven over DDS; the bags are
read with the Python `mcap` package and rclpy's serialization."""

from pathlib import Path

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseArray, PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Range
from mcap.reader import make_reader
from rclpy.serialization import deserialize_message, serialize_message

from lockstep_interfaces.msg import DependencyHeader
from lockstep_testing.recordings import copy_mcap
from test_lockstep_replay import assert_exact, recording, replay, start_step_modules, stop
from test_pipeline import HOLD, M2, M3, digest
from test_pipeline_recording import bag_hashes


def messages(bag: Path, topic: str) -> list:
    """(log time, data) of every message on `topic` in the one-file bag or bag directory `bag`."""
    files = [bag] if bag.suffix == ".mcap" else sorted(bag.glob("*.mcap"))
    out = []
    for path in files:
        with open(path, "rb") as f:
            out += [(m.log_time, m.data) for _, c, m in make_reader(f).iter_messages() if c.topic == topic]
    return sorted(out)


def log_times(bag: Path, topic: str, msg_type) -> dict:
    """Payload digest -> log times of the messages on `topic`."""
    out: dict = {}
    for t, d in messages(bag, topic):
        out.setdefault(digest(deserialize_message(d, msg_type)), []).append(t)
    return out


def cut_between_an_output_and_its_inputs(bag: Path, dst: Path) -> Path:
    """A copy of `bag` that starts at the first input of an m2 frame half-way through, without the scans its
    /obstacles input was computed from (the recording began after them): m1's frame cannot be simulated, while
    its output and the m2 frame that read it are recorded."""
    headers = {topic: [deserialize_message(d, DependencyHeader) for _, d in messages(bag, topic + "/lockstep_header")]
               for topic in ("/obstacles", "/cmd_vel")}
    times = {"/obstacles": log_times(bag, "/obstacles", PoseArray), "/mission": log_times(bag, "/mission", PoseStamped),
             "/odom": log_times(bag, "/odom", Odometry)}
    obstacles = {h.sequence_num: h for h in headers["/obstacles"]}
    commands = headers["/cmd_vel"]
    for command in commands[len(commands) // 2:]:
        inputs = {i.channel_name: i for i in command.inputs}
        producer = obstacles.get(inputs["/obstacles"].sequence_num)
        if producer is None or any(i.payload_digest not in times[c] for c, i in inputs.items()):
            continue
        cut = min(min(times[c][i.payload_digest]) for c, i in inputs.items())
        scans = {(i.channel_name, i.payload_digest) for i in producer.inputs}
        scan_types = {"/scan_front": Range, "/scan_rear": Range}

        def keep(topic, log_time, data, cut=cut, scans=scans, scan_types=scan_types):
            if log_time < cut:
                return False
            return topic not in scan_types or (topic, digest(deserialize_message(data, scan_types[topic]))) not in scans

        return copy_mcap(bag, dst, keep=keep)
    raise AssertionError("no m2 frame with every input recorded in the second half")


def test_frames_whose_upstream_precedes_the_recording_get_the_recorded_message_as_backup(
        ros, tmp_path, tmp_path_factory):
    cut = cut_between_an_output_and_its_inputs(recording(ros, tmp_path_factory), tmp_path / "cut.mcap")
    procs = start_step_modules(ros)
    _, backed = replay(ros, cut, tmp_path / "recorded")
    _, skipped = replay(ros, cut, tmp_path / "skip", "--missing-upstream", "skip")
    run, _ = replay(ros, cut, tmp_path / "error", "--missing-upstream", "error", expect_ok=False)
    stop(procs)
    # m2 computed the frames whose /obstacles came from an m1 frame before the cut, from the recorded
    # /obstacles, and they match the recording exactly.
    assert backed["backup_inputs"].get("/obstacles", 0) >= 1, backed["backup_inputs"]
    assert_exact(backed)
    assert skipped["backup_inputs"] == {}, skipped["backup_inputs"]
    extra = backed["channels"]["/cmd_vel"]["simulated"] - skipped["channels"]["/cmd_vel"]["simulated"]
    assert extra >= backed["backup_inputs"]["/obstacles"], (backed["channels"], skipped["channels"])
    assert "cannot be replayed" in run.stderr and "--missing-upstream error" in run.stderr, run.stderr
    errors = [line for line in run.stderr.strip().splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1, run.stderr


def test_a_module_absent_from_the_recording_is_stepped_once_per_trigger_message(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    procs = start_step_modules(ros)
    # A module new since the recording: the range splitter reads /scan_front and publishes two outputs.
    splitter = ros.start("lockstep_module_split", params={"lockstep_step_mode": True})
    ros.wait_until(lambda: any(n == "/range_splitter/lockstep/step" for n, _ in ros.node.get_service_names_and_types()),
                   20, "the new module's step service")
    out = tmp_path / "with_splitter"
    completed, report = replay(ros, bag, out, "--new-module", "range_splitter:/scan_front")
    stop(procs + [splitter])
    scans = messages(bag, "/scan_front")
    # One step per recorded /scan_front, each with its two outputs and their headers in the output bag.
    assert report["wiring"]["new_modules"] == {"range_splitter": len(scans)}, report["wiring"]
    assert report["modules"]["range_splitter"]["steps"] == len(scans), report["modules"]
    for channel in ("/range_clamped", "/range_margin"):
        assert len(messages(out, channel)) == len(messages(out, channel + "/lockstep_header")) == len(scans)
    assert "range_splitter (not in the recording)" in completed.stdout, completed.stdout
    # The recorded modules are untouched by it.
    for channel in ["/cmd_vel", "/mission", "/obstacles"]:
        c = report["channels"][channel]
        assert c["exact"] == c["simulated"] > 0, (channel, c)

    # Declared with a trigger it does not read, or not running: one line naming it.
    run, _ = replay(ros, bag, tmp_path / "wrong", "--new-module", "range_splitter:/odom", "--discovery-ms", "500",
                    expect_ok=False)
    assert "--new-module range_splitter:/odom" in run.stderr, run.stderr


def stamps(out: Path) -> list:
    return [deserialize_message(d, PoseStamped).header.stamp for _, d in messages(out, "/mission")]


def test_a_module_stamping_with_now_replays_byte_identical_on_simulated_time(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    recorded_starts = [deserialize_message(d, DependencyHeader).start_stamp
                       for _, d in messages(bag, "/mission/lockstep_header")]

    def run(name, use_sim_time):
        m3 = ros.start("lockstep_module_m3", params={"lockstep_step_mode": True, "hold": HOLD,
                                                     "stamp_with_clock": True, "use_sim_time": use_sim_time})
        ros.wait_until(lambda: any(n == "/mission_planner/lockstep/step"
                                   for n, _ in ros.node.get_service_names_and_types()), 20, "m3's step service")
        out = tmp_path / name / "simulated"
        out.parent.mkdir()
        replay(ros, bag, out, "--modules", M3)
        stop([m3])
        return out

    first, second = run("sim1", True), run("sim2", True)
    assert bag_hashes(first) == bag_hashes(second)
    # now() read the recorded start of each frame, from /clock.
    got = stamps(first)
    assert len(got) == len(recorded_starts) > 0
    replayed_starts = [deserialize_message(d, DependencyHeader).start_stamp
                       for _, d in messages(first, "/mission/lockstep_header")]
    assert [(s.sec, s.nanosec) for s in got] == [(s.sec, s.nanosec) for s in replayed_starts]
    # On the system clock the stamps are the time of the replay: two replays differ.
    wall = run("wall", False)
    assert stamps(wall) != got


def skewed(bag: Path, dst: Path, module: str, offset_ns: int) -> Path:
    """A copy of `bag` in which `module`'s headers say its host's clock was `offset_ns` off (start stamps
    moved, log times kept): as if it had run on a second computer."""
    def shift(topic, data):
        if not topic.endswith("/lockstep_header"):
            return data
        header = deserialize_message(data, DependencyHeader)
        if header.module_name != module:
            return data
        ns = header.start_stamp.sec * 1_000_000_000 + header.start_stamp.nanosec + offset_ns
        header.start_stamp = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        return serialize_message(header)

    return copy_mcap(bag, dst, change=shift)


def test_modules_on_two_hosts_with_clocks_500_ms_apart_replay_every_frame(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    # m2's host runs 500 ms behind: each /cmd_vel frame is stamped before the /obstacles frame it consumed.
    behind = skewed(bag, tmp_path / "skewed.mcap", M2, -500_000_000)
    procs = start_step_modules(ros)
    _, report = replay(ros, behind, tmp_path / "out")
    stop(procs)
    # No frame is skipped (a mission recorded before its header, at the very start, has no frame to replay).
    skipped = [s for s in report["frames_skipped"] if s["sequence_num"] is not None]
    assert skipped == [], skipped
    assert report["backup_inputs"] == {}, report["backup_inputs"]
    assert_exact(report)
    assert report["modules"][M2]["inputs_as_recorded"] == report["modules"][M2]["frames"] > 0
