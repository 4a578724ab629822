"""Black-box hardening tests of lockstep_sim_node: garbage on every input, bounded histories, a slow reload that
must not stall the simulation."""

import math
import re
import time

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped, Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from lockstep_interfaces.srv import SetDestination
from lockstep_testing.bad_input import Input, check_bad_input, non_finite_fields
from lockstep_testing.harness import reliable
from sim_support import NODE, Sim, cell_of, copy_rules, drive, sim_params, stamp_secs, write_atomically


def time_scale_request(value):
    return SetParameters.Request(parameters=[Parameter(
        name="time_scale", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value))])


def dropped_counts(log):
    """The running counts of the node's latest `dropped N bad input(s)` line: {"total": N, "cmd_vel": n, ...}."""
    lines = re.findall(r"dropped (\d+) bad input\(s\) so far \(([^)]*)\)", log)
    if not lines:
        return {}
    total, counts = lines[-1]
    out = {"total": int(total)}
    for part in counts.split(", "):
        name, n = part.split(": ")
        out[name] = int(n)
    return out


def test_garbage_on_every_input_is_dropped_counted_and_the_simulator_recovers(ros, tmp_path):
    rules = copy_rules(tmp_path)
    params = sim_params(rules, mode="commanded", start_column=1, start_row=13, time_scale=2.0,
                        destination_column=-1, destination_row=-1)
    sim = Sim(ros, params)
    odom = ros.collect(Odometry, "/odom", reliable(depth=1000))

    report = check_bad_input(
        ros, sim.proc,
        topics=[(Twist, "/cmd_vel")],
        services=[
            Input(SetDestination, f"/{NODE}/set_destination", integers=True),
            Input(SetParameters, f"/{NODE}/set_parameters", template=time_scale_request(2.0)),
            (Trigger, f"/{NODE}/reload"),
        ],
        outputs=[(Odometry, "/odom"), (PoseStamped, "/ground_truth"), (JointState, "/joint_states"),
                 (PoseWithCovarianceStamped, "/slam_pose"), (MarkerArray, "/markers")],
        batch=10,  # the node subscribes to cmd_vel with depth 10
    )
    # Every bad cell is refused with a reason; the reload works; the parameter service answered everything.
    destinations = report.responses[f"/{NODE}/set_destination"]
    assert destinations and not any(r.success for r in destinations)
    assert all("outside" in r.message for r in destinations), [r.message for r in destinations]
    assert report.responses[f"/{NODE}/reload"][0].success
    # Dropped and counted, in a throttled log line with the running counts (the node logs the final count
    # within a couple of seconds of the last drop).
    published = report.published["/cmd_vel"]
    ros.wait_until(lambda: dropped_counts(sim.proc.log()).get("cmd_vel", 0) >= published, 30,
                   f"the log to count {published} dropped cmd_vel messages", proc=sim.proc)
    counts = dropped_counts(sim.proc.log())
    assert counts.get("cmd_vel") == published, counts
    bad_scales = sum(1 for r in report.requests[f"/{NODE}/set_parameters"]
                     if not 0.0 <= r.parameters[0].value.double_value <= 1e4)
    assert bad_scales >= 5 and counts.get("time_scale") == bad_scales, counts
    assert counts.get("set_destination") == len(destinations), counts
    # A bad time scale set on its own is dropped too: the one in force, and reported, stays the last valid one.
    response = sim.call(SetParameters, f"/{NODE}/set_parameters", time_scale_request(math.inf))
    assert len(response.results) == 1

    def reported_scale():
        got = sim.call(GetParameters, f"/{NODE}/get_parameters", GetParameters.Request(names=["time_scale"]))
        return got.values[0].double_value

    ros.wait_until(lambda: reported_scale() == 2.0, 30, "time_scale to be reported as 2.0 again",
                   proc=sim.proc)

    # Recovery: valid commands move the vehicle, and odometry follows, finite.
    start = sim.latest().pose.position
    odom_before = len(odom)
    forward = Twist()
    forward.linear.x = 0.5
    drive(ros, sim, forward, lambda: sim.latest().pose.position.x > start.x + 1.0, what="1 m of travel")
    ros.wait_until(lambda: len(odom) > odom_before and odom[-1].pose.pose.position.x > 0.5, 30,
                   "odometry to follow", proc=sim.proc)
    assert not [non_finite_fields(m) for m in odom if non_finite_fields(m)]
    assert math.isfinite(sim.latest().pose.position.x)
    assert sim.proc.alive()


def path_markers(markers):
    return [m for m in markers.markers if m.ns == "path" and m.type == Marker.LINE_STRIP]


def test_path_and_state_histories_are_bounded(ros, tmp_path):
    rules = copy_rules(tmp_path)
    markers = ros.collect(MarkerArray, "/markers", reliable(depth=100))
    sim = Sim(ros, sim_params(rules, path_max_points=20, state_history_depth=3, marker_rate_hz=10.0))
    sim.wait_arrived()
    visited = sim.state_names()
    assert len(visited) > 3, visited  # the early subscriber saw them all...

    # ...a late one gets only the latest three, ending with `arrived`.
    late = ros.collect(String, f"/{NODE}/state", reliable(depth=1000, latched=True))
    ros.wait_until(lambda: late and late[-1].data == "arrived", 30, "the latched states", proc=sim.proc)
    # Transient-local samples come in one burst: wait for the markers below before reading `late` again.
    mark = len(markers)
    ros.wait_until(lambda: len(markers) >= mark + 2, 30, "fresh markers", proc=sim.proc)
    assert [m.data for m in late] == visited[-3:], ([m.data for m in late], visited)

    # The path marker holds at most path_max_points points and still spans the run, start to vehicle.
    path = path_markers(markers[-1])
    assert len(path) == 1, markers[-1]
    points = path[0].points
    assert 2 <= len(points) <= 20, len(points)
    truth = sim.latest().pose.position
    first, last = points[0], points[-1]
    assert cell_of(first.x, first.y) == (2, 9), first
    assert math.dist((last.x, last.y), (truth.x, truth.y)) < 2.0, (last, truth)
    assert max(len(path_markers(m)[0].points) for m in markers if path_markers(m)) <= 20


def slow_broken_rules(good: str, facts: int):
    """The behaviour rules plus `facts` filler facts (parsing them takes seconds in a debug build) and, at the
    very end, a syntax error: the reload fails after all that work, and the running rules stay."""
    filler = "".join(f"pad({i}).\n" for i in range(facts))
    text = good + filler + "next_state(explore :- state(explore).\n"
    return text, text.count("\n")


def test_a_slow_reload_does_not_stall_the_simulation(ros, tmp_path):
    rules = copy_rules(tmp_path)
    arrivals = []
    ros.node.create_subscription(PoseStamped, "/ground_truth", lambda _m: arrivals.append(time.monotonic()),
                                 reliable(depth=1000))
    sim = Sim(ros, sim_params(rules, time_scale=1.0, watch_files=False))
    behaviour = rules / "behaviour.dl"
    text, broken_line = slow_broken_rules(behaviour.read_text(), 1_000_000)
    write_atomically(behaviour, text)

    client = ros.node.create_client(Trigger, f"/{NODE}/reload")
    ros.wait_until(client.service_is_ready, 30, "the reload service", proc=sim.proc)
    sent = time.monotonic()
    future = client.call_async(Trigger.Request())
    ros.wait_until(future.done, 120, "the reload's answer", proc=sim.proc)
    answered = time.monotonic()
    response = future.result()
    assert not response.success and f"{behaviour}:{broken_line}:" in response.message, response.message[:300]
    took = answered - sent
    assert took > 1.0, f"the reload took {took:.2f} s: too quick to show anything; add filler"
    during = [t for t in arrivals if sent < t < answered]
    # 20 ground-truth messages per simulated second at time_scale 1: a loop blocked by the reload sends none.
    assert len(during) >= 5 * took, f"{len(during)} ground-truth messages during a {took:.2f} s reload"
    assert sim.proc.alive()
    stamp_before = stamp_secs(sim.latest().header)
    ros.wait_until(lambda: stamp_secs(sim.latest().header) > stamp_before + 0.5, 30, "the simulation to go on",
                   proc=sim.proc)
