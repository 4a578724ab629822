"""Lock-step replay of unmodified service servers and clients: a server node replayed takes the recorded
requests again (from `<service>/lockstep_request`, which the interceptor records), and a client node whose
server is not running gets the recorded responses (from `<service>/lockstep_response`)."""

import sys

from rosbags.rosbag2 import Reader
from std_msgs.msg import String
from std_srvs.srv import SetBool

from lockstep_interfaces.msg import RecorderStatus
from lockstep_testing.harness import reliable
from lockstep_testing.recordings import decode, typestore_from_bag
from test_replay_unmodified import replay
from traced import NODES

WAIT_SECS = 120


def trace(ros, script: str, *args: str, name: str, replaying: bool = False):
    return ros.start("lockstep", "trace", *(["--replay"] if replaying else []), "--", sys.executable,
                     str(NODES / script), *args, name=name)


def written(status: list, topic: str) -> int:
    return next((t.messages for t in status[-1].topics if t.topic == topic), 0) if status else 0


def record(ros, bag, calls: int = 6):
    """The switch server and the caller, both traced, and `calls` more requests from rclpy to the server."""
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    recorder = ros.start("lockstep", "bag", "record", "-a", "-o", str(bag), name="record")
    server = trace(ros, "switch_server.py", name="switch")
    # The caller's answers carry its count of timer firings: a replay rebuilds that count only from firings in
    # the recorded event log, and the node's first event batch goes out before the recorder has matched its
    # events topic. A first firing 1 s after start leaves the recorder time to match, also on a loaded machine.
    caller = trace(ros, "caller_node.py", "--ros-args", "-p", "period_s:=1.0", name="caller")
    answers = ros.collect(String, "/answers", reliable())
    topics = ["/switched", "/answers", "/set_switch/lockstep_request", "/set_switch/lockstep_response",
              "/lockstep/events/switch", "/lockstep/events/caller"]
    ros.wait_until(lambda: all(written(status, t) >= 1 for t in topics), WAIT_SECS,
                   "the recorder writing the outputs, the calls and both event logs", recorder)
    for k in range(calls):
        ros.call(SetBool, "/set_switch", SetBool.Request(data=k % 3 == 0), timeout=WAIT_SECS, retry_every=15.0)
    before = len(answers)
    ros.wait_until(lambda: len(answers) >= before + 3, WAIT_SECS, "three more answers to the caller", caller)
    for proc in (caller, server, recorder):
        assert proc.stop(timeout=60) == 0, proc.log()


def test_a_server_takes_the_recorded_requests_and_a_client_gets_the_recorded_responses(ros, tmp_path):
    bag = tmp_path / "calls"
    record(ros, bag)

    server = trace(ros, "switch_server.py", name="switch_replayed", replaying=True)
    _, report = replay(ros, bag, tmp_path / "server", "--modules", "switch")
    switched = report["channels"]["/switched"]
    assert switched["simulated"] >= 6 and switched["exact"] == switched["simulated"], switched
    assert report["frames_skipped"] == [], report["frames_skipped"]
    assert server.stop(timeout=60) == 0, server.log()

    caller = trace(ros, "caller_node.py", "--ros-args", "-p", "period_s:=1.0", name="caller_replayed",
                   replaying=True)
    _, report = replay(ros, bag, tmp_path / "client", "--modules", "caller")
    answers = report["channels"]["/answers"]
    assert answers["simulated"] >= 3 and answers["exact"] == answers["simulated"], answers
    assert "switch" in report["modules_not_live"], report["modules_not_live"]
    assert caller.stop(timeout=60) == 0, caller.log()


def test_trace_turns_on_the_service_introspection_of_a_node_that_never_does(ros, tmp_path):
    # The switch server's code never calls configure_introspection: `lockstep trace` turns it on, so a recorder
    # that asks for the service records its calls as rosbag2 would, request and response included.
    bag = tmp_path / "introspected"
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    recorder = ros.start("lockstep", "bag", "record", "--services", "/set_switch", "-o", str(bag), name="record")
    server = ros.start("lockstep", "trace", "--service-introspection", "contents", "--", sys.executable,
                       str(NODES / "switch_server.py"), name="switch")
    topic = "/set_switch/_service_event"
    ros.wait_until(lambda: status and any(t.topic == topic for t in status[-1].topics), WAIT_SECS,
                   "the recorder subscribed to the server's service events", recorder)
    for k in range(3):
        ros.call(SetBool, "/set_switch", SetBool.Request(data=k != 1), timeout=WAIT_SECS, retry_every=15.0)
    ros.wait_until(lambda: written(status, topic) >= 6, WAIT_SECS, "two events per call recorded", recorder)
    for proc in (server, recorder):
        assert proc.stop(timeout=60) == 0, proc.log()
    with Reader(bag) as reader:
        store = typestore_from_bag(reader)
        events = [decode(store, raw, conn.msgtype) for conn, _, raw in reader.messages()]
    taken = [e.request[0].data for e in events if e.info.event_type == 1]  # REQUEST_RECEIVED
    answered = [e.response[0].message for e in events if e.info.event_type == 2]  # RESPONSE_SENT
    assert (taken, answered) == ([True, False, True], ["on", "off", "on"]), (taken, answered)


def test_a_bad_introspection_state_is_refused_before_the_node_starts(ros):
    proc = ros.start("lockstep", "trace", "--service-introspection", "all", "--", "true", name="bad")
    assert proc.popen.wait(timeout=WAIT_SECS) == 2
    assert "invalid value 'all' for '--service-introspection" in proc.log(), proc.log()
