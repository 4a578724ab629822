"""The pure parts of the Python library `lockstep_trace`, without DDS: header pairing, the tracer's numbering
and back-trace, time conversion, and digests of types the library learns from the ament index."""

import os

import pytest
from builtin_interfaces.msg import Time
from lockstep_interfaces.msg import DependencyHeader
from rclpy.serialization import serialize_message

from lockstep_trace import (HeaderMatcher, Tracer, UnknownType, canonicalize, external_header, message_digest,
                            module_name, ns_to_time, time_to_ns)


def header(seq: int, digest: int) -> DependencyHeader:
    return DependencyHeader(module_name="m", channel_name="/c", sequence_num=seq, payload_digest=digest)


def test_the_matcher_pairs_by_digest_in_either_order_and_ignores_redeliveries():
    m = HeaderMatcher(capacity=2)
    assert m.push_data(10, "a") is None
    assert m.push_header(header(0, 10)) == "a"           # data first
    assert m.push_header(header(1, 11)) is None
    assert m.push_data(11, "b").sequence_num == 1         # header first
    assert m.push_header(header(1, 11)) is None           # redelivered: ignored
    assert m.duplicate_headers == 1
    for digest in (20, 21, 22):                           # capacity 2: the oldest waiting data goes
        m.push_data(digest, digest)
    assert m.unmatched_data == 1 and m.push_header(header(5, 20)) is None
    assert m.push_header(header(6, 22)) == 22
    assert m.give_up(21) and not m.give_up(21)


def test_the_tracer_numbers_per_channel_and_keeps_two_levels():
    sensor = external_header("/scan", 4, 1_000, 77)
    fusion = Tracer("fusion", epoch=9).finish("/obstacles", b"x", [sensor], 2_000, 50)
    t = Tracer("robot1/controller", epoch=3)
    first = t.finish("/cmd_vel", b"a", [fusion], 5_000, 2**40)
    second = t.finish("/cmd_vel", b"b", [], 6_000, 1)
    other = t.finish("/status", b"c", [], 7_000, 1)
    assert (first.sequence_num, second.sequence_num, other.sequence_num) == (0, 1, 0)
    assert first.process_time_ns == 2**32 - 1                      # saturates like the Rust library
    (used,) = first.inputs
    assert (used.module_name, used.sequence_num, used.epoch) == ("fusion", 0, 9)
    assert [(s.module_name, s.channel_name, s.sequence_num, s.payload_digest) for s in used.sources] == \
        [("", "/scan", 4, 77)]
    assert first.payload_digest != second.payload_digest


def test_time_conversion_keeps_nanosec_positive_and_saturates():
    assert ns_to_time(-1) == Time(sec=-1, nanosec=999_999_999)
    assert time_to_ns(ns_to_time(1_795_000_000_123_456_789)) == 1_795_000_000_123_456_789
    assert ns_to_time(2**62) == Time(sec=2**31 - 1, nanosec=999_999_999)
    assert ns_to_time(-(2**62)) == Time(sec=-(2**31), nanosec=0)


def test_module_names_carry_the_namespace():
    assert module_name("/", "motion_controller") == "motion_controller"
    assert module_name("/robot1/", "motion_controller") == "robot1/motion_controller"


def test_types_outside_the_jazzy_set_are_learned_from_their_installed_definition(monkeypatch):
    # lockstep_test_msgs is not in rosbags' Jazzy type store: its .msg files come from the ament index, where
    # a sourced workspace puts it (here added by hand: scripts/env.sh keeps it off AMENT_PREFIX_PATH).
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.environ["LOCKSTEP_TEST_MSGS_PREFIX"] + ":" + os.environ["AMENT_PREFIX_PATH"])
    msgs = pytest.importorskip("lockstep_test_msgs.msg")
    names = [n for n in dir(msgs) if not n.startswith("_") and isinstance(getattr(msgs, n), type)]
    assert names, "lockstep_test_msgs has no message"
    for name in names:
        assert isinstance(message_digest(getattr(msgs, name)()), int), name


def test_unknown_types_are_refused_by_name():
    with pytest.raises(UnknownType, match="no_such_pkg/msg/Thing: package no_such_pkg is not in the ament index"):
        canonicalize(b"\x00\x01\x00\x00", "no_such_pkg/msg/Thing")
    with pytest.raises(UnknownType, match="not a message type name"):
        canonicalize(b"", "Thing")


def test_bytes_after_the_last_field_are_not_part_of_the_message():
    # rmw reports std_msgs/UInt8 as 8 bytes (its size estimate) but writes 5; an empty float64[] at the end adds
    # 4 unwritten bytes. The canonical form ends with the last field, as the Rust library's does.
    from std_msgs.msg import Float64MultiArray, UInt8

    from lockstep_trace import canonical_cdr
    assert len(serialize_message(UInt8(data=1))) == 8
    assert canonical_cdr(UInt8(data=1)) == bytes.fromhex("0001000001")
    assert canonical_cdr(Float64MultiArray()) == bytes.fromhex("00010000") + bytes(12)
    assert canonical_cdr(Float64MultiArray(data=[0.0])) == bytes.fromhex("00010000") + bytes(8) + b"\x01" + bytes(3 + 4 + 8)


# A node whose timer callback takes a while; SIGINT arrives in the middle of it. The callback must finish (an
# output is never cut from its header) and spin must return the signal instead of raising.
_SIGINT_MID_CALLBACK = r"""
import os, signal, sys, threading, time
import rclpy
from rclpy.node import Node
from lockstep_trace import init_for_spin, spin

init_for_spin(sys.argv)
node = Node("slow_callback")
events = []

def callback():
    events.append("started")
    threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:  # pure Python: the interpreter checks for signals all along
        pass
    events.append("finished")

node.create_timer(0.01, callback)
stopped_by = spin(node)
print(events, stopped_by == signal.SIGINT)
"""


def test_spin_lets_the_callback_in_progress_finish_on_sigint():
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", _SIGINT_MID_CALLBACK], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['started', 'finished'] True", run.stdout + run.stderr
