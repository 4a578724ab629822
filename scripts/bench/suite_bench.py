"""`lockstep test` throughput: cases per minute over a corpus of pipeline recordings at --jobs 1 and 2 and
through a local Ray cluster with 2 worker CPUs, the same suite and corpus in the same run; the runner's own
overhead per case (the case's time outside the `lockstep replay` process: starting the modules, stopping them,
comparing and reporting); and, from the measured cost per case, what a 10,000-recording corpus needs.

The Ray cluster runs in a network namespace of its own (`unshare -n`, loopback only), as the tests start it, so
its traffic stays on this machine."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "trace"), str(REPO / "test" / "suite")]

from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary  # noqa: E402
from corpus import HOLD, REPLAY_LAUNCH, make_corpus  # noqa: E402


def suite_file(tmp: Path, corpus: list[Path]) -> Path:
    suite = tmp / "bench_suite.yaml"
    suite.write_text("recordings:\n" + "".join(f"  - {b}\n" for b in corpus)
                     + f"modules:\n  launch: {REPLAY_LAUNCH}\n  arguments: {{hold: \"{HOLD}\"}}\n")
    return suite


def measure(name: str, command: list[str], output: Path, env: dict) -> dict:
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    command_s = time.monotonic() - start
    if run.returncode != 0:
        raise SystemExit(f"{name}: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
    summary = json.loads((output / "summary.json").read_text())
    # The suite's own wall time (for Ray, without starting the cluster: that is command_s - wall).
    wall = summary["duration_s"]
    cases = summary["cases"]
    assert summary["passed"] == len(cases), summary
    stepping = []
    for c in cases:
        report = json.loads((output / "cases" / c["case"] / "replay" / "report.json").read_text())
        stepping.append(report["timing"]["wall_s"])
    row = {
        "name": name, "cases": len(cases), "wall_s": wall, "command_s": command_s,
        "cases_per_min": 60 * len(cases) / wall,
        "case_s": statistics.mean(c["total_s"] for c in cases),
        "replay_s": statistics.mean(c["replay_s"] for c in cases),
        "stepping_s": statistics.mean(stepping),
        "overhead_s": statistics.mean(c["total_s"] - c["replay_s"] for c in cases),
    }
    print(f"{name}: {len(cases)} cases in {wall:.1f} s ({command_s:.1f} s with the command's start and end) = "
          f"{row['cases_per_min']:.1f} cases/min; per case "
          f"{row['case_s']:.2f} s (replay process {row['replay_s']:.2f} s, of which stepping "
          f"{row['stepping_s']:.2f} s; runner's own {row['overhead_s']:.2f} s)", flush=True)
    return row


# A head with 2 worker CPUs on loopback in network and PID namespaces of its own (the namespace's end stops
# every Ray process in it), then the suite through it.
RAY_SCRIPT = r"""
set -e
ip link set lo up
ray start --head --num-cpus 2 --include-dashboard=false --disable-usage-stats > "$RAY_TMPDIR/start.log" 2>&1
exec "$LOCKSTEP_BIN" test "$SUITE" --ray auto --output "$OUTPUT" --quiet
"""


def ray_run(suite: Path, output: Path, env: dict) -> dict:
    if shutil.which("unshare") is None or shutil.which("ray") is None:
        raise SystemExit("the Ray row needs unshare (util-linux) and ray (scripts/setup.sh installs it)")
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths allow only a short folder
    env = dict(env, SUITE=str(suite), OUTPUT=str(output), RAY_TMPDIR=ray_tmp)
    command = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "bash", "-c", RAY_SCRIPT]
    try:
        return measure("Ray, 2 worker CPUs", command, output, env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=6, help="recordings in the corpus")
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray row")
    parser.add_argument("--markdown", type=Path, help="append the summary table to this Markdown file")
    args = parser.parse_args()
    os.environ.setdefault("LOCKSTEP_PROFILE", "release")
    os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            corpus = make_corpus(ros, tmp / "corpus", args.count)
            suite = suite_file(tmp, corpus)
            env = dict(ros.env, LOCKSTEP_BIN=os.environ["LOCKSTEP_BIN"])
            rows = []
            for jobs in (1, 2):
                out = tmp / f"jobs{jobs}"
                rows.append(measure(f"--jobs {jobs}", [os.environ["LOCKSTEP_BIN"], "test", str(suite), "--jobs",
                                                       str(jobs), "--output", str(out), "--quiet"], out, env))
            if not args.no_ray:
                rows.append(ray_run(suite, tmp / "ray", env))
        finally:
            ros.close()
    per_case = rows[0]["case_s"]
    hours = 10_000 * per_case / 3600
    print(f"\n10,000 recordings like these at {per_case:.2f} s per case on one CPU: {hours:.1f} CPU-hours; "
          f"on 50 one-CPU workers {hours / 50 * 60:.0f} min (a recording of N times the length scales the "
          f"stepping part, {rows[0]['stepping_s']:.2f} s here, by N)")
    table = ["| how | cases | wall [s] | cases/min | per case [s] | replay process [s] | stepping [s] | "
             "runner's own [s] |", "|---|---|---|---|---|---|---|---|"]
    table += [f"| {r['name']} | {r['cases']} | {r['wall_s']:.1f} | {r['cases_per_min']:.1f} | {r['case_s']:.2f} | "
              f"{r['replay_s']:.2f} | {r['stepping_s']:.2f} | {r['overhead_s']:.2f} |" for r in rows]
    print("\n" + "\n".join(table))
    if args.markdown:
        with args.markdown.open("a") as f:
            f.write("\n### `lockstep test` throughput (`scripts/bench/suite.sh`)\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
