#!/usr/bin/env bash
# End to end over DDS: 10,000 msg/s of 256 B for 30 s and 100 MB/s of 1 MiB messages for 30 s through
# lockstep_recorder, with the generic and the compiled-in type support in the same run; prints loss, order,
# rates and the recorder's CPU use.
#   Usage: recorder_e2e.sh [--secs S] [--runs N]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_recorder_node --bins
python3 scripts/bench/recorder_e2e.py "$@"
