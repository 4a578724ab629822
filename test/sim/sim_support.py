"""Helpers shared by the simulator's black-box tests: parameters, a started simulator with its outputs being
collected, driving it by cmd_vel, and waits on what it publishes."""

import math
import re
import shutil
from pathlib import Path

from geometry_msgs.msg import PoseStamped, Twist
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import String

from lockstep_testing.harness import REPO_ROOT, reliable

NODE = "lockstep_sim_node"
SCENE = REPO_ROOT / "config/scenes/warehouse.scene"
RULES = REPO_ROOT / "config/rules"
START = (2, 9)
DEST = (17, 9)
ROWS = 15
CELL = 1.0


def cell_of(x, y):
    """(column, row) of a point in the map frame; row 0 is the scene file's first matrix line (top)."""
    return int(math.floor(x / CELL)), ROWS - 1 - int(math.floor(y / CELL))


def yaw_of(q):
    return 2.0 * math.atan2(q.z, q.w)


def stamp_key(header):
    return (header.stamp.sec, header.stamp.nanosec)


def stamp_secs(header):
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def copy_rules(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    for name in ("surface.dl", "behaviour.dl"):
        shutil.copy(RULES / name, rules / name)
    return rules


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def sim_params(rules: Path, scene: Path = SCENE, **overrides):
    params = {
        "scene_file": str(scene),
        "rule_files": f"{rules / 'surface.dl'},{rules / 'behaviour.dl'}",
        "mode": "autonomous",
        "start_column": START[0],
        "start_row": START[1],
        "start_yaw_rad": 0.0,
        "destination_column": DEST[0],
        "destination_row": DEST[1],
        "time_scale": 10.0,
        "seed": 42,
        "watch_period_secs": 0.2,
        "slam_rate_hz": 5.0,
    }
    params.update(overrides)
    return params


class Sim:
    """A started simulator node with its outputs being collected."""

    def __init__(self, ros, params):
        self.ros = ros
        self.truth = ros.collect(PoseStamped, "/ground_truth", reliable(depth=1000))
        self.states = ros.collect(String, f"/{NODE}/state", reliable(depth=1000, latched=True))
        self.proc = ros.start(NODE, params=params)
        ros.wait_until(lambda: self.truth, 60, "the first ground truth", proc=self.proc)

    def state(self):
        return self.states[-1].data if self.states else None

    def state_names(self):
        return [m.data for m in self.states]

    def wait_state(self, state, timeout=120.0):
        self.ros.wait_until(lambda: state in self.state_names(), timeout,
                            f"state {state} (states so far {self.state_names()})", proc=self.proc)

    def arrival_secs(self):
        """Simulated time of the transition to `arrived`, from the node's log."""
        found = re.findall(r"t=([0-9.]+) s: \w+ -> arrived", self.proc.log())
        return float(found[-1]) if found else None

    def wait_arrived(self, timeout=120.0):
        """Until the state is `arrived` and the ground truth up to that moment has been received."""
        self.wait_state("arrived", timeout)
        self.ros.wait_until(self.arrival_secs, 30, "the arrival in the log", proc=self.proc)
        self.ros.wait_until(lambda: stamp_secs(self.latest().header) >= self.arrival_secs() + 0.5, 60,
                            "the ground truth up to the arrival", proc=self.proc)

    def trace(self):
        return {stamp_key(m.header): (m.pose.position.x, m.pose.position.y) for m in list(self.truth)}

    def latest(self):
        return self.truth[-1] if self.truth else None

    def call(self, srv_type, name, request, timeout=30.0):
        """Like ros.call, but only this node dying counts (another, stopped on purpose, may be around)."""
        client = self.ros.node.create_client(srv_type, name)
        try:
            self.ros.wait_until(lambda: client.service_is_ready(), timeout, f"service {name}", proc=self.proc)
            future = client.call_async(request)
            self.ros.wait_until(future.done, timeout, f"the answer of {name}", proc=self.proc)
            return future.result()
        finally:
            self.ros.node.destroy_client(client)

    def set_param_double(self, name, value):
        request = SetParameters.Request(parameters=[Parameter(
            name=name, value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value))])
        response = self.call(SetParameters, f"/{NODE}/set_parameters", request)
        assert all(r.successful for r in response.results), response


def drive(ros, sim, twist, until, timeout=60.0, what="the motion"):
    """Publish `twist` on cmd_vel (every poll of the wait, as a teleop would) until `until()`, then a stop
    that the node has acknowledged."""
    pub = ros.publisher(Twist, "/cmd_vel")
    ros.wait_until(lambda: pub.get_subscription_count() >= 1, 30, "the node's cmd_vel subscription",
                   proc=sim.proc)

    def moved_enough():
        pub.publish(twist)
        return until()

    ros.wait_until(moved_enough, timeout, what, proc=sim.proc)
    pub.publish(Twist())
    ros.wait_for_acked(pub, 30, proc=sim.proc)  # the node took the stop
    ros.node.destroy_publisher(pub)


def wait_still(ros, sim, odom, timeout=30.0):
    """Until ground truth and odometry have not changed for 1 simulated second."""
    def still():
        if len(sim.truth) < 30 or len(odom) < 30:
            return False
        recent = [m for m in list(sim.truth) if stamp_secs(m.header) > stamp_secs(sim.truth[-1].header) - 1.0]
        xs = [(m.pose.position.x, m.pose.position.y, yaw_of(m.pose.orientation)) for m in recent]
        return max(math.dist(a, xs[-1]) for a in xs) < 1e-9
    try:
        ros.wait_until(still, timeout, "the vehicle to stand still", proc=sim.proc)
    except TimeoutError as e:
        # Say whether the simulator froze (no new ground truth) or kept moving, and how.
        truth = list(sim.truth)
        last = truth[-5:]
        raise TimeoutError(f"{e}; {len(truth)} ground-truth poses, {len(odom)} odometry messages, the last: "
                           + ", ".join(f"t={stamp_secs(m.header):.2f} ({m.pose.position.x:.4f}, "
                                       f"{m.pose.position.y:.4f}, {yaw_of(m.pose.orientation):.4f})" for m in last)
                           + f"; state {sim.state()!r}") from None


def unwrap(angles):
    out, prev, acc = [], None, 0.0
    for a in angles:
        if prev is not None:
            d = a - prev
            d = (d + math.pi) % (2 * math.pi) - math.pi
            acc += d
        prev = a
        out.append(acc)
    return out
