#!/usr/bin/env bash
# The main job on the embedded default: no ROS install needed. Until the simulator lands, it shows the
# foundation working end to end: an r2r node and rclpy exchanging Lockstep messages, a service and an action
# over real DDS, and prints what it saw.
#
#   bash scripts/demo.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
# shellcheck source=env.sh
source scripts/env.sh
cargo build --bins -p lockstep_e2e_fixture -p lockstep_cli
exec python3 scripts/demo_e2e.py
