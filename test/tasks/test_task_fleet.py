"""A fleet on one scene: three simulated robots (each a namespace with its own simulator and navigation
actuator) and one lockstep_task_manager on the warehouse station map, read from its Nav2 route graph. Nine
tasks: each completes once, no robot runs two at once, free robots take the tasks whose first station is
nearest, a task naming a robot runs on it, and ListTasks shows the robots."""

from __future__ import annotations

import math

from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import ListTasks

from lockstep_testing.harness import REPO_ROOT
from tasks_support import Manager, start_robots

# The warehouse drawn as a Nav2 route graph (GeoJSON): the same stations and lanes as warehouse_map.yaml, which
# the single-robot tests use, so the manager reads both formats over its real start path.
MAP = REPO_ROOT / "config/tasks/warehouse_map.geojson"
FLEET = """levels: [task, duty, message, action]
parameters: {speed: min}
actuators:
  navigation: {server: navigate, type: lockstep_interfaces/action/Navigate, goal: {route: route, speed_mps: speed}}
templates:
  go:
    level: task
    required: [from, to, speed]
    children: [{type: trip}]
  trip:
    level: duty
    children:
      - {type: leg, parameters: {route: {from: "{at}", to: "{from}"}}}
      - {type: leg, parameters: {route: {from: "{from}", to: "{to}"}}}
  leg: {level: message, children: [{type: drive}]}
  drive: {level: action, actuator: navigation}
"""
# Robot -> (start station, its cell).
ROBOTS = {"robot1": ("A", (2, 9)), "robot2": ("C", (2, 2)), "robot3": ("D", (17, 2))}
STATIONS = {"A": (2.5, 5.5), "O": (6.5, 2.5), "C": (2.5, 12.5), "D": (17.5, 12.5), "J1": (4.5, 5.5),
            "J6": (4.5, 12.5), "J7": (14.5, 12.5), "J2": (4.5, 2.5)}
TASKS = [("A", "J1"), ("C", "J6"), ("D", "J7"),  # one per robot, each at its first station
         ("J1", "J2"), ("J6", "C"), ("J7", "D"), ("J2", "O"), ("C", "J6")]
NAMED = ("D", "J7", "robot3")


def test_three_robots_run_nine_tasks_once_each_one_at_a_time(ros, tmp_path):
    truth, _ = start_robots(ros, {robot: cell for robot, (_, cell) in ROBOTS.items()})
    config = tmp_path / "fleet.yaml"
    config.write_text(FLEET)
    m = Manager(ros, config, servers={r: f"/{r}/navigate" for r in ROBOTS}, map_file=str(MAP),
                robots=",".join(ROBOTS), start_stations=",".join(s for s, _ in ROBOTS.values()))
    m.wait_for_actuators(*ROBOTS)
    handles = [m.send("go", {"from": a, "to": b, "speed": 1.0}) for a, b in TASKS]
    handles.append(m.send("go", {"from": NAMED[0], "to": NAMED[1], "speed": 1.0}, robot=NAMED[2]))
    results = [m.result(h, timeout=400) for h in handles]
    assert all(r.success for r in results), [r.summary for r in results if not r.success]
    # Free robots first, then the shortest route to the first station: each of the first three tasks starts
    # where a robot stands.
    assert [r.robot for r in results[:3]] == ["robot1", "robot2", "robot3"], [r.robot for r in results]
    assert results[-1].robot == "robot3"
    # Every task completed once, with a distinct id.
    ids = [r.task_id for r in results]
    assert len(set(ids)) == 9 and all(len(m.finished(i)) == 1 for i in ids)
    # No robot ran two tasks at once: per robot, each task's running span ends before the next begins.
    spans: dict = {}
    for e in list(m.events):
        if e.path == "task" and ((e.kind == TaskEvent.STATUS and e.new_status == "running")
                                 or e.kind == TaskEvent.FINISHED):
            spans.setdefault(e.robot, {}).setdefault(e.task_id, []).append(e.stamp.sec + e.stamp.nanosec * 1e-9)
    for robot, tasks in spans.items():
        ordered = sorted((min(t), max(t)) for t in tasks.values())
        assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])), (robot, ordered)
    assert sum(len(t) for t in spans.values()) == 9
    # Each robot ended at the last station of its last task.
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), retry_every=5.0)
    robots = {r.name: r for r in listed.robots}
    assert set(robots) == set(ROBOTS) and all(r.state == "idle" for r in robots.values()), robots
    for robot, info in robots.items():
        last = max((r for r in results if r.robot == robot), key=lambda r: int(r.task_id.split("-")[1]))
        to = TASKS[results.index(last)][1] if last is not results[-1] else NAMED[1]
        assert info.station == to, (robot, info.station, to)
        end = truth[robot][-1].pose.position
        assert math.hypot(end.x - STATIONS[to][0], end.y - STATIONS[to][1]) < 0.4, (robot, end.x, end.y)
    assert {t.robot for t in listed.tasks} == set(ROBOTS)
