"""Helpers of the calibrator's black-box tests: the simulator on the open floor with a vehicle off nominal
(pinned values), driven by a drive script, and the calibrator fed by it over DDS."""

import math

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.serialization import deserialize_message

from lockstep_interfaces.msg import CalibrationResult, CalibrationStatus
from lockstep_testing.harness import REPO_ROOT, reliable

SIM = "lockstep_sim_node"
CALIBRATOR = "lockstep_calibrator"
DRIVES = REPO_ROOT / "config/drives"
# The true vehicle of the tests: radius +5 %, track width -4 %, delay 80 ms, beta 0.3 (nominal 0.05 / 0.40).
TRUE = {"wheel_radius_m": 0.05 * 1.05, "track_width_m": 0.40 * 0.96, "delay_secs": 0.08, "centripetal_factor": 0.3}
NOMINAL = {"wheel_radius_m": 0.05, "track_width_m": 0.40, "delay_secs": 0.0, "centripetal_factor": 0.0}
SLAM_SIGMA_XY_M = 0.02
SLAM_SIGMA_YAW_RAD = math.radians(0.5)


def sim_params(drive: str, **overrides):
    params = {
        "scene_file": str(REPO_ROOT / "config/scenes/floor.scene"),
        "rule_files": str(REPO_ROOT / "config/rules/surface.dl"),
        "mode": "commanded",
        "start_column": 60,
        "start_row": 60,
        "rate_hz": 100.0,
        "publish_rate_hz": 100.0,
        "slam_rate_hz": 20.0,
        "slam_sigma_xy_m": SLAM_SIGMA_XY_M,
        "slam_sigma_yaw_rad": SLAM_SIGMA_YAW_RAD,
        "time_scale": 4.0,
        "cmd_timeout_secs": 0.0,
        "seed": 7,
        "watch_files": False,
        "drive_repeat": True,
        **{f"true_vehicle.{k}": v for k, v in TRUE.items()},
        **{f"nominal_vehicle.{k}": v for k, v in NOMINAL.items()},
    }
    if drive:
        params["drive_script"] = str(DRIVES / drive)
    params.update(overrides)
    return params


def calibrator_params(**overrides):
    params = {
        "cmd_vel_stamped": True,
        "pose_sigma_xy_m": SLAM_SIGMA_XY_M,
        "pose_sigma_yaw_rad": SLAM_SIGMA_YAW_RAD,
        **{f"nominal.{k}": v for k, v in NOMINAL.items()},
    }
    params.update(overrides)
    return params


def start_calibrator(ros, **overrides):
    """The calibrator fed by the simulator (its executed command on cmd_vel_out)."""
    return ros.start(CALIBRATOR, params=calibrator_params(**overrides), remaps={"cmd_vel": "/cmd_vel_out"})


def secs(header) -> float:
    return stamp_secs(header.stamp)


def stamp_secs(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def yaw(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class Outputs:
    """What the simulator and the calibrator publish, collected."""

    def __init__(self, ros):
        deep = reliable(depth=5000)
        # Raw bytes, deserialized when read: the simulator publishes 400 odometry and 400 ground-truth
        # messages a second at time_scale 4, and deserializing each in the callback made rclpy fall more than
        # the writer's history (1000) behind on a loaded CI machine, losing seconds of pairs.
        self._odom = ros.collect(Odometry, "/odom", deep, raw=True)
        self._truth = ros.collect(PoseStamped, "/ground_truth", deep, raw=True)
        self.status = ros.collect(CalibrationStatus, f"/{CALIBRATOR}/status", reliable(depth=1000))
        self.results = ros.collect(CalibrationResult, f"/{CALIBRATOR}/parameters",
                                   reliable(depth=100, latched=True))

    @property
    def odom(self) -> list:
        return [deserialize_message(b, Odometry) for b in list(self._odom)]

    @property
    def truth(self) -> list:
        return [deserialize_message(b, PoseStamped) for b in list(self._truth)]

    def sim_secs(self) -> float:
        """Simulated time both the ground truth and the odometry have reached here."""
        if not self._truth or not self._odom:
            return -1.0
        last_truth = deserialize_message(self._truth[-1], PoseStamped)
        last_odom = deserialize_message(self._odom[-1], Odometry)
        return min(secs(last_truth.header), secs(last_odom.header))

    def accepted(self):
        return [r for r in list(self.results) if r.accepted]


def drift_m(odom, truth, t0: float, t1: float) -> tuple[float, float]:
    """Largest position error of odometry against the ground truth over [t0, t1], both started at t0: the
    odometry's motion since t0 is replayed from the true pose at t0. Returns (drift, span): span is how far
    past t0 the matched odometry / ground-truth pairs reach. rclpy can lose seconds of these 400 Hz streams
    on a loaded machine (the simulator's writer history overflows), so the span may fall short of t1; it
    must cover at least 40 s, and comparisons use equal spans."""
    odom_at = {(m.header.stamp.sec, m.header.stamp.nanosec): m.pose.pose for m in list(odom)}
    pairs = [(secs(m.header), odom_at[k], m.pose) for m in list(truth)
             if (k := (m.header.stamp.sec, m.header.stamp.nanosec)) in odom_at and t0 <= secs(m.header) <= t1]
    span = pairs[-1][0] - t0 if pairs else 0.0
    assert len(pairs) > 100 and span >= 40.0, (len(pairs), span, t0, t1)
    _, o0, g0 = pairs[0]
    yo0, yg0 = yaw(o0.orientation), yaw(g0.orientation)
    worst = 0.0
    for _, o, g in pairs:
        # The odometry's displacement since t0, in its t0 frame, placed at the true pose at t0.
        dx, dy = o.position.x - o0.position.x, o.position.y - o0.position.y
        lx, ly = math.cos(-yo0) * dx - math.sin(-yo0) * dy, math.sin(-yo0) * dx + math.cos(-yo0) * dy
        px = g0.position.x + math.cos(yg0) * lx - math.sin(yg0) * ly
        py = g0.position.y + math.sin(yg0) * lx + math.cos(yg0) * ly
        worst = max(worst, math.hypot(px - g.position.x, py - g.position.y))
    return worst, span


def set_params(ros, node: str, values: dict, proc=None):
    """SetParameters on `node`; every value must be taken."""
    def value(v):
        if isinstance(v, str):
            return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=v)
        if isinstance(v, bool):
            return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=v)
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(v))
    request = SetParameters.Request(parameters=[Parameter(name=k, value=value(v)) for k, v in values.items()])
    response = ros.call(SetParameters, f"/{node}/set_parameters", request)
    assert all(r.successful for r in response.results), response


def get_doubles(ros, node: str, names: list[str]) -> list[float]:
    response = ros.call(GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=names))
    return [v.double_value for v in response.values]
