"""The documentation runs as typed: the README's quick start and the guide's path from recording to a suite as one
timed test (a new user's first hour), every other page with `bash run` blocks on its own. See docs_runner.py for
how a block is marked and run."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from docs_runner import REPO_ROOT, blocks, run_pages  # noqa: E402
from lockstep_testing.harness import allocate_domain_id, release_domain_id  # noqa: E402

# README -> quick start -> record your robot -> replay with your node -> write a suite: each page continues in
# the folder the one before left (its recordings, its outputs).
NEW_USER_PATH = [REPO_ROOT / "README.md", REPO_ROOT / "docs/record-your-robot.md",
                 REPO_ROOT / "docs/replay-with-your-node.md", REPO_ROOT / "docs/write-a-suite.md"]
# The reason of a frame whose output was recorded but not its header (the recording stopped between the two).
CUT_AT_THE_END = "has no dependency header in the bag"
PAGES = sorted(p for p in [REPO_ROOT / "README.md", *REPO_ROOT.glob("docs/**/*.md")] if blocks(p))
OTHER_PAGES = [p for p in PAGES if p not in NEW_USER_PATH]


@pytest.fixture
def env():
    domain = allocate_domain_id()
    try:
        yield {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    finally:
        release_domain_id(domain)


def test_a_new_users_path_runs_as_typed(tmp_path, env):
    start = time.monotonic()
    took = run_pages(NEW_USER_PATH, tmp_path / "work", env)
    print(f"\na new user's path in {time.monotonic() - start:.0f} s: "
          + ", ".join(f"{p.relative_to(REPO_ROOT)} {s:.0f} s" for p, s in took))
    work = tmp_path / "work"
    # What the quick start says the replay shows: every frame replayed, every channel equal to the recording.
    # (Ctrl-C may stop a module between an output and its header: such a last frame is all that may be missing.)
    report = json.loads((work / "run1_sim/report.json").read_text())
    skipped = report["frames_skipped"]
    assert report["frames_replayed"] > 0 and all(CUT_AT_THE_END in f["reason"] for f in skipped), skipped
    assert len(skipped) <= len(report["channels"]), skipped
    for channel, result in report["channels"].items():
        missing = sum(1 for f in skipped if f["channel"] == channel)
        assert result["exact"] == result["simulated"] == result["recorded"] - missing > 0, (channel, result)
    # The suite page's outcomes: the recorded variant passed, written to the JUnit path it names; run1 (recorded
    # by the launch file that starts the recorder first) with no warning, run2 (a recording joining a running
    # system) with none but frames that could not be replayed, as the page says.
    cases = {c["case"]: c for c in json.loads((work / "suite_run/summary.json").read_text())["cases"]}
    assert set(cases) == {"run1__as_recorded", "run2__as_recorded"}, cases
    assert all(c["passed"] for c in cases.values()), cases
    assert all(CUT_AT_THE_END in w for w in cases["run1__as_recorded"]["warnings"]), cases
    assert all("could not be replayed" in w for w in cases["run2__as_recorded"]["warnings"]), cases
    assert (work / "results/junit.xml").is_file()


@pytest.mark.parametrize("page", OTHER_PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in OTHER_PAGES])
def test_page_runs_as_typed(page, tmp_path, env):
    run_pages([page], tmp_path / "work", env)


def test_the_path_pages_have_runnable_blocks():
    assert all(blocks(p) for p in NEW_USER_PATH), [p for p in NEW_USER_PATH if not blocks(p)]
