#!/usr/bin/env bash
# The player in trajectory-controller mode against a joint_trajectory_controller's speed scaling: 100 random
# SpeedScalingFactor messages on one trajectory, ours (ramps planned within every limit) against instant time
# scaling (what the joint_trajectory_controller does), peak |v| |a| |j| per joint as a fraction of its limit
# (cargo bench --bench scaling; exits non-zero if ours breaks a limit). Then the output ticks at 500 Hz over
# DDS while FollowJointTrajectory goals replace each other (scripts/bench/trajectory_controller.py; release
# build): lateness p50 / p99 / max, the mock's alarms, CPU.
#   Usage: trajectory_controller.sh [--messages N (100)] [--seed S (7)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_interpolation --bench scaling --no-run
cargo bench -q -p lockstep_interpolation --bench scaling -- "$@"
cargo build -q --release -p lockstep_interpolation_node -p lockstep_cli
python3 scripts/bench/trajectory_controller.py --profile release
