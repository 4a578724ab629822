"""`lockstep test` over unmodified nodes: the suite's launch file starts plain rclpy nodes, `modules.unmodified`
runs it under the interceptor in replay mode, and each case replays its recording twice (`repeat: 2`): the
recorded nodes pass; a variant with another filter gain fails on exactly the channels it changes."""

import json

from lockstep_testing.harness import binary, run_tool
from test_replay_unmodified import recording
from traced import NODES

RUN_TIMEOUT_S = 600


def test_a_suite_replays_unmodified_nodes(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    suite = tmp_path / "unmodified.yaml"
    suite.write_text("\n".join([
        "recordings:",
        f"  - {bag}",
        "modules:",
        f"  launch: {NODES / 'pipeline.launch.xml'}",
        "  unmodified: true",
        "  variants:",
        "    recorded: {arguments: {gain: '0.5'}}",
        "    doubled: {arguments: {gain: '1.0'}}",
        "replay:",
        "  repeat: 2",
        "",
    ]))
    out = tmp_path / "out"
    run = run_tool([str(binary("lockstep")), "test", str(suite), "--output", str(out), "--quiet"], ros.env,
                   timeout=RUN_TIMEOUT_S)
    assert "panicked" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, f"one variant fails\n{run.stdout}\n{run.stderr}"
    cases = {p.name: json.loads((p / "report.json").read_text()) for p in (out / "cases").iterdir()}
    assert sorted(cases) == ["bag__doubled", "bag__recorded"], sorted(cases)
    recorded, doubled = cases["bag__recorded"], cases["bag__doubled"]
    assert recorded["passed"], recorded["failures"]
    assert all(c["identical"] == c["compared"] > 0 for c in recorded["channels"].values()), recorded["channels"]
    assert not doubled["passed"]
    failing = {c for c, r in doubled["channels"].items() if not r["passed"]}
    assert failing == {"/filtered", "/fused", "/cmd"}, failing
    assert not any("nondeterministic" in f for f in doubled["failures"]), doubled["failures"]
