"""The hostile-input fault script (scripts/faults_input.py) as part of the suite: seeded random suite files,
special files where files are expected, parameter files, task goals and task state files, service storms and
WebSocket handshakes, each try classified. The script prints a table per class and exits non-zero on any crash,
hang, unclear answer or data lost."""

from __future__ import annotations

import os
import subprocess
import sys

from lockstep_testing.harness import REPO_ROOT, binary


def test_hostile_input_never_crashes_hangs_or_goes_unexplained() -> None:
    env = dict(os.environ, LOCKSTEP_BIN=os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep")))
    result = subprocess.run([sys.executable, str(REPO_ROOT / "scripts/faults_input.py")], capture_output=True,
                            text=True, timeout=900, env=env)
    print(result.stdout)
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    assert "| suite files | 40 |" in result.stdout and "| WebSocket handshakes | 30 |" in result.stdout, result.stdout
