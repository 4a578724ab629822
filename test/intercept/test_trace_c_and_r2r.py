"""The rcl interceptor (`lockstep trace -- CMD`) on programs that are neither rclpy nor instrumented, each a real
process over DDS driven from rclpy:
- a plain C program over rcl (nodes/c_relay.c, compiled here), standing in for rclcpp, which makes the same
  rcl calls: every output's header names the exact message its loop took;
- an unmodified r2r node of this workspace (lockstep_mock_joints, no lockstep_trace in it): its headers, its
  inferred wiring and its event log."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, String

from lockstep_interfaces.msg import DependencyHeader, ModuleTopology, NodeEvent, NodeEvents
from lockstep_testing.harness import REPO_ROOT, binary, reliable
from traced import NODES, TYPESTORE, digest_of

WAIT_SECS = 120


def digest(msg, typename: str) -> int:
    """The payload digest of a message as rclpy holds it (canonical CDR: rosbags, zero padding)."""
    return digest_of(serialize_message(msg), typename)


def trace(ros, program: str, *args: str, name: str):
    """`program` under `lockstep trace --` (LD_PRELOAD of the interceptor, LOCKSTEP_INTERCEPT=record)."""
    return ros.start("lockstep", "trace", "--", program, *args, name=name)


def subscribe(ros, msg_type, topic: str, qos, raw: bool = False):
    """(received messages, the subscription): to wait until it matched the node's publisher."""
    received: list = []
    return received, ros.node.create_subscription(msg_type, topic, received.append, qos, raw=raw)


def events_of(batches: list) -> list:
    """The events of batches received in order, checked to come without a gap from the first one received."""
    for before, after in zip(batches, batches[1:]):
        assert after.first_index == before.first_index + len(before.events), "a batch was lost"
    return [e for b in batches for e in b.events]


def probe_until(ros, publish, done, what: str, proc, every: float = 1.0) -> int:
    """Call `publish()` now and again every `every` s until `done()`; returns how many times it was called.
    A publisher can match a subscription before that subscription has discovered the publisher (its first
    messages are then lost): a probe answered shows both ways are open."""
    sent = []

    def probe():
        if done():
            return True
        if not sent or time.monotonic() - sent[-1] >= every:
            publish()
            sent.append(time.monotonic())
        return False
    ros.wait_until(probe, WAIT_SECS, what, proc)
    return len(sent)


def latched_topology(ros, node: str, proc):
    """The wiring latched on /lockstep/topology/<node>, read by a subscription made after it was sent."""
    ros.wait_until(lambda: ros.node.count_publishers(f"/lockstep/topology/{node}") >= 1, WAIT_SECS,
                   f"the wiring publisher of {node}", proc)
    late = ros.collect(ModuleTopology, f"/lockstep/topology/{node}", reliable(depth=10, latched=True))
    ros.wait_for_messages(late, 1, timeout=WAIT_SECS, what=f"{node}'s latched wiring")
    return late[-1]


# ----- 1. a plain C program over rcl -----

def build_c_relay(out_dir: Path) -> Path:
    """nodes/c_relay.c compiled with `cc` against the ROS 2 headers and libraries in .ros/venv (librcl pulls
    in the rosidl_generator_py libraries, hence libpython at link time)."""
    compiler = shutil.which("cc")
    venv = REPO_ROOT / ".ros" / "venv"
    missing = [str(p) for p in (venv / "include" / "rcl", venv / "lib" / "librcl.so",
                                venv / "include" / "std_msgs") if not p.exists()]
    if compiler is None or missing:
        pytest.skip(f"cannot build the C node: {'no C compiler `cc` on PATH' if compiler is None else ''}"
                    f"{' missing ' + ', '.join(missing) if missing else ''}")
    python_libdir = os.environ.get("LOCKSTEP_PYTHON_LIBDIR")
    python_lib = os.environ.get("LOCKSTEP_PYTHON_LIB", "").removeprefix("lib").split(".so")[0]
    if not python_libdir or not python_lib:
        pytest.skip("LOCKSTEP_PYTHON_LIBDIR/LOCKSTEP_PYTHON_LIB unset: source scripts/env-local.sh first")
    includes = [f"-I{d}" for d in sorted((venv / "include").iterdir()) if d.is_dir()]
    exe = out_dir / "c_relay"
    command = [compiler, "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(NODES / "c_relay.c"), *includes,
               f"-L{venv / 'lib'}", "-lrcl", "-lrmw", "-lrcutils", "-lrosidl_runtime_c",
               "-lstd_msgs__rosidl_typesupport_c", "-lstd_msgs__rosidl_generator_c", f"-L{python_libdir}",
               "-Wl,--no-as-needed", f"-l{python_lib}", "-Wl,--as-needed", f"-Wl,-rpath,{venv / 'lib'}"]
    built = subprocess.run(command, capture_output=True, text=True, timeout=WAIT_SECS)
    assert built.returncode == 0, f"{' '.join(command)}\n{built.stdout}\n{built.stderr}"
    return exe


def test_a_plain_c_program_over_rcl_gets_a_header_naming_the_message_it_took(ros, tmp_path):
    exe = build_c_relay(tmp_path)
    outputs, out_sub = subscribe(ros, Float64, "/c_out", reliable(), raw=True)
    headers, header_sub = subscribe(ros, DependencyHeader, "/c_out/lockstep_header", reliable())
    relay = trace(ros, str(exe), name="c_relay")
    c_in = ros.publisher(Float64, "/c_in", reliable())
    ros.wait_for_matched(c_in, timeout=WAIT_SECS)
    ros.wait_for_publishers(out_sub, timeout=WAIT_SECS)
    ros.wait_for_publishers(header_sub, timeout=WAIT_SECS)
    values = []  # every value published on /c_in, probes first

    def send(value: float) -> None:
        values.append(value)
        c_in.publish(Float64(data=value))
    probe_until(ros, lambda: send(100.0 + len(values)), lambda: outputs and headers, "a first output and header",
                relay)
    ros.wait_for_acked(c_in, timeout=WAIT_SECS, proc=relay)
    # Then a burst: each output must still name the very message its loop took, not a neighbour.
    burst = [1.5 + 0.25 * i for i in range(20)]
    for value in burst:
        send(value)
    by_digest = {digest(Float64(data=v), "std_msgs/msg/Float64"): v for v in values}
    assert len(by_digest) == len(values)
    burst_out = {digest(Float64(data=3 * v), "std_msgs/msg/Float64") for v in burst}
    ros.wait_until(lambda: burst_out <= {digest_of(raw, "std_msgs/msg/Float64") for raw in outputs}
                   and burst_out <= {h.payload_digest for h in headers}, WAIT_SECS,
                   "the burst's outputs and their headers", relay)

    out_digests = [digest_of(raw, "std_msgs/msg/Float64") for raw in outputs]
    assert [h.payload_digest for h in headers] == out_digests, "one header per output, in order"
    for seq, header in enumerate(headers):
        assert (header.module_name, header.channel_name, header.sequence_num) == ("c_relay", "/c_out", seq)
        assert header.epoch > 0
        assert [i.channel_name for i in header.inputs] == ["/c_in"], header
        taken = header.inputs[0]
        assert (taken.module_name, taken.sequence_num, taken.epoch) == ("", seq, 0), "untraced: arrival count"
        assert taken.payload_digest in by_digest, "the digest of a message rclpy sent"
        produced = Float64(data=by_digest[taken.payload_digest] * 3)
        assert header.payload_digest == digest(produced, "std_msgs/msg/Float64"), "the input is output/3"
    assert [by_digest[h.inputs[0].payload_digest] for h in headers[-len(burst):]] == burst, "in order"

    wiring = latched_topology(ros, "c_relay", relay)
    (component,) = wiring.components
    assert (component.module_name, list(component.reader_channels), list(component.writer_channels),
            component.inferred) == ("c_relay", ["/c_in"], ["/c_out"], True)
    assert relay.stop(timeout=60) == 0, relay.log()
    assert "c_relay: stopped cleanly" in relay.log()


# ----- 2. an unmodified r2r node -----

LIMITS = "joint_limits:\n  j: {max_velocity: 1.0, max_acceleration: 4.0}\n"
COMMANDS = "/forward_position_controller/commands"
TRAJECTORY = "/forward_position_controller/joint_trajectory"
ALARM = "/lockstep_mock_joints/alarm"


def positions(raw: bytes) -> list:
    """The positions of a /joint_states message as DDS delivered it (read raw: rclpy's serialize_message of a
    JointState ends in bytes rosbags refuses)."""
    return [float(p) for p in TYPESTORE.deserialize_cdr(raw, "sensor_msgs/msg/JointState").position]


def test_an_unmodified_r2r_node_gets_headers_wiring_and_an_event_log(ros, tmp_path):
    """lockstep_mock_joints (r2r, built on lockstep_ros, not on lockstep_trace): one joint `j`; every command
    below is a step of 1 rad in one 2 ms period, so each one raises an overspeed alarm from the command's
    callback; /joint_states comes from a tokio interval.

    What the inference gives for r2r: the node runs on one thread (a current-thread tokio runtime):
    `spin_once` makes the rcl_wait and takes at most one message per ready subscription (pushed into the
    subscription's stream); the stream's consumer (the for_each that may publish the alarm) and the
    /joint_states interval run after spin_once returns, on the same thread, either before the next spin's
    rcl_wait (the take is then the thread's trigger) or after it (no trigger: the latest of every subscription).
    With commands sent one at a time, both name the same message, so asserted exactly:
    - alarm k names command k (/commands is the only subscription that ever took a message);
    - each /joint_states names the last command the node took before publishing it (event log order), or
      nothing before the first. Its positions may still be the previous command's: the interval can run in
      the spin's turn before the stream's consumer applied the command; asserted as such."""
    limits = tmp_path / "limits.yaml"
    limits.write_text(LIMITS)
    batches, events_sub = subscribe(ros, NodeEvents, "/lockstep/events/lockstep_mock_joints", reliable(1000))
    alarms, alarm_sub = subscribe(ros, String, ALARM, reliable())
    alarm_headers, alarm_header_sub = subscribe(ros, DependencyHeader, f"{ALARM}/lockstep_header", reliable())
    states, state_sub = subscribe(ros, JointState, "/joint_states", reliable(1000), raw=True)
    state_headers, state_header_sub = subscribe(ros, DependencyHeader, "/joint_states/lockstep_header",
                                                reliable(1000))
    mock = trace(ros, str(binary("lockstep_mock_joints")), "--ros-args", "-p", "joints:=j",
                 "-p", f"limits_file:={limits}", "-p", "state_period_s:=0.05", name="mock_joints")
    commands = ros.publisher(Float64MultiArray, COMMANDS, reliable())
    ros.wait_for_matched(commands, timeout=WAIT_SECS)
    for sub in (events_sub, alarm_sub, alarm_header_sub, state_sub, state_header_sub):
        ros.wait_for_publishers(sub, timeout=WAIT_SECS)
    ros.wait_until(lambda: states and state_headers, WAIT_SECS, "a /joint_states and its header", mock)
    assert list(state_headers[0].inputs) == [], "published before the node took anything"
    # Probes: the joint where it is (no alarm), until the event log shows one taken.
    probe = Float64MultiArray(data=[0.0])
    probe_digest = digest(probe, "std_msgs/msg/Float64MultiArray")
    probes = probe_until(ros, lambda: commands.publish(probe), lambda: any(
        e.kind == NodeEvent.TAKE and e.payload_digest == probe_digest for e in events_of(batches)),
        "a probe command in the event log", mock)
    ros.wait_for_acked(commands, timeout=WAIT_SECS, proc=mock)
    sent = [Float64MultiArray(data=[float(k)]) for k in range(1, 9)]
    for k, command in enumerate(sent, start=1):
        commands.publish(command)
        ros.wait_until(lambda: len(alarms) >= k and any(positions(raw) == [float(k)] for raw in states),
                       WAIT_SECS, f"alarm {k} and a /joint_states at command {k}", mock)
    ros.wait_for_messages(alarm_headers, len(sent), timeout=WAIT_SECS, what="alarm headers")
    command_digests = [digest(c, "std_msgs/msg/Float64MultiArray") for c in sent]
    value_of = {probe_digest: 0.0, **{d: c.data[0] for d, c in zip(command_digests, sent)}}
    assert len(value_of) == len(sent) + 1

    # The alarms: published from the command's callback, each naming exactly the command that raised it;
    # arrival counts go on from the probes taken.
    assert [m.data.split(":")[0] for m in alarms] == [f"overspeed alarm {k}" for k in range(1, 9)]
    first_arrival = alarm_headers[0].inputs[0].sequence_num if alarm_headers[0].inputs else -1
    assert 1 <= first_arrival <= probes, (first_arrival, probes)
    for k, (header, alarm) in enumerate(zip(alarm_headers, alarms)):
        assert (header.module_name, header.channel_name, header.sequence_num) == \
            ("lockstep_mock_joints", ALARM, k)
        assert header.payload_digest == digest(alarm, "std_msgs/msg/String")
        assert [(i.channel_name, i.module_name, i.sequence_num, i.epoch, i.payload_digest)
                for i in header.inputs] == [(COMMANDS, "", first_arrival + k, 0, command_digests[k])], header

    # The first /joint_states at each command: published after the node applied it, before the next was sent.
    first_at = {k: next(digest_of(raw, "sensor_msgs/msg/JointState") for raw in states
                        if positions(raw) == [float(k)]) for k in range(1, len(sent) + 1)}

    def logged() -> bool:
        events = events_of(batches)
        state_published = {e.payload_digest for e in events if e.kind == NodeEvent.PUBLISH
                           and e.name == "/joint_states"}
        return (sum(e.kind == NodeEvent.PUBLISH and e.name == ALARM for e in events) >= len(sent)
                and set(first_at.values()) <= state_published
                and set(first_at.values()) <= {h.payload_digest for h in state_headers})
    ros.wait_until(logged, WAIT_SECS, "every alarm, and those /joint_states, logged with headers", mock)
    # The event log: every command taken once in order, with rclpy's publication sequence numbers (after the
    # probes'), every alarm published as its header says.
    events = events_of(batches)
    takes = [e for e in events if e.kind == NodeEvent.TAKE and e.name == COMMANDS]
    assert [e.payload_digest for e in takes if e.payload_digest != probe_digest] == command_digests
    assert [e.sequence_number for e in takes[-len(sent):]] == list(range(probes + 1, probes + len(sent) + 1))
    assert all(len(e.gid) == 16 and not e.infrastructure for e in takes)
    assert len({e.thread for e in takes}) == 1, "r2r takes on the runtime's one thread"
    published = [e for e in events if e.kind == NodeEvent.PUBLISH and e.name == ALARM]
    assert [(e.sequence_number, e.payload_digest) for e in published] == \
        [(h.sequence_num, h.payload_digest) for h in alarm_headers]
    assert not any(e.kind == NodeEvent.TAKE and e.name == TRAJECTORY for e in events)
    assert not any(b.warnings for b in batches), batches[-1].warnings

    # /joint_states: each header pairs with its message and names the last command the node took before it
    # was published, as the event log orders them (checked from the first take in the log we received).
    states_by_digest = {digest_of(raw, "sensor_msgs/msg/JointState"): positions(raw) for raw in states}
    headers_by_seq = {h.sequence_num: h for h in state_headers}
    taken, checked = [], {}
    for e in events:
        if e.kind == NodeEvent.TAKE and e.name == COMMANDS:
            taken.append(e.payload_digest)
        elif e.kind == NodeEvent.PUBLISH and e.name == "/joint_states" and taken \
                and e.sequence_number in headers_by_seq:
            header = headers_by_seq[e.sequence_number]
            assert (header.module_name, header.payload_digest) == ("lockstep_mock_joints", e.payload_digest)
            assert [(i.channel_name, i.module_name, i.payload_digest) for i in header.inputs] \
                == [(COMMANDS, "", taken[-1])], (e.sequence_number, header)
            state = states_by_digest.get(header.payload_digest)
            if state is not None:
                assert state in ([value_of[d]] for d in taken[-2:]), (state, [value_of[d] for d in taken])
            checked[header.payload_digest] = value_of[taken[-1]]
    # The first /joint_states at command k was published after the take of command k, before command k+1.
    assert {k: checked.get(d) for k, d in first_at.items()} == {k: float(k) for k in first_at}

    wiring = latched_topology(ros, "lockstep_mock_joints", mock)
    (component,) = wiring.components
    assert component.module_name == "lockstep_mock_joints" and component.inferred
    assert sorted(component.reader_channels) == [COMMANDS, TRAJECTORY]
    assert sorted(component.writer_channels) == ["/joint_states", ALARM]
    assert mock.stop(timeout=60) == 0, mock.log()
