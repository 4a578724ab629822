"""The limitations of docs/limitations.md that a command shows: each test tries what the line says is not
supported and checks the answer a user gets (a clear refusal, or the documented behaviour). When one of these
fails because the limitation was lifted, remove the line from docs/limitations.md together with the test."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lockstep_testing.recordings import topology_recording

REPO = Path(__file__).resolve().parents[2]
COMPRESSED_BAG = REPO / "packages/lockstep_bag/tests/data/compressed/mcap_file"


def lockstep(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, RUST_BACKTRACE="0")
    return subprocess.run([os.environ["LOCKSTEP_BIN"], *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)


def refused(result: subprocess.CompletedProcess, *words: str) -> str:
    """The error of a refused command: a non-zero exit, no panic, one or two lines naming `words`."""
    err = result.stderr.strip()
    assert result.returncode not in (0, 101) and result.returncode > 0, (result.returncode, result.stdout, err)
    assert "panicked" not in err and "RUST_BACKTRACE" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def test_ros2_cli_rosbag2_rviz_and_gazebo_are_not_installed_here():
    for program in ("ros2", "rviz2", "gz", "gazebo"):
        assert shutil.which(program) is None, f"{program} is installed now: docs/limitations.md says it is not"
    for module in ("rosbag2_py", "launch_ros"):
        assert importlib.util.find_spec(module) is None, f"{module} imports now: docs/limitations.md says not"


@pytest.mark.parametrize("name,text", [
    ("robot.launch.py", "from launch import LaunchDescription\n"),
    ("robot.launch.yaml", "launch:\n- node: {pkg: demo_nodes_cpp, exec: talker}\n"),
])
def test_python_and_yaml_launch_files_are_refused(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    err = refused(lockstep("launch", name, cwd=tmp_path), name)
    assert "XML" in err and "ros2 launch" in err, err


@pytest.mark.parametrize("body,what", [
    ('<node_container pkg="rclcpp_components" exec="component_container" name="c"/>', "<node_container>"),
    ('<timer period="1"><executable cmd="true"/></timer>', "<timer>"),
    ('<let name="x" value="$(eval 1 + 1)"/>', "$(eval)"),
    ('<let name="x" value="$(command ls)"/>', "$(command)"),
    ('<node pkg="a" exec="b" respawn="true"/>', "respawn"),
])
def test_launch_features_not_read_are_refused_naming_file_and_line(tmp_path, body, what):
    (tmp_path / "robot.launch.xml").write_text(f"<launch>\n  {body}\n</launch>\n")
    err = refused(lockstep("launch", "robot.launch.xml", cwd=tmp_path), what, "robot.launch.xml:2:")
    assert len(err.splitlines()) <= 2, err


def test_a_launch_file_by_package_needs_the_package_installed(tmp_path):
    refused(lockstep("launch", "no_such_package", "robot.launch.xml", cwd=tmp_path), "no_such_package",
            "not installed")


def test_bags_are_written_as_mcap_only(tmp_path):
    # ros2 bag record's `-s sqlite3` / `--storage sqlite3`: no such option.
    for flag in ("-s", "--storage"):
        refused(lockstep("bag", "record", "-a", "-o", "out", flag, "sqlite3", cwd=tmp_path), flag)
        refused(lockstep("bag", "convert", str(COMPRESSED_BAG), "out", flag, "sqlite3", cwd=tmp_path), flag)
    assert not (tmp_path / "out").exists()


def test_reindex_refuses_rosbag2_compressed_bags(tmp_path):
    bag = tmp_path / "bag"
    shutil.copytree(COMPRESSED_BAG, bag)
    before = {p.name: p.read_bytes() for p in bag.iterdir()}
    refused(lockstep("bag", "reindex", "bag", cwd=tmp_path), "compress", "bag convert")
    assert {p.name: p.read_bytes() for p in bag.iterdir()} == before
    assert not (tmp_path / "bag.reindexed").exists()


def test_in_process_replay_refuses_what_it_cannot_step(tmp_path):
    bag = topology_recording(tmp_path / "pipeline.mcap")
    refused(lockstep("replay", str(bag), "--in-process", "--output", "o1", "--new-module", "planner2:/odom",
                     cwd=tmp_path), "--new-module", "--in-process")
    refused(lockstep("replay", str(bag), "--in-process", "--output", "o2", "--strict-parameters", cwd=tmp_path),
            "--strict-parameters", "--in-process")


def test_there_is_no_cpp_step_helper():
    # A C++ helper would be an ament package depending on rclcpp.
    manifests = sorted((REPO / "packages").glob("*/package.xml"))
    assert manifests
    with_rclcpp = [m for m in manifests if "<depend>rclcpp</depend>" in m.read_text()
                   or "<build_depend>rclcpp</build_depend>" in m.read_text()]
    assert with_rclcpp == [], f"{with_rclcpp}: a C++ helper exists now; docs/limitations.md says there is none"


def test_souffle_type_declarations_are_refused(tmp_path):
    (tmp_path / "types.dl").write_text("edge(1, 2).\n.type Node <: number\n")
    err = refused(lockstep("rules", "check", "types.dl", cwd=tmp_path), "types.dl:2:")
    assert "type" in err, err


def test_percent_starts_a_comment_in_rules(tmp_path):
    # `X % 2` is the comment `% 2`: the rule reads `odd(X) :- n(X), 1 = X`, which no n(X) satisfies but 1.
    (tmp_path / "mod.dl").write_text("n(1). n(2). n(3).\nodd(X) :- n(X), 1 = X % 2\n.\n")
    result = lockstep("rules", "eval", "mod.dl", "--output", "odd", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"odd": [[1]]}, result.stdout


def test_an_explosive_program_stops_at_its_tuple_bound(tmp_path):
    (tmp_path / "grow.dl").write_text("n(0).\nn(Y) :- n(X), Y = X + 1.\n")
    refused(lockstep("rules", "eval", "grow.dl", "--max-tuples", "1000", cwd=tmp_path), "1000")
