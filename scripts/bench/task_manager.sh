#!/usr/bin/env bash
# Task-manager figures: in-process (the library: decomposition, memory per task,
# scheduling per leaf, AddAttribute), then over DDS (release builds of lockstep_task_manager and
# lockstep_actuator, rclpy as the client): decomposition in the node, the cycle and the manager's dispatch
# overhead per leaf against an instant actuator, memory per queued task, 1,000 AddAttribute calls during a run.
#   Usage: task_manager.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_tasks --bench tasks
cargo build -q --release -p lockstep_tasks_node
python3 scripts/bench/task_manager_bench.py
