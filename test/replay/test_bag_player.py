"""The bag player (`lockstep_bag_player`, `lockstep bag play`), black-box: bags written by rosbag2 (kept in
test/data) and by the Python `rosbags` package, played over DDS to rclpy subscribers."""

import glob
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from mcap.reader import make_reader
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from lockstep_interfaces.srv import (Burst, GetRate, IsPaused, Pause, PlayNext, Resume, Seek, SetRate,
                                     TogglePaused)
from lockstep_testing.bad_input import Input, check_bad_input
from lockstep_testing.harness import between_processes, binary, reliable

PLAYER = "lockstep_bag_player"
REPO = Path(__file__).resolve().parents[2]
ROSBAG2 = REPO / "test" / "data" / "rosbag2"
TS = get_typestore(Stores.ROS2_JAZZY)
STRING = "std_msgs/msg/String"
BASE_NS = 1_700_000_000_000_000_000
MS = 1_000_000
QOS = Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE,
          QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)
# A reliable KEEP_LAST 10 writer overwrites samples a slow reader has not acknowledged yet (DDS semantics, the
# same with rosbag2): tests that must receive every message of a long fast stream record this deeper history.
DEEP_QOS = Qos(QosHistory.KEEP_LAST, 1000, QosReliability.RELIABLE, QosDurability.VOLATILE,
               QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)


def write_bag(path: Path, messages: list[tuple[str, int, str]],
              storage: StoragePlugin = StoragePlugin.MCAP, qos: Qos = QOS) -> Path:
    """A bag of std_msgs/String written by rosbags: (topic, log time ns, text) in the order given."""
    with Writer(path, version=9, storage_plugin=storage) as writer:
        conns = {}
        for topic, _, _ in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, STRING, typestore=TS, offered_qos_profiles=[qos])
        for topic, t, text in messages:
            writer.write(conns[topic], t, TS.serialize_cdr(TS.types[STRING](data=text), STRING))
    return path


def chatter_bag(path: Path, count: int = 200, period_ns: int = 10 * MS, qos: Qos = QOS) -> Path:
    return write_bag(path, [("/chatter", BASE_NS + i * period_ns, f"m{i}") for i in range(count)], qos=qos)


def start_player(ros, bag: Path, **params):
    return ros.start(PLAYER, params={"bag": str(bag), **params})


def play_when_matched(ros, bag: Path, subs: list, **params):
    """Starts the player paused, waits until both sides of every subscription in `subs` have matched
    (DDS matches each side on its own; a volatile reader that matches after a sample was sent never gets
    it), then resumes: the player plays once it has matched too (`wait_for_subscribers`)."""
    proc = start_player(ros, bag, start_paused=True, wait_for_subscribers=1, **params)
    for sub in subs:
        ros.wait_for_publishers(sub)
    # A second resume is harmless, so a lost reply is asked again.
    assert ros.call(Resume, svc("resume"), Resume.Request(), timeout=30, retry_every=5) is not None
    return proc


def svc(name: str) -> str:
    return f"/{PLAYER}/{name}"


def texts(received) -> list[str]:
    return [m.data for m, _ in received]


def quiet_for(received: list, secs: float) -> bool:
    """Nothing new arrives for `secs` (observing an absence needs a span of time; nothing else waits)."""
    before = len(received)
    time.sleep(secs)
    return len(received) == before


def rosbag2_talker_topic(storage: str) -> list[bytes]:
    """The /topic messages of rosbag2's own talker bag, read with tools nobody here wrote."""
    if storage == "mcap":
        with open(glob.glob(str(ROSBAG2 / "mcap" / "talker" / "*.mcap"))[0], "rb") as f:
            return [m.data for _, c, m in make_reader(f).iter_messages() if c.topic == "/topic"]
    db = sqlite3.connect(f"file:{glob.glob(str(ROSBAG2 / 'sqlite3' / 'talker' / '*.db3'))[0]}?mode=ro&immutable=1", uri=True)
    rows = db.execute("SELECT m.data FROM messages m JOIN topics t ON m.topic_id = t.id "
                      "WHERE t.name = '/topic' ORDER BY m.timestamp, m.id").fetchall()
    return [bytes(r[0]) for r in rows]


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_rosbag2_talker_bag_plays_byte_identical_in_order(ros, storage):
    received, sub = ros.subscribe(String, "/topic", raw=True)
    proc = play_when_matched(ros, ROSBAG2 / storage / "talker", [sub], topics="/topic", rate=10.0)
    ros.wait_for_messages(received, 10, timeout=20)
    expected = rosbag2_talker_topic(storage)
    assert len(expected) == 10
    assert [bytes(m) for m, _ in received] == [between_processes(d) for d in expected]
    assert proc.alive()


def test_equal_timestamps_play_in_write_order_every_time(ros, tmp_path):
    # Three topics share every timestamp and are written in a rotating order, so the write order differs
    # from any order by topic name or by connection.
    messages = []
    rotation = ["/c", "/a", "/b"]
    for k in range(20):
        for topic in rotation[k % 3:] + rotation[:k % 3]:
            messages.append((topic, BASE_NS + k * MS, f"{topic}:{k}"))
    bag = write_bag(tmp_path / "bag", messages)
    plays = []
    for run in range(2):
        received = []
        subs = []
        for topic in ("/a", "/b", "/c"):
            # Deep enough for the whole play: 60 messages arrive within 20 ms, faster than rclpy takes them.
            got, sub = ros.subscribe(String, topic, reliable(depth=100))
            received.append(got)
            subs.append(sub)
        proc = play_when_matched(ros, bag, subs)
        try:
            ros.wait_until(lambda: sum(map(len, received)) >= len(messages), 20, f"every message (play {run})")
        except TimeoutError as e:
            raise AssertionError(f"{e}: got {[len(g) for g in received]} on /a /b /c\n{proc.log()}") from None
        # One thread publishes everything, so the publishers' send times give the order on the wire.
        everything = sorted((pair for got in received for pair in got), key=lambda p: p[1]["source_timestamp"])
        plays.append([m.data for m, _ in everything])
        assert proc.stop(timeout=10) == 0, proc.log()
        for sub in subs:
            ros.node.destroy_subscription(sub)
    assert plays[0] == [text for _, _, text in messages]
    assert plays[1] == plays[0]


def test_pause_play_next_burst_seek_and_rate_services(ros, tmp_path):
    # 600 messages: after the seek to m101 ~5 s at rate 1 remain, room for slow service calls on a loaded machine.
    bag = chatter_bag(tmp_path / "bag", count=600, qos=DEEP_QOS)
    received, sub = ros.subscribe(String, "/chatter", reliable(depth=1000))
    start_player(ros, bag, start_paused=True, wait_for_subscribers=1)
    ros.wait_for_publishers(sub)
    assert ros.call(IsPaused, svc("is_paused"), IsPaused.Request()).paused
    assert ros.call(GetRate, svc("get_rate"), GetRate.Request()).rate == 1.0
    assert quiet_for(received, 1.0), texts(received)  # paused: nothing is published

    assert ros.call(PlayNext, svc("play_next"), PlayNext.Request()).success
    ros.wait_for_messages(received, 1)
    burst = ros.call(Burst, svc("burst"), Burst.Request(num_messages=5))
    assert burst.actually_burst == 5, burst
    ros.wait_for_messages(received, 6)
    assert quiet_for(received, 0.5) and texts(received) == [f"m{i}" for i in range(6)]

    # Seek (while paused): the next message is the first at or after the target.
    target = BASE_NS + 100 * 10 * MS + 1  # just after m100: m101 is next
    seek = ros.call(Seek, svc("seek"), Seek.Request(time=Time(sec=target // 10**9, nanosec=target % 10**9)))
    assert seek.success, seek.message
    assert ros.call(PlayNext, svc("play_next"), PlayNext.Request()).success
    ros.wait_for_messages(received, 7)
    assert texts(received)[-1] == "m101"
    outside = ros.call(Seek, svc("seek"), Seek.Request(time=Time(sec=1, nanosec=0)))
    assert not outside.success and "outside the bag" in outside.message, outside

    # Refusals say why; the rate stays.
    for bad in (0.0, -2.0):
        answer = ros.call(SetRate, svc("set_rate"), SetRate.Request(rate=bad))
        assert not answer.success and "rate must be a number > 0" in answer.message, answer
    assert ros.call(GetRate, svc("get_rate"), GetRate.Request()).rate == 1.0

    # Rate: bag messages are 10 ms apart; at rate 2.0 they go out 5 ms apart (rate 1.0 would give 10 ms). Gaps
    # are measured on the publisher's send times, of messages sent after the change was answered: on a
    # loaded machine rclpy still takes in messages sent before it for a while.
    def mean_gap_ms(count: int, after_ns: int) -> float:
        def sent_after() -> list[int]:
            return [info["source_timestamp"] for _, info in list(received) if info["source_timestamp"] > after_ns]
        ros.wait_until(lambda: len(sent_after()) >= count, 15, f"{count} messages sent after the change")
        stamps = sent_after()[:count]
        return (stamps[-1] - stamps[0]) / (count - 1) / 1e6

    ros.call(Resume, svc("resume"), Resume.Request())
    resumed_ns = time.time_ns()
    assert not ros.call(IsPaused, svc("is_paused"), IsPaused.Request()).paused
    at_one = mean_gap_ms(40, resumed_ns)
    assert ros.call(SetRate, svc("set_rate"), SetRate.Request(rate=2.0)).success
    changed_ns = time.time_ns()
    assert ros.call(GetRate, svc("get_rate"), GetRate.Request()).rate == 2.0
    at_two = mean_gap_ms(40, changed_ns)
    assert 8.5 < at_one < 11.5, at_one
    assert 4.0 < at_two < 6.5, (at_one, at_two)

    # play_next and burst only while paused.
    refused = ros.call(PlayNext, svc("play_next"), PlayNext.Request())
    assert not refused.success and "only while paused" in refused.message, refused
    refused = ros.call(Burst, svc("burst"), Burst.Request(num_messages=3))
    assert refused.actually_burst == 0 and "only while paused" in refused.message, refused
    ros.call(TogglePaused, svc("toggle_paused"), TogglePaused.Request())
    assert ros.call(IsPaused, svc("is_paused"), IsPaused.Request()).paused
    ros.call(Pause, svc("pause"), Pause.Request())  # pausing twice is harmless
    assert ros.call(IsPaused, svc("is_paused"), IsPaused.Request()).paused
    assert quiet_for(received, 0.5)


def test_clock_follows_bag_time_and_stops_while_paused(ros, tmp_path):
    bag = chatter_bag(tmp_path / "bag", count=100, period_ns=100 * MS)  # 10 s of bag time
    clock, sub = ros.subscribe(Clock, "/clock")
    start_player(ros, bag, clock=50.0)
    ros.wait_for_publishers(sub)
    ros.wait_for_messages(clock, 60)
    # When the player published each (the DDS source time): a loaded machine delivering in bursts does not
    # change the rate measured.
    stamps = [(m.clock.sec * 10**9 + m.clock.nanosec, info["source_timestamp"]) for m, info in clock[-50:]]
    wall_span = (stamps[-1][1] - stamps[0][1]) / 1e9
    assert 18 < 49 / wall_span < 75, f"/clock at {49 / wall_span:.1f} Hz, asked 50"
    bag_span = (stamps[-1][0] - stamps[0][0]) / 1e9
    assert abs(bag_span - wall_span) < 0.1, (bag_span, wall_span)  # rate 1: bag time runs with wall time
    assert all(BASE_NS <= t <= BASE_NS + 10 * 10**9 for t, _ in stamps)
    ros.call(Pause, svc("pause"), Pause.Request())
    mark = len(clock)
    ros.wait_for_messages(clock, mark + 15)
    held = {m.clock.sec * 10**9 + m.clock.nanosec for m, _ in clock[mark + 2:]}
    assert len(held) == 1, sorted(held)  # paused: /clock keeps coming and stands still


def test_the_cli_plays_to_the_end_and_exits(ros, tmp_path):
    bag = chatter_bag(tmp_path / "bag", count=50)
    received, sub = ros.subscribe(String, "/chatter")
    # The player waits at its end until the reliable subscriber acknowledged every message: give that wait
    # room on a loaded machine (it ends as soon as all are acknowledged), or the last ones die with the process.
    # It starts paused and plays once this side has matched it too: `--wait-for-subscribers` sees only the
    # player's side, and a volatile reader that matches after the first message was sent never gets it.
    cli = subprocess.Popen([str(binary("lockstep")), "bag", "play", str(bag), "--rate", "1", "--start-paused",
                            "--wait-for-subscribers", "1", "--wait-for-all-acked", "30000"],
                           env=ros.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ros.wait_for_publishers(sub, timeout=30)
        assert ros.call(Resume, svc("resume"), Resume.Request(), timeout=30, retry_every=5) is not None
        _, err = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert cli.returncode == 0, err
    ros.wait_for_messages(received, 50)
    assert texts(received) == [f"m{i}" for i in range(50)]


@pytest.mark.parametrize("case", ["missing", "malformed", "unknown_topic", "bad_rate"])
def test_bad_bags_and_options_are_clear_errors_and_publish_nothing(ros, tmp_path, case):
    bag = chatter_bag(tmp_path / "bag", count=20)
    received, _ = ros.subscribe(String, "/chatter")
    args = [str(bag)]
    if case == "missing":
        args = [str(tmp_path / "nope")]
    elif case == "malformed":
        broken = tmp_path / "broken.mcap"
        broken.write_bytes(b"\x89MCAP0\r\n" + b"garbage" * 100)
        args = [str(broken)]
    elif case == "unknown_topic":
        args += ["--topics", "/chatter", "/nope"]
    elif case == "bad_rate":
        args += ["--rate", "0"]
    run = subprocess.run([str(binary("lockstep")), "bag", "play", *args], env=ros.env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in run.stderr and "panicked" not in run.stderr, run.stderr
    expect = {"missing": "nope", "malformed": "broken.mcap", "unknown_topic": "`/nope`", "bad_rate": "rate"}[case]
    assert expect in lines[0], lines[0]
    assert quiet_for(received, 0.3) and received == []


def test_the_node_survives_bad_service_requests(ros, tmp_path):
    bag = chatter_bag(tmp_path / "bag", count=50)
    proc = start_player(ros, bag, clock=20.0, start_paused=True)
    check_bad_input(ros, proc, services=[(SetRate, svc("set_rate")), Input(Seek, svc("seek"), integers=True),
                                         Input(Burst, svc("burst"), integers=True)],
                    outputs=[(Clock, "/clock")])
    assert ros.call(GetRate, svc("get_rate"), GetRate.Request()).rate > 0


def test_types_not_compiled_in_play_and_an_uninstalled_type_is_skipped_once(ros, tmp_path):
    """lockstep_test_msgs is compiled into no binary: it plays through the generic publisher once the
    node's AMENT_PREFIX_PATH holds it. ghost_msgs is installed nowhere: reported once, skipped."""
    prefix = os.environ.get("LOCKSTEP_TEST_MSGS_PREFIX")
    assert prefix and Path(prefix).is_dir(), "LOCKSTEP_TEST_MSGS_PREFIX is not set: source scripts/env.sh"
    from lockstep_test_msgs.msg import Reading  # built by scripts/setup.sh, on PYTHONPATH
    store = get_typestore(Stores.ROS2_JAZZY)
    reading_def = (REPO / "test/fixtures/lockstep_test_msgs/msg/Reading.msg").read_text()
    store.register(get_types_from_msg(reading_def, "lockstep_test_msgs/msg/Reading"))
    store.register(get_types_from_msg("int32 x\n", "ghost_msgs/msg/Thing"))
    bag = tmp_path / "bag"
    readings = []
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {topic: writer.add_connection(topic, msgtype, typestore=store, offered_qos_profiles=[QOS])
                 for topic, msgtype in (("/reading", "lockstep_test_msgs/msg/Reading"),
                                        ("/ghost", "ghost_msgs/msg/Thing"), ("/chatter", STRING))}
        R, T, G, S = (store.types[n] for n in ("lockstep_test_msgs/msg/Reading", "builtin_interfaces/msg/Time",
                                                "ghost_msgs/msg/Thing", STRING))
        for i in range(5):
            t = BASE_NS + i * 10 * MS
            raw = bytes(store.serialize_cdr(R(sensor=f"s{i}", value=i * 0.5, stamp=T(sec=i, nanosec=7)), R.__msgtype__))
            readings.append(raw)
            writer.write(conns["/reading"], t, raw)
            writer.write(conns["/ghost"], t, store.serialize_cdr(G(x=i), G.__msgtype__))
            writer.write(conns["/chatter"], t, store.serialize_cdr(S(data=f"m{i}"), STRING))

    got_reading, sub_reading = ros.subscribe(Reading, "/reading", raw=True)
    got_chatter, sub_chatter = ros.subscribe(String, "/chatter")
    env = {"AMENT_PREFIX_PATH": f"{prefix}:{os.environ['AMENT_PREFIX_PATH']}"}
    proc = ros.start(PLAYER, params={"bag": str(bag), "start_paused": True, "wait_for_subscribers": 1}, env=env)
    for sub in (sub_reading, sub_chatter):
        ros.wait_for_publishers(sub)
    ros.call(Resume, svc("resume"), Resume.Request())
    ros.wait_for_messages(got_reading, 5)
    ros.wait_for_messages(got_chatter, 5)
    assert [bytes(m) for m, _ in got_reading] == [between_processes(r) for r in readings]
    assert texts(got_chatter) == [f"m{i}" for i in range(5)]
    ros.wait_until(lambda: "playback ended" in proc.log(), 15, "the end of the play")
    warnings = [line for line in proc.log().splitlines() if "/ghost" in line]
    assert len(warnings) == 1, proc.log()
    assert "ghost_msgs/msg/Thing" in warnings[0] and "ghost_msgs" in warnings[0] and prefix in warnings[0], warnings
    assert proc.alive()


@pytest.mark.parametrize("name", ["mcap_file", "mcap_message", "sqlite3_file", "sqlite3_message"])
def test_rosbag2_compressed_bags_play_in_write_order(ros, name):
    """rosbag2's zstd compression (whole files or each message), in bags written by rosbags
    (packages/lockstep_bag/tests/data/compressed/make.py): /c /a /b at each even time, /b /c /a at odd."""
    bag = REPO / "packages/lockstep_bag/tests/data/compressed" / name
    expected = []
    for t in range(1_000_000_000, 1_000_000_008):
        for topic in (("/c", "/a", "/b") if t % 2 == 0 else ("/b", "/c", "/a")):
            expected.append(f"{topic} {t} #{len(expected)}")
    received, subs = [], []
    for topic in ("/a", "/b", "/c"):
        got, sub = ros.subscribe(String, topic, reliable(depth=100))
        received.append(got)
        subs.append(sub)
    play_when_matched(ros, bag, subs)
    ros.wait_until(lambda: sum(map(len, received)) >= len(expected), 20, "every message")
    everything = sorted((pair for got in received for pair in got), key=lambda p: p[1]["source_timestamp"])
    assert [m.data for m, _ in everything] == expected
