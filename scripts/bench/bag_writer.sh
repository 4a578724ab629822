#!/usr/bin/env bash
# Bag writer throughput: lockstep_bag (Rust) vs the Python `mcap` writer vs the `rosbags` rosbag2
# writer (MCAP storage), on the same bytes with the same settings, in one run. Prints one table.
#
#   scripts/bench/bag_writer.sh [--small N] [--medium N] [--large N] [--runs N] [--markdown FILE]
#
# Python comes from $LOCKSTEP_PYTHON or `python3` and needs `mcap`, `rosbags` and `numpy`.
# Cases: N x 256 B messages (default 200000), N x 64 KiB (default 4000) and N x 1 MiB (default 500), each with
# uncompressed and with zstd chunks. Settings shared by all three writers (printed with the table):
#   - chunk CRCs off: rosbags cannot compute them (it writes 0); rosbag2's MCAP plugin default too;
#   - 1 MiB chunks: rosbags closes a chunk past 2^20 bytes and cannot be told otherwise;
#   - zstd at zstd's default level 3, compressed on the writing thread (Python `zstandard` /
#     `backports.zstd` and lockstep_bag with `compression_threads: 0`); one extra row shows
#     lockstep_bag's default, a zstd worker thread beside the writing thread;
#   - message i is the slice at (i * size) % (pool - size + 1) of one 4 MiB pool of bytes with 4 bits
#     of entropy each (numpy, seed 7), so zstd has real work and nothing repeats within a chunk.
# Two clocks per run, both started before the bag is created: "closed" stops when the writer has
# finished the file(s) (summary, footer, metadata.yaml) and handed them to the OS; "synced" stops
# after every file of the bag and its directory have been fsync'd. Every writer writes a fresh bag
# directory in the same temporary directory; best of --runs runs (default 3) per clock.
# The machine's limits on the same bytes, in the same run: memcpy, plain 1 MiB file writes (and fsync), and
# zstd level 3 alone on the same 1 MiB chunks on one thread and on every core; each lockstep_bag row is also
# given as a fraction of its limit (file write uncompressed, zstd on every core compressed).
set -euo pipefail

SMALL=200000
MEDIUM=4000
LARGE=500
RUNS=3
MARKDOWN=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --small) SMALL="$2"; shift 2 ;;
    --medium) MEDIUM="$2"; shift 2 ;;
    --large) LARGE="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --markdown) MARKDOWN="$2"; shift 2 ;;
    *) echo "usage: $0 [--small N] [--medium N] [--large N] [--runs N] [--markdown FILE]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../env-local.sh
source "$ROOT/scripts/env-local.sh"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
PY="${LOCKSTEP_PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bag_writer_bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

"$PY" - "$WORK/pool.bin" <<'PYEOF'
import sys
import numpy as np
np.random.default_rng(7).integers(0, 16, size=4 << 20, dtype=np.uint8).tofile(sys.argv[1])
PYEOF

echo "building the Rust bench (release)..." >&2
(cd "$ROOT" && cargo bench -p lockstep_bag --bench bag_writer --no-run >&2)
bench() {
  (cd "$ROOT" && cargo bench -p lockstep_bag --bench bag_writer -- --json --dir "$WORK" --pool "$WORK/pool.bin" \
    --small "$SMALL" --medium "$MEDIUM" --large "$LARGE" --runs "$RUNS" "$@") | grep '^{'
}
bench >> "$WORK/results.jsonl"
bench --compression zstd --zstd-threads 1 >> "$WORK/results.jsonl"
bench --compression zstd --zstd-threads 2 >> "$WORK/results.jsonl"
bench --limits >> "$WORK/results.jsonl"

"$PY" - "$WORK" "$SMALL" "$MEDIUM" "$LARGE" "$RUNS" >> "$WORK/results.jsonl" <<'PYEOF'
import json, os, shutil, sys, time
from pathlib import Path

from mcap.writer import CompressionType, Writer as McapWriter
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer as RosbagsWriter
from rosbags.typesys import Stores, get_typestore

work, small, medium, large, runs = (Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                    int(sys.argv[5]))
pool = memoryview((work / "pool.bin").read_bytes())
CHUNK = 1 << 20
store = get_typestore(Stores.ROS2_JAZZY)


def messages(size, count):
    span = len(pool) - size + 1
    for i in range(count):
        off = (i * size) % span
        yield 1_000_000_000 + i * 1000, pool[off:off + size]


def write_mcap(out, size, count, zstd):
    out.mkdir()
    with open(out / "bench_0.mcap", "wb") as f:
        w = McapWriter(f, chunk_size=CHUNK, enable_crcs=False,
                       compression=CompressionType.ZSTD if zstd else CompressionType.NONE)
        w.start(profile="ros2", library="bench")
        sid = w.register_schema(name="std_msgs/msg/UInt8MultiArray", encoding="ros2msg", data=b"uint8[] data\n")
        cid = w.register_channel(topic="/bench", message_encoding="cdr", schema_id=sid)
        for t, data in messages(size, count):
            w.add_message(channel_id=cid, log_time=t, data=data, publish_time=t)
        w.finish()


def write_rosbags(out, size, count, zstd):
    w = RosbagsWriter(out, version=9, storage_plugin=StoragePlugin.MCAP)
    if zstd:
        # STORAGE mode is rosbags' MCAP chunk compression (not rosbag2 file/message compression).
        w.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    w.open()
    conn = w.add_connection("/bench", "std_msgs/msg/UInt8MultiArray", typestore=store)
    for t, data in messages(size, count):
        w.write(conn, t, data)
    w.close()


def sync_dir(out):
    total = 0
    for path in out.iterdir():
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        total += path.stat().st_size
    fd = os.open(out, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    return total


for impl, fn in (("python mcap", write_mcap), ("rosbags", write_rosbags)):
    for compression in ("none", "zstd"):
        for case, size, count in (("256B", 256, small), ("64KiB", 64 << 10, medium), ("1MiB", 1 << 20, large)):
            best_closed = best_synced = float("inf")
            for _ in range(runs):
                out = work / "py_bag"
                t0 = time.perf_counter()
                fn(out, size, count, compression == "zstd")
                closed = time.perf_counter() - t0
                nbytes = sync_dir(out)
                synced = time.perf_counter() - t0
                shutil.rmtree(out)
                best_closed, best_synced = min(best_closed, closed), min(best_synced, synced)
            print(json.dumps({"impl": impl, "compression": compression, "case": case, "size": size, "count": count,
                              "closed_s": best_closed, "synced_s": best_synced, "bytes": nbytes}))
PYEOF

MACHINE="$(nproc) cores, $(uname -sr), $(df -PT "$WORK" | awk 'NR==2 {print $2}') at $WORK"
MACHINE="$MACHINE; load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$WORK/results.jsonl" "$RUNS" "$MACHINE" "$MARKDOWN" <<'PYEOF'
import importlib.metadata as md, json, platform, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs, machine, markdown = sys.argv[2], sys.argv[3], sys.argv[4]
versions = ", ".join(f"{p} {md.version(p)}" for p in ("mcap", "rosbags", "zstandard", "backports.zstd"))
print("Settings (all writers): MCAP chunk CRCs off, 1 MiB chunks, zstd level 3 on the writing thread unless noted,")
print("  same payload bytes (4-bit-entropy pool); 'closed' = file(s) finished and handed to the OS,")
print(f"  'synced' = also fsync'd (files + directory); best of {runs} runs per clock.")
print(f"  Python {platform.python_version()}: {versions}")
print(f"  {machine}")
print()
head = (f"{'writer':<30} {'zstd':<5} {'case':<5} {'count':>7} {'closed msg/s':>13} {'MB/s':>7} {'synced msg/s':>13} "
        f"{'MB/s':>7} {'file MB':>8} {'ours vs best py (closed/synced)':>32} {'of limit (closed/synced)':>25}")
print(head)
print("-" * len(head))
md_rows = []
for r in rows:
    mb = r["count"] * r["size"] / 1e6
    closed, synced = r["count"] / r["closed_s"], r["count"] / r["synced_s"]
    ratio = of_limit = ""
    if r["impl"].startswith("lockstep_bag"):
        same = [o for o in rows if o["case"] == r["case"] and o["compression"] == r["compression"]]
        py = [o for o in same if o["impl"] in ("python mcap", "rosbags")]
        if py:
            ratio = f"{min(o['closed_s'] for o in py) / r['closed_s']:.1f}x / {min(o['synced_s'] for o in py) / r['synced_s']:.1f}x"
        limit = [o for o in rows if o["case"] == r["case"] and (
            o["impl"] == "limit: file write" if r["compression"] == "none"
            else o["impl"].startswith("limit: zstd alone") and not o["impl"].endswith("1 thread"))]
        if limit:
            lim = limit[0]
            of_limit = f"{lim['closed_s'] / r['closed_s']:.2f} / {lim['synced_s'] / r['synced_s']:.2f}"
    print(f"{r['impl']:<30} {r['compression']:<5} {r['case']:<5} {r['count']:>7} {closed:>13.0f} {mb / r['closed_s']:>7.1f}"
          f" {synced:>13.0f} {mb / r['synced_s']:>7.1f} {r['bytes'] / 1e6:>8.1f} {ratio:>32} {of_limit:>25}")
    md_rows.append(f"| {r['impl']} | {r['compression']} | {r['case']} x {r['count']} | {closed:.0f} ({mb / r['closed_s']:.0f}) "
                   f"| {synced:.0f} ({mb / r['synced_s']:.0f}) | {ratio} | {of_limit} |")
if markdown:
    with open(markdown, "a") as f:
        f.write(f"\n### Bag writer alone: same bytes, MCAP chunk CRCs off, 1 MiB chunks, zstd level 3; best of {runs} runs\n\n"
                "| writer | compression | case | closed msg/s (MB/s) | fsync'd msg/s (MB/s) | ours vs best Python (closed / fsync'd) "
                "| fraction of the limit (closed / fsync'd) |\n|---|---|---|---|---|---|---|\n")
        f.write("\n".join(md_rows) + "\n")
PYEOF
