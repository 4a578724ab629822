"""`lockstep`'s file tools work in a plain shell: the `lockstep` binary loads no ROS library, and only the
verbs that join the ROS graph (`replay`, `view`, `bag play`, `bag record`) need the ROS environment (they run
in `lockstep-ros`, beside it)."""

import os
import subprocess
from pathlib import Path

from lockstep_testing.harness import REPO_ROOT

LOCKSTEP = Path(os.environ["LOCKSTEP_BIN"])
# A plain shell: no sourced ROS environment (no LD_LIBRARY_PATH to the ROS libraries, no AMENT_PREFIX_PATH).
PLAIN = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}


def plain(*args: str, binary: Path = LOCKSTEP) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120, env=PLAIN,
                          cwd=REPO_ROOT)


def test_file_tools_run_without_the_ros_libraries(tmp_path):
    waypoints = tmp_path / "waypoints.csv"
    waypoints.write_text("shoulder,elbow\n0.0,0.0\n0.4,0.2\n")
    move = tmp_path / "move.csv"
    made = plain("player", "generate", str(waypoints), "--limits", "config/joint_limits.yaml", "-o", str(move))
    assert made.returncode == 0 and move.is_file(), made.stderr
    checked = plain("player", "check", str(move), "--limits", "config/joint_limits.yaml")
    assert checked.returncode == 0 and "s_max" in checked.stdout, checked
    bag = next((REPO_ROOT / "test/data/rosbag2/mcap").iterdir())
    info = plain("bag", "info", str(bag))
    assert info.returncode == 0 and "/" in info.stdout, info
    rules = plain("rules", "check", "config/rules/behaviour.dl")
    assert rules.returncode == 0, rules
    for args in (["--help"], ["version"], ["bag", "--help"]):
        done = plain(*args)
        assert done.returncode == 0 and done.stdout, (args, done)
    # Help lists the verbs that need ROS too.
    assert all(verb in plain("--help").stdout for verb in ("replay", "view", "bag"))


def test_the_verbs_joining_the_graph_run_in_the_ros_binary_and_need_its_environment(tmp_path):
    # In a plain shell, the ROS binary cannot load: the libraries really are out of reach here, so the test
    # above would fail if `lockstep` still linked them.
    ros = LOCKSTEP.with_name("lockstep-ros")
    direct = plain("--help", binary=ros)
    assert direct.returncode != 0 and "librcl" in direct.stderr, direct
    # Started anyway, a verb that joins the graph says in one line which library is missing and what to source.
    bag = next((REPO_ROOT / "test/data/rosbag2/mcap").iterdir())
    for verb in (["bag", "play", str(bag)], ["bag", "record", "-a", "-o", str(tmp_path / "b")],
                 ["replay", str(bag), "-o", str(tmp_path / "r")], ["view"]):
        done = plain(*verb)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1, (verb, done)
        assert f"`lockstep {' '.join(verb[:2] if verb[0] == 'bag' else verb[:1])}`" in lines[0], lines
        assert ".so cannot be loaded" in lines[0] and "source scripts/env-local.sh" in lines[0], lines
    assert not (tmp_path / "b").exists() and not (tmp_path / "r").exists()
    # With the ROS environment, `lockstep replay --help` is the replay's help, usage named `lockstep`.
    full = subprocess.run([str(LOCKSTEP), "replay", "--help"], capture_output=True, text=True, timeout=120)
    assert full.returncode == 0 and "Usage: lockstep replay" in full.stdout, full
    assert "--output" in full.stdout
    play = subprocess.run([str(LOCKSTEP), "bag", "play", "--help"], capture_output=True, text=True, timeout=120)
    assert play.returncode == 0 and "Usage: lockstep bag play" in play.stdout, play


def test_every_verbs_help_works_without_the_ros_environment():
    # `env -i`: nothing of a sourced ROS environment. Each verb's help is the same text as with it.
    # Each verb with one of its own flags, so that a help of forwarded arguments is caught.
    verbs = {("replay",): "--missing-upstream", ("view",): "--port", ("bag", "play"): "--rate",
             ("bag", "record"): "--max-bag-size", ("bag", "info"): "--verify", ("bag", "convert"): "--compression", ("bag", "filter"): "--last-per-channel-topic-regex",
             ("bag", "merge"): "", ("bag", "du"): "",
             ("bag", "reindex"): "--in-place", ("bag", "echo"): "", ("rules",): "", ("calibrate",): "",
             ("player",): "", ("launch",): "", ("report",): "", ("trace",): "--replay", ("test",): "",
             ("version",): "", ("completions",): ""}
    for verb, flag in verbs.items():
        bare = plain(*verb, "--help")
        assert bare.returncode == 0 and f"Usage: lockstep {' '.join(verb)}" in bare.stdout, (verb, bare)
        assert flag in bare.stdout, (verb, flag, bare.stdout)
        sourced = subprocess.run([str(LOCKSTEP), *verb, "--help"], capture_output=True, text=True, timeout=120)
        assert sourced.stdout == bare.stdout, verb
    completions = plain("completions", "bash")
    assert completions.returncode == 0 and "--publish-service-requests" in completions.stdout, completions.stderr
    # An argument error is found without ROS too, and names the argument.
    wrong = plain("replay", "some.mcap")
    assert wrong.returncode == 2 and "--output" in wrong.stderr, wrong


def test_lockstep_builds_without_ros():
    # Without the `ros` feature the `lockstep_cli` package depends on no ROS crate at all (normal and build
    # dependencies), so `cargo build -p lockstep_cli --no-default-features` works where ROS is not installed;
    # with it (the default), r2r comes in through the node crates of `lockstep-ros`.
    def tree(*features: str) -> set:
        done = subprocess.run(["cargo", "tree", "-p", "lockstep_cli", *features, "--edges", "normal,build",
                               "--prefix", "none", "--format", "{p}"], capture_output=True, text=True,
                              timeout=300, cwd=REPO_ROOT)
        assert done.returncode == 0, done.stderr
        return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}

    without = tree("--no-default-features")
    assert "lockstep_rules" in without and "lockstep_bag" in without, sorted(without)
    assert not {c for c in without if c == "r2r" or c.startswith("r2r_") or c.endswith("_node")}, sorted(without)
    assert "r2r" in tree()
