#!/usr/bin/env bash
# The rcl interceptor's cost (liblockstep_intercept_preload.so, `lockstep trace`), with the machine's limit in
# the same run on the same loops: us per rcl_publish and per rcl_take at 256 B and 1 MiB from a C program over
# rcl (no client library), plain, preloaded but disabled, and recording with parts of its work left out
# (LOCKSTEP_INTERCEPT_SKIP), so that forwarding, its own work, the payload digest, the header publish and the
# event log are reported apart (goal: own work under 2 us per message at 256 B); then the CPU of the
# three-node rclpy pipeline test/intercept/nodes/pipeline.launch.xml under `lockstep launch`, untraced and
# with --trace, on the same feed. Release build of the interceptor and of `lockstep`.
#   Usage: intercept.sh [--runs N] [--small-count N] [--large-count N] [--secs S] [--raw-hz HZ] [--odom-hz HZ]
#                       [--pipeline-runs N] [--markdown FILE]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo build --release -q -p lockstep_intercept_preload -p lockstep_cli
# The C program, against the ROS 2 headers and libraries scripts/setup.sh installed in .ros/venv (librcl pulls
# in the rosidl_generator_py libraries, which need libpython).
venv="$repo/.ros/venv"
out="${CARGO_TARGET_DIR:-$repo/target}/bench-limits"
src="$repo/scripts/bench/intercept_bench.c"
mkdir -p "$out"
if [ ! -x "$out/intercept_bench" ] || [ "$src" -nt "$out/intercept_bench" ]; then
    includes=()
    for dir in "$venv"/include/*/; do includes+=("-I$dir"); done
    python_lib="${LOCKSTEP_PYTHON_LIB#lib}"
    python_lib="${python_lib%%.so*}"
    cc -O2 -Wall -Wextra -o "$out/intercept_bench" "$src" "${includes[@]}" -L"$venv/lib" \
        -lrcl -lrmw -lrcutils -lrosidl_runtime_c -lstd_msgs__rosidl_typesupport_c -lstd_msgs__rosidl_generator_c \
        -L"${LOCKSTEP_PYTHON_LIBDIR:?source scripts/env-local.sh first}" -Wl,--no-as-needed -l"$python_lib" \
        -Wl,--as-needed -Wl,-rpath,"$venv/lib"
fi
python3 scripts/bench/intercept_bench.py "$@"
