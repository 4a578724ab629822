#!/usr/bin/env bash
# Throughput of `lockstep bag merge` and `lockstep bag filter` (release build) in MB/s of input, against a merge and
# a filter written here in Python on `rosbags` (its Reader and MCAP Writer: what a user would write without our
# tools), on the same generated bags in the same run, and against the machine's limits on the same files:
# `cat file > /dev/null` (reading) and `cat file > copy` (reading and writing, what a copy at best costs).
#
#   scripts/bench/bag_verbs.sh [--size-mb N] [--runs N] [--markdown FILE]
#
# The data: two rosbag2 MCAP bags written by rosbags, N/2 MB each (default N = 1024: 1 GB in all), on four topics
# of 1 KiB to 64 KiB messages (/camera 64 KiB at 30 Hz, /lidar 16 KiB at 10 Hz, /imu 1 KiB at 200 Hz, /tf 2 KiB at
# 50 Hz, bytes of 4-bit entropy), the second bag's times interleaved with the first's, plus one /tf_static at the
# start. Cases, each timed from process start to exit, best of --runs (default 2):
#   - merge: the two bags into one (N MB in);
#   - filter: the merged bag without /lidar, from 10 % of its duration on (`--start-time`), with the last
#     /tf_static before that kept (`--last-per-channel-topic-regex`), N MB in.
# Both sides write uncompressed chunks; the page cache is warm (each input is read once before timing). MB/s is
# input bytes / seconds. Python comes from $LOCKSTEP_PYTHON or `python3` and needs `rosbags`, `numpy`, `pyyaml`.
set -euo pipefail

SIZE_MB=1024
RUNS=2
MARKDOWN=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size-mb) SIZE_MB="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --markdown) MARKDOWN="$2"; shift 2 ;;
    *) echo "usage: $0 [--size-mb N] [--runs N] [--markdown FILE]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../env-local.sh
source "$ROOT/scripts/env-local.sh"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
PY="${LOCKSTEP_PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bag_verbs_bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "building lockstep (release)..." >&2
(cd "$ROOT" && cargo build --release -q -p lockstep_cli --bin lockstep)
LOCKSTEP="${CARGO_TARGET_DIR:-$ROOT/target}/release/lockstep"

echo "writing two bags of $((SIZE_MB / 2)) MB with rosbags..." >&2
"$PY" - "$WORK" "$SIZE_MB" <<'PYEOF'
import sys
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

work, size_mb = Path(sys.argv[1]), int(sys.argv[2])
store = get_typestore(Stores.ROS2_JAZZY)
pool = np.random.default_rng(7).integers(0, 16, size=4 << 20, dtype=np.uint8).tobytes()
# topic: (bytes, period in ns)
TOPICS = {"/camera": (64 << 10, 33_333_333), "/lidar": (16 << 10, 100_000_000), "/imu": (1 << 10, 5_000_000),
          "/tf": (2 << 10, 20_000_000)}
per_second = sum(size * 1e9 / period for size, period in TOPICS.values())
seconds = size_mb / 2 * 1e6 / per_second
for n in (0, 1):
    with Writer(work / f"in{n}", version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {t: writer.add_connection(t, "std_msgs/msg/UInt8MultiArray", typestore=store) for t in TOPICS}
        static = writer.add_connection("/tf_static", "std_msgs/msg/UInt8MultiArray", typestore=store)
        start = 1_700_000_000_000_000_000 + n * 1_000  # the second bag's times between the first's
        writer.write(static, start, pool[:256])
        events = sorted((start + k * period, topic) for topic, (_, period) in TOPICS.items()
                        for k in range(int(seconds * 1e9 / period)))
        for i, (t, topic) in enumerate(events):
            size = TOPICS[topic][0]
            offset = (i * 4099) % (len(pool) - size)
            writer.write(conns[topic], t, pool[offset:offset + size])
PYEOF

for bag in "$WORK/in0" "$WORK/in1"; do cat "$bag"/*.mcap > /dev/null; done
bytes_of() { du -cb "$@" | tail -1 | cut -f1; }
# Seconds of the fastest of $RUNS runs of a command; the output directory named by $1 is removed before each run.
best_of() {
  local out="$1"; shift
  local best="" t0 t1 secs
  for _ in $(seq "$RUNS"); do
    rm -rf "$out"
    t0=$(date +%s.%N)
    "$@" > /dev/null
    t1=$(date +%s.%N)
    secs=$(echo "$t1 - $t0" | bc -l)
    if [[ -z "$best" ]] || (( $(echo "$secs < $best" | bc -l) )); then best="$secs"; fi
  done
  echo "$best"
}

results="$WORK/results.txt"
inputs=("$WORK"/in0/*.mcap "$WORK"/in1/*.mcap)
merge_in=$(bytes_of "${inputs[@]}")
echo "limit_read $merge_in $(best_of "$WORK/none" sh -c 'cat "$@" > /dev/null' sh "${inputs[@]}")" >> "$results"
echo "limit_copy $merge_in $(best_of "$WORK/copy" sh -c 'mkdir -p "$0" && cat "$@" > "$0/copy"' "$WORK/copy" "${inputs[@]}")" >> "$results"
echo "merge_ours $merge_in $(best_of "$WORK/merged" "$LOCKSTEP" bag merge "$WORK/merged" "$WORK/in0" "$WORK/in1")" >> "$results"

cat > "$WORK/py_verbs.py" <<'PYEOF'
"""A merge and a filter built on rosbags, as a user would write them: Reader in, MCAP Writer out."""
import heapq
import sys
from pathlib import Path

from rosbags.rosbag2 import Reader, StoragePlugin, Writer


def copy_connection(writer, conn):
    return writer.add_connection(conn.topic, conn.msgtype, msgdef=conn.msgdef.data, rihs01=conn.digest,
                                 serialization_format=conn.ext.serialization_format,
                                 offered_qos_profiles=conn.ext.offered_qos_profiles)


def merge(out, inputs):
    readers = [Reader(p) for p in inputs]
    for r in readers:
        r.open()
    with Writer(out, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        by_topic = {}
        for r in readers:
            for c in r.connections:
                if c.topic not in by_topic:
                    by_topic[c.topic] = copy_connection(writer, c)
        streams = [((t, i, conn.topic, raw) for conn, t, raw in r.messages()) for i, r in enumerate(readers)]
        for t, _, topic, raw in heapq.merge(*streams, key=lambda m: (m[0], m[1])):
            writer.write(by_topic[topic], t, raw)
    for r in readers:
        r.close()


def filter_bag(out, path, drop, start, latched):
    with Reader(path) as reader, Writer(out, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        kept = [c for c in reader.connections if c.topic != drop]
        conns = {c.id: copy_connection(writer, c) for c in kept}
        last = {}
        latched_conns = [c for c in kept if c.topic == latched]
        # (An empty list would mean every connection to rosbags.)
        for conn, t, raw in reader.messages(connections=latched_conns, stop=start) if latched_conns else ():
            last[conn.id] = (t, raw)
        for cid, (t, raw) in sorted(last.items(), key=lambda kv: kv[1][0]):
            writer.write(conns[cid], t, raw)
        for conn, t, raw in reader.messages(connections=kept, start=start):
            writer.write(conns[conn.id], t, raw)


if __name__ == "__main__":
    if sys.argv[1] == "merge":
        merge(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
    else:
        filter_bag(Path(sys.argv[2]), Path(sys.argv[3]), "/lidar", int(sys.argv[4]), "/tf_static")
PYEOF
echo "merge_rosbags $merge_in $(best_of "$WORK/py_merged" "$PY" "$WORK/py_verbs.py" merge "$WORK/py_merged" "$WORK/in0" "$WORK/in1")" >> "$results"

# The filter's input: our merged bag (kept from the last merge run), read once before timing.
cat "$WORK"/merged/*.mcap > /dev/null
filter_in=$(bytes_of "$WORK"/merged/*.mcap)
# The filter's range starts at 10 % of the bag's duration: exact nanoseconds for both sides.
read -r start_secs start_ns < <("$PY" - "$WORK/merged/metadata.yaml" <<'PYEOF'
import sys, yaml
info = yaml.safe_load(open(sys.argv[1]))["rosbag2_bagfile_information"]
start = info["starting_time"]["nanoseconds_since_epoch"] + info["duration"]["nanoseconds"] // 10
print(f"{start // 10**9}.{start % 10**9:09d} {start}")
PYEOF
)
echo "filter_ours $filter_in $(best_of "$WORK/filtered" "$LOCKSTEP" bag filter "$WORK/merged" "$WORK/filtered" \
  -x '^/lidar$' --start-time "$start_secs" --last-per-channel-topic-regex /tf_static)" >> "$results"
echo "filter_rosbags $filter_in $(best_of "$WORK/py_filtered" "$PY" "$WORK/py_verbs.py" filter "$WORK/py_filtered" \
  "$WORK/merged" "$start_ns")" >> "$results"

MACHINE="$(nproc) cores, $(uname -sr), $(df -PT "$WORK" | awk 'NR==2 {print $2}') at $WORK"
MACHINE="$MACHINE; load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$results" "$WORK" "$RUNS" "$MACHINE" "$MARKDOWN" <<'PYEOF'
import importlib.metadata as md
import sys
from pathlib import Path

import yaml

results, work, runs, machine, markdown = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = {name: (int(nbytes), float(secs)) for name, nbytes, secs in (line.split() for line in open(results))}


def count(bag):
    return yaml.safe_load(open(work / bag / "metadata.yaml"))["rosbag2_bagfile_information"]["message_count"]


# Both sides must have written the same messages, or the comparison means nothing.
for ours, theirs in (("merged", "py_merged"), ("filtered", "py_filtered")):
    assert count(ours) == count(theirs), (ours, count(ours), theirs, count(theirs))

labels = {"limit_read": "limit: cat file > /dev/null", "limit_copy": "limit: cat file > copy",
          "merge_ours": "lockstep bag merge", "merge_rosbags": "rosbags merge (Python)",
          "filter_ours": "lockstep bag filter", "filter_rosbags": "rosbags filter (Python)"}
mbs = {name: nbytes / 1e6 / secs for name, (nbytes, secs) in rows.items()}
print(f"Input: {rows['merge_ours'][0] / 1e6:.0f} MB to merge ({count('merged')} messages), "
      f"{rows['filter_ours'][0] / 1e6:.0f} MB to filter ({count('filtered')} kept); best of {runs} runs, warm page cache.")
print(f"  rosbags {md.version('rosbags')}; {machine}")
print()
head = f"{'what':<30} {'MB in':>8} {'seconds':>8} {'MB/s':>8} {'vs rosbags':>11} {'of copy limit':>14}"
print(head)
print("-" * len(head))
md_rows = []
for name, label in labels.items():
    nbytes, secs = rows[name]
    vs = of_limit = ""
    if name.endswith("_ours"):
        verb = name.split("_")[0]
        vs = f"{mbs[name] / mbs[verb + '_rosbags']:.1f}x"
        of_limit = f"{mbs[name] / mbs['limit_copy']:.2f}"
    print(f"{label:<30} {nbytes / 1e6:>8.0f} {secs:>8.2f} {mbs[name]:>8.0f} {vs:>11} {of_limit:>14}")
    md_rows.append(f"| {label} | {nbytes / 1e6:.0f} | {secs:.2f} | {mbs[name]:.0f} | {vs} | {of_limit} |")
if markdown:
    with open(markdown, "a") as f:
        f.write(f"\n### Bag merge and filter: {rows['merge_ours'][0] / 1e6:.0f} MB of 1-64 KiB messages, "
                f"best of {runs} runs, warm page cache\n\n"
                "| what | MB in | seconds | MB/s | vs rosbags | fraction of the copy limit |\n|---|---|---|---|---|---|\n")
        f.write("\n".join(md_rows) + "\n")
PYEOF
