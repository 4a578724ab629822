"""`lockstep bag play` with several bags at once (`-i A -i B -i C`, or the node's `bag:=A,B,C`), `--message-order`,
`--clock-topics` / `--clock-topics-all`, and the keyboard controls and progress line on a terminal, as rosbag2's
player has them. Black box: bags written here with the Python `rosbags` package (publish times set with the
`mcap` package), played over DDS to rclpy subscribers; the keys typed into a pseudo-terminal."""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer as McapWriter
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from lockstep_interfaces.srv import IsPaused, Resume
from lockstep_testing.harness import binary, reliable

PLAYER = "lockstep_bag_player"
TS = get_typestore(Stores.ROS2_JAZZY)
STRING = "std_msgs/msg/String"
BASE_NS = 1_700_000_000_000_000_000
MS = 1_000_000
# Deep, so that a fast stream is not overwritten before a slow reader acknowledged it.
QOS = Qos(QosHistory.KEEP_LAST, 1000, QosReliability.RELIABLE, QosDurability.VOLATILE,
          QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)


def write_bag(path: Path, messages: list[tuple[str, int, str]]) -> Path:
    """A bag of std_msgs/String written by rosbags: (topic, log time ns, text) in the order given."""
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {}
        for topic, _, _ in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, STRING, typestore=TS, offered_qos_profiles=[QOS])
        for topic, t, text in messages:
            writer.write(conns[topic], t, TS.serialize_cdr(TS.types[STRING](data=text), STRING))
    return path


def set_publish_times(bag: Path, publish_ns: dict[str, int]) -> None:
    """Rewrite the bag's MCAP file with each message's publish time from `publish_ns` (by its text); rosbags
    writes the log time there. Everything else (channels and their QoS, metadata, log times) is copied."""
    [mcap] = bag.glob("*.mcap")
    with open(mcap, "rb") as f:
        reader = make_reader(f)
        records = list(reader.iter_messages())
        metadata = list(reader.iter_metadata())
    with open(mcap, "wb") as out:
        writer = McapWriter(out, compression=CompressionType.NONE)
        writer.start(profile="ros2", library="test_bag_play_many")
        schemas, channels = {}, {}
        for schema, channel, message in records:
            if schema.id not in schemas:
                schemas[schema.id] = writer.register_schema(schema.name, schema.encoding, schema.data)
            if channel.id not in channels:
                channels[channel.id] = writer.register_channel(channel.topic, channel.message_encoding,
                                                               schemas[schema.id], dict(channel.metadata))
            text = TS.deserialize_cdr(message.data, STRING).data
            writer.add_message(channels[channel.id], message.log_time, message.data, publish_ns[text],
                               message.sequence)
        for record in metadata:
            writer.add_metadata(record.name, dict(record.metadata))
        writer.finish()


def three_bags(tmp_path: Path) -> tuple[list[Path], list[tuple[str, int, str]]]:
    """Bags A, B, C: /tie at the same stamps in all three (A has two messages at the first one), and /a, /b
    at stamps interleaved with it and each other (A and C both have /a). Returns the bags and the expected
    merged order: by stamp, then bag (A, B, C), then the place in the bag."""
    spec = {"A": [], "B": [], "C": []}
    spec["A"].append(("/tie", BASE_NS, "A/tie/first"))
    for k in range(8):
        t = BASE_NS + k * 20 * MS
        for name in "ABC":
            spec[name].append(("/tie", t, f"{name}/tie/{k}"))
        spec["A"].append(("/a", t + 3 * MS, f"A/a/{k}"))
        spec["B"].append(("/b", t + 7 * MS, f"B/b/{k}"))
        spec["C"].append(("/a", t + 11 * MS, f"C/a/{k}"))
    bags = [write_bag(tmp_path / name, spec[name]) for name in "ABC"]
    keyed = [(t, i, p, topic, text) for i, name in enumerate("ABC")
             for p, (topic, t, text) in enumerate(spec[name])]
    return bags, [(topic, t, text) for t, _, _, topic, text in sorted(keyed)]


def on_the_wire(received: list[list]) -> list[str]:
    """Texts of every message received on several topics, in the order they were sent: one thread publishes
    everything, so the publishers' send times give the order on the wire."""
    everything = sorted((pair for got in received for pair in got), key=lambda p: p[1]["source_timestamp"])
    return [m.data for m, _ in everything]


def subscribe_all(ros, topics: list[str]) -> tuple[list[list], list]:
    received, subs = [], []
    for topic in topics:
        got, sub = ros.subscribe(String, topic, reliable(depth=1000))
        received.append(got)
        subs.append(sub)
    return received, subs


def play_cli(ros, args: list[str]) -> subprocess.Popen:
    """`lockstep bag play <args>` started paused (resumed once this side matched: a volatile reader that matches
    after a message was sent never gets it), waiting for every reliable reader's acknowledgement at the end."""
    return subprocess.Popen([str(binary("lockstep")), "bag", "play", *args, "--start-paused",
                             "--wait-for-subscribers", "1", "--wait-for-all-acked", "30000"],
                            env=ros.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def resume_when_matched(ros, subs: list) -> None:
    for sub in subs:
        ros.wait_for_publishers(sub, timeout=60)
    # A second resume is harmless, so a lost reply is asked again.
    assert ros.call(Resume, f"/{PLAYER}/resume", Resume.Request(), timeout=60, retry_every=5) is not None


def finish(proc: subprocess.Popen, timeout: float = 120) -> str:
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    return err


@pytest.mark.parametrize("form", ["cli", "node"])
def test_three_bags_play_as_one_stream_by_stamp_ties_in_input_order(ros, tmp_path, form):
    bags, expected = three_bags(tmp_path)
    received, subs = subscribe_all(ros, ["/tie", "/a", "/b"])
    if form == "cli":
        # The positional bag, then -i twice (one with rosbag2's optional storage id).
        proc = play_cli(ros, [str(bags[0]), "-i", str(bags[1]), "mcap", "-i", str(bags[2]), "--rate", "2"])
    else:
        node = ros.start(PLAYER, params={"bag": ",".join(map(str, bags)), "start_paused": True,
                                         "wait_for_subscribers": 1, "rate": 2.0})
    resume_when_matched(ros, subs)
    ros.wait_until(lambda: sum(map(len, received)) >= len(expected), 60,
                   "every message of the three bags", proc=None if form == "cli" else node)
    if form == "cli":
        finish(proc)
    # /tie goes through one publisher, so its reader's order is the publish order, whatever the clocks.
    assert [m.data for m, _ in received[0]] == [text for topic, _, text in expected if topic == "/tie"]
    assert on_the_wire(received) == [text for _, _, text in expected]


def test_a_topic_with_two_types_across_bags_is_refused_naming_both(tmp_path):
    a = write_bag(tmp_path / "a", [("/x", BASE_NS, "a")])
    b = tmp_path / "b"
    with Writer(b, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/x", "std_msgs/msg/Int32", typestore=TS, offered_qos_profiles=[QOS])
        writer.write(conn, BASE_NS, TS.serialize_cdr(TS.types["std_msgs/msg/Int32"](data=1), "std_msgs/msg/Int32"))
    run = subprocess.run([str(binary("lockstep")), "bag", "play", "-i", str(a), "-i", str(b)],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 1 and len(errors) == 1, run.stderr
    for part in ("/x", STRING, "std_msgs/msg/Int32", str(a), str(b)):
        assert part in errors[0], errors[0]


@pytest.mark.parametrize("order", ["received", "sent"])
def test_message_order_sent_follows_publish_times(ros, tmp_path, order):
    # /y was published 8 ms before it was logged, /x when it was logged: by publish time each /y comes first.
    messages, published = [], {}
    for k in range(6):
        t = BASE_NS + k * 10 * MS
        messages += [("/x", t, f"x{k}"), ("/y", t + 5 * MS, f"y{k}")]
        published.update({f"x{k}": t, f"y{k}": t - 3 * MS})
    bag = write_bag(tmp_path / "bag", messages)
    set_publish_times(bag, published)
    expected = {"received": [text for _, _, text in messages],
                "sent": sorted(published, key=lambda text: (published[text], text))}[order]
    assert expected[:2] == (["x0", "y0"] if order == "received" else ["y0", "x0"])
    received, subs = subscribe_all(ros, ["/x", "/y"])
    proc = play_cli(ros, [str(bag), "--message-order", order])
    resume_when_matched(ros, subs)
    ros.wait_until(lambda: sum(map(len, received)) >= len(messages), 60, "every message")
    finish(proc)
    assert on_the_wire(received) == expected


@pytest.mark.parametrize("which", ["/b", "all"])
def test_clock_topics_publish_clock_with_the_played_messages_stamps(ros, tmp_path, which):
    bags, expected = three_bags(tmp_path)
    clock, clock_sub = ros.subscribe(Clock, "/clock", reliable(depth=1000))
    received, subs = subscribe_all(ros, ["/tie", "/a", "/b"])
    flags = ["--clock-topics", "/b"] if which == "/b" else ["--clock-topics-all"]
    proc = play_cli(ros, ["-i", str(bags[0]), "-i", str(bags[1]), "-i", str(bags[2]), *flags])
    ros.wait_for_publishers(clock_sub, timeout=60)
    resume_when_matched(ros, subs)
    ros.wait_until(lambda: sum(map(len, received)) >= len(expected), 60, "every message")
    finish(proc)
    stamps = [t for topic, t, _ in expected if which == "all" or topic == which]
    ros.wait_for_messages(clock, len(stamps), timeout=30, what="/clock messages")
    assert [m.clock.sec * 10**9 + m.clock.nanosec for m, _ in clock] == stamps


def test_clock_at_a_rate_and_clock_topics_exclude_each_other(tmp_path):
    bag = write_bag(tmp_path / "bag", [("/x", BASE_NS, "x")])
    run = subprocess.run([str(binary("lockstep")), "bag", "play", str(bag), "--clock", "10", "--clock-topics", "/x"],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 2 and "--clock-topics" in run.stderr and "--clock" in run.stderr, run.stderr


# ----- keyboard controls and the progress line, through a pseudo-terminal -----

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
PROGRESS = re.compile(r"\[[#-]{10}\]\s+(\d+\.\d) %  bag time (\d+)\.(\d{3}) s  rate ([\d.]+)(  paused)?  (\d+)/(\d+) msgs")
SPACE, RIGHT, UP = b" ", b"\x1b[C", b"\x1b[A"


class Terminal:
    """`lockstep bag play` on a pseudo-terminal: its stdin, stdout and stderr, and its controlling terminal (so
    Ctrl-C typed there is a SIGINT, as in a shell). The output is read all along."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.output = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()

        def controlling_terminal() -> None:
            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with pytest
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([str(binary("lockstep")), "bag", "play", *args], env=env, stdin=self.slave,
                                     stdout=self.slave, stderr=self.slave, start_new_session=True,
                                     preexec_fn=controlling_terminal)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    return
                with self._lock:
                    self.output += chunk

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def text(self) -> str:
        with self._lock:
            return ANSI.sub(b"", bytes(self.output)).decode(errors="replace")

    def progress(self) -> re.Match | None:
        """The last progress line drawn."""
        lines = [m for m in (PROGRESS.search(part) for part in re.split(r"[\r\n]", self.text())) if m]
        return lines[-1] if lines else None

    def keys_mode(self) -> bool:
        """The terminal neither echoes nor waits for a whole line (the player's mode while keys are on)."""
        lflag = termios.tcgetattr(self.slave)[3]
        return not lflag & (termios.ECHO | termios.ICANON)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._stop.set()
        self._reader.join(timeout=5)
        os.close(self.master)
        os.close(self.slave)


def wait_progress(ros, term: Terminal, check, what: str, timeout: float = 60):
    def matched():
        line = term.progress()
        return line if line is not None and check(line) else None
    try:
        return ros.wait_until(matched, timeout, what)
    except TimeoutError as e:
        raise AssertionError(f"{e}; the terminal shows:\n{term.text()[-3000:]}") from None


def wait_exit(ros, term: Terminal, timeout: float = 60) -> int:
    ros.wait_until(lambda: term.proc.poll() is not None, timeout, "lockstep bag play to exit")
    return term.proc.returncode


def quiet_for(received: list, secs: float) -> bool:
    """Nothing new arrives for `secs` (observing an absence needs a span of time; nothing else waits)."""
    before = len(received)
    time.sleep(secs)
    return len(received) == before


def test_keys_pause_step_speed_up_and_resume_as_the_progress_line_shows(ros, tmp_path):
    count = 40
    bag = write_bag(tmp_path / "bag", [("/k", BASE_NS + i * 100 * MS, f"k{i}") for i in range(count)])
    received, sub = ros.subscribe(String, "/k", reliable(depth=1000))
    term = Terminal([str(bag), "--start-paused", "--wait-for-subscribers", "1", "--wait-for-all-acked", "30000",
                     "--progress-bar-update-rate", "10"], ros.env)
    try:
        line = wait_progress(ros, term, lambda m: m[5], "the progress line, paused")
        assert line[2] == str(BASE_NS // 10**9) and float(line[1]) == 0.0 and line[4] == "1", line[0]
        assert line[7] == str(count) and term.keys_mode()
        ros.wait_for_publishers(sub, timeout=60)
        term.type(SPACE)  # resume
        ros.wait_until(lambda: len(received) >= 5, 60, "5 messages after space")
        term.type(SPACE)  # pause
        # Paused, and everything published before the pause (the line counts it) has arrived ...
        wait_progress(ros, term, lambda m: m[5] and int(m[6]) == len(received),
                      "a paused progress line counting every message received")
        # ... then nothing more arrives while paused.
        assert quiet_for(received, 1.5), [m.data for m, _ in received]
        held = len(received)
        assert int(term.progress()[6]) == held < count
        term.type(RIGHT)  # exactly one more
        ros.wait_until(lambda: len(received) > held, 30, "the message of the right arrow")
        assert quiet_for(received, 1.0) and len(received) == held + 1
        term.type(UP)
        faster = wait_progress(ros, term, lambda m: m[4] == "1.1", "the rate 1.1 in the progress line")
        assert faster[5] and 0.0 < float(faster[1]) < 100.0
        term.type(SPACE)  # resume: the rest arrives and the play ends
        ros.wait_until(lambda: len(received) >= count, 60, "every message after resuming")
        assert wait_exit(ros, term) == 0, term.text()[-3000:]
        assert [m.data for m, _ in received] == [f"k{i}" for i in range(count)]
        last = term.progress()
        assert float(last[1]) == 100.0 and not last[5] and last[6] == str(count), last[0]
        assert not term.keys_mode()  # the terminal's mode is back
    finally:
        term.close()


def test_ctrl_c_restores_the_terminal_and_disabled_keys_leave_it_alone(ros, tmp_path):
    bag = write_bag(tmp_path / "bag", [("/k", BASE_NS + i * 100 * MS, f"k{i}") for i in range(600)])
    term = Terminal([str(bag), "--start-paused"], ros.env)
    try:
        wait_progress(ros, term, lambda m: m[5], "the progress line")
        assert term.keys_mode()
        term.type(b"\x03")  # Ctrl-C: SIGINT to the foreground process group
        wait_exit(ros, term)
        assert not term.keys_mode(), "the terminal stayed without echo after Ctrl-C"
    finally:
        term.close()
    term = Terminal([str(bag), "--start-paused", "--disable-keyboard-controls"], ros.env)
    try:
        wait_progress(ros, term, lambda m: m[5], "the progress line")
        assert not term.keys_mode()
        term.type(SPACE)
        time.sleep(1.0)  # a key would have been taken by now; nothing reads them
        response = ros.call(IsPaused, f"/{PLAYER}/is_paused", IsPaused.Request(), timeout=60, retry_every=5)
        assert response.paused and term.progress()[5]
    finally:
        term.close()
    # No progress line with --quiet (nor the keys' help), nor with an update rate of 0 (as rosbag2 reads it).
    for flags, keys_help in ((["--quiet"], False), (["--progress-bar-update-rate", "0"], True)):
        term = Terminal([str(bag), "--clock", "20", *flags], ros.env)
        try:
            clock = ros.collect(Clock, "/clock")
            ros.wait_for_messages(clock, 3, timeout=60, what="/clock (the player runs)")
            assert term.progress() is None and ("keys:" in term.text()) == keys_help, term.text()
        finally:
            term.close()
