"""lockstep_task_manager and lockstep_actuator against bad luck and bad input, driven from rclpy: a cancel ends
on CANCELED on the action status topics (clients that wait for the terminal status do not hang), goals that
cannot run are rejected in the goal response, `list_tasks` keeps only the last `keep_finished` finished tasks,
and bad /task_facts messages are dropped with a rate-limited log line while the node keeps running."""

from __future__ import annotations

import re

import pytest

from action_msgs.msg import GoalStatus, GoalStatusArray
from lockstep_interfaces.action import ExecuteTask, Lift, Prompt, Roll
from lockstep_interfaces.srv import AddAttribute, ListTasks
from std_msgs.msg import String

from lockstep_testing.harness import reliable
from tasks_support import TIMED, Manager, actuator

DRIVE = 0.3  # s per timed action
MSG1 = "task/duty[0]/message[1]"


def start(ros, tmp_path, **manager_params) -> Manager:
    config = tmp_path / "tasks.yaml"
    config.write_text(TIMED)
    for kind in ("loader", "lift", "roller"):
        actuator(ros, kind, duration_s=DRIVE)
    return Manager(ros, config, **manager_params)


def statuses(ros, action: str) -> dict:
    """Goal id (bytes) -> the latest status heard on `action`'s status topic, kept up to date."""
    seen: dict = {}

    def heard(array: GoalStatusArray) -> None:
        for s in array.status_list:
            seen[bytes(s.goal_info.goal_id.uuid)] = s.status

    ros.node.create_subscription(GoalStatusArray, f"{action}/_action/status", heard,
                                 reliable(depth=100, latched=True))
    return seen


def goal(task_type: str, parameters_json: str) -> ExecuteTask.Goal:
    return ExecuteTask.Goal(task_type=task_type, parameters_json=parameters_json)


def test_a_cancelled_task_and_its_actuator_goal_end_canceled_on_the_status_topics(ros, tmp_path):
    m = start(ros, tmp_path)
    tasks = statuses(ros, "/execute_task")
    handle = m.send("shuttle", {"from": "A", "to": "B"})
    task_goal = bytes(handle.goal_id.uuid)
    ros.wait_until(lambda: m.goals("loader"), 30, "the loader's goal", proc=m.proc)
    answer = ros.cancel(handle)
    assert [bytes(g.goal_id.uuid) for g in answer.goals_canceling] == [task_goal], answer
    result = ros.result(handle)
    assert result.status == GoalStatus.STATUS_CANCELED and result.result.outcome == "cancelled", result
    # The terminal status reaches the status topic, so rclpy's goal handle (which follows that topic) ends too.
    ros.wait_until(lambda: tasks.get(task_goal) == GoalStatus.STATUS_CANCELED, 15,
                   "the task's goal CANCELED on /execute_task/_action/status", proc=m.proc)
    ros.wait_until(lambda: handle.status == GoalStatus.STATUS_CANCELED, 15, "rclpy's handle CANCELED")
    ros.wait_until(lambda: [s for _, s in m.goals("loader").values()] == [GoalStatus.STATUS_CANCELED], 15,
                   "the loader's goal CANCELED on /load/_action/status", proc=m.proc)
    # A second cancel of a finished goal is refused as such, and the manager goes on with the next task.
    again = ros.cancel(handle)
    assert again.return_code == again.ERROR_GOAL_TERMINATED and not again.goals_canceling, again
    assert m.result(m.send("shuttle", {"from": "A", "to": "B"})).success


def test_goals_that_cannot_run_are_rejected_in_the_goal_response(ros, tmp_path):
    m = start(ros, tmp_path)
    tasks = statuses(ros, "/execute_task")
    bad = [("teleport", "{}", "teleport"),  # no such task type
           ("shuttle", '{"from": "A"}', "to"),  # a required parameter missing
           ("shuttle", '{"from": ', "parameters_json"),  # not JSON
           ("shuttle", "[1, 2]", "parameters_json"),  # not an object
           ("shuttle", '{"from": "A", "to": "B", "height": NaN}', "parameters_json"),  # not a number JSON has
           ("shuttle", '{"from": "A", "to": "B", "height": 1e999}', "parameters_json")]  # out of a double's range
    for task_type, params, _ in bad:
        handle = ros.send_goal(m.client, goal(task_type, params))
        assert not handle.accepted, (task_type, params)
    # Why is in the log (the goal response has no room for a reason).
    log = ros.wait_until(lambda: "teleport" in m.proc.log() and m.proc.log(), 10, "the reason in the log")
    assert re.search(r"ExecuteTask goal refused \(1 so far\): goal [0-9a-f-]{36} \(task type `teleport`\)", log), log
    # None was accepted: none is listed, none has a status; a good goal still runs.
    assert not ros.call(ListTasks, "/list_tasks", ListTasks.Request()).tasks
    assert not tasks
    result = m.result(m.send("shuttle", {"from": "A", "to": "B"}))
    assert result.success and result.task_id == "task-1", result
    assert m.proc.alive()


def test_actuators_reject_goals_they_cannot_run(ros):
    actuator(ros, "lift", duration_s=DRIVE)
    actuator(ros, "roller", duration_s=DRIVE)
    hmi = actuator(ros, "hmi")
    lift = ros.action_client(Lift, "/lift", timeout=30)
    roll = ros.action_client(Roll, "/roll", timeout=30)
    prompt = ros.action_client(Prompt, "/prompt", timeout=30)
    for client, bad in [(lift, Lift.Goal(height_m=float("nan"))), (lift, Lift.Goal(height_m=float("inf"))),
                        (roll, Roll.Goal(station="B", direction=5)),
                        (prompt, Prompt.Goal(prompt="?", timeout_s=float("-inf")))]:
        assert not ros.send_goal(client, bad).accepted, bad
    ros.wait_until(lambda: "timeout_s is -inf" in hmi.log(), 10, "the reason in the hmi's log")
    answer = ros.result(ros.send_goal(lift, Lift.Goal(height_m=0.5)), timeout=15)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED, answer


def test_list_tasks_keeps_the_last_keep_finished_tasks(ros, tmp_path):
    m = start(ros, tmp_path, keep_finished=2)
    ids = [m.result(m.send("shuttle", {"from": "A", "to": f"B{i}"})).task_id for i in range(3)]
    # Consecutive ids; not always from task-1: a goal whose answer rmw could not deliver (RCL_RET_TIMEOUT while
    # discovery lags on a loaded machine) is dropped unstarted under its id and sent again under the next.
    first = int(ids[0].removeprefix("task-"))
    assert ids == [f"task-{first + i}" for i in range(3)], ids
    listed = [t.task_id for t in ros.call(ListTasks, "/list_tasks", ListTasks.Request()).tasks]
    assert listed == ids[1:], listed
    # A cancelled task is a finished one too.
    handle = m.send("shuttle", {"from": "A", "to": "C"})
    cancelled = f"task-{first + 3}"
    m.wait_status("task", "running", task_id=cancelled)
    ros.cancel(handle)
    assert m.result(handle).outcome == "cancelled"
    listed = [t.task_id for t in ros.call(ListTasks, "/list_tasks", ListTasks.Request()).tasks]
    assert listed == [ids[2], cancelled], listed


@pytest.mark.parametrize("name,value,reason", [
    ("keep_finished", -1, "parameter 'keep_finished' = -1: must be an integer in [0, 1000000] tasks"),
    ("step_period_s", 1e300, "parameter 'step_period_s' = 1e300: must be finite and in [0.001, 60] s"),
    ("step_period_s", 1e-300, "parameter 'step_period_s' = 1e-300: must be finite and in [0.001, 60] s"),
    ("server_wait_s", float("nan"), "parameter 'server_wait_s' = NaN: must be finite and in [0, 3600] s")])
def test_a_bad_start_parameter_stops_the_node_with_the_reason(ros, tmp_path, name, value, reason):
    config = tmp_path / "tasks.yaml"
    config.write_text(TIMED)
    proc = ros.start("lockstep_task_manager", params={"config_file": str(config), name: value})
    ros.wait_until(lambda: not proc.alive(), 30, "the node to stop")
    assert proc.stop() == 1, proc.log()  # an error, not a panic (101)
    assert reason in proc.log() and "panicked" not in proc.log(), proc.log()


def test_bad_task_facts_are_dropped_with_a_bounded_log_and_the_node_keeps_running(ros, tmp_path):
    m = start(ros, tmp_path)
    handle = m.send("shuttle", {"from": "A", "to": "B"})
    task_id = m.wait_status("task", "running").task_id
    answer = ros.call(AddAttribute, "/add_attribute",
                      AddAttribute.Request(task_id=task_id, path=MSG1, kind="condition", query="clear(dock_b)"))
    assert answer.success, answer.message
    facts = ros.publisher(String, "/task_facts", reliable(depth=100))
    ros.wait_for_matched(facts)
    # Nested 2,000 deep: refused before the parser's recursion could exhaust the stack.
    facts.publish(String(data="p(" + "(" * 2000 + "1" + ")" * 2000 + ")."))
    ros.wait_until(lambda: "deeper than 256" in m.proc.log(), 15, "the nested text refused", proc=m.proc)
    floods = ["dock(dock_b", "clear(dock_b) :- .", "))))", "p(1) q(2)."] * 10
    for text in floods:
        facts.publish(String(data=text))
    ros.wait_for_acked(facts, proc=m.proc)
    # The good fact after the flood is in force: the node lived through it and still reads its input.
    facts.publish(String(data="clear(dock_b)."))
    m.wait_status(MSG1, "running")
    assert m.result(handle).success
    lines = [line for line in m.proc.log().splitlines() if "/task_facts message refused" in line]
    assert lines and "deeper than 256" in lines[0], lines
    assert len(lines) <= 6, f"{len(lines)} log lines for {len(floods) + 1} bad messages: {lines}"
    assert m.proc.alive()
