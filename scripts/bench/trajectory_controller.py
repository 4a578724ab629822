"""Output tick timing of lockstep_interpolation_player in trajectory-controller mode while FollowJointTrajectory
goals replace each other: 6 joints at 500 Hz (period_s 0.002) to lockstep_mock_joints over DDS, in two
conditions with the same trajectories:

  one goal   a single 20 s goal (random points, positions only), played to its end;
  replaced   the same goal, then every `--every-s` seconds a new random goal (sent without waiting for the
             result), each replacing the rest of the motion from where it is; the last one plays to its end.

Per run: ticks; tick lateness p50 / p99 / max against the player's schedule (how late each command was
published, from the DDS source timestamps: see scripts/bench/player_ticks.py, whose receiving process and
figures this reuses); the largest gap between two commands; goals succeeded / preempted / refused; the mock's
overspeed alarms (every command's velocity, acceleration and jerk against the limits); the player's CPU.
Run by scripts/bench/trajectory_controller.sh (which builds what it needs)."""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "scripts" / "bench")]

import player_ticks as ticks  # noqa: E402  (the receiving process and the lateness figures)

PERIOD = 0.002
JOINTS = [f"joint_{i}" for i in range(1, 7)]
LIMITS = "joint_limits:\n" + "".join(
    f"  {j}: {{max_velocity: 2.0, max_acceleration: 8.0, max_jerk: 80.0}}\n" for j in JOINTS)
NODE = "/joint_trajectory_controller"


def goal(rng: random.Random, seconds: float):
    """A goal through random points 1.5-2.5 s apart for about `seconds`, ending at rest."""
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    t, points = 0.0, []
    while t < seconds:
        t += rng.uniform(1.5, 2.5)
        points.append(JointTrajectoryPoint(
            positions=[rng.uniform(-0.5, 0.5) for _ in JOINTS],
            time_from_start=Duration(sec=int(t), nanosec=int((t - int(t)) * 1e9))))
    return FollowJointTrajectory.Goal(trajectory=JointTrajectory(joint_names=JOINTS, points=points))


def play(replace: bool, args, tmp: Path) -> dict:
    from lockstep_testing.harness import RosTestContext, allocate_domain_id
    from control_msgs.action import FollowJointTrajectory
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    os.environ["LOCKSTEP_PROFILE"] = args.profile
    log_dir = tmp / ("replaced" if replace else "one-goal")
    log_dir.mkdir()
    limits = tmp / "limits.yaml"
    limits.write_text(LIMITS)
    ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=log_dir)
    receiver = None
    try:
        mock = ros.start("lockstep_mock_joints", params={
            "joints": ",".join(JOINTS), "limits_file": str(limits), "command_period_s": PERIOD,
            "controller": ticks.CONTROLLER})
        player = ros.start("lockstep_interpolation_player", remaps={"__node": "joint_trajectory_controller"},
                           params={"mode": "trajectory_controller", "controller_joints": ",".join(JOINTS),
                                   "limits_file": str(limits), "period_s": PERIOD, "controller": ticks.CONTROLLER})
        alarms = ros.collect(String, "/lockstep_mock_joints/alarm")
        stamps_file, receiver_log = log_dir / "stamps.json", log_dir / "receiver.log"
        with open(receiver_log, "w") as err:
            receiver = subprocess.Popen([sys.executable, ticks.__file__, "--receive", str(stamps_file)],
                                        env=ros.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                        text=True)
        states = ros.collect(JointState, "/joint_states")
        client = ros.action_client(FollowJointTrajectory, f"{NODE}/follow_joint_trajectory")
        ros.wait_for_messages(states, 1, what="/joint_states from the mock")
        rng = random.Random(args.rng_state)
        cpu0, wall0 = ticks.cpu_secs(player.popen.pid), time.monotonic()
        handles = [ros.send_goal(client, goal(rng, args.seconds))]
        ticks.wait_ready(receiver, 120, receiver_log)
        if replace:
            for k in range(args.goals):
                time.sleep(max(0.0, wall0 + (k + 1) * args.every_s - time.monotonic()))
                handles.append(ros.send_goal(client, goal(rng, 4.0)))
        codes = [ros.result(h, timeout=args.seconds * 4 + 60).result.error_code if h.accepted else None
                 for h in handles]
        cpu, wall = ticks.cpu_secs(player.popen.pid) - cpu0, time.monotonic() - wall0
        stamps, receiver = ticks.collect_stamps(receiver, stamps_file), None
        alarm_count = len(alarms)
        assert player.stop() == 0 and mock.stop() == 0
    finally:
        ticks.stop_receiver(receiver)
        ros.close()
    source = [s for s, _ in stamps]
    return {"condition": "replaced" if replace else "one goal", "ticks": len(source),
            "late": ticks.lateness_ms(source), "gap": ticks.largest_gap_ms(source), "codes": codes,
            "alarms": alarm_count, "cpu": 100 * cpu / wall, "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=["debug", "release"], default="release")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the first goal")
    parser.add_argument("--goals", type=int, default=30, help="goals replacing the motion")
    parser.add_argument("--every-s", type=float, default=0.5, help="time between two replacing goals")
    parser.add_argument("--rng-state", type=int, default=7)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for replace in (False, True):
            runs.append(play(replace, args, Path(tmp)))
            print(f"{runs[-1]['condition']}: {runs[-1]['ticks']} ticks", flush=True)
    q = ticks.quantile
    print(f"\n### Trajectory-controller mode: ticks at {1 / PERIOD:.0f} Hz while goals replace each other "
          f"({args.profile} build)\n")
    print("| condition | ticks | lateness p50 / p99 / max (ms) | largest gap (ms) | goals: succeeded / preempted "
          "/ other | mock alarms | CPU % |")
    print("|---|---|---|---|---|---|---|")
    over = False
    for r in runs:
        late, codes = r["late"], r["codes"]
        ok, preempted = codes.count(0), codes.count(-1)
        print(f"| {r['condition']} | {r['ticks']} | {q(late, 0.5):.3f} / {q(late, 0.99):.3f} / {max(late):.3f} "
              f"| {r['gap']:.3f} | {ok} / {preempted} / {len(codes) - ok - preempted} | {r['alarms']} "
              f"| {r['cpu']:.1f} |")
        over |= r["alarms"] > 0
    print(f"\nReplaced: {args.goals} goals {args.every_s} s apart after a {args.seconds:.0f} s goal (random points, "
          f"random state {args.rng_state}); each but the last preempts the one before. Load average "
          f"{runs[-1]['load']:.1f}.")
    if over:
        sys.exit("the mock raised an overspeed alarm")


if __name__ == "__main__":
    main()
