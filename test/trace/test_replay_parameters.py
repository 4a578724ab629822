"""Recorded module parameters: the recorder stores each module's parameters (read through its parameter
services) and the changes it announces on /parameter_events; `lockstep replay` over DDS compares them with the
live modules' (a warning naming module, parameter, recorded and live value), fails on a difference with
--strict-parameters, and sets the recorded values with --apply-recorded-parameters.

The pipeline is recorded with m3 `hold` 4 and replayed with m3 started with `hold` 3 (the mistake the README's
recipe once made): the replayed /mission then differs, and only applying the recorded value makes it exact."""

import os
import subprocess

from mcap.reader import make_reader
from rcl_interfaces.msg import Parameter, ParameterEvent, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters

import test_pipeline_recording
from test_lockstep_replay import assert_exact, replay, start_step_modules, stop
from test_pipeline import HOLD, M1, M3
from test_pipeline_recording import record_pipeline

RECORDED_HOLD = 4
LIVE_HOLD = HOLD  # what start_step_modules gives m3


def parameter_records(bag) -> dict:
    """MCAP metadata records of the bag whose name starts with `lockstep_parameter`, merged per name (the
    recorder stores them in batches)."""
    out: dict = {}
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            for record in make_reader(f).iter_metadata():
                if record.name.startswith("lockstep_parameter"):
                    out.setdefault(record.name, {}).update(record.metadata)
    return out


def live_hold(ros) -> int:
    response = ros.call(GetParameters, f"/{M3}/get_parameters", GetParameters.Request(names=["hold"]))
    assert response.values[0].type == ParameterType.PARAMETER_INTEGER, response
    return response.values[0].integer_value


def test_recorded_parameters_are_warned_refused_and_applied(ros, tmp_path, monkeypatch):
    assert RECORDED_HOLD != LIVE_HOLD
    # record_pipeline starts m3 with its module's HOLD: record with 4.
    monkeypatch.setattr(test_pipeline_recording, "HOLD", RECORDED_HOLD)
    bag = tmp_path / "bag"
    record_pipeline(ros, bag, ticks=60)

    # The bag holds every module's parameters as typed text (the values record_pipeline started them with),
    # with the node they were read from.
    records = parameter_records(bag)
    values = records.get("lockstep_parameters", {})
    assert values.get(f"{M3}/hold") == f"integer:{RECORDED_HOLD}", records
    assert values.get(f"{M3}/rate_hz") == "double:5.0", values
    assert values.get(f"{M1}/processing_delay_ms") == "integer:2", values
    nodes = records["lockstep_parameter_nodes"]
    assert nodes[M3].startswith(f"node=/{M3};read_ns="), nodes
    # ... and `lockstep bag info` shows them.
    info = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True,
                          text=True, timeout=60, env=ros.env)
    assert info.returncode == 0, info.stderr
    assert f"{M3}/hold = integer:{RECORDED_HOLD}" in info.stdout, info.stdout

    procs = start_step_modules(ros)  # m3 with hold 3
    assert live_hold(ros) == LIVE_HOLD

    # By default: a warning naming module, parameter, recorded and live value; the report lists it; the
    # replayed missions differ from the recorded ones.
    run, report = replay(ros, bag, tmp_path / "warned")
    warning = f"{M3} hold: recorded integer:{RECORDED_HOLD}, live integer:{LIVE_HOLD}"
    assert any(line.startswith("warning:") and warning in line for line in run.stderr.splitlines()), run.stderr
    differences = {(d["module"], d["parameter"]): (d["recorded"], d["live"])
                   for d in report["parameters"]["differences"]}
    assert differences[(M3, "hold")] == (f"integer:{RECORDED_HOLD}", f"integer:{LIVE_HOLD}"), differences
    assert report["parameters"]["applied"] == []
    assert not any(p in ("use_sim_time", "lockstep_step_mode") for _, p in differences), differences
    mission = report["channels"]["/mission"]
    assert mission["simulated"] > 0 and mission["exact"] < mission["simulated"], mission

    # --strict-parameters: an error of one line naming the difference, before anything is replayed.
    strict_out = tmp_path / "strict"
    run, _ = replay(ros, bag, strict_out, "--strict-parameters", expect_ok=False)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and warning in lines[0], run.stderr
    assert not (strict_out / "report.json").exists()
    assert live_hold(ros) == LIVE_HOLD  # nothing was set

    # --apply-recorded-parameters: the recorded values are set before the first step; the replay is exact.
    run, report = replay(ros, bag, tmp_path / "applied", "--apply-recorded-parameters")
    applied = {(d["module"], d["parameter"]): d["recorded"] for d in report["parameters"]["applied"]}
    assert applied[(M3, "hold")] == f"integer:{RECORDED_HOLD}", report["parameters"]
    assert f"{M3} hold: set to the recorded integer:{RECORDED_HOLD}" in run.stderr, run.stderr
    assert_exact(report)
    assert live_hold(ros) == RECORDED_HOLD

    # Now the live modules match the recording: --strict-parameters replays, exactly.
    _, report = replay(ros, bag, tmp_path / "strict_again", "--strict-parameters")
    assert report["parameters"]["differences"] == [], report["parameters"]
    assert_exact(report)
    stop(procs)


def test_parameter_changes_are_recorded_from_parameter_events(ros, tmp_path):
    """A change made while recording reaches the bag through /parameter_events (which the recorder watches
    whether or not it records the topic), with the value it had at start kept as well."""
    events = ros.collect(ParameterEvent, "/parameter_events")
    bag = tmp_path / "bag"
    recorder = ros.start("lockstep_recorder", params={
        "output": str(bag), "discovery_period_secs": 0.05, "exclude_regex": "^/rosout$|^/parameter_events$"})
    m3 = ros.start("lockstep_module_m3", params={"rate_hz": 5.0, "hold": RECORDED_HOLD})
    ros.wait_until(lambda: f"parameters of {M3}" in recorder.log(), 30,
                   "the recorder to read m3's parameters", proc=recorder)
    request = SetParameters.Request(parameters=[Parameter(name="hold", value=ParameterValue(
        type=ParameterType.PARAMETER_INTEGER, integer_value=7))])
    response = ros.call(SetParameters, f"/{M3}/set_parameters", request)
    assert all(r.successful for r in response.results), response
    # m3 (an r2r node) announces the change as rclcpp and rclpy nodes do.
    ros.wait_until(lambda: any(e.node == f"/{M3}" and [p.name for p in e.changed_parameters] == ["hold"]
                               for e in events), 30, "m3's parameter event")
    assert live_hold(ros) == 7
    # The recorder received the event too once it is in its log of changes; stopping stores everything.
    assert m3.stop() == 0, m3.log()
    assert recorder.stop() == 0, recorder.log()
    records = parameter_records(bag)
    assert records["lockstep_parameters"][f"{M3}/hold"] == f"integer:{RECORDED_HOLD}", records
    changes = records.get("lockstep_parameter_changes", {})
    assert [v for k, v in sorted(changes.items()) if k.endswith(f" {M3}/hold")] == ["integer:7"], changes
