"""Three unmodified rclpy nodes (plain create_subscription / create_publisher / create_timer, no Lockstep code)
recorded under `lockstep launch --trace` with `lockstep bag record -a`: every output carries a dependency
header naming the exact inputs its callback used, the wiring is the nodes' real wiring marked inferred, the
event logs hold every take and publish, and `lockstep bag info` lists the nodes as traced by interception.

Every wait is on something observed (graph, recorder status); the only sleep paces the publishing loop."""

import subprocess
import time

from geometry_msgs.msg import Vector3Stamped
from std_msgs.msg import Float64

from lockstep_interfaces.msg import NodeEvent, RecorderStatus
from lockstep_testing.harness import binary, reliable
from traced import NODES, Recording, digest_of

WAIT_SECS = 120
NODE_NAMES = ("filter", "fusion", "controller")
OUTPUTS = {"filter": "/filtered", "fusion": "/fused", "controller": "/cmd"}
GAIN = 0.5


def written(status: list, topic: str) -> int:
    if not status:
        return 0
    return next((t.messages for t in status[-1].topics if t.topic == topic), 0)


def record_pipeline(ros, bag, messages: int = 30):
    """The pipeline under `lockstep launch --trace`, recorded into `bag`; rclpy publishes /raw and /odom."""
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    recorder = ros.start("lockstep", "bag", "record", "-a", "-o", str(bag), name="record")
    launch = ros.start("lockstep", "launch", str(NODES / "pipeline.launch.xml"), "--trace", f"gain:={GAIN}",
                       name="launch")
    raw = ros.publisher(Float64, "/raw", reliable())
    odom = ros.publisher(Float64, "/odom", reliable())
    sidecars = [f"{topic}/lockstep_header" for topic in OUTPUTS.values()]
    watched = ["/raw", "/odom", *OUTPUTS.values(), *sidecars, *(f"/lockstep/events/{n}" for n in NODE_NAMES)]
    ros.wait_until(lambda: all(ros.node.count_subscribers(t) >= 1 for t in watched)
                   and all(ros.node.count_publishers(s) >= 1 for s in sidecars),
                   WAIT_SECS, "the recorder subscribed to every data, header and event topic", launch)
    ros.wait_for_matched(raw, count=2, timeout=WAIT_SECS)  # filter and the recorder
    ros.wait_for_matched(odom, count=2, timeout=WAIT_SECS)  # fusion and the recorder
    for i in range(messages):
        if i % 3 == 0:
            odom.publish(Float64(data=100.0 + i))
        raw.publish(Float64(data=float(i)))
        time.sleep(0.05)  # paces the sensors; the controller's timer samples /fused meanwhile
    ros.wait_until(lambda: written(status, "/fused/lockstep_header") >= messages, WAIT_SECS,
                   f"{messages} /fused headers recorded", recorder)
    ros.wait_until(lambda: written(status, "/cmd/lockstep_header") >= 1, WAIT_SECS, "a /cmd header", recorder)
    assert launch.stop(timeout=60) == 0, launch.log()  # the nodes send their last events as they stop
    assert recorder.stop(timeout=60) == 0, recorder.log()
    return launch.log()


def check_outputs_name_their_inputs(rec: Recording, messages: int) -> None:
    raw = rec.by_digest("/raw")
    odom = rec.by_digest("/odom")
    filtered = rec.by_digest("/filtered")
    fused = rec.by_digest("/fused")
    filtered_headers = rec.header_by_digest("/filtered")
    assert len(raw) == messages and len(filtered) == messages, (len(raw), len(filtered))
    # filter: one input, the /raw message its callback took; value = raw * gain.
    for seq, header in enumerate(rec.headers["/filtered"]):
        assert (header.module_name, header.channel_name, header.sequence_num) == ("filter", "/filtered", seq)
        assert [i.channel_name for i in header.inputs] == ["/raw"], header
        taken = header.inputs[0]
        assert (taken.module_name, taken.sequence_num) == ("", seq), "untraced publisher: arrival count"
        assert filtered[header.payload_digest].data == raw[taken.payload_digest].data * GAIN
    # fusion: the /filtered message it took (named by filter's own header), then the latest /odom (state).
    assert len(rec.headers["/fused"]) == messages
    for header in rec.headers["/fused"]:
        assert [i.channel_name for i in header.inputs] == ["/filtered", "/odom"], header
        upstream, state = header.inputs
        named = filtered_headers[upstream.payload_digest]
        assert (upstream.module_name, upstream.sequence_num, upstream.epoch) == \
            ("filter", named.sequence_num, named.epoch), "the input is filter's output, with its header"
        assert [s.channel_name for s in upstream.sources] == ["/raw"], "second level: what filter used"
        assert state.module_name == ""
        expected = filtered[upstream.payload_digest].data + odom[state.payload_digest].data
        assert fused[header.payload_digest].data == expected, header
    # controller: a timer callback; its output names the latest /fused, whose value it doubles.
    cmd = rec.by_digest("/cmd")
    fused_headers = rec.header_by_digest("/fused")
    assert rec.headers["/cmd"], "the timer published"
    for header in rec.headers["/cmd"]:
        assert [i.channel_name for i in header.inputs] == ["/fused"], header
        source = header.inputs[0]
        assert (source.module_name, source.epoch) == ("fusion", fused_headers[source.payload_digest].epoch)
        assert cmd[header.payload_digest].vector.x == 2 * fused[source.payload_digest].data


def check_event_logs(rec: Recording, messages: int) -> None:
    raw_digests = [digest_of(r, t) for _, r, t in rec.data["/raw"]]
    events = rec.node_events("filter")
    takes = [e for e in events if e.kind == NodeEvent.TAKE and e.name == "/raw"]
    publishes = [e for e in events if e.kind == NodeEvent.PUBLISH and e.name == "/filtered"]
    assert [e.payload_digest for e in takes] == raw_digests, "every /raw message taken, in order"
    assert [e.sequence_number for e in takes] == list(range(1, messages + 1)), "publication sequence numbers"
    assert [e.sequence_number for e in publishes] == list(range(messages))
    assert [e.payload_digest for e in publishes] == [h.payload_digest for h in rec.headers["/filtered"]]
    assert all(e.infrastructure for e in events if e.name in ("/rosout", "/parameter_events"))
    timers = [e for e in rec.node_events("controller") if e.kind == NodeEvent.TIMER]
    assert len(timers) >= len(rec.headers["/cmd"]), "one timer event at least per output"
    for node in NODE_NAMES:
        assert all(not b.warnings for b in rec.events[node]), (node, rec.events[node][-1].warnings)


def test_three_unmodified_rclpy_nodes_record_with_exact_headers(ros, tmp_path):
    bag = tmp_path / "pipeline"
    messages = 30
    record_pipeline(ros, bag, messages)
    rec = Recording(bag)
    check_outputs_name_their_inputs(rec, messages)
    check_event_logs(rec, messages)
    wiring = {t.removeprefix("/lockstep/topology/"): m[-1].components[0] for t, m in rec.topologies.items()}
    assert sorted(wiring) == sorted(NODE_NAMES), wiring
    assert all(c.inferred for c in wiring.values())
    assert (wiring["fusion"].reader_channels, wiring["fusion"].writer_channels) == (["/filtered", "/odom"], ["/fused"])
    assert (wiring["controller"].reader_channels, wiring["controller"].writer_channels) == (["/fused"], ["/cmd"])
    info = subprocess.run([str(binary("lockstep")), "bag", "info", str(bag)], capture_output=True, text=True,
                          timeout=WAIT_SECS)
    assert info.returncode == 0, info.stderr
    section = info.stdout[info.stdout.index("traced by interception"):]
    for node in NODE_NAMES:
        assert node in section, info.stdout
