"""Lock-step replay of unmodified rclpy nodes: the three nodes of test/intercept/nodes/pipeline.launch.xml
(filter, fusion, controller: plain rclpy, no Lockstep code) recorded under `lockstep launch --trace` with
`lockstep bag record -a`, then replayed by `lockstep replay` with the same launch file under `--trace-replay`.

Figures, all in this run on this machine:
- events reproduced per second and the wall time of one event (every message taken, timer fired: what the
  replay grants one at a time), from report.json (unmodified_nodes.events_granted, timing.wall_s);
- the DDS limit of one step: `lockstep_step_limit` (a trivial step server called in a tight loop: a service
  call plus the output's delivery), and one event as a multiple of it;
- the instrumented Python module: `scripts/bench/step_overhead_py.py` (the Python motion controller on the
  lockstep_trace library, stepped by the same replay), its per-step cost in the same run;
- the alignment table: recorded outputs of /filtered, /fused and /cmd reproduced with exactly the recorded
  inputs (the digests their headers name), lock-step against `lockstep bag play --rate 1` and `--rate 5` of
  /raw and /odom with the nodes running free under `lockstep trace` (their inferred headers name what they
  really took).
Every lock-step replay must reproduce every channel exactly (a benchmark of a wrong replay is worthless)."""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "intercept"), str(REPO / "scripts" / "bench")]

from lockstep_testing.alignment import aligned  # noqa: E402
from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary  # noqa: E402
from lockstep_bench import step_limit  # noqa: E402
from test_record_unmodified import GAIN, OUTPUTS, record_pipeline  # noqa: E402
from traced import NODES, Recording  # noqa: E402

from lockstep_interfaces.msg import DependencyHeader  # noqa: E402

CHANNELS = sorted(OUTPUTS.values())


def lockstep(ros, bag: Path, out: Path) -> dict:
    nodes = ros.start("lockstep", "launch", str(NODES / "pipeline.launch.xml"), "--trace-replay", f"gain:={GAIN}",
                      name="replayed")
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "replay", str(bag), "--output", str(out), "--quiet",
                          "--discovery-ms", "60000"], capture_output=True, text=True, timeout=1200, env=ros.env)
    assert run.returncode == 0, run.stderr
    assert nodes.stop(timeout=60) == 0, nodes.log()
    report = json.loads((out / "report.json").read_text())
    for channel, c in report["channels"].items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (channel, c)
    return report


def timed_playback(ros, bag: Path, rate: float) -> dict:
    """The nodes running free under `lockstep trace`, /raw and /odom played at `rate`; the headers of their
    outputs as an rclpy subscriber receives them."""
    live = {c: ros.collect(DependencyHeader, f"{c}/lockstep_header") for c in CHANNELS}
    nodes = ros.start("lockstep", "launch", str(NODES / "pipeline.launch.xml"), "--trace", f"gain:={GAIN}",
                      name=f"free_{rate:g}")
    for topic in ("/raw", "/odom"):
        ros.wait_until(lambda t=topic: ros.node.count_subscribers(t) >= 1, 60, f"a subscriber on {topic}", nodes)
    for c in CHANNELS:
        ros.wait_until(lambda c=c: ros.node.count_publishers(f"{c}/lockstep_header") >= 1, 60,
                       f"the header publisher of {c}", nodes)
    play = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "play", str(bag), "--rate", str(rate), "--quiet",
                           "--wait-for-subscribers", "1", "--topics", "/raw", "/odom"],
                          capture_output=True, text=True, timeout=1200, env=ros.env)
    assert play.returncode == 0, play.stderr
    assert nodes.stop(timeout=60) == 0, nodes.log()
    return live


def python_module_step_us(ticks: int) -> str:
    """The instrumented Python module's cost per step, as scripts/bench/step_overhead_py.py prints it."""
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "bench" / "step_overhead_py.py"), "--ticks",
                          str(ticks), "--rounds", "1"], capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr
    return "\n".join("    " + line for line in run.stdout.strip().splitlines()[-4:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=300, help="/raw messages recorded (20 per second)")
    parser.add_argument("--limit-steps", type=int, default=2000, help="steps timed for the DDS limit")
    parser.add_argument("--python-ticks", type=int, default=200, help="ticks of the Python module's recording")
    parser.add_argument("--markdown", type=Path, help="append the summary to this Markdown file")
    args = parser.parse_args()
    os.environ.setdefault("LOCKSTEP_PROFILE", "release")
    os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            bag = tmp / "bag"
            print(f"recording the unmodified pipeline ({args.messages} /raw messages) ...", flush=True)
            record_pipeline(ros, bag, messages=args.messages)
            report = lockstep(ros, bag, tmp / "lockstep")
            events = sum(report["unmodified_nodes"]["events_granted"].values())
            wall = report["timing"]["wall_s"]
            event_us = 1e6 * wall / max(events, 1)
            print(f"lock-step, unmodified nodes: {report['frames_replayed']} outputs, {events} events in {wall:.2f} s "
                  f"= {events / wall:.0f} events/s, {event_us:.0f} us per event")
            limit = step_limit(ros, args.limit_steps)
            ratio = event_us / limit["step_mean_us"]
            print(f"DDS limit, trivial module: {limit['step_mean_us']:.0f} us/step (p99 {limit['step_p99_us']:.0f}); "
                  f"one event = {ratio:.1f}x the limit")
            recorded = collections.defaultdict(list)
            for channel, headers in Recording(bag).headers.items():
                recorded[channel] = headers
            replayed = Recording(tmp / "lockstep").headers
            rows = [("lock-step", {c: aligned(recorded[c], replayed[c]) for c in CHANNELS})]
            for rate in (1.0, 5.0):
                live = timed_playback(ros, bag, rate)
                rows.append((f"timed playback, rate {rate:g}", {c: aligned(recorded[c], live[c]) for c in CHANNELS}))
            lines = [f"| replay | {' | '.join(CHANNELS)} |", "|---|" + "---|" * len(CHANNELS)]
            for name, table in rows:
                cells = [f"{h}/{t} ({100.0 * h / max(t, 1):.1f} %)" for h, t in (table[c] for c in CHANNELS)]
                lines.append(f"| {name} | {' | '.join(cells)} |")
            print("\noutputs reproduced with exactly the recorded inputs:")
            print("\n".join(lines))
        finally:
            ros.close(print_logs=False)
    python = python_module_step_us(args.python_ticks)
    print("\ninstrumented Python module (scripts/bench/step_overhead_py.py, same machine):\n" + python)
    if args.markdown:
        with args.markdown.open("a") as f:
            f.write(f"\n### Lock-step replay of unmodified rclpy nodes\n\n{events} events in {wall:.2f} s = "
                    f"{events / wall:.0f} events/s, {event_us:.0f} us per event = {ratio:.1f}x the DDS limit "
                    f"({limit['step_mean_us']:.0f} us/step)\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
