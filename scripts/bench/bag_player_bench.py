"""Bag player benchmark (see bag_player.sh). Both players read the same MCAP bag (written here by rosbags) and
publish every message as serialized CDR with the QoS recorded in the bag (reliable, volatile, keep last 10),
with nothing subscribed, on a domain of their own. Ours reports, at the end of a play, the wall time from its
first to its last publish and the lateness of each publish against its schedule; the Python player is timed
the same way (first to last publish).

The machine's limit runs in the same run on the same messages: `rcl_limit publish`
(scripts/bench/limits/rcl_limit.c), a C program that publishes one serialized message of the same size through
rcl in a tight loop with the same QoS. Ours is reported as a fraction of it (goal: at least 0.8x), at three
message sizes."""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target")) / "release"
LIMIT = TARGET.parent / "bench-limits" / "rcl_limit"
TS = get_typestore(Stores.ROS2_JAZZY)
STRING = "std_msgs/msg/String"
QOS = Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE,
          QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)
ENDED = re.compile(r"playback ended: (\d+) messages in ([\d.]+) s \((\d+) msg/s\)"
                   r"(?:; .* p50 ([\d.]+) us, p99 ([\d.]+) us, max ([\d.]+) us)?")


def make_bag(path: Path, count: int, period_ns: int, size: int) -> Path:
    text = "x" * (size - 9)  # CDR: 4 header + 4 length + text + NUL = size bytes
    data = TS.serialize_cdr(TS.types[STRING](data=text), STRING)
    assert len(data) == size, len(data)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/bench", STRING, typestore=TS, offered_qos_profiles=[QOS])
        t0 = 1_700_000_000_000_000_000
        for i in range(count):
            w.write(conn, t0 + i * period_ns, data)
    return path


def ours(bag: Path, rate: float, domain: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    run = subprocess.run([TARGET / "lockstep", "bag", "play", str(bag), "--rate", str(rate), "--quiet"],
                         env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"lockstep bag play failed: {run.stderr}")
    m = ENDED.search(run.stderr + run.stdout)
    if not m:
        raise RuntimeError(f"no 'playback ended' line in: {run.stderr}")
    out = {"messages": int(m[1]), "secs": float(m[2])}
    out["msgs_per_s"] = out["messages"] / out["secs"] if out["secs"] > 0 else 0.0
    if m[4]:
        out.update(p50_us=float(m[4]), p99_us=float(m[5]), max_us=float(m[6]))
    return out


PY_PLAYER = r'''
import importlib, sys, time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, DurabilityPolicy, HistoryPolicy
from rosbags.rosbag2 import Reader

def get_message(msgtype):
    package, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)

rclpy.init()
node = rclpy.create_node("python_bag_player")
qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                 durability=DurabilityPolicy.VOLATILE)
with Reader(sys.argv[1]) as reader:
    pubs = {c.id: node.create_publisher(get_message(c.msgtype), c.topic, qos) for c in reader.connections}
    first = last = None
    count = 0
    for conn, _t, raw in reader.messages():
        pubs[conn.id].publish(bytes(raw))  # rclpy publishes serialized bytes as they are
        last = time.monotonic()
        first = first or last
        count += 1
print(count, last - first)
'''


def python_player(bag: Path, domain: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    run = subprocess.run([sys.executable, "-c", PY_PLAYER, str(bag)], env=env, capture_output=True, text=True,
                         timeout=1200)
    if run.returncode != 0:
        raise RuntimeError(f"python player failed: {run.stderr}")
    count, secs = run.stdout.split()
    return {"messages": int(count), "secs": float(secs), "msgs_per_s": int(count) / float(secs)}


def limit(count: int, size: int, domain: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    run = subprocess.run([LIMIT, "publish", "/bench", str(size), str(count)], env=env, capture_output=True,
                         text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"rcl_limit publish failed: {run.stderr}")
    _, published, secs = run.stdout.split()
    return {"messages": int(published), "secs": float(secs), "msgs_per_s": int(published) / float(secs)}


def against_limit(tmp: Path, sizes: list[int], count: int, runs: int) -> list[dict]:
    """Ours against the publish-only loop at each size, alternating which goes first."""
    rows = []
    for size in sizes:
        n = min(count, (256 << 20) // size)  # at most 256 MiB of bag per size
        bag = make_bag(tmp / f"size{size}", n, 1_000, size)
        mine, lim = [], []
        for run in range(runs):
            if run % 2 == 0:
                a = ours(bag, 1000.0, 73)
                b = limit(n, size, 74)
            else:
                b = limit(n, size, 74)
                a = ours(bag, 1000.0, 73)
            assert a["messages"] == b["messages"] == n, (a, b)
            mine.append(a["msgs_per_s"])
            lim.append(b["msgs_per_s"])
            print(f"  {size:>6} B run {run + 1}: lockstep {a['msgs_per_s']:>10.0f}   limit {b['msgs_per_s']:>10.0f}")
        m, limit_median = statistics.median(mine), statistics.median(lim)
        rows.append({"size": size, "count": n, "ours": m, "limit": limit_median, "ratio": m / limit_median,
                     "mb_per_s": m * size / 1e6})
        print(f"  {size:>6} B median: lockstep {m:.0f} msg/s ({m * size / 1e6:.0f} MB/s), limit {limit_median:.0f} "
              f"msg/s: {m / limit_median:.2f}x (goal >= 0.8x)")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--count", type=int, default=200_000, help="messages in the unlimited-rate bag")
    ap.add_argument("--sizes", default="256,4096,65536", help="message sizes for the limit comparison")
    ap.add_argument("--markdown", type=Path, help="append the summary table to this Markdown file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fast = make_bag(Path(tmp) / "fast", args.count, 1_000, 256)
        timed = make_bag(Path(tmp) / "timed", 10_000, 1_000_000, 256)
        print(f"unlimited rate, {args.count} messages of 256 B, nothing subscribed (msg/s, first to last publish):")
        mine, theirs = [], []
        for run in range(args.runs):
            a = ours(fast, 1000.0, 70)
            b = python_player(fast, 71)
            mine.append(a["msgs_per_s"])
            theirs.append(b["msgs_per_s"])
            assert a["messages"] == b["messages"] == args.count, (a, b)
            print(f"  run {run + 1}: lockstep {a['msgs_per_s']:>10.0f}   rosbags+rclpy {b['msgs_per_s']:>9.0f}")
        m, t = statistics.median(mine), statistics.median(theirs)
        print(f"  median: lockstep {m:.0f} msg/s, rosbags+rclpy {t:.0f} msg/s: {m / t:.1f}x (goal >= 10x)")
        print("timing at rate 1.0, 10,000 messages at 1 kHz (publish time - scheduled time):")
        worst = []
        for run in range(args.runs):
            r = ours(timed, 1.0, 72)
            worst.append(r["p99_us"])
            print(f"  run {run + 1}: p50 {r['p50_us']:.1f} us, p99 {r['p99_us']:.1f} us, max {r['max_us']:.1f} us "
                  f"({r['messages']} messages in {r['secs']:.3f} s)")
        print(f"  worst p99 {max(worst):.1f} us (goal < 1000 us)")
        print("unlimited rate against the machine's limit (a C loop publishing one serialized message through rcl, "
              "same size and QoS; msg/s, first to last publish):")
        rows = against_limit(Path(tmp), [int(s) for s in args.sizes.split(",")], args.count, args.runs)
    if args.markdown:
        with args.markdown.open("a") as f:
            f.write(f"\n### Bag player, unlimited rate, nothing subscribed, median of {args.runs} runs\n\n"
                    "| message | count | lockstep msg/s (MB/s) | publish-only limit msg/s | ours / limit (goal >= 0.8x) |\n"
                    "|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r['size']} B | {r['count']} | {r['ours']:.0f} ({r['mb_per_s']:.0f}) | {r['limit']:.0f} "
                        f"| {r['ratio']:.2f}x |\n")
            f.write(f"\nPython player (rosbags + rclpy), 256 B: {t:.0f} msg/s, ours {m / t:.1f}x; timing at rate 1.0, "
                    f"1 kHz: worst p99 {max(worst):.1f} us (goal < 1000 us)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
