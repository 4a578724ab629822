#!/usr/bin/env bash
# Step overhead of the Python motion controller (lockstep_module_m2_py, on the Python library lockstep_trace)
# against the Rust one (lockstep_module_m2) in lock-step replay over DDS: one recording of the example
# pipeline, replayed with each implementation in interleaved rounds (and without the motion controller live,
# to isolate its steps); ms per motion-controller step, wall ms per frame, Python/Rust. Every replay must
# reproduce every channel exactly. Release build of the Rust parts; the Python node is the one that
# scripts/setup.sh installed into the venv (run it again after changing packages/lockstep_trace_py).
#   Usage: step_overhead_py.sh [--ticks N] [--rounds N]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
command -v lockstep_module_m2_py >/dev/null || {
    echo "lockstep_module_m2_py is not installed: run bash scripts/setup.sh" >&2
    exit 1
}
# What the benchmark runs: the CLI, the recorder and the pipeline's modules.
cargo build --release -q -p lockstep_cli -p lockstep_recorder_node -p lockstep_examples_node -p lockstep_replay_node --bins
python3 scripts/bench/step_overhead_py.py "$@"
