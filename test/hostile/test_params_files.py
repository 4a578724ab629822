"""Hostile parameter files (`--ros-args --params-file FILE`) given to every node binary: random bytes, a YAML
alias bomb, YAML rcl refuses (a list mixing integers and reals, a node without `ros__parameters`), a
folder, a FIFO, `/dev/zero` and a file over the size limit. rcl parses these files while the node's ROS context
is created, and r2r used to panic there (exit 101 with a backtrace) or, for a FIFO or `/dev/zero`, never get
to the end. Each try must end on its own within a deadline, without a panic, with exit code 1 and a message
naming the file and what is wrong, in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lockstep_testing.harness import allocate_domain_id, binary, release_domain_id

NODES = ["lockstep_mock_joints", "lockstep_interpolation_player", "lockstep_calibrator", "lockstep_task_manager",
         "lockstep_sim_node", "lockstep_recorder", "lockstep_bag_player", "lockstep_view", "lockstep_actuator",
         "lockstep_module_m1", "lockstep_module_split"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """Each hostile file and the words its refusal must contain."""
    d = tmp_path_factory.mktemp("params_files")
    (d / "random.yaml").write_bytes(bytes(range(256)) * 8)
    lines = ["/**:", "  ros__parameters:", "    a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"    a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    (d / "bomb.yaml").write_text("\n".join(lines) + "\n")
    (d / "mixed.yaml").write_text("/**:\n  ros__parameters:\n    x: [1, 2.5]\n")
    (d / "no_params.yaml").write_text("/**:\n  foo: 1\n")
    (d / "folder").mkdir()
    os.mkfifo(d / "fifo")
    (d / "huge.yaml").write_text("/**:\n  ros__parameters:\n" + "    # padding\n" * 400_000)
    return {
        "random": (d / "random.yaml", "not UTF-8"),
        "bomb": (d / "bomb.yaml", "YAML anchor or alias"),
        "mixed": (d / "mixed.yaml", "a list mixes integer and real"),
        "no_params": (d / "no_params.yaml", "`/**.foo`"),
        "folder": (d / "folder", "is a folder"),
        "fifo": (d / "fifo", "not a regular file"),
        "dev_zero": (Path("/dev/zero"), "not a regular file"),
        "huge": (d / "huge.yaml", "more than the 4194304"),
    }


@pytest.mark.parametrize("node", NODES)
def test_a_node_refuses_a_hostile_parameter_file_in_one_line(node, hostile):
    domain = allocate_domain_id()
    try:
        # With backtraces asked for: a node's refusal is still its one line (not a "Caused by:" list).
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain), RUST_BACKTRACE="1")
        for name, (path, words) in hostile.items():
            run = subprocess.run([str(binary(node)), "--ros-args", "--params-file", str(path)], env=env,
                                 capture_output=True, text=True, timeout=60)
            what = f"{node} with {name}: exit {run.returncode}, stderr {run.stderr[-600:]!r}"
            assert run.returncode == 1, what
            assert "panicked" not in run.stderr and "backtrace" not in run.stderr.lower(), what
            assert f"parameter file {path}" in run.stderr and words in run.stderr, what
            assert len([line for line in run.stderr.splitlines() if line.strip()]) == 1, what
    finally:
        release_domain_id(domain)
