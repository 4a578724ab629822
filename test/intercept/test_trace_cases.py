"""The interceptor on the cases beside a plain pipeline, each a real process over DDS driven from rclpy:
service and action servers (requests and responses in the event log), a multi-threaded executor (warned,
never a crash), preloaded but not enabled (changes nothing), and a mixed system (an instrumented module keeps
its own headers; the unmodified node downstream names them)."""

import hashlib
import sys

from rclpy.serialization import serialize_message
from sensor_msgs.msg import Range
from std_msgs.msg import Bool, Float64, Int32
from std_srvs.srv import SetBool

from lockstep_interfaces.action import Countdown
from lockstep_interfaces.msg import DependencyHeader, ModuleTopology, NodeEvent, NodeEvents
from lockstep_testing.harness import binary, reliable
from traced import NODES, digest_of

WAIT_SECS = 120


def trace(ros, script: str, *args: str, name: str, mode: str | None = "--"):
    """Start a node script under `lockstep trace`, or (mode None) preloaded without LOCKSTEP_INTERCEPT."""
    if mode is None:
        env = {"LD_PRELOAD": str(binary("liblockstep_intercept_preload.so"))}
        return ros.start(sys.executable, str(NODES / script), *args, name=name, env=env)
    return ros.start("lockstep", "trace", mode, sys.executable, str(NODES / script), *args, name=name)


def events_of(batches: list) -> list:
    return [e for b in batches for e in b.events]


def digest(msg, typename: str) -> int:
    return digest_of(serialize_message(msg), typename)


def test_service_calls_are_in_the_event_log_and_the_served_output_has_a_header(ros):
    batches = ros.collect(NodeEvents, "/lockstep/events/switch", reliable())
    headers = ros.collect(DependencyHeader, "/switched/lockstep_header", reliable())
    switched = ros.collect(Bool, "/switched", reliable())
    server = trace(ros, "switch_server.py", name="switch")
    for value in (True, False):
        response = ros.call(SetBool, "/set_switch", SetBool.Request(data=value), timeout=WAIT_SECS,
                            retry_every=15.0)
        assert response.message == ("on" if value else "off")
    ros.wait_for_messages(switched, 2, timeout=WAIT_SECS)
    ros.wait_until(lambda: sum(e.kind == NodeEvent.RESPONSE_SENT for e in events_of(batches)) >= 2, WAIT_SECS,
                   "two responses in the event log", server)
    calls = [e for e in events_of(batches) if e.name == "/set_switch"]
    taken = [e for e in calls if e.kind == NodeEvent.REQUEST_TAKEN]
    sent = [e for e in calls if e.kind == NodeEvent.RESPONSE_SENT]
    # SetBool's request is one bool: its canonical CDR is the encapsulation header and that byte.
    requests = [int.from_bytes(hashlib.sha256(bytes([0, 1, 0, 0, v])).digest()[:8], "little") for v in (1, 0)]
    assert [e.payload_digest for e in taken[-2:]] == requests, "the requests as the client sent them"
    assert [e.sequence_number for e in sent] == [e.sequence_number for e in taken], "each answered"
    assert all(len(e.gid) == 16 for e in taken), "the client's GID"
    ros.wait_for_messages(headers, 2, timeout=WAIT_SECS)
    assert [h.payload_digest for h in headers[-2:]] == [digest(m, "std_msgs/msg/Bool") for m in switched[-2:]]
    parameter_services = [e for e in events_of(batches) if e.name.endswith("/get_parameters")]
    assert all(e.infrastructure for e in parameter_services)


def test_an_action_servers_goals_feedback_and_results_are_in_the_event_log(ros):
    batches = ros.collect(NodeEvents, "/lockstep/events/countdown_server", reliable())
    server = trace(ros, "countdown_server.py", name="countdown")
    client = ros.action_client(Countdown, "/countdown", timeout=WAIT_SECS)
    handle = ros.send_goal(client, Countdown.Goal(start=3, step_period_secs=0.01), timeout=WAIT_SECS)
    assert handle.accepted
    assert ros.result(handle, timeout=WAIT_SECS).result.steps_done == 3
    action = "/countdown/_action/"
    ros.wait_until(lambda: any(e.kind == NodeEvent.RESPONSE_SENT and e.name == action + "get_result"
                               for e in events_of(batches)), WAIT_SECS, "the result sent", server)
    seen = {(e.kind, e.name.removeprefix(action)) for e in events_of(batches) if e.name.startswith(action)}
    for kind, name in [(NodeEvent.REQUEST_TAKEN, "send_goal"), (NodeEvent.RESPONSE_SENT, "send_goal"),
                       (NodeEvent.REQUEST_TAKEN, "get_result"), (NodeEvent.RESPONSE_SENT, "get_result"),
                       (NodeEvent.PUBLISH, "feedback"), (NodeEvent.PUBLISH, "status")]:
        assert (kind, name) in seen, (kind, name, sorted(seen))
    feedback = [e for e in events_of(batches) if e.name == action + "feedback"]
    assert len(feedback) == 3


def test_a_multi_threaded_executor_is_warned_about_and_nothing_crashes(ros):
    batches = ros.collect(NodeEvents, "/lockstep/events/echo", reliable())
    echoed = ros.collect(Float64, "/echo", reliable(depth=1000))
    node = trace(ros, "multithreaded_node.py", name="echo")
    raw = ros.publisher(Float64, "/raw", reliable(depth=1000))
    raw2 = ros.publisher(Float64, "/raw2", reliable(depth=1000))
    ros.wait_for_matched(raw, timeout=WAIT_SECS)
    ros.wait_for_matched(raw2, timeout=WAIT_SECS)
    sent = 0
    # Bursts on two topics until the executor's pool ran callbacks on two threads (it takes turns).
    ros.wait_until(lambda: (batches and batches[-1].warnings) or burst(raw, raw2, sent), WAIT_SECS,
                   "the multi-threaded warning", node)
    assert any("several threads" in w for w in batches[-1].warnings), batches[-1].warnings
    assert node.alive()
    ros.wait_until(lambda: len(echoed) > 0, WAIT_SECS, "echoes", node)


def burst(a, b, _sent) -> bool:
    for i in range(50):
        a.publish(Float64(data=float(i)))
        b.publish(Float64(data=float(-i)))
    return False


def test_preloaded_but_not_enabled_changes_nothing(ros):
    received, subscription = ros.subscribe(Float64, "/filtered", reliable())
    node = trace(ros, "filter_node.py", name="filter", mode=None)
    raw = ros.publisher(Float64, "/raw", reliable())
    ros.wait_for_matched(raw, timeout=WAIT_SECS)
    ros.wait_for_publishers(subscription, timeout=WAIT_SECS)
    # This subscription may see the node's publisher before that publisher sees it: an output sent meanwhile is
    # not sent here. So negative probes go out until one comes back, then the numbered inputs (probes left
    # over are told apart by their sign).
    ros.wait_until(lambda: received or raw.publish(Float64(data=-2.0)), WAIT_SECS, "a probe through the node")
    outputs = lambda: [m.data for m, _ in received if m.data >= 0]  # noqa: E731
    for i in range(20):
        raw.publish(Float64(data=float(i)))
        # One at a time: the node's queue holds 10.
        ros.wait_until(lambda: len(outputs()) >= i + 1, WAIT_SECS, f"output {i}", node)
    assert outputs() == [0.5 * i for i in range(20)]
    names = {name for name, _ in ros.node.get_topic_names_and_types()}
    assert not any("lockstep" in n for n in names), sorted(names)
    assert "[lockstep trace]" not in node.log()


def test_an_instrumented_module_keeps_its_headers_and_the_unmodified_node_downstream_names_them(ros):
    obstacle_headers = ros.collect(DependencyHeader, "/obstacles/lockstep_header", reliable())
    count_headers = ros.collect(DependencyHeader, "/obstacle_count/lockstep_header", reliable())
    counts = ros.collect(Int32, "/obstacle_count", reliable())
    m1 = ros.start("lockstep", "trace", "--", str(binary("lockstep_module_m1")), name="m1")
    counter = trace(ros, "counter_node.py", name="counter")
    front = ros.publisher(Range, "/scan_front", reliable())
    rear = ros.publisher(Range, "/scan_rear", reliable())
    ros.wait_for_matched(front, timeout=WAIT_SECS)
    ros.wait_for_matched(rear, timeout=WAIT_SECS)
    ros.wait_until(lambda: ros.node.count_subscribers("/obstacles") >= 1
                   and ros.node.count_publishers("/obstacle_count/lockstep_header") >= 1, WAIT_SECS,
                   "the counter following /obstacles and its header publisher", counter)
    pair = iter(range(10_000))

    def send_pair() -> None:
        i = next(pair)
        front.publish(Range(range=0.5 + 0.01 * i, min_range=0.1, max_range=5.0, field_of_view=0.5))
        rear.publish(Range(range=2.0 + 0.01 * i, min_range=0.1, max_range=5.0, field_of_view=0.5))

    # Pairs until one went through both nodes (DDS matching lags the graph), then ten, one at a time: the
    # module fuses when both sensors have a new reading.
    ros.wait_until(lambda: counts or send_pair(), WAIT_SECS, "a first count through m1 and the counter", counter)
    for _ in range(10):
        before = len(counts)
        send_pair()
        ros.wait_for_messages(counts, before + 1, timeout=WAIT_SECS)
    ros.wait_for_messages(count_headers, 10, timeout=WAIT_SECS)
    by_digest = {}
    for h in obstacle_headers:
        assert h.payload_digest not in by_digest, "one header per output: the module's own, never a second"
        by_digest[h.payload_digest] = h
    assert {h.module_name for h in obstacle_headers} == {"obstacle_fusion"}
    named_ones = [h for h in count_headers if h.inputs[0].payload_digest in by_digest]
    assert len(named_ones) >= 10, "every count after the first names an /obstacles header this test saw"
    for header in named_ones:
        (source,) = header.inputs
        named = by_digest[source.payload_digest]
        assert (source.module_name, source.sequence_num, source.epoch) == \
            ("obstacle_fusion", named.sequence_num, named.epoch)
        assert sorted(s.channel_name for s in source.sources) == ["/scan_front", "/scan_rear"]
    topology = "/lockstep/topology/obstacle_fusion"
    assert ros.node.count_publishers(topology) == 1, "the interceptor's own wiring publisher is gone"
    assert ros.node.count_publishers("/obstacles/lockstep_header") == 1, "and so is its header publisher"
    late = ros.collect(ModuleTopology, topology, reliable(depth=10, latched=True))
    ros.wait_for_messages(late, 1, timeout=WAIT_SECS)
    assert [c.inferred for m in late for c in m.components] == [False], "only the module's own wiring is latched"
    assert m1.alive()
