"""What a lock-step replay of unmodified nodes tells when it cannot be exact: a recording that starts
mid-run (backup inputs stand in for what the recording lacks), a node that reads the wall clock (its outputs
differ from the first one, named with the event that preceded it), and `--repeat` naming the node whose
outputs differ between runs."""

import sys

from std_msgs.msg import Float64

from lockstep_interfaces.msg import RecorderStatus
from lockstep_testing.harness import reliable
from test_replay_unmodified import recording, replay, start_replayed
from traced import NODES, cut, topic_times

WAIT_SECS = 120


def test_a_recording_that_starts_mid_run_replays_with_backup_inputs(ros, tmp_path, tmp_path_factory):
    bag = recording(ros, tmp_path_factory)
    # The cut falls 2/5 into the recording, just after an /odom and at the /raw that follows it: fusion's
    # next output uses that /odom (its state), which the cut recording lacks.
    messages = topic_times(bag)
    odom = next(i for i in range(len(messages) * 2 // 5, len(messages)) if messages[i][1] == "/odom")
    start = next(t for t, topic in messages[odom + 1:] if topic == "/raw")
    late = cut(bag, tmp_path / "late.mcap", keep=lambda t: t >= start)
    nodes = start_replayed(ros, name="late")
    _, report = replay(ros, late, tmp_path / "late_replay")
    for name, c in report["channels"].items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)
    assert report["frames_replayed"] > 0
    assert report["frames_selected"] == report["frames_replayed"] + len(report["frames_skipped"])
    assert sum(report["backup_inputs"].values()) > 0 or report["frames_skipped"], report
    assert nodes.stop(timeout=60) == 0, nodes.log()


def written(status: list, topic: str) -> int:
    return next((t.messages for t in status[-1].topics if t.topic == topic), 0) if status else 0


def test_a_node_reading_the_wall_clock_diverges_and_repeat_names_it(ros, tmp_path):
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    bag = tmp_path / "wall"
    recorder = ros.start("lockstep", "bag", "record", "-a", "-o", str(bag), name="record")
    traced = [ros.start("lockstep", "trace", "--", sys.executable, str(NODES / script), name=name)
              for script, name in (("filter_node.py", "filter"), ("wallclock_node.py", "wallclock"))]
    raw = ros.publisher(Float64, "/raw", reliable())
    ros.wait_for_matched(raw, count=3, timeout=WAIT_SECS)
    topics = ["/filtered/lockstep_header", "/stamped/lockstep_header"]
    k = iter(range(1_000_000))
    ros.wait_until(lambda: raw.publish(Float64(data=float(next(k)))) or
                   all(written(status, t) >= 10 for t in topics), WAIT_SECS, "ten outputs of each node", recorder)
    for proc in (*traced, recorder):
        assert proc.stop(timeout=60) == 0, proc.log()

    live = [ros.start("lockstep", "trace", "--replay", "--", sys.executable, str(NODES / script), name=name)
            for script, name in (("filter_node.py", "filter_r"), ("wallclock_node.py", "wallclock_r"))]
    _, report = replay(ros, bag, tmp_path / "out", "--repeat", "2")
    stamped, filtered = report["channels"]["/stamped"], report["channels"]["/filtered"]
    assert filtered["exact"] == filtered["simulated"] > 0, filtered
    assert stamped["exact"] == 0 and stamped["simulated"] >= 10, stamped
    first = stamped["first_difference"]
    assert first["module"] == "wallclock" and "the take of /raw" in first["event"], first
    repeat = report["repeat"]
    assert repeat["runs"] == 2 and not repeat["deterministic"], repeat
    assert [d["module"] for d in repeat["nondeterministic"]] == ["wallclock"], repeat
    for proc in live:
        assert proc.stop(timeout=60) == 0, proc.log()


def test_a_node_recorded_with_a_multi_threaded_executor_is_refused(ros, tmp_path):
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    bag = tmp_path / "threads"
    recorder = ros.start("lockstep", "bag", "record", "-a", "-o", str(bag), name="record")
    node = ros.start("lockstep", "trace", "--", sys.executable, str(NODES / "multithreaded_node.py"), name="echo")
    raw = ros.publisher(Float64, "/raw", reliable(depth=1000))
    raw2 = ros.publisher(Float64, "/raw2", reliable(depth=1000))
    ros.wait_for_matched(raw, count=2, timeout=WAIT_SECS)
    ros.wait_for_matched(raw2, count=2, timeout=WAIT_SECS)

    def burst() -> bool:
        for i in range(50):
            raw.publish(Float64(data=float(i)))
            raw2.publish(Float64(data=float(-i)))
        return "several threads" in node.log() and written(status, "/echo/lockstep_header") > 0

    ros.wait_until(burst, WAIT_SECS, "callbacks on several threads, recorded", node)
    for proc in (node, recorder):
        assert proc.stop(timeout=60) == 0, proc.log()
    replayed = ros.start("lockstep", "trace", "--replay", "--", sys.executable,
                         str(NODES / "multithreaded_node.py"), name="echo_r")
    run, _ = replay(ros, bag, tmp_path / "out", expect_ok=False)
    assert "single-threaded executor" in run.stderr and "--allow-nondeterministic" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) <= 2, run.stderr
    assert replayed.stop(timeout=60) == 0, replayed.log()
