"""`lockstep report <dir>` on the folders the tools themselves write, not only the demo's: a lock-step replay's
(`lockstep replay --in-process` of a short recording of the example pipeline) and a calibration's (`lockstep
calibrate` of a short recording of the simulator's mixed drive) render into report.html with their key
figures and their plot; a folder that is neither is refused with one line saying what was expected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from geometry_msgs.msg import PoseWithCovarianceStamped
from rclpy.serialization import deserialize_message

from demo_support import Page
from lockstep_testing.harness import REPO_ROOT, binary, reliable

sys.path[:0] = [str(REPO_ROOT / "test" / "trace"), str(REPO_ROOT / "test" / "calibrator")]

from calibrator_support import SIM, sim_params  # noqa: E402
from test_pipeline import HOLD  # noqa: E402
from test_pipeline_recording import record_pipeline  # noqa: E402

EXPECTED = ("not a Lockstep output folder (expected report.json from the demo or lockstep replay, or "
            "calibration.yaml from lockstep calibrate)")


def lockstep(*args: str, timeout: float = 180.0) -> subprocess.CompletedProcess:
    exe = os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep"))
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)


def report(folder: Path) -> tuple[str, Page]:
    """`lockstep report <folder>`, which must succeed; report.html's text and its parsed figures."""
    run = lockstep("report", str(folder))
    assert run.returncode == 0, run.stderr
    html = (folder / "report.html").read_text()
    assert "http://" not in html and "https://" not in html, "report.html must be self-contained"
    return html, Page(html)


def figures_table(page: Page) -> dict[str, list[str]]:
    """The key figures table: first cell -> the rest of its row (header row left out)."""
    return {row[0]: row[1:] for row in page.rows[1:]}


def test_a_lockstep_replay_folder_renders_its_figures_and_differences(ros, tmp_path):
    bag, out = tmp_path / "run", tmp_path / "replayed"
    record_pipeline(ros, bag, ticks=40)
    run = lockstep("replay", str(bag), "--output", str(out), "--in-process", "--quiet",
                   "--param", f"mission_planner.hold={HOLD}")
    assert run.returncode == 0, run.stderr
    written = json.loads((out / "report.json").read_text())
    html, page = report(out)
    assert "<h1>Lock-step replay report</h1>" in html
    table = figures_table(page)
    assert table["frames replayed"][0] == f"{written['frames_replayed']} of {written['frames_selected']} selected"
    exact = sum(c["exact"] for c in written["channels"].values())
    simulated = sum(c["simulated"] for c in written["channels"].values())
    assert simulated > 0 and exact == simulated, written["channels"]
    assert table["outputs equal to the recording"] == [f"{exact} of {simulated} (100.0 %)", "yes"], table
    assert table["channels that differ"][0] == "none", table
    for channel, c in written["channels"].items():
        assert f'<td class="path">{channel}</td><td>{c["exact"]} of {c["simulated"]} (100.0 %)</td>' in html, channel
    # The plot lockstep replay drew, inlined under its title.
    assert page.figures.keys() == {"replay_differences"}, page.figures
    assert page.figures["replay_differences"]["title"] == "Simulated against recorded outputs"
    assert html.count('src="data:image/png;base64,') == 1


def wait_for_simulated_s(ros, poses, seconds: float, proc) -> None:
    def reached() -> bool:
        if len(poses) < 2:
            return False
        first, last = (deserialize_message(poses[i], PoseWithCovarianceStamped).header.stamp for i in (0, -1))
        return (last.sec - first.sec) + (last.nanosec - first.nanosec) * 1e-9 >= seconds
    ros.wait_until(reached, 4 * seconds + 60, f"{seconds:.0f} simulated s of observed poses", proc=proc)


def test_a_calibration_folder_renders_its_parameters_figures_and_plot(ros, tmp_path):
    bag, out = tmp_path / "drive", tmp_path / "calibrated"
    recorder = ros.start("lockstep_recorder", params={
        "output": str(bag), "all_topics": False, "topics": "/cmd_vel_out,/odom,/slam_pose",
        "discovery_period_secs": 0.05})
    # The observed poses (20 a simulated second) tell how far the drive went.
    poses = ros.collect(PoseWithCovarianceStamped, "/slam_pose", reliable(depth=5000), raw=True)
    sim = ros.start(SIM, params=sim_params("mixed.drive", time_scale=8.0))
    wait_for_simulated_s(ros, poses, 40.0, sim)
    assert recorder.stop() == 0, recorder.log()
    sim.stop()
    run = lockstep("calibrate", str(bag), "--cmd-topic", "/cmd_vel_out", "--odom-topic", "/odom",
                   "--pose-topic", "/slam_pose", "--output", str(out), "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    text = (out / "calibration.yaml").read_text()
    vehicle = yaml.safe_load(text)["lockstep_sim_node"]["ros__parameters"]["nominal_vehicle"]
    html, page = report(out)
    assert "<h1>Motion model calibration report</h1>" in html
    # The calibrated parameters as the file has them.
    assert f"<td>wheel radius</td><td>{vehicle['wheel_radius_m']:.6f} m</td>" in html, html
    assert f"<td>track width</td><td>{vehicle['track_width_m']:.6f} m</td>" in html
    assert f"<td>delay</td><td>{vehicle['delay_secs']:.4f} s</td>" in html
    # The dead-reckoning error before and after, and the windows, as the file's statistics say.
    table = figures_table(page)
    line = next(l for l in text.splitlines() if "RMS distance to the observed poses" in l)
    nominal, calibrated = (line.split(f"{w} ")[1].split(" m")[0] for w in ("nominal", "calibrated"))
    error = table["dead-reckoning error (RMS distance to the observed poses)"]
    assert error[0].startswith(f"nominal {nominal} m -> calibrated {calibrated} m"), error
    windows = next(l for l in text.splitlines() if "windows:" in l).split("windows:")[1].strip()
    assert table["windows"][0] == windows, table
    assert page.figures.keys() == {"calibration"}, page.figures
    assert page.figures["calibration"]["title"] == "Dead reckoning before and after"
    assert html.count('src="data:image/png;base64,') == 1


def test_a_folder_no_tool_wrote_is_refused_in_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run = lockstep("report", str(empty))
    assert run.returncode != 0 and run.stdout == "", run
    assert run.stderr.splitlines() == [f"error: {empty}: {EXPECTED}"], run.stderr
    assert not (empty / "report.html").exists()
    # Missing, and a folder with other files only: the same one line (a missing one says so).
    run = lockstep("report", str(tmp_path / "nowhere"))
    assert run.returncode != 0 and len(run.stderr.splitlines()) == 1, run.stderr
    assert "no such folder; expected report.json" in run.stderr, run.stderr
    (empty / "notes.txt").write_text("x")
    run = lockstep("report", str(empty))
    assert run.returncode != 0 and run.stderr.splitlines() == [f"error: {empty}: {EXPECTED}"], run.stderr
