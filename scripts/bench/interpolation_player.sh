#!/usr/bin/env bash
# Interpolation player figures: 100 random pause / resume / speed changes on one
# generated file, ours (ramps planned and checked by simulation) against instant speed scaling (what the
# joint_trajectory_controller does), same file, same requests, same output period: peak |v| and |a| per joint
# as a fraction of its limit, alarms, and the time one plan takes. Exits non-zero if ours breaks a limit.
# Then streams a 60 s file at 500 Hz to the mock joints and prints tick and arrival jitter, missed cycles and
# CPU use (scripts/bench/player_jitter.py).
#   Usage: interpolation_player.sh [--requests N (100)] [--seed S (7)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_interpolation --bench changes --no-run
cargo bench -q -p lockstep_interpolation --bench changes -- "$@"
# Streaming jitter at 500 Hz over DDS (release builds of the player, the mock and the CLI).
cargo build -q --release -p lockstep_interpolation_node -p lockstep_cli
python3 scripts/bench/player_jitter.py
