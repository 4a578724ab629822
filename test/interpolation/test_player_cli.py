"""`lockstep player generate|check` as a user runs them: files in, a file and a report out; bad input gives one
line naming the file and the place, never a backtrace."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from lockstep_interfaces.srv import SetSpeed

from lockstep_testing.harness import binary
from player_support import PERIOD, goal, start
from test_player_jerk import FILES as JERK_FILES

LIMITS = """joint_limits:
  shoulder: {has_velocity_limits: true, max_velocity: 1.5, has_acceleration_limits: true, max_acceleration: 4.0,
             has_jerk_limits: true, max_jerk: 40.0}
  elbow: {max_velocity: 1.0, max_acceleration: 3.0}
"""


def lockstep(*args: object) -> subprocess.CompletedProcess:
    exe = os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep"))
    return subprocess.run([exe, "player", *map(str, args)], capture_output=True, text=True, timeout=60)


def test_generate_then_check(tmp_path: Path) -> None:
    (tmp_path / "wp.csv").write_text("shoulder,elbow\n0,0\n0.8,-0.5\n0.2,0.4\n")
    (tmp_path / "limits.yaml").write_text(LIMITS)
    out = tmp_path / "move.csv"
    gen = lockstep("generate", tmp_path / "wp.csv", "--limits", tmp_path / "limits.yaml", "-o", out)
    assert gen.returncode == 0, gen.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "# period_s: 0.002" and lines[1] == "shoulder,elbow"
    rows = [[float(x) for x in line.split(",")] for line in lines[2:]]
    assert rows[0] == [0.0, 0.0] and rows[-1] == [0.2, 0.4]
    # Independently of the player's own check: finite differences at 2 ms within the limits.
    t = 0.002
    for axis, (vmax, amax) in enumerate([(1.5, 4.0), (1.0, 3.0)]):
        x = [r[axis] for r in rows]
        v = [(b - a) / t for a, b in zip(x, x[1:])]
        a = [(q - p) / t for p, q in zip(v, v[1:])]
        assert max(map(abs, v)) <= vmax * (1 + 1e-9)
        assert max(map(abs, a)) <= amax * (1 + 1e-6)
        assert max(map(abs, a)) > 0.9 * amax, "time-optimal: some step near the acceleration limit"
    check = lockstep("check", out, "--limits", tmp_path / "limits.yaml")
    assert check.returncode == 0, check.stderr
    assert "within the limits" in check.stdout and "s_max at T_c = 0.002 s: 1.0000" in check.stdout, check.stdout
    assert "interpolation: cubic (`auto`: joint `shoulder` has a jerk limit)" in check.stdout, check.stdout


def test_bad_files_are_one_line_naming_the_place(tmp_path: Path) -> None:
    (tmp_path / "limits.yaml").write_text(LIMITS)
    (tmp_path / "ragged.csv").write_text("# period_s: 0.002\nshoulder,elbow\n0,0\n0,0,0\n")
    (tmp_path / "fast.csv").write_text("# period_s: 0.002\nshoulder,elbow\n0,0\n0,0.01\n")
    (tmp_path / "bad_limits.yaml").write_text("joint_limits:\n  shoulder: {max_velocity: 1.0}\n")
    cases = [
        (("check", tmp_path / "ragged.csv", "--limits", tmp_path / "limits.yaml"), "ragged.csv:4: 3 values for 2 joints"),
        (("check", tmp_path / "fast.csv", "--limits", tmp_path / "limits.yaml"),
         "fast.csv:4: joint `elbow` needs velocity 5.0000 at speed 1, over its limit 1.0000"),
        (("check", tmp_path / "fast.csv", "--limits", tmp_path / "bad_limits.yaml"),
         "joint_limits.shoulder.max_acceleration: missing"),
        (("check", tmp_path / "nowhere.csv", "--limits", tmp_path / "limits.yaml"), "nowhere.csv: No such file"),
    ]
    for args, expected in cases:
        proc = lockstep(*args)
        assert proc.returncode == 1, proc
        assert proc.stderr.startswith("error: ") and expected in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "backtrace" not in proc.stderr.lower(), proc.stderr


def s_max_printed(stdout: str) -> float:
    found = re.findall(r"^s_max at T_c = 0\.002 s: ([0-9.]+) ", stdout, re.M)
    assert len(found) == 1, stdout
    return float(found[0])


def test_check_prints_the_s_max_the_player_answers_under_jerk_limits(ros, tmp_path: Path) -> None:
    """A jerk-limited file: the player plays it on the cubic spline (`interpolation` auto) and `check`
    computes s_max on the same; the linear interpolation's s_max differs, so agreeing is not a coincidence."""
    root, mock, player, alarms, states, client = start(ros, tmp_path, files=JERK_FILES)
    printed = {}
    for choice in ("auto", "cubic", "linear"):
        check = lockstep("check", root / "move.csv", "--limits", tmp_path / "limits.yaml",
                         "--output-period-s", PERIOD, "--interpolation", choice)
        assert check.returncode == 0, check.stderr
        printed[choice] = (s_max_printed(check.stdout), check.stdout)
    assert "interpolation: cubic (`auto`: joint `shoulder` has a jerk limit)" in printed["auto"][1], printed
    assert "the player refuses it" in printed["linear"][1], printed
    assert printed["auto"][0] == printed["cubic"][0] > 1.0, printed
    assert abs(printed["linear"][0] - printed["cubic"][0]) > 1e-3, printed

    feedback: list = []
    handle = ros.send_goal(client, goal("move.csv"), feedback)
    ros.wait_until(lambda: feedback and feedback[-1].state == "playing", 30, "playing")
    answer = ros.call(SetSpeed, "/set_speed", SetSpeed.Request(speed_factor=1e6))
    assert not answer.success and "above s_max" in answer.message, answer
    # check prints 4 decimals of the same number.
    assert abs(answer.s_max - printed["auto"][0]) <= 5e-5 + 1e-9, (answer.s_max, printed)
    ros.cancel(handle)
    assert ros.result(handle, timeout=60).result.valid
    assert not alarms, [a.data for a in alarms]
    assert player.stop() == 0 and mock.stop() == 0
