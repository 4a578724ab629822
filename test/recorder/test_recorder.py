"""The recorder node, black-box: rclpy publishes, the recorder records, the Python `rosbags` package (which
nobody here wrote) reads the bag back."""

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest
from rosbags.rosbag2 import Reader
from mcap.stream_reader import StreamReader
from mcap.records import Message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from lockstep_interfaces.msg import RecorderStatus
from lockstep_interfaces.srv import IsPaused
from lockstep_testing.harness import reliable

RECORDER = "lockstep_recorder"
TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def read_bag(path: Path) -> dict[str, list]:
    """Every message of the bag, decoded with the Jazzy typestore, per topic in bag order."""
    out: dict[str, list] = {}
    with Reader(path) as reader:
        for conn, _stamp, raw in reader.messages():
            out.setdefault(conn.topic, []).append(TYPESTORE.deserialize_cdr(raw, conn.msgtype))
    return out


def start_recorder(ros, bag: Path, **params):
    params = {"output": str(bag), "discovery_period_secs": 0.05, **params}
    return ros.start(RECORDER, params=params)


def flushed_messages(bag: Path) -> int:
    """Messages already on disk in the bag's MCAP files, even while they are being written (no summary yet):
    what a `kill -9` would leave."""
    count = 0
    for path in sorted(bag.glob("*.mcap")):
        try:
            with open(path, "rb") as f:
                for record in StreamReader(f, skip_magic=False, emit_chunks=False).records:
                    count += isinstance(record, Message)
        except Exception:  # the file ends mid-record while the writer is busy: count what came before
            pass
    return count


def last_status(status: list) -> RecorderStatus | None:
    return status[-1] if status else None


def topic_status(status: list, topic: str):
    last = last_status(status)
    return next((t for t in last.topics if t.topic == topic), None) if last else None


def publish_at(pub, make, count: int, rate_hz: float):
    """Publish `count` messages at `rate_hz` (the sleeps pace the publisher; they wait for nothing)."""
    period = 1.0 / rate_hz
    start = time.monotonic()
    for i in range(count):
        pub.publish(make(i))
        delay = start + (i + 1) * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def test_records_every_message_in_order_with_latched_topic(ros, tmp_path):
    latched = ros.publisher(String, "/map_name", reliable(depth=1, latched=True))
    latched.publish(String(data="warehouse_7"))  # before the recorder exists: only transient-local delivers it
    chatter = ros.publisher(String, "/chatter")
    joints = ros.publisher(JointState, "/joint_states")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, exclude_regex="^/rosout$|^/parameter_events$")
    ros.wait_for_subscriber("/map_name")
    ros.wait_for_matched(chatter)
    ros.wait_for_matched(joints)
    publish_at(chatter, lambda i: String(data=f"hello {i}"), 300, 200.0)
    publish_at(joints, lambda i: JointState(name=["left", "right"], position=[i * 0.1, -i * 0.1]), 100, 100.0)
    # No wait here: on SIGINT the recorder itself takes everything DDS delivered before it stops.
    assert proc.stop(timeout=20) == 0, proc.log()

    msgs = read_bag(bag)
    assert [m.data for m in msgs["/chatter"]] == [f"hello {i}" for i in range(300)]
    assert [list(m.position) for m in msgs["/joint_states"]] == [[i * 0.1, -i * 0.1] for i in range(100)]
    assert [m.data for m in msgs["/map_name"]] == ["warehouse_7"]
    # rosbag2's own metadata agrees with the content.
    with Reader(bag) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        assert counts["/chatter"] == 300 and counts["/joint_states"] == 100
        latched_conn = next(c for c in reader.connections if c.topic == "/map_name")
        assert latched_conn.ext.offered_qos_profiles[0].durability.name == "TRANSIENT_LOCAL"


def test_pause_resume_split_and_status(ros, tmp_path):
    chatter = ros.publisher(String, "/chatter")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False, status_period_secs=0.2)
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter)
    publish_at(chatter, lambda i: String(data=f"a{i}"), 20, 100.0)
    ros.wait_until(lambda: (t := topic_status(status, "/chatter")) and t.messages == 20, 10, "20 recorded")
    assert ros.call(Trigger, f"/{RECORDER}/pause", Trigger.Request()).success
    assert ros.call(IsPaused, f"/{RECORDER}/is_paused", IsPaused.Request()).paused
    publish_at(chatter, lambda i: String(data=f"paused{i}"), 20, 100.0)
    ros.wait_until(lambda: topic_status(status, "/chatter").received == 40, 10, "40 received, 20 while paused")
    assert topic_status(status, "/chatter").messages == 20
    assert ros.call(Trigger, f"/{RECORDER}/resume", Trigger.Request()).success
    assert not ros.call(IsPaused, f"/{RECORDER}/is_paused", IsPaused.Request()).paused
    split = ros.call(Trigger, f"/{RECORDER}/split_bagfile", Trigger.Request())
    assert split.success and split.message == "now writing file 1", split.message
    publish_at(chatter, lambda i: String(data=f"b{i}"), 20, 100.0)
    ros.wait_until(lambda: status and status[-1].total_messages == 40, 10, "status counting 40 messages")
    last = status[-1]
    assert last.file_index == 1 and not last.paused
    (topic,) = last.topics
    assert (topic.topic, topic.type, topic.messages, topic.dropped) == ("/chatter", "std_msgs/msg/String", 40, 0)
    assert (topic.dropped_queue_full, topic.dropped_after_error, last.recording, last.error) == (0, 0, True, "")
    assert proc.stop() == 0, proc.log()

    files = sorted(p.name for p in bag.glob("*.mcap"))
    assert files == ["bag_0.mcap", "bag_1.mcap"]
    got = [m.data for m in read_bag(bag)["/chatter"]]
    assert got == [f"a{i}" for i in range(20)] + [f"b{i}" for i in range(20)]


def test_kill_9_then_reindex_keeps_what_was_flushed(ros, tmp_path):
    chatter = ros.publisher(String, "/chatter")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False)
    ros.wait_for_matched(chatter)
    publish_at(chatter, lambda i: String(data=f"m{i}"), 200, 100.0)
    # The recorder flushes at least every 0.5 s: wait until all 200 are on disk.
    ros.wait_until(lambda: flushed_messages(bag) >= 200, 15, "200 messages flushed to disk")
    publish_at(chatter, lambda i: String(data=f"late{i}"), 5, 100.0)
    proc.kill9()

    result = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "reindex", "--in-place", str(bag)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    got = [m.data for m in read_bag(bag)["/chatter"]]
    assert got[:200] == [f"m{i}" for i in range(200)]
    assert all(g.startswith("late") for g in got[200:])


def test_bad_parameter_is_a_clear_error(ros, tmp_path):
    proc = start_recorder(ros, tmp_path / "bag", exclude_regex="([")
    ros.wait_until(lambda: not proc.alive(), 15, "the recorder to refuse the parameter")
    assert proc.popen.returncode != 0
    assert "parameter `exclude_regex`: invalid regular expression `([`" in proc.log()


def test_existing_output_directory_is_refused_and_left_alone(ros, tmp_path):
    bag = tmp_path / "bag"
    bag.mkdir()
    (bag / "keep.txt").write_text("precious")
    proc = start_recorder(ros, bag)
    ros.wait_until(lambda: not proc.alive(), 15, "the recorder to refuse the directory")
    assert proc.popen.returncode != 0
    assert str(bag) in proc.log()
    assert (bag / "keep.txt").read_text() == "precious"


def test_full_write_queue_drops_counts_and_logs(ros, tmp_path):
    """A slow disk (a 50 ms sleep before each write) behind a 4 KiB queue: the recorder drops what does not
    fit, counts it per topic, says so in its log, keeps what it wrote in order, and keeps answering."""
    chatter = ros.publisher(String, "/chatter", reliable(depth=1000))
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False, status_period_secs=0.1,
                          max_queue_bytes=4096, test_write_delay_secs=0.05)
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter)
    payload = "x" * 1000
    publish_at(chatter, lambda i: String(data=f"{i:04d}{payload}"), 200, 200.0)
    ros.wait_until(lambda: (t := topic_status(status, "/chatter")) and t.messages + t.dropped_queue_full == 200,
                   30, "every message written or counted as dropped")
    t = topic_status(status, "/chatter")
    assert t.received == 200 and t.dropped_queue_full > 0 and t.messages > 0, t
    assert last_status(status).max_queue_bytes == 4096
    assert ros.call(IsPaused, f"/{RECORDER}/is_paused", IsPaused.Request()).paused is False
    log = proc.log()
    assert "/chatter: write queue full" in log and "dropped so far" in log, log
    # Throttled: far fewer warnings than drops.
    assert log.count("write queue full") < t.dropped_queue_full, log
    assert proc.stop(timeout=20) == 0, proc.log()
    got = [int(m.data[:4]) for m in read_bag(bag)["/chatter"]]
    assert len(got) == t.messages and got == sorted(got) and got[0] == 0


def _limit_file_size(limit_bytes: int):
    def apply() -> None:
        # Past the limit, write() fails with EFBIG instead of the process being killed by SIGXFSZ.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return apply


def test_write_failure_stops_recording_cleanly_and_keeps_the_bag(ros, tmp_path):
    """The bag file hits the process's file-size limit (what a full disk looks like to the writer): the
    recorder reports the failure once, in its log and its status, stops recording, leaves a readable bag
    holding what was written before, counts what arrives after, and keeps answering services."""
    chatter = ros.publisher(String, "/chatter", reliable(depth=1000))
    bag = tmp_path / "bag"
    proc = ros.start(RECORDER, params={"output": str(bag), "discovery_period_secs": 0.05, "topics": "/chatter",
                                       "all_topics": False, "status_period_secs": 0.1},
                     preexec=_limit_file_size(3 * 1024 * 1024))
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter)
    payload = "y" * 20_000
    publish_at(chatter, lambda i: String(data=f"{i:05d}{payload}"), 400, 200.0)  # 8 MB in all
    ros.wait_until(lambda: (s := last_status(status)) and not s.recording, 30, "recording to stop")
    ros.wait_until(lambda: (t := topic_status(status, "/chatter")) and t.received == 400, 30, "all 400 received")
    last, t = last_status(status), topic_status(status, "/chatter")
    assert "File too large" in last.error and str(bag) in last.error, last.error
    assert t.dropped_after_error > 0 and t.messages + t.dropped_after_error == 400, t
    # The node keeps answering.
    assert ros.call(Trigger, f"/{RECORDER}/pause", Trigger.Request()).success
    split = ros.call(Trigger, f"/{RECORDER}/split_bagfile", Trigger.Request())
    assert not split.success and "recording stopped" in split.message, split.message
    assert proc.alive()
    log = proc.log()
    # Once, whether the failure came on a write or on the periodic flush.
    assert log.count("recording stopped: ") == 1 and "File too large" in log, log
    assert proc.stop(timeout=20) == 0, proc.log()
    # What was written before the failure is a readable bag: a gap-free prefix of what was published.
    got = [int(m.data[:5]) for m in read_bag(bag)["/chatter"]]
    assert got and got == list(range(len(got))), got[:10]
    assert len(got) <= t.messages


def test_graph_subscribers_are_stored_as_readers(ros, tmp_path):
    """Who subscribes to a recorded topic comes from the ROS graph (an rclpy listener here) and is stored in
    the bag's `lockstep_graph` record beside the publishers."""
    chatter = ros.publisher(String, "/chatter")
    heard = ros.collect(String, "/chatter")
    me = ros.node.get_fully_qualified_name()
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False, status_period_secs=0.1)
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter, count=2)
    publish_at(chatter, lambda i: String(data=f"g{i}"), 5, 50.0)
    ros.wait_for_messages(heard, 5)
    ros.wait_until(lambda: (t := topic_status(status, "/chatter")) and t.messages == 5, 10, "5 recorded")
    assert proc.stop(timeout=20) == 0, proc.log()
    from mcap.reader import make_reader
    with open(next(bag.glob("*.mcap")), "rb") as f:
        records = {m.name: m.metadata for m in make_reader(f).iter_metadata()}
    wiring = records["lockstep_graph"]["/chatter"]
    writers, readers = (part.split("=", 1)[1].split(",") for part in wiring.split(";"))
    assert me in writers and me in readers, wiring
    # The recorder's own nodes (it subscribes through `<name>_generic`) are not readers of what it records.
    assert f"/{RECORDER}" not in readers and f"/{RECORDER}_generic" not in readers, wiring
    info = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode == 0, info.stderr
    line = next(l for l in info.stdout.splitlines() if l.strip().startswith("/chatter") and "readers" in l)
    assert me in line.split("readers", 1)[1], info.stdout


def test_non_finite_input_is_recorded_faithfully_and_status_stays_finite(ros, tmp_path):
    """NaN, inf and 1e308 in the recorded topics are data, not errors: the recorder keeps running, keeps its
    status finite, answers its services, and stores every such message bit for bit (a recorder that 'fixed'
    them would hide the bug it is there to catch)."""
    from geometry_msgs.msg import PointStamped, Twist
    from lockstep_testing.bad_input import bad_variants, check_bad_input

    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/cmd_vel,/point", all_topics=False, status_period_secs=0.1)
    ros.wait_for_topic(f"/{RECORDER}/status")
    trigger = [(Trigger, f"/{RECORDER}/{name}") for name in ("pause", "resume")]
    report = check_bad_input(ros, proc, topics=[(Twist, "/cmd_vel"), (PointStamped, "/point")],
                             services=[*trigger, (IsPaused, f"/{RECORDER}/is_paused")],
                             outputs=[(RecorderStatus, f"/{RECORDER}/status")])
    # pause then resume: recording is on again; count what was recorded before pause (all of the flood).
    assert all(r.success for _, name in trigger for r in report.responses[name])
    assert proc.stop(timeout=20) == 0, proc.log()
    with Reader(bag) as reader:
        raw = {}
        for conn, _stamp, data in reader.messages():
            raw.setdefault(conn.topic, []).append(bytes(data))
    from rclpy.serialization import serialize_message
    for msg_type, topic in ((Twist, "/cmd_vel"), (PointStamped, "/point")):
        variants = bad_variants(msg_type())
        sent = [serialize_message(variants[i % len(variants)]) for i in range(report.published[topic])]
        assert raw[topic] == sent, f"{topic}: the bag does not hold the bad values bit for bit"


def test_stop_is_prompt_while_publishers_keep_publishing(ros, tmp_path):
    """The drain on SIGINT takes what DDS delivered, but a live publisher always delivers more: the stop must
    still be prompt (the drain is bounded at 1 s) and clean, with every message up to the stop in order."""
    import threading
    chatter = ros.publisher(String, "/chatter")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False, status_period_secs=0.1)
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter)
    stop = threading.Event()

    def publish_forever() -> None:
        i = 0
        while not stop.is_set():
            chatter.publish(String(data=f"{i:06d}"))
            i += 1
            time.sleep(0.01)  # paces the publisher at about 100 Hz

    publisher = threading.Thread(target=publish_forever, daemon=True)
    publisher.start()
    try:
        ros.wait_until(lambda: (t := topic_status(status, "/chatter")) and t.messages >= 50, 15, "50 recorded")
        started = time.monotonic()
        code = proc.stop(timeout=10)
        stop_secs = time.monotonic() - started
    finally:
        stop.set()
        publisher.join()
    assert code == 0, proc.log()
    assert stop_secs < 3.0, f"stopping took {stop_secs:.1f} s"
    got = [int(m.data) for m in read_bag(bag)["/chatter"]]
    assert len(got) >= 50 and got == list(range(got[0], got[0] + len(got))), got[:5]


def test_a_cyclic_topology_is_reported_in_status_and_in_the_bag(ros, tmp_path):
    """Two modules declaring that each reads what the other writes: the recorder records them, says in its
    status that the topology is not a DAG (naming modules and channels), and stores that verdict in the bag,
    where `lockstep bag info` shows it."""
    from lockstep_interfaces.msg import ComponentTopology, ModuleTopology
    import yaml
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, status_period_secs=0.1, exclude_regex="^/rosout$|^/parameter_events$")
    pubs = []
    for module, reads, writes in (("ma", "/x", "/y"), ("mb", "/y", "/x")):
        pub = ros.publisher(ModuleTopology, f"/lockstep/topology/{module}", reliable(depth=1, latched=True))
        pub.publish(ModuleTopology(components=[ComponentTopology(
            module_name=module, reader_channels=[reads], writer_channels=[writes])]))
        pubs.append(pub)
    last = ros.wait_until(lambda: (s := last_status(status)) and s.topology_error and s, 20,
                          "the status to report the cycle")
    assert "cycle" in last.topology_error and all(n in last.topology_error for n in ("ma", "mb", "/x", "/y")), \
        last.topology_error
    assert proc.alive() and last.recording and last.error == ""
    assert proc.stop(timeout=20) == 0, proc.log()
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["lockstep.topology_check"].startswith("cycle: "), info["custom_data"]
    shown = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    line = next(l for l in shown.stdout.splitlines() if "NOT A DAG" in l)
    assert "ma" in line and "mb" in line, shown.stdout
