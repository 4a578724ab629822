"""The recorder node, black-box: rclpy publishes, the recorder records, the Python `rosbags` package (which
nobody here wrote) reads the bag back."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from rosbags.rosbag2 import Reader
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


def publish_at(pub, make, count: int, rate_hz: float):
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
    for topic in ("/chatter", "/joint_states", "/map_name"):
        ros.wait_for_subscriber(topic)
    time.sleep(0.3)
    publish_at(chatter, lambda i: String(data=f"hello {i}"), 300, 200.0)
    publish_at(joints, lambda i: JointState(name=["left", "right"], position=[i * 0.1, -i * 0.1]), 100, 100.0)
    time.sleep(1.0)
    assert proc.stop() == 0, proc.log()

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
    ros.wait_for_subscriber("/chatter")
    time.sleep(0.3)
    publish_at(chatter, lambda i: String(data=f"a{i}"), 20, 100.0)
    time.sleep(0.5)
    assert ros.call(Trigger, f"/{RECORDER}/pause", Trigger.Request()).success
    assert ros.call(IsPaused, f"/{RECORDER}/is_paused", IsPaused.Request()).paused
    publish_at(chatter, lambda i: String(data=f"paused{i}"), 20, 100.0)
    time.sleep(0.5)
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
    assert proc.stop() == 0, proc.log()

    files = sorted(p.name for p in bag.glob("*.mcap"))
    assert files == ["bag_0.mcap", "bag_1.mcap"]
    got = [m.data for m in read_bag(bag)["/chatter"]]
    assert got == [f"a{i}" for i in range(20)] + [f"b{i}" for i in range(20)]


def test_kill_9_then_reindex_keeps_what_was_flushed(ros, tmp_path):
    chatter = ros.publisher(String, "/chatter")
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, topics="/chatter", all_topics=False)
    ros.wait_for_subscriber("/chatter")
    time.sleep(0.3)
    publish_at(chatter, lambda i: String(data=f"m{i}"), 200, 100.0)
    time.sleep(1.5)  # longer than the recorder's flush period (0.5 s): all 200 are on disk
    publish_at(chatter, lambda i: String(data=f"late{i}"), 5, 100.0)
    proc.kill9()

    result = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "reindex", str(bag)], capture_output=True,
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
