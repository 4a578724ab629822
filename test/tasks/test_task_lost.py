"""A robot whose actuators are killed mid-task: two simulated robots, a display every robot shares. robot2
runs a task and has another queued; its navigation actuator is stopped during the drive. The manager marks it
lost after robot_timeout_s (ListTasks says `lost`), the running drive fails and its fallback (an announcement
on the shared display) runs in its place, and the queued task moves to robot1 and completes there."""

from __future__ import annotations

from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import ListTasks

from lockstep_testing.harness import REPO_ROOT
from tasks_support import Manager, start_robots

MAP = REPO_ROOT / "config/tasks/warehouse_map.yaml"
CONFIG = """levels: [task, duty, message, action]
actuators:
  navigation: {server: navigate, type: lockstep_interfaces/action/Navigate, goal: {route: route, speed_mps: speed}}
  display: {server: /display, type: lockstep_interfaces/action/Display, goal: {text: text}}
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
  leg:
    level: message
    children: [{type: drive, fallback: {type: announce}}]
  drive: {level: action, actuator: navigation}
  announce: {level: action, actuator: display, parameters: {text: "drive given up"}}
"""
# Robot -> (start station, its cell).
ROBOTS = {"robot1": ("A", (2, 9)), "robot2": ("D", (17, 2))}
TIMEOUT_S = 2.0
SECOND_LEG = "task/duty[0]/message[1]/action[0]"


def test_a_robot_whose_actuators_die_is_lost_its_drive_falls_back_and_its_queued_task_moves(ros, tmp_path):
    ros.start("lockstep_actuator", name="display", params={"kind": "display"})
    _, navigation = start_robots(ros, {robot: cell for robot, (_, cell) in ROBOTS.items()})
    config = tmp_path / "lost.yaml"
    config.write_text(CONFIG)
    servers = {**{r: f"/{r}/navigate" for r in ROBOTS}, "display": "/display"}
    m = Manager(ros, config, servers=servers, map_file=str(MAP), robots=",".join(ROBOTS),
                start_stations=",".join(s for s, _ in ROBOTS.values()), robot_timeout_s=TIMEOUT_S)
    m.wait_for_actuators(*servers)
    # Both start at D, where robot2 stands: robot2 runs the first (3 m, slowly: 15 s); planned at the lanes'
    # speed limits it is done long before robot1 could drive from A to D, so the second queues on robot2 too.
    running = m.send("go", {"from": "D", "to": "J7", "speed": 0.2})
    queued = m.send("go", {"from": "D", "to": "J8", "speed": 1.0})
    m.wait_status(SECOND_LEG, "running", timeout=60)
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), retry_every=5.0)
    robot2 = next(r for r in listed.robots if r.name == "robot2")
    assert (robot2.state, robot2.queued_tasks) == ("busy", 1), robot2
    # robot2's navigation stops answering mid-drive.
    navigation["robot2"].stop(timeout=30)

    def lost():
        answer = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), retry_every=5.0)
        return next(r for r in answer.robots if r.name == "robot2").state == "lost"
    ros.wait_until(lost, 60, "robot2 listed as lost", proc=m.proc)
    first, second = m.result(running, timeout=120), m.result(queued, timeout=300)
    assert first.success and first.robot == "robot2", first
    fallbacks = m.events_of(TaskEvent.FALLBACK, first.task_id)
    assert fallbacks and "robot `robot2` lost" in fallbacks[0].reason, [e.reason for e in fallbacks]
    assert second.success and second.robot == "robot1", second
    assert "moves from lost robot `robot2`" in m.proc.log()
