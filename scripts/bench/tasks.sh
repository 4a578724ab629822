#!/usr/bin/env bash
# Task-manager figures (issue 13, "Performance"), in-process so far: decomposing a 1,000-leaf task, the memory
# it holds, scheduling per leaf against instant actuators, and 1,000 AddAttribute calls during a run.
#   Usage: tasks.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env.sh
source scripts/env.sh
cargo bench -q -p lockstep_tasks --bench tasks
