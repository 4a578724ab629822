"""`lockstep test` says what a pass did not check. A pipeline recording cut in the middle (the first frames
after the cut were computed from inputs the recording no longer holds) replays with frames skipped: each case
warns of them, naming the channel and how many, in its report.json, in summary.json and in the JUnit XML
(`<system-out>` and the `skipped_frames` property), and `--fail-on-skipped`, or the suite file's
`fail_on_skipped: true`, fails the case with the reason. A variant whose module parameter differs from the
recorded one is warned about the same way."""

import collections
import json
from pathlib import Path

import pytest
from mcap.reader import make_reader

from corpus import HOLD, shared_corpus
from lockstep_testing.recordings import copy_mcap
from test_lockstep_test import junit_cases, lockstep_test, reports, write_suite

pytestmark = pytest.mark.timeout(1500)


def cut_recording(bag: Path, dst: Path) -> Path:
    """A one-file copy of `bag` from an /obstacles output half-way through on: that output's inputs came before
    it, so at least its frame cannot be replayed, whatever the timing of the recording."""
    with open(sorted(bag.glob("*.mcap"))[0], "rb") as f:
        stamped = sorted((m.log_time, c.topic) for _, c, m in make_reader(f).iter_messages())
    half = stamped[len(stamped) // 2][0]
    middle = next(t for t, topic in stamped if topic == "/obstacles" and t >= half)
    dst.parent.mkdir(parents=True, exist_ok=True)
    return copy_mcap(bag, dst, keep=lambda topic, log_time, data: log_time >= middle)


def skipped_by_channel(output: Path, case: str) -> dict:
    """channel -> frames the replay skipped, from the replay's own report (not the case's)."""
    replay = json.loads((output / "cases" / case / "replay" / "report.json").read_text())
    return dict(collections.Counter(s["channel"] for s in replay["frames_skipped"]))


def test_skipped_frames_are_warned_everywhere_and_fail_the_case_when_asked(ros, tmp_path_factory, tmp_path):
    (bag,) = shared_corpus(ros, tmp_path_factory, 1)
    cut = cut_recording(bag, tmp_path / "recordings" / "cut.mcap")

    suite = write_suite(tmp_path / "cut.yaml", [cut], {"recorded": {}, "hold_2": {"hold": "2"}})
    output = tmp_path / "out"
    run = lockstep_test(ros, suite, output, "--jobs", "2")
    assert run.returncode in (0, 1), f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    got = reports(output)
    assert sorted(got) == ["cut__hold_2", "cut__recorded"], sorted(got)
    summary = {c["case"]: c for c in json.loads((output / "summary.json").read_text())["cases"]}
    junit = junit_cases(output)
    for name, report in got.items():
        assert report["error"] is None, (name, report["error"])
        skipped = skipped_by_channel(output, name)
        assert skipped, f"{name}: the cut recording replayed without skipping a frame"
        # The case report: each channel with skipped frames, its count, and a warning naming both.
        assert {s["channel"]: s["frames"] for s in report["skipped"]} == skipped, report["skipped"]
        for channel, frames in skipped.items():
            plural = "" if frames == 1 else "s"
            assert any(w.startswith(f"{frames} frame{plural} of {channel} (") and "could not be replayed" in w
                       for w in report["warnings"]), (channel, frames, report["warnings"])
            if channel in report["channels"]:
                assert report["channels"][channel]["skipped"] == frames, report["channels"][channel]
        # summary.json and the JUnit XML carry the same warnings.
        assert summary[name]["warnings"] == report["warnings"], summary[name]
        assert summary[name]["skipped_frames"] == sum(skipped.values())
        case = junit[name]
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert properties["skipped_frames"] == str(sum(skipped.values())), properties
        assert properties["warnings"] == str(len(report["warnings"])), properties
        system_out = case.find("system-out")
        assert system_out is not None, name
        assert system_out.text.splitlines() == [f"warning: {w}" for w in report["warnings"]], system_out.text
    # Skipped frames are warnings only: the recorded modules still pass.
    assert got["cut__recorded"]["passed"], got["cut__recorded"]["failures"]
    assert junit["cut__recorded"].find("failure") is None
    # The variant's hold differs from the recorded one: said in every report too.
    hold = f"parameter mission_planner hold: recorded integer:{HOLD}, live integer:2"
    assert hold in got["cut__hold_2"]["warnings"], got["cut__hold_2"]["warnings"]
    assert hold in summary["cut__hold_2"]["warnings"]
    assert f"warning: {hold}" in junit["cut__hold_2"].find("system-out").text
    assert {"module": "mission_planner", "parameter": "hold", "recorded": f"integer:{HOLD}",
            "live": "integer:2"} in got["cut__hold_2"]["parameter_differences"]
    assert not any(w.startswith("parameter mission_planner hold") for w in got["cut__recorded"]["warnings"])
    assert "cases have warnings" in run.stdout, run.stdout

    # --fail-on-skipped: the same case fails, with every skipped channel and its count as the reason.
    skipped = skipped_by_channel(output, "cut__recorded")
    total = sum(skipped.values())
    for args, extra, out in [(["--fail-on-skipped"], "", tmp_path / "strict_flag"),
                             ([], "replay: {fail_on_skipped: true}\n", tmp_path / "strict_key")]:
        strict = write_suite(tmp_path / f"{out.name}.yaml", [cut], {"recorded": {}}, extra=extra)
        run = lockstep_test(ros, strict, out, *args, expect_rc=1)
        report = reports(out)["cut__recorded"]
        assert not report["passed"] and report["error"] is None, report
        reason = report["failures"][-1]
        assert reason.startswith(f"fail_on_skipped: {total} frame"), (reason, skipped)
        for channel, frames in skipped_by_channel(out, "cut__recorded").items():
            assert f"{frames} of {channel} (" in reason, (channel, frames, reason)
        case = json.loads((out / "summary.json").read_text())["cases"][0]
        assert not case["passed"] and case["skipped_frames"] == total, case
        failure = junit_cases(out)["cut__recorded"].find("failure")
        assert failure is not None and reason in failure.get("message"), failure.attrib
        assert "fail_on_skipped" in run.stdout, run.stdout
