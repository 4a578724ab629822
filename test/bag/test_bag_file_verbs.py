"""`lockstep bag filter / merge / du` checked against readers nobody here wrote: every result is compared with a
reference computed here with `rosbags` (the same messages, in the same order, with the same bytes) and, for the
chunk figures, with the Python `mcap` package's view of the files' chunk indexes. The last test filters a
recording of the example pipeline and replays it in lock-step.

Needs what test_bag_rosbags.py needs (rosbags, mcap, the `lockstep` binary: $LOCKSTEP_BIN, else
target/debug/lockstep); the pipeline test also needs the example modules and the recorder built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader, StoragePlugin, Writer

from test_bag_rosbags import (QOS, assert_one_clear_error, error_of, file_hashes, lockstep,  # noqa: F401
                              read_all, run, typestore, validate_mcap_files)

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def secs(ns: int) -> str:
    """Nanoseconds since the epoch as the exact decimal seconds the time options take."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def string(ts, text: str) -> bytes:
    return bytes(ts.serialize_cdr(ts.types["std_msgs/msg/String"](data=text), "std_msgs/msg/String"))


def write_bag(path: Path, plugin, ts, messages) -> None:
    """A bag written by rosbags from (topic, msgtype, time, raw CDR) in this order, every topic with QOS."""
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conns = {}
        for topic, msgtype, t, raw in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts, offered_qos_profiles=[QOS])
            writer.write(conns[topic], t, raw)


def recording(ts) -> list[tuple[str, str, int, bytes]]:
    """A recording's messages: data topics at shared times (ties), a dependency-header sidecar, Lockstep's
    topology (once, at the start) and events topics, a latched /tf_static published twice."""
    twist = ts.types["geometry_msgs/msg/Twist"]
    vector = ts.types["geometry_msgs/msg/Vector3"]
    out = []
    for i in range(200):
        t = T0 + i * 10 * MS
        if i == 0:
            out.append(("/lockstep/topology/m1", "std_msgs/msg/String", t, string(ts, "reads=/cmd_vel")))
        if i in (0, 50):
            out.append(("/tf_static", "std_msgs/msg/String", t, string(ts, f"static {i}")))
        out.append(("/chatter", "std_msgs/msg/String", t, string(ts, f"hello {i}")))
        out.append(("/chatter/lockstep_header", "std_msgs/msg/String", t, string(ts, f"header {i}")))
        cmd = twist(linear=vector(x=0.1 * i, y=0.0, z=0.0), angular=vector(x=0.0, y=0.0, z=-0.5))
        out.append(("/cmd_vel", "geometry_msgs/msg/Twist", t, bytes(ts.serialize_cdr(cmd, "geometry_msgs/msg/Twist"))))
        if i % 2 == 0:
            out.append(("/camera", "std_msgs/msg/String", t, string(ts, "pixels " * (20 + i))))
        if i % 20 == 0:
            out.append(("/lockstep/events/n1", "std_msgs/msg/String", t, string(ts, f"events {i}")))
    return out


def last_before(messages, topics, start_ns):
    """The last message of each of `topics` before `start_ns`, in the bag's order."""
    last = {}
    for index, m in enumerate(messages):
        if m[0] in topics and m[2] < start_ns:
            last[m[0]] = (index, m)
    return [m for _, m in sorted(last.values())]


def qos_of(bag: Path) -> dict:
    with Reader(bag) as reader:
        return {c.topic: (c.msgtype, c.ext.offered_qos_profiles) for c in reader.connections}


@pytest.mark.parametrize("plugin", [StoragePlugin.MCAP, StoragePlugin.SQLITE3], ids=["mcap", "sqlite3"])
def test_filter_keeps_what_rosbags_selects(lockstep, typestore, tmp_path, plugin):
    src, out = tmp_path / "src", tmp_path / "out"
    write_bag(src, plugin, typestore, recording(typestore))
    before = file_hashes(src)
    start, end = T0 + 700 * MS + 1, T0 + 1500 * MS
    stdout = run(lockstep, "filter", src, out, "--topics", "/chatter", "/tf_static", "/camera", "-x", "^/camera",
                 "--start-time", secs(start), "--end-time", secs(end), "--last-per-channel-topic-regex", "/tf_static",
                 "--compression", "zstd")

    _, everything = read_all(src)
    kept = {"/chatter", "/chatter/lockstep_header", "/tf_static", "/camera", "/lockstep/topology/m1",
            "/lockstep/events/n1"}
    want = last_before(everything, {"/tf_static", "/lockstep/topology/m1"}, start)
    assert [m[3] for m in want] == [string(typestore, "reads=/cmd_vel"), string(typestore, "static 50")]
    want += [m for m in everything if m[0] in kept and start <= m[2] < end]
    counts, got = read_all(out)
    assert got == want
    assert f"kept {len(want)} of {len(everything)} messages (2 from before the start)" in stdout, stdout
    assert set(counts) == kept, "a listed topic stays though the exclusion matches it; /cmd_vel goes"
    assert validate_mcap_files(out) == len(want)
    original = qos_of(src)
    assert qos_of(out) == {t: original[t] for t in kept}, "types and QoS as recorded"
    assert file_hashes(src) == before, "filtering changed its input"


def test_last_per_channel_keeps_the_latched_message(lockstep, typestore, tmp_path):
    src = tmp_path / "src"
    messages = [("/map", "std_msgs/msg/String", T0, string(typestore, "the map"))]
    messages += [("/odom", "std_msgs/msg/String", T0 + i * 100 * MS, string(typestore, f"odom {i}")) for i in range(100)]
    write_bag(src, StoragePlugin.MCAP, typestore, messages)
    with_map, without = tmp_path / "with", tmp_path / "without"
    run(lockstep, "filter", src, with_map, "--start-offset", "5", "--last-per-channel-topic-regex", "/map|/tf_static")
    run(lockstep, "filter", src, without, "--start-offset", "5")
    _, got = read_all(with_map)
    assert got[0] == ("/map", "std_msgs/msg/String", T0, string(typestore, "the map")), got[0]
    assert got[1:] == [m for m in read_all(src)[1] if m[0] == "/odom" and m[2] >= T0 + 5_000 * MS]
    counts, _ = read_all(without)
    assert counts["/map"] == 0 and counts["/odom"] == 50


def merge_input(ts, n: int, shared_type: str = "std_msgs/msg/String"):
    """Input n of the merge: /shared (in every input) and /own<n>, every time shared by all inputs, and two
    messages at each time inside the input."""
    out = []
    for i in range(30):
        t = T0 + (i // 2) * MS
        raw = string(ts, f"shared {n} {i}") if shared_type == "std_msgs/msg/String" else bytes(
            ts.serialize_cdr(ts.types[shared_type](data=i), shared_type))
        out.append(("/shared", shared_type, t, raw))
        out.append((f"/own{n}", "std_msgs/msg/String", t, string(ts, f"own {n} {i}")))
    return out


def test_three_bags_merged_keep_input_order_on_equal_stamps(lockstep, typestore, tmp_path):
    inputs = [tmp_path / f"in{n}" for n in range(3)]
    for n, path in enumerate(inputs):
        write_bag(path, StoragePlugin.MCAP, typestore, merge_input(typestore, n))
    before = {p: file_hashes(p) for p in inputs}
    order = [inputs[1], inputs[2], inputs[0]]
    out = tmp_path / "merged"
    stdout = run(lockstep, "merge", out, *order)
    # The reference: every input as rosbags reads it, in command-line order, stably sorted by time.
    want = sorted((m for path in order for m in read_all(path)[1]), key=lambda m: m[2])
    counts, got = read_all(out)
    assert got == want
    assert f"merged {len(want)} messages from 3 bags" in stdout, stdout
    assert counts == {"/shared": 90, "/own0": 30, "/own1": 30, "/own2": 30}
    assert validate_mcap_files(out) == len(want)
    assert all(file_hashes(p) == before[p] for p in inputs), "merging changed an input"


def test_merge_refuses_one_topic_with_two_types(lockstep, typestore, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_bag(a, StoragePlugin.MCAP, typestore, merge_input(typestore, 0))
    write_bag(b, StoragePlugin.SQLITE3, typestore, merge_input(typestore, 1, "std_msgs/msg/Int32"))
    err = error_of(lockstep, "merge", tmp_path / "out", a, b)
    assert_one_clear_error(err, "/shared", "std_msgs/msg/String", "std_msgs/msg/Int32", str(a), str(b))
    assert not (tmp_path / "out").exists()


def chunk_figures(bag: Path) -> dict:
    """(file, compression) -> [chunks, compressed, uncompressed] from the python `mcap` summary."""
    figures = {}
    for path in sorted(bag.glob("*.mcap")):
        with path.open("rb") as f:
            for c in make_reader(f).get_summary().chunk_indexes:
                row = figures.setdefault((path.name, c.compression or "none"), [0, 0, 0])
                row[0] += 1
                row[1] += c.compressed_size
                row[2] += c.uncompressed_size
    return figures


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_du_adds_up_like_rosbags_and_mcap(lockstep, typestore, tmp_path, compression):
    src, bag = tmp_path / "src", tmp_path / "bag"
    write_bag(src, StoragePlugin.MCAP, typestore, recording(typestore))
    run(lockstep, "convert", src, bag, "--compression", compression, "--max-bag-size-bytes", "20000")
    report = json.loads(run(lockstep, "du", bag, "--json"))

    counts, messages = read_all(bag)
    sizes = {topic: [n, 0] for topic, n in counts.items()}
    for topic, _, _, raw in messages:
        sizes[topic][1] += len(raw)
    total = sum(size for _, size in sizes.values())
    want = sorted(sizes.items(), key=lambda kv: (-kv[1][1], kv[0]))
    got = [(t["topic"], [t["messages"], t["payload_bytes"]]) for t in report["topics"]]
    assert got == want
    assert report["payload_bytes"] == total and report["messages"] == len(messages)
    for t in report["topics"]:
        assert t["share_percent"] == pytest.approx(100 * t["payload_bytes"] / total, abs=1e-4)
    chunks = {(c["file"], c["compression"]): [c["chunks"], c["compressed_bytes"], c["uncompressed_bytes"]]
              for c in report["chunks"]}
    assert chunks == chunk_figures(bag) and len({f for f, _ in chunks}) > 1, "a split bag: several files"
    sizes_on_disk = [c["compressed_bytes"] for c in report["chunks"]]
    assert sizes_on_disk == sorted(sizes_on_disk, reverse=True)
    assert {c for _, c in chunks} == {compression}
    # The text form says the same, aligned.
    text = run(lockstep, "du", bag)
    rows = [line.split() for line in text.splitlines()[3:3 + len(want)]]
    assert [(r[0], [int(r[2]), int(r[3])]) for r in rows] == want, text


def lockstep_topics(bag: Path) -> dict:
    """Lockstep's own topics of a bag with their message counts, as rosbags sees them."""
    with Reader(bag) as reader:
        return {c.topic: c.msgcount for c in reader.connections if c.topic.startswith("/lockstep/")}


def test_a_filtered_pipeline_recording_keeps_its_lockstep_data_and_replays(ros, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trace"))
    from test_pipeline import HOLD
    from test_pipeline_recording import lockstep_replay, record_pipeline

    lockstep_bin = os.environ["LOCKSTEP_BIN"]
    bag = tmp_path / "bag"
    record_pipeline(ros, bag, ticks=60)
    recorded = lockstep_topics(bag)
    assert any(t.startswith("/lockstep/topology/") for t in recorded), recorded

    # Only the commands: the Lockstep topics, the commands' headers, the records and custom_data stay.
    cmd = tmp_path / "cmd"
    done = subprocess.run([lockstep_bin, "bag", "filter", str(bag), str(cmd), "--topics", "/cmd_vel"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert lockstep_topics(cmd) == recorded
    with Reader(cmd) as reader:
        topics = {c.topic for c in reader.connections}
    assert topics == {"/cmd_vel", "/cmd_vel/lockstep_header", *recorded}
    for path in (bag, cmd):
        with open(next(path.glob("*.mcap")), "rb") as f:
            names = {a.name for a in make_reader(f).iter_attachments()}
            f.seek(0)
            names |= {m.name for m in make_reader(f).iter_metadata()}
        assert {"lockstep/topology.pb", "lockstep_topology"} <= names, (path, names)
    info = [yaml.safe_load((p / "metadata.yaml").read_text())["rosbag2_bagfile_information"] for p in (bag, cmd)]
    assert info[1]["custom_data"] == info[0]["custom_data"]

    # Every module's inputs and outputs, named (their headers come along): the copy replays in lock-step.
    data = ["/scan_front", "/scan_rear", "/odom", "/mission", "/obstacles", "/cmd_vel"]
    pipeline = tmp_path / "pipeline"
    done = subprocess.run([lockstep_bin, "bag", "filter", str(bag), str(pipeline), "--topics", *data],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "replay" / "simulated"
    out.parent.mkdir()
    report = lockstep_replay(pipeline, out, f"mission_planner.hold={HOLD}")
    channels = report["channels"]
    assert sorted(channels) == ["/cmd_vel", "/mission", "/obstacles"], channels
    for name, c in channels.items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)
