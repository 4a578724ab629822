"""Every node binary answers `--help` and `-h`: it prints what it subscribes to, publishes, serves and takes as
parameters (its README table, the one test_interface_tables.py checks against the running node), then exits 0
without touching the ROS graph or the disk.

"Without touching the graph" is checked by running it with a ROS environment in which any rcl start would fail
(a ROS_DOMAIN_ID that is not a number) and "without touching the disk" by an empty working directory and
log directory that must stay empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interface_support import parse_tables  # noqa: E402
from lockstep_testing.harness import REPO_ROOT, binary  # noqa: E402


def workspace_binaries() -> list[str]:
    """Every [[bin]] of the workspace but the `lockstep` command and its `lockstep-ros` (clap's --help), from
    cargo itself, so a new node binary is covered without editing this test."""
    meta = json.loads(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=REPO_ROOT,
                                     check=True, capture_output=True, text=True, timeout=300).stdout)
    names = {t["name"] for p in meta["packages"] for t in p["targets"] if "bin" in t["kind"]}
    return sorted(names - {"lockstep", "lockstep-ros"})


TABLES = {t.binary: t for t in parse_tables()}
# The Python nodes scripts/setup.sh installs (console scripts of packages/lockstep_trace_py).
PYTHON_NODES = ["lockstep_module_m2_py"]
BINARIES = workspace_binaries() + PYTHON_NODES


def test_the_documented_nodes_are_binaries_of_the_workspace():
    assert set(TABLES) <= set(BINARIES), set(TABLES) - set(BINARIES)


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("name", BINARIES)
def test_a_node_binary_prints_its_interface_and_touches_nothing(name, flag, tmp_path):
    work, logs = tmp_path / "cwd", tmp_path / "ros_log"
    work.mkdir()
    env = dict(os.environ, ROS_DOMAIN_ID="not-a-domain-id", ROS_LOG_DIR=str(logs),
               ROS_HOME=str(tmp_path / "ros_home"))
    run = subprocess.run([str(binary(name)), flag], cwd=work, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"{name} {flag}: exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert name in run.stdout and "--ros-args" in run.stdout, run.stdout
    assert list(work.iterdir()) == [], f"{name} {flag} wrote into its working directory"
    assert not logs.exists() and not (tmp_path / "ros_home").exists(), f"{name} {flag} started ROS logging"
    table = TABLES.get(name)
    if table is not None:
        for row in table.rows:
            assert row.name in run.stdout, f"{name} {flag}: `{row.name}` ({row.kind}, {row.where}) not in\n{run.stdout}"
        for section, kinds in (("Parameters:", {"parameter"}), ("Publishes:", {"publishes"}),
                               ("Services:", {"service"})):
            if any(r.kind in kinds for r in table.rows):
                assert section in run.stdout, f"{name} {flag}: no {section}\n{run.stdout}"


def test_a_node_without_help_would_be_caught(tmp_path):
    """The check above can fail: a binary that starts ROS under the broken environment exits non-zero."""
    env = dict(os.environ, ROS_DOMAIN_ID="not-a-domain-id", ROS_LOG_DIR=str(tmp_path / "log"))
    run = subprocess.run([str(binary("lockstep_sim_node")), "--ros-args", "-p", "publish_rate_hz:=10.0"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, run.stdout + run.stderr


def test_each_parameter_row_says_what_its_node_checks(tmp_path):
    # The README rows' "(allowed: ...)" come from the nodes' rule tables (`--param-rules`), so the README and
    # `--help` say exactly what a node refuses; a rule changed in the code without the README fails here.
    check = subprocess.run([sys.executable, str(REPO_ROOT / "scripts/param_tables.py"), "--bin-dir",
                            str(binary("lockstep_sim_node").parent)], capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "checked the parameter rows of" in check.stdout, check.stdout
    rules = subprocess.run([str(binary("lockstep_interpolation_player")), "--param-rules"], capture_output=True,
                           text=True, timeout=60)
    assert rules.returncode == 0 and "period_s\tfinite and in " in rules.stdout, rules
    helped = subprocess.run([str(binary("lockstep_interpolation_player")), "--help"], capture_output=True,
                            text=True, timeout=60)
    allowed = next(line for line in rules.stdout.splitlines() if line.startswith("period_s\t")).split("\t")[1]
    assert f"(allowed: {allowed})" in helped.stdout, helped.stdout
    # A README row that says less than its node checks is found: a copy of the tables with one range removed.
    readme = REPO_ROOT / "packages/lockstep_interpolation/README.md"
    text = readme.read_text()
    assert f" (allowed: {allowed}) |" in text
    broken = tmp_path / "README.md"
    broken.write_text(text.replace(f" (allowed: {allowed}) |", " |", 1))
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    import param_tables  # noqa: E402
    problems: list[str] = []
    param_tables.rewrite(broken.read_text(), readme, binary("lockstep_sim_node").parent, {}, problems)
    assert len(problems) == 1 and "period_s" in problems[0], problems
