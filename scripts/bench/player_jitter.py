"""Streaming figures of lockstep_interpolation_player: a 60 s interpolation file
played at 500 Hz (T_c = 2 ms) to lockstep_mock_joints, release builds, over real DDS. Prints the player's tick
intervals (producer side), the command arrival intervals at the mock (what a ros2_control controller would
see), missed cycles (intervals over 1.5 periods) and the player's CPU use. Run by scripts/bench/interpolation_player.sh."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test"))
os.environ["LOCKSTEP_PROFILE"] = "release"

from lockstep_interfaces.action import MovePlay  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from lockstep_testing.harness import RosTestContext, allocate_domain_id, binary  # noqa: E402

PERIOD = 0.002
LIMITS = "joint_limits:\n  a: {max_velocity: 1.0, max_acceleration: 4.0}\n  b: {max_velocity: 1.0, max_acceleration: 4.0}\n"


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "limits.yaml").write_text(LIMITS)
        # Back and forth: 44 moves of 1.1 rad, about 60 s.
        rows = ["a,b"] + [f"{(i % 2) * 1.1},{((i + 1) % 2) * 0.8}" for i in range(45)]
        (tmp / "wp.csv").write_text("\n".join(rows) + "\n")
        gen = subprocess.run([str(binary("lockstep")), "player", "generate", str(tmp / "wp.csv"), "--limits",
                              str(tmp / "limits.yaml"), "-o", str(tmp / "long.csv")],
                             capture_output=True, text=True, check=True)
        duration = float(re.search(r", ([0-9.]+) s\n", gen.stdout).group(1))
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            mock = ros.start("lockstep_mock_joints", params={
                "joints": "a,b", "initial_positions": "0,0.8", "limits_file": str(tmp / "limits.yaml"),
                "command_period_s": PERIOD})
            player = ros.start("lockstep_interpolation_player", params={
                "roots": str(tmp), "limits_file": str(tmp / "limits.yaml"), "period_s": PERIOD})
            states = ros.collect(JointState, "/joint_states")
            client = ros.action_client(MovePlay, "/move_play")
            ros.wait_for_messages(states, 1, what="joint states from the mock")
            g = MovePlay.Goal()
            g.path = "long.csv"
            cpu0, wall0 = cpu_secs(player.popen.pid), time.monotonic()
            result = ros.result(ros.send_goal(client, g), timeout=duration * 2 + 30).result
            cpu = cpu_secs(player.popen.pid) - cpu0
            wall = time.monotonic() - wall0
            ros.wait_until(lambda: "command arrivals" in mock.log(), 5, "the mock's timing line")
            player_log, mock_log = player.log(), mock.log()
        finally:
            ros.close()
    tick = re.search(r"tick timing: (.*)", player_log).group(1)
    arrivals = re.search(r"command arrivals: (.*)", mock_log).group(1)
    print(f"### Player: streaming a {duration:.1f} s file at {1 / PERIOD:.0f} Hz (release builds, real DDS)\n")
    print("| where | intervals |")
    print("|---|---|")
    print(f"| player ticks (producer) | {tick} |")
    print(f"| command arrivals at the mock (consumer) | {arrivals} |")
    print(f"| player CPU | {cpu:.2f} s over {wall:.1f} s = {100 * cpu / wall:.1f} % of one core |")
    print(f"\nResult: valid={result.valid}, {result.points_played} points, {result.alarm_count} alarms, "
          f"largest tracking error {result.max_tracking_error:.2e}.")


if __name__ == "__main__":
    main()
