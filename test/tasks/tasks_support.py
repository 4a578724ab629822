"""Helpers of the task manager's black-box tests: lockstep_task_manager with simulated actuators
(lockstep_actuator), the rclpy ends that watch them (/task_events, the actuators' action status topics) and
ExecuteTask goals."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from action_msgs.msg import GoalStatus, GoalStatusArray
from geometry_msgs.msg import PoseStamped
from lockstep_interfaces.action import ExecuteTask
from lockstep_interfaces.msg import TaskEvent

from lockstep_testing.harness import REPO_ROOT, reliable

WAREHOUSE = REPO_ROOT / "config/tasks/warehouse.yaml"
# Its station map; the vehicle of sim_params starts at A.
WAREHOUSE_MAP = REPO_ROOT / "config/tasks/warehouse_map.yaml"

# A task on timed actuators only (no simulator): load, raise; lower, unload.
TIMED = """levels: [task, duty, message, action]
actuators:
  loader: {server: /load, type: lockstep_interfaces/action/Load, goal: {station: from}}
  lift: {server: /lift, type: lockstep_interfaces/action/Lift, goal: {height_m: height}}
  roller: {server: /roll, type: lockstep_interfaces/action/Roll, goal: {station: to}}
templates:
  shuttle:
    level: task
    required: [from, to]
    children: [{type: run}]
  run:
    level: duty
    children: [{type: pick}, {type: drop}]
  pick:
    level: message
    parameters: {height: 0.5}
    children: [{type: load}, {type: raise}]
  drop:
    level: message
    parameters: {height: 0.0}
    children: [{type: lower}, {type: unload}]
  load: {level: action, actuator: loader}
  raise: {level: action, actuator: lift}
  lower: {level: action, actuator: lift}
  unload: {level: action, actuator: roller}
"""
TIMED_LEAVES = 4
TIMED_GROUPS = 4  # pick, drop, run, the task
# A cancelled goal's terminal status.
CANCELLED = (GoalStatus.STATUS_CANCELED,)
SERVERS = {"loader": "/load", "lift": "/lift", "roller": "/roll", "navigation": "/navigate"}


def actuator(ros, kind: str, **params):
    """A simulated actuator of `kind`, its node named after the kind (services under /<kind>/)."""
    return ros.start("lockstep_actuator", name=kind, params={"kind": kind, **params}, remaps={"__node": kind})


class Manager:
    """lockstep_task_manager on `config` (a path), with /task_events and the actuators' goal statuses
    collected."""

    def __init__(self, ros, config: Path, servers: dict | None = None, **params):
        self.ros = ros
        self.events = ros.collect(TaskEvent, "/task_events", reliable(depth=5000))
        # Per actuator: goal id -> [when this client first saw it (monotonic s), its latest status].
        servers = servers or SERVERS
        self.seen: dict = {kind: {} for kind in servers}
        self.status_subscriptions = {
            kind: ros.node.create_subscription(GoalStatusArray, f"{server}/_action/status",
                                               lambda array, kind=kind: self._status(kind, array),
                                               reliable(depth=100, latched=True))
            for kind, server in servers.items()}
        self.params = {"config_file": str(config), **params}
        self.proc = ros.start("lockstep_task_manager", params=self.params)
        self.client = ros.action_client(ExecuteTask, "/execute_task", timeout=30)

    def restart(self) -> None:
        """Start the manager again with the same parameters (after its process ended)."""
        self.proc = self.ros.start("lockstep_task_manager", params=self.params)

    def events_of(self, kind: int, task_id: str | None = None) -> list:
        return [e for e in list(self.events) if e.kind == kind and (task_id is None or e.task_id == task_id)]

    def wait_for_actuators(self, *kinds: str, timeout: float = 120.0) -> None:
        """Until this client hears the goal statuses of the actuators `kinds`: a goal's first-seen time is
        its order only once the status publishers are matched (under load discovery takes seconds)."""
        for kind in kinds:
            self.ros.wait_for_publishers(self.status_subscriptions[kind], timeout=timeout)

    def send(self, task_type: str, params: dict, priority: int = 0, feedback: list | None = None,
             robot: str = ""):
        goal = ExecuteTask.Goal(task_type=task_type, parameters_json=json.dumps(params), priority=priority,
                                robot=robot)
        handle = self.ros.send_goal(self.client, goal, feedback)
        assert handle.accepted
        return handle

    def result(self, handle, timeout: float = 60.0):
        """The task's result, once its end (and so every event before it: one reliable publisher) is also on
        /task_events: the result and the events travel on different topics, in no guaranteed order."""
        result = self.ros.result(handle, timeout=timeout).result
        if result.outcome != "rejected":
            self.ros.wait_until(lambda: self.finished(result.task_id), 10, f"{result.task_id}'s end on /task_events",
                                proc=self.proc)
        return result

    def finished(self, task_id: str) -> list:
        return [e for e in list(self.events) if e.kind == TaskEvent.FINISHED and e.task_id == task_id]

    def status_events(self, task_id: str | None = None, path: str | None = None, new: str | None = None):
        return [e for e in list(self.events) if e.kind == TaskEvent.STATUS
                and (task_id is None or e.task_id == task_id) and (path is None or e.path == path)
                and (new is None or e.new_status == new)]

    def wait_status(self, path: str, new: str, timeout: float = 30.0, task_id: str | None = None):
        return self.ros.wait_until(lambda: self.status_events(task_id, path, new), timeout,
                                   f"{path} -> {new} on /task_events", proc=self.proc)[0]

    def _status(self, kind: str, array) -> None:
        now = time.monotonic()
        for s in array.status_list:
            entry = self.seen[kind].setdefault(bytes(s.goal_info.goal_id.uuid), [now, s.status])
            entry[1] = s.status

    def goals(self, kind: str) -> dict:
        """Goal id -> (first seen, monotonic s; latest status) for the actuator `kind`."""
        return {k: tuple(v) for k, v in list(self.seen[kind].items())}

    def succeeded(self, kind: str) -> int:
        return sum(1 for _, status in self.goals(kind).values() if status == GoalStatus.STATUS_SUCCEEDED)


# One task type, `go`: a drive from where the robot stands (`at`) to the station `to`, planned on the map.
GO_CONFIG = """levels: [task, action]
actuators:
  navigation: {server: navigate, type: lockstep_interfaces/action/Navigate, goal: {route: route, speed_mps: speed}}
templates:
  go:
    level: task
    required: [to, speed]
    children: [{type: drive, parameters: {route: {from: "{at}", to: "{to}"}}}]
  drive: {level: action, actuator: navigation}
"""


def sim_params(**overrides) -> dict:
    """The simulator on the sample warehouse scene, vehicle at A = column 2, row 9 = (2.5, 5.5), heading +x."""
    return {"scene_file": str(REPO_ROOT / "config/scenes/warehouse.scene"),
            "rule_files": f"{REPO_ROOT / 'config/rules/surface.dl'},{REPO_ROOT / 'config/rules/behaviour.dl'}",
            "start_column": 2, "start_row": 9, "start_yaw_rad": 0.0, "destination_column": 17,
            "destination_row": 9, "seed": 42, **overrides}


def secs(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def start_robots(ros, cells: dict, depth: int = 100) -> tuple:
    """Per robot (name -> its start cell (column, row)): a simulator and a navigation actuator in the
    namespace /name. Returns each robot's ground-truth collector and navigation process, once every robot's
    first ground truth is in."""
    truth, navigation = {}, {}
    for robot, (column, row) in cells.items():
        truth[robot] = ros.collect(PoseStamped, f"/{robot}/ground_truth", reliable(depth=depth))
        ros.start("lockstep_sim_node", name=f"sim_{robot}", remaps={"__ns": f"/{robot}"},
                  params=sim_params(mode="commanded", start_column=column, start_row=row))
        navigation[robot] = ros.start("lockstep_actuator", name="navigation",
                                      remaps={"__ns": f"/{robot}", "__node": "navigation"},
                                      params={"kind": "navigation"})
    for robot in cells:
        ros.wait_until(lambda robot=robot: truth[robot], 60, f"{robot}'s first ground truth")
    return truth, navigation


def stamp_of(pose) -> float:
    return pose.header.stamp.sec + pose.header.stamp.nanosec * 1e-9


def side_by_side(a: list, b: list, within_s: float = 0.05):
    """The pairs of poses of two robots (PoseStamped lists) stamped within `within_s` of each other."""
    later = sorted(b, key=stamp_of)
    j = 0
    for p in sorted(a, key=stamp_of):
        while j + 1 < len(later) and stamp_of(later[j + 1]) <= stamp_of(p):
            j += 1
        for q in later[j:j + 2]:
            if abs(stamp_of(q) - stamp_of(p)) <= within_s:
                yield p, q


def closest_approach(a: list, b: list) -> float:
    """The least distance between the two robots' poses stamped within 50 ms of each other."""
    return min((math.hypot(p.pose.position.x - q.pose.position.x, p.pose.position.y - q.pose.position.y)
                for p, q in side_by_side(a, b)), default=math.inf)
