"""The limitations of docs/limitations.md that running nodes show, over DDS, driven from rclpy. When one of these
fails because the limitation was lifted, remove the line from docs/limitations.md together with the test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from lockstep_interfaces.msg import ModuleTopology, RecorderStatus
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters

from lockstep_testing.harness import REPO_ROOT, reliable

TALKER_BAG = REPO_ROOT / "test/data/rosbag2/mcap/talker"


def test_bag_play_flags_not_supported_are_refused(tmp_path):
    env = dict(os.environ, RUST_BACKTRACE="0")
    for flag, value in (("--storage-config-file", "storage.yaml"), ("--send-buffer-size", "1000")):
        args = [os.environ["LOCKSTEP_BIN"], "bag", "play", str(TALKER_BAG), flag, value]
        result = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
        assert result.returncode == 2 and flag in result.stderr, (flag, result.returncode, result.stderr)
        assert "panicked" not in result.stderr


def test_our_nodes_services_publish_no_introspection_events_by_default(ros, tmp_path):
    # Without service_configure_introspection, the recorder's own services have no `_service_event` topic.
    ros.start("lockstep_recorder", params={"output": str(tmp_path / "bag"),
                                           "all_topics": False, "all_services": False, "all_actions": False})
    ros.wait_for_topic("/lockstep_recorder/status", timeout=60)
    topics = {name for name, _ in ros.node.get_topic_names_and_types()}
    assert "/lockstep_recorder/pause/_service_event" not in topics, sorted(topics)


def test_array_parameters_are_refused_lists_are_comma_separated(ros, tmp_path):
    player = ros.start("lockstep_interpolation_player", params={
        "roots": str(REPO_ROOT / "config/moves"), "limits_file": str(REPO_ROOT / "config/joint_limits.yaml")})
    as_array = Parameter(name="roots", value=ParameterValue(
        type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=[str(tmp_path), str(REPO_ROOT)]))
    response = ros.call(SetParameters, "/lockstep_interpolation_player/set_parameters",
                        SetParameters.Request(parameters=[as_array]), timeout=60, retry_every=5.0)
    [result] = response.results
    assert not result.successful and "roots" in result.reason, result.reason
    assert player.alive()


def test_the_interpolation_player_runs_without_a_real_time_policy(ros):
    player = ros.start("lockstep_interpolation_player", params={
        "roots": str(REPO_ROOT / "config/moves"), "limits_file": str(REPO_ROOT / "config/joint_limits.yaml")})
    ros.wait_for_topic("/move_play/_action/status", timeout=60)
    pid = player.popen.pid
    policies = {os.sched_getscheduler(int(t.name)) for t in Path(f"/proc/{pid}/task").iterdir()}
    assert policies == {os.SCHED_OTHER}, policies
    locked_kb = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if line.startswith("VmLck:"))
    assert locked_kb == 0


def test_a_traced_modules_wiring_does_not_follow_remaps(ros):
    topology = ros.collect(ModuleTopology, "/lockstep/topology/obstacle_fusion", reliable(depth=1, latched=True))
    ros.start("lockstep_module_m1", remaps={"/obstacles": "/obstacles_remapped"})
    ros.wait_for_topic("/obstacles_remapped", timeout=60)
    ros.wait_until(lambda: topology, 60, "the latched wiring of obstacle_fusion")
    [component] = topology[-1].components
    assert "/obstacles" in component.writer_channels, component.writer_channels
    assert "/obstacles_remapped" not in component.writer_channels


def test_a_parameter_read_at_start_is_applied_but_not_used(ros, tmp_path):
    bag, replayed = tmp_path / "run", tmp_path / "run_sim"
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    system = ros.start("lockstep", "launch", str(REPO_ROOT / "launch/system.launch.xml"), f"recorder_output:={bag}",
                       "--color", "never", name="system")

    def cmd_vel_written() -> int:
        topics = status[-1].topics if status else []
        return next((t.messages for t in topics if t.topic == "/cmd_vel"), 0)
    ros.wait_until(lambda: cmd_vel_written() >= 30, timeout=180, proc=system, what="30 /cmd_vel written")
    assert system.stop(timeout=20) == 0, system.log()[-3000:]

    # motion_controller reads max_linear_mps once at start: started with another value, it is set back to the
    # recorded one before the first step (the set succeeds) but its commands still use the start value.
    for binary, params in (("lockstep_module_m1", {}), ("lockstep_module_m2", {"max_linear_mps": 0.2}),
                           ("lockstep_module_m3", {})):
        ros.start(binary, params={"lockstep_step_mode": True, **params})
    replay = ros.start("lockstep", "replay", str(bag), "--output", str(replayed), "--apply-recorded-parameters",
                       "--quiet", name="replay")
    ros.wait_until(lambda: not replay.alive(), timeout=300, proc=None, what="the replay to end")
    replay.stopped = True
    assert replay.popen.returncode == 0, replay.log()[-3000:]
    report = json.loads((replayed / "report.json").read_text())
    applied = json.dumps(report["parameters"])
    assert "max_linear_mps" in applied, applied
    cmd_vel = report["channels"]["/cmd_vel"]
    assert cmd_vel["exact"] < cmd_vel["simulated"], cmd_vel
    assert report["channels"]["/obstacles"]["exact"] == report["channels"]["/obstacles"]["simulated"]


def test_the_live_view_offers_no_client_publishing_or_assets(ros):
    from view.test_view import Client, free_port, start_view
    port = free_port()
    view = start_view(ros, port)
    client = Client(port, "--seconds", "60")
    ros.wait_until(lambda: client.of("serverInfo"), 60, "the view's serverInfo", proc=view)
    client.proc.kill()
    capabilities = set(client.of("serverInfo")[0]["capabilities"])
    assert not capabilities & {"clientPublish", "assets", "connectionGraph", "parametersSubscribe"}, capabilities


def test_a_topic_condition_is_refused_naming_the_attribute(tmp_path):
    # A task waiting for a message on a topic: no such attribute; a fact on /task_facts and a `condition` is
    # the way.
    text = (REPO_ROOT / "config/tasks/warehouse.yaml").read_text()
    marker = "    actuator: navigation\n"
    assert marker in text
    bad = tmp_path / "warehouse.yaml"
    bad.write_text(text.replace(marker, marker + "    attributes: [{kind: topic, topic: /dock_clear}]\n", 1))
    binary = Path(os.environ["LOCKSTEP_BIN"]).parent / "lockstep_task_manager"
    result = subprocess.run([str(binary), "--ros-args", "-p", f"config_file:={bad}",
                             "-p", f"map_file:={REPO_ROOT / 'config/tasks/warehouse_map.yaml'}"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env=dict(os.environ, RUST_BACKTRACE="0"))
    err = result.stderr + result.stdout
    assert result.returncode == 1, (result.returncode, err[-2000:])
    assert "warehouse.yaml:" in err and "attributes[0]" in err and "`topic`" in err, err[-2000:]
    assert "condition" in err, err[-2000:]


def test_actuator_feedback_is_not_passed_on_in_task_feedback():
    from lockstep_interfaces.action import ExecuteTask
    fields = set(ExecuteTask.Feedback.get_fields_and_field_types())
    assert fields == {"task_id", "state", "level_names", "level_total", "level_completed", "level_running",
                      "running_paths", "robot"}, fields
