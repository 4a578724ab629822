#!/usr/bin/env bash
# Recorder end to end over DDS: 256 B messages at 1,000, 10,000 and 50,000 msg/s and 100 MB/s of 1 MiB
# messages, 30 s each, through lockstep_recorder with the generic and the compiled-in type support, and through
# the machine's limit (a C loop that only takes each message through rcl), in the same run on the same load;
# prints loss, order, rates and CPU, and the recorder's CPU as a multiple of the limit's.
#   Usage: recorder_e2e.sh [--secs S] [--runs N] [--rates R1,R2,...] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_recorder_node --bins
bash scripts/bench/limits/build.sh > /dev/null
python3 scripts/bench/recorder_e2e.py "$@"
