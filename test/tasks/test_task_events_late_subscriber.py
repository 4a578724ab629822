"""/task_events keeps its latest events for subscribers that come later (transient-local durability, the last
`events_kept`): the RESTORED event of a task taken back from the state file goes out a few milliseconds after
the manager starts, before anyone can have matched it, and a transient-local subscription made afterwards still
receives it. Volatile subscribers (every other reader of /task_events) match as before and get only what
follows their match."""

from __future__ import annotations

import json
import time

from lockstep_interfaces.msg import TaskEvent
from lockstep_interfaces.srv import ListTasks

from lockstep_testing.harness import reliable

CONFIG = """levels: [task, duty, message, action]
actuators:
  loader: {server: /load, type: lockstep_interfaces/action/Load, goal: {station: from}}
templates:
  shuttle:
    level: task
    required: [from, to]
    children: [{type: run}]
  run: {level: duty, children: [{type: pick}]}
  pick: {level: message, children: [{type: load}]}
  load: {level: action, actuator: loader}
"""


def unfinished(count: int) -> dict:
    """A state file holding `count` unfinished shuttles, none of whose actions completed."""
    tasks = [{"id": f"task-{i}", "seq": i, "task_type": "shuttle", "parameters": {"from": "A", "to": "B"},
              "priority": 0, "robot": "", "state": "running", "completed": []} for i in range(1, count + 1)]
    return {"version": 1, "next_seq": count + 1, "tasks": tasks}


def start_restoring(ros, tmp_path, count: int, **params):
    """The manager on CONFIG with a state file of `count` unfinished tasks, once it lists them (restored)."""
    config, state = tmp_path / "tasks.yaml", tmp_path / "state.json"
    config.write_text(CONFIG)
    state.write_text(json.dumps(unfinished(count)))
    proc = ros.start("lockstep_task_manager",
                     params={"config_file": str(config), "state_file": str(state), **params})
    listed = ros.call(ListTasks, "/list_tasks", ListTasks.Request(), timeout=60, retry_every=5.0)
    assert [t.task_id for t in listed.tasks] == [f"task-{i}" for i in range(1, count + 1)], listed.tasks
    assert all(t.state == "interrupted" for t in listed.tasks), listed.tasks
    return proc


def test_a_subscriber_that_comes_after_the_restore_still_receives_restored(ros, tmp_path):
    proc = start_restoring(ros, tmp_path, 1)
    # Subscribed only now, long after the RESTORED event went out.
    late = ros.collect(TaskEvent, "/task_events", reliable(depth=100, latched=True))
    restored = ros.wait_until(lambda: [e for e in list(late) if e.kind == TaskEvent.RESTORED], 30,
                              "the RESTORED event on a transient-local subscription made after the restore",
                              proc=proc)
    assert [(e.task_id, e.path) for e in restored] == [("task-1", "task")], restored
    # A volatile subscriber matches the transient-local publisher too (and gets none of the old events).
    volatile = ros.node.create_subscription(TaskEvent, "/task_events", lambda _: None, reliable(depth=10))
    ros.wait_for_publishers(volatile)


def test_a_late_subscriber_receives_the_last_events_kept_only(ros, tmp_path):
    proc = start_restoring(ros, tmp_path, 3, events_kept=2)
    late = ros.collect(TaskEvent, "/task_events", reliable(depth=100, latched=True))
    ros.wait_until(lambda: len(late) >= 2, 30, "the two events kept", proc=proc)
    time.sleep(1.0)  # no third one comes
    assert [(e.kind, e.task_id) for e in list(late)] == [(TaskEvent.RESTORED, "task-2"),
                                                         (TaskEvent.RESTORED, "task-3")], list(late)
