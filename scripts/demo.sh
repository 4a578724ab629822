#!/usr/bin/env bash
# The main job on the embedded default: no ROS install needed. Runs the whole story on the embedded simulator
# (scripts/demo.py): the adaptive vehicle drives the sample warehouse (rules) while the example pipeline runs
# and the recorder records; the bag is replayed lock-step and timed, with the alignment comparison; the motion
# model is calibrated from the recorded run; an interpolation file plays with a pause, a resume and a speed
# change; the warehouse transport task runs. Writes the bags, report.json, PNG plots and one self-contained
# report.html into an output folder and prints its path. Exits non-zero if a stage fails.
#
#   bash scripts/demo.sh [--out DIR]      (default DIR: demo-output/<UTC timestamp>)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
# shellcheck source=env-local.sh
source scripts/env-local.sh
# Every binary of the workspace (the launch files start many of them) and the libraries (`--lib`: the rcl
# interceptor is a shared library `lockstep trace` preloads), built exactly as the test script builds
# them, tests included: `--bins` alone resolves some dependencies' features differently (dev-dependencies
# unify only with --tests), so CI, which runs this script and then the tests, would compile those twice.
cargo build --workspace --all-features --bins --lib --tests
exec python3 scripts/demo.py "$@"
