"""Lock-step replay of modules under a namespace, and of one computation publishing on two channels, over DDS.

- The example pipeline started under `/robot1` (`--ros-args -r __ns:=/robot1`) is recorded and replayed
  lock-step through its step-mode processes, exactly. Its module names carry the namespace
  (`robot1/obstacle_fusion`): the same pipeline under `/robot2` is another set of modules, never stepped for
  the `/robot1` recording.
- `lockstep_module_split` (node `range_splitter`) publishes two outputs per input in one computation; its
  recording replays as one step per computation, both channels exact."""

import collections
import os
import struct
import subprocess

from geometry_msgs.msg import PoseArray, Twist
from mcap.reader import make_reader
from sensor_msgs.msg import Range
from std_msgs.msg import Float64

from lockstep_interfaces.msg import DependencyHeader, ModuleTopology, RecorderStatus
from lockstep_testing.harness import reliable
from test_lockstep_replay import assert_exact, replay, start_step_modules, stop
from test_pipeline import M1, M2, M3, front_range, range_msg
from test_pipeline_recording import record_pipeline, recorded_counts

NS = "/robot1"
OTHER_NS = "/robot2"
SPLITTER = "range_splitter"
SPLIT_INPUTS = 40


def named(module: str, ns: str = NS) -> str:
    """The module name a node in `ns` writes into its headers: the namespace without its leading slash first."""
    return f"{ns.strip('/')}/{module}"


def message_counts(bag) -> dict:
    """topic -> messages in the MCAP files of the bag directory `bag` (python `mcap`, not our bag library)."""
    counts = collections.Counter()
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            for _schema, channel, _message in make_reader(f).iter_messages():
                counts[channel.topic] += 1
    return dict(counts)


def test_namespaced_pipeline_records_and_replays_exactly(ros, tmp_path):
    bag = tmp_path / "robot1"
    # The same pipeline under /robot2, in step mode (idle) from the start: same node names, other modules. The
    # recorder learns both wirings; the headers of /robot1's modules name them with their namespace.
    robot2_out = ros.collect(PoseArray, f"{OTHER_NS}/obstacles")
    robot2_cmd = ros.collect(Twist, f"{OTHER_NS}/cmd_vel")
    others = start_step_modules(ros, namespace=OTHER_NS)
    headers = ros.collect(DependencyHeader, f"{NS}/obstacles/lockstep_header")
    topology = ros.collect(ModuleTopology, f"/lockstep/topology/{named(M1)}", reliable(depth=1, latched=True))
    record_pipeline(ros, bag, ticks=60, namespace=NS)
    assert headers and {h.module_name for h in headers} == {named(M1)}, {h.module_name for h in headers}
    assert {h.channel_name for h in headers} == {f"{NS}/obstacles"}
    assert topology and topology[-1].components[0].module_name == named(M1)
    assert sorted(topology[-1].components[0].reader_channels) == [f"{NS}/scan_front", f"{NS}/scan_rear"]

    # The recording's topology holds both pipelines as two sets of modules (`lockstep bag info`).
    info = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode == 0, info.stderr
    for ns in (NS, OTHER_NS):
        wiring = f"{named(M1, ns)}: [{ns}/scan_front, {ns}/scan_rear] -> [{ns}/obstacles]"
        assert wiring in info.stdout, info.stdout

    # With only /robot2's modules running, the /robot1 recording finds none of its modules live.
    run, _ = replay(ros, bag, tmp_path / "none_live", "--modules", ",".join(named(m) for m in (M1, M2, M3)),
                    "--discovery-ms", "1500", expect_ok=False)
    assert "lockstep_step_mode:=true" in run.stderr, run.stderr
    assert f"/{named(M1)}/lockstep/step" in run.stderr, run.stderr

    # /robot1's modules in step mode beside /robot2's: each recorded module is found under its namespace and
    # stepped with exactly the recorded inputs; /robot2's are never stepped.
    procs = start_step_modules(ros, namespace=NS)
    _, report = replay(ros, bag, tmp_path / "replayed" / "simulated")
    assert report["mode"] == "dds", report
    assert_exact(report)
    assert sorted(report["channels"]) == [f"{NS}/cmd_vel", f"{NS}/mission", f"{NS}/obstacles"], report["channels"]
    stepped = {name for name, m in report["modules"].items() if m["frames"] > 0}
    assert stepped == {named(m) for m in (M1, M2, M3)}, report["modules"]
    for name in stepped:
        m = report["modules"][name]
        assert m["inputs_as_recorded"] == m["frames"], (name, m)
    assert report["channels_published_from_recording"] == [f"{NS}/odom", f"{NS}/scan_front", f"{NS}/scan_rear"]
    assert robot2_out == [] and robot2_cmd == [], "a module under /robot2 was stepped for the /robot1 recording"
    stop(procs)
    stop(others)


def record_splitter(ros, bag, inputs: int):
    """lockstep_module_split (live) and lockstep_recorder: rclpy publishes `inputs` front readings; returns once
    the recorder wrote every reading and both outputs (and their headers) of each."""
    statuses = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    clamped_headers = ros.collect(DependencyHeader, "/range_clamped/lockstep_header")
    margin_headers = ros.collect(DependencyHeader, "/range_margin/lockstep_header")
    # (our readers of the data too: the splitter waits for two readers of each data and header topic)
    ros.collect(Range, "/range_clamped")
    ros.collect(Float64, "/range_margin")
    recorder = ros.start("lockstep_recorder", params={
        "output": str(bag), "discovery_period_secs": 0.05, "status_period_secs": 0.1,
        "exclude_regex": "^/rosout$|^/parameter_events$"})
    # Its outputs matched the recorder and us before it takes any input: no output is lost to a late match.
    splitter = ros.start("lockstep_module_split", params={"wait_for_subscribers": 2})
    ros.wait_until(lambda: "subscriber(s) on /range_margin: starting" in splitter.log(), 30,
                   "the splitter to match its readers", proc=splitter)
    front = ros.publisher(Range, "/scan_front")
    ros.wait_until(lambda: front.get_subscription_count() >= 2, 20, "the splitter and the recorder on /scan_front")
    sent = [range_msg(front_range(i), i) for i in range(inputs)]
    front.publish(sent[0])
    ros.wait_for_acked(front)  # both readers discovered us: nothing after this is missed
    # One reading at a time, each once the splitter published both outputs of the one before (a node takes a
    # burst of inputs only as fast as it computes; here every reading must be computed).
    for i, msg in enumerate(sent[1:], start=1):
        ros.wait_until(lambda i=i: len(clamped_headers) >= i and len(margin_headers) >= i, 20,
                       f"both outputs of reading {i - 1}", proc=splitter)
        front.publish(msg)

    def counts():
        return recorded_counts(statuses[-1]) if statuses else {}

    def everything():
        now = counts()
        return (now.get("/scan_front") == inputs
                and all(now.get(t) == inputs for t in ("/range_clamped", "/range_clamped/lockstep_header",
                                                       "/range_margin", "/range_margin/lockstep_header")))

    try:
        ros.wait_until(everything, 60, "the recorder to write every reading and both outputs of each", proc=recorder)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; the recorder's last counts: {counts()}") from None
    assert splitter.stop() == 0, splitter.log()
    assert recorder.stop() == 0, recorder.log()
    return clamped_headers, margin_headers


def test_two_outputs_of_one_computation_replay_as_one_step(ros, tmp_path):
    bag = tmp_path / "split"
    clamped, margin = record_splitter(ros, bag, SPLIT_INPUTS)
    # Recorded: the two headers of one computation name the same module, start time and input.
    assert len(clamped) == len(margin) == SPLIT_INPUTS
    for a, b in zip(sorted(clamped, key=lambda h: h.sequence_num), sorted(margin, key=lambda h: h.sequence_num)):
        assert a.module_name == b.module_name == SPLITTER
        assert a.start_stamp == b.start_stamp, (a, b)
        assert [i.payload_digest for i in a.inputs] == [i.payload_digest for i in b.inputs], (a, b)

    outputs = {"/range_clamped": ros.collect(Range, "/range_clamped"),
               "/range_margin": ros.collect(Float64, "/range_margin")}
    proc = ros.start("lockstep_module_split", params={"lockstep_step_mode": True})
    ros.wait_until(lambda: any(n == f"/{SPLITTER}/lockstep/step" for n, _ in ros.node.get_service_names_and_types()),
                   20, "the splitter's step service")
    _, report = replay(ros, bag, tmp_path / "replayed")
    assert_exact(report)
    assert sorted(report["channels"]) == ["/range_clamped", "/range_margin"], report["channels"]
    for name in ("/range_clamped", "/range_margin"):
        assert report["channels"][name]["simulated"] == SPLIT_INPUTS, (name, report["channels"][name])
    # One step per computation: the module published each output once per reading. (Stepped once per output, it
    # would publish both outputs twice, or refuse the step naming an output it does not compute alone.)
    ros.wait_until(lambda: all(len(o) >= SPLIT_INPUTS for o in outputs.values()), 20,
                   "both outputs of every step on DDS")
    assert {name: len(o) for name, o in outputs.items()} == {n: SPLIT_INPUTS for n in outputs}
    expected = [f32_clamp(front_range(i)) for i in range(SPLIT_INPUTS)]
    assert sorted(m.range for m in outputs["/range_clamped"]) == sorted(expected)
    splitter = report["modules"][SPLITTER]
    assert splitter["inputs_as_recorded"] == splitter["frames"] > 0, splitter
    assert splitter["steps"] == SPLIT_INPUTS and splitter["frames"] == 2 * SPLIT_INPUTS, splitter
    assert proc.stop() == 0, proc.log()

    # The replay's own output bag holds both channels, one message per computation each.
    counts = message_counts(tmp_path / "replayed")
    assert counts.get("/range_clamped") == counts.get("/range_margin") == SPLIT_INPUTS, counts


def f32_clamp(value: float) -> float:
    """`value` as the float32 the Range message carries, clamped into the test readings' [0.1, 5.0]."""
    as_f32 = struct.unpack("f", struct.pack("f", value))[0]
    lo, hi = (struct.unpack("f", struct.pack("f", x))[0] for x in (0.1, 5.0))
    return min(max(as_f32, lo), hi)
