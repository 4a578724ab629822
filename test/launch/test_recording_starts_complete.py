"""A recording made with the shipped system.launch.xml starts complete: `lockstep launch` starts the recorder
first and holds the modules that read other nodes' outputs (m1 and m2) until the recorder says it is ready,
that is until it records the outside inputs (the simulator's range sensors and odometry, m3's missions). So the
lock-step replay of a fresh recording skips no frame, and the first frame m1 and m2 ever computed is in the
recording with every input it read."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lockstep_interfaces.msg import DependencyHeader, RecorderStatus
from mcap.reader import make_reader
from rclpy.serialization import deserialize_message

from lockstep_testing.harness import REPO_ROOT, binary, run_tool

LAUNCH_DIR = REPO_ROOT / "launch"


def first_frames(bag: Path) -> dict[str, DependencyHeader]:
    """The recorded header with the lowest sequence number of each traced channel."""
    first: dict[str, DependencyHeader] = {}
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            for _, channel, message in make_reader(f).iter_messages():
                if not channel.topic.endswith("/lockstep_header"):
                    continue
                header = deserialize_message(message.data, DependencyHeader)
                known = first.get(header.channel_name)
                if known is None or header.sequence_num < known.sequence_num:
                    first[header.channel_name] = header
    return first


def test_a_system_launch_recording_replays_without_a_skipped_frame(ros, tmp_path):
    bag, replayed = tmp_path / "run", tmp_path / "replayed"
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    system = ros.start("lockstep", "launch", str(LAUNCH_DIR / "system.launch.xml"), f"recorder_output:={bag}",
                       "--color", "never", "--log-dir", str(tmp_path / "system-logs"), name="system")

    # A few seconds of the pipeline: m2 commands at 10 Hz, so 20 commands written are about two seconds.
    def written(topic: str) -> int:
        topics = status[-1].topics if status else []
        return next((t.messages for t in topics if t.topic == topic), 0)
    ros.wait_until(lambda: written("/cmd_vel") >= 20 and written("/mission") >= 2, timeout=120, proc=system,
                   what="20 commands and 2 missions written by the recorder")
    assert system.stop(timeout=20) == 0, system.log()[-3000:]

    replay = run_tool([str(binary("lockstep")), "replay", str(bag), "--output", str(replayed), "--in-process",
                       "--quiet"], env=dict(os.environ, ROS_DOMAIN_ID=str(ros.domain_id)), timeout=120)
    assert replay.returncode == 0, replay.stderr
    report = json.loads((replayed / "report.json").read_text())
    assert report["frames_skipped"] == [], (report["frames_skipped"][:5], system.log()[-3000:])
    channels = report["channels"]
    assert set(channels) == {"/obstacles", "/cmd_vel", "/mission"}, channels.keys()
    for name, channel in channels.items():
        assert channel["recorded"] > 0 and channel["exact"] == channel["simulated"] == channel["recorded"], \
            (name, channel)
    for module, counts in report["modules"].items():
        assert counts["inputs_as_recorded"] == counts["frames"], (module, counts)

    # Nothing lost at the start: the first frame of each module that reads inputs is its very first (sequence
    # 0), recorded with its inputs (replayed above from exactly the recorded inputs). m3 reads nothing: its
    # first frames may precede the recorder's subscription, and no frame of another module can read them.
    first = first_frames(bag)
    for channel, module in [("/obstacles", "obstacle_fusion"), ("/cmd_vel", "motion_controller")]:
        header = first[channel]
        assert (header.module_name, header.sequence_num) == (module, 0), (channel, header)
    assert {i.channel_name for i in first["/obstacles"].inputs} == {"/scan_front", "/scan_rear"}, first["/obstacles"]
