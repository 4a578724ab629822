"""The story through the shipped launch files, as a user without `ros2 launch` runs it: system.launch.xml
(the simulator feeding the example pipeline's range sensors and odometry, the recorder recording), then
replay_system.launch.xml replay:=true on that bag: every recorded output of the pipeline is reproduced in
lock-step, and the launch ends by itself when the replay does (on_exit="shutdown" stops the modules)."""

from __future__ import annotations

import json

from lockstep_interfaces.msg import RecorderStatus

from lockstep_testing.harness import REPO_ROOT

LAUNCH_DIR = REPO_ROOT / "launch"


def test_a_system_launch_recording_replays_in_lock_step_through_replay_system(ros, tmp_path):
    bag, replayed = tmp_path / "run", tmp_path / "run_sim"
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    system = ros.start("lockstep", "launch", str(LAUNCH_DIR / "system.launch.xml"), f"recorder_output:={bag}",
                       "--color", "never", "--log-dir", str(tmp_path / "system-logs"), name="system")
    # The pipeline runs on the simulator's sensors: m2's commands come out (m1 fused the ranges, m3 planned),
    # and the recorder has written 40 of them (its own count: what this test's subscriber got may differ).
    def cmd_vel_written() -> int:
        topics = status[-1].topics if status else []
        return next((t.messages for t in topics if t.topic == "/cmd_vel"), 0)
    ros.wait_until(lambda: cmd_vel_written() >= 40, timeout=180, proc=system,
                   what="40 /cmd_vel messages from the pipeline fed by the simulator written by the recorder")
    assert system.stop(timeout=20) == 0, system.log()[-3000:]

    replay = ros.start("lockstep", "launch", str(LAUNCH_DIR / "replay_system.launch.xml"), "replay:=true",
                       f"bag:={bag}", f"output:={replayed}", "--color", "never",
                       "--log-dir", str(tmp_path / "replay-logs"), name="replay_system")
    ros.wait_until(lambda: not replay.alive(), timeout=300, proc=None, what="the replay launch to end by itself")
    replay.stopped = True
    log = replay.log()
    assert replay.popen.returncode == 0, log[-3000:]
    assert 'lockstep_replay ended (exit code 0) and has on_exit="shutdown"' in log, log[-3000:]
    report = json.loads((replayed / "report.json").read_text())
    channels = report["channels"]
    assert set(channels) == {"/obstacles", "/cmd_vel", "/mission"}, channels.keys()
    # The recording starts complete: lockstep launch starts the modules that read once the recorder records
    # their inputs (test_recording_starts_complete.py), so no frame misses an input at the start. Only the stop
    # can cut a frame off at the end: an output whose header the recorder did not take before it ended, and
    # what was computed from it.
    skipped = report["frames_skipped"]
    assert all("has no dependency header in the bag" in frame["reason"]
               or "was not simulated (its frame was skipped or precedes the recording)" in frame["reason"]
               for frame in skipped), skipped
    for name in channels:
        seqs = sorted(f["sequence_num"] for f in skipped if f["channel"] == name and f["sequence_num"] is not None)
        assert not seqs or seqs[0] >= channels[name]["recorded"] - 3, (name, seqs, channels[name])
    for name, channel in channels.items():
        skipped_here = sum(1 for frame in skipped if frame["channel"] == name)
        assert channel["recorded"] > 0, (name, channel)
        assert channel["exact"] == channel["simulated"] == channel["recorded"] - skipped_here, (name, channel)
    assert channels["/cmd_vel"]["recorded"] >= 40
