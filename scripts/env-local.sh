# Source this instead of env.sh for tests, benchmarks and the demo: env.sh, and DDS discovery kept on this
# machine. With ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST a node finds only peers on this host, so a test or a
# benchmark neither hears nor disturbs another machine's nodes on the same network (each test still has a
# ROS_DOMAIN_ID of its own). A suite run without it fails its first test (test/test_environment.py).
# shellcheck shell=bash
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
