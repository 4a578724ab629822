#!/usr/bin/env bash
# `lockstep test` throughput: cases per minute over a corpus of 6 pipeline recordings at --jobs 1 and 2 and
# through a local Ray cluster with 2 worker CPUs (in a network namespace of its own), same suite and corpus in
# the same run; the runner's own overhead per case; the cost of a 10,000-recording corpus. Release build.
#   Usage: suite.sh [--count N] [--no-ray] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
# What the benchmark runs: the CLI (lockstep test, launch, replay), the recorder and the pipeline's modules.
cargo build --release -q -p lockstep_cli -p lockstep_recorder_node -p lockstep_examples_node --bins
python3 scripts/bench/suite_bench.py "$@"
