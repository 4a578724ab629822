"""The output bag of `lockstep replay` is a recording of its own: beside the simulated outputs and their headers
it holds the recorded inputs the replayed frames consumed (/odom, /scan_front, /scan_rear), so replaying it with
the same live modules over DDS gives the same outputs again, every frame exact; `--in-process` too."""

import collections
import hashlib

import yaml

from mcap.reader import make_reader

from test_lockstep_replay import assert_exact, recording, replay, start_step_modules, stop
from test_pipeline import HOLD
from test_pipeline_recording import lockstep_replay

OUTPUTS = ["/cmd_vel", "/mission", "/obstacles"]
INPUTS = ["/odom", "/scan_front", "/scan_rear"]


def data_digests(bag) -> dict:
    """topic -> Counter of the SHA-256 of each message's bytes, data topics only (header sidecars left out)."""
    out = collections.defaultdict(collections.Counter)
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            for _, channel, message in make_reader(f).iter_messages():
                if not channel.topic.endswith("/lockstep_header"):
                    out[channel.topic][hashlib.sha256(message.data).hexdigest()] += 1
    return dict(out)


def frames_exact(report) -> dict:
    """channel -> (simulated, exact) of a replay report."""
    return {name: (c["simulated"], c["exact"]) for name, c in report["channels"].items()}


def test_the_output_bag_replays_to_the_same_outputs_over_dds_and_in_process(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    procs = start_step_modules(ros)
    first = tmp_path / "first" / "simulated"
    first.parent.mkdir()
    _, report = replay(ros, bag, first)
    assert_exact(report)

    # The output bag holds recorded /odom and scans: messages of the recording, byte for byte.
    recorded, written = data_digests(bag), data_digests(first)
    for topic in INPUTS:
        assert written.get(topic), (topic, sorted(written))
        assert set(written[topic]) <= set(recorded[topic]), topic

    # Every topic keeps the type hash it was recorded with (so tools such as `rosbags` copy it as it is).
    def hashes(path):
        info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        return {t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
                for t in info["topics_with_message_count"]}

    recorded_hashes, written_hashes = hashes(bag), hashes(first)
    assert written_hashes and all(written_hashes[t] == recorded_hashes[t] for t in written_hashes), written_hashes
    assert all(h.startswith("RIHS01_") for h in written_hashes.values()), written_hashes

    # Replayed with the same live modules: the same outputs, every frame exact, fed from the output bag.
    second = tmp_path / "second" / "simulated"
    second.parent.mkdir()
    _, again = replay(ros, first, second)
    stop(procs)
    assert_exact(again)
    assert again["frames_replayed"] == report["frames_replayed"], (again["frames_replayed"], again["frames_skipped"])
    assert frames_exact(again) == frames_exact(report)
    assert again["channels_published_from_recording"] == INPUTS, again["channels_published_from_recording"]
    assert again["modules_not_live"] == []
    for name, m in again["modules"].items():
        assert m["frames"] > 0 and m["inputs_as_recorded"] == m["frames"], (name, m)
    rewritten = data_digests(second)
    assert sorted(rewritten) == sorted(written)
    for topic in OUTPUTS + INPUTS:
        assert rewritten[topic] == written[topic], topic

    # In-process, the modules' own logic: the same outputs again.
    in_process = tmp_path / "in_process" / "simulated"
    in_process.parent.mkdir()
    logic = lockstep_replay(first, in_process, f"mission_planner.hold={HOLD}")
    assert_exact(logic)
    assert logic["frames_replayed"] == report["frames_replayed"]
    assert frames_exact(logic) == frames_exact(report)
    by_logic = data_digests(in_process)
    for topic in OUTPUTS + INPUTS:
        assert by_logic[topic] == written[topic], topic
