"""The recorder records message types no Lockstep binary is compiled with, like rosbag2 does: the type support
is loaded at run time from AMENT_PREFIX_PATH. `lockstep_test_msgs` (test/fixtures/lockstep_test_msgs, built
by scripts/setup.sh) is on no node's AMENT_PREFIX_PATH unless a test puts it there; `diagnostic_msgs` is
installed but not in IDL_PACKAGE_FILTER (the case a user reported)."""

import os
from pathlib import Path

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from mcap.reader import make_reader
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore, get_types_from_msg
from std_msgs.msg import Header, String

from lockstep_interfaces.msg import RecorderStatus
from lockstep_test_msgs.msg import Reading, Sample
from lockstep_testing.harness import between_processes, reliable

RECORDER = "lockstep_recorder"
SAMPLE = "lockstep_test_msgs/msg/Sample"


def fixture_prefix() -> str:
    prefix = os.environ.get("LOCKSTEP_TEST_MSGS_PREFIX")
    assert prefix and Path(prefix).is_dir(), \
        "LOCKSTEP_TEST_MSGS_PREFIX is not set: run `bash scripts/setup.sh && source scripts/env.sh`"
    return prefix


def reading(i: int, k: int) -> Reading:
    return Reading(sensor=f"s{i}.{k}", value=i * 0.5 + k, stamp=Time(sec=i, nanosec=k))


def sample(i: int) -> Sample:
    """A different shape each time: empty and full arrays, odd string lengths (CDR padding), extreme values."""
    return Sample(
        header=Header(stamp=Time(sec=1000 + i, nanosec=i * 7), frame_id="f" * (i % 5)),
        mode=Sample.MODE_RUN if i % 2 else Sample.MODE_IDLE,
        flag=bool(i % 3), i8=-128 + i, u16=65535 - i, i64=-(2 ** 62) + i, f32=1.5 * i, f64=-1e300 / (i + 1),
        name="é" * i, short_name="x" * min(i, 16),
        reading=reading(i, 0),
        fixed_readings=[reading(i, 1), reading(i, 2)],
        bounded_readings=[reading(i, k) for k in range(i % 5)],
        readings=[reading(i, k) for k in range(i % 3)],
        values=[float(k) / 3 for k in range(i)],
        blob=bytes(range(i % 256)),
        fixed_ints=[i, -i, 2 ** 31 - 1],
        names=[f"n{k}" * k for k in range(i % 4)],
        bounded_names=["abcdefgh"[: k + 1] for k in range(i % 4)],
    )


def diagnostics(i: int) -> DiagnosticArray:
    return DiagnosticArray(status=[DiagnosticStatus(level=DiagnosticStatus.WARN, name=f"motor{i}",
                                                    message="hot", hardware_id="m1",
                                                    values=[KeyValue(key="temp_c", value=str(60 + i))])])


def start_recorder(ros, bag: Path, env: dict[str, str], **params):
    params = {"output": str(bag), "discovery_period_secs": 0.05, "all_topics": False,
              "topics": "/sample,/diagnostics,/chatter", "status_period_secs": 0.1, **params}
    return ros.start(RECORDER, params=params, env=env)


def raw_messages(bag: Path) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    with Reader(bag) as reader:
        for conn, _stamp, raw in reader.messages():
            out.setdefault(conn.topic, []).append(bytes(raw))
    return out


def test_a_type_compiled_in_nowhere_records_byte_identical_with_its_schema(ros, tmp_path):
    env = {"AMENT_PREFIX_PATH": f"{fixture_prefix()}:{os.environ['AMENT_PREFIX_PATH']}"}
    pub = ros.publisher(Sample, "/sample", reliable())
    diag = ros.publisher(DiagnosticArray, "/diagnostics", reliable())
    # An independent rclpy subscription takes the same messages as DDS delivers them (serialized).
    wire = ros.collect(Sample, "/sample", raw=True)
    wire_diag = ros.collect(DiagnosticArray, "/diagnostics", raw=True)
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, env)
    ros.wait_for_matched(pub, count=2)
    ros.wait_for_matched(diag, count=2)
    sent = [sample(i) for i in range(60)]
    for msg in sent:
        pub.publish(msg)
    for i in range(10):
        diag.publish(diagnostics(i))
    ros.wait_for_messages(wire, len(sent))
    ros.wait_for_messages(wire_diag, 10)
    assert proc.stop(timeout=20) == 0, proc.log()

    raw = raw_messages(bag)
    # Byte for byte what rclpy took from DDS, and rclpy reads every message back equal to what was sent.
    # (rclpy's serialize_message is no reference: it leaves CDR padding bytes uninitialised.)
    assert raw["/sample"] == [between_processes(w) for w in wire]
    assert [deserialize_message(r, Sample) for r in raw["/sample"]] == sent
    assert raw["/diagnostics"] == [between_processes(w) for w in wire_diag]
    assert [deserialize_message(r, DiagnosticArray) for r in raw["/diagnostics"]] == \
        [diagnostics(i) for i in range(10)]

    # rosbags, knowing nothing of lockstep_test_msgs, decodes them from the definitions stored in the bag.
    store = get_typestore(Stores.EMPTY)
    with Reader(bag) as reader:
        conn = next(c for c in reader.connections if c.topic == "/sample")
        assert conn.msgtype == SAMPLE
        assert conn.msgdef.format.name == "MSG" and "MSG: lockstep_test_msgs/Reading" in conn.msgdef.data
        store.register(get_types_from_msg(conn.msgdef.data, SAMPLE))
    decoded = [store.deserialize_cdr(r, SAMPLE) for r in raw["/sample"]]
    for got, want in zip(decoded, sent, strict=True):
        assert (got.name, got.short_name, got.i64, got.f64) == (want.name, want.short_name, want.i64, want.f64)
        assert [r.sensor for r in got.bounded_readings] == [r.sensor for r in want.bounded_readings]
        assert list(got.fixed_ints) == list(want.fixed_ints) and list(got.names) == list(want.names)
        assert bytes(got.blob) == bytes(want.blob) and got.reading.stamp.nanosec == want.reading.stamp.nanosec
    assert store.deserialize_cdr(raw["/sample"][0], SAMPLE).GREETING == "hello"

    # The MCAP schemas name both types, with their definitions.
    with open(next(bag.glob("*.mcap")), "rb") as f:
        schemas = {s.name: s for s in make_reader(f).get_summary().schemas.values()}
    assert schemas[SAMPLE].encoding == "ros2msg" and b"string<=8[<=3] bounded_names" in schemas[SAMPLE].data
    assert b"DiagnosticStatus[] status" in schemas["diagnostic_msgs/msg/DiagnosticArray"].data


def test_a_type_installed_nowhere_is_reported_and_the_rest_records(ros, tmp_path):
    # The node's AMENT_PREFIX_PATH lacks lockstep_test_msgs (rclpy here has it).
    pub = ros.publisher(Sample, "/sample", reliable())
    chatter = ros.publisher(String, "/chatter", reliable())
    bag = tmp_path / "bag"
    proc = start_recorder(ros, bag, {"AMENT_PREFIX_PATH": os.environ["AMENT_PREFIX_PATH"]})
    status = ros.collect(RecorderStatus, f"/{RECORDER}/status")
    ros.wait_for_matched(chatter)

    def skipped():
        last = status[-1] if status else None
        return next((s for s in last.skipped if s.topic == "/sample"), None) if last else None

    ros.wait_until(skipped, 20, "the status to list /sample as skipped")
    entry = skipped()
    assert entry.type == SAMPLE
    assert "package `lockstep_test_msgs`" in entry.reason, entry.reason
    assert "liblockstep_test_msgs__rosidl_typesupport_c.so" in entry.reason, entry.reason
    for i in range(20):
        pub.publish(sample(i))
        chatter.publish(String(data=f"c{i}"))
    # The recorder has every chatter message before it is stopped (CI once saw its reader match our writer
    # only after the 20 were sent, and the stop came first).
    ros.wait_for_acked(chatter)
    assert proc.stop(timeout=20) == 0, proc.log()
    log = proc.log()
    assert log.count("not recording /sample (lockstep_test_msgs/msg/Sample)") == 1, log
    assert "package `lockstep_test_msgs`" in log, log
    raw = raw_messages(bag)
    assert "/sample" not in raw
    assert [deserialize_message(r, String).data for r in raw["/chatter"]] == [f"c{i}" for i in range(20)]
