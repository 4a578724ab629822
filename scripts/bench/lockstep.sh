#!/usr/bin/env bash
# Lock-step replay over DDS with the example pipeline: frames/s, orchestration overhead per frame (goal
# <= 2 ms) and the alignment table (lock-step vs timed playback at rates 1, 2, 5). Release build.
#   Usage: lockstep.sh [--ticks N]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q --workspace --bins
python3 scripts/bench/lockstep_bench.py "$@"
