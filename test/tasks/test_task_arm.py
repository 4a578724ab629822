"""An arm step of a task: lockstep_task_manager drives the interpolation player's move_play action (the arm's
actuator) with the file, section and speed factor from the task's parameters; pausing the task pauses the
arm on its path through the player's pause service (within every joint limit: the mock joints raise no
alarm) instead of cancelling its goal, and resuming the task resumes the arm, which finishes the same goal."""

from __future__ import annotations

import sys
from pathlib import Path

from action_msgs.msg import GoalStatus
from lockstep_interfaces.action import MovePlay
from lockstep_interfaces.srv import PauseTask, ResumeTask

from lockstep_testing.harness import reliable
from tasks_support import Manager

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interpolation"))
from player_support import start as start_arm  # noqa: E402

ARM = """levels: [task, action]
# The goal's values stand; the template's are defaults.
parameters: {arm_start: parent, arm_end: parent, arm_speed: parent}
actuators:
  arm:
    server: /move_play
    type: lockstep_interfaces/action/MovePlay
    goal: {path: arm_file, start_index: arm_start, end_index: arm_end, speed_factor: arm_speed}
    pause: {pause: /pause, resume: /resume}
templates:
  pick:
    level: task
    required: [arm_file]
    parameters: {arm_start: -1, arm_end: -1, arm_speed: 1.0}
    children: [{type: arm_pick}]
  arm_pick: {level: action, actuator: arm}
"""


def test_a_task_pause_pauses_the_arm_on_its_path_and_resume_finishes_the_same_goal(ros, tmp_path):
    root, mock, player, alarms, states, _ = start_arm(ros, tmp_path)
    config = tmp_path / "arm.yaml"
    config.write_text(ARM)
    feedback = ros.collect(MovePlay.Impl.FeedbackMessage, "/move_play/_action/feedback", reliable(depth=5000))
    m = Manager(ros, config, servers={"arm": "/move_play"})
    m.wait_for_actuators("arm")
    handle = m.send("pick", {"arm_file": "move.csv", "arm_speed": 0.5})
    ros.wait_until(lambda: feedback and feedback[-1].feedback.state == "playing"
                   and feedback[-1].feedback.tau_secs > 0.3, 60, "the arm playing")
    # The section and speed factor came from the task's parameters.
    assert abs(feedback[-1].feedback.speed_factor - 0.5) < 1e-9, feedback[-1].feedback
    task_id = m.wait_status("task", "running").task_id
    paused = ros.call(PauseTask, "/pause_task", PauseTask.Request(task_id=task_id, reason="operator"))
    assert paused.success and "cancelled or paused" in paused.message, paused.message
    ros.wait_until(lambda: feedback[-1].feedback.state == "paused", 30, "the arm paused on its path")
    m.wait_status("task/action[0]", "interrupted")
    # Paused, not cancelled: the one goal is still executing.
    assert [s for _, s in m.goals("arm").values()] == [GoalStatus.STATUS_EXECUTING], m.goals("arm")
    resumed = ros.call(ResumeTask, "/resume_task", ResumeTask.Request(task_id=task_id))
    assert resumed.success, resumed.message
    result = m.result(handle, timeout=120)
    assert result.success and result.leaves_executed == 1, result
    assert [s for _, s in m.goals("arm").values()] == [GoalStatus.STATUS_SUCCEEDED], m.goals("arm")
    assert not alarms, [a.data for a in alarms]
    states_seen = {f.feedback.state for f in feedback}
    assert {"playing", "pausing", "paused", "resuming"} <= states_seen, states_seen
