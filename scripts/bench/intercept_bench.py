"""What the rcl interceptor (liblockstep_intercept_preload.so, `lockstep trace`) costs, in one run.

1. and 2. Per message, from C over rcl (scripts/bench/intercept_bench.c: no client library, the least a ROS 2
program can do; one node with a publisher and a subscription of std_msgs/msg/UInt8MultiArray on one topic, the
subscription matched in every loop): a loop of rcl_publish calls (the subscription takes nothing), and a loop of
rcl_publish + rcl_wait + rcl_take round trips; per take = round trip - publish. Payloads of 256 B and 1 MiB (the
length of the byte sequence). The same program runs in seven variants, interleaved in each run:
  plain                        no LD_PRELOAD (the machine's limit)
  preloaded, disabled          LD_PRELOAD, no LOCKSTEP_INTERCEPT: the hooks only forward
  record, own work             LOCKSTEP_INTERCEPT=record, LOCKSTEP_INTERCEPT_SKIP=digest,headers,events
  record + digest              SKIP=headers,events
  record + headers             SKIP=events
  record, full                 no SKIP
  record, headers, no digest   SKIP=digest,events
The parts, per run (paired: same run, same sizes), then the median over runs:
  forwarding     = preloaded, disabled - plain
  own work       = record, own work - preloaded, disabled   (which callback took what, the event log kept)
  digest         = record + digest - record, own work       (rmw_serialize twice + SHA-256 of the CDR)
  header publish = record + headers - record + digest       (a DependencyHeader per output)
  events         = record, full - record + headers          (event batches of up to 512 on /lockstep/events)
Goal: own work under 2 us per message at 256 B (publish and take each).

In the round trip the node takes its own messages, whose publisher is traced (itself): each output names the
message taken before it as input and waits for that message's header. With SKIP=headers no header ever comes,
so every output waits the full 200 ms and the interceptor re-examines every waiting output at each hooked call:
the take figures of the variants that skip headers (and the parts derived from them) measure that queue, not
the work the knob is meant to isolate. They are marked `*`. The seventh variant keeps headers flowing and
leaves the digest out, for figures of the take side without that queue:
  own work + input's header = record, headers, no digest - preloaded, disabled   (on the take side: the
                   bookkeeping plus taking and decoding the header of the input; on the publish side: the
                   bookkeeping plus publishing the output's header)
  digest, headers flowing   = record + headers - record, headers, no digest
The machine's limit for the digest: SHA-256 of as many bytes through OpenSSL (`openssl speed -evp sha256`).

3. CPU of the three-node rclpy pipeline test/intercept/nodes/pipeline.launch.xml (filter, fusion, controller)
started by `lockstep launch`, untraced and with --trace, side by side on two domains of their own, fed the same
/raw and /odom messages (std_msgs/Float64) at the same time at fixed rates from rclpy publishers in this process
(so that other load on the machine and its clock speed fall on both alike): utime + stime of each pipeline's three
python processes (/proc/<pid>/stat) over the feeding window (after a warm-up, until its last message came out),
untraced vs traced, and the ratio; median over rounds. This process also subscribes to /fused (both) and to
/fused/lockstep_header (traced), to check that every message went through and the interceptor recorded.

Run by scripts/bench/intercept.sh (release build of the interceptor and of `lockstep`)."""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test")]

from lockstep_testing.harness import (  # noqa: E402
    RosTestContext, allocate_domain_id, binary, release_domain_id, reliable)

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
PROGRAM = TARGET / "bench-limits" / "intercept_bench"
LIBRARY = TARGET / "release" / "liblockstep_intercept_preload.so"
PIPELINE = REPO / "test" / "intercept" / "nodes" / "pipeline.launch.xml"
NODE_SCRIPTS = {"filter": "filter_node.py", "fusion": "fusion_node.py", "controller": "controller_node.py"}
CLK_TCK = os.sysconf("SC_CLK_TCK")
SMALL, LARGE = 256, 1 << 20

# label -> (preloaded, LOCKSTEP_INTERCEPT, LOCKSTEP_INTERCEPT_SKIP)
VARIANTS = {
    "plain": (False, None, None),
    "preloaded, disabled": (True, None, None),
    "record, own work": (True, "record", "digest,headers,events"),
    "record + digest": (True, "record", "headers,events"),
    "record + headers": (True, "record", "events"),
    "record, full": (True, "record", None),
    "record, headers, no digest": (True, "record", "digest,events"),
}
# Variants whose take figures measure outputs waiting for headers that never come (see above).
QUEUED = {"record, own work", "record + digest"}
# part -> (variant, minus variant)
PARTS = {
    "forwarding (preloaded, disabled - plain)": ("preloaded, disabled", "plain"),
    "own work (SKIP=digest,headers,events - disabled)": ("record, own work", "preloaded, disabled"),
    "digest (SKIP=headers,events - SKIP=all three)": ("record + digest", "record, own work"),
    "header publish (SKIP=events - SKIP=headers,events)": ("record + headers", "record + digest"),
    "events (full - SKIP=events)": ("record, full", "record + headers"),
    "all of it (record, full - plain)": ("record, full", "plain"),
    "own work + input's header (SKIP=digest,events - disabled)": ("record, headers, no digest",
                                                                   "preloaded, disabled"),
    "digest, headers flowing (SKIP=events - SKIP=digest,events)": ("record + headers",
                                                                    "record, headers, no digest"),
}
OWN_WORK_HEADERS_PART = "own work + input's header (SKIP=digest,events - disabled)"
OWN_WORK_PART = "own work (SKIP=digest,headers,events - disabled)"
GOAL_US = 2.0
COLUMNS = [("publish", SMALL), ("take", SMALL), ("publish", LARGE), ("take", LARGE)]


def size_label(size: int) -> str:
    return "1 MiB" if size == LARGE else f"{size} B"


def variant_env(base: dict, label: str) -> dict:
    preloaded, mode, skip = VARIANTS[label]
    env = {k: v for k, v in base.items()
           if k not in ("LD_PRELOAD", "LOCKSTEP_INTERCEPT", "LOCKSTEP_INTERCEPT_SKIP")}
    if preloaded:
        env["LD_PRELOAD"] = str(LIBRARY)
    if mode:
        env["LOCKSTEP_INTERCEPT"] = mode
    if skip:
        env["LOCKSTEP_INTERCEPT_SKIP"] = skip
    return env


def run_program(env: dict, label: str, small_count: int, large_count: int) -> tuple[dict, list[str]]:
    """One run of the C program in variant `label`: us per message per (loop, size), and what it said on
    stderr."""
    run = subprocess.run([str(PROGRAM), f"{SMALL}:{small_count}", f"{LARGE}:{large_count}"],
                         env=variant_env(env, label), capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{PROGRAM} ({label}) exited with {run.returncode}:\n{run.stdout}\n{run.stderr}")
    us: dict = {}
    publishers = None
    for line in run.stdout.splitlines():
        words = line.split()
        if words[0] in ("publish", "roundtrip"):
            us[(words[0], int(words[1]))] = float(words[3]) / int(words[2]) * 1e6
        elif words[0] == "interceptor_publishers":
            publishers = (int(words[1]), int(words[2]))
    recording = VARIANTS[label][1] == "record"
    expected = (1, 1) if recording else (0, 0)
    if publishers != expected:
        raise RuntimeError(f"{label}: the node has {publishers} header and event-log publishers, expected "
                           f"{expected}: the interceptor did {'not ' if recording else ''}record\n{run.stderr}")
    for size in (SMALL, LARGE):
        us[("take", size)] = us[("roundtrip", size)] - us[("publish", size)]
    return us, [line for line in run.stderr.splitlines() if line.strip()]


_SHA256: dict[int, float] = {}


def sha256_us(size: int) -> float:
    """us per SHA-256 of `size` bytes: `openssl speed -evp sha256` (1 s), else Python's hashlib (OpenSSL too,
    plus the cost of a Python call)."""
    if size not in _SHA256:
        try:
            run = subprocess.run(["openssl", "speed", "-evp", "sha256", "-bytes", str(size), "-seconds", "1"],
                                 capture_output=True, text=True, timeout=30)
            kbytes_per_s = float(run.stdout.strip().splitlines()[-1].split()[-1].rstrip("k"))
            _SHA256[size] = size / (kbytes_per_s * 1e3) * 1e6
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
            data = bytes(size)
            rounds = max(20, (20 << 20) // max(size, 1))
            t0 = time.perf_counter()
            for _ in range(rounds):
                hashlib.sha256(data).digest()
            _SHA256[size] = (time.perf_counter() - t0) / rounds * 1e6
    return _SHA256[size]


def mark(cell: str, col: tuple, *variants: str) -> str:
    """`cell` with `*` when it is a take figure of (or derived from) a variant that skips headers."""
    return cell + ("*" if col[0] == "take" and QUEUED.intersection(variants) else " ")


def median_range(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def per_message(args, env: dict) -> tuple[list[str], list[str]]:
    """Parts 1 and 2: the table's lines, and its Markdown."""
    labels = list(VARIANTS)
    results: dict[str, list[dict]] = {label: [] for label in labels}
    said: dict[str, set] = {label: set() for label in labels}
    for r in range(args.runs):
        # Each run in another order, so that slow drift of the machine falls on every variant alike.
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        if r % 2:
            order.reverse()
        for label in order:
            started = time.monotonic()
            us, stderr = run_program(env, label, args.small_count, args.large_count)
            results[label].append(us)
            said[label].update(stderr)
            figures = ", ".join(f"{kind} {size_label(size)} {us[(kind, size)]:.2f}" for kind, size in COLUMNS)
            print(f"run {r + 1}/{args.runs} {label:<26} us/msg: {figures} ({time.monotonic() - started:.1f} s)",
                  flush=True)
    for label in labels:
        for line in sorted(said[label]):
            print(f"  {label} said: {line}")

    width = 62
    cols = [f"{kind} {size_label(size)}" for kind, size in COLUMNS]
    lines = [f"\nus per message, median (min-max) over {args.runs} runs; C over rcl, one node, publisher + matched "
             f"subscription;\n{args.small_count} messages at 256 B, {args.large_count} at 1 MiB per loop "
             f"(after a tenth as many untimed); take = (publish + wait + take) - publish",
             f"{'variant':<{width}}" + "".join(f"{c:>28}" for c in cols)]
    lines.append("-" * len(lines[-1]))
    md = ["| variant | " + " | ".join(f"{c} (us)" for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for label in labels:
        cells = [mark(median_range([u[col] for u in results[label]]), col, label) for col in COLUMNS]
        lines.append(f"{label:<{width}}" + "".join(f"{c:>28}" for c in cells))
        md.append(f"| {label} | " + " | ".join(c.strip().replace("*", "\\*") for c in cells) + " |")
    lines.append(f"{'derived, us per message (median of per-run differences)':<{width}}")
    md.append("| **derived** (median of per-run differences) |" + " |" * len(cols))
    medians: dict = {}
    for part, (a, b) in PARTS.items():
        cells = []
        for col in COLUMNS:
            diffs = [x[col] - y[col] for x, y in zip(results[a], results[b])]
            medians[(part, col)] = statistics.median(diffs)
            cells.append(mark(median_range(diffs), col, a, b))
        lines.append(f"  {part:<{width - 2}}" + "".join(f"{c:>28}" for c in cells))
        md.append(f"| {part} | " + " | ".join(c.strip().replace("*", "\\*") for c in cells) + " |")
        if part.startswith("digest ("):
            sha = [f"{sha256_us(size):.2f} " for _, size in COLUMNS]
            label = "  SHA-256 alone (openssl speed; the limit)"
            lines.append(f"{label:<{width}}" + "".join(f"{c:>28}" for c in sha))
            md.append(f"| {label.strip()} | " + " | ".join(c.strip() for c in sha) + " |")
    note = ("* the take side of a variant that skips headers: outputs wait 200 ms each for headers that never "
            "come, and the queue is examined at every call")
    lines.append(note)
    md.append(f"\n\\{note}")
    own_pub, own_take = medians[(OWN_WORK_PART, ("publish", SMALL))], medians[(OWN_WORK_PART, ("take", SMALL))]
    bound_take = medians[(OWN_WORK_HEADERS_PART, ("take", SMALL))]
    met = own_pub < GOAL_US and bound_take < GOAL_US
    goal = (f"goal: the interceptor's own work under {GOAL_US:g} us per message at 256 B: publish {own_pub:.2f} us; "
            f"take {bound_take:.2f} us with the input's header included ({own_take:.2f} us* with headers skipped): "
            f"{'MET' if met else 'MISSED'}")
    lines.append(goal)
    md.append(f"\n{goal}")
    return lines, md


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def node_pids(launcher: int) -> dict[str, int]:
    """The three python node processes under the launcher, by node."""
    pids = {}
    for pid in descendants(launcher):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        for node, script in NODE_SCRIPTS.items():
            if comm.startswith("python") and any(arg.decode(errors="replace").endswith(script) for arg in cmdline):
                pids[node] = pid
    return pids


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


class Pipeline:
    """The three-node pipeline under `lockstep launch` (with --trace or not) on a domain of its own, with this
    process's publishers of /raw and /odom and its subscriptions to /fused (and to /fused/lockstep_header)."""

    def __init__(self, traced: bool, log_dir: Path):
        from std_msgs.msg import Float64
        from lockstep_interfaces.msg import DependencyHeader
        self.traced = traced
        self.name = "traced" if traced else "untraced"
        self.ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=log_dir)
        self.launch = self.ros.start("lockstep", "launch", str(PIPELINE), *(["--trace"] if traced else []),
                                     name=self.name)
        self.fused = self.ros.collect(Float64, "/fused", reliable())
        self.headers = (self.ros.collect(DependencyHeader, "/fused/lockstep_header", reliable(depth=1000))
                        if traced else [])
        self.raw = self.ros.publisher(Float64, "/raw", reliable())
        self.odom = self.ros.publisher(Float64, "/odom", reliable())
        self.pids: dict[str, int] = {}
        self.sent = 0

    def wait_ready(self) -> None:
        ros, traced = self.ros, self.traced
        ros.wait_for_matched(self.raw, 1, timeout=120)
        ros.wait_for_matched(self.odom, 1, timeout=120)
        ros.wait_until(lambda: ros.node.count_subscribers("/fused") >= 2 and ros.node.count_publishers("/fused") >= 1
                       and (not traced or ros.node.count_publishers("/fused/lockstep_header") >= 1),
                       120, "controller and this process subscribed to /fused, fusion publishing it", self.launch)
        self.pids = ros.wait_until(lambda: (p := node_pids(self.launch.popen.pid)) and len(p) == 3 and p, 30,
                                   "the three node processes", self.launch)

    def publish(self, odom: bool) -> None:
        from std_msgs.msg import Float64
        if odom:
            self.odom.publish(Float64(data=100.0 + self.sent))
        self.raw.publish(Float64(data=float(self.sent)))
        self.sent += 1

    def count(self) -> int:
        return len(self.fused) + len(self.headers)

    def wait_acked_and_idle(self) -> None:
        self.ros.wait_for_acked(self.raw, timeout=30, proc=self.launch)
        self.ros.wait_for_acked(self.odom, timeout=30, proc=self.launch)
        settled = [self.count(), time.monotonic()]

        def idle() -> bool:
            if self.count() != settled[0]:
                settled[:] = [self.count(), time.monotonic()]
            return time.monotonic() - settled[1] > 0.5
        self.ros.wait_until(idle, 30, "the pipeline idle after the warm-up", self.launch)

    def cpu(self) -> dict[str, float]:
        return {node: cpu_secs(pid) for node, pid in self.pids.items()}

    def through(self, fused: int, headers: int) -> bool:
        return len(self.fused) >= fused and len(self.headers) >= headers

    def close(self) -> str:
        try:
            code = self.launch.stop(timeout=60)
            if code != 0:
                raise RuntimeError(f"lockstep launch ({self.name}) exited with {code}:\n{self.launch.log()}")
            return self.launch.log()
        finally:
            self.ros.close(print_logs=False)


def feed(pipelines: list[Pipeline], secs: float, raw_hz: float, odom_hz: float) -> int:
    """Publish /raw at raw_hz and /odom at odom_hz to every pipeline for `secs` (absolute deadlines); the
    number of /raw messages each got."""
    every = max(1, round(raw_hz / odom_hz))
    period = 1.0 / raw_hz
    start = time.monotonic()
    n = 0
    while n < secs * raw_hz:
        for p in pipelines:
            p.publish(odom=n % every == 0)
        n += 1
        delay = start + n * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return n


def pipeline_round(args, log_dir: Path) -> dict[bool, dict]:
    """One round: the untraced and the traced pipeline side by side, fed the same messages at the same time, so
    that the machine's state (other load, clock speed) is the same for both."""
    pipelines: list[Pipeline] = []
    results: dict[bool, dict] = {}
    try:
        for traced in (False, True):
            pipelines.append(Pipeline(traced, log_dir))
        for p in pipelines:
            p.wait_ready()
        # Warm-up: a subscription can match late (what is published before is lost), so feed until the first
        # /fused of each arrives, then for --warmup-secs, until every reader acknowledged and both are idle.
        deadline = time.monotonic() + 120
        while not all(p.fused for p in pipelines):
            if time.monotonic() > deadline:
                raise TimeoutError("no /fused after " + ", ".join(f"{p.sent} /raw ({p.name})" for p in pipelines))
            feed(pipelines, 0.1, args.raw_hz, args.odom_hz)
        feed(pipelines, args.warmup_secs, args.raw_hz, args.odom_hz)
        for p in pipelines:
            p.wait_acked_and_idle()
        before = [(p.cpu(), len(p.fused), len(p.headers)) for p in pipelines]
        t0 = time.monotonic()
        n = feed(pipelines, args.secs, args.raw_hz, args.odom_hz)
        # Until the last message went through each (with its header): all the work of the window.
        for p, (cpu, fused, headers) in zip(pipelines, before):
            p.ros.wait_until(lambda: p.through(fused + n, headers + n if p.traced else 0), 30,
                             f"every /raw message through the {p.name} pipeline", p.launch)
            after = p.cpu()
            results[p.traced] = {"cpu": {k: after[k] - cpu[k] for k in after}, "wall": time.monotonic() - t0,
                                 "sent": n, "fused": len(p.fused) - fused, "headers": len(p.headers) - headers}
    finally:
        failures = []
        for p in pipelines:
            try:
                log = p.close()
                if p.traced in results:
                    results[p.traced]["log"] = log
            except RuntimeError as e:
                failures.append(str(e))
        if failures:
            raise RuntimeError("\n".join(failures))
    return results


def pipeline(args) -> tuple[list[str], list[str]]:
    """Part 3: the table's lines, and its Markdown."""
    runs: dict[bool, list[dict]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.pipeline_runs):
            started = time.monotonic()
            result = pipeline_round(args, Path(tmp))
            for traced in (False, True):
                res = result[traced]
                runs[traced].append(res)
                cpu = ", ".join(f"{k} {v:.2f}" for k, v in res["cpu"].items())
                print(f"pipeline round {r + 1}/{args.pipeline_runs} {'traced' if traced else 'untraced':<8}: "
                      f"{res['sent']} /raw in {res['wall']:.1f} s, {res['fused']} /fused"
                      f"{', %d /fused headers' % res['headers'] if traced else ''}; CPU s {cpu}", flush=True)
            print(f"  ({time.monotonic() - started:.1f} s)")
    said = {line for res in runs[True] for line in res["log"].splitlines() if "[lockstep trace]" in line}
    for line in sorted(said):
        print(f"  traced pipeline said: {line}")
    lines = [f"\nCPU of the three rclpy nodes (filter, fusion, controller; utime+stime) over {args.secs:g} s of "
             f"/raw at {args.raw_hz:g} Hz and /odom at {args.odom_hz:g} Hz,\nuntraced and traced side by side on the "
             f"same feed, median of {args.pipeline_runs} round(s)",
             f"{'':<10}{'filter s':>10}{'fusion s':>10}{'controller s':>14}{'total s':>10}{'% of a core':>13}"]
    md = ["| pipeline | filter CPU s | fusion CPU s | controller CPU s | total CPU s | % of a core |",
          "|---|---|---|---|---|---|"]
    totals = {}
    for traced in (False, True):
        res = runs[traced]
        per = {k: statistics.median(r["cpu"][k] for r in res) for k in NODE_SCRIPTS}
        totals[traced] = statistics.median(sum(r["cpu"].values()) for r in res)
        pct = statistics.median(100 * sum(r["cpu"].values()) / r["wall"] for r in res)
        name = "traced" if traced else "untraced"
        lines.append(f"{name:<10}{per['filter']:>10.2f}{per['fusion']:>10.2f}{per['controller']:>14.2f}"
                     f"{totals[traced]:>10.2f}{pct:>13.1f}")
        md.append(f"| {name} | {per['filter']:.2f} | {per['fusion']:.2f} | {per['controller']:.2f} | "
                  f"{totals[traced]:.2f} | {pct:.1f} |")
    ratios = [sum(t["cpu"].values()) / max(sum(u["cpu"].values()), 1e-9) for u, t in zip(runs[False], runs[True])]
    extra_us = [(sum(t["cpu"].values()) - sum(u["cpu"].values())) / t["sent"] * 1e6
                for u, t in zip(runs[False], runs[True])]
    text = (f"traced / untraced: {statistics.median(ratios):.2f}x CPU (per round: "
            f"{', '.join(f'{r:.2f}x' for r in ratios)}); traced - untraced: {median_range(extra_us, 0)} us of CPU "
            f"per /raw message through the three nodes")
    lines.append(text)
    md.append(f"\n{text}")
    return lines, md


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of every variant of the C loops (0: none)")
    parser.add_argument("--small-count", type=int, default=20000, help="messages per loop at 256 B")
    parser.add_argument("--large-count", type=int, default=500, help="messages per loop at 1 MiB")
    parser.add_argument("--secs", type=float, default=10.0, help="seconds the pipeline is fed and measured")
    parser.add_argument("--warmup-secs", type=float, default=1.0, help="seconds the pipeline is fed before")
    parser.add_argument("--raw-hz", type=float, default=200.0)
    parser.add_argument("--odom-hz", type=float, default=50.0)
    parser.add_argument("--pipeline-runs", type=int, default=3,
                        help="runs of the pipeline, untraced and traced, alternating which goes first (0: none)")
    parser.add_argument("--markdown", type=Path, help="append the tables to this Markdown file")
    args = parser.parse_args()
    # rclpy.init reads sys.argv: the two pipelines' rclpy contexts in this process each make a node of the same
    # name (the test harness's), which /rosout would warn about.
    sys.argv[1:] = ["--ros-args", "--disable-rosout-logs"]
    os.environ["LOCKSTEP_PROFILE"] = "release"
    for path in (PROGRAM, LIBRARY, binary("lockstep")):
        if not path.exists():
            raise SystemExit(f"{path} does not exist: run scripts/bench/intercept.sh")
    print(f"program: {PROGRAM}\ninterceptor: {LIBRARY}\nlockstep: {binary('lockstep')}", flush=True)
    lines, md = [], []
    if args.runs > 0:
        domain = allocate_domain_id()
        try:
            lines, md = per_message(args, dict(os.environ, ROS_DOMAIN_ID=str(domain)))
        finally:
            release_domain_id(domain)
    if args.pipeline_runs > 0:
        more, more_md = pipeline(args)
    else:
        more, more_md = [], []
    print("\n".join(lines + more))
    if args.markdown:
        with args.markdown.open("a") as f:
            f.write("\n### rcl interceptor: us per message (C over rcl) and CPU of a traced rclpy pipeline\n\n")
            f.write("\n".join(md + [""] + more_md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
