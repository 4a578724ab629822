"""Run the rule-driven vehicle simulator on the sample warehouse and report what it did (scripts/demo.sh).

Starts lockstep_sim_node in autonomous mode with config/sim.yaml (true and nominal vehicle parameters differ on
purpose) at a high time scale, listens from rclpy like any ROS 2 user would, waits until the behaviour rules
say `arrived`, then prints the route, the states it went through, how far odometry drifted from the truth and
how noisy the SLAM pose was, and draws the path on an ASCII map of the grid.
"""

import argparse
import math
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from lockstep_testing.harness import RosTestContext, allocate_domain_id, reliable  # noqa: E402

NODE = "lockstep_sim_node"


def read_yaml_params(path: Path) -> dict:
    import yaml  # PyYAML comes with the ROS 2 wheels (launch, rclpy parameters)

    return yaml.safe_load(path.read_text())[NODE]["ros__parameters"]


def read_scene(path: Path):
    lines = [l for l in path.read_text().splitlines() if l.strip() and not l.lstrip().startswith("#")]
    header = lines[0].split()
    columns, rows = int(header[0]), int(header[1])
    cell = float(header[2]) if len(header) > 2 else 1.0
    grid = [l.split() for l in lines[1:1 + rows]]
    return columns, rows, cell, grid


def yaw_of(q) -> float:
    return 2.0 * math.atan2(q.z, q.w)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-scale", type=float, default=10.0, help="simulated seconds per wall second")
    parser.add_argument("--timeout", type=float, default=120.0, help="wall seconds to wait for arrival")
    args = parser.parse_args()

    params_file = REPO / "config/sim.yaml"
    params = read_yaml_params(params_file)
    scene_path = REPO / params["scene_file"]
    columns, rows, cell, grid = read_scene(scene_path)
    start = (params["start_column"], params["start_row"])
    dest = (params["destination_column"], params["destination_row"])

    def cell_of(x, y):
        return int(math.floor(x / cell)), rows - 1 - int(math.floor(y / cell))

    with tempfile.TemporaryDirectory() as logs:
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=Path(logs))
        ok = False
        try:
            truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=1000))
            odom = ros.collect(Odometry, "/odom", reliable(depth=1000))
            slam = ros.collect(PoseWithCovarianceStamped, "/slam_pose", reliable(depth=1000))
            states = ros.collect(String, f"/{NODE}/state", reliable(depth=1000, latched=True))
            rules = ",".join(str(REPO / p.strip()) for p in params["rule_files"].split(","))
            # Start paused so that nothing is missed while discovery runs, then let it go.
            proc = ros.start(NODE, params_file=params_file,
                             params={"scene_file": str(scene_path), "rule_files": rules, "time_scale": 0.0})
            ros.wait_until(lambda: truth and states, 60, "the simulator's first messages", proc=proc)
            from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
            from rcl_interfaces.srv import SetParameters
            ros.call(SetParameters, f"/{NODE}/set_parameters", SetParameters.Request(parameters=[Parameter(
                name="time_scale",
                value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=args.time_scale))]))
            wall0 = time.monotonic()
            ros.wait_until(lambda: any(m.data in ("arrived", "blocked") for m in states), args.timeout,
                           "the vehicle to arrive (or give up)", proc=proc)
            wall = time.monotonic() - wall0

            def end_secs():
                found = re.findall(r"t=([0-9.]+) s: \w+ -> (?:arrived|blocked)", proc.log())
                return float(found[-1]) if found else None

            # rclpy may still be working through the backlog: wait for the truth up to the end.
            ros.wait_until(end_secs, 30, "the final transition in the log", proc=proc)
            ros.wait_until(lambda: truth[-1].header.stamp.sec + truth[-1].header.stamp.nanosec * 1e-9
                           >= end_secs() + 0.5, 60, "the ground truth up to the end", proc=proc)
            log = proc.log()

            samples = [(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, m.pose.position.x, m.pose.position.y,
                        yaw_of(m.pose.orientation)) for m in list(truth)]
            samples.sort()
            length = sum(math.dist(a[1:3], b[1:3]) for a, b in zip(samples, samples[1:]))
            transitions = re.findall(r"t=([0-9.]+) s: (\w+) -> (\w+)", log)
            final_state = states[-1].data
            t_end, x_end, y_end, yaw_end = samples[-1]
            end_cell = cell_of(x_end, y_end)
            arrived_at = next((float(t) for t, _, to in transitions if to == "arrived"), None)

            print("Lockstep vehicle simulator: behaviour and surfaces from Datalog rule files")
            print(f"  scene        {scene_path.relative_to(REPO)}: {columns} x {rows} cells of {cell} m")
            print(f"  rules        {params['rule_files']}")
            print(f"  start        column {start[0]}, row {start[1]} (x={samples[0][1]:.2f}, y={samples[0][2]:.2f})")
            print(f"  destination  column {dest[0]}, row {dest[1]}")
            print(f"  final state  {final_state} in cell column {end_cell[0]}, row {end_cell[1]} "
                  f"(x={x_end:.2f}, y={y_end:.2f})")
            if arrived_at is not None:
                print(f"  time         {arrived_at:.2f} simulated s ({wall:.1f} wall s at time_scale "
                      f"{args.time_scale:g})")
            print(f"  path length  {length:.2f} m")
            visited = ["explore"] + [to for _, _, to in transitions]
            print(f"  states       {' -> '.join(visited)}")
            for t, frm, to in transitions:
                print(f"      t={float(t):6.2f} s  {frm:>14} -> {to}")

            # Odometry integrates the wheels with the NOMINAL parameters; the ground used the TRUE ones.
            if odom:
                o = odom[-1].pose.pose
                x0, y0, yaw0 = samples[0][1], samples[0][2], samples[0][3]
                c, s = math.cos(yaw0), math.sin(yaw0)
                ox = x0 + c * o.position.x - s * o.position.y
                oy = y0 + s * o.position.x + c * o.position.y
                print(f"  odometry     ends at x={ox:.2f}, y={oy:.2f} in map: {math.dist((ox, oy), (x_end, y_end)):.2f} m "
                      f"from the truth (true vs nominal: wheel radius {params['true_vehicle']['wheel_radius_m']} vs "
                      f"{params['nominal_vehicle']['wheel_radius_m']} m, track "
                      f"{params['true_vehicle']['track_width_m']} vs {params['nominal_vehicle']['track_width_m']} m)")
            by_stamp = {round(t, 6): (x, y) for t, x, y, _ in samples}
            errs = [math.dist((m.pose.pose.position.x, m.pose.pose.position.y), by_stamp[k])
                    for m in list(slam)
                    if (k := round(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, 6)) in by_stamp]
            if errs:
                rms = math.sqrt(sum(e * e for e in errs) / len(errs))
                print(f"  SLAM pose    {len(errs)} samples, error rms {rms:.3f} m, max {max(errs):.3f} m "
                      f"(sigma_xy {params['slam_sigma_xy_m']} m)")

            # The map: first matrix row at the top, like the scene file.
            path_cells = {cell_of(x, y) for _, x, y, _ in samples}
            print("\n  map: # obstacle, digit = surface typecode, * path, S start, D destination, @ vehicle")
            for r in range(rows):
                line = []
                for c in range(columns):
                    ch = "#" if grid[r][c] == "0" else grid[r][c][-1]
                    if (c, r) in path_cells:
                        ch = "*"
                    if (c, r) == start:
                        ch = "S"
                    if (c, r) == dest:
                        ch = "D"
                    if (c, r) == end_cell:
                        ch = "@"
                    line.append(ch)
                print("    " + " ".join(line))
            ok = final_state == "arrived" and end_cell == dest
        finally:
            ros.close(print_logs=not ok)
        print("\nsimulator demo:", "OK (arrived)" if ok else "FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
