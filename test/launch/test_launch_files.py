"""Every shipped launch file, run by `lockstep launch` as a user would on a machine without `ros2 launch`:
all its nodes appear in the ROS graph, and Ctrl-C (SIGINT to the launcher) stops every one of them cleanly.
Also: a node marked on_exit="shutdown" that dies takes the rest down, and a namespace argument moves nodes."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from lockstep_testing.harness import REPO_ROOT
from lockstep_testing.recordings import topology_recording

LAUNCH_DIR = REPO_ROOT / "launch"
PIPELINE = ["/obstacle_fusion", "/motion_controller", "/mission_planner"]
ACTUATORS = ["/navigation", "/loader", "/roller"]
PLAYBACK = ["/lockstep_mock_joints", "/lockstep_interpolation_player"]

# The nodes each launch file starts (written from reading the files, so the launcher's reading is checked
# against a person's), and the arguments a file needs.
EXPECTED: dict[str, list[str]] = {
    "actuator.launch.xml": ["/loader"],
    "actuators.launch.xml": ACTUATORS,
    "bag_player.launch.xml": ["/lockstep_bag_player"],
    "calibration.launch.xml": ["/lockstep_sim_node", "/lockstep_calibrator"],
    "calibrator.launch.xml": ["/lockstep_calibrator"],
    "e2e_fixture.launch.xml": ["/e2e_fixture"],
    "everything.launch.xml": ["/lockstep_sim_node", *ACTUATORS, "/lockstep_task_manager",
                              *("/pipeline" + n for n in PIPELINE),
                              "/lockstep_recorder", "/lockstep_calibrator", *PLAYBACK, "/lockstep_view"],
    "fleet.launch.xml": [f"/robot{i}/{n}" for i in (1, 2, 3)
                         for n in ("lockstep_sim_node", "navigation", "loader", "roller")] + ["/lockstep_task_manager"],
    "interpolation_player.launch.xml": ["/lockstep_interpolation_player"],
    "mock_joints.launch.xml": ["/lockstep_mock_joints"],
    "pipeline.launch.xml": PIPELINE,
    "playback.launch.xml": PLAYBACK,
    "recorder.launch.xml": ["/lockstep_recorder"],
    "replay.launch.xml": ["/lockstep_replay"],
    "replay_system.launch.xml": PIPELINE,  # the replay itself with replay:=true bag:=...
    "sim.launch.xml": ["/lockstep_sim_node"],
    "system.launch.xml": ["/lockstep_sim_node", *PIPELINE, "/lockstep_recorder"],
    "task_manager.launch.xml": ["/lockstep_task_manager"],
    "tasks.launch.xml": ["/lockstep_sim_node", *ACTUATORS, "/lockstep_task_manager"],
    "view.launch.xml": ["/lockstep_view"],
}
ARGUMENTS: dict[str, list[str]] = {
    # a recording of modules that never answer here: the replay node keeps looking for them
    "replay.launch.xml": ["bag:={topology}", "discovery_ms:=600000"],
}


def graph_nodes(ros) -> set[str]:
    return {(ns.rstrip("/") + "/" + name) for name, ns in ros.node.get_node_names_and_namespaces()}


def started_pids(log: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\[launch\]: (\S+): process started with pid \[(\d+)\]", log)}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def launch(ros, tmp_path, name: str, *args: str):
    # A generous --sigterm-timeout: on a loaded machine a dozen nodes tearing down DDS at once can take more than
    # the default 5 s; a node that ignores SIGINT still shows as ended by SIGTERM, which the tests refuse.
    # A node still running at SIGTERM gets its threads' backtraces in the log (gdb), to say where it hangs.
    return ros.start("lockstep", "launch", str(LAUNCH_DIR / name), *args, "--color", "never",
                     "--sigterm-timeout", "30", "--log-dir", str(tmp_path / "launch-logs"), name=f"launch-{name}",
                     env={"LOCKSTEP_LAUNCH_BACKTRACE": "1"})


def test_every_shipped_launch_file_is_checked():
    shipped = sorted(p.name for p in LAUNCH_DIR.glob("*.launch.xml"))
    assert shipped == sorted(EXPECTED), "add the new launch file and its nodes to EXPECTED"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_shipped_launch_file_starts_all_its_nodes_and_stops_them_on_ctrl_c(ros, tmp_path, name):
    topology = topology_recording(tmp_path / "topology.mcap")
    args = [arg.format(topology=topology) for arg in ARGUMENTS.get(name, [])]
    proc = launch(ros, tmp_path, name, *args)
    wanted = set(EXPECTED[name])
    ros.wait_until(lambda: wanted <= graph_nodes(ros), timeout=45, proc=proc, what=f"{sorted(wanted)} in the graph")
    pids = started_pids(proc.log())
    assert len(pids) >= len(wanted), pids
    code = proc.stop(timeout=60)
    log = proc.log()
    assert code == 0, f"lockstep launch exited {code} after SIGINT:\n{log[-3000:]}"
    still = {label: pid for label, pid in pids.items() if alive(pid)}
    assert not still, f"still running after the launcher ended: {still}"
    for label in pids:
        # exit code 0, or ended by the SIGINT itself (a one-shot tool such as the replay, while it waits);
        # not the SIGTERM/SIGKILL the launcher sends to a process that ignores SIGINT
        assert re.search(rf"\[launch\]: {re.escape(label)}: process has finished cleanly \[pid \d+, (exit code 0|signal 2)\]", log), \
            f"{label} did not end on SIGINT:\n{log[-3000:]}"


def test_a_namespace_argument_moves_the_nodes(ros, tmp_path):
    proc = launch(ros, tmp_path, "pipeline.launch.xml", "namespace:=robot1")
    wanted = {"/robot1" + n for n in PIPELINE}
    ros.wait_until(lambda: wanted <= graph_nodes(ros), timeout=45, proc=proc, what=f"{sorted(wanted)} in the graph")
    assert proc.stop(timeout=60) == 0


def test_a_dying_required_node_shuts_everything_down(ros, tmp_path):
    launch_file = tmp_path / "required.launch.xml"
    launch_file.write_text(f"""<launch>
  <include file="{LAUNCH_DIR / 'sim.launch.xml'}"/>
  <executable cmd="sh -c 'while [ ! -e {tmp_path}/die ]; do sleep 0.05; done; exit 7'" name="watchdog" on_exit="shutdown"/>
</launch>
""")
    proc = ros.start("lockstep", "launch", str(launch_file), "--color", "never",
                     "--log-dir", str(tmp_path / "launch-logs"), name="launch-required")
    ros.wait_until(lambda: "/lockstep_sim_node" in graph_nodes(ros), timeout=45, proc=proc, what="the simulator")
    pids = started_pids(proc.log())
    (tmp_path / "die").touch()
    ros.wait_until(lambda: not proc.alive(), timeout=20, proc=None, what="the launcher to end by itself")
    proc.stopped = True
    log = proc.log()
    assert proc.popen.returncode == 1, log[-3000:]
    assert "watchdog ended (exit code 7) and has on_exit=\"shutdown\"" in log
    assert "error: a process failed: watchdog (exit code 7)" in log
    assert re.search(r"lockstep_sim_node: process has finished cleanly \[pid \d+, exit code 0\]", log), log[-3000:]
    assert not any(alive(pid) for pid in pids.values())


def test_an_unsupported_tag_is_an_error_naming_file_and_line(ros, tmp_path):
    bad = tmp_path / "bad.launch.xml"
    bad.write_text("<launch>\n  <node pkg=\"lockstep_sim\" exec=\"lockstep_sim_node\"/>\n  <timer period=\"1.0\"/>\n</launch>\n")
    proc = ros.start("lockstep", "launch", str(bad), name="launch-bad")
    code = proc.popen.wait(timeout=20)
    log = proc.log().strip().splitlines()
    assert code == 1
    assert log == [f"error: {bad}:3:3: <timer> is not supported by lockstep launch (run this file with ros2 launch); "
                   "supported: arg, let, node, executable, group, push-ros-namespace, set_env, unset_env, set_remap, "
                   "set_parameter, include"], log
