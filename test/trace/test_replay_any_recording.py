"""Lock-step replay of a recording that lockstep_recorder did not write: copies of a pipeline recording made by
the Python `rosbags` writer (a sqlite3 bag and an MCAP bag, every topic kept, the `/lockstep_header` topics
included, but none of the recorder's metadata records) replay over DDS through the live modules to exactly the
outputs of the original, the module topology rebuilt from the dependency headers. The recorder's metadata
carries each topic's type description hash as rosbag2 Jazzy writes it, which is what lets `rosbags` copy the
bag's topics as they are."""

import hashlib
import os
import re
import subprocess
from pathlib import Path

import yaml
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader, StoragePlugin, Writer

from test_lockstep_replay import assert_exact, recording, replay, start_step_modules, stop
from test_pipeline import TYPESTORE

RIHS01 = re.compile(r"^RIHS01_[0-9a-f]{64}$")


def rosbags_copy(src: Path, dst: Path, storage: StoragePlugin) -> Path:
    """Every topic and message of `src` written into a new bag `dst` by `rosbags`, each topic as the source
    describes it (type, definition, type hash, QoS): nothing of lockstep_recorder's own metadata is kept."""
    with Reader(src) as reader, Writer(dst, version=9, storage_plugin=storage) as writer:
        copied = {}
        for c in reader.connections:
            copied[c.id] = writer.add_connection(
                c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest,
                serialization_format=c.ext.serialization_format,
                offered_qos_profiles=c.ext.offered_qos_profiles)
        for c, timestamp, raw in reader.messages():
            writer.write(copied[c.id], timestamp, raw)
    return dst


def message_digests(bag: Path) -> dict:
    """topic -> SHA-256 of each message's bytes, in log order (read by `rosbags`)."""
    out = {}
    with Reader(bag) as reader:
        for c, _, raw in reader.messages():
            out.setdefault(c.topic, []).append(hashlib.sha256(bytes(raw)).hexdigest())
    return out


def bag_info(bag: Path) -> str:
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_recorder_writes_each_topics_type_hash_as_rosbag2_jazzy(ros, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    hashes = {t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
              for t in info["topics_with_message_count"]}
    assert "/cmd_vel/lockstep_header" in hashes and "/odom" in hashes, hashes
    assert all(RIHS01.match(h) for h in hashes.values()), hashes
    # One type, one hash: the three header topics share theirs.
    assert len({hashes[t] for t in hashes if t.endswith("/lockstep_header")}) == 1, hashes
    # The hashes of the standard types are the ones `rosbags` computes from their Jazzy definitions.
    types = {t["topic_metadata"]["name"]: t["topic_metadata"]["type"] for t in info["topics_with_message_count"]}
    for topic in ["/odom", "/scan_front", "/cmd_vel", "/obstacles", "/mission"]:
        assert hashes[topic] == TYPESTORE.hash_rihs01(types[topic]), (topic, types[topic])
    # The MCAP channels carry it too (rosbag2's `topic_type_hash`), as `rosbags` reads it.
    with Reader(bag) as reader:
        assert {c.topic: c.digest for c in reader.connections} == hashes


def test_rosbags_copies_without_the_topology_record_replay_to_the_same_outputs(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    copies = {
        "sqlite3": rosbags_copy(bag, tmp_path / "copy_sqlite3", StoragePlugin.SQLITE3),
        "mcap": rosbags_copy(bag, tmp_path / "copy_mcap", StoragePlugin.MCAP),
    }
    assert list((tmp_path / "copy_sqlite3").glob("*.db3")), list((tmp_path / "copy_sqlite3").iterdir())
    (mcap_file,) = (tmp_path / "copy_mcap").glob("*.mcap")
    with open(mcap_file, "rb") as f:
        records = [m.name for m in make_reader(f).iter_metadata()]
    assert not any(r.startswith("lockstep") for r in records), records
    # Every topic and message made it into the copies, the header topics included.
    original_digests = message_digests(bag)
    assert {"/obstacles/lockstep_header", "/cmd_vel/lockstep_header", "/mission/lockstep_header"} <= set(
        original_digests)
    for name, copy in copies.items():
        assert message_digests(copy) == original_digests, name

    # `lockstep bag info` says where lock-step replay takes the topology from.
    assert "Topology source:  the recorder's record (lockstep_topology" in bag_info(bag)
    for name, copy in copies.items():
        text = bag_info(copy)
        assert ("Topology source:  rebuilt from 3 dependency header topics (no topology record in the bag)"
                in text), (name, text)

    procs = start_step_modules(ros)
    outs, reports, stdout = {}, {}, {}
    for name, source in [("original", bag), *copies.items()]:
        out = tmp_path / name / "simulated"
        out.parent.mkdir()
        completed, reports[name] = replay(ros, source, out)
        outs[name], stdout[name] = out, completed.stdout
    stop(procs)
    assert reports["original"]["topology_source"] == "the recorder's topology record"
    assert "module topology" not in stdout["original"], stdout["original"]
    for name in copies:
        rebuilt = "rebuilt from 3 dependency header topics (no topology record in the bag)"
        assert reports[name]["topology_source"] == rebuilt, reports[name]["topology_source"]
        assert f"module topology {rebuilt}" in stdout[name], stdout[name]

    original = reports["original"]
    assert_exact(original)
    assert sorted(original["channels"]) == ["/cmd_vel", "/mission", "/obstacles"], original["channels"]
    simulated = {name: message_digests(out) for name, out in outs.items()}
    assert {"/cmd_vel", "/obstacles", "/mission"} <= set(simulated["original"]), sorted(simulated["original"])
    for name in copies:
        report = reports[name]
        assert report["mode"] == "dds", report
        assert_exact(report)
        # The same frames replayed, the same comparison per channel, the same modules fed the same way.
        assert report["channels"] == original["channels"], name
        for key in ("frames_selected", "frames_replayed", "frames_skipped", "modules_not_live",
                    "channels_published_from_recording"):
            assert report[key] == original[key], (name, key, report[key], original[key])
        assert ({m: (v["frames"], v["inputs_as_recorded"]) for m, v in report["modules"].items()}
                == {m: (v["frames"], v["inputs_as_recorded"]) for m, v in original["modules"].items()}), name
        # The simulated outputs, message for message, bit for bit.
        assert simulated[name] == simulated["original"], name


def test_a_bag_with_neither_topology_record_nor_headers_is_refused_naming_it(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    plain = tmp_path / "no_headers"
    with Reader(bag) as reader, Writer(plain, version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        copied = {c.id: writer.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest,
                                              offered_qos_profiles=c.ext.offered_qos_profiles)
                  for c in reader.connections if not c.topic.endswith("/lockstep_header")}
        for c, timestamp, raw in reader.messages():
            if c.id in copied:
                writer.write(copied[c.id], timestamp, raw)
    assert "Topology source:  none (no topology record and no dependency header topic" in bag_info(plain)
    run, _ = replay(ros, plain, tmp_path / "out", "--in-process", expect_ok=False)
    assert str(plain) in run.stderr and "no module topology" in run.stderr, run.stderr
    assert "lockstep_header" in run.stderr, run.stderr
