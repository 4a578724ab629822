#!/usr/bin/env bash
# Lock-step replay figures: in-process module steps per second for trivial modules (goal >= 100,000), with
# the recording's load time and the simulated bag's write time. Usage: replay.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_replay --bench inprocess
