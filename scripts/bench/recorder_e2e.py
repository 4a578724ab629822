"""End-to-end recorder benchmark over DDS on this machine: a Rust publisher (lockstep_loadgen) sends numbered
messages at a fixed rate, lockstep_recorder records them, then the bag is read back with the Python `mcap`
package and checked for loss and order. Prints messages/s, MB/s, loss and the recorder's CPU use, for both of
the recorder's type supports in the same run (same data, same settings): `generic` (the type support loaded
at run time; every installed type) and `compiled` (r2r's bindings built into the binary). Within each run the
two alternate which goes first.

The generator stays alive after its last message (so reliable delivery of what it sent can finish), the
script waits until the recorder's ~/status shows every published message received (or 60 s pass), then stops
the recorder with SIGINT; the recorder drains what DDS delivered and finishes the bag.

The machine's limit runs in the same run on the same load: `rcl_limit take` (scripts/bench/limits/rcl_limit.c),
a C program that only takes each serialized message through rcl with the recorder's QoS and drops it. Its CPU
over the same publishing window is what receiving alone costs here; the recorder's CPU is reported as a
multiple of it (goal: within 1.1x, with no loss). `limit_write` is the same loop appending each message to a
file with one write(2): what receiving and handing the bytes to the OS cost, the floor for any recorder.

`snapshot` is the recorder in snapshot mode (`snapshot_mode:=true`, the default 100 MiB kept in memory): nothing
is written while the load runs; at the end the script calls `~/snapshot` and the bag holds the last 100 MiB of
messages (its `lost` column counts what left the cache, expected above 100 MiB of load; it does not fail the
run)."""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor
from lockstep_interfaces.msg import RecorderStatus
from mcap.reader import make_reader

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target")) / "release"
LIMIT = TARGET.parent / "bench-limits" / "rcl_limit"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


class StatusWatch:
    """The recorder's latest ~/status, from an rclpy node on the benchmark's domain."""

    def __init__(self, domain: int):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("recorder_e2e_watch", context=self.context)
        self.last: RecorderStatus | None = None
        self.node.create_subscription(RecorderStatus, "/lockstep_recorder/status", self._got, 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _got(self, msg: RecorderStatus) -> None:
        self.last = msg

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception:  # the context is shutting down
                return

    def snapshot(self) -> str:
        """Call the recorder's ~/snapshot and return its answer's message."""
        from std_srvs.srv import Trigger
        client = self.node.create_client(Trigger, "/lockstep_recorder/snapshot")
        if not client.wait_for_service(timeout_sec=30):
            raise RuntimeError("no /lockstep_recorder/snapshot service")
        future = client.call_async(Trigger.Request())
        deadline = time.monotonic() + 120
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not future.done():
            raise RuntimeError("~/snapshot did not answer within 120 s")
        return future.result().message

    def received(self, topic: str) -> int:
        last = self.last
        return next((t.received for t in last.topics if t.topic == topic), 0) if last else 0

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        self.thread.join(timeout=2)


def publish_load(env: dict, size: int, rate: float, count: int, receiver: subprocess.Popen) -> tuple[int, float, float,
                                                                                              subprocess.Popen]:
    """Run lockstep_loadgen until its last message; the receiver's CPU % over that publishing window (from
    the generator's start to its last message), messages published, seconds they took, and the generator
    (still alive, so that reliable delivery can finish)."""
    gen = subprocess.Popen([TARGET / "lockstep_loadgen", "--ros-args", "-p", "topic:=/load",
                            "-p", f"size_bytes:={size}", "-p", f"rate_hz:={rate}", "-p", f"count:={count}",
                            "-p", "stay_alive:=true"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cpu0, t0 = cpu_secs(receiver.pid), time.monotonic()
    line = gen.stdout.readline()
    cpu1, t1 = cpu_secs(receiver.pid), time.monotonic()
    parts = line.split()
    if len(parts) != 3:
        gen.kill()
        receiver.kill()
        raise RuntimeError(f"lockstep_loadgen printed {line!r}")
    return 100 * (cpu1 - cpu0) / (t1 - t0), int(parts[1]), float(parts[2]), gen


def limit_case(size: int, rate: float, secs: float, domain: int, path: str) -> dict:
    """The same load received by `rcl_limit take` instead of the recorder (`limit_write`: also written)."""
    count = int(rate * secs)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    tmp = tempfile.TemporaryDirectory()
    written = [str(Path(tmp.name) / "taken.bin")] if path == "limit_write" else []
    taker = subprocess.Popen([LIMIT, "take", "/load", str(count), *written], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    if taker.stdout.readline().strip() != "ready":
        taker.kill()
        raise RuntimeError(f"rcl_limit take did not start: {taker.stderr.read()}")
    cpu_pct, published, pub_secs, gen = publish_load(env, size, rate, count, taker)
    t1 = time.monotonic()
    try:
        out, _ = taker.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        taker.send_signal(signal.SIGINT)
        out, _ = taker.communicate(timeout=30)
    drain_secs = time.monotonic() - t1
    gen.send_signal(signal.SIGINT)
    gen.wait(30)
    taken = int(out.split()[-1])
    tmp.cleanup()
    return {"path": path, "size": size, "rate": rate, "published": published, "recorded": taken,
            "lost": published - taken, "in_order": True, "msgs_per_s": published / pub_secs,
            "mb_per_s": published * size / pub_secs / 1e6, "cpu_pct": cpu_pct, "bag_mb": 0.0,
            "drain_secs": drain_secs}


def run_case(size: int, rate: float, secs: float, domain: int, type_support: str) -> dict:
    if type_support in ("limit", "limit_write"):
        return limit_case(size, rate, secs, domain, type_support)
    count = int(rate * secs)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    watch = StatusWatch(domain)
    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / "bag"
        snapshot = type_support == "snapshot"
        mode = ["-p", "type_support:=generic", "-p", "snapshot_mode:=true"] if snapshot \
            else ["-p", f"type_support:={type_support}"]
        rec = subprocess.Popen([TARGET / "lockstep_recorder", "--ros-args", "-p", f"output:={bag}",
                                "-p", "all_topics:=false", "-p", "all_services:=false", "-p", "all_actions:=false",
                                "-p", "topics:=/load", "-p", "status_period_secs:=0.2", *mode],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cpu_pct, published, pub_secs, gen = publish_load(env, size, rate, count, rec)
        t1 = time.monotonic()
        deadline = time.monotonic() + 60
        while watch.received("/load") < published and time.monotonic() < deadline:
            time.sleep(0.05)
        drain_secs = time.monotonic() - t1
        if snapshot:
            print(f"{size} B x {rate:.0f}/s snapshot: {watch.snapshot()}")
        rec.send_signal(signal.SIGINT)
        rec.wait(120)
        gen.send_signal(signal.SIGINT)
        gen.wait(30)
        watch.close()
        indices = []
        for path in sorted(bag.glob("*.mcap")):
            with open(path, "rb") as f:
                for _schema, _channel, message in make_reader(f).iter_messages(log_time_order=False):
                    # CDR: 4-byte encapsulation, layout (dim seq len 4 + data_offset 4), data len 4, data
                    indices.append(int.from_bytes(message.data[16:24], "little"))
        in_order = indices == sorted(indices)
        lost = published - len(set(indices))
        missing = sorted(set(range(published)) - set(indices))
        if missing:
            print(f"{size} B: missing indices {missing[:10]}{' ...' if len(missing) > 10 else ''}")
        bag_bytes = sum(p.stat().st_size for p in bag.glob("*.mcap"))
    return {"path": type_support, "size": size, "rate": rate, "published": published, "recorded": len(indices), "lost": lost,
            "in_order": in_order, "msgs_per_s": published / pub_secs,
            "mb_per_s": published * size / pub_secs / 1e6, "cpu_pct": cpu_pct,
            "bag_mb": bag_bytes / 1e6, "drain_secs": drain_secs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--runs", type=int, default=1, help="run every case this many times in a row")
    ap.add_argument("--type-support", default="generic,compiled,snapshot,limit,limit_write",
                    help="comma-separated recorder type supports to compare, `snapshot` for the generic recorder in "
                         "snapshot mode, `limit` for the receive-only C loop and `limit_write` for it writing each "
                         "message to a file (default: generic,compiled,snapshot,limit,limit_write)")
    ap.add_argument("--rates", default="1000,10000,50000",
                    help="comma-separated message rates for 256 B messages (default: 1000,10000,50000)")
    ap.add_argument("--markdown", type=Path, help="append the summary table to this Markdown file")
    args = ap.parse_args()
    cases = [(256, float(r)) for r in args.rates.split(",")] + [(1 << 20, 100.0)]
    paths = args.type_support.split(",")
    rows = []
    for run in range(args.runs):
        order = paths if run % 2 == 0 else paths[::-1]
        for i, (size, rate) in enumerate(cases):
            for path in order:
                rows.append(dict(run_case(size, rate, args.secs, 90 + i, path), run=run + 1))
    print(f"{'run':>3} {'path':>9} {'payload':>9} {'target/s':>9} {'published':>10} {'recorded':>9} {'lost':>5} "
          f"{'order':>6} {'msg/s':>9} {'MB/s':>7} {'rec CPU%':>9} {'drain s':>8}")
    for r in rows:
        print(f"{r['run']:>3} {r['path']:>9} {r['size']:>9} {r['rate']:>9.0f} {r['published']:>10} "
              f"{r['recorded']:>9} {r['lost']:>5} {'ok' if r['in_order'] else 'NO':>6} {r['msgs_per_s']:>9.0f} "
              f"{r['mb_per_s']:>7.1f} {r['cpu_pct']:>9.1f} {r['drain_secs']:>8.1f}")
    print("\nrecorder CPU % of one core while publishing (median over runs; lower is better):")
    table = ["| load | " + " | ".join(f"{p} CPU % (lost)" for p in paths)
             + (" | recorder / limit (goal <= 1.1x) |" if "limit" in paths else " |"),
             "|---|" + "---|" * (len(paths) + ("limit" in paths))]
    for size, rate in cases:
        line = [f"{size:>9} B x {rate:>6.0f}/s:"]
        cells, medians = [], {}
        for path in paths:
            mine = [r for r in rows if r["path"] == path and r["size"] == size and r["rate"] == rate]
            cpu = sorted(r["cpu_pct"] for r in mine)
            lost = sum(r["lost"] for r in mine)
            medians[path] = cpu[len(cpu) // 2]
            line.append(f"{path} {medians[path]:.1f} (lost {lost})")
            cells.append(f"{medians[path]:.1f} ({lost})")
        if "limit" in medians and medians["limit"] > 0:
            ratios = ", ".join(f"{p} {medians[p] / medians['limit']:.2f}x" for p in paths if p != "limit")
            if "limit_write" in medians and medians["limit_write"] > 0:
                ratios += "; vs limit_write: " + ", ".join(
                    f"{p} {medians[p] / medians['limit_write']:.2f}x" for p in paths if not p.startswith("limit"))
            line.append(f"vs limit: {ratios}")
            cells.append(ratios)
        print("  ".join(line))
        table.append(f"| {size} B x {rate:.0f}/s ({size * rate / 1e6:.1f} MB/s) | " + " | ".join(cells) + " |")
    if args.markdown:
        with args.markdown.open("a") as f:
            f.write(f"\n### Recorder over DDS, {args.secs:g} s per case, {args.runs} run(s): CPU % of one core "
                    "while the load is published, median; messages lost in all runs\n\n")
            f.write("\n".join(table) + "\n")
    return 0 if all((r["lost"] == 0 or r["path"] == "snapshot") and r["in_order"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
