#!/usr/bin/env bash
# Lock-step replay of unmodified rclpy nodes (test/intercept/nodes/pipeline.launch.xml under
# `lockstep launch --trace-replay`): recorded events reproduced per second and the cost of one event, against
# the DDS limit of one step measured in the same run (lockstep_replay_node's example lockstep_step_limit) and
# against a step of the instrumented Python module (lockstep_module_m2_py, stepped the same way); then the
# alignment table: recorded outputs reproduced with exactly the recorded inputs, lock-step against
# `lockstep bag play` at rates 1 and 5 with the nodes running free. Release build.
#   Usage: unmodified_replay.sh [--messages N] [--limit-steps N] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_cli -p lockstep_intercept_preload -p lockstep_recorder_node \
  -p lockstep_replay_node -p lockstep_examples_node --bins --lib
cargo build --release -q -p lockstep_replay_node --example lockstep_step_limit
python3 scripts/bench/unmodified_replay_bench.py "$@"
