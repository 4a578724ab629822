"""`lockstep test` given hostile suites: a `recordings` glob over folders that link to themselves
(`maze/**/rec_*`: the glob walked the links without end, so `lockstep test` and `--list` never finished; now
symlinked folders are not followed by `**`, the walk is bounded, and the cases come back at once), and a
`baseline:` that is no earlier run's output (`/dev/null`, a file, a missing folder: each case used to fail
"could not run" with nothing on stderr; now the suite is refused before any case, exit 2, one line naming the
suite file and the key)."""

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BAG = REPO / "test/data/rosbag2/mcap/cdr_test/cdr_test_0.mcap"


def test_a_glob_over_a_folder_linking_to_itself_lists_each_recording_once(tmp_path):
    maze = tmp_path / "maze"
    (maze / "deep").mkdir(parents=True)
    shutil.copy(BAG, maze / "rec_1.mcap")
    shutil.copy(BAG, maze / "deep" / "rec_2.mcap")
    for link, target in (("a", "../maze"), ("b", "../maze"), ("deep/up", "..")):
        os.symlink(target, maze / link)
    suite = tmp_path / "suite.yaml"
    suite.write_text("recordings:\n  - maze/**/rec_*\nmodules:\n"
                     f"  launch: {REPO / 'launch/replay_system.launch.xml'}\n  variants:\n    base: {{}}\n")
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "test", str(suite), "--list"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    listed = sorted(line.split()[0] for line in run.stdout.splitlines() if line.strip())
    assert listed == ["rec_1__base", "rec_2__base"], run.stdout


def test_a_baseline_that_is_no_run_output_is_refused_before_any_case(tmp_path):
    shutil.copy(BAG, tmp_path / "rec_1.mcap")
    (tmp_path / "a_file").write_text("x")
    for baseline in ("/dev/null", str(tmp_path / "a_file"), str(tmp_path / "missing")):
        suite = tmp_path / "suite.yaml"
        suite.write_text("recordings:\n  - rec_1.mcap\nmodules:\n"
                         f"  launch: {REPO / 'launch/replay_system.launch.xml'}\n  variants:\n    base: {{}}\n"
                         f"baseline: {baseline}\n")
        for extra in (["--list"], ["--output", str(tmp_path / "out"), "--quiet"]):
            run = subprocess.run([os.environ["LOCKSTEP_BIN"], "test", str(suite), *extra], capture_output=True,
                                 text=True, timeout=120)
            assert run.returncode == 2, (baseline, extra, run.stdout, run.stderr)
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and f"{suite}: baseline" in lines[0] and baseline in lines[0], run.stderr


def _suite_text(recordings: str, extra: str = "", variant: str = "base") -> str:
    return (f"recordings:\n  - {recordings}\nmodules:\n"
            f"  launch: {REPO / 'launch/replay_system.launch.xml'}\n  variants:\n    '{variant}': {{}}\n{extra}")


def _suite(tmp_path, recordings: str) -> Path:
    suite = tmp_path / "suite.yaml"
    suite.write_text(_suite_text(recordings))
    return suite


def _lockstep_test(suite: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.environ["LOCKSTEP_BIN"], "test", str(suite), *extra], capture_output=True, text=True,
                          timeout=300)


def test_a_case_that_cannot_run_says_why_on_stderr_naming_the_file_and_the_damage(tmp_path):
    cut = tmp_path / "rec_cut.mcap"
    cut.write_bytes(BAG.read_bytes()[:300])
    run = _lockstep_test(_suite(tmp_path, "rec_cut.mcap"), "--output", str(tmp_path / "out"), "--quiet")
    assert run.returncode == 1, (run.stdout, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    # The file is named once, and what is wrong with it comes with the reason the case could not run.
    assert lines[0].count(str(cut)) == 2 and "truncated at byte" in lines[0], lines[0]
    assert "1 could not run" in run.stdout, run.stdout


def test_suite_mistakes_are_refused_by_list_as_by_a_run(tmp_path):
    shutil.copy(BAG, tmp_path / "rec_1.mcap")
    os.mkfifo(tmp_path / "pipe.mcap")
    (tmp_path / "plots").mkdir()
    cases = [
        (_suite_text("/dev/*"), "recordings[0]: /dev/*: matches no recording"),
        (_suite_text("plots"), "recordings[0]: plots: matches no recording"),
        (_suite_text("pipe.mcap"), "is not a regular file"),
        (_suite_text("rec_1.mcap", variant=".."), "modules.variants...: a variant's name"),
        (_suite_text("rec_1.mcap", "replay:\n  frames: 5\n"), "replay.frames: `5` is neither"),
        (_suite_text("rec_1.mcap", "expect:\n  /out:\n    fields: {'': exact}\n"), "is not a field path"),
    ]
    suite = tmp_path / "suite.yaml"
    for text, expected in cases:
        for extra in (["--list"], ["--output", str(tmp_path / "out"), "--quiet"]):
            suite.write_text(text)
            run = _lockstep_test(suite, *extra)
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            assert run.returncode == 2 and len(lines) == 1 and expected in lines[0], (text, extra, run.stderr)
            assert not (tmp_path / "out").exists(), "nothing is written for a suite that is refused"
