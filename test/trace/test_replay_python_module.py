"""A Python module in lock-step replay: the pipeline with its motion controller written in Python
(`lockstep_module_m2_py`, on the `lockstep_trace` library) between the Rust m1 and m3, recorded by
`lockstep_recorder` and replayed over DDS by `lockstep replay` with live modules in step mode. The Python and Rust
motion controllers are interchangeable on one recording, and a Python module refuses a bad step by name."""

import threading
from pathlib import Path

from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from mcap.reader import make_reader
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message

from lockstep_interfaces.msg import DependencyHeader, InputHeader
from lockstep_interfaces.srv import Step
from lockstep_trace import canonical_cdr, message_digest
from test_lockstep_replay import assert_exact, recording, replay, start_step_modules, stop
from test_pipeline import M2
from test_pipeline_recording import bag_hashes, record_pipeline

PY_M2 = "lockstep_module_m2_py"
RUST_M2 = "lockstep_module_m2"
STEP = "/motion_controller/lockstep/step"


def replay_with(ros, bag: Path, out: Path, m2_binary: str) -> tuple[dict, dict]:
    """`lockstep replay` of `bag` with live m1, m3 and the given m2, all in step mode: (report, bag hashes)."""
    procs = start_step_modules(ros, m2_binary=m2_binary)
    out.parent.mkdir(parents=True)
    _, report = replay(ros, bag, out)
    stop(procs)
    assert report["mode"] == "dds", report
    assert report["modules_not_live"] == [], report
    assert_exact(report)
    assert sorted(report["channels"]) == ["/cmd_vel", "/mission", "/obstacles"]
    for name, m in report["modules"].items():
        assert m["frames"] > 0 and m["inputs_as_recorded"] == m["frames"], (name, m)
    return report, bag_hashes(out)


def headers(bag: Path, topic: str) -> list:
    files = [bag] if bag.suffix == ".mcap" else sorted(bag.glob("*.mcap"))
    out = []
    for path in files:
        with open(path, "rb") as f:
            out += [deserialize_message(m.data, DependencyHeader)
                    for _, c, m in make_reader(f).iter_messages() if c.topic == topic]
    return out


def test_python_m2_records_and_replays_exactly_and_swaps_with_the_rust_one(ros, tmp_path):
    bag = tmp_path / "recorded"
    record_pipeline(ros, bag, ticks=80, m2_binary=PY_M2)
    # The Python module's headers in the recording: its module name, sequence numbers from 0 without gaps,
    # and exactly its three inputs, each with its own sources (the back-trace's second level).
    commands = headers(bag, "/cmd_vel/lockstep_header")
    assert len(commands) >= 10, len(commands)
    assert {h.module_name for h in commands} == {M2}
    assert [h.sequence_num for h in commands] == list(range(len(commands)))
    for h in commands:
        assert [i.channel_name for i in h.inputs] == ["/obstacles", "/mission", "/odom"], h
        obstacles = h.inputs[0]
        assert obstacles.module_name == "obstacle_fusion" and len(obstacles.sources) == 2, obstacles

    # Three replays with the Python module: exact on every channel, byte-identical bags.
    runs = [replay_with(ros, bag, tmp_path / f"py{i}" / "simulated", PY_M2) for i in range(3)]
    assert runs[0][1] == runs[1][1] == runs[2][1], [r[1] for r in runs]
    # The Rust motion controller on the Python module's recording: the same outputs, byte for byte.
    _, rust_hashes = replay_with(ros, bag, tmp_path / "rust" / "simulated", RUST_M2)
    assert rust_hashes == runs[0][1]


def test_python_m2_reproduces_a_recording_of_the_rust_one(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)  # recorded with the Rust m2
    _, py_hashes = replay_with(ros, bag, tmp_path / "py" / "simulated", PY_M2)
    _, rust_hashes = replay_with(ros, bag, tmp_path / "rust" / "simulated", RUST_M2)
    assert py_hashes == rust_hashes


def frame_naming(inputs: list) -> DependencyHeader:
    return DependencyHeader(module_name=M2, channel_name="/cmd_vel", sequence_num=7, epoch=1,
                            payload_digest=0, inputs=inputs)


def test_a_python_module_refuses_bad_steps_by_name_and_keeps_serving(ros, tmp_path):
    # Not in step mode: no step service, and lock-step replay says how to start the module.
    plain = ros.start(PY_M2)
    ros.wait_until(lambda: any(n == "/motion_controller" for n in ros.node.get_fully_qualified_node_names()), 30,
                   "the Python motion controller", proc=plain)
    bag = tmp_path / "bag.mcap"
    from lockstep_testing.recordings import topology_recording  # a small recording of the pipeline's wiring
    topology_recording(bag)
    run, _ = replay(ros, bag, tmp_path / "out", "--discovery-ms", "1500", expect_ok=False)
    assert "lockstep_step_mode:=true" in run.stderr, run.stderr
    assert not any(name == STEP for name, _ in ros.node.get_service_names_and_types())
    assert plain.stop() == 0, plain.log()

    module = ros.start(PY_M2, params={"lockstep_step_mode": True, "processing_delay_ms": 0})
    ros.wait_until(lambda: any(name == STEP for name, _ in ros.node.get_service_names_and_types()), 30,
                   "the step service of the Python motion controller", proc=module)
    # A step naming an odometry message that never comes: refused after its timeout, naming channel and digest.
    never = InputHeader(module_name="", channel_name="/odom", sequence_num=3, payload_digest=0xDEADBEEF)
    answer = ros.call(Step, STEP, Step.Request(frame=frame_naming([never]), timeout_ms=300), timeout=30)
    assert not answer.success
    assert "/cmd_vel #7: inputs not received within 300 ms: /odom (digest 00000000deadbeef)" in answer.message, \
        answer.message

    # Inputs that did arrive, but the frame is an output the module does not publish: refused, naming both.
    named = publish_inputs(ros)
    wrong = frame_naming(named)
    wrong.channel_name = "/obstacles"
    answer = ros.call(Step, STEP, Step.Request(frame=wrong, timeout_ms=5000), timeout=30)
    assert not answer.success
    assert "names no output on /cmd_vel" in answer.message, answer.message

    # The module still serves: the same inputs granted as a /cmd_vel frame compute the command.
    answer = ros.call(Step, STEP, Step.Request(frame=frame_naming(named), timeout_ms=5000), timeout=30)
    assert answer.success, answer.message
    assert answer.header.channel_name == "/cmd_vel" and answer.header.sequence_num == 7
    assert answer.header.inputs == named
    command = deserialize_message(bytes(answer.data), Twist)
    assert command.linear.x == 0.5 and command.angular.z == 0.0, command  # 2 m ahead: full speed, no turn
    assert answer.header.payload_digest == message_digest(command)
    assert bytes(answer.data) == canonical_cdr(command)
    assert module.alive()
    assert module.stop() == 0, module.log()


def publish_inputs(ros, namespace: str = "") -> list:
    """One obstacles, mission and odometry message each, published under `namespace`; the inputs a frame names
    to use them."""
    odom, obstacles, mission = Odometry(), PoseArray(), PoseStamped()
    mission.pose.position.x = 2.0
    odom.pose.pose.orientation.w = 1.0
    named = []
    for topic, msg in [("/obstacles", obstacles), ("/mission", mission), ("/odom", odom)]:
        pub = ros.publisher(type(msg), namespace + topic)
        ros.wait_for_matched(pub)
        pub.publish(msg)
        named.append(InputHeader(channel_name=namespace + topic, payload_digest=message_digest(msg)))
    return named


def test_a_python_module_in_a_namespace_and_on_simulated_time(ros):
    from builtin_interfaces.msg import Time
    from rosgraph_msgs.msg import Clock

    from lockstep_interfaces.msg import ModuleTopology
    from lockstep_testing.harness import reliable

    # Under /robot1: the module name, the latched topology topic and the step service carry the namespace.
    module = ros.start(PY_M2, params={"lockstep_step_mode": True, "processing_delay_ms": 0, "use_sim_time": True},
                       remaps={"__ns": "/robot1"})
    step = "/robot1" + STEP
    ros.wait_until(lambda: any(name == step for name, _ in ros.node.get_service_names_and_types()), 30,
                   f"the step service {step}", proc=module)
    topology = ros.collect(ModuleTopology, "/lockstep/topology/robot1/motion_controller",
                           reliable(depth=1, latched=True))
    ros.wait_for_messages(topology, 1, what="the namespaced module's topology")
    (wiring,) = topology[0].components
    assert wiring.module_name == "robot1/motion_controller"
    assert list(wiring.reader_channels) == ["/robot1/mission", "/robot1/obstacles", "/robot1/odom"]
    assert list(wiring.writer_channels) == ["/robot1/cmd_vel"]

    named = publish_inputs(ros, "/robot1")
    frame = frame_naming(named)
    frame.module_name, frame.channel_name = "robot1/motion_controller", "/robot1/cmd_vel"
    frame.start_stamp = Time(sec=1000, nanosec=5)
    # With use_sim_time the step waits for /clock to read the frame's start: nobody publishes it yet.
    answer = ros.call(Step, step, Step.Request(frame=frame, timeout_ms=400), timeout=30)
    assert not answer.success
    assert "use_sim_time" in answer.message and "1000000000005 ns" in answer.message, answer.message
    clock = ros.publisher(Clock, "/clock")
    ros.wait_for_matched(clock)
    commands = ros.collect(Twist, "/robot1/cmd_vel")
    # /clock is published over and over while the step waits, as a simulator or `lockstep replay` does: the
    # match this side sees may precede the node's, and a single message sent before it is lost (seen under load).
    stepped = threading.Event()

    def tick():
        while not stepped.is_set():
            clock.publish(Clock(clock=frame.start_stamp))
            stepped.wait(0.05)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        answer = ros.call(Step, step, Step.Request(frame=frame, timeout_ms=10000), timeout=30)
    finally:
        stepped.set()
        ticker.join()
    assert answer.success, answer.message
    assert answer.header.module_name == "robot1/motion_controller" and answer.header.start_stamp == frame.start_stamp
    ros.wait_for_messages(commands, 1, what="the command published on /robot1/cmd_vel")
    assert message_digest(commands[0]) == answer.header.payload_digest
    assert module.stop() == 0, module.log()
