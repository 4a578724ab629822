#!/usr/bin/env bash
# Live view relay figures: 256 B at 10k msg/s and 1 MiB at 100 msg/s to 1 and 4 Foxglove clients
# (@foxglove/ws-protocol, test/view/client.js): messages received, the view's CPU, and the added latency from
# publish to client receipt. Prints a markdown table.
#   Usage: view.sh [seconds per case (10)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build -q --release -p lockstep_cli
python3 scripts/bench/view_bench.py "${CARGO_TARGET_DIR:-$repo/target}/release/lockstep" "${1:-10}"
