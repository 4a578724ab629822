#!/usr/bin/env bash
# Bag player figures: (1) messages/s at unlimited rate, 256 B messages, ours (`lockstep bag play --rate 1000`,
# its highest rate: the bag's messages, 1 us apart, are then due 1 ns apart) against a Python player built from rosbags + rclpy, same bag, same QoS, no subscriber, in the same run;
# (2) timing accuracy at rate 1.0: publish time - scheduled time, p50 / p99 / max over 10,000 messages at 1 kHz;
# (3) unlimited rate at 256 B, 4 KiB and 64 KiB against the machine's limit, a C loop publishing one serialized
# message of the same size through rcl with the same QoS (ours as a fraction of it).
#   Usage: bag_player.sh [--runs N] [--count N] [--sizes 256,4096,65536] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_cli
bash scripts/bench/limits/build.sh > /dev/null
python3 scripts/bench/bag_player_bench.py "$@"
