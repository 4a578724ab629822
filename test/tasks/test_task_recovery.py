"""lockstep_task_manager when things go wrong, driven from rclpy against simulated timed actuators: an
action that fails once succeeds under `retry`, a fallback runs when its subtask fails for good, a `timeout_s`
fires, and a manager killed with SIGKILL mid-task takes its unfinished task back from its state file and
runs it on without running any completed action again."""

from __future__ import annotations

import re

from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import ListTasks, ResumeTask
from std_msgs.msg import String

from lockstep_testing.harness import reliable
from tasks_support import Manager, actuator

DRIVE = 0.3  # s per timed action
RECOVERY = """levels: [task, duty, message, action]
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
    children:
      - {type: pick}
      - {type: drop, fallback: {type: drop_by_lift}, attributes: DROP_ATTRIBUTES}
  pick:
    level: message
    parameters: {height: 0.5}
    children:
      - {type: load, retry: {attempts: 2, backoff_s: 0.5}}
      - {type: raise}
  drop:
    level: message
    parameters: {height: 0.0}
    children: [{type: lower}, {type: unload}]
  drop_by_lift:
    level: message
    parameters: {height: 0.2}
    children: [{type: lower}]
  load: {level: action, actuator: loader}
  raise: {level: action, actuator: lift, timeout_s: RAISE_TIMEOUT}
  lower: {level: action, actuator: lift}
  unload: {level: action, actuator: roller}
"""
PICK, DROP = "task/duty[0]/message[0]", "task/duty[0]/message[1]"


def start(ros, tmp_path, drop_attributes: str = "[]", raise_timeout: float = 60.0, manager_params=None,
          **actuator_params):
    config = tmp_path / "tasks.yaml"
    config.write_text(RECOVERY.replace("DROP_ATTRIBUTES", drop_attributes)
                      .replace("RAISE_TIMEOUT", str(raise_timeout)))
    for kind in ("loader", "lift", "roller"):
        params = {"duration_s": DRIVE, **actuator_params.get(kind, {})}
        actuator(ros, kind, **params)
    m = Manager(ros, config, **(manager_params or {}))
    m.wait_for_actuators("loader", "lift", "roller")
    return m


def aborted(m, kind: str) -> int:
    from action_msgs.msg import GoalStatus
    return sum(1 for _, status in m.goals(kind).values() if status == GoalStatus.STATUS_ABORTED)


def test_an_action_that_fails_once_succeeds_under_retry(ros, tmp_path):
    m = start(ros, tmp_path, loader={"fail_first": 1})
    result = m.result(m.send("shuttle", {"from": "A", "to": "B"}))
    assert result.success, result
    retries = m.events_of(TaskEvent.RETRY, result.task_id)
    assert [e.path for e in retries] == [f"{PICK}/action[0]"], retries
    assert retries[0].reason.startswith("attempt 1/2 in 0.5 s: "), retries[0].reason
    assert m.succeeded("loader") == 1 and aborted(m, "loader") == 1
    # The retry waited its backoff: the second goal went out at least 0.5 s after the first ended.
    ros.wait_until(lambda: len(m.goals("loader")) == 2, 10, "both loader goals seen")


def test_a_fallback_runs_when_its_subtask_fails_and_the_task_completes(ros, tmp_path):
    m = start(ros, tmp_path, roller={"fail": True})
    result = m.result(m.send("shuttle", {"from": "A", "to": "B"}))
    assert result.success, result
    fallbacks = m.events_of(TaskEvent.FALLBACK, result.task_id)
    assert [e.path for e in fallbacks] == [DROP], fallbacks
    assert fallbacks[0].reason.startswith(f"{DROP}~fallback: "), fallbacks[0].reason
    ended = m.status_events(result.task_id, f"{DROP}~fallback", "completed")
    assert ended, "the fallback completed"
    # The lift lowered twice: once in the drop, once in its fallback; the roller failed once.
    assert m.succeeded("lift") == 3 and aborted(m, "roller") == 1


def test_a_timeout_cancels_the_action_and_fails_the_task_naming_it(ros, tmp_path):
    m = start(ros, tmp_path, raise_timeout=0.5, lift={"duration_s": 30.0})
    result = m.result(m.send("shuttle", {"from": "A", "to": "B"}), timeout=60)
    assert not result.success and result.failed_path == f"{PICK}/action[1]", result
    assert "timed out after 0.5 s" in result.reason, result.reason
    timeouts = m.events_of(TaskEvent.TIMED_OUT, result.task_id)
    assert [e.path for e in timeouts] == [f"{PICK}/action[1]"], timeouts
    from action_msgs.msg import GoalStatus
    ros.wait_until(lambda: any(s == GoalStatus.STATUS_CANCELED for _, s in m.goals("lift").values()), 30,
                   "the lift's goal cancelled")


def test_a_killed_manager_restores_its_task_and_resumes_without_repeating_actions(ros, tmp_path):
    state = tmp_path / "state.json"
    # The drop waits for the fact `go`: the manager is killed while the task is held there.
    m = start(ros, tmp_path, drop_attributes="[{kind: condition, query: go}]",
              manager_params={"state_file": str(state)})
    m.send("shuttle", {"from": "A", "to": "B"})
    m.wait_status(f"{PICK}/action[1]", "completed", timeout=60)
    ros.wait_until(lambda: state.exists() and "message[0]/action[1]" in state.read_text(), 30,
                   "the completed raise in the state file")
    m.proc.kill9()
    m.restart()
    # The RESTORED event goes out as the manager starts, usually before this client has discovered it: the
    # task list is what says the task is back.
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), timeout=60, retry_every=5.0)
    # One task: its id is the manager's (task-2 when a loaded machine lost the first goal's answer and the
    # client sent it again).
    assert len(listed.tasks) == 1, listed.tasks
    info = listed.tasks[0]
    task_id = info.task_id
    assert info.state == "interrupted" and info.last_completed_leaf == f"{PICK}/action[1]", info
    assert info.leaves_completed == 2, info
    answer = ros.call(ResumeTask, "/resume_task", ResumeTask.Request(task_id=task_id))
    assert answer.success, answer.message
    facts = ros.node.create_publisher(String, "/task_facts", reliable(depth=10))
    ros.wait_until(lambda: facts.get_subscription_count() > 0, 30, "the manager on /task_facts")

    def finished():
        facts.publish(String(data="go."))
        return m.finished(task_id)
    end = ros.wait_until(finished, 60, f"{task_id} finished after the restart", proc=m.proc)
    assert end[0].reason == "completed", end[0]
    # Every action ran exactly once over both lives of the manager.
    ros.wait_until(lambda: m.succeeded("roller") == 1, 10, "the roller's goal succeeded")
    assert m.succeeded("loader") == 1 and m.succeeded("lift") == 2 and m.succeeded("roller") == 1
    assert len(m.goals("loader")) == 1 and len(m.goals("lift")) == 2 and len(m.goals("roller")) == 1
    assert task_id not in state.read_text(), "a finished task leaves the state file"


def test_a_damaged_state_file_stops_the_manager_and_is_left_untouched(ros, tmp_path):
    state = tmp_path / "state.json"
    state.write_text('{"version": 1,\n "next_seq": oops}')
    config = tmp_path / "tasks.yaml"
    config.write_text(RECOVERY.replace("DROP_ATTRIBUTES", "[]").replace("RAISE_TIMEOUT", "60"))
    proc = ros.start("lockstep_task_manager", params={"config_file": str(config), "state_file": str(state)})
    code = proc.popen.wait(timeout=60)
    assert code != 0
    assert "state.json: line 2" in proc.log() and "left as it is" in proc.log(), proc.log()
    assert state.read_text() == '{"version": 1,\n "next_seq": oops}'


def test_a_manager_killed_while_an_action_runs_learns_how_it_ended_and_never_runs_it_twice(ros, tmp_path):
    state = tmp_path / "state.json"
    m = start(ros, tmp_path, manager_params={"state_file": str(state)}, lift={"duration_s": 4.0})
    m.send("shuttle", {"from": "A", "to": "B"})
    raise_ = f"{PICK}/action[1]"
    m.wait_status(raise_, "running", timeout=60)
    # Killed once the raise's goal is accepted and its id is in the state file.
    ros.wait_until(lambda: state.exists() and re.search(r'"goal_id": "[0-9a-f]{32}"', state.read_text()), 30,
                   "the raise's goal id in the state file")
    m.proc.kill9()
    m.restart()
    # The lift goes on with the raise meanwhile; the restarted manager asks it how that goal ended.
    ros.wait_until(lambda: "succeeded while the manager was down" in m.proc.log(), 60,
                   "the raise found completed", proc=m.proc)
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), timeout=60, retry_every=5.0)
    assert len(listed.tasks) == 1, listed.tasks
    info = listed.tasks[0]
    task_id = info.task_id
    assert info.state == "interrupted" and info.last_completed_leaf == raise_ and info.leaves_completed == 2, info
    answer = ros.call(ResumeTask, "/resume_task", ResumeTask.Request(task_id=task_id))
    assert answer.success, answer.message
    end = ros.wait_until(lambda: m.finished(task_id), 60, f"{task_id} finished after the restart", proc=m.proc)
    assert end[0].reason == "completed", end[0]
    ros.wait_until(lambda: m.succeeded("roller") == 1, 10, "the roller's goal succeeded")
    # The raise ran once, across the kill: two lift goals in all (raise, lower).
    assert len(m.goals("loader")) == 1 and len(m.goals("lift")) == 2 and len(m.goals("roller")) == 1
    assert m.succeeded("lift") == 2
