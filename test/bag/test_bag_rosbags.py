"""Black-box checks of `lockstep bag` against tools nobody here wrote: the Python `rosbags` and
`mcap` packages, and the real rosbag2 bags in test/data/rosbag2 (rosbag2's own test bags).

Needs: pytest, rosbags, mcap, zstandard; the `lockstep` binary: $LOCKSTEP_BIN, else
$CARGO_TARGET_DIR/debug/lockstep or target/debug/lockstep (`cargo build -p lockstep_cli --bins`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import math

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

REPO = Path(__file__).resolve().parents[2]
ROSBAG2 = REPO / "test" / "data" / "rosbag2"

# Messages per topic in each of rosbag2's bags (topics without messages are listed with 0).
ROSBAG2_BAGS = {
    "mcap/talker": {"/topic": 10, "/rosout": 10, "/parameter_events": 0},
    "sqlite3/talker": {"/topic": 10, "/rosout": 10, "/parameter_events": 0},
    "mcap/cdr_test": {"/array_topic": 4, "/test_topic": 3},
    "mcap/bag_with_topics_and_service_events": {
        "/events/write_split": 0,
        "/test_service1/_service_event": 4,
        "/test_service2/_service_event": 4,
        "/test_topic1": 1,
        "/test_topic2": 1,
    },
    "mcap/test_bag_for_seek": {"topic1": 5},
}


@pytest.fixture(scope="module")
def lockstep() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = os.environ.get("LOCKSTEP_BIN") or str(target / "debug" / "lockstep")
    if not Path(binary).is_file():
        pytest.fail(f"no `lockstep` binary at {binary!r}: set LOCKSTEP_BIN or run `cargo build -p lockstep_cli --bins`")
    return binary


@pytest.fixture(scope="module")
def typestore():
    return get_typestore(Stores.ROS2_JAZZY)


def run(lockstep: str, *args: str | Path) -> str:
    proc = subprocess.run([lockstep, "bag", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"lockstep bag {args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def plain(value):
    """A message as nested plain Python values (numpy arrays become lists) for equality checks."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


def read_all(path: Path, typestore=None) -> tuple[dict[str, int], list[tuple[str, str, int, bytes]]]:
    """Every message of a bag as read by rosbags, plus the per-topic counts it reports."""
    with Reader(path) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        msgs = [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in reader.messages()]
    return counts, msgs


def validate_mcap_files(bag: Path) -> int:
    """Reads every MCAP file of a bag with the python `mcap` package (summary, CRCs); returns messages."""
    total = 0
    files = sorted(bag.glob("*.mcap"))
    assert files, f"no MCAP file in {bag}"
    for f in files:
        with f.open("rb") as stream:
            reader = make_reader(stream, validate_crcs=True)
            header = reader.get_header()
            assert header.profile == "ros2"
            summary = reader.get_summary()
            assert summary is not None and summary.statistics is not None, f"{f} has no summary"
            for schema in summary.schemas.values():
                assert schema.encoding in ("ros2msg", ""), schema.encoding
            for channel in summary.channels.values():
                assert channel.message_encoding == "cdr"
                assert "offered_qos_profiles" in channel.metadata and "topic_type_hash" in channel.metadata
            names = [m.name for m in reader.iter_metadata()]
            assert "rosbag2" in names, names
            n = sum(1 for _ in reader.iter_messages())
            assert n == summary.statistics.message_count
            total += n
    return total


QOS = Qos(
    QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE,
    QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False,
)


def make_messages(ts):
    """(topic, msgtype, time, message) covering strings, nested structs, headers and arrays."""
    String = ts.types["std_msgs/msg/String"]
    Twist = ts.types["geometry_msgs/msg/Twist"]
    Vector3 = ts.types["geometry_msgs/msg/Vector3"]
    JointState = ts.types["sensor_msgs/msg/JointState"]
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    PoseStamped = ts.types["geometry_msgs/msg/PoseStamped"]
    Pose = ts.types["geometry_msgs/msg/Pose"]
    Point = ts.types["geometry_msgs/msg/Point"]
    Quaternion = ts.types["geometry_msgs/msg/Quaternion"]
    out = []
    for i in range(60):
        t = 1_700_000_000_000_000_000 + (i // 3) * 10_000_000  # triples share a timestamp
        stamp = Time(sec=1_700_000_000 + i // 100, nanosec=(i * 10_000_000) % 1_000_000_000)
        kind = i % 4
        if kind == 0:
            out.append(("/chatter", "std_msgs/msg/String", t, String(data=f"hello {i} ✓")))
        elif kind == 1:
            out.append(("/cmd_vel", "geometry_msgs/msg/Twist", t,
                        Twist(linear=Vector3(x=0.1 * i, y=0.0, z=-1.5), angular=Vector3(x=0.0, y=0.0, z=i / 7))))
        elif kind == 2:
            out.append(("/joint_states", "sensor_msgs/msg/JointState", t, JointState(
                header=Header(stamp=stamp, frame_id="base_link"),
                name=["j1", "j2", "j3"][: 1 + i % 3],
                position=np.array([0.5 * i, 1.0, 2.0][: 1 + i % 3], dtype=np.float64),
                velocity=np.array([], dtype=np.float64),
                effort=np.array([1e-3 * i] * (1 + i % 3), dtype=np.float64),
            )))
        else:
            out.append(("/pose", "geometry_msgs/msg/PoseStamped", t, PoseStamped(
                header=Header(stamp=stamp, frame_id="map"),
                pose=Pose(position=Point(x=i, y=-i, z=0.25), orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)),
            )))
    return out


def write_with_rosbags(path: Path, plugin, ts, messages, compression=None) -> None:
    writer = Writer(path, version=9, storage_plugin=plugin)
    if compression is not None:
        writer.set_compression(compression, CompressionFormat.ZSTD)
    with writer:
        conns = {}
        for topic, msgtype, _, _ in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts, offered_qos_profiles=[QOS])
        for topic, msgtype, t, msg in messages:
            writer.write(conns[topic], t, ts.serialize_cdr(msg, msgtype))


@pytest.mark.parametrize("plugin", [StoragePlugin.MCAP, StoragePlugin.SQLITE3], ids=["mcap", "sqlite3"])
@pytest.mark.parametrize("options", [[], ["--compression", "zstd", "--max-bag-size-bytes", "3000"]], ids=["plain", "zstd-split"])
def test_rosbags_bag_converts_and_reads_back_equal(lockstep, typestore, tmp_path, plugin, options):
    messages = make_messages(typestore)
    src = tmp_path / "src"
    write_with_rosbags(src, plugin, typestore, messages)
    out = tmp_path / "out"
    stdout = run(lockstep, "convert", src, out, *options)
    assert f"converted {len(messages)} messages" in stdout

    counts, got = read_all(out)
    expected_counts = {}
    for topic, *_ in messages:
        expected_counts[topic] = expected_counts.get(topic, 0) + 1
    assert counts == expected_counts
    original = sorted((topic, msgtype, t, bytes(typestore.serialize_cdr(m, msgtype))) for topic, msgtype, t, m in messages)
    assert sorted(got) == original
    by_key = {(topic, t, bytes(typestore.serialize_cdr(m, msgtype))): m for topic, msgtype, t, m in messages}
    for topic, msgtype, t, raw in got:
        decoded = typestore.deserialize_cdr(raw, msgtype)
        assert plain(decoded) == plain(by_key[(topic, t, raw)])
    if options:
        assert len(list(out.glob("*.mcap"))) > 1, "expected a split bag"
    assert validate_mcap_files(out) == len(messages)

    # Definitions written by rosbags survive, so a reader without the types can register them.
    with Reader(out) as reader:
        for conn in reader.connections:
            assert conn.msgdef.data, conn.topic
            fresh = get_typestore(Stores.EMPTY)
            fresh.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
            assert conn.msgtype in fresh.types


@pytest.mark.parametrize("plugin", [StoragePlugin.MCAP, StoragePlugin.SQLITE3], ids=["mcap", "sqlite3"])
@pytest.mark.parametrize("mode", [CompressionMode.FILE, CompressionMode.MESSAGE], ids=["file", "message"])
def test_rosbag2_compressed_bags_read_info_and_convert(lockstep, typestore, tmp_path, plugin, mode):
    """rosbag2's --compression-mode file|message --compression-format zstd, as rosbags writes it."""
    messages = make_messages(typestore)
    src = tmp_path / "src"
    write_with_rosbags(src, plugin, typestore, messages, compression=mode)
    suffix = ".zstd" if mode == CompressionMode.FILE else ""
    assert list(src.glob(f"*.{'mcap' if plugin == StoragePlugin.MCAP else 'db3'}{suffix}")), list(src.iterdir())
    before = file_hashes(src)

    text = run(lockstep, "info", src)
    assert f"Compression:       zstd ({mode.name})" in text, text
    assert f"Messages:          {len(messages)}" in text, text

    out = tmp_path / "out"
    assert f"converted {len(messages)} messages" in run(lockstep, "convert", src, out)
    _, want = read_all(src)  # rosbags decompresses its own bag
    _, got = read_all(out)
    assert got == want, "converted messages differ from the compressed bag's (decompressed by rosbags)"
    # echo decodes the decompressed messages.
    chatter = [plain(m) for t, _, _, m in messages if t == "/chatter"]
    assert same(echoed(lockstep, src, "/chatter"), chatter)
    assert file_hashes(src) == before, "reading the compressed bag changed it"


def register_from_bag(ts, reader) -> None:
    """Registers types the Jazzy store lacks (test_msgs) from the bag's own definitions."""
    for conn in reader.connections:
        if conn.msgtype in ts.types:
            continue
        name = conn.msgtype if conn.msgtype.count("/") == 2 else conn.msgtype.replace("/", "/msg/", 1)
        assert conn.msgdef.data, f"no definition stored for {conn.msgtype}"
        if name.endswith("_Event") and "/srv/" in name:
            # rosbag2 stores a service event's definition as the .srv text (request --- response);
            # the event message wraps both, as rosidl generates it.
            # rosbags' parser only names types pkg/msg/X, so the parts are registered under msg
            # names and the event is also made reachable under its srv name.
            base = name[: -len("_Event")].replace("/srv/", "/msg/")
            request, response = conn.msgdef.data.split("\n---\n", 1)
            types = {}
            types.update(get_types_from_msg(request, f"{base}_Request"))
            types.update(get_types_from_msg(response, f"{base}_Response"))
            event = (
                "service_msgs/msg/ServiceEventInfo info\n"
                f"{base}_Request[<=1] request\n{base}_Response[<=1] response\n"
            )
            event_types = get_types_from_msg(event, f"{base}_Event")
            types.update(event_types)
            types[conn.msgtype] = event_types[f"{base}_Event"]
            ts.register(types)
            continue
        types = get_types_from_msg(conn.msgdef.data, name)
        if name != conn.msgtype:
            types[conn.msgtype] = types[name]
        ts.register(types)


@pytest.mark.parametrize("bag", sorted(ROSBAG2_BAGS))
def test_rosbag2_bags_convert_for_rosbags_and_mcap(lockstep, tmp_path, bag):
    out = tmp_path / "out"
    run(lockstep, "convert", ROSBAG2 / bag, out)
    expected = ROSBAG2_BAGS[bag]
    ts = get_typestore(Stores.ROS2_JAZZY)
    with Reader(out) as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == expected
        register_from_bag(ts, reader)
        seen: dict[str, int] = {}
        for conn, _, raw in reader.messages():
            ts.deserialize_cdr(raw, conn.msgtype)
            seen[conn.topic] = seen.get(conn.topic, 0) + 1
    assert seen == {k: v for k, v in expected.items() if v}
    assert validate_mcap_files(out) == sum(expected.values())


@pytest.mark.parametrize("bag", sorted(ROSBAG2_BAGS))
def test_info_lists_topics_and_counts(lockstep, tmp_path, bag):
    for path in (ROSBAG2 / bag, tmp_path / "converted"):
        if path.name == "converted":
            run(lockstep, "convert", ROSBAG2 / bag, path)
        text = run(lockstep, "info", path)
        for topic, count in ROSBAG2_BAGS[bag].items():
            # A service's introspection events are listed as the service, with their count, as rosbag2 does.
            if topic.endswith("/_service_event"):
                service = topic.removesuffix("/_service_event")
                assert f"Service: {service} |" in text and f"Event Count: {count} |" in text, text
            else:
                assert f"Topic: {topic} |" in text and f"Count: {count} |" in text, text
        assert f"Messages:          {sum(ROSBAG2_BAGS[bag].values())}" in text, text
        assert "Lockstep extra data:" in text


def test_reindex_repairs_a_truncated_bag_for_rosbags(lockstep, typestore, tmp_path):
    messages = make_messages(typestore)
    src = tmp_path / "src"
    # 300 time-shifted copies: about 1.5 MB, so the 768 KiB chunks leave at least one intact.
    shifted = [(tp, mt, t + k * 1_000_000_000, m) for k in range(300) for tp, mt, t, m in messages[:60]]
    write_with_rosbags(src, StoragePlugin.MCAP, typestore, shifted)
    out = tmp_path / "out"
    run(lockstep, "convert", src, out)
    mcap_file = next(out.glob("*.mcap"))
    data = mcap_file.read_bytes()
    mcap_file.write_bytes(data[: len(data) * 2 // 3])
    (out / "metadata.yaml").unlink()
    stdout = run(lockstep, "reindex", "--in-place", out)
    assert "salvaged" in stdout
    counts, got = read_all(out)
    assert 0 < len(got) < len(shifted)
    assert sum(counts.values()) == len(got)
    for _, msgtype, _, raw in got:
        typestore.deserialize_cdr(raw, msgtype)
    assert validate_mcap_files(out) == len(got)


def test_bad_input_is_a_clear_error(lockstep, tmp_path):
    proc = subprocess.run([lockstep, "bag", "info", str(tmp_path / "missing")], capture_output=True, text=True)
    assert proc.returncode != 0 and "missing" in proc.stderr
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  version: 99\n")
    proc = subprocess.run([lockstep, "bag", "info", str(junk)], capture_output=True, text=True)
    assert proc.returncode != 0 and "version 99" in proc.stderr
    shutil.rmtree(junk)


def file_hashes(directory: Path) -> dict[str, str]:
    """Every file of a (flat) directory with the SHA-256 of its content."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def set_writable(directory: Path, writable: bool) -> None:
    """`chmod -R u+w` / `chmod -R a-w` on a flat directory."""
    write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    for path in [*directory.iterdir(), directory]:
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~write)


@pytest.mark.parametrize("bag", sorted(ROSBAG2_BAGS))
def test_reading_a_read_only_bag_writes_nothing(lockstep, tmp_path, bag):
    copy = tmp_path / "bag"
    shutil.copytree(ROSBAG2 / bag, copy)
    before = file_hashes(copy)
    set_writable(copy, False)
    try:
        text = run(lockstep, "info", copy)
        assert f"Messages:          {sum(ROSBAG2_BAGS[bag].values())}" in text, text
        # convert reads every message of the input.
        run(lockstep, "convert", copy, tmp_path / "out")
    finally:
        set_writable(copy, True)
    with Reader(tmp_path / "out") as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == ROSBAG2_BAGS[bag]
    # Tests may run as root, where the permission bits stop no write: compare the files too.
    after = file_hashes(copy)
    assert sorted(after) == sorted(before), f"reading {bag} added or removed files"
    assert after == before, f"reading {bag} changed a file"


def error_of(lockstep: str, *args: str | Path) -> str:
    """Runs `lockstep bag ...` with RUST_BACKTRACE=1, expects it to fail, returns its stderr."""
    env = {**os.environ, "RUST_BACKTRACE": "1"}
    proc = subprocess.run([lockstep, "bag", *map(str, args)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode != 0, proc
    return proc.stderr


def assert_one_clear_error(stderr: str, *expected: str) -> None:
    lines = stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, stderr
    assert lines[0].startswith("error: "), stderr
    assert "backtrace" not in stderr.lower(), stderr
    clauses = [c.strip() for c in " ".join(lines).split(": ")][1:]
    for i, clause in enumerate(clauses):
        for later in clauses[i + 1:]:
            assert later not in clause, f"{later!r} repeats {clause!r}: {stderr}"
    for text in expected:
        assert text.lower() in stderr.lower(), stderr


def test_command_line_errors_are_one_clear_line(lockstep, tmp_path):
    assert_one_clear_error(error_of(lockstep, "info", "/nonexistent"), "/nonexistent", "no such file or directory")
    # Garbage with and without an MCAP name: what it is not, once.
    for name in ("garbage.mcap", "garbage"):
        junk = tmp_path / name
        junk.write_bytes(bytes(range(256)) * 4)
        assert_one_clear_error(error_of(lockstep, "info", junk), name, "not a rosbag2 bag", "MCAP")
    not_a_bag = tmp_path / "not_a_bag"
    not_a_bag.mkdir()
    (not_a_bag / "notes.txt").write_text("hello")
    assert_one_clear_error(error_of(lockstep, "info", not_a_bag), "not a rosbag2 bag", "no metadata.yaml")
    assert_one_clear_error(error_of(lockstep, "convert", tmp_path / "garbage", tmp_path / "out"), "not a rosbag2 bag")
    assert_one_clear_error(error_of(lockstep, "reindex", "/nonexistent"), "no such file or directory")


def echoed(lockstep: str, bag: Path, topic: str, *args: str) -> list:
    """`lockstep bag echo` output read back with PyYAML: one document per message."""
    docs = list(yaml.safe_load_all(run(lockstep, "echo", bag, topic, *args)))
    assert docs and docs[-1] is None, "every message ends with ---"
    return docs[:-1]


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN; rosbags' `__msgtype__` entries (not message fields) are ignored."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = ({k: v for k, v in d.items() if k != "__msgtype__"} for d in (a, b))
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("plugin", [StoragePlugin.MCAP, StoragePlugin.SQLITE3], ids=["mcap", "sqlite3"])
def test_echo_decodes_like_rosbags(lockstep, typestore, tmp_path, plugin):
    """Every message of a rosbags-written bag, decoded by `lockstep bag echo` from the bag's own
    definitions, equals what rosbags decodes (strings, nested messages, headers, arrays)."""
    messages = make_messages(typestore)
    bag = tmp_path / "bag"
    write_with_rosbags(bag, plugin, typestore, messages)
    for topic in sorted({m[0] for m in messages}):
        want = [plain(m) for t, _, _, m in messages if t == topic]
        got = echoed(lockstep, bag, topic)
        assert same(got, want), f"{topic}:\n{got[:2]}\n!=\n{want[:2]}"
    assert echoed(lockstep, bag, "/pose", "--limit", "2", "--field", "pose.position") == [
        {"x": 3.0, "y": -3.0, "z": 0.25}, {"x": 7.0, "y": -7.0, "z": 0.25}]


@pytest.mark.parametrize("name", ["cdr_test", "bag_with_topics_and_service_events"])
def test_echo_reads_rosbag2_test_msgs_with_every_primitive(lockstep, name):
    """rosbag2's own bags: cdr_test (test_msgs Arrays and BasicTypes: every primitive, fixed arrays,
    bounds) and service events (stored as .srv text), decoded by rosbags from the same definitions."""
    bag = ROSBAG2 / "mcap" / name
    ts = get_typestore(Stores.ROS2_JAZZY)
    with Reader(bag) as reader:
        register_from_bag(ts, reader)
        want = {}
        for conn, _, raw in reader.messages():
            want.setdefault(conn.topic, []).append(plain(ts.deserialize_cdr(raw, conn.msgtype)))
    assert sorted(want) == sorted(t for t, n in ROSBAG2_BAGS[f"mcap/{name}"].items() if n)

    def as_ros2(value, key=""):
        """rosbags' view as ROS 2 shows it: constants and the placeholder member of an empty message are
        not fields; `byte` is an unsigned octet (rosbags reads it as int8)."""
        if isinstance(value, dict):
            return {k: as_ros2(v, k) for k, v in value.items()
                    if not k.isupper() and k != "structure_needs_at_least_one_member"}
        if isinstance(value, list):
            return [as_ros2(v, key) for v in value]
        if key.startswith("byte_") and isinstance(value, int):
            return value & 0xFF
        return value

    for topic, expected in want.items():
        expected = as_ros2(expected)
        got = echoed(lockstep, bag, topic)
        assert same(got, expected), f"{topic}:\n{got}\n!=\n{expected}"


def test_echo_errors_name_what_is_wrong(lockstep, typestore, tmp_path):
    messages = make_messages(typestore)
    bag = tmp_path / "bag"
    write_with_rosbags(bag, StoragePlugin.MCAP, typestore, messages)
    err = error_of(lockstep, "echo", bag, "/nope")
    assert_one_clear_error(err, "topic `/nope` is not in the bag", "/chatter")
    err = error_of(lockstep, "echo", bag, "/pose", "--field", "pose.nope")
    assert_one_clear_error(err, "has no field `nope`", "position")
    # A message cut short: rewrite the bag with one truncated /cmd_vel message.
    cut = tmp_path / "cut"
    truncated = [(t, ty, ts_, m) for t, ty, ts_, m in messages]
    with Writer(cut, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/cmd_vel", "geometry_msgs/msg/Twist", typestore=typestore)
        raw = bytes(typestore.serialize_cdr(truncated[1][3], "geometry_msgs/msg/Twist"))
        writer.write(conn, 5, raw[:24])  # ends inside linear.z (bytes 20..28)
    err = error_of(lockstep, "echo", cut, "/cmd_vel")
    assert_one_clear_error(err, "message 0 of /cmd_vel", "linear.z")
