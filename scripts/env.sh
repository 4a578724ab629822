# Source this after `bash scripts/setup.sh`: it makes a plain shell able to run cargo build/test, the node
# binaries, colcon and `python3 -c "import rclpy, lockstep_interfaces"`.
# shellcheck shell=bash

lockstep_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lockstep_state="$lockstep_root/.ros"
lockstep_venv="$lockstep_state/venv"
export LOCKSTEP_ROOT="$lockstep_root"

if [ ! -x "$lockstep_venv/bin/python" ]; then
    echo "scripts/env.sh: run 'bash scripts/setup.sh' first" >&2
    return 1 2>/dev/null || exit 1
fi

if [ -f /opt/ros/jazzy/setup.bash ]; then
    # A real ROS 2 install brings its own environment; set -u would trip over its scripts.
    set +u
    # shellcheck disable=SC1091
    source /opt/ros/jazzy/setup.bash
    export LOCKSTEP_ROS_FROM_WHEELS=0
else
    export ROS_DISTRO=jazzy
    export ROS_VERSION=2
    export ROS_PYTHON_VERSION=3
    export AMENT_PREFIX_PATH="$lockstep_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
    export CMAKE_PREFIX_PATH="$lockstep_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    # Quirk 2: the wheels' shared objects find their vendored libraries (ros_*.libs) only through this path.
    lockstep_libs="$lockstep_venv/lib"
    for lockstep_dir in "$lockstep_venv"/lib/python3*/site-packages/ros_*.libs; do
        [ -d "$lockstep_dir" ] && lockstep_libs="$lockstep_libs:$lockstep_dir"
    done
    export LD_LIBRARY_PATH="$lockstep_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # Quirk 3: librcl.so pulls in the rosidl_generator_py libraries, which need libpython. lockstep_ros's
    # build script links it into every node when this is set (see packages/lockstep_ros/build.rs).
    export LOCKSTEP_ROS_FROM_WHEELS=1
    LOCKSTEP_PYTHON_LIBDIR="$("$lockstep_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
    LOCKSTEP_PYTHON_LIB="$("$lockstep_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LDLIBRARY"))')"
    export LOCKSTEP_PYTHON_LIBDIR LOCKSTEP_PYTHON_LIB
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$LOCKSTEP_PYTHON_LIBDIR"
fi
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"

# Interface packages built by setup.sh (each prefix path changes whenever its sources change): on the prefix
# paths (so r2r generates their bindings), the library path and PYTHONPATH.
lockstep_add_prefix() { # <prefix>
    export AMENT_PREFIX_PATH="$1:$AMENT_PREFIX_PATH"
    export CMAKE_PREFIX_PATH="$1${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export LD_LIBRARY_PATH="$1/lib:$LD_LIBRARY_PATH"
    for lockstep_dir in "$1"/lib/python3*/site-packages "$1"/local/lib/python3*/dist-packages; do
        [ -d "$lockstep_dir" ] && export PYTHONPATH="$lockstep_dir${PYTHONPATH:+:$PYTHONPATH}"
    done
    return 0
}
# msg/control_msgs, built only on a machine without control_msgs of its own.
if [ -f "$lockstep_state/control_msgs/current" ]; then
    lockstep_add_prefix "$(cat "$lockstep_state/control_msgs/current")"
fi
if [ -f "$lockstep_state/interfaces/current" ]; then
    lockstep_add_prefix "$(cat "$lockstep_state/interfaces/current")"
elif [ -z "${LOCKSTEP_SETUP_RUNNING:-}" ]; then
    echo "scripts/env.sh: lockstep_interfaces is not built; run 'bash scripts/setup.sh'" >&2
fi

# The test message package (test/fixtures/lockstep_test_msgs): importable by rclpy and loadable, but NOT on
# AMENT_PREFIX_PATH, so no binary is compiled with it and a node finds its type support only when a test adds
# $LOCKSTEP_TEST_MSGS_PREFIX to the node's AMENT_PREFIX_PATH.
if [ -f "$lockstep_state/test_msgs/current" ]; then
    LOCKSTEP_TEST_MSGS_PREFIX="$(cat "$lockstep_state/test_msgs/current")"
    export LOCKSTEP_TEST_MSGS_PREFIX
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$LOCKSTEP_TEST_MSGS_PREFIX/lib"
    for lockstep_dir in "$LOCKSTEP_TEST_MSGS_PREFIX"/lib/python3*/site-packages \
        "$LOCKSTEP_TEST_MSGS_PREFIX"/local/lib/python3*/dist-packages; do
        [ -d "$lockstep_dir" ] && export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$lockstep_dir"
    done
fi

# Only generate Rust bindings for the interface packages Lockstep uses (keeps r2r's build short). r2r itself
# needs rcl_interfaces, action_msgs, unique_identifier_msgs, builtin_interfaces and rosgraph_msgs.
export IDL_PACKAGE_FILTER="builtin_interfaces;rcl_interfaces;action_msgs;unique_identifier_msgs;rosgraph_msgs;std_msgs;std_srvs;geometry_msgs;nav_msgs;sensor_msgs;diagnostic_msgs;trajectory_msgs;visualization_msgs;control_msgs;lockstep_interfaces"

# `lockstep` and the node binaries as cargo builds them (`cargo build --bins`), like a sourced install space.
export PATH="${CARGO_TARGET_DIR:-$lockstep_root/target}/debug:$lockstep_venv/bin:$PATH"
export LOCKSTEP_PYTHON="$lockstep_venv/bin/python"
unset lockstep_dir lockstep_libs
unset -f lockstep_add_prefix

# Sourced twice (a script run from a shell that sourced it already), the lists above hold every entry twice:
# keep each entry's first place only, so the result is the same however often this file is sourced (r2r and
# cargo see the same AMENT_PREFIX_PATH and compile nothing again).
lockstep_dedupe() { # <variable>
    local IFS=: entry kept="" seen=":"
    local -a entries
    read -ra entries <<<"${!1:-}"
    for entry in "${entries[@]}"; do
        case "$seen" in
            *":$entry:"*) ;;
            *) kept="${kept:+$kept:}$entry" seen="$seen$entry:" ;;
        esac
    done
    export "$1=$kept"
}
for lockstep_var in AMENT_PREFIX_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH PYTHONPATH PATH; do
    lockstep_dedupe "$lockstep_var"
done
unset lockstep_var
unset -f lockstep_dedupe
