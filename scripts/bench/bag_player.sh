#!/usr/bin/env bash
# Bag player figures: (1) messages/s at unlimited rate, 256 B messages, ours (`lockstep bag play --rate 1e9`)
# against a Python player built from rosbags + rclpy, same bag, same QoS, no subscriber, in the same run;
# (2) timing accuracy at rate 1.0: publish time - scheduled time, p50 / p99 / max over 10,000 messages at 1 kHz.
#   Usage: bag_player.sh [--runs N]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_cli
python3 scripts/bench/bag_player_bench.py "$@"
