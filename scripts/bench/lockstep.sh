#!/usr/bin/env bash
# Lock-step replay over DDS with the example pipeline: frames/s, orchestration overhead per frame (goal
# <= 2 ms), the DDS limit measured in the same run (a service call plus the output's delivery, with a trivial
# module: lockstep_replay_node's example lockstep_step_limit) and the replay's time per frame as a multiple of
# it (goal <= 2x), and the alignment table (lock-step vs timed playback at rates 1, 2, 5). Release build.
#   Usage: lockstep.sh [--ticks N | --ticks-list N1,N2,N3] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
# What the benchmark runs: the CLI, the recorder, the pipeline's modules and the limit's trivial module.
cargo build --release -q -p lockstep_cli -p lockstep_recorder_node -p lockstep_examples_node -p lockstep_replay_node --bins
cargo build --release -q -p lockstep_replay_node --example lockstep_step_limit
python3 scripts/bench/lockstep_bench.py "$@"
