"""config/lockstep.rviz against the running system: rviz cannot run on these machines, so this test checks
that every display of the rviz file names a topic that launch/system.launch.xml really publishes, with the
message type the display takes, and that its messages are in the frame rviz draws them in (the fixed frame
`map`, which needs no TF).

The system is started with `lockstep launch` ($LOCKSTEP_BIN, else target/<profile>/lockstep)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
import yaml
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from lockstep_testing.harness import REPO_ROOT, NodeProcess, binary

RVIZ_FILE = REPO_ROOT / "config/lockstep.rviz"
SYSTEM_LAUNCH = REPO_ROOT / "launch/system.launch.xml"

# The message type each rviz display class subscribes to (rviz_default_plugins' displays).
DISPLAY_TYPES = {
    "rviz_default_plugins/Marker": "visualization_msgs/msg/Marker",
    "rviz_default_plugins/MarkerArray": "visualization_msgs/msg/MarkerArray",
    "rviz_default_plugins/Odometry": "nav_msgs/msg/Odometry",
    "rviz_default_plugins/Path": "nav_msgs/msg/Path",
    "rviz_default_plugins/Pose": "geometry_msgs/msg/PoseStamped",
    "rviz_default_plugins/PoseArray": "geometry_msgs/msg/PoseArray",
    "rviz_default_plugins/PoseWithCovariance": "geometry_msgs/msg/PoseWithCovarianceStamped",
    "rviz_default_plugins/Map": "nav_msgs/msg/OccupancyGrid",
    "rviz_default_plugins/LaserScan": "sensor_msgs/msg/LaserScan",
    "rviz_default_plugins/Range": "sensor_msgs/msg/Range",
    "rviz_default_plugins/PointCloud2": "sensor_msgs/msg/PointCloud2",
    "rviz_default_plugins/Image": "sensor_msgs/msg/Image",
}
# Displays that draw no topic.
NO_TOPIC = {"rviz_default_plugins/Grid", "rviz_default_plugins/Axes", "rviz_default_plugins/TF"}
# Frames other than the fixed frame that a display's messages may be in, and why (none: the odometry display
# takes /odom_map, the simulator's odometry expressed in map).
OTHER_FRAMES: dict[str, str] = {}


def rviz_topics(path: Path) -> tuple[str, list[tuple[str, str, str, bool]]]:
    """(fixed frame, [(display name, topic, message type, transient local)]) of an rviz2 file; a display
    class this test does not know fails it, so a new display cannot go unchecked."""
    config = yaml.safe_load(path.read_text())
    manager = config["Visualization Manager"]
    wanted = []
    for display in manager["Displays"]:
        cls = display["Class"]
        if cls in NO_TOPIC:
            continue
        assert cls in DISPLAY_TYPES, f"{path}: display {display.get('Name')!r}: unknown class {cls}"
        topic = display["Topic"]
        latched = topic.get("Durability Policy") == "Transient Local"
        wanted.append((display["Name"], topic["Value"], DISPLAY_TYPES[cls], latched))
    return manager["Global Options"]["Fixed Frame"], wanted


def message_class(type_name: str):
    """The rclpy class of `pkg/msg/Type`."""
    package, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def frames(msg) -> set[str]:
    """The frame ids a message carries (every marker's for a MarkerArray)."""
    if hasattr(msg, "markers"):
        return {m.header.frame_id for m in msg.markers}
    return {msg.header.frame_id}


def start_system(ros, tmp_path: Path) -> NodeProcess:
    lockstep = os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep"))
    argv = [lockstep, "launch", str(SYSTEM_LAUNCH), f"recorder_output:={tmp_path / 'bag'}"]
    proc = NodeProcess(argv, dict(ros.env), tmp_path / "system_launch.log", "lockstep launch system")
    ros.processes.append(proc)  # stopped (SIGINT) at teardown, its log printed if the test fails
    return proc


def check(ros, tmp_path: Path, rviz_file: Path, timeout: float = 60.0) -> None:
    fixed_frame, wanted = rviz_topics(rviz_file)
    assert fixed_frame == "map", f"{rviz_file}: Fixed Frame is {fixed_frame!r}, not map"
    assert wanted, f"{rviz_file} names no topic"
    received = {}
    for _, topic, type_name, latched in wanted:
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
        received[topic] = ros.collect(message_class(type_name), topic, qos)
    proc = start_system(ros, tmp_path)

    def missing() -> list[str]:
        published = dict(ros.node.get_topic_names_and_types())
        return [f"{name} ({topic}, {type_name}): published as {published.get(topic, 'nothing')}, "
                f"{ros.node.count_publishers(topic)} publisher(s)"
                for name, topic, type_name, _ in wanted
                if type_name not in published.get(topic, []) or ros.node.count_publishers(topic) < 1]

    try:
        ros.wait_until(lambda: not missing(), timeout, "every rviz topic with its type and a publisher", proc=proc)
    except TimeoutError as e:
        raise AssertionError(f"{e}: {missing()}") from None
    ros.wait_until(lambda: all(received[topic] for _, topic, _, _ in wanted), timeout,
                   f"a message on each of {[t for _, t, _, _ in wanted]}", proc=proc)
    for name, topic, _, _ in wanted:
        expected = OTHER_FRAMES.get(topic, fixed_frame)
        got = set().union(*(frames(m) for m in list(received[topic])))
        assert got == {expected}, f"{name} ({topic}): frame_id {sorted(got)}, rviz draws it in {expected}"


def test_every_rviz_topic_is_published_by_the_system_launch(ros, tmp_path):
    check(ros, tmp_path, RVIZ_FILE)


def test_a_topic_the_system_does_not_publish_fails_the_check(ros, tmp_path):
    """The check itself: a copy of the rviz file whose path display reads /plan (nav_msgs/Path, which the
    simulator does not publish) must fail it, naming the display (the topic is in the graph through this test's own subscription, with no
    publisher)."""
    config = yaml.safe_load(RVIZ_FILE.read_text())
    config["Visualization Manager"]["Displays"].append(
        {"Class": "rviz_default_plugins/Path", "Name": "Planned path",
         "Topic": {"Value": "/plan", "Durability Policy": "Volatile"}})
    wrong = tmp_path / "wrong.rviz"
    wrong.write_text(yaml.safe_dump(config))
    # 20 s: the system is up within seconds, and its other topics are found meanwhile.
    with pytest.raises(AssertionError, match=r"Planned path \(/plan, nav_msgs/msg/Path\): .*0 publisher\(s\)"):
        check(ros, tmp_path, wrong, timeout=20)
