"""End-to-end proof: the r2r fixture node and rclpy exchange lockstep_interfaces messages, services and actions
in both directions over real DDS. If the r2r side breaks (build, linking, DDS, type support, parameters), these
tests fail."""

import threading
import time

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.executors import MultiThreadedExecutor
from std_msgs.msg import String

from lockstep_interfaces.action import Countdown
from lockstep_interfaces.msg import DependencyHeader, ModuleTopology
from lockstep_interfaces.srv import GetTopology
from lockstep_testing.harness import reliable

FIXTURE = "lockstep_e2e_fixture"


def start_fixture(ros, **params):
    proc = ros.start(FIXTURE, params=params or {"sequence_offset": 0})
    ros.wait_for_subscriber("/e2e/in")
    ros.wait_for_topic("/e2e/out")
    return proc


def test_message_round_trip_rclpy_to_r2r_and_back(ros):
    start_fixture(ros, sequence_offset=1000, module_name="fixture_under_test")
    echoed = ros.collect(DependencyHeader, "/e2e/out")
    pub = ros.publisher(DependencyHeader, "/e2e/in")
    ros.wait_until(lambda: pub.get_subscription_count() >= 1, 10, "the fixture's subscription to match")
    # Discovery matches each direction on its own: probe until the fixture's echo reaches us, then start.
    probe = DependencyHeader(module_name="probe", sequence_num=0)
    ros.wait_until(lambda: pub.publish(probe) or echoed, 15, "the first echo")
    time.sleep(0.2)
    echoed.clear()
    sent = []
    # A burst of 100 (the subscription depth): r2r drops what overflows its 10-slot stream channel unless
    # the node drains between spins (lockstep_ros::spin), so this also guards against that loss.
    for seq in range(100):
        msg = DependencyHeader(module_name="pytest", channel_name="/e2e/in", sequence_num=seq,
                               start_stamp=Time(sec=100 + seq, nanosec=seq * 1000),
                               process_time_ns=seq * 10, payload_digest=(1 << 63) + seq)
        pub.publish(msg)
        sent.append(msg)
    ros.wait_for_messages(echoed, 100, what="echoed headers")
    by_input = sorted(echoed, key=lambda m: m.inputs[0].sequence_num)
    for original, out in zip(sent, by_input):
        # The parameter given on the command line reached the r2r node.
        assert out.module_name == "fixture_under_test"
        assert out.sequence_num == original.sequence_num + 1000
        assert out.payload_digest == original.payload_digest  # u64 above 2^63 survives both type supports
        assert out.start_stamp == original.start_stamp
        (inp,) = out.inputs
        assert (inp.module_name, inp.channel_name, inp.sequence_num) == ("pytest", "/e2e/in",
                                                                          original.sequence_num)
        assert inp.process_time_ns == original.process_time_ns


def test_latched_topology_reaches_a_late_subscriber(ros):
    start_fixture(ros)
    time.sleep(0.5)  # the fixture published its topology before we subscribe
    got = ros.collect(ModuleTopology, "/e2e/topology", reliable(depth=1, latched=True))
    ros.wait_for_messages(got, 1, what="latched topology")
    (component,) = got[0].components
    assert component.module_name == "e2e_fixture"
    assert list(component.reader_channels) == ["e2e/in"]
    assert list(component.writer_channels) == ["e2e/out"]


def test_rclpy_calls_r2r_service(ros):
    start_fixture(ros, module_name="served_by_r2r")
    response = ros.call(GetTopology, "/e2e/get_topology", GetTopology.Request())
    assert response.success
    assert [c.module_name for c in response.topology.components] == ["served_by_r2r"]


def test_rclpy_drives_r2r_action_with_feedback_and_result(ros):
    start_fixture(ros)
    client = ros.action_client(Countdown, "/e2e/countdown")
    feedback = []
    handle = ros.send_goal(client, Countdown.Goal(start=4, step_period_secs=0.05), feedback)
    assert handle.accepted
    result = ros.result(handle)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    assert result.result.steps_done == 4 and not result.result.cancelled
    ros.wait_until(lambda: len(feedback) >= 4, 30, "4 feedback messages")
    assert [f.remaining for f in feedback] == [3, 2, 1, 0]


def test_rclpy_cancels_r2r_action(ros):
    start_fixture(ros)
    client = ros.action_client(Countdown, "/e2e/countdown")
    feedback = []
    handle = ros.send_goal(client, Countdown.Goal(start=100, step_period_secs=0.05), feedback)
    assert handle.accepted
    ros.wait_until(lambda: len(feedback) >= 1, 10, "first feedback")
    cancel = ros.cancel(handle)
    assert len(cancel.goals_canceling) == 1
    result = ros.result(handle)
    assert result.status == GoalStatus.STATUS_CANCELED
    assert result.result.cancelled
    assert len(feedback) < 100


def test_r2r_rejects_a_bad_goal_and_keeps_serving(ros):
    proc = start_fixture(ros)
    client = ros.action_client(Countdown, "/e2e/countdown")
    bad = ros.send_goal(client, Countdown.Goal(start=2, step_period_secs=float("nan")))
    assert not bad.accepted
    good = ros.send_goal(client, Countdown.Goal(start=1, step_period_secs=0.01))
    assert good.accepted
    assert ros.result(good).status == GoalStatus.STATUS_SUCCEEDED
    assert proc.alive()


@pytest.fixture
def remote_servers(ros):
    """rclpy plays the server side: a GetTopology service and a Countdown action server, on their own node
    and multi-threaded executor (the countdown's execute callback sleeps while a cancel must get through;
    the harness's executor is single-threaded)."""
    node = rclpy.create_node("e2e_remote_servers", context=ros.context)
    executor = MultiThreadedExecutor(num_threads=2, context=ros.context)
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    def topology(request, response):
        response.success = True
        response.topology = ModuleTopology()
        from lockstep_interfaces.msg import ComponentTopology
        response.topology.components = [ComponentTopology(module_name="rclpy_a"),
                                        ComponentTopology(module_name="rclpy_b")]
        return response

    node.create_service(GetTopology, "/e2e/remote_topology", topology)
    cancelled = threading.Event()

    def execute(goal_handle):
        steps = 0
        for remaining in reversed(range(goal_handle.request.start)):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                cancelled.set()
                return Countdown.Result(steps_done=steps, cancelled=True)
            time.sleep(goal_handle.request.step_period_secs)
            steps += 1
            goal_handle.publish_feedback(Countdown.Feedback(remaining=remaining))
        goal_handle.succeed()
        return Countdown.Result(steps_done=steps, cancelled=False)

    server = ActionServer(node, Countdown, "/e2e/remote_countdown", execute,
                          goal_callback=lambda goal: GoalResponse.ACCEPT,
                          cancel_callback=lambda handle: CancelResponse.ACCEPT)
    yield cancelled
    stop.set()
    spinner.join(timeout=5)
    executor.shutdown(timeout_sec=2)
    server.destroy()
    node.destroy_node()


def command_and_report(ros, command):
    # The fixture's reports are transient-local, so a report sent before our subscription matched still arrives.
    reports = ros.collect(String, "/e2e/report", reliable(depth=10, latched=True))
    pub = ros.publisher(String, "/e2e/command")
    ros.wait_until(lambda: pub.get_subscription_count() >= 1, 10, "the fixture's command subscription")
    pub.publish(String(data=command))
    ros.wait_for_messages(reports, 1, timeout=20, what=f"report for {command}")
    return reports[0].data


def test_r2r_calls_rclpy_service(ros, remote_servers):
    start_fixture(ros)
    assert command_and_report(ros, "call_service") == "service ok modules=rclpy_a,rclpy_b"


def test_r2r_sends_goal_to_rclpy_action_server(ros, remote_servers):
    start_fixture(ros)
    report = command_and_report(ros, "send_goal")
    assert report.startswith("action status=Succeeded steps_done=3 cancelled=false"), report


def test_r2r_cancels_rclpy_goal(ros, remote_servers):
    start_fixture(ros)
    report = command_and_report(ros, "send_goal_then_cancel")
    assert report.startswith("action status=Canceled"), report
    assert "cancelled=true" in report and "feedback=2" in report, report
    assert remote_servers.is_set()


def test_fixture_stops_cleanly_on_sigint(ros):
    proc = start_fixture(ros)
    assert proc.stop(timeout=5) == 0
