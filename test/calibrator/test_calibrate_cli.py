"""`lockstep calibrate <bag>` on short drives written here with the Python `rosbags` (nobody here wrote it):
its exit code, its report and calibration.yaml when the drive determines nothing, and when it determines
only some parameters. The `lockstep` binary: $LOCKSTEP_BIN, else target/debug/lockstep."""

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


def calibrate(lockstep: str, bag: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([lockstep, "calibrate", str(bag), "--output", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=120)


def vehicle(out: Path) -> dict:
    """calibration.yaml read as a ROS 2 parameter file: the simulator node's nominal_vehicle."""
    params = yaml.safe_load((out / "calibration.yaml").read_text())
    return params["lockstep_sim_node"]["ros__parameters"]["nominal_vehicle"]


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
        " 3 s window at two or more different |v*omega| levels (speed times turn rate at least 0.05 m/s^2 apart)",
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
