#!/usr/bin/env bash
# Fleet figures: 3, 6 and 10 robots kept busy on the shipped warehouse map for one simulated hour, the task
# manager's shared-floor reservations on and off, in one run on the same seeded tasks: tasks done per hour,
# samples (every 0.1 s) with two robots closer than 0.5 m, the time a task spent with its robot standing for a
# held lane or station, and the manager's median time per new task (assignment, decomposition, planning).
# Robots drive each goal's route at its speed in simulated time; the manager is the real state machine.
#   Usage: fleet.sh [ROBOTS...]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_tasks --bench fleet -- "$@"
