"""`lockstep calibrate <bag>` on short drives written here with the Python `rosbags` (nobody here wrote it):
its exit code, its report, calibration.yaml and diff_drive_controller.yaml when the drive determines
nothing, and when it determines only some parameters; the held-out check at the end of the bag. The
`lockstep` binary: $LOCKSTEP_BIN, else target/debug/lockstep."""

import math
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from lockstep_testing.harness import target_dir

START_NS = 1_700_000_000_000_000_000
ODOM_HZ = 100
SLAM_HZ = 20
CMD_HZ = 10


@pytest.fixture(scope="module")
def lockstep() -> str:
    exe = os.environ.get("LOCKSTEP_BIN") or str(target_dir() / "debug" / "lockstep")
    if not Path(exe).is_file():
        pytest.fail(f"no `lockstep` binary at {exe!r}: set LOCKSTEP_BIN or run `cargo build -p lockstep_cli`")
    return exe


def write_straight_drive(path: Path, speed_mps: float, slam_scale: float, secs: float = 20.0) -> None:
    """A drive straight along x at `speed_mps` on one unchanging command (0: standing still): odometry at
    100 Hz, SLAM poses at 20 Hz whose travel is `slam_scale` times the odometry's (a wheel radius that
    much larger than the nominal one) with 1 cm of seeded noise. Header stamps and log times on one clock."""
    ts = get_typestore(Stores.ROS2_JAZZY)
    T = ts.types
    Time, Header = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    Vector3, Twist = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Twist"]
    Point, Quaternion, Pose = T["geometry_msgs/msg/Point"], T["geometry_msgs/msg/Quaternion"], T["geometry_msgs/msg/Pose"]
    PoseCov, TwistCov = T["geometry_msgs/msg/PoseWithCovariance"], T["geometry_msgs/msg/TwistWithCovariance"]
    Odometry, PoseCovStamped = T["nav_msgs/msg/Odometry"], T["geometry_msgs/msg/PoseWithCovarianceStamped"]
    covariance = np.zeros(36, dtype=np.float64)
    rng = random.Random(5)

    def header(ns: int, frame: str):
        return Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id=frame)

    def pose(x: float, y: float) -> Pose:
        return Pose(position=Point(x=x, y=y, z=0.0), orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))

    def twist(v: float):
        return Twist(linear=Vector3(x=v, y=0.0, z=0.0), angular=Vector3(x=0.0, y=0.0, z=0.0))

    messages = []  # (log time, topic, type, message)
    for i in range(int(secs * CMD_HZ) + 1):
        ns = START_NS + i * 1_000_000_000 // CMD_HZ
        messages.append((ns, "/cmd_vel", "geometry_msgs/msg/Twist", twist(speed_mps)))
    for i in range(int(secs * ODOM_HZ) + 1):
        t = i / ODOM_HZ
        ns = START_NS + i * 1_000_000_000 // ODOM_HZ
        msg = Odometry(header=header(ns, "odom"), child_frame_id="base_link",
                       pose=PoseCov(pose=pose(speed_mps * t, 0.0), covariance=covariance),
                       twist=TwistCov(twist=twist(speed_mps), covariance=covariance))
        messages.append((ns + 1_000_000, "/odom", "nav_msgs/msg/Odometry", msg))
    for i in range(int(secs * SLAM_HZ) + 1):
        t = i / SLAM_HZ
        ns = START_NS + i * 1_000_000_000 // SLAM_HZ
        x, y = slam_scale * speed_mps * t + rng.gauss(0.0, 0.01), rng.gauss(0.0, 0.01)
        msg = PoseCovStamped(header=header(ns, "map"), pose=PoseCov(pose=pose(x, y), covariance=covariance))
        messages.append((ns + 5_000_000, "/slam_pose", "geometry_msgs/msg/PoseWithCovarianceStamped", msg))
    messages.sort(key=lambda m: m[0])
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for _, topic, msgtype, _ in messages:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=ts)
        for ns, topic, msgtype, msg in messages:
            writer.write(connections[topic], ns, ts.serialize_cdr(msg, msgtype))


def calibrate(lockstep: str, bag: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([lockstep, "calibrate", str(bag), "--output", str(out), "--quiet", *options],
                          capture_output=True, text=True, timeout=120)


def vehicle(out: Path) -> dict:
    """calibration.yaml read as a ROS 2 parameter file: the simulator node's nominal_vehicle."""
    params = yaml.safe_load((out / "calibration.yaml").read_text())
    return params["lockstep_sim_node"]["ros__parameters"]["nominal_vehicle"]


def controller(out: Path, node: str = "diff_drive_controller") -> dict:
    """diff_drive_controller.yaml read as a ROS 2 parameter file: the controller's three multipliers, each a
    double (an integer would not set a double parameter)."""
    params = yaml.safe_load((out / "diff_drive_controller.yaml").read_text())
    assert list(params) == [node], params
    multipliers = params[node]["ros__parameters"]
    assert sorted(multipliers) == ["left_wheel_radius_multiplier", "right_wheel_radius_multiplier",
                                   "wheel_separation_multiplier"], multipliers
    assert all(isinstance(m, float) for m in multipliers.values()), multipliers
    return multipliers


def test_standing_still_exits_2_saying_nothing_could_be_estimated_and_what_driving_each_parameter_needs(
        lockstep, tmp_path):
    bag, out = tmp_path / "still", tmp_path / "out"
    write_straight_drive(bag, speed_mps=0.0, slam_scale=1.0)
    proc = calibrate(lockstep, bag, out)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[0] == "nothing could be estimated", proc.stdout
    for expected in [
        "  wheel radius stays nominal at 0.050000 m: needs straight runs of at least 0.3 m within one 3 s window",
        "(the farthest any 3 s window went was 0.00 m)",
        "  track width stays nominal at 0.40000 m: needs turns in place of at least 0.5 rad (29 deg)",
        "(no window turned more than 0.00 rad)",
        "  delay stays nominal at 0.0000 s: needs command steps: changes of the commanded speed or turn rate",
        "(no window held a command step)",
        "  centripetal factor (beta) stays nominal at 0.000: needs turns of at least 0.5 rad (29 deg) within one"
        " 3 s window, at two or more different |v*omega| levels over the drive (speed times turn rate at least"
        " 0.05 m/s^2 apart)",
    ]:
        assert expected in proc.stdout, f"{expected!r} not in\n{proc.stdout}"
    assert "error" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    # The files are written all the same: a valid parameter file with the nominal values, saying why.
    assert vehicle(out) == {"wheel_radius_m": 0.05, "track_width_m": 0.4, "delay_secs": 0.0,
                            "centripetal_factor": 0.0}
    text = (out / "calibration.yaml").read_text()
    assert "# Nothing could be estimated: no window of the drive determined any parameter" in text, text
    assert "#   delay: needs command steps" in text, text
    assert (out / "trajectories.png").is_file()
    assert controller(out) == {"wheel_separation_multiplier": 1.0, "left_wheel_radius_multiplier": 1.0,
                                "right_wheel_radius_multiplier": 1.0}
    # 20 s is too short to keep the last 20 s out of the calibration: no held-out check, and the report says so.
    assert "note: no held-out check: the bag's 20.0 s are less than twice --holdout-secs 20 s" in proc.stdout, \
        proc.stdout
    assert "\nheld-out " not in proc.stdout and not (out / "holdout.png").exists()


def test_straight_runs_estimate_the_radius_and_exit_0_naming_what_the_rest_need(lockstep, tmp_path):
    bag, out = tmp_path / "straight", tmp_path / "out"
    # SLAM travels 4 % further than the odometry says: the wheel radius is 0.052 m, not 0.05.
    write_straight_drive(bag, speed_mps=0.4, slam_scale=1.04)
    proc = calibrate(lockstep, bag, out)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "nothing could be estimated" not in proc.stdout, proc.stdout
    radius = vehicle(out)["wheel_radius_m"]
    assert math.isclose(radius, 0.052, rel_tol=0.01), (radius, proc.stdout)
    kept = proc.stdout.split("not estimated, kept nominal:\n", 1)
    assert len(kept) == 2, proc.stdout
    assert "  track width stays nominal at 0.40000 m: needs turns in place of at least 0.5 rad" in kept[1], proc.stdout
    assert "  delay stays nominal at 0.0000 s: needs command steps" in kept[1], proc.stdout
    assert "wheel radius stays nominal" not in proc.stdout, proc.stdout
    text = (out / "calibration.yaml").read_text()
    assert "track_width_m: 0.400000    # not estimated, kept nominal (see above)" in text, text
    assert "#   track width: needs turns in place" in text, text
    # The controller's multipliers: the radius over the nominal one on both sides, the track width not
    # estimated and so 1.0, which the file says.
    multipliers = controller(out)
    assert multipliers["wheel_separation_multiplier"] == 1.0, multipliers
    left, right = multipliers["left_wheel_radius_multiplier"], multipliers["right_wheel_radius_multiplier"]
    # (radius is written with 6 decimals: 1e-5 of it)
    assert math.isclose((left + right) / 2, radius / 0.05, rel_tol=2e-5), multipliers
    assert math.isclose(left, 1.04, rel_tol=0.01) and math.isclose(right, 1.04, rel_tol=0.01), multipliers
    text = (out / "diff_drive_controller.yaml").read_text()
    assert "wheel_separation_multiplier: 1.0000000000    # track width not estimated: kept 1.0" in text, text
    assert "wheel_radius 0.05 m\n# (--nominal-radius-m) and wheel_separation 0.4 m (--nominal-track-m)" in text, text


def test_the_last_20_s_are_held_out_and_dead_reckoned_better_with_the_calibrated_radius(lockstep, tmp_path):
    bag, out = tmp_path / "straight", tmp_path / "out"
    write_straight_drive(bag, speed_mps=0.4, slam_scale=1.04, secs=60.0)
    proc = calibrate(lockstep, bag, out, "--controller-name", "/robot/base_controller")
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    held_out = [line for line in proc.stdout.splitlines() if line.startswith("held-out ")]
    assert len(held_out) == 1 and held_out[0].startswith("held-out 40.0-60.0 s: position RMS error "), proc.stdout
    words = held_out[0].split(": position RMS error ")[1].split(" ")
    assert words[1:3] == ["m", "nominal,"] and words[4:] == ["m", "calibrated"], held_out
    nominal, calibrated = float(words[0]), float(words[3])
    assert calibrated < nominal, proc.stdout
    assert f"#   {held_out[0]} (not given to the calibrator" in (out / "calibration.yaml").read_text()
    assert (out / "holdout.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    multipliers = controller(out, "/robot/base_controller")
    assert math.isclose(multipliers["left_wheel_radius_multiplier"], 1.04, rel_tol=0.01), multipliers
    # Holding out more than half of the bag is refused with a note: all of it calibrates.
    proc = calibrate(lockstep, bag, tmp_path / "all", "--holdout-secs", "31")
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "note: no held-out check: the bag's 60.0 s are less than twice --holdout-secs 31 s" in proc.stdout, \
        proc.stdout
    assert "\nheld-out " not in proc.stdout and not (tmp_path / "all" / "holdout.png").exists()
    # A bad node name is a one-line error, and nothing is written.
    proc = calibrate(lockstep, bag, tmp_path / "bad", "--controller-name", "robot base")
    assert proc.returncode != 0 and "--controller-name" in proc.stderr and "not a ROS 2 node name" in proc.stderr
    assert "panicked" not in proc.stderr and not (tmp_path / "bad").exists(), proc.stderr
