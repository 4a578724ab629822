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
               lockstep_trace/lockstep_module_m1 lockstep_recorder/lockstep_recorder \
               lockstep_calibrator/lockstep_calibrator lockstep_player/lockstep_interpolation_player \
               lockstep_player/lockstep_mock_joints lockstep_view/lockstep_view; do
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
    # The Python library and module, built as the ament_python package lockstep_trace_py: `ros2 run` finds the
    # module in lib/lockstep_trace_py, and `import lockstep_trace` takes the installed copy.
    python3 -c 'import lockstep_trace, sys; sys.exit("lockstep_trace from " + lockstep_trace.__file__ if "install/lockstep_trace_py" not in lockstep_trace.__file__ else 0)'
    grep -q "lockstep_step_mode" <<<"$(install/lockstep_trace_py/lib/lockstep_trace_py/lockstep_module_m2_py --help)"
    echo "installed Python package works: lockstep_trace and lockstep_module_m2_py from install/lockstep_trace_py"
)
