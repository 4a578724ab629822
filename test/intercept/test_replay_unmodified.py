"""Lock-step replay of unmodified rclpy nodes: the three nodes of the recording test, recorded under
`lockstep launch --trace`, run again under `--trace-replay` and driven by `lockstep replay` through exactly the
events they handled when recorded (every message taken, every timer firing, at its recorded ROS time).

One recording (made by the first test that needs it) serves every test of this file."""

import json
from pathlib import Path

from lockstep_testing.harness import binary, run_tool
from test_record_unmodified import GAIN, record_pipeline
from traced import NODES

WAIT_SECS = 180
OUTPUT_CHANNELS = ["/cmd", "/filtered", "/fused"]
_RECORDING: dict = {}


def recording(ros, tmp_path_factory) -> Path:
    if "bag" not in _RECORDING:
        bag = tmp_path_factory.mktemp("unmodified") / "bag"
        record_pipeline(ros, bag, messages=30)
        _RECORDING["bag"] = bag
    return _RECORDING["bag"]


def start_replayed(ros, gain=GAIN, name="replayed"):
    """The same launch file, every node under the interceptor in replay mode."""
    return ros.start("lockstep", "launch", str(NODES / "pipeline.launch.xml"), "--trace-replay",
                     f"gain:={gain}", name=name)


def replay(ros, bag, out: Path, *args, expect_ok=True):
    command = [str(binary("lockstep")), "replay", str(bag), "--output", str(out), "--quiet",
               "--discovery-ms", "60000", *args]
    run = run_tool(command, ros.env, timeout=WAIT_SECS)
    if expect_ok:
        assert run.returncode == 0, run.stdout + run.stderr
        return run, json.loads((out / "report.json").read_text())
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr and "panicked" not in run.stderr, run.stderr
    return run, None


def mcap_bytes(bag: Path) -> list:
    """The bag's files' bytes, in name order (the names follow the folder's)."""
    return [p.read_bytes() for p in sorted(bag.glob("*.mcap"))]


def test_unmodified_nodes_replay_exactly_and_byte_identically(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    nodes = start_replayed(ros)
    outputs = []
    for run in (1, 2):
        out = tmp_path / f"run{run}" / "replay"  # same folder name: the bag's files are named after it
        _, report = replay(ros, bag, out)
        assert report["mode"] == "dds", report
        assert sorted(report["channels"]) == OUTPUT_CHANNELS, report["channels"]
        for name, c in report["channels"].items():
            assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)
        assert report["modules_not_live"] == [], report["modules_not_live"]
        outputs.append(mcap_bytes(out))
    assert outputs[0] == outputs[1], "two replays write byte-identical bags"
    assert nodes.stop(timeout=60) == 0, nodes.log()


def test_a_changed_node_differs_downstream_and_the_report_names_the_event(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    nodes = start_replayed(ros, gain=GAIN * 2, name="changed")
    _, report = replay(ros, bag, tmp_path / "changed")
    channels = report["channels"]
    for name in OUTPUT_CHANNELS:
        assert channels[name]["exact"] < channels[name]["simulated"], (name, channels[name])
    first = channels["/filtered"]["first_difference"]
    assert first is not None and "/raw" in json.dumps(first), first
    assert nodes.stop(timeout=60) == 0, nodes.log()
