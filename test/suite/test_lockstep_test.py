"""`lockstep test`: a replay regression suite over a corpus of six pipeline recordings (made by the test),
each case on a ROS domain of its own with module processes the runner starts through the suite's launch file.
Checks the verdicts (recorded modules pass; a changed m3 `hold` fails exactly the channels it changes, with
the first differing frame in the JUnit XML; a tolerance admits it; an assertion fails a case with its rows;
A/B against an earlier run), that --jobs 2 gives what --jobs 1 gives, and that bad suites and launch files
are one-line errors with nothing reported as passed."""

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lockstep_testing.harness import run_tool
from corpus import HOLD, REPLAY_LAUNCH, shared_corpus

pytestmark = pytest.mark.timeout(1500)
RUN_TIMEOUT_S = 900
# What m3's hold changes: its mission goals, and the commands m2 computes from them.
CHANGED_BY_HOLD = {"/mission", "/cmd_vel"}
_RUNS: dict = {}


def lockstep_test(ros, suite: Path, output: Path, *args, expect_rc=None):
    """`lockstep test <suite> --output <output> --quiet ...`; the completed process."""
    run = run_tool([os.environ["LOCKSTEP_BIN"], "test", str(suite), "--output", str(output), "--quiet", *args],
                   ros.env, timeout=RUN_TIMEOUT_S)
    assert "panicked" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    if expect_rc is not None:
        assert run.returncode == expect_rc, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    return run


def write_suite(path: Path, corpus, variants: dict, expect: dict | None = None, assert_rules: str | None = None,
                launch: Path = REPLAY_LAUNCH, extra: str = "") -> Path:
    lines = ["recordings:"] + [f"  - {b}" for b in corpus]
    lines += ["modules:", f"  launch: {launch}", f"  arguments: {{hold: \"{HOLD}\"}}", "  variants:"]
    lines += [f"    {name}: {json.dumps({'arguments': args})}" for name, args in variants.items()]
    if expect:
        lines += ["expect: " + json.dumps(expect)]
    if assert_rules:
        lines += ["assert:", "  rules: " + json.dumps(assert_rules)]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def reports(output: Path) -> dict:
    return {d.name: json.loads((d / "report.json").read_text())
            for d in sorted((output / "cases").iterdir()) if not d.name.startswith(".")}


def junit_cases(output: Path) -> dict:
    root = ET.parse(output / "junit.xml").getroot()
    return {tc.get("name"): tc for tc in root.iter("testcase")}


def corpus_run(ros, tmp_path_factory):
    """The corpus and one run of the 12-case suite (recorded hold, and hold 2) at --jobs 2, shared by the
    tests of this file."""
    if "output" not in _RUNS:
        corpus = shared_corpus(ros, tmp_path_factory, 6)
        root = tmp_path_factory.mktemp("suite_run")
        suite = write_suite(root / "pipeline.yaml", corpus, {"recorded": {}, "hold_2": {"hold": "2"}})
        output = root / "out"
        run = lockstep_test(ros, suite, output, "--jobs", "2", expect_rc=1)
        _RUNS.update(corpus=corpus, suite=suite, output=output, run=run)
    return _RUNS


def test_recorded_modules_pass_and_a_changed_hold_fails_exactly_its_channels(ros, tmp_path_factory):
    runs = corpus_run(ros, tmp_path_factory)
    output, run = runs["output"], runs["run"]
    got = reports(output)
    assert len(got) == 12, sorted(got)
    junit = junit_cases(output)
    assert len(junit) == 12
    summary = json.loads((output / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errors"]) == (6, 6, 0), summary
    for name, report in got.items():
        assert report["error"] is None, (name, report["error"])
        assert (output / "cases" / name / "differences.png").stat().st_size > 0
        if name.endswith("__recorded"):
            assert report["passed"], (name, report["failures"])
            assert all(c["identical"] == c["compared"] > 0 for c in report["channels"].values()), report
            assert junit[name].find("failure") is None
        else:
            assert not report["passed"], name
            failing = {c for c, r in report["channels"].items() if not r["passed"]}
            assert failing and failing <= CHANGED_BY_HOLD, (name, failing)
            assert report["channels"]["/obstacles"]["passed"], report["channels"]["/obstacles"]
            failure = junit[name].find("failure")
            assert failure is not None, name
            first = report["channels"][sorted(failing)[0]]["first_difference"]
            assert first["field"], first
            assert f"frame #{first['sequence_num']} of {first['module']}" in failure.get("message"), \
                failure.get("message")
            assert first["field"] in failure.get("message")
    assert "6 of 12 cases passed (6 failed, 0 could not run)" in run.stdout, run.stdout
    html = (output / "summary.html").read_text()
    assert html.count("FAILED") == 6 and "cases/run_1__hold_2/differences.png" in html


def test_a_tolerance_that_admits_the_difference_passes(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    hold_2 = reports(runs["output"])["run_1__hold_2"]
    failing = sorted(c for c, r in hold_2["channels"].items() if not r["passed"])
    # Every field that differed, within a tolerance just above its largest difference.
    expect = {}
    for channel in failing:
        fields = hold_2["channels"][channel]["fields"]
        assert all(f["max_abs"] != "inf" for f in fields.values()), fields
        expect[channel] = {"fields": {k: {"abs_tol": f["max_abs"] * 1.01 + 1e-12} for k, f in fields.items()}}
    suite = write_suite(tmp_path / "tolerant.yaml", runs["corpus"][:1], {"hold_2": {"hold": "2"}}, expect=expect)
    lockstep_test(ros, suite, tmp_path / "out", expect_rc=0)
    # Half the largest difference is not enough.
    for channel in failing:
        for k in expect[channel]["fields"]:
            expect[channel]["fields"][k]["abs_tol"] = hold_2["channels"][channel]["fields"][k]["max_abs"] / 2
    suite = write_suite(tmp_path / "strict.yaml", runs["corpus"][:1], {"hold_2": {"hold": "2"}}, expect=expect)
    lockstep_test(ros, suite, tmp_path / "out2", expect_rc=1)


def test_an_assertion_that_fires_fails_the_case_with_its_rows(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    recorded = reports(runs["output"])["run_1__recorded"]
    commands = recorded["channels"]["/cmd_vel"]["compared"]
    rules = 'violation(T, V) :- cmd_vel(T, "linear.x", V), V > -1000000.0.\n'
    suite = write_suite(tmp_path / "asserting.yaml", runs["corpus"][:1], {"recorded": {}}, assert_rules=rules)
    run = lockstep_test(ros, suite, tmp_path / "out", expect_rc=1)
    report = reports(tmp_path / "out")["run_1__recorded"]
    assert len(report["violations"]) == commands, (commands, report["violations"][:3])
    assert all(v.startswith("violation(") for v in report["violations"])
    assert report["failures"] == [f"{commands} assertion violations: " + ", ".join(report["violations"][:3])]
    assert all(c["passed"] for c in report["channels"].values())
    assert "assertion violations" in run.stdout
    # A rule that never fires passes.
    quiet = 'violation(T, V) :- cmd_vel(T, "linear.x", V), V > 1000000.0.\n'
    suite = write_suite(tmp_path / "quiet.yaml", runs["corpus"][:1], {"recorded": {}}, assert_rules=quiet)
    lockstep_test(ros, suite, tmp_path / "out2", expect_rc=0)


def test_ab_against_an_earlier_run_passes_for_unchanged_modules(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    # The hold-2 modules against the hold-2 run: the same version, so every output matches.
    args = ["--baseline", str(runs["output"]), "--filter", "run_[12]__hold_2"]
    run = lockstep_test(ros, runs["suite"], tmp_path / "ab", *args, expect_rc=0)
    got = reports(tmp_path / "ab")
    assert sorted(got) == ["run_1__hold_2", "run_2__hold_2"], run.stdout
    for report in got.values():
        assert report["baseline"].startswith(str(runs["output"])), report["baseline"]
        assert all(c["identical"] == c["compared"] > 0 for c in report["channels"].values())
    # The recorded modules against the hold-2 run differ where hold matters.
    suite = write_suite(tmp_path / "ab.yaml", runs["corpus"][:1], {"hold_2": {}})
    run = lockstep_test(ros, suite, tmp_path / "ab2", "--baseline", str(runs["output"]), expect_rc=1)
    assert not reports(tmp_path / "ab2")["run_1__hold_2"]["passed"]


def test_jobs_1_gives_what_jobs_2_gave(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    lockstep_test(ros, runs["suite"], tmp_path / "serial", "--jobs", "1", "--filter", "run_[12]__*", expect_rc=1)
    serial = reports(tmp_path / "serial")
    parallel = reports(runs["output"])
    assert sorted(serial) == ["run_1__hold_2", "run_1__recorded", "run_2__hold_2", "run_2__recorded"]
    for name, report in serial.items():
        a, b = dict(report), dict(parallel[name])
        for r in (a, b):
            r.pop("timings")
        assert a == b, name


def test_bad_suites_and_launch_files_are_one_line_errors_and_nothing_passes(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"recordings: [{runs['corpus'][0]}]\nmodules: {{launch: {REPLAY_LAUNCH}}}\n"
                   "expect: {/cmd_vel: {abs_tol: -1}}\n")
    run = lockstep_test(ros, bad, tmp_path / "o1", expect_rc=2)
    assert run.stderr.strip().count("\n") == 0 and "bad.yaml: expect./cmd_vel.abs_tol: -1 is out of range" \
        in run.stderr, run.stderr
    assert not (tmp_path / "o1").exists()
    nothing = tmp_path / "nothing.yaml"
    nothing.write_text(f"recordings: [{tmp_path}/no_such_corpus/*]\nmodules: {{launch: {REPLAY_LAUNCH}}}\n")
    run = lockstep_test(ros, nothing, tmp_path / "o2", expect_rc=2)
    assert "recordings[0]: " in run.stderr and "matches no recording" in run.stderr, run.stderr
    assert run.stderr.strip().count("\n") == 0
    # A launch file that starts no module: the case could not run, and says why.
    empty = tmp_path / "empty.launch.xml"
    empty.write_text("<launch>\n  <arg name=\"hold\" default=\"3\"/>\n</launch>\n")
    suite = write_suite(tmp_path / "nomodules.yaml", runs["corpus"][:1], {"recorded": {}}, launch=empty)
    run = lockstep_test(ros, suite, tmp_path / "o3", expect_rc=1)
    report = reports(tmp_path / "o3")["run_1__recorded"]
    assert not report["passed"] and report["error"], report
    assert "launch" in report["error"] or "step service" in report["error"], report["error"]
    summary = json.loads((tmp_path / "o3" / "summary.json").read_text())
    assert (summary["passed"], summary["errors"]) == (0, 1)
    error = junit_cases(tmp_path / "o3")["run_1__recorded"].find("error")
    assert error is not None and error.get("message") == report["error"]
    assert "0 of 1 cases passed (0 failed, 1 could not run)" in run.stdout
    assert "(see cases/run_1__recorded/launch.log)" in report["error"], report["error"]
    # Modules started without step mode: the replay finds no step service and the case says so.
    suite = write_suite(tmp_path / "nostep.yaml", runs["corpus"][:1], {"recorded": {}},
                        launch=REPLAY_LAUNCH.parent / "pipeline.launch.xml", extra="replay: {discovery_s: 5}\n")
    run = lockstep_test(ros, suite, tmp_path / "o4", expect_rc=1)
    report = reports(tmp_path / "o4")["run_1__recorded"]
    assert not report["passed"] and "lockstep_step_mode:=true" in report["error"], report["error"]
    assert "0 of 1 cases passed (0 failed, 1 could not run)" in run.stdout
    # A non-empty output folder is refused before anything runs.
    run = lockstep_test(ros, suite, tmp_path / "o3", expect_rc=2)
    assert "exists and is not empty" in run.stderr
