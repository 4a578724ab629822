#!/usr/bin/env bash
# Output tick timing of the interpolation player under service requests: one long generated file played at
# 500 Hz to the mock joints over DDS, with no request and with a burst of 100 random pause / resume /
# set_speed requests within 1 s (sent without waiting for the answers); tick lateness p50 / p99 / max, the
# largest gap between two commands, the requests' answer times and the player's CPU, for the debug and the
# release build (scripts/bench/player_ticks.py). Builds the player, the mock and the CLI in each profile run.
#   Usage: player_ticks.sh [--profile debug|release|both (both)] [--seconds S (30)] [--requests N (100)]
#                          [--spacing-s S (0.01)] [--rng-state N (7)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
profile=both
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --profile) profile="${args[i + 1]:-}" ;;
        --profile=*) profile="${args[i]#--profile=}" ;;
    esac
done
case "$profile" in
    debug | both) cargo build -q -p lockstep_interpolation_node -p lockstep_cli ;;&
    release | both) cargo build -q --release -p lockstep_interpolation_node -p lockstep_cli ;;
    debug) ;;
    *) echo "--profile: debug, release or both, not '$profile'" >&2; exit 2 ;;
esac
python3 scripts/bench/player_ticks.py "$@"
