"""`lockstep view` against a real Foxglove client nobody here wrote: @foxglove/ws-protocol's FoxgloveClient
decoding with @foxglove/rosmsg + @foxglove/rosmsg2-serialization (test/view/client.js, versions pinned in
test/view/package-lock.json), while the simulator runs."""

import json
import math
import shutil
import socket
import subprocess
import threading
import time

from std_msgs.msg import String

from lockstep_testing.harness import REPO_ROOT, reliable

HERE = REPO_ROOT / "test/view"
NODE_JS = shutil.which("node") or "node"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """client.js as a subprocess; its JSON lines collected as they come."""

    def __init__(self, port, *args, url=None):
        self.lines = []
        url = url or f"ws://127.0.0.1:{port}"
        self.proc = subprocess.Popen([NODE_JS, str(HERE / "client.js"), url, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except json.JSONDecodeError:
                self.lines.append({"op": "raw", "text": line.rstrip()})

    def of(self, op, **match):
        return [l for l in list(self.lines) if l.get("op") == op and all(l.get(k) == v for k, v in match.items())]

    def wait(self, timeout=60):
        self.proc.wait(timeout)
        # The process has ended, but the reader may still be parsing its last lines (a map's markers are
        # megabytes of JSON): wait for the end of its output, generously on a loaded machine.
        self.thread.join(60)
        return self.lines


def start_sim(ros):
    return ros.start("lockstep_sim_node", params={
        "scene_file": str(REPO_ROOT / "config/scenes/warehouse.scene"),
        "rule_files": f"{REPO_ROOT / 'config/rules/surface.dl'},{REPO_ROOT / 'config/rules/behaviour.dl'}",
        "start_column": 2, "start_row": 9, "destination_column": 17, "destination_row": 9,
        "time_scale": 2.0, "watch_files": False})


def start_view(ros, port, *args):
    view = ros.start("lockstep", "view", "--port", str(port), "--address", "127.0.0.1",
                     "--discovery-period-secs", "0.2", *args, name="lockstep_view")
    ros.wait_until(lambda: "live view on ws://" in view.log(), 60, "the view to listen", proc=view)
    return view


def test_a_foxglove_client_decodes_odometry_and_markers_of_the_running_simulator(ros):
    sim = start_sim(ros)
    port = free_port()
    view = start_view(ros, port)
    client = Client(port, "--subscribe", "/odom,/markers", "--max", "30", "--seconds", "60")
    lines = client.wait(90)
    assert sim.alive() and view.alive()
    info = client.of("serverInfo")
    assert info and info[0]["name"] == "lockstep view", lines[:3]
    advertised = {l["topic"]: l for l in client.of("advertise")}
    assert advertised["/odom"]["schemaName"] == "nav_msgs/msg/Odometry"
    assert advertised["/odom"]["encoding"] == "cdr"
    assert not client.of("schemaError") and not client.of("decodeError"), lines
    odom = [l["msg"] for l in client.of("message", topic="/odom")]
    assert len(odom) >= 30, client.of("done")
    xs = [m["pose"]["pose"]["position"]["x"] for m in odom]
    assert all(math.isfinite(x) for x in xs)
    assert max(xs) - min(xs) > 0.05, xs  # the vehicle moves
    assert all(m["header"]["frame_id"] == "odom" for m in odom)
    markers = [l["msg"] for l in client.of("message", topic="/markers")]
    assert markers and all(mk["header"]["frame_id"] == "map" for m in markers for mk in m["markers"])
    # Every simulator topic the Foxglove layout shows is offered (the recorder's status is not running here).
    layout = json.loads((REPO_ROOT / "config/foxglove/lockstep_layout.json").read_text())
    shown = set(layout["configById"]["3D!lockstep_map"]["topics"])
    shown |= {p["value"].split(".")[0] for p in layout["configById"]["Plot!lockstep_xy"]["paths"]}
    shown.add(layout["configById"]["RawMessages!lockstep_state"]["topicPath"])
    assert shown <= set(advertised), sorted(shown - set(advertised))


def test_a_topic_that_appears_later_is_advertised_and_bad_input_gets_a_status(ros):
    port = free_port()
    view = start_view(ros, port)
    client = Client(port, "--subscribe", "/appears_later", "--max", "3", "--seconds", "60", "--bad")
    ros.wait_until(lambda: client.of("serverInfo"), 30, "the client to connect", proc=view)
    # Bad input: each gets a status message, and the connection goes on.
    ros.wait_until(lambda: len(client.of("status")) >= 4, 30, "four status messages", proc=view)
    messages = " | ".join(s["message"] for s in client.of("status"))
    assert "malformed" in messages and "unknown channel id 424242" in messages, messages
    assert "at most 10000" in messages and "opcode 0x05" in messages, messages
    pub = ros.publisher(String, "/appears_later", reliable(depth=10))

    def published():
        pub.publish(String(data="hello foxglove"))
        return len(client.of("message", topic="/appears_later")) >= 3

    ros.wait_until(published, 30, "the late topic's messages at the client", proc=view)
    assert client.of("advertise", topic="/appears_later")
    assert client.of("message", topic="/appears_later")[0]["msg"] == {"data": "hello foxglove"}
    client.wait(30)
    # Its only client has gone: the view deletes its reader (no DDS traffic for a topic nobody looks at).
    ros.wait_until(lambda: ros.node.count_subscribers("/appears_later") == 0, 30,
                   "the view to unsubscribe from /appears_later", proc=view)
    assert "no client looks at /appears_later: unsubscribed" in view.log()
    assert view.alive()


def test_a_client_that_stops_reading_does_not_stall_the_others(ros):
    port = free_port()
    view = start_view(ros, port, "--queue", "32")
    pub = ros.publisher(String, "/flood", reliable(depth=1000))
    payload = "x" * 10_000
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            pub.publish(String(data=payload))
            time.sleep(0.001)

    slow = Client(port, "--subscribe", "/flood", "--stall", "--quiet", "--seconds", "40", "--max", "1000000000")
    fast = Client(port, "--subscribe", "/flood", "--quiet", "--seconds", "12", "--max", "1000000000")
    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    try:
        fast.wait(60)
    finally:
        stop.set()
        flooder.join(5)
    got = fast.of("done")[0]["counts"].get("/flood", 0)
    # The fast client keeps up (hundreds of 10 kB messages a second) while the stalled one drops its oldest.
    assert got > 1000, fast.lines[-3:]
    ros.wait_until(lambda: "message(s) dropped so far" in view.log(), 30, "the view to log the drops", proc=view)
    slow.proc.kill()
    assert view.alive()


def test_a_foxglove_client_reads_and_sets_node_parameters(ros):
    from rcl_interfaces.srv import GetParameters
    start_sim(ros)  # time_scale 2.0
    port = free_port()
    view = start_view(ros, port, "--allow-parameters", ".*")  # every parameter may be set
    sim_param = "/lockstep_sim_node.time_scale"
    client = Client(port, "--subscribe", "/odom", "--max", "1000000", "--seconds", "60",
                    "--set-parameter", f"{sim_param}=3",  # a JSON integer for a double parameter
                    "--set-parameter", '/lockstep_sim_node.mode="commanded"',  # read at start only: refused
                    "--set-parameter", "no_node_here=1",
                    "--get-parameters", "")
    ros.wait_until(lambda: client.of("parameterValues", id="get"), 60, "the parameter answers", proc=view)
    client.proc.kill()
    set_answer = {p["name"]: p for p in client.of("parameterValues", id="set")[0]["parameters"]}
    assert set_answer[sim_param] == {"name": sim_param, "value": 3.0, "type": "float64"}, set_answer
    assert set_answer["/lockstep_sim_node.mode"]["value"] == "autonomous", set_answer
    warnings = " | ".join(s["message"] for s in client.of("status"))
    assert "`/lockstep_sim_node.mode` refused by /lockstep_sim_node" in warnings, warnings
    assert "restart the node" in warnings, warnings
    assert "`no_node_here` is not a parameter name" in warnings, warnings
    # Every parameter of every node that has parameter services, the simulator's among them, sorted.
    everything = client.of("parameterValues", id="get")[0]["parameters"]
    names = [p["name"] for p in everything]
    assert names == sorted(names) and sim_param in names, names
    assert {"/lockstep_sim_node.scene_file", "/lockstep_sim_node.seed"} <= set(names), names
    # The simulator itself says it took the new value.
    answer = ros.call(GetParameters, "/lockstep_sim_node/get_parameters", GetParameters.Request(names=["time_scale"]))
    assert answer.values[0].double_value == 3.0, answer
    assert view.alive()


def test_a_foxglove_client_calls_a_nodes_services_in_json(ros):
    start_sim(ros)
    port = free_port()
    view = start_view(ros, port, "--allow-services", "/lockstep_sim_node/.*")
    service = "/lockstep_sim_node/set_destination"
    client = Client(port, "--seconds", "60",
                    "--call-service", f'{service}={{"column": 17, "row": 9}}',
                    "--call-service", f'{service}={{"column": 999, "row": 0}}',  # outside the grid: refused
                    "--call-service", f'{service}={{"column": "x"}}',  # not the request type
                    "--call-service", f"{service}=not json",
                    "--call-service", 'unknown={}',
                    "--call-service", '/lockstep_sim_node/reload={}')
    ros.wait_until(lambda: len(client.of("serviceCallResponse")) + len(client.of("serviceCallFailure")) >= 6, 60,
                   "six answers", proc=view)
    client.proc.kill()
    advertised = {s["name"]: s for s in client.of("advertiseService")}
    assert advertised[service]["type"] == "lockstep_interfaces/srv/SetDestination", advertised[service]
    assert advertised[service]["request"]["schema"].startswith("# Set the simulated vehicle's destination")
    assert "bool success" in advertised[service]["response"]["schema"]
    assert not any("/_action/" in name for name in advertised), sorted(advertised)
    answers = {a["callId"]: a for a in client.of("serviceCallResponse") + client.of("serviceCallFailure")}
    assert answers[1]["op"] == "serviceCallResponse" and answers[1]["response"]["success"] is True, answers[1]
    assert answers[2]["response"]["success"] is False and answers[2]["response"]["message"], answers[2]
    assert answers[3]["op"] == "serviceCallFailure" and "does not fit" in answers[3]["message"], answers[3]
    assert answers[4]["op"] == "serviceCallFailure" and "not JSON" in answers[4]["message"], answers[4]
    assert answers[5] == {"op": "serviceCallFailure", "callId": 5, "message": "unknown service id 424242"}
    assert answers[6]["op"] == "serviceCallResponse" and answers[6]["response"]["success"] is True, answers[6]
    assert view.alive()


def test_a_bag_is_served_with_the_players_controls(ros):
    bag = REPO_ROOT / "test/data/rosbag2/mcap/talker"  # a real rosbag2 bag: /topic "Hello, world! 0..9"
    port = free_port()
    view = start_view(ros, port, "--bag", str(bag), "--loop", "--rate", "4")
    # The play starts paused; the client resumes it through the player's own service.
    client = Client(port, "--subscribe", "/topic", "--max", "12", "--seconds", "60",
                    "--call-service", "/lockstep_bag_player/resume={}")
    lines = client.wait(90)
    assert client.of("serviceCallResponse", callId=1), lines[-5:]
    advertised = {l["topic"] for l in client.of("advertise")}
    assert "/topic" in advertised and advertised <= {"/topic", "/rosout", "/parameter_events", "/clock"}, advertised
    texts = [l["msg"]["data"] for l in client.of("message", topic="/topic")]
    assert len(texts) >= 12, texts
    numbers = [int(t.removeprefix("Hello, world! ")) for t in texts]
    # In the bag's order, looping (the first few may be missed while the subscription matched).
    assert all(b == (a + 1) % 10 for a, b in zip(numbers, numbers[1:])), numbers
    # Stamped with the bag's time (/clock), not the wall clock. As for any ROS node on simulated time, the time
    # is 0 until the first /clock arrives: on a loaded machine the first message can come before it.
    stamps = [int(l["timestamp"]) for l in client.of("message", topic="/topic")]
    started = [s for s in stamps if s != 0]
    assert stamps[len(stamps) - len(started):] == started and len(started) >= 10, stamps
    assert all(1585866235_000_000_000 <= s <= 1585866240_000_000_000 for s in started), stamps
    assert "paused" in view.log() and view.alive()


def test_a_client_that_comes_later_still_gets_the_latched_map(ros):
    start_sim(ros)
    port = free_port()
    view = start_view(ros, port)
    first = Client(port, "--subscribe", "/markers/grid", "--max", "1000", "--seconds", "60")
    ros.wait_until(lambda: first.of("message", topic="/markers/grid"), 60, "the grid at the first client", proc=view)
    # The view's one reader took the grid (published once, transient local) long ago; the second client gets
    # it from the view's latched copy.
    second = Client(port, "--subscribe", "/markers/grid", "--max", "1", "--seconds", "30")
    second.wait(60)
    first.proc.kill()
    grids = second.of("message", topic="/markers/grid")
    assert grids, second.lines[-3:]
    assert grids[0]["msg"] == first.of("message", topic="/markers/grid")[0]["msg"]
    assert grids[0]["msg"]["markers"] and grids[0]["msg"]["markers"][0]["header"]["frame_id"] == "map"


def test_a_foxglove_client_shows_the_task_managers_live_fleet_view(ros):
    # Two robots on the shipped warehouse map, at A and D: the manager's fleet_markers (transient-local, sent
    # when the view changes) through the view, decoded by the Foxglove client.
    manager = ros.start("lockstep_task_manager", params={
        "config_file": str(REPO_ROOT / "config/tasks/warehouse.yaml"),
        "map_file": str(REPO_ROOT / "config/tasks/warehouse_map.yaml"),
        "robots": "robot1,robot2", "start_stations": "A,D"})
    port = free_port()
    view = start_view(ros, port)
    client = Client(port, "--subscribe", "/fleet_markers,/task_events", "--max", "1", "--seconds", "60")
    ros.wait_until(lambda: client.of("message", topic="/fleet_markers"), 90, "the fleet view at the client",
                   proc=view)
    assert manager.alive() and view.alive()
    advertised = {l["topic"]: l for l in client.of("advertise")}
    assert advertised["/fleet_markers"]["schemaName"] == "visualization_msgs/msg/MarkerArray"
    assert not client.of("schemaError") and not client.of("decodeError"), client.lines
    markers = client.of("message", topic="/fleet_markers")[-1]["msg"]["markers"]
    assert markers and all(m["header"]["frame_id"] == "map" for m in markers)
    names = sorted(m["text"] for m in markers if m["ns"] == "names")
    assert names == ["robot1", "robot2"], names
    robots = {m["id"]: (m["pose"]["position"]["x"], m["pose"]["position"]["y"]) for m in markers if m["ns"] == "robots"}
    assert sorted(robots.values()) == [(2.5, 5.5), (17.5, 12.5)], robots
    # The fleet layout shows what the manager publishes.
    layout = json.loads((REPO_ROOT / "config/foxglove/fleet_layout.json").read_text())
    shown = set(layout["configById"]["3D!lockstep_fleet"]["topics"])
    shown.add(layout["configById"]["RawMessages!lockstep_task_events"]["topicPath"])
    assert shown <= set(advertised), sorted(shown - set(advertised))
