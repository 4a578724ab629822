#!/usr/bin/env bash
# Builds the machine-limit programs (rcl_limit.c) into target/bench-limits/ against the ROS 2 headers and
# libraries scripts/setup.sh installed in .ros/venv. Source scripts/env-local.sh first. Prints the binary's path.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
venv="$repo/.ros/venv"
out="${CARGO_TARGET_DIR:-$repo/target}/bench-limits"
mkdir -p "$out"
includes=()
for dir in "$venv"/include/*/; do includes+=("-I$dir"); done
src="$repo/scripts/bench/limits/rcl_limit.c"
if [ ! -x "$out/rcl_limit" ] || [ "$src" -nt "$out/rcl_limit" ]; then
    gcc -O2 -Wall -Wextra -o "$out/rcl_limit" "$src" "${includes[@]}" -L"$venv/lib" \
        -lrcl -lrmw -lrcutils -lstd_msgs__rosidl_typesupport_c \
        -L"${LOCKSTEP_PYTHON_LIBDIR:?source scripts/env-local.sh first}" -Wl,--no-as-needed -lpython3.11 -Wl,--as-needed -Wl,-rpath,"$venv/lib"
fi
echo "$out/rcl_limit"
