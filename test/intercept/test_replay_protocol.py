"""The interceptor in replay mode, driven from rclpy as `lockstep replay` drives it: an unmodified node under
`lockstep trace --replay` runs only the events granted on `<node>/lockstep/grant`, one at a time, and answers
on `<node>/lockstep/done` with what each callback published. Nothing the node receives over DDS meanwhile
reaches its callbacks; its timers fire only when granted, and `now()` in a callback returns the recorded reads.
"""

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Vector3Stamped
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64

from lockstep_interfaces.msg import EventDone, EventGrant, NodeEvent
from lockstep_testing.harness import reliable
from traced import NODES

WAIT_SECS = 60


def stamp(ns: int) -> Time:
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class Granter:
    """The replay's side of one node's grant protocol."""

    def __init__(self, ros, node: str, proc):
        self.ros, self.proc = ros, proc
        self.grants = ros.publisher(EventGrant, f"/{node}/lockstep/grant", reliable())
        self.answers = ros.collect(EventDone, f"/{node}/lockstep/done", reliable(latched=True))
        ros.wait_for_matched(self.grants, timeout=WAIT_SECS)
        self.next_id = 1

    def grant(self, kind, name="", ns=1_000_000_000, data=b"", sequence_number=0, clock_reads=()):
        grant_id = self.next_id
        self.next_id += 1
        self.grants.publish(EventGrant(id=grant_id, kind=kind, stamp=stamp(ns), name=name,
                                       sequence_number=sequence_number, data=list(data),
                                       clock_reads=[stamp(t) for t in clock_reads]))
        self.ros.wait_until(lambda: any(d.id == grant_id for d in self.answers), WAIT_SECS,
                            f"the answer to grant {grant_id}", self.proc)
        return next(d for d in self.answers if d.id == grant_id)


def values(done: EventDone, topic: str, msg_type=Float64) -> list:
    return [deserialize_message(bytes(o.data), msg_type) for o in done.outputs if o.name == topic]


def test_a_replayed_node_runs_only_what_is_granted(ros):
    proc = ros.start("lockstep", "trace", "--replay", "--", "python3", str(NODES / "filter_node.py"),
                     "--ros-args", "-p", "gain:=0.5", name="filter")
    granter = Granter(ros, "filter", proc)
    live = ros.publisher(Float64, "/raw", reliable())
    seen = ros.collect(Float64, "/filtered", reliable())
    ros.wait_for_matched(live, timeout=WAIT_SECS)
    for value in (10.0, 11.0, 12.0):
        live.publish(Float64(data=value))  # over DDS: never taken in replay mode

    done = granter.grant(NodeEvent.TAKE, "/raw", data=serialize_message(Float64(data=4.0)))
    assert done.success, done.message
    assert [m.data for m in values(done, "/filtered")] == [2.0], done
    ros.wait_for_messages(seen, 1, WAIT_SECS, "the replayed output, still published")
    done = granter.grant(NodeEvent.TAKE, "/raw", data=serialize_message(Float64(data=-3.0)))
    assert [m.data for m in values(done, "/filtered")] == [-1.5], done
    assert sorted(m.data for m in seen) == [-1.5, 2.0], "what arrived over DDS never reached the callback"

    refused = granter.grant(NodeEvent.TAKE, "/nothing", data=serialize_message(Float64(data=1.0)))
    assert not refused.success and "/nothing" in refused.message, refused
    refused = granter.grant(NodeEvent.TIMER, sequence_number=7)
    assert not refused.success and "timer number 7" in refused.message, refused
    done = granter.grant(NodeEvent.TAKE, "/raw", data=serialize_message(Float64(data=1.0)))
    assert done.success and [m.data for m in values(done, "/filtered")] == [0.5], "refusals cost nothing"
    assert proc.stop(timeout=30) == 0, proc.log()


def test_timers_fire_when_granted_and_now_returns_the_recorded_reads(ros):
    proc = ros.start("lockstep", "trace", "--replay", "--", "python3", str(NODES / "controller_node.py"),
                     "--ros-args", "-p", "period_s:=0.01", name="controller")
    granter = Granter(ros, "controller", proc)
    base = 1_700_000_000_000_000_000
    done = granter.grant(NodeEvent.TAKE, "/fused", ns=base, data=serialize_message(Float64(data=21.0)))
    assert done.success and done.outputs == [], "a take into the node's state publishes nothing"
    for k in range(3):
        fired = base + (k + 1) * 10_000_000
        read = fired + 123_456
        done = granter.grant(NodeEvent.TIMER, ns=fired, sequence_number=0, clock_reads=[read])
        assert done.success, done.message
        [cmd] = values(done, "/cmd", Vector3Stamped)
        assert cmd.vector.x == 42.0
        assert (cmd.header.stamp.sec, cmd.header.stamp.nanosec) == (read // 10**9, read % 10**9), cmd.header
    assert proc.stop(timeout=30) == 0, proc.log()
