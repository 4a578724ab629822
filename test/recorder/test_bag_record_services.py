"""`lockstep bag record` records services and actions as rosbag2 does: a service's calls as the introspection
events its server and client publish (`<service>/_service_event`, type `<pkg>/srv/<Service>_Event`), chosen with
`--services` / `--all-services` / `--exclude-services`; an action's feedback and status topics (and its services'
events where introspection publishes them) with `--actions` / `--all-actions`; topics by type with
`--topic-types` / `--exclude-topic-types`. The bag is read back with `rosbags`, each message decoded with the
definition the bag stores."""

import subprocess

from rclpy.qos import qos_profile_system_default
from rclpy.service_introspection import ServiceIntrospectionState
from rosbags.rosbag2 import Reader
from std_msgs.msg import String
from std_srvs.srv import SetBool

from lockstep_interfaces.action import Countdown
from lockstep_interfaces.msg import RecorderStatus
from lockstep_interfaces.srv import SetDestination
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from lockstep_testing.harness import binary, reliable
from lockstep_testing.recordings import decode, typestore_from_bag
from rclpy.action import ActionServer

WAIT_SECS = 120
CALLS = 6


def record(ros, bag, *flags):
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    proc = ros.start("lockstep", "bag", "record", "-o", str(bag), *flags, name="bag_record")
    return proc, status


def recorded(status, topic):
    if not status:
        return 0
    return next((t.messages for t in status[-1].topics if t.topic == topic), 0)


def test_service_calls_are_recorded_as_introspection_events(ros, tmp_path):
    node = ros.node

    def toggle(request, response):
        response.success = request.data
        response.message = f"set to {request.data}"
        return response

    server = node.create_service(SetBool, "/toggle", toggle)
    server.configure_introspection(node.get_clock(), qos_profile_system_default,
                                   ServiceIntrospectionState.CONTENTS)
    quiet = node.create_service(SetBool, "/quiet", toggle)
    quiet.configure_introspection(node.get_clock(), qos_profile_system_default,
                                  ServiceIntrospectionState.CONTENTS)
    chatter = ros.publisher(String, "/chatter", reliable())
    bag = tmp_path / "services"
    proc, status = record(ros, bag, "--all-services", "--exclude-services", "/quiet")
    ros.wait_until(lambda: recorded(status, "/toggle/_service_event") == 0 and status and any(
        t.topic == "/toggle/_service_event" for t in status[-1].topics), WAIT_SECS,
        "the recorder subscribed to /toggle's events", proc)
    for i in range(CALLS):
        ros.call(SetBool, "/toggle", SetBool.Request(data=i % 2 == 0))
        ros.call(SetBool, "/quiet", SetBool.Request(data=True))
        chatter.publish(String(data="not a service"))
    # The server publishes two events per call (request received, response sent).
    ros.wait_until(lambda: recorded(status, "/toggle/_service_event") == 2 * CALLS, WAIT_SECS,
                   f"{2 * CALLS} service events recorded", proc)
    assert proc.stop(timeout=60) == 0, proc.log()

    with Reader(bag) as reader:
        assert [(c.topic, c.msgtype) for c in reader.connections] == [
            ("/toggle/_service_event", "std_srvs/srv/SetBool_Event")]
        store = typestore_from_bag(reader)
        events = [decode(store, raw, conn.msgtype) for conn, _, raw in reader.messages()]
    requests = [e.request[0].data for e in events if e.info.event_type == 1]  # REQUEST_RECEIVED
    responses = [e.response[0].message for e in events if e.info.event_type == 2]  # RESPONSE_SENT
    assert requests == [i % 2 == 0 for i in range(CALLS)], requests
    assert responses == [f"set to {i % 2 == 0}" for i in range(CALLS)], responses
    # Each call has its own client (its GID) and sequence number, in both of its events.
    calls = {(bytes(e.info.client_gid), e.info.sequence_number) for e in events}
    assert len(calls) == CALLS, calls
    info = run_lockstep("bag", "info", str(bag))
    assert "Topic information: (none)" in info, info
    assert "Services:          1" in info, info
    assert (f"Service information: Service: /toggle | Type: std_srvs/srv/SetBool | Event Count: {2 * CALLS} | "
            "Serialization Format: cdr") in info, info


def test_an_actions_topics_are_recorded_by_action_name_and_topics_by_type(ros, tmp_path):
    node = ros.node

    def count(goal_handle):
        for remaining in range(goal_handle.request.start, 0, -1):
            goal_handle.publish_feedback(Countdown.Feedback(remaining=remaining))
        goal_handle.succeed()
        return Countdown.Result(steps_done=goal_handle.request.start, cancelled=False)

    ActionServer(node, Countdown, "/count", count)
    chatter = ros.publisher(String, "/chatter", reliable())
    other = ros.publisher(RecorderStatus, "/not_a_string", reliable())
    bag = tmp_path / "actions"
    proc, status = record(ros, bag, "--actions", "/count", "--topic-types", "std_msgs/msg/String")
    client = ros.action_client(Countdown, "/count")
    ros.wait_for_matched(chatter, timeout=WAIT_SECS)
    ros.wait_until(lambda: status and {"/count/_action/feedback", "/count/_action/status"} <= {
        t.topic for t in status[-1].topics}, WAIT_SECS, "the action's topics subscribed", proc)
    for i in range(3):
        chatter.publish(String(data=f"typed {i}"))
        other.publish(RecorderStatus())
    handle = ros.send_goal(client, Countdown.Goal(start=4, step_period_secs=0.0))
    result = ros.result(handle)
    assert result.result.steps_done == 4
    ros.wait_until(lambda: recorded(status, "/count/_action/feedback") == 4 and recorded(status, "/chatter") == 3,
                   WAIT_SECS, "4 feedback messages and 3 strings recorded", proc)
    assert proc.stop(timeout=60) == 0, proc.log()

    with Reader(bag) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        assert topics == {"/chatter": "std_msgs/msg/String",
                          "/count/_action/feedback": "lockstep_interfaces/action/Countdown_FeedbackMessage",
                          "/count/_action/status": "action_msgs/msg/GoalStatusArray"}, topics
        store = typestore_from_bag(reader)
        feedback = [decode(store, raw, conn.msgtype).feedback.remaining
                    for conn, _, raw in reader.messages() if conn.topic == "/count/_action/feedback"]
    assert feedback == [4, 3, 2, 1], feedback
    info = run_lockstep("bag", "info", str(bag))
    assert "Topic information: Topic: /chatter | Type: std_msgs/msg/String | Count: 3" in info, info
    assert ("Action information: Action: /count | Type: lockstep_interfaces/action/Countdown | Topics: 2 | "
            "Service events: 0") in info, info


def set_string_parameter(ros, node, name, value):
    request = SetParameters.Request(parameters=[Parameter(name=name, value=ParameterValue(
        type=ParameterType.PARAMETER_STRING, string_value=value))])
    [result] = ros.call(SetParameters, f"{node}/set_parameters", request, timeout=WAIT_SECS,
                        retry_every=5.0).results
    return result


def test_our_nodes_publish_their_service_calls_when_the_parameter_turns_introspection_on(ros, tmp_path):
    # The simulator started with its services' introspection on: its calls are recorded with their contents.
    sim = ros.start("lockstep_sim_node", params={"mode": "commanded",
                                                 "service_configure_introspection": "contents"})
    topic = "/lockstep_sim_node/set_destination/_service_event"
    bag = tmp_path / "ours"
    proc, status = record(ros, bag, "--services", "/lockstep_sim_node/set_destination")
    ros.wait_until(lambda: status and any(t.topic == topic for t in status[-1].topics), WAIT_SECS,
                   "the recorder subscribed to the simulator's service events", proc)
    for column in range(3):
        ros.call(SetDestination, "/lockstep_sim_node/set_destination",
                 SetDestination.Request(column=column, row=1), timeout=WAIT_SECS)
    ros.wait_until(lambda: recorded(status, topic) == 6, WAIT_SECS, "6 events of 3 calls recorded", proc)
    # Metadata only from now on: the events go on, without the request and response.
    result = set_string_parameter(ros, "/lockstep_sim_node", "service_configure_introspection", "metadata")
    assert result.successful, result.reason
    ros.call(SetDestination, "/lockstep_sim_node/set_destination", SetDestination.Request(column=9, row=1),
             timeout=WAIT_SECS)
    ros.wait_until(lambda: recorded(status, topic) == 8, WAIT_SECS, "2 more events recorded", proc)
    # A value that names no state is refused with the allowed ones; the node keeps going.
    result = set_string_parameter(ros, "/lockstep_sim_node", "service_configure_introspection", "on")
    assert not result.successful and "must be disabled, metadata or contents" in result.reason, result.reason
    result = set_string_parameter(ros, "/lockstep_sim_node", "service_configure_introspection", "disabled")
    assert result.successful, result.reason
    ros.call(SetDestination, "/lockstep_sim_node/set_destination", SetDestination.Request(column=2, row=1),
             timeout=WAIT_SECS)
    assert sim.alive()
    assert proc.stop(timeout=60) == 0, proc.log()

    with Reader(bag) as reader:
        assert [(c.topic, c.msgtype) for c in reader.connections] == [
            (topic, "lockstep_interfaces/srv/SetDestination_Event")]
        store = typestore_from_bag(reader)
        events = [decode(store, raw, conn.msgtype) for conn, _, raw in reader.messages()]
    # Nothing after introspection was disabled: the last call is not in the bag.
    assert len(events) == 8, len(events)
    assert [e.request[0].column for e in events[:6] if e.info.event_type == 1] == [0, 1, 2]
    assert all(len(e.response) == 1 for e in events[:6] if e.info.event_type == 2)
    assert [(e.info.event_type, len(e.request), len(e.response)) for e in events[6:]] == [(1, 0, 0), (2, 0, 0)]


def test_a_bad_introspection_value_at_start_is_named(ros):
    sim = ros.start("lockstep_sim_node", params={"mode": "commanded", "service_configure_introspection": "all"})
    assert sim.popen.wait(timeout=WAIT_SECS) != 0
    assert "'service_configure_introspection' = 'all': must be disabled, metadata or contents" in sim.log()


def run_lockstep(*args):
    done = subprocess.run([str(binary("lockstep")), *args], capture_output=True, text=True, timeout=WAIT_SECS)
    assert done.returncode == 0, done
    return done.stdout
