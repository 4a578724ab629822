#!/usr/bin/env bash
# Peak RSS of `lockstep replay --in-process` against the payload of the recording: records the example
# pipeline with a 1 MiB camera image at 30 Hz beside it, for each size asked (GB of image payload), replays
# it in-process and prints a table (payload GB, bag GB, peak RSS MB, seconds). Sizes default to 0.1 (a
# quick run); docs/performance.md's figures use 0.1 1 4 (4 GB records for about 2 min 15 s and needs ~5 GB of disk).
#   Usage: replay_memory.sh [SIZE_GB ...] [--keep DIR] [--bag DIR ...] [--debug]
# --debug measures the debug build (no release build needed); else the release build is built first.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
args=()
profile=release
for a in "$@"; do
    if [[ "$a" == --debug ]]; then profile=debug; else args+=("$a"); fi
done
if [[ "$profile" == release ]]; then
    cargo build --release -q -p lockstep_cli -p lockstep_recorder_node -p lockstep_examples_node --bins
else
    cargo build -q -p lockstep_cli -p lockstep_recorder_node -p lockstep_examples_node --bins
fi
LOCKSTEP_PROFILE="$profile" python3 scripts/bench/replay_memory.py "${args[@]}"
