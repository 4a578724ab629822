#!/usr/bin/env bash
# Bag writer throughput: lockstep_bag (Rust) vs the Python `mcap` writer vs the `rosbags` rosbag2
# writer (MCAP storage), on the same data, in one run. Prints one table.
#
#   scripts/bench/bag_writer.sh [--small N] [--large N]
#
# Python comes from $LOCKSTEP_PYTHON or `python3` and needs `mcap` and `rosbags` installed.
# Cases: N x 256 B messages (default 200000) and N x 1 MiB messages (default 500); every writer
# writes uncompressed chunks to a fresh file in the same temporary directory, including closing the
# file (summary/footer, metadata.yaml). Best of three runs per writer and case.
set -euo pipefail

SMALL=200000
LARGE=500
while [[ $# -gt 0 ]]; do
  case "$1" in
    --small) SMALL="$2"; shift 2 ;;
    --large) LARGE="$2"; shift 2 ;;
    *) echo "usage: $0 [--small N] [--large N]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${LOCKSTEP_PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bag_writer_bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "building the Rust bench (release)..." >&2
(cd "$ROOT" && cargo bench -p lockstep_bag --bench bag_writer --no-run >&2)
(cd "$ROOT" && cargo bench -p lockstep_bag --bench bag_writer -- --json --dir "$WORK" --small "$SMALL" --large "$LARGE") \
  | grep '^{' > "$WORK/results.jsonl"

"$PY" - "$WORK" "$SMALL" "$LARGE" >> "$WORK/results.jsonl" <<'PYEOF'
import json, shutil, sys, time
from pathlib import Path

work, small, large = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cases = [("256B", 256, small), ("1MiB", 1 << 20, large)]

def payload(size):
    return bytes(((i * 2654435761) >> 7) & 0xFF for i in range(size)) if size <= 4096 else \
        (bytes(((i * 2654435761) >> 7) & 0xFF for i in range(4096)) * (size // 4096))

def bench_mcap(size, count, data):
    from mcap.writer import Writer, CompressionType
    path = work / "py_mcap.mcap"
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        w = Writer(f, compression=CompressionType.NONE, chunk_size=768 * 1024)
        w.start(profile="ros2", library="bench")
        sid = w.register_schema(name="std_msgs/msg/UInt8MultiArray", encoding="ros2msg", data=b"uint8[] data\n")
        cid = w.register_channel(topic="/bench", message_encoding="cdr", schema_id=sid)
        for i in range(count):
            t = 1_000_000_000 + i * 1000
            w.add_message(channel_id=cid, log_time=t, data=data, publish_time=t)
        w.finish()
    dt = time.perf_counter() - t0
    path.unlink()
    return dt

def bench_rosbags(size, count, data):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_JAZZY)
    path = work / "py_rosbags"
    if path.exists():
        shutil.rmtree(path)
    t0 = time.perf_counter()
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/bench", "std_msgs/msg/UInt8MultiArray", typestore=store)
        for i in range(count):
            w.write(conn, 1_000_000_000 + i * 1000, data)
    dt = time.perf_counter() - t0
    shutil.rmtree(path)
    return dt

for impl, fn in (("python mcap", bench_mcap), ("rosbags", bench_rosbags)):
    for name, size, count in cases:
        data = payload(size)
        best = min(fn(size, count, data) for _ in range(3))
        print(json.dumps({"impl": impl, "case": name, "size": size, "count": count, "seconds": best,
                          "msgs_per_s": count / best, "mb_per_s": count * size / best / 1e6}))
PYEOF

"$PY" - "$WORK/results.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'writer':<14} {'case':<6} {'count':>8} {'seconds':>9} {'msgs/s':>12} {'MB/s':>9} {'ours vs best python':>20}")
for r in rows:
    others = [o["msgs_per_s"] for o in rows if o["case"] == r["case"] and o["impl"] != "lockstep_bag"]
    ratio = f"{r['msgs_per_s'] / max(others):.1f}x" if r["impl"] == "lockstep_bag" and others else ""
    print(f"{r['impl']:<14} {r['case']:<6} {r['count']:>8} {r['seconds']:>9.3f} {r['msgs_per_s']:>12.0f} {r['mb_per_s']:>9.1f} {ratio:>20}")
PYEOF
