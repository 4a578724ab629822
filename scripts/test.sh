#!/usr/bin/env bash
# Runs every check Lockstep has, from a bare machine: setup (idempotent), fmt, clippy, Rust tests, the
# black-box pytest + rclpy suite, and a colcon build of all packages. Exits non-zero on the first failure.
#
#   bash scripts/test.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

step() { printf '\n==== %s ====\n' "$*"; }
started=$SECONDS

step "setup"
bash scripts/setup.sh
# shellcheck source=env.sh
source scripts/env.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "Rust tests (nextest) and doc tests"
cargo nextest run --workspace --all-features --no-fail-fast
cargo test --workspace --all-features --doc

step "black-box tests (pytest + rclpy)"
cargo build --workspace --bins
export LOCKSTEP_BIN="$repo/target/debug/lockstep"
python3 -m pytest -c test/pytest.ini test

step "colcon build"
bash scripts/colcon_check.sh

printf '\nall checks passed in %d s\n' "$((SECONDS - started))"
