"""Step overhead of the Python motion controller (`lockstep_module_m2_py`, an rclpy node on the Python library
lockstep_trace) against the Rust one (`lockstep_module_m2`), in lock-step replay over DDS: one recording of
the example pipeline (Rust m1, m2, m3), replayed by `lockstep replay` with live modules in step mode, the
motion controller being the Rust or the Python node in turn (rounds interleaved, same bag, same settings).

report.json gives, per replay, the wall time of the stepping (timing.wall_s), the frames replayed, and per
module its frames and its own processing time per frame as the module reports it in its step answer
(modules.<name>.simulated_process_time_ns: from the grant to the output, inside the module). It has no
figure for the service round trip of one module's steps, so each round also replays with the motion
controller not live (`--modules obstacle_fusion,mission_planner`: its recorded outputs are used, the other
modules are stepped the same way), and the motion controller's cost per step is the difference of the two
wall times divided by its frames: the service round trip of its steps plus the replay's own work for those
frames (publishing the step's odometry, comparing the output). Every replay must reproduce every channel
exactly (a benchmark of a wrong replay is worthless). Run by scripts/bench/step_overhead_py.sh (release
build of the Rust parts)."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "trace")]

from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary  # noqa: E402
from test_lockstep_replay import start_step_modules, stop  # noqa: E402
from test_pipeline import M1, M2, M3  # noqa: E402
from test_pipeline_recording import record_pipeline  # noqa: E402

# The motion controller's implementations, by label: the node to run (None: not live, recorded outputs used).
# Past this many ticks the recorded rear range reaches the sensor's max range and obstacle_fusion drops it.
MAX_TICKS = 600
IMPLEMENTATIONS = {"none (recorded)": None, "Rust": "lockstep_module_m2", "Python": "lockstep_module_m2_py"}


def replay(ros, bag: Path, out: Path, m2_binary: str | None) -> dict:
    """Replays `bag` over DDS with live Rust m1 and m3 and the motion controller `m2_binary` (or none) in
    step mode; report.json, after checking that every channel was reproduced exactly."""
    nodes = {M1: "lockstep_module_m1", M2: m2_binary, M3: "lockstep_module_m3"}
    live = [module for module, node in nodes.items() if node is not None]
    procs = start_step_modules(ros, modules=live, m2_binary=m2_binary or "lockstep_module_m2")
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "replay", str(bag), "--output", str(out), "--quiet",
                          "--modules", ",".join(live)], capture_output=True, text=True, timeout=600, env=ros.env)
    assert run.returncode == 0, run.stderr
    stop(procs)
    report = json.loads((out / "report.json").read_text())
    assert sorted(report["modules_not_live"]) == sorted(set(nodes) - set(live)), report["modules_not_live"]
    assert not report["frames_skipped"], report["frames_skipped"]
    assert report["channels"], "the replay simulated no channel"
    for channel, c in report["channels"].items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], \
            f"{m2_binary or 'no motion controller'}: {channel} reproduced {c['exact']} of {c['simulated']} exactly"
    if m2_binary is not None:
        assert report["modules"][M2]["frames"] > 0, report["modules"]
    return report


def median_range(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=500,
                        help=f"sensor ticks recorded (20 ms each), at most {MAX_TICKS}")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each replaying once per implementation")
    args = parser.parse_args()
    if not 2 <= args.ticks <= MAX_TICKS:
        parser.error(f"--ticks {args.ticks}: from 2 to {MAX_TICKS} (the recording's rear range readings grow "
                     f"with each tick and reach the sensor's max range after {MAX_TICKS})")
    os.environ.setdefault("LOCKSTEP_PROFILE", "release")
    os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))
    for node in filter(None, IMPLEMENTATIONS.values()):
        print(f"{node}: {binary(node)}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            bag = tmp / "bag"
            print(f"recording the example pipeline, Rust m1, m2, m3 ({args.ticks} sensor ticks) ...", flush=True)
            record_pipeline(ros, bag, ticks=args.ticks, m2_binary="lockstep_module_m2")
            reports: dict[str, list[dict]] = {label: [] for label in IMPLEMENTATIONS}
            for r in range(args.rounds):
                for label, node in IMPLEMENTATIONS.items():
                    report = replay(ros, bag, tmp / f"replay-{r}-{len(reports[label])}-{node}", node)
                    reports[label].append(report)
                    exact = ", ".join(f"{ch} {c['exact']}/{c['simulated']}" for ch, c in report["channels"].items())
                    print(f"round {r + 1}/{args.rounds}, motion controller {label}: {report['frames_replayed']} "
                          f"frames in {report['timing']['wall_s']:.3f} s; exact: {exact}", flush=True)
        finally:
            ros.close(print_logs=False)

    base = reports["none (recorded)"]
    rows = {}
    for label in ("Rust", "Python"):
        runs = reports[label]
        m2_frames = runs[0]["modules"][M2]["frames"]
        assert all(r["modules"][M2]["frames"] == m2_frames for r in runs)
        # Per round: the wall time the motion controller's frames added, per frame of it.
        step_ms = [(r["timing"]["wall_s"] - b["timing"]["wall_s"]) * 1e3 / m2_frames for r, b in zip(runs, base)]
        wall_ms = [r["timing"]["wall_s"] * 1e3 / r["frames_replayed"] for r in runs]
        own_ms = [r["modules"][M2]["simulated_process_time_ns"] / 1e6 for r in runs]
        rows[label] = (runs[0]["frames_replayed"], m2_frames, step_ms, wall_ms, own_ms)
    base_wall = [b["timing"]["wall_s"] * 1e3 / b["frames_replayed"] for b in base]

    print(f"\nlock-step replay over DDS, {args.rounds} rounds interleaved, release build, median (min-max) over "
          f"rounds; every channel reproduced exactly in every replay")
    header = (f"{'motion controller':<18} {'frames':>6} {'m2 frames':>9} {'ms per m2 step':>22} "
              f"{'m2 own ms/step':>22} {'wall ms per frame':>22}")
    print(header)
    print("-" * len(header))
    print(f"{'none (recorded)':<18} {base[0]['frames_replayed']:>6} {0:>9} {'-':>22} {'-':>22} "
          f"{median_range(base_wall, 3):>22}")
    for label, (frames, m2_frames, step_ms, wall_ms, own_ms) in rows.items():
        print(f"{label:<18} {frames:>6} {m2_frames:>9} {median_range(step_ms, 3):>22} "
              f"{median_range(own_ms, 3):>22} {median_range(wall_ms, 3):>22}")
    ratio = lambda i: statistics.median(rows["Python"][i]) / max(statistics.median(rows["Rust"][i]), 1e-9)  # noqa: E731
    print(f"{'Python/Rust':<18} {'':>6} {'':>9} {ratio(2):>21.1f}x {ratio(4):>21.1f}x {ratio(3):>21.2f}x")
    extra = [(p["timing"]["wall_s"] - r["timing"]["wall_s"]) * 1e3 / rows["Rust"][1]
             for p, r in zip(reports["Python"], reports["Rust"])]
    print(f"Python over Rust, same round: +{median_range(extra, 3)} ms per m2 step")
    print("\nms per m2 step: (wall time with the motion controller live - without it) / its frames, same round:"
          "\n  the service round trip of its steps plus the replay's work for those frames."
          "\nm2 own ms/step: the module's own time from grant to output, from its step answers"
          " (report.json modules.motion_controller.simulated_process_time_ns).")


if __name__ == "__main__":
    main()
