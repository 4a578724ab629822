#!/usr/bin/env bash
# Runs every check Lockstep has, from a bare machine: setup (idempotent), fmt, the code's shape, clippy, Rust tests, the
# black-box pytest + rclpy suite, and a colcon build of all packages. Exits non-zero on the first failure and
# prints how long each step took.
#
#   bash scripts/test.sh [--under-load] [--pytest-only] [-- PYTEST_ARGS...]
#
#   --under-load   run the pytest suite beside two busy-loop processes (one per core here), to show the
#                  suite holds on a loaded machine; LOCKSTEP_TEST_UNDER_LOAD=1 does the same
#   --pytest-only  only setup, the build and pytest (to run the black-box suite again, say under load)
#   -- ARGS        passed to pytest (a test path, -k EXPR, ...); the other steps still run
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

under_load="${LOCKSTEP_TEST_UNDER_LOAD:-0}"
pytest_args=()
pytest_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --under-load) under_load=1 ;;
        --pytest-only) pytest_only=1 ;;
        --) shift; pytest_args=("$@"); break ;;
        -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) printf 'test.sh: unknown option %s (see --help)\n' "$1" >&2; exit 2 ;;
    esac
    shift
done

# shellcheck source=lib/steps.sh
source scripts/lib/steps.sh

step "setup"
bash scripts/setup.sh
# shellcheck source=env-local.sh
source scripts/env-local.sh

if [ "$pytest_only" = 0 ]; then
    step "cargo fmt --check"
    cargo fmt --all -- --check

    # The code's shape: lines per layer, long files and functions, import circles, duplicated dependencies,
    # and whether CONTRIBUTING.md's generated dependency graphs are up to date (circles, graphs and our own
    # crates' duplicated dependencies fail the step; the rest is printed).
    step "code shape (scripts/metrics)"
    python3 scripts/metrics --contributing CONTRIBUTING.md --check circles,layout,node-files,graphs,deps

    step "cargo clippy"
    cargo clippy --workspace --all-targets --all-features -- -D warnings
fi

# One build for the Rust tests and the node binaries pytest starts: the same features (dev-dependencies'
# included) and profile, so nextest compiles nothing more.
step "build (binaries and tests)"
cargo build --workspace --all-features --bins --lib --tests --examples

if [ "$pytest_only" = 0 ]; then
    step "Rust tests (nextest)"
    cargo nextest run --workspace --all-features --no-fail-fast

    step "doc tests"
    cargo test --workspace --all-features --doc
fi

step "black-box tests (pytest + rclpy)"
export LOCKSTEP_BIN="$repo/target/debug/lockstep"
load_pids=()
if [ "$under_load" = 1 ]; then
    for _ in 1 2; do
        # A busy loop that ends with this script even if it is killed.
        python3 -c 'import ctypes, signal
ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
while True: pass' &
        load_pids+=("$!")
    done
    printf '[test] under load: busy loops %s beside pytest\n' "${load_pids[*]}"
fi
# Tests run side by side, one per core (LOCKSTEP_PYTEST_WORKERS to change): each has a ROS_DOMAIN_ID of its
# own, held by a lock for as long as it runs, so no two tests ever share one.
workers="${LOCKSTEP_PYTEST_WORKERS:-$(nproc)}"
# The whole suite, unless the arguments name test paths of their own.
paths=(test)
for arg in ${pytest_args[@]+"${pytest_args[@]}"}; do
    if [ -e "${arg%%::*}" ]; then paths=(); fi
done
set +e
python3 -m pytest -c test/pytest.ini -n "$workers" --dist worksteal --durations=12 ${paths[@]+"${paths[@]}"} \
    ${pytest_args[@]+"${pytest_args[@]}"}
pytest_rc=$?
set -e
for pid in ${load_pids[@]+"${load_pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
if [ "$pytest_rc" != 0 ]; then
    step_failed "pytest exited $pytest_rc"
    exit "$pytest_rc"
fi

if [ "$pytest_only" = 0 ]; then
    step "colcon build"
    bash scripts/colcon_check.sh
fi

steps_done
