#!/usr/bin/env bash
# Every throughput benchmark with its anchors and the machine's limit, in one run: the bag writer (Python
# writers, memcpy, disk and zstd alone), the bag player (Python player; a C loop publishing through rcl), the
# recorder (a C loop taking through rcl) and lock-step replay over DDS (a trivial step server called in a tight
# loop), each at three sizes, `lockstep test` (cases per minute at --jobs 1 and 2 and through Ray), and the rcl
# interceptor of `lockstep trace` (us per publish and per take against a plain C loop over rcl, and the CPU of a
# traced rclpy pipeline against the untraced one), and lock-step replay of unmodified rclpy nodes (events per
# second against the DDS step limit and the instrumented Python module, and its alignment table), and the bag file
# verbs (`lockstep bag merge` and `filter` in MB/s against a rosbags-based merge and filter and against `cat`).
# Writes bench-results/<UTC time>/summary.md with the tables docs/performance.md quotes, and each benchmark's full
# output beside it (<name>.log).
#   Usage: scripts/bench/all.sh [--quick]   (--quick: shorter runs, for checking the scripts, not for figures)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
quick=0
case "${1:-}" in
    --quick) quick=1 ;;
    "") ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
out="$repo/bench-results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
summary="$out/summary.md"
{
    echo "# Lockstep benchmarks against their anchors and the machine's limit"
    echo
    echo "Commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)'), $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(uname -sr); load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "rosbag2 (\`ros2 bag record\` / \`ros2 bag play\`) is not an anchor here: it is not installable from this"
    echo "machine's package sources (see docs/limitations.md); the C limit programs stand in for it from below."
} > "$summary"

failed=()
run() { # name, command...
    local name="$1"
    shift
    printf '\n######## %s: %s ########\n' "$name" "$*"
    local started=$SECONDS
    if "$@" 2>&1 | tee "$out/$name.log"; then
        echo "[all] $name: $((SECONDS - started)) s"
    else
        echo "[all] $name FAILED after $((SECONDS - started)) s (see $out/$name.log)"
        failed+=("$name")
        printf '\n### %s: FAILED (see %s.log)\n' "$name" "$name" >> "$summary"
    fi
}

if [ "$quick" = 1 ]; then
    run bag_writer bash scripts/bench/bag_writer.sh --small 20000 --medium 400 --large 50 --runs 1 --markdown "$summary"
    run bag_verbs bash scripts/bench/bag_verbs.sh --size-mb 200 --runs 1 --markdown "$summary"
    run bag_player bash scripts/bench/bag_player.sh --runs 1 --count 20000 --markdown "$summary"
    run recorder bash scripts/bench/recorder_e2e.sh --secs 3 --runs 1 --markdown "$summary"
    run replay bash scripts/bench/lockstep.sh --ticks-list 50,100,200 --markdown "$summary"
    run suite bash scripts/bench/suite.sh --count 2 --no-ray --markdown "$summary"
    run intercept bash scripts/bench/intercept.sh --runs 1 --small-count 5000 --large-count 100 --secs 3 \
        --pipeline-runs 1 --markdown "$summary"
    run unmodified_replay bash scripts/bench/unmodified_replay.sh --messages 100 --limit-steps 500 \
        --python-ticks 100 --markdown "$summary"
else
    run bag_writer bash scripts/bench/bag_writer.sh --markdown "$summary"
    run bag_verbs bash scripts/bench/bag_verbs.sh --markdown "$summary"
    run bag_player bash scripts/bench/bag_player.sh --runs 3 --markdown "$summary"
    run recorder bash scripts/bench/recorder_e2e.sh --secs 20 --runs 1 --markdown "$summary"
    run replay bash scripts/bench/lockstep.sh --ticks-list 100,250,500 --markdown "$summary"
    run suite bash scripts/bench/suite.sh --markdown "$summary"
    run intercept bash scripts/bench/intercept.sh --markdown "$summary"
    run unmodified_replay bash scripts/bench/unmodified_replay.sh --markdown "$summary"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$summary"
printf '\n[all] summary: %s\n' "$summary"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "[all] failed: ${failed[*]}" >&2
    exit 1
fi
