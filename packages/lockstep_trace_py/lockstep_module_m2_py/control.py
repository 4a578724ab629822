"""A go-to-goal controller that stops for obstacles, and the checks on what it reads and publishes: the same
arithmetic, in the same order, as the Rust pipeline's `control.rs` and `validate.rs`, so both give the same
bits for the same inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from geometry_msgs.msg import Twist

MAX_DISTANCE_M = 1.0e6
MAX_SPEED = 1.0e6
MAX_VARIANCE = MAX_DISTANCE_M * MAX_DISTANCE_M
MAX_QUATERNION_NORM = 1.5


@dataclass(frozen=True)
class Gains:
    """Controller limits and gains."""

    k_linear_per_s: float = 0.5
    k_angular_per_s: float = 1.5
    max_linear_mps: float = 0.5
    max_angular_rps: float = 1.0
    goal_tolerance_m: float = 0.05
    stop_distance_m: float = 0.4
    slow_distance_m: float = 1.0

    def check(self) -> None:
        """Raise ValueError naming the first gain that is not a finite, non-negative number."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{f.name} = {value}: not a finite, non-negative number")


def yaw(q) -> float:
    """Yaw (rad) of a quaternion."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def wrap_angle(angle: float) -> float:
    """An angle wrapped into (-pi, pi] (Rust's `rem_euclid`, then the upper half moved down)."""
    r = math.fmod(angle, math.tau)
    wrapped = r + math.tau if r < 0.0 else r
    return wrapped - math.tau if wrapped > math.pi else wrapped


def nearest_ahead_m(obstacles) -> float | None:
    """Distance to the nearest obstacle ahead (x > 0 in the base frame), if any."""
    ahead = [p.position.x for p in obstacles.poses if math.isfinite(p.position.x) and p.position.x > 0.0]
    return min(ahead) if ahead else None


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def command(obstacles, goal, odom, gains: Gains) -> Twist:
    """The velocity command toward `goal` from the pose in `odom`, slowed or stopped by `obstacles` ahead.
    Non-finite inputs give a zero command (stop)."""
    pose = odom.pose.pose
    dx = goal.pose.position.x - pose.position.x
    dy = goal.pose.position.y - pose.position.y
    distance = math.hypot(dx, dy)
    heading_error = wrap_angle(math.atan2(dy, dx) - yaw(pose.orientation))
    if not math.isfinite(distance) or not math.isfinite(heading_error) or distance < gains.goal_tolerance_m:
        return Twist()
    angular = _clamp(gains.k_angular_per_s * heading_error, -gains.max_angular_rps, gains.max_angular_rps)
    # Drive forward only as far as the robot faces the goal: turn in place when it faces away.
    linear = min(gains.k_linear_per_s * distance, gains.max_linear_mps) * max(math.cos(heading_error), 0.0)
    ahead = nearest_ahead_m(obstacles)
    if ahead is not None:
        span = gains.slow_distance_m - gains.stop_distance_m
        scale = _clamp((ahead - gains.stop_distance_m) / span, 0.0, 1.0) if span > 0.0 else 1.0
        linear *= 0.0 if ahead <= gains.stop_distance_m else scale
    out = Twist()
    out.linear.x = linear
    out.angular.z = angular
    return out


class Invalid(ValueError):
    """A value a module cannot use: which field, its value, what is wrong with it."""

    def __init__(self, field: str, value: float, problem: str):
        super().__init__(f"{field} = {value}: {problem}")
        self.field = field


def _within(path: str, value: float, limit: float, problem: str) -> None:
    if not math.isfinite(value):
        raise Invalid(path, value, "not a finite number")
    if abs(value) > limit:
        raise Invalid(path, value, problem)


def _distance(path, value):
    _within(path, value, MAX_DISTANCE_M, "beyond the largest distance a module accepts (1e6 m)")


def _speed(path, value):
    _within(path, value, MAX_SPEED, "beyond the largest speed a module accepts (1e6 m/s or rad/s)")


def _variance(path, value):
    _within(path, value, MAX_VARIANCE, "beyond the largest variance a module accepts (1e12)")


def _header(path, header):
    if header.stamp.nanosec >= 1_000_000_000:
        raise Invalid(f"{path}.stamp.nanosec", header.stamp.nanosec, "not below 1e9")


def _pose(path, p):
    for axis in "xyz":
        _distance(f"{path}.position.{axis}", getattr(p.position, axis))
    q = p.orientation
    for axis in "xyzw":
        if not math.isfinite(getattr(q, axis)):
            raise Invalid(f"{path}.orientation.{axis}", getattr(q, axis), "not a finite number")
    norm = math.sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w)
    if norm > MAX_QUATERNION_NORM:
        raise Invalid(f"{path}.orientation", norm, "norm too large for a rotation")


def _twist(path, t):
    for part in ("linear", "angular"):
        for axis in "xyz":
            _speed(f"{path}{part}.{axis}", getattr(getattr(t, part), axis))


def _covariance(path, values):
    for i, value in enumerate(values):
        _variance(f"{path}[{i}]", value)


def validate_pose_array(msg) -> None:
    _header("header", msg.header)
    for i, p in enumerate(msg.poses):
        _pose(f"poses[{i}]", p)


def validate_pose_stamped(msg) -> None:
    _header("header", msg.header)
    _pose("pose", msg.pose)


def validate_odometry(msg) -> None:
    _header("header", msg.header)
    _pose("pose.pose", msg.pose.pose)
    _covariance("pose.covariance", msg.pose.covariance)
    _twist("twist.twist.", msg.twist.twist)
    _covariance("twist.covariance", msg.twist.covariance)


def validate_twist(msg) -> None:
    _twist("", msg)
