#!/usr/bin/env bash
# The main job on the embedded default: no ROS install needed.
#  1. The rule-driven vehicle simulator (packages/lockstep_sim): the sample warehouse scene, surfaces and
#     behaviour from Datalog rule files, driven autonomously to its destination; prints the route, the states
#     it went through, odometry drift and SLAM noise, and an ASCII map of the path.
#  2. The end-to-end proof of the foundation: an r2r node and rclpy exchanging Lockstep messages, a service
#     and an action over real DDS.
# Exits non-zero if either fails.
#
#   bash scripts/demo.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
# shellcheck source=env.sh
source scripts/env.sh
cargo build --bins -p lockstep_sim_node -p lockstep_e2e_fixture -p lockstep_cli
status=0
python3 scripts/demo_sim.py || status=1
echo
python3 scripts/demo_e2e.py || status=1
exit "$status"
