#!/usr/bin/env bash
# Builds every package with colcon into build/ and install/, as a ROS 2 user would, then checks that the
# installed workspace works: the interface package imports from install/, the installed node binary starts
# and answers over DDS, and the lockstep command runs.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=env.sh
source scripts/env.sh

# Unoptimised: CI checks that the packages build and install, not their speed.
export LOCKSTEP_CARGO_PROFILE="${LOCKSTEP_CARGO_PROFILE:-dev}"
# The crates are compiled already (scripts/test.sh built them, in target/, with these arguments and this
# environment): colcon's cargo reuses them instead of compiling the workspace a second time into build/.
# What is checked here is the colcon packages, their install space and the installed workspace.
# LOCKSTEP_COLCON_REUSE_TARGET=0 builds apart, as a user's `colcon build` does.
if [ "${LOCKSTEP_COLCON_REUSE_TARGET:-1}" = 1 ]; then
    export LOCKSTEP_CARGO_TARGET_DIR="$repo/target"
    export LOCKSTEP_CARGO_BUILD_ARGS="--all-features --bins --lib --tests --examples"
    export LOCKSTEP_CARGO_AMENT_PREFIX_PATH="$AMENT_PREFIX_PATH"
    export LOCKSTEP_CARGO_CMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH"
fi
colcon build --base-paths msg packages test/fixtures --event-handlers console_cohesion+ summary+

# A fresh shell environment from the install space only (plus the ROS underlay).
(
    set +u
    # shellcheck disable=SC1091
    source install/setup.bash
    set -u
    lockstep --version
    # The verbs that join the ROS graph run in lockstep-ros, installed beside lockstep.
    grep -q "Usage: lockstep replay" <<<"$(lockstep replay --help)"
    fixture="$(find install/lockstep_e2e_fixture/lib/lockstep_e2e_fixture -name lockstep_e2e_fixture -type f)"
    python3 - "$fixture" <<'PY'
import os, subprocess, sys, time
import rclpy
import lockstep_interfaces
from lockstep_interfaces.srv import GetTopology

assert "install/lockstep_interfaces" in lockstep_interfaces.__file__, lockstep_interfaces.__file__
env = dict(os.environ, ROS_DOMAIN_ID="99")
proc = subprocess.Popen([sys.argv[1], "--ros-args", "-p", "module_name:=installed"], env=env)
try:
    rclpy.init(domain_id=99)
    node = rclpy.create_node("colcon_check")
    client = node.create_client(GetTopology, "/e2e/get_topology")
    assert client.wait_for_service(timeout_sec=20), "installed fixture never offered e2e/get_topology"
    future = client.call_async(GetTopology.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=10)
    names = [c.module_name for c in future.result().topology.components]
    assert names == ["installed"], names
    print("colcon install works: installed node answered", names)
finally:
    proc.terminate()
    proc.wait(10)
PY
    # The installed launch files, read as `ros2 launch lockstep_bringup <file>` reads them: the package form,
    # the config from share/lockstep_bringup, every executable from its package's lib/ in the install space.
    plan="$(lockstep launch --print lockstep_bringup everything.launch.xml)"
    for exe in lockstep_sim/lockstep_sim_node lockstep_tasks/lockstep_task_manager lockstep_tasks/lockstep_actuator \
               lockstep_examples/lockstep_module_m1 lockstep_recorder/lockstep_recorder \
               lockstep_calibrator/lockstep_calibrator lockstep_interpolation/lockstep_interpolation_player \
               lockstep_interpolation/lockstep_mock_joints lockstep_view/lockstep_view; do
        if ! grep -q "install/${exe%%/*}/lib/$exe " <<<"$plan"; then
            printf 'installed launch files: %s not taken from install/%s/lib:\n%s\n' "$exe" "${exe%%/*}" "$plan"
            exit 1
        fi
    done
    if ! grep -q "install/lockstep_bringup/share/lockstep_bringup/launch/../config/sim.yaml" <<<"$plan"; then
        printf 'installed launch files: config/sim.yaml not taken from share/lockstep_bringup:\n%s\n' "$plan"
        exit 1
    fi
    echo "installed launch files resolve: $(grep -c '^# ' <<<"$plan") processes of everything.launch.xml from install/"
    # Every node executable in its package's lib/ (what `ros2 run <package> <executable>` runs), answering --help.
    for exe in lockstep_bag_player/lockstep_bag_player lockstep_replay/lockstep_replay \
               lockstep_examples/lockstep_module_m1 lockstep_examples/lockstep_module_m2 \
               lockstep_examples/lockstep_module_m3 lockstep_examples/lockstep_module_split; do
        help="$("install/${exe%%/*}/lib/$exe" --help)"
        grep -q -- "--ros-args" <<<"$help" || { printf 'install/%s/lib/%s --help:\n%s\n' "${exe%%/*}" "$exe" "$help"; exit 1; }
    done
    # The deprecated aliases of executables that moved to another package (for one release): the old
    # `ros2 run <old package> <executable>` path is a script that says it is deprecated and runs the new
    # package's executable, found beside it in the install space, or else through AMENT_PREFIX_PATH (a copy of
    # the script elsewhere has only that).
    elsewhere="$(mktemp -d)"
    trap 'rm -rf "$elsewhere"' EXIT
    for alias in lockstep_replay/lockstep_bag_player:lockstep_bag_player \
                 lockstep_trace/lockstep_module_m1:lockstep_examples lockstep_trace/lockstep_module_m2:lockstep_examples \
                 lockstep_trace/lockstep_module_m3:lockstep_examples lockstep_trace/lockstep_module_split:lockstep_examples; do
        old="${alias%%:*}" new="${alias##*:}" exe="${old##*/}"
        script="install/${old%%/*}/lib/$old"
        cp "$script" "$elsewhere/$exe"
        for run in "$script" "$elsewhere/$exe"; do
            help="$("$run" --help 2>"$elsewhere/stderr")"
            if ! grep -q -- "--ros-args" <<<"$help" || ! grep -q "deprecated.*$new/$exe" "$elsewhere/stderr"; then
                printf 'deprecated alias %s (as %s) does not run %s/%s:\n%s\n%s\n' "$old" "$run" "$new" "$exe" \
                    "$help" "$(cat "$elsewhere/stderr")"
                exit 1
            fi
        done
        # A launch file naming the old package still resolves, to the alias.
        printf '<launch><node pkg="%s" exec="%s"/></launch>\n' "${old%%/*}" "$exe" >"$elsewhere/old.launch.xml"
        if ! grep -q "install/${old%%/*}/lib/$old " <<<"$(lockstep launch --print "$elsewhere/old.launch.xml")"; then
            echo "a launch file with pkg=\"${old%%/*}\" exec=\"$exe\" does not resolve to the deprecated alias" >&2
            exit 1
        fi
    done
    # The renamed package: lockstep_player stays in the ament index of lockstep_interpolation's prefix, its
    # executables scripts in lib/lockstep_player running lockstep_interpolation's.
    for exe in lockstep_interpolation_player lockstep_mock_joints; do
        help="$(install/lockstep_interpolation/lib/lockstep_player/$exe --help 2>"$elsewhere/stderr")"
        if ! grep -q -- "--ros-args" <<<"$help" || ! grep -q "deprecated.*lockstep_interpolation/$exe" "$elsewhere/stderr"; then
            printf 'deprecated alias lockstep_player/%s does not run lockstep_interpolation/%s:\n%s\n%s\n' "$exe" \
                "$exe" "$help" "$(cat "$elsewhere/stderr")"
            exit 1
        fi
        printf '<launch><node pkg="lockstep_player" exec="%s"/></launch>\n' "$exe" >"$elsewhere/old.launch.xml"
        if ! grep -q "install/lockstep_interpolation/lib/lockstep_player/$exe " \
                <<<"$(lockstep launch --print "$elsewhere/old.launch.xml")"; then
            echo "a launch file with pkg=\"lockstep_player\" exec=\"$exe\" does not resolve to the deprecated alias" >&2
            exit 1
        fi
    done
    echo "deprecated aliases work: lockstep_replay/lockstep_bag_player, lockstep_trace/lockstep_module_{m1,m2,m3,split}, lockstep_player/{lockstep_interpolation_player,lockstep_mock_joints}"
    # The Python library and module, built as the ament_python package lockstep_trace_py: `ros2 run` finds the
    # module in lib/lockstep_trace_py, and `import lockstep_trace` takes the installed copy.
    python3 -c 'import lockstep_trace, sys; sys.exit("lockstep_trace from " + lockstep_trace.__file__ if "install/lockstep_trace_py" not in lockstep_trace.__file__ else 0)'
    grep -q "lockstep_step_mode" <<<"$(install/lockstep_trace_py/lib/lockstep_trace_py/lockstep_module_m2_py --help)"
    echo "installed Python package works: lockstep_trace and lockstep_module_m2_py from install/lockstep_trace_py"
    # `lockstep trace` finds the interceptor in its own package's prefix (colcon installs one prefix per package).
    plan="$(lockstep launch -p --trace test/intercept/nodes/pipeline.launch.xml)"
    if ! grep -q "install/lockstep_intercept/lib/liblockstep_intercept_preload.so" <<<"$plan"; then
        printf 'installed lockstep launch --trace: the interceptor not taken from install/lockstep_intercept:\n%s\n' "$plan"
        exit 1
    fi
    echo "installed interceptor found: install/lockstep_intercept/lib/liblockstep_intercept_preload.so"
)
