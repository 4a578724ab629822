"""`lockstep bag play` with recorded services and actions, as rosbag2's player: the introspection events are
played as topics, and with `--publish-service-requests` the recorded requests are sent to the live servers
(`--service-requests-source` picks the server's or the client's events); with `--send-actions-as-client` the
recorded goals (an action's `send_goal` events, rosbag2 Kilted's layout) are sent to a live action server."""

import uuid

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.qos import qos_profile_system_default
from rclpy.service_introspection import ServiceIntrospectionState
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore, get_types_from_msg
from std_srvs.srv import SetBool

from lockstep_interfaces.action import Countdown
from lockstep_interfaces.msg import RecorderStatus

WAIT_SECS = 120
CALLS = 4


def record_calls(ros, bag):
    """A bag of CALLS calls of /toggle, recorded from its introspecting server."""
    server = ros.node.create_service(SetBool, "/toggle", lambda req, resp: resp)
    server.configure_introspection(ros.node.get_clock(), qos_profile_system_default,
                                   ServiceIntrospectionState.CONTENTS)
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    proc = ros.start("lockstep", "bag", "record", "--services", "/toggle", "-o", str(bag), name="bag_record")
    ros.wait_until(lambda: status and any(t.topic == "/toggle/_service_event" for t in status[-1].topics),
                   WAIT_SECS, "the recorder subscribed to /toggle's events", proc)
    for i in range(CALLS):
        ros.call(SetBool, "/toggle", SetBool.Request(data=i in (0, 3)))
    ros.wait_until(lambda: status[-1].total_messages == 2 * CALLS, WAIT_SECS, "the calls recorded", proc)
    assert proc.stop(timeout=60) == 0, proc.log()
    ros.node.destroy_service(server)


def finished(proc) -> int:
    """The exit status of a play that ends by itself at the end of its bag."""
    proc.popen.wait(WAIT_SECS)
    return proc.stop()


def test_recorded_requests_are_sent_to_the_live_server(ros, tmp_path):
    bag = tmp_path / "calls"
    record_calls(ros, bag)
    received = []

    def serve(request, response):
        received.append(request.data)
        response.success = True
        return response

    ros.node.create_service(SetBool, "/toggle", serve)
    # The client's events are not in the bag: with them as the source nothing is sent.
    quiet = ros.start("lockstep", "bag", "play", str(bag), "--publish-service-requests",
                      "--service-requests-source", "client_introspection", "--disable-keyboard-controls",
                      name="play_clients")
    assert finished(quiet) == 0, quiet.log()
    assert received == [], received
    play = ros.start("lockstep", "bag", "play", str(bag), "--publish-service-requests",
                     "--disable-keyboard-controls", name="play")
    assert finished(play) == 0, play.log()
    ros.wait_until(lambda: len(received) == CALLS, WAIT_SECS, f"{CALLS} requests served")
    assert received == [i in (0, 3) for i in range(CALLS)], received


# The send_goal events of an action as a Kilted recorder writes them (action introspection).
SEND_GOAL_EVENT = """service_msgs/msg/ServiceEventInfo info
lockstep_interfaces/action/Countdown_SendGoal_Request[<=1] request
lockstep_interfaces/action/Countdown_SendGoal_Response[<=1] response
================================================================================
MSG: lockstep_interfaces/action/Countdown_SendGoal_Request
unique_identifier_msgs/msg/UUID goal_id
lockstep_interfaces/action/Countdown_Goal goal
================================================================================
MSG: lockstep_interfaces/action/Countdown_SendGoal_Response
bool accepted
builtin_interfaces/msg/Time stamp
================================================================================
MSG: lockstep_interfaces/action/Countdown_Goal
uint32 start
float64 step_period_secs
================================================================================
MSG: service_msgs/msg/ServiceEventInfo
uint8 event_type
builtin_interfaces/msg/Time stamp
char[16] client_gid
int64 sequence_number
"""
EVENT_TYPE = "lockstep_interfaces/action/Countdown_SendGoal_Event"


def write_goal_bag(path, goals):
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register({k: v for k, v in get_types_from_msg(SEND_GOAL_EVENT, EVENT_TYPE).items() if k not in store.types})
    name = lambda t: t if t in store.types else t.replace("/action/", "/action/msg/")  # noqa: E731
    Event, Request, Goal = (store.types[name(f"lockstep_interfaces/action/Countdown_{part}")]
                            for part in ("SendGoal_Event", "SendGoal_Request", "Goal"))
    Info, Uuid, Time = (store.types[t] for t in ("service_msgs/msg/ServiceEventInfo",
                                                 "unique_identifier_msgs/msg/UUID", "builtin_interfaces/msg/Time"))
    import numpy as np
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/count/_action/send_goal/_service_event", EVENT_TYPE, msgdef=SEND_GOAL_EVENT,
                                     rihs01="RIHS01_" + "0" * 64)
        for i, (goal_id, start) in enumerate(goals):
            request = Request(goal_id=Uuid(uuid=np.frombuffer(goal_id, dtype=np.uint8)),
                              goal=Goal(start=start, step_period_secs=0.0))
            event = Event(info=Info(event_type=1, stamp=Time(sec=1, nanosec=i), client_gid=np.zeros(16, np.uint8),
                                    sequence_number=i + 1), request=[request], response=[])
            writer.write(conn, 1_000_000_000 + i * 1_000_000, store.serialize_cdr(event, name(EVENT_TYPE)))


def test_recorded_goals_are_sent_to_the_live_action_server(ros, tmp_path):
    goals = [(uuid.uuid4().bytes, 2), (uuid.uuid4().bytes, 3)]
    bag = tmp_path / "goals"
    write_goal_bag(bag, goals)
    accepted = []

    def execute(handle):
        accepted.append((bytes(handle.goal_id.uuid), handle.request.start))
        handle.succeed()
        return Countdown.Result(steps_done=handle.request.start)

    ActionServer(ros.node, Countdown, "/count", execute, goal_callback=lambda _: GoalResponse.ACCEPT,
                 cancel_callback=lambda _: CancelResponse.ACCEPT)
    play = ros.start("lockstep", "bag", "play", str(bag), "--send-actions-as-client", "--disable-keyboard-controls",
                     name="play")
    assert finished(play) == 0, play.log()
    ros.wait_until(lambda: len(accepted) == 2, WAIT_SECS, "both goals received")
    assert accepted == goals, accepted
