"""Special files where a `lockstep` subcommand expects a regular file or a bag folder: a FIFO (opening it for
reading waits for a writer for ever), `/dev/zero` (never ends) and a folder.

Each try must end on its own well within its deadline (a hang is a failure), exit non-zero without a panic or
a signal, and say in at most a few lines on stderr which file it could not use. Before, a FIFO hung
`lockstep test`, `rules eval`, `rules check`, `launch`, `bag info`, `bag reindex`, `replay` and `calibrate`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TALKER_BAG = REPO / "test/data/rosbag2/mcap/talker"
LIMITS = REPO / "config/joint_limits.yaml"


def lockstep(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RUST_BACKTRACE="0")
    return subprocess.run([os.environ["LOCKSTEP_BIN"], *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env=env)


# `{f}`: the special file given where a file is expected; the command's other arguments are good ones.
COMMANDS = {
    "test": ["test", "{f}", "--list"],
    "rules eval": ["rules", "eval", "{f}"],
    "rules check": ["rules", "check", "{f}"],
    "rules eval --facts": ["rules", "eval", "rules.dl", "--facts", "{f}"],
    "launch": ["launch", "{f}"],
    "bag info": ["bag", "info", "{f}"],
    "bag reindex": ["bag", "reindex", "{f}"],
    "bag convert": ["bag", "convert", "{f}", "converted"],
    "replay": ["replay", "{f}", "--output", "replayed"],
    "calibrate": ["calibrate", "{f}"],
    "player check": ["player", "check", "{f}", "--limits", str(LIMITS)],
    "player check --limits": ["player", "check", str(REPO / "config/moves/pick.csv"), "--limits", "{f}"],
    "view --token-file": ["view", "--bag", str(TALKER_BAG), "--token-file", "{f}"],
    "report": ["report", "{f}"],
}


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("special_files")
    os.mkfifo(d / "fifo")
    (d / "folder").mkdir()
    (d / "rules.dl").write_text("a(1).\n")
    return d


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_a_special_file_is_refused_at_once_naming_it(place, name, special):
    if special == "folder" and name in ("test", "bag info", "bag reindex", "bag convert", "replay", "calibrate",
                                        "report"):
        pytest.skip("a folder is what this argument may be (a bag folder, a suite's output)")
    path = special if special.startswith("/") else str(place / special)
    args = [a.replace("{f}", path) for a in COMMANDS[name]]
    try:
        run = lockstep(*args, cwd=place)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lockstep {' '.join(args)} hung on {special}")
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode not in (0, 101) and run.returncode > 0, (args, run.returncode, run.stderr)
    assert "panicked" not in run.stderr and 1 <= len(lines) <= 3, run.stderr
    assert any(Path(path).name in line for line in lines), run.stderr


# Node parameters naming a file, and the good values of the node's other required files.
NODE_FILES = {
    ("lockstep_task_manager", "config_file"): {},
    ("lockstep_task_manager", "rules_files"): {"config_file": "TASKS"},
    ("lockstep_task_manager", "map_file"): {"config_file": "TASKS"},
    ("lockstep_task_manager", "state_file"): {"config_file": "TASKS"},
    ("lockstep_sim_node", "scene_file"): {"rule_files": str(REPO / "config/rules/behaviour.dl")},
    ("lockstep_sim_node", "rule_files"): {"scene_file": str(REPO / "config/scenes/warehouse.scene")},
    ("lockstep_sim_node", "drive_script"): {"scene_file": str(REPO / "config/scenes/warehouse.scene"),
                                            "rule_files": str(REPO / "config/rules/behaviour.dl"),
                                            "mode": "commanded"},
    ("lockstep_interpolation_player", "limits_file"): {"roots": "/tmp"},
}


@pytest.mark.parametrize("node,parameter", sorted(NODE_FILES), ids=lambda v: v)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_node_given_a_special_file_refuses_to_start_in_one_line(place, node, parameter, special):
    from lockstep_testing.harness import allocate_domain_id, binary, release_domain_id

    path = special if special.startswith("/") else str(place / special)
    params = {k: (str(REPO / "config/tasks/warehouse.yaml") if v == "TASKS" else v)
              for k, v in NODE_FILES[node, parameter].items()}
    params[parameter] = path
    args = [str(binary(node)), "--ros-args"] + [a for k, v in params.items() for a in ("-p", f"{k}:={v}")]
    domain = allocate_domain_id()
    try:
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain), RUST_BACKTRACE="1")
        try:
            run = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{node} with {parameter}:={path} neither started refusing it nor ended")
    finally:
        release_domain_id(domain)
    lines = [line for line in run.stderr.splitlines() if line.strip() and "[INFO]" not in line]
    assert run.returncode == 1 and len(lines) == 1, (run.returncode, run.stderr)
    assert str(path) in lines[0] and "not a regular file" in lines[0], lines[0]
