"""`lockstep_module_m2_py`: the motion controller, node `motion_controller`, in Python.

Reads obstacles (`obstacles`, PoseArray, from m1), the mission goal (`mission`, PoseStamped, from m3) and
odometry (`odom`, Odometry, from outside); on its own timer (`rate_hz`) computes a velocity command (`cmd_vel`,
Twist) from the latest of each, published with a dependency header naming exactly the three inputs used. Inputs
with numbers it cannot use are dropped, counted and logged; the last valid input of that topic stays in use.
"""

from __future__ import annotations

import os
import sys
import time

import rclpy
from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Range

from lockstep_module_m2_py import control
from lockstep_trace import TracedPublisher, TracedSubscription, compute, init_for_spin, lockstep, spin

#: Every data topic: reliable, deep enough that a module never loses an input it might have to name.
DATA_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=50, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)

#: name -> (default, description), as the Rust module declares them.
PARAMETERS = {
    "rate_hz": (10.0, "Commands published per second."),
    "processing_delay_ms": (3, "Simulated computation time of one command, milliseconds."),
    "odom_traced": (False, "Whether the odometry source publishes dependency headers; if not, odometry is "
                           "numbered by arrival."),
    "modules_traced": (True, "Whether obstacles and mission come from traced modules (m1, m3); if not (a test or "
                             "a tool publishing them), they are numbered by arrival."),
    "header_timeout_ms": (200, "Longest wait for a traced input's header, milliseconds."),
    "max_linear_mps": (control.Gains.max_linear_mps, "Speed limit, m/s."),
    "max_angular_rps": (control.Gains.max_angular_rps, "Turn rate limit, rad/s."),
    "stop_distance_m": (control.Gains.stop_distance_m, "An obstacle ahead closer than this stops forward motion, m."),
    "extra_range_input": ("", "An extra input topic (sensor_msgs/Range, untraced) the module subscribes and lists "
                              "in its wiring; empty: none. In step mode it waits for the message each grant names "
                              "on it, as for its other inputs, but the command does not depend on it."),
    "wait_for_subscribers": (0, "Before taking any input, wait until the output topic and its header topic each "
                                "matched this many subscriptions (like `ros2 topic pub "
                                "--wait-matching-subscriptions`); 0: start at once."),
}

#: The node's topics and services, for --help (the package README's interface table says the same).
ENDPOINTS = {
    "Subscribes to:": [
        ("obstacles", "geometry_msgs/msg/PoseArray", "from m1"),
        ("mission", "geometry_msgs/msg/PoseStamped", "from m3"),
        ("odom", "nav_msgs/msg/Odometry", "from outside"),
        ("obstacles/lockstep_header", "lockstep_interfaces/msg/DependencyHeader",
         "only with modules_traced:=true (the default)"),
        ("mission/lockstep_header", "lockstep_interfaces/msg/DependencyHeader",
         "only with modules_traced:=true (the default)"),
        ("odom/lockstep_header", "lockstep_interfaces/msg/DependencyHeader", "only with odom_traced:=true"),
        ("<extra_range_input>", "sensor_msgs/msg/Range",
         "an extra, untraced input listed in the wiring; only with a non-empty extra_range_input"),
    ],
    "Publishes:": [
        ("cmd_vel", "geometry_msgs/msg/Twist", "the velocity command, rate_hz (on its own timer)"),
        ("cmd_vel/lockstep_header", "lockstep_interfaces/msg/DependencyHeader",
         "names exactly the three inputs (and their sequence numbers) used"),
        ("/lockstep/topology/<module_name>", "lockstep_interfaces/msg/ModuleTopology",
         "latched: the module's wiring (motion_controller, or <namespace>/motion_controller)"),
    ],
    "Services:": [
        ("~/lockstep/step", "lockstep_interfaces/srv/Step", "only with lockstep_step_mode:=true"),
    ],
}

STEP_MODE_HELP = ("Lock-step replay (declared by lockstep_trace): compute only when granted a step on "
                  "~/lockstep/step, from the inputs it names.")


def help_text() -> str:
    """What --help prints: the node, its ROS arguments, topics, services and parameters."""
    lines = ["lockstep_module_m2_py: example module `motion_controller` in Python (lockstep_trace): computes cmd_vel "
             "from obstacles, the mission goal and odometry, with a dependency header naming the inputs it used.",
             "",
             "Usage: lockstep_module_m2_py [--ros-args [-p NAME:=VALUE]... [-r FROM:=TO]... [--params-file FILE]]",
             "  (ROS arguments as for any ROS 2 node: `-r __ns:=/robot1` for a namespace)"]
    for section, rows in ENDPOINTS.items():
        lines += ["", section] + [f"  {name}  ({kind})\n      {notes}" for name, kind, notes in rows]
    parameters = dict(PARAMETERS, lockstep_step_mode=(False, STEP_MODE_HELP))
    lines += ["", "Parameters:"]
    for name in sorted(parameters):
        default, text = parameters[name]
        kind = {bool: "bool", int: "integer", float: "double", str: "string"}[type(default)]
        shown = {True: "true", False: "false"}.get(default, default) if isinstance(default, bool) else repr(default)
        lines.append(f"  {name}  ({kind}, default {shown})\n      {text}")
    return "\n".join(lines)


class ParameterError(ValueError):
    """A parameter value the module cannot run with."""


class MotionController(Node):
    def __init__(self):
        super().__init__("motion_controller")
        for name, (default, description) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=description))
        p = {name: self.get_parameter(name).value for name in PARAMETERS}
        rate_hz = float(p["rate_hz"])
        if not (rate_hz > 0.0 and rate_hz < float("inf")):
            raise ParameterError(f"rate_hz must be > 0, got {p['rate_hz']}")
        self.gains = control.Gains(max_linear_mps=float(p["max_linear_mps"]),
                                   max_angular_rps=float(p["max_angular_rps"]),
                                   stop_distance_m=float(p["stop_distance_m"]))
        try:
            self.gains.check()
        except ValueError as e:
            raise ParameterError(f"invalid controller parameter: {e}") from None
        self.delay_s = max(0, int(p["processing_delay_ms"])) / 1000.0
        self.obstacles = self.mission = self.odom = None
        self.dropped_inputs = self.withheld_outputs = 0

        self.output = TracedPublisher(self, Twist, "cmd_vel", DATA_QOS)
        self.wait_for_subscribers(int(p["wait_for_subscribers"]))
        timeout = max(0, int(p["header_timeout_ms"])) / 1000.0
        modules_traced, odom_traced = p["modules_traced"] is True, p["odom_traced"] is True
        TracedSubscription(self, PoseArray, "obstacles", self.on_obstacles, DATA_QOS, traced=modules_traced,
                           header_timeout_sec=timeout)
        TracedSubscription(self, PoseStamped, "mission", self.on_mission, DATA_QOS, traced=modules_traced,
                           header_timeout_sec=timeout)
        TracedSubscription(self, Odometry, "odom", self.on_odom, DATA_QOS, traced=odom_traced,
                           header_timeout_sec=timeout)
        if p["extra_range_input"]:
            # Listed in the wiring and waited for in steps; the command does not use it.
            TracedSubscription(self, Range, p["extra_range_input"], lambda _msg: None, DATA_QOS, traced=False,
                               named_in_outputs=False)
        self.create_timer(1.0 / rate_hz, self.on_timer)

    def wait_for_subscribers(self, count: int) -> None:
        """Take no input before `cmd_vel` and its header topic matched `count` subscriptions each."""
        if count <= 0:
            return
        channel = self.output.channel
        if self.output.matched_subscriptions() < count:
            self.get_logger().info(f"waiting for {count} subscriber(s) on {channel} and its header topic")
        while self.output.matched_subscriptions() < count and rclpy.ok():
            time.sleep(0.01)  # discovery runs in DDS's own threads: the counts change without spinning
        self.get_logger().info(f"{count} subscriber(s) on {channel}: starting")

    def _accept(self, topic: str, msg, check) -> bool:
        try:
            check(msg)
            return True
        except control.Invalid as why:
            self.dropped_inputs += 1
            self.get_logger().warning(f"dropped an invalid input on {topic} ({why}); {self.dropped_inputs} invalid "
                                      "input(s) dropped so far", throttle_duration_sec=5.0)
            return False

    # A callback returning False rejects the message: the header keeps naming the previous input.
    def on_obstacles(self, msg: PoseArray):
        if not self._accept("obstacles", msg, control.validate_pose_array):
            return False
        self.obstacles = msg

    def on_mission(self, msg: PoseStamped):
        if not self._accept("mission", msg, control.validate_pose_stamped):
            return False
        self.mission = msg

    def on_odom(self, msg: Odometry):
        if not self._accept("odom", msg, control.validate_odometry):
            return False
        self.odom = msg

    @compute
    def on_timer(self) -> None:
        if self.obstacles is None or self.mission is None or self.odom is None:
            return  # not every input has arrived yet
        command = control.command(self.obstacles, self.mission, self.odom, self.gains)
        if self.delay_s:
            time.sleep(self.delay_s)
        try:
            control.validate_twist(command)
        except control.Invalid as why:
            self.withheld_outputs += 1
            self.get_logger().error(f"withheld an invalid output on cmd_vel ({why}); {self.withheld_outputs} so far",
                                    throttle_duration_sec=5.0)
            return
        self.output.publish(command)


def main(argv=None) -> int:
    argv = sys.argv if argv is None else argv
    if any(a in ("-h", "--help") for a in argv[1:argv.index("--ros-args") if "--ros-args" in argv else None]):
        try:
            print(help_text(), flush=True)
        except BrokenPipeError:  # the reader has gone (`--help | head -1`): not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    init_for_spin(argv)
    try:
        node = MotionController()
    except ParameterError as e:
        print(f"motion_controller: {e}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    lockstep(node)  # the wiring and, in step mode, the step service exist from here on
    try:
        spin(node)  # until SIGINT or SIGTERM, between callbacks: an output is never cut from its header
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
