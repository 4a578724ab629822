"""Black-box test of dependency headers on the example three-module pipeline (m1, m2, m3).

rclpy plays the sensors (c1 scan_front, c2 scan_rear) and odometry (c4 odom); the three r2r modules run as
real processes: obstacle_fusion (m1: c1, c2 -> c3 obstacles), mission_planner (m3: -> c6 mission) and
motion_controller (m2: c3, c6, c4 -> c5 cmd_vel, on its own timer). The test checks the latched topology, that
every header names inputs that really exist (down to the rclpy messages at the second level) and that the data
it names is the data used (the outputs are recomputed from the named inputs), and that every data message
pairs with exactly one header by the digest of its CDR bytes, computed here in Python.

Every wait is on something observed (acknowledged messages, outputs that used the last inputs, data and header
counts); the only sleeps pace rclpy's sensor publishing loop (`Sensors.run`), on purpose.
"""

import collections
import hashlib
import math
import struct
import time

import pytest

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import Range

from lockstep_interfaces.msg import DependencyHeader, ModuleTopology
from lockstep_testing.harness import reliable

M1, M2, M3 = "obstacle_fusion", "motion_controller", "mission_planner"
EXPECTED_TOPOLOGY = {
    M1: (["/scan_front", "/scan_rear"], ["/obstacles"]),
    M3: ([], ["/mission"]),
    M2: (["/mission", "/obstacles", "/odom"], ["/cmd_vel"]),
}
TICK_S = 0.02  # rclpy's publishing loop: front on even ticks, rear on odd ticks (25 Hz each), odom each tick
TICKS = 150
M2_RATE_HZ = 10.0
M2_DELAY_MS = 5
WAYPOINTS = [(2.0, 0.0), (2.0, 2.0), (0.0, 2.0), (0.0, 0.0)]  # lockstep_examples::mission::WAYPOINTS_M
HOLD = 3


TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def ros_type_name(msg) -> str:
    module = type(msg).__module__.split(".")[0]
    return f"{module}/msg/{type(msg).__name__}"


def canonical_cdr(msg) -> bytes:
    """rclpy's CDR bytes with zeroed alignment padding.

    `serialize_message` leaves CDR padding uninitialised (heap garbage, e.g. before the doubles of a
    PoseArray), so the payload digest is defined over the canonical form. `rosbags` is an independent CDR
    implementation that writes zero padding: decode rclpy's bytes with it and encode them again.
    """
    raw = serialize_message(msg)
    typename = ros_type_name(msg)
    canonical = bytes(TYPESTORE.serialize_cdr(TYPESTORE.deserialize_cdr(raw, typename), typename))
    assert len(canonical) == len(raw), typename  # same layout; only padding bytes may differ
    return canonical


def digest(msg) -> int:
    """First 8 bytes of SHA-256 of the canonical CDR bytes, little-endian: the Rust side's payload_digest."""
    return int.from_bytes(hashlib.sha256(canonical_cdr(msg)).digest()[:8], "little")


MISSION_SLACK = 3


def paired(data: list, headers: list, slack: int = 0) -> bool:
    """Data and headers pair one to one by payload digest, once up to `slack` messages at the start of either
    list are left out (those sent before both of our subscriptions matched the publisher)."""
    data_digests = [digest(m) for m in data]
    header_digests = [h.payload_digest for h in headers]
    return any(collections.Counter(data_digests[i:]) == collections.Counter(header_digests[j:])
               for i in range(min(slack, len(data_digests)) + 1) for j in range(min(slack, len(header_digests)) + 1))


def f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def front_range(i: int) -> float:
    return 0.5 + 0.004 * i  # within the controller's slow-down zone, so cmd_vel depends on it


def rear_range(i: int) -> float:
    return 2.0 + 0.01 * i


def odom_msg(i: int) -> Odometry:
    msg = Odometry()
    msg.header.frame_id = "odom"
    msg.pose.pose.position.x = 0.01 * i
    yaw = 0.01 * i
    msg.pose.pose.orientation.z = math.sin(yaw / 2)
    msg.pose.pose.orientation.w = math.cos(yaw / 2)
    return msg


def range_msg(value: float, i: int) -> Range:
    return Range(header=dict_header(i), radiation_type=Range.ULTRASOUND, field_of_view=0.5, min_range=0.1,
                 max_range=5.0, range=value)


def dict_header(i: int):
    from std_msgs.msg import Header
    return Header(stamp=Time(sec=1000 + i, nanosec=0), frame_id="sensor")


class Sensors:
    """rclpy playing c1, c2 and c4: the front range on even ticks, the rear range on odd ticks (so m1 fuses one
    new pair every two ticks), odometry on every tick. Reading n of a sensor holds `front_range(n)` or
    `rear_range(n)` and stamp 1000 + n s; odometry n is `odom_msg(n)`."""

    def __init__(self, ros, namespace: str = ""):
        self.ros = ros
        self.front = ros.publisher(Range, f"{namespace}/scan_front")
        self.rear = ros.publisher(Range, f"{namespace}/scan_rear")
        self.odom = ros.publisher(Odometry, f"{namespace}/odom")
        self.n_front = self.n_rear = 0
        self.sent_front, self.sent_rear, self.sent_odom = [], [], []
        self.ticks = 0

    def publishers(self):
        return (self.front, self.rear, self.odom)

    def tick(self) -> None:
        if self.ticks % 2 == 0:
            self.sent_front.append(range_msg(front_range(self.n_front), self.n_front))
            self.front.publish(self.sent_front[-1])
            self.n_front += 1
        else:
            self.sent_rear.append(range_msg(rear_range(self.n_rear), self.n_rear))
            self.rear.publish(self.sent_rear[-1])
            self.n_rear += 1
        msg = odom_msg(len(self.sent_odom))
        self.odom.publish(msg)
        self.sent_odom.append(msg)
        self.ticks += 1

    def start(self, readers: int = 1, timeout: float = 20.0) -> None:
        """Wait until every publisher matched `readers` subscriptions, publish the first two ticks and wait until
        every reader acknowledged them: a reliable reader acknowledges only a writer it has discovered, so from
        then on both sides of every sensor link are matched and nothing sent is missed."""
        for pub in self.publishers():
            self.ros.wait_until(lambda pub=pub: pub.get_subscription_count() >= readers, timeout,
                                f"{readers} subscriber(s) on {pub.topic_name}")
        self.tick()
        self.tick()
        for pub in self.publishers():
            self.ros.wait_for_acked(pub, timeout)

    def run(self, ticks: int, period_s: float = TICK_S) -> None:
        """Publish until `ticks` ticks in all, one every `period_s` (these sleeps pace the sensors: they are the
        test's input rate, not waits)."""
        start = time.monotonic()
        first = self.ticks
        while self.ticks < ticks:
            self.tick()
            time.sleep(max(0.0, start + (self.ticks - first) * period_s - time.monotonic()))

    def index_by_digest(self) -> dict:
        """Per sensor channel: payload digest -> index of the message sent (every message differs)."""
        out = {}
        for channel, sent in (("/scan_front", self.sent_front), ("/scan_rear", self.sent_rear),
                              ("/odom", self.sent_odom)):
            out[channel] = {digest(m): i for i, m in enumerate(sent)}
            assert len(out[channel]) == len(sent), f"two equal messages on {channel}"
        return out

    def last_xs(self) -> tuple:
        """Where m1 puts the obstacles of the last front and the last rear reading (x front, x rear)."""
        return f32(front_range(self.n_front - 1)), -f32(rear_range(self.n_rear - 1))


def wait_for_the_last_inputs_to_be_used(ros, sensors, c3_data, c3_headers, cmd_headers, timeout=30.0):
    """Until m1 published the obstacles made from the last readings and m2 a command computed from them.

    m1 takes its two topics in any order when both have messages waiting, so which of the last front and the last
    rear reading it fuses is not fixed; but whichever of the two it takes last is fused then, or finds the other
    side's last reading fused already: exactly one obstacles message holds a last reading, and it is m1's last.
    """
    front_x, rear_x = sensors.last_xs()

    def last_obstacles():
        return next((m for m in c3_data if len(m.poses) == 2
                     and (m.poses[0].position.x == front_x or m.poses[1].position.x == rear_x)), None)

    last = ros.wait_until(last_obstacles, timeout, f"obstacles with the last reading (x = {front_x} or {rear_x})")
    last_digest = digest(last)
    header = ros.wait_until(lambda: next((h for h in c3_headers if h.payload_digest == last_digest), None),
                            timeout, "the header of the last obstacles")
    ros.wait_until(lambda: any(h.inputs and h.inputs[0].sequence_num == header.sequence_num for h in cmd_headers),
                   timeout, f"a command computed from obstacles #{header.sequence_num}")


def expected_command(obstacle_xs, goal, odom):
    """Python copy of lockstep_examples::control::command with the default gains."""
    p, q = odom.pose.pose.position, odom.pose.pose.orientation
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    dx, dy = goal[0] - p.x, goal[1] - p.y
    distance = math.hypot(dx, dy)
    error = (math.atan2(dy, dx) - yaw) % math.tau
    if error > math.pi:
        error -= math.tau
    if distance < 0.05:
        return 0.0, 0.0
    angular = max(-1.0, min(1.0, 1.5 * error))
    linear = min(0.5 * distance, 0.5) * max(math.cos(error), 0.0)
    ahead = [x for x in obstacle_xs if x > 0]
    if ahead:
        nearest = min(ahead)
        linear *= 0.0 if nearest <= 0.4 else max(0.0, min(1.0, (nearest - 0.4) / 0.6))
    return linear, angular


@pytest.mark.parametrize("m2_binary", ["lockstep_module_m2", "lockstep_module_m2_py"])
def test_pipeline_headers_topology_and_digests(ros, m2_binary):
    """The whole pipeline, with m2 in Rust or in Python (`lockstep_trace`): the same headers, digests and
    commands."""
    # Our subscriptions first, so nothing the modules publish once data flows is missed.
    collected = {}
    for topic, msg_type in [("/cmd_vel", Twist), ("/obstacles", PoseArray), ("/mission", PoseStamped)]:
        collected[topic] = ros.collect(msg_type, topic)
        collected[topic + "/lockstep_header"] = ros.collect(DependencyHeader, topic + "/lockstep_header")

    m1 = ros.start("lockstep_module_m1", params={"processing_delay_ms": 2})
    m2 = ros.start(m2_binary, params={"rate_hz": M2_RATE_HZ, "processing_delay_ms": M2_DELAY_MS})
    m3 = ros.start("lockstep_module_m3", params={"rate_hz": 5.0, "hold": HOLD})

    # The topology is latched: subscribing after the modules published it still gets it.
    topologies = {m: ros.collect(ModuleTopology, f"/lockstep/topology/{m}", reliable(depth=1, latched=True))
                  for m in EXPECTED_TOPOLOGY}
    for module, received in topologies.items():
        ros.wait_for_messages(received, 1, what=f"the topology of {module}")
    learned = {}
    for received in topologies.values():
        (component,) = received[0].components
        learned[component.module_name] = (list(component.reader_channels), list(component.writer_channels))
    assert learned == EXPECTED_TOPOLOGY

    # Wait until every link is matched, so receive counters at the modules equal rclpy's send counters: our
    # subscriptions see the modules' publishers, and the modules acknowledge the sensors' first messages.
    for topic in collected:
        ros.wait_for_topic(topic)
    sensors = Sensors(ros)
    sensors.start()
    sensors.run(TICKS)
    # The controller should have answered about half its rate by now; on a loaded machine (a Python module
    # starting beside the whole suite) it may lag: the sensors go on, by half seconds, until it has (60 s at most).
    needed = 0.5 * TICKS * TICK_S * M2_RATE_HZ
    deadline = time.monotonic() + 60.0
    while len(collected["/cmd_vel/lockstep_header"]) < needed and time.monotonic() < deadline:
        sensors.run(sensors.ticks + 25)
    sent_odom = sensors.sent_odom
    c3_data, c3_headers = collected["/obstacles"], collected["/obstacles/lockstep_header"]
    wait_for_the_last_inputs_to_be_used(ros, sensors, c3_data, c3_headers, collected["/cmd_vel/lockstep_header"])
    # Stop the controller before looking: data and header of one output are published together, so after a
    # clean stop every output has its header, and we wait until both have arrived here.
    for proc in (m2, m1, m3):
        assert proc.stop() == 0, proc.log()
    # m3 publishes from its start, so our two /mission subscriptions (data, header) may each match its writers
    # a message or two apart: there, pairs are complete from a few messages in (MISSION_SLACK); elsewhere
    # outputs start once every link matched.
    outputs = ("/cmd_vel", "/obstacles", "/mission")
    ros.wait_until(lambda: all(paired(collected[t], collected[t + "/lockstep_header"], MISSION_SLACK * (t == "/mission"))
                               for t in outputs), 15, "every output paired with its header on " + ", ".join(outputs))

    cmd, cmd_headers = collected["/cmd_vel"], collected["/cmd_vel/lockstep_header"]
    c3_data, c3_headers = collected["/obstacles"], collected["/obstacles/lockstep_header"]
    c6_data, c6_headers = collected["/mission"], collected["/mission/lockstep_header"]
    assert len(cmd_headers) >= needed, (len(cmd_headers), sensors.ticks)

    # Every data message pairs with exactly one header, by a digest computed here from rclpy's CDR bytes
    # (canonicalised by rosbags).
    for data, headers, slack in [(cmd, cmd_headers, 0), (c3_data, c3_headers, 0), (c6_data, c6_headers, MISSION_SLACK)]:
        assert paired(data, headers, slack), (len(data), len(headers))
    # For a type without padding (Twist: all doubles) rclpy's own bytes are already canonical.
    assert all(serialize_message(m) == canonical_cdr(m) for m in cmd)
    # Same named inputs -> same command (deterministic module); and inputs change during the run, so the
    # commands differ too and the digest pairing above is not a trivially shared digest.
    by_inputs = collections.defaultdict(set)
    for h in cmd_headers:
        by_inputs[tuple((i.channel_name, i.sequence_num) for i in h.inputs)].add(h.payload_digest)
    assert all(len(digests) == 1 for digests in by_inputs.values()), by_inputs
    # (Absolute counts: on a loaded machine m1 and the odometry advance less often between m2's ticks, so a
    # share of repeated inputs is normal; what matters is that the inputs and outputs do vary.)
    assert len(by_inputs) >= 5, by_inputs
    assert len({h.payload_digest for h in cmd_headers}) >= 5

    c3_by_seq = {h.sequence_num: h for h in c3_headers}
    c3_data_by_digest = {digest(m): m for m in c3_data}
    c6_by_seq = {h.sequence_num: h for h in c6_headers}
    assert set(c3_by_seq) == set(range(len(c3_headers))), "obstacles numbered 0.. without gaps"

    # m1: every obstacle message names the front and rear readings it fused, which rclpy really sent, and its
    # content is made of exactly those readings. Untraced inputs (rclpy's sensors and odometry) are named
    # exactly by their payload digest: the index of the message rclpy sent, whatever the module's arrival count.
    sent = sensors.index_by_digest()
    epochs = {}
    previous = (-1, -1)
    for h in c3_headers:
        assert (h.module_name, h.channel_name) == (M1, "/obstacles")
        epochs.setdefault(h.module_name, set()).add(h.epoch)
        (fr, re_) = h.inputs
        assert (fr.module_name, fr.channel_name, re_.module_name, re_.channel_name) == (
            "", "/scan_front", "", "/scan_rear")
        assert fr.epoch == re_.epoch == 0  # untraced publishers
        front_i, rear_i = sent["/scan_front"][fr.payload_digest], sent["/scan_rear"][re_.payload_digest]
        pair = (front_i, rear_i)
        assert pair[0] >= previous[0] and pair[1] >= previous[1] and pair != previous, (previous, pair)
        previous = pair
        data = c3_data_by_digest[h.payload_digest]
        assert [p.position.x for p in data.poses] == [f32(front_range(front_i)), -f32(rear_range(rear_i))]
        assert data.header.stamp.sec == 1000 + max(front_i, rear_i)
    assert len(epochs[M1]) == 1, epochs  # one process, one epoch

    # m2: sequence numbers from 0, timer-driven, exactly three inputs that exist, two levels deep.
    assert [h.sequence_num for h in cmd_headers] == list(range(len(cmd_headers)))
    starts = [h.start_stamp.sec + h.start_stamp.nanosec * 1e-9 for h in cmd_headers]
    gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
    assert 0.7 / M2_RATE_HZ < gaps[len(gaps) // 2] < 1.5 / M2_RATE_HZ, gaps
    cmd_by_digest = {digest(m): m for m in cmd}
    min_c6 = min(c6_by_seq)

    def command_of(h):
        c3, c6, c4 = h.inputs
        obstacles = c3_data_by_digest[c3.payload_digest]
        goal = WAYPOINTS[(c6.sequence_num // HOLD) % len(WAYPOINTS)]
        return expected_command([p.position.x for p in obstacles.poses], goal,
                                sent_odom[sent["/odom"][c4.payload_digest]])

    def matches(h):
        expected, out = command_of(h), cmd_by_digest[h.payload_digest]
        return all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip((out.linear.x, out.angular.z), expected))

    checked_content = 0
    for h in cmd_headers:
        assert (h.module_name, h.channel_name) == (M2, "/cmd_vel")
        assert h.process_time_ns >= M2_DELAY_MS * 1_000_000, h.process_time_ns
        c3, c6, c4 = h.inputs
        assert [i.channel_name for i in h.inputs] == ["/obstacles", "/mission", "/odom"]
        assert [i.module_name for i in h.inputs] == [M1, M3, ""]
        # First level: the obstacles header it names is the one published, timing, epoch and digest included.
        recorded = c3_by_seq[c3.sequence_num]
        assert (c3.start_stamp, c3.process_time_ns, c3.epoch, c3.payload_digest) == (
            recorded.start_stamp, recorded.process_time_ns, recorded.epoch, recorded.payload_digest)
        assert c3.epoch in epochs[M1] and c3.epoch != 0
        # Second level: the readings behind those obstacles, as rclpy sent them.
        assert [(s.module_name, s.channel_name, s.sequence_num, s.payload_digest) for s in c3.sources] == [
            (i.module_name, i.channel_name, i.sequence_num, i.payload_digest) for i in recorded.inputs]
        assert c3.sources[0].payload_digest in sent["/scan_front"]
        assert c3.sources[1].payload_digest in sent["/scan_rear"]
        # Missions published before our subscription matched are numbered below the first one we saw.
        assert c6.sequence_num in c6_by_seq or c6.sequence_num < min_c6
        assert c6.sources == [] and c4.sources == []
        assert c4.payload_digest in sent["/odom"] and c4.epoch == 0
        # The named inputs are the ones used: the command recomputed from them is the command sent.
        assert matches(h), (h.sequence_num, command_of(h))
        checked_content += 1
    assert checked_content == len(cmd_headers)
    # m2 uses the latest odometry: it advances with time rather than sticking to one message.
    assert len({h.inputs[2].payload_digest for h in cmd_headers}) >= max(5, 0.3 * len(cmd_headers))
