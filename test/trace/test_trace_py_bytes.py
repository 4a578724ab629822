"""The Python library `lockstep_trace` against the Rust one, byte for byte: canonical CDR bytes and payload digests
of messages whose CDR alignment padding differs, and the bytes of the dependency headers a tracer builds.

The Rust side is the example program `trace_crosscheck` of lockstep_trace_ros (`cargo build -p lockstep_trace_ros
--examples`), fed every request at once in one run. Each message is sent twice: as rclpy's `serialize_message`
wrote it, and with every byte that does not change the message (alignment padding, encapsulation options) set to
0xa5, so both sides must zero padding they were given as garbage.
"""

import math
import subprocess

import pytest

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, Pose, PoseArray, PoseStamped, Quaternion, Twist, Vector3
from lockstep_interfaces.msg import DependencyHeader
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import LaserScan, Range
from std_msgs.msg import Bool, Empty, Float64MultiArray, Header, UInt8, MultiArrayDimension, MultiArrayLayout, String, UInt8MultiArray

from lockstep_testing.harness import binary
from lockstep_trace import Tracer, canonical_cdr, digest, external_header, message_digest, ns_to_time, type_name

GARBAGE = 0xA5
CDR_HEADER_BYTES = 4
NS_PER_SEC = 10**9
U32_MAX = 2**32 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
EARLIEST_NS = -(2**31) * NS_PER_SEC  # the first instant a builtin_interfaces/Time holds (sec is int32)
LATEST_NS = 2**31 * NS_PER_SEC - 1  # its last one


def header(frame_id: str, sec: int = 1_700_000_000, nanosec: int = 123_456_789) -> Header:
    return Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id)


def pose(i: int) -> Pose:
    return Pose(position=Point(x=1.5 * i, y=-2.25, z=1e-300),
                orientation=Quaternion(x=0.0, y=-0.0, z=math.sin(i / 2), w=math.cos(i / 2)))


def pose_array(frame_id: str, count: int) -> PoseArray:
    return PoseArray(header=header(frame_id), poses=[pose(i) for i in range(count)])


def range_msg(frame_id: str, radiation_type: int, value: float) -> Range:
    return Range(header=header(frame_id, sec=-5, nanosec=999_999_999), radiation_type=radiation_type,
                 field_of_view=0.3, min_range=0.02, max_range=4.0, range=value, variance=1e-4)


def odometry(frame_id: str, child_frame_id: str) -> Odometry:
    msg = Odometry(header=header(frame_id), child_frame_id=child_frame_id)
    msg.pose.pose = pose(3)
    msg.pose.covariance = [0.01 * i - 0.1 for i in range(36)]
    msg.twist.twist = Twist(linear=Vector3(x=0.5), angular=Vector3(z=-0.25))
    msg.twist.covariance = [float(i % 7) for i in range(36)]
    return msg


def multi_array(labels: list[str], data: bytes) -> UInt8MultiArray:
    dims = [MultiArrayDimension(label=label, size=len(data) - i, stride=3 * i + 1) for i, label in enumerate(labels)]
    return UInt8MultiArray(layout=MultiArrayLayout(dim=dims, data_offset=7), data=list(data))


def laser_scan(frame_id: str, ranges: list[float], intensities: list[float]) -> LaserScan:
    return LaserScan(header=header(frame_id), angle_min=-1.57, angle_max=1.57, angle_increment=0.01,
                     time_increment=1e-5, scan_time=0.1, range_min=0.1, range_max=30.0, ranges=ranges,
                     intensities=intensities)


def diagnostics() -> DiagnosticArray:
    return DiagnosticArray(header=header("d"), status=[
        DiagnosticStatus(level=DiagnosticStatus.WARN, name="motor", message="hot", hardware_id="",
                         values=[KeyValue(key="t", value="81.5"), KeyValue(key="unit", value="°C")]),
        DiagnosticStatus(level=DiagnosticStatus.OK, name="ab", message="", hardware_id="hw-1234567",
                         values=[]),
        DiagnosticStatus(level=DiagnosticStatus.STALE, name="", message="no data for 3 s", hardware_id="x",
                         values=[KeyValue(key="", value="")]),
    ])


def two_level_header() -> DependencyHeader:
    sensor = external_header("/scan", U32_MAX, 1_700_000_000_500_000_000, 0x0123_4567_89AB_CDEF)
    upstream = Tracer("robot1/localizer", epoch=2**64 - 1).finish("/pose", b"\x00\x01\x00\x00", [sensor],
                                                                  1_700_000_000_600_000_000, 42)
    return Tracer("fusion", epoch=7).finish("/obstacles", b"abc", [upstream, sensor], 1_700_000_001_200_000_009, 77)


# Messages whose CDR padding differs: strings of every length modulo 4 before 4- and 8-byte fields, a uint8 before
# float32s, odd-length byte and float32 arrays, nested strings and sequences.
MESSAGES = [
    *[(f"pose_array_frame_len{n}", pose_array("abcd"[:n], n % 4)) for n in range(5)],
    ("pose_array_many_poses", pose_array("map", 5)),
    ("pose_stamped_frame_len1", PoseStamped(header=header("m"), pose=pose(1))),
    ("pose_stamped_frame_len6", PoseStamped(header=header("odom_1"), pose=pose(2))),
    ("twist", Twist(linear=Vector3(x=1.0, y=-0.0, z=math.inf), angular=Vector3(x=-math.inf, z=1e-310))),
    ("range_frame_len0", range_msg("", Range.ULTRASOUND, 1.25)),
    ("range_frame_len3", range_msg("sns", Range.INFRARED, -math.inf)),
    ("odometry", odometry("odom", "base_link")),
    ("odometry_odd_frames", odometry("o", "base")),
    ("string_empty", String(data="")),
    ("string_len1", String(data="a")),
    ("string_len3", String(data="abc")),
    ("string_len5", String(data="hello")),
    ("string_utf8", String(data="héllo wörld ✓ 機器人")),
    ("uint8_multi_array_odd", multi_array(["rows", "c", ""], bytes(range(251, 256)) + b"\x00\x01")),
    ("uint8_multi_array_empty_data", multi_array(["ab"], b"")),
    # rmw reports more bytes than it writes (its size estimate) for these: the canonical form ends with the
    # last field on both sides.
    ("float64_multi_array_empty", Float64MultiArray()),
    ("uint8_one", UInt8(data=1)),
    ("uint8_zero", UInt8(data=0)),
    ("bool_true", Bool(data=True)),
    ("empty", Empty()),
    ("float64_multi_array_one", Float64MultiArray(data=[1.5])),
    ("laser_scan_odd", laser_scan("laser", [0.5, math.inf, 2.0], [1.0, 0.0, -0.0])),
    ("laser_scan_mixed", laser_scan("lidar_top", [1.0] * 7, [100.0])),
    ("laser_scan_empty", laser_scan("l", [], [])),
    ("diagnostic_array", diagnostics()),
    ("dependency_header", two_level_header()),
]


def padding_positions(raw: bytes, msg_type) -> list[int]:
    """The byte offsets of `raw` (after the encapsulation kind) whose value does not change the message rclpy
    reads from it: alignment padding and the encapsulation options."""
    original = deserialize_message(raw, msg_type)
    positions = []
    for i in range(2, len(raw)):
        probe = bytearray(raw)
        probe[i] ^= 0x5A
        try:
            same = deserialize_message(bytes(probe), msg_type) == original
        except Exception:  # a length or string the flip broke: not padding
            same = False
        if same:
            positions.append(i)
    return positions


def with_garbage(raw: bytes, positions: list[int]) -> bytes:
    out = bytearray(raw)
    for i in positions:
        out[i] = GARBAGE
    return bytes(out)


def header_input(msg: DependencyHeader) -> str:
    return serialize_message(msg).hex()


def stamped(msg: DependencyHeader, start_stamp: Time) -> DependencyHeader:
    msg.start_stamp = start_stamp
    return msg


def upstream_headers():
    """Three headers, each with its own inputs: the inputs of a module's output become second-level sources."""
    scan = external_header("/scan", 41, 1_700_000_000_000_000_001, 0xFFFF_FFFF_FFFF_FFFF)
    odom = external_header("/odom", 0, -1, 1)
    localizer = Tracer("localizer", epoch=11)
    for _ in range(4):  # the fifth output: sequence number 4
        pose_header = localizer.finish("/pose", b"p", [scan, odom], 1_700_000_000_100_000_000, 1_000)
    mapper = Tracer("robot1/mapper", epoch=2**64 - 1).finish("/robot1/map", b"", [scan], 1_700_000_000_2, 2**40)
    predictor = Tracer("predictor", epoch=12).finish("/pred", b"\x00" * 9, [pose_header],
                                                     1_700_000_000_300_000_000, 5)
    return [pose_header, mapper, predictor]


# (name, module, epoch, channel, payload, inputs, start_ns, process_ns)
HEADERS = [
    ("no_inputs", "planner", 1_700_000_000_123_456_789, "/plan", canonical_cdr(pose_array("map", 2)), [],
     1_700_000_001_200_000_009, 77),
    ("empty_payload", "robot1/planner", 1, "/robot1/plan", b"", [], 0, 0),
    ("one_external_input", "obstacle_fusion", 3, "/obstacles", b"\x00\x01\x00\x00abc",
     [external_header("/scan", 7, 1_700_000_000_500_000_000, 0xDEAD_BEEF)], 1_700_000_000_600_000_000, 12_345),
    ("three_inputs_with_sources", "controller", 99, "/cmd_vel", canonical_cdr(Twist(linear=Vector3(x=0.3))),
     upstream_headers(), 1_700_000_000_400_000_000, 4_000_000),
    ("start_minus_one_ns", "m", 5, "/c", b"x", [external_header("/in", 1, -1_500_000_001, 9)], -1, 1),
    ("start_at_earliest_time", "m", 5, "/c", b"x", [], EARLIEST_NS, 1),
    ("start_before_earliest_time_saturates", "m", 5, "/c", b"x", [], EARLIEST_NS - 1, 1),
    ("start_at_i64_min_saturates", "m", 5, "/c", b"x",
     [Tracer("u", epoch=1).finish("/u", b"", [], I64_MIN, 0)], I64_MIN, 1),
    ("start_at_latest_time", "m", 5, "/c", b"x", [], LATEST_NS, 1),
    ("start_after_latest_time_saturates", "m", 5, "/c", b"x", [], LATEST_NS + 1, 1),
    ("start_at_i64_max_saturates", "m", 5, "/c", b"x",
     [Tracer("u", epoch=1).finish("/u", b"", [], I64_MAX, U32_MAX + 1)], I64_MAX, 1),
    ("process_time_u32_max", "m", 5, "/c", b"x", [], 0, U32_MAX),
    ("process_time_above_u32_saturates", "m", 5, "/c", b"x", [], 0, U32_MAX + 1),
    ("process_time_u64_max_saturates", "m", 5, "/c", b"x", [], 0, 2**64 - 1),
    # An input header from a publisher that does not normalise its stamps (nanosec >= 1e9).
    ("input_stamp_nanosec_above_one_second", "m", 5, "/c", b"x",
     [stamped(external_header("/in", 1, 0, 9), Time(sec=5, nanosec=1_500_000_000))], 0, 1),
    ("input_stamp_past_latest_time", "m", 5, "/c", b"x",
     [stamped(external_header("/in", 1, 0, 9), Time(sec=2**31 - 1, nanosec=U32_MAX))], 0, 1),
]

# The Rust library reads an input's start stamp into nanoseconds and writes it back, so it normalises (and
# saturates) a stamp whose nanosec is 1e9 or more; so must the Python library.
HEADER_PARAMS = [pytest.param(case, id=case[0]) for case in HEADERS]

# Requests the Rust program must refuse with an error line, going on with the next request.
MALFORMED = ["", "bogus request", "msg std_msgs/msg/String zz", "msg std_msgs/msg/String 0001000004",
             "msg unknown_msgs/msg/Nope 00010000", "header m 1 /c", "header m 1 /c 0 x - -"]


def first_difference(python: bytes, rust: bytes) -> str:
    for i, (a, b) in enumerate(zip(python, rust)):
        if a != b:
            return f"first differing byte at offset {i}: Python 0x{a:02x}, Rust 0x{b:02x}"
    return f"lengths differ: Python {len(python)} bytes, Rust {len(rust)} bytes"


def header_request(module, epoch, channel, payload, inputs, start_ns, process_ns) -> str:
    inputs_field = ",".join(header_input(h) for h in inputs) or "-"
    return f"header {module} {epoch} {channel} {start_ns} {process_ns} {payload.hex() or '-'} {inputs_field}"


@pytest.fixture(scope="module")
def raw_bytes():
    """Per message: rclpy's bytes and the same bytes with garbage in every padding byte."""
    out = {}
    for name, msg in MESSAGES:
        raw = serialize_message(msg)
        out[name] = (raw, with_garbage(raw, padding_positions(raw, type(msg))))
    return out


@pytest.fixture(scope="module")
def rust(raw_bytes):
    """The Rust program's answers to every request, from one run fed all of them at once."""
    requests = list(MALFORMED)
    for name, msg in MESSAGES:
        for cdr in raw_bytes[name]:
            requests.append(f"msg {type_name(msg)} {cdr.hex()}")
    requests += [header_request(*case[1:]) for case in HEADERS]
    done = subprocess.run([binary("examples/trace_crosscheck")], input="\n".join(requests) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"trace_crosscheck exited with {done.returncode}: {done.stderr}"
    answers = done.stdout.splitlines()
    assert len(answers) == len(requests), f"{len(requests)} requests, {len(answers)} answers:\n{done.stdout}"
    it = iter(answers)
    malformed = [next(it) for _ in MALFORMED]
    messages = {name: (next(it), next(it)) for name, _ in MESSAGES}
    headers = {case[0]: next(it) for case in HEADERS}
    return {"malformed": malformed, "messages": messages, "headers": headers}


def test_the_table_covers_every_type_the_program_knows():
    assert len(MESSAGES) >= 15
    assert {type_name(msg) for _, msg in MESSAGES} == {
        "geometry_msgs/msg/PoseArray", "geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/Twist",
        "nav_msgs/msg/Odometry", "sensor_msgs/msg/Range", "sensor_msgs/msg/LaserScan", "std_msgs/msg/String",
        "std_msgs/msg/UInt8MultiArray", "std_msgs/msg/Float64MultiArray", "std_msgs/msg/UInt8", "std_msgs/msg/Bool",
        "std_msgs/msg/Empty", "lockstep_interfaces/msg/DependencyHeader",
        "diagnostic_msgs/msg/DiagnosticArray"}


@pytest.mark.parametrize("name,msg", MESSAGES, ids=[name for name, _ in MESSAGES])
def test_canonical_bytes_and_digest_match_rust(name, msg, raw_bytes, rust):
    python = canonical_cdr(msg)
    raw, garbled = raw_bytes[name]
    # Garbage went in: at least the encapsulation options (and any padding) differ from the canonical bytes.
    assert garbled != python, f"{name}: no byte of rclpy's CDR could be replaced by garbage"
    # rclpy's length is rmw's size estimate: at most the canonical bytes and alignment up to 8.
    assert len(python) <= len(raw) < len(python) + 8, f"{name}: canonical {len(python)} bytes, rclpy {len(raw)}"
    # Against the message rclpy's bytes hold (float32 fields hold 0.1 rounded to float32, not the double 0.1).
    assert deserialize_message(python, type(msg)) == deserialize_message(raw, type(msg)), \
        f"{name}: canonical bytes read back as another message than rclpy's bytes"
    assert python[:CDR_HEADER_BYTES] == b"\x00\x01\x00\x00", f"{name}: encapsulation {python[:4].hex()}"
    assert message_digest(msg) == digest(python)
    for variant, answer in zip(("rclpy's bytes", "bytes with garbage padding"), rust["messages"][name]):
        assert not answer.startswith("error"), f"{name} ({variant}): Rust answered {answer}"
        rust_hex, rust_digest = answer.split(" ")
        rust_bytes = bytes.fromhex(rust_hex)
        assert python == rust_bytes, f"{name} ({variant}): {first_difference(python, rust_bytes)}"
        assert message_digest(msg) == int(rust_digest), f"{name} ({variant}): digest"


@pytest.mark.parametrize("case", HEADER_PARAMS)
def test_header_bytes_match_rust(case, rust):
    name, module, epoch, channel, payload, inputs, start_ns, process_ns = case
    header = Tracer(module, epoch=epoch).finish(channel, payload, inputs, start_ns, process_ns)
    assert header.start_stamp == ns_to_time(start_ns)
    assert header.process_time_ns == min(process_ns, U32_MAX)
    python = canonical_cdr(header)
    answer = rust["headers"][name]
    assert not answer.startswith("error"), f"{name}: Rust answered {answer}"
    rust_bytes = bytes.fromhex(answer)
    assert python == rust_bytes, f"{name}: {first_difference(python, rust_bytes)}"


def test_saturated_stamps_are_the_ends_of_the_time_range():
    assert ns_to_time(EARLIEST_NS - 1) == Time(sec=-(2**31), nanosec=0) == ns_to_time(I64_MIN)
    assert ns_to_time(LATEST_NS + 1) == Time(sec=2**31 - 1, nanosec=999_999_999) == ns_to_time(I64_MAX)
    assert ns_to_time(-1) == Time(sec=-1, nanosec=999_999_999)


def test_malformed_requests_get_an_error_line(rust):
    for request, answer in zip(MALFORMED, rust["malformed"]):
        assert answer.startswith("error "), f"{request!r}: {answer}"
