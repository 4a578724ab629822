"""Lock-step replay over DDS, the example pipeline (m1, m2, m3): frames/s and orchestration overhead per frame
(goal <= 2 ms: wall time per frame minus the modules' own computing time, as report.json's timing says); the
DDS limit measured in the same run, what one step costs when nothing but DDS works (a service call plus the
delivery of the module's output, between a trivial module that answers at once and a caller that does nothing
else: lockstep_replay_node's example `lockstep_step_limit`), and the replay's time per frame as a multiple of
that limit (goal <= 2x); and the alignment table: recorded frames of m1 and m2 reproduced with exactly the
recorded inputs, lock-step against timed playback (`lockstep bag play`) at rates 1, 2 and 5, same bag, same
modules, measured the same way (test/lockstep_testing/alignment.py). Run by scripts/bench/lockstep.sh
(release build)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "trace")]

from lockstep_testing import alignment  # noqa: E402
from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary  # noqa: E402
from test_lockstep_replay import start_step_modules, stop  # noqa: E402
from test_pipeline import HOLD  # noqa: E402
from test_pipeline_recording import record_pipeline  # noqa: E402

MODULES = {"lockstep_module_m1": "/obstacle_fusion/lockstep/step", "lockstep_module_m2":
           "/motion_controller/lockstep/step", "lockstep_module_m3": "/mission_planner/lockstep/step"}


def lockstep(ros, bag: Path, out: Path) -> dict:
    procs = start_step_modules(ros)  # m1, m2, m3 in step mode, no simulated processing time
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "replay", str(bag), "--output", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=600, env=ros.env)
    assert run.returncode == 0, run.stderr
    stop(procs)
    return json.loads((out / "report.json").read_text())


def step_limit(ros, steps: int) -> dict:
    """The DDS limit of one step: `lockstep_step_limit serve` (the trivial module) stepped `steps` times by
    `lockstep_step_limit call`, on this run's domain; its JSON timing."""
    module = ros.start("examples/lockstep_step_limit", "serve", name="step_limit_module")
    run = subprocess.run([str(binary("examples/lockstep_step_limit")), "call", str(steps), "200"],
                         capture_output=True, text=True, timeout=600, env=ros.env)
    assert run.returncode == 0, run.stderr
    # The module leaves by itself once its caller is gone; stop() only makes sure.
    module.stop()
    return json.loads(run.stdout.strip().splitlines()[-1])


def module_step(ros, steps: int) -> dict:
    """Where the rest goes: the same tight caller stepping a real module in step mode that needs no input
    (mission_planner, no simulated processing time), timing its service call; its JSON timing."""
    module = ros.start("lockstep_module_m3", params={"lockstep_step_mode": True, "processing_delay_ms": 0,
                                                      "hold": HOLD})
    ros.wait_until(lambda: any(n == MODULES["lockstep_module_m3"] for n, _ in ros.node.get_service_names_and_types()),
                   20, "the step service of mission_planner")
    run = subprocess.run([str(binary("examples/lockstep_step_limit")), "call-module", "mission_planner", "/mission",
                          str(steps), "200"], capture_output=True, text=True, timeout=600, env=ros.env)
    assert run.returncode == 0, run.stderr
    assert module.stop() == 0, module.log()
    return json.loads(run.stdout.strip().splitlines()[-1])


def replay_case(ros, tmp: Path, ticks: int) -> tuple[Path, dict]:
    """Record the pipeline for `ticks` sensor ticks and replay it in lock-step; the bag and report.json."""
    bag = tmp / f"bag{ticks}"
    print(f"recording the example pipeline ({ticks} sensor ticks) ...", flush=True)
    record_pipeline(ros, bag, ticks=ticks)
    report = lockstep(ros, bag, tmp / f"lockstep{ticks}")
    timing = report["timing"]
    print(f"lock-step over DDS: {report['frames_replayed']} frames in {timing['wall_s']:.2f} s = "
          f"{timing['frames_per_s']:.0f} frames/s; orchestration overhead "
          f"{timing['overhead_per_frame_ms']:.3f} ms/frame (goal <= 2 ms)")
    return bag, report


def alignment_rows(ros, tmp: Path, bag: Path, report: dict, ticks: int) -> None:
    recorded = alignment.replayable(alignment.recorded_headers(bag), report)
    rows = [("lock-step", alignment.alignment_table(recorded, alignment.recorded_headers(tmp / f"lockstep{ticks}")))]
    for rate in (1.0, 2.0, 5.0):
        rows.append((f"timed playback, rate {rate:g}",
                     alignment.alignment_table(recorded, alignment.timed_playback(ros, bag, rate))))
    print("\nframes reproduced with exactly the recorded inputs (m1 /obstacles, m2 /cmd_vel):")
    print(f"{'replay':<26} {'/obstacles':>18} {'/cmd_vel':>18}")
    for name, table in rows:
        cells = [f"{h}/{t} {100.0 * h / max(t, 1):5.1f} %" for h, t in (table[c] for c in alignment.OUTPUTS)]
        print(f"{name:<26} {cells[0]:>18} {cells[1]:>18}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ticks", type=int, default=400, help="sensor ticks recorded (20 ms each)")
    parser.add_argument("--ticks-list", help="comma-separated recording lengths in sensor ticks (at most 590: the "
                        "test sensors' rear range passes its max_range after that), replayed one after the other "
                        "against one limit measurement (scaling); no alignment table")
    parser.add_argument("--limit-steps", type=int, default=2000, help="steps timed for the DDS limit")
    parser.add_argument("--markdown", type=Path, help="append the summary table to this Markdown file")
    args = parser.parse_args()
    os.environ.setdefault("LOCKSTEP_PROFILE", "release")
    os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))
    sizes = [int(t) for t in args.ticks_list.split(",")] if args.ticks_list else [args.ticks]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            cases = [(ticks, *replay_case(ros, tmp, ticks)) for ticks in sizes]
            limit = step_limit(ros, args.limit_steps)
            print(f"DDS limit, trivial module ({limit['steps']} steps): a service call plus the output's delivery "
                  f"{limit['step_mean_us']:.0f} us/step (p50 {limit['step_p50_us']:.0f}, p99 "
                  f"{limit['step_p99_us']:.0f}; the service call alone {limit['service_call_mean_us']:.0f} us) = "
                  f"{limit['steps_per_s']:.0f} steps/s")
            table = []
            for ticks, _bag, report in cases:
                timing = report["timing"]
                ours_us = 1e6 / timing["frames_per_s"]
                ratio = ours_us / limit["step_mean_us"]
                print(f"{ticks} ticks: lock-step per frame {ours_us:.0f} us = {ratio:.1f}x the limit (goal <= 2x)")
                table.append(f"| {ticks} ticks, {report['frames_replayed']} frames | {timing['frames_per_s']:.0f} | "
                             f"{ours_us:.0f} | {timing['overhead_per_frame_ms']:.3f} | {ratio:.1f}x |")
            module_us = module_step(ros, args.limit_steps)["service_call_mean_us"]
            print(f"  a real module's own share: mission_planner stepped by the same caller {module_us:.0f} us/step "
                  f"({module_us / limit['step_mean_us']:.1f}x the limit); the rest of the frame is the replay's")
            if not args.ticks_list:
                ticks, bag, report = cases[0]
                alignment_rows(ros, tmp, bag, report, ticks)
            if args.markdown:
                with args.markdown.open("a") as f:
                    f.write("\n### Lock-step replay over DDS, example pipeline (m1/m2/m3 in step mode, no simulated "
                            f"processing time); limit: a trivial step server called in a tight loop, "
                            f"{limit['step_mean_us']:.0f} us per step (p99 {limit['step_p99_us']:.0f}); a real "
                            f"module (mission_planner) stepped the same way {module_us:.0f} us\n\n"
                            "| recording | frames/s | us per frame | orchestration ms/frame | per frame / limit "
                            "(goal <= 2x) |\n|---|---|---|---|---|\n" + "\n".join(table) + "\n")
        finally:
            ros.close(print_logs=False)

if __name__ == "__main__":
    main()
