"""Output tick timing of lockstep_interpolation_player under service requests: one long generated file played
at 500 Hz (period_s 0.002) to lockstep_mock_joints over DDS, in two conditions with the same file and settings:

  quiet  no request during the play;
  burst  100 requests within 1 s, a third of the way into the play: a fixed random mix of pause (without a stop
         time, with one, and with one too short to be accepted), resume, and set_speed (below s_max and above
         it), sent from rclpy service clients 10 ms apart without waiting for any answer. Once every answer is
         in, one more resume (or set_speed 1) lets the play end; it is not counted among the answers.

Per run: ticks; tick lateness p50 / p99 / max, lateness being how late a command went out against the
player's schedule; the largest gap between two consecutive commands; the answer time of the requests
(from the call to its answer in the client) p50 / p99 / max; the player process's CPU (utime + stime from
/proc/<pid>/stat) over the play's wall time, in % of one core.

Where the tick times come from: the node's own `tick timing:` line gives only the jitter of its tick
intervals (|interval - period|), not the lateness against its schedule, so the commands are timed from
outside: a separate process subscribes to /<controller>/commands and keeps, per message, the DDS source
timestamp (when the player's publish call handed it to DDS, so without the delivery) and the receive time
(with the delivery: what a controller would see). The schedule is the player's own rule (ticker.rs): every
period from an anchor, moved to one period after a tick that is more than one period late. The anchor of each
stretch is its earliest command (lateness 0), so a lateness is counted from the fastest tick of the stretch:
it includes the waits for the engine lock and the tick's own work, not the fixed cost of waking up and
publishing. The lateness is also given over the burst's stretch of the play alone (from a third of the way in,
for the burst's length and 0.5 s), in both conditions, since the machine's load alone can delay a tick
elsewhere in the play. The node's line and the mock's `command arrivals:` line are printed beside the table as
a cross-check (the node's largest jitter is the largest gap less one period).
Run by scripts/bench/player_ticks.sh (which builds what it needs)."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "interpolation")]

PERIOD = 0.002
CONTROLLER = "forward_position_controller"
TOPIC = f"/{CONTROLLER}/commands"
LIMITS = REPO / "config" / "joint_limits.yaml"


def quantile(v: list[float], q: float) -> float:
    """Nearest rank, as the node's timing summary takes it."""
    s = sorted(v)
    return s[round((len(s) - 1) * q)]


# ----- the receiving process -----

def receive(out: Path) -> None:
    """Subscribe to the commands, print `ready` once matched with the player's publisher, and on end of input
    write [source_ns, received_ns] per message to `out`."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Float64MultiArray

    from lockstep_testing.harness import reliable

    rclpy.init()
    node = rclpy.create_node(f"player_ticks_receiver_{os.getpid()}")
    stamps: list[tuple[int, int]] = []
    sub = node.create_subscription(
        Float64MultiArray, TOPIC,
        lambda _m, info: stamps.append((info["source_timestamp"], info["received_timestamp"])), reliable(1000))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        announced = False
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
            if not announced and sub.get_publisher_count() >= 1:
                print("ready", flush=True)
                announced = True

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    sys.stdin.read()
    stop.set()
    spinner.join(timeout=5)
    out.write_text(json.dumps(stamps))
    executor.shutdown(timeout_sec=2)
    node.destroy_node()
    rclpy.shutdown()


# ----- figures -----

def lateness_ms(stamps_ns: list[int]) -> list[float]:
    """Lateness of each command against the player's schedule (see the module's text). Within a stretch
    command k is due at anchor + k * period. A command more than one period late ends its stretch: the player
    then moves its schedule to one period after it (after the next tick when the late one waited for the
    engine lock, which gives the same schedule). The anchor of a stretch is its earliest command, or the
    schedule the late command before it set, whichever is earlier."""
    period_ns = PERIOD * 1e9
    phases = [t - k * period_ns for k, t in enumerate(stamps_ns)]
    stretches, start, anchor = [], 0, phases[0]
    for k, p in enumerate(phases):
        anchor = min(anchor, p)
        if p - anchor > period_ns:
            stretches.append((start, k + 1))
            start, anchor = k + 1, p
    stretches.append((start, len(phases)))
    late = []
    for a, b in stretches:
        if a < b:
            floor = min(phases[max(a - 1, 0):b])
            late += [(p - floor) / 1e6 for p in phases[a:b]]
    return late


def largest_gap_ms(stamps_ns: list[int]) -> float:
    return max((b - a for a, b in zip(stamps_ns, stamps_ns[1:])), default=0) / 1e6


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ----- the file and the requests -----

def make_file(tmp: Path, seconds: float, rng_state: int) -> tuple[Path, Path, list[float], float, float]:
    """A file of about `seconds` through random waypoints (drawn from `rng_state`), generated within half the
    limits of config/joint_limits.yaml (as the tests do, so s_max is above 1); (root, file, first point,
    duration, s_max at the player's period)."""
    from lockstep_testing.harness import binary
    from player_support import PLANNED, rows, setup_files

    rng = random.Random(rng_state)
    n = max(3, int(seconds / 1.2) + 2)
    for attempt in range(4):
        points = [[0.0, 0.0]] + [[round(rng.uniform(-1.2, 1.2), 3), round(rng.uniform(-0.9, 0.9), 3)]
                                 for _ in range(n - 1)]
        waypoints = "shoulder,elbow\n" + "".join(f"{a},{b}\n" for a, b in points)
        work = tmp / f"file-{attempt}"
        work.mkdir()
        root, _ = setup_files(work, planned=PLANNED, waypoints=waypoints)
        path = root / "move.csv"
        check = subprocess.run([str(binary("lockstep")), "player", "check", str(path), "--limits", str(LIMITS),
                                "--output-period-s", str(PERIOD)], capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stderr
        duration = float(re.search(r", ([0-9.]+) s at speed 1", check.stdout).group(1))
        s_max = float(re.search(r"s_max at T_c = [0-9.e-]+ s: ([0-9.]+)", check.stdout).group(1))
        if duration >= seconds:
            return root, path, rows(path)[0], duration, s_max
        n = int(n * seconds / duration * 1.1) + 1
    raise RuntimeError(f"could not generate a file of {seconds} s")


KINDS = ["pause", "pause with stop time", "pause too short", "resume", "set_speed", "set_speed above s_max"]
WEIGHTS = [15, 15, 10, 30, 20, 10]


def make_requests(count: int, rng_state: int, s_max: float) -> list[tuple[str, object]]:
    """The random mix of (kind, request), drawn from `rng_state`."""
    from lockstep_interfaces.srv import PauseMotion, ResumeMotion, SetSpeed

    rng = random.Random(rng_state)
    out = []
    for kind in rng.choices(KINDS, WEIGHTS, k=count):
        if kind.startswith("pause"):
            req = PauseMotion.Request()
            if kind == "pause with stop time":
                req.stop_time_secs = rng.uniform(0.3, 2.0)
            elif kind == "pause too short":
                req.stop_time_secs = rng.uniform(0.001, 0.01)
        elif kind == "resume":
            req = ResumeMotion.Request()
        else:
            req = SetSpeed.Request()
            req.speed_factor = (rng.uniform(0.3, 0.95 * s_max) if kind == "set_speed"
                                else rng.uniform(1.05 * s_max, 2.0 * s_max))
        out.append((kind, req))
    return out


# ----- one run -----

def play(profile: str, burst: bool, args, tmp: Path, root: Path, first: list[float], duration: float,
         s_max: float) -> dict:
    from lockstep_interfaces.action import MovePlay
    from lockstep_interfaces.srv import PauseMotion, ResumeMotion, SetSpeed
    from sensor_msgs.msg import JointState

    from lockstep_testing.harness import RosTestContext, allocate_domain_id
    from player_support import goal

    os.environ["LOCKSTEP_PROFILE"] = profile
    log_dir = tmp / f"{profile}-{'burst' if burst else 'quiet'}"
    log_dir.mkdir()
    ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=log_dir)
    receiver = None
    try:
        mock = ros.start("lockstep_mock_joints", params={
            "joints": "shoulder,elbow", "initial_positions": ",".join(map(str, first)),
            "limits_file": str(LIMITS), "controller": CONTROLLER, "command_period_s": PERIOD})
        player = ros.start("lockstep_interpolation_player", params={
            "roots": str(root), "limits_file": str(LIMITS), "period_s": PERIOD, "controller": CONTROLLER})
        stamps_file = log_dir / "stamps.json"
        receiver_log = log_dir / "receiver.log"
        with open(receiver_log, "w") as err:
            receiver = subprocess.Popen([sys.executable, __file__, "--receive", str(stamps_file)], env=ros.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        wait_ready(receiver, 120, receiver_log)
        states = ros.collect(JointState, "/joint_states")
        action = ros.action_client(MovePlay, "/move_play")
        clients = {"pause": ros.node.create_client(PauseMotion, "/pause"),
                   "resume": ros.node.create_client(ResumeMotion, "/resume"),
                   "set_speed": ros.node.create_client(SetSpeed, "/set_speed")}
        for name, c in clients.items():
            assert c.wait_for_service(timeout_sec=30), f"service /{name} did not appear"
        ros.wait_for_messages(states, 1, what="/joint_states from the mock")
        requests = make_requests(args.requests, args.rng_state, s_max) if burst else []

        cpu0, wall0, sent_ns = cpu_secs(player.popen.pid), time.monotonic(), time.time_ns()
        # The burst's stretch of the play (the same in both conditions): from a third of the way in, for the
        # burst's length and half a second.
        window_ns = (sent_ns + int(duration / 3 * 1e9),
                     sent_ns + int((duration / 3 + args.requests * args.spacing_s + 0.5) * 1e9))
        handle = ros.send_goal(action, goal("move.csv"))
        assert handle.accepted, "the goal was refused"
        sent, answered, answers = [], [None] * len(requests), [None] * len(requests)
        if requests:
            time.sleep(max(0.0, wall0 + duration / 3 - time.monotonic()))
            t0 = time.monotonic()
            for i, (kind, req) in enumerate(requests):
                time.sleep(max(0.0, t0 + i * args.spacing_s - time.monotonic()))
                sent.append(time.monotonic())
                future = clients[kind.split()[0]].call_async(req)

                def done(f, i=i):
                    answered[i] = time.monotonic()
                    answers[i] = f.result()
                future.add_done_callback(done)
            ros.wait_until(lambda: all(a is not None for a in answered), 60, "every answer")
            end_burst(ros, PauseMotion, ResumeMotion, SetSpeed)
        result = ros.result(handle, timeout=duration * 4 + 120).result
        cpu, wall = cpu_secs(player.popen.pid) - cpu0, time.monotonic() - wall0
        tick_line = ros.wait_until(lambda: re.search(r"tick timing: (.*)", player.log()), 10,
                                   "the player's tick timing line").group(1)
        arrivals = ros.wait_until(lambda: re.search(r"command arrivals: (.*)", mock.log()), 10,
                                  "the mock's command arrivals line").group(1)
        stamps, receiver = collect_stamps(receiver, stamps_file), None
    finally:
        stop_receiver(receiver)
        ros.close()

    source = [s for s, _ in stamps]
    if not all(source):
        raise RuntimeError("messages without a DDS source timestamp: this RMW does not give them")
    received = [r for _, r in stamps]
    late = lateness_ms(source)
    answer_ms = [(a - s) * 1e3 for s, a in zip(sent, answered)]
    by_kind: dict[str, list[int]] = {}
    for (kind, _), ans in zip(requests, answers):
        by_kind.setdefault(kind, [0, 0])[0 if ans.success else 1] += 1
    in_window = [x for x, t in zip(late, source) if window_ns[0] <= t <= window_ns[1]]
    return {
        "profile": profile, "condition": "burst" if burst else "quiet", "ticks": len(stamps),
        "late": late, "gap": largest_gap_ms(source), "arrival_gap": largest_gap_ms(received),
        "arrival_late": lateness_ms(received), "answers": answer_ms, "by_kind": by_kind,
        "window_late": in_window, "cpu": 100 * cpu / wall, "wall": wall,
        "node": tick_line, "mock": arrivals, "result": result,
        "load": os.getloadavg()[0],
    }


def wait_ready(receiver: subprocess.Popen, timeout: float, log: Path) -> None:
    """Until the receiving process says `ready` (matched with the player's publisher)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if receiver.poll() is not None:
            raise RuntimeError(f"the receiving process exited with {receiver.returncode}: {log.read_text()}")
        ready, _, _ = select.select([receiver.stdout], [], [], 0.5)
        if ready and receiver.stdout.readline().strip() == "ready":
            return
    raise TimeoutError(f"the receiving process did not match the player's publisher within {timeout} s: "
                       f"{log.read_text()}")


def collect_stamps(receiver: subprocess.Popen, stamps_file: Path) -> list:
    """End the receiving process; [source_ns, received_ns] per command it got."""
    receiver.stdin.close()
    receiver.wait(timeout=30)
    return json.loads(stamps_file.read_text())


def stop_receiver(receiver: subprocess.Popen | None) -> None:
    """Kill the receiving process if it is still there (a run that failed)."""
    if receiver is not None:
        receiver.kill()
        receiver.wait()


def end_burst(ros, PauseMotion, ResumeMotion, SetSpeed) -> None:
    """After the burst: resume at speed 1 if paused or pausing, else set speed 1, so the play ends."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        req = ResumeMotion.Request()
        req.speed_factor = 1.0
        if ros.call(ResumeMotion, "/resume", req).success:
            return
        req = SetSpeed.Request()
        req.speed_factor = 1.0
        if ros.call(SetSpeed, "/set_speed", req).success:
            return
        time.sleep(0.05)
    raise TimeoutError("neither resume nor set_speed 1 was accepted within 30 s after the burst")


# ----- the table -----

def print_table(runs: list[dict], duration: float, args) -> None:
    def duo(v: list[float]) -> str:
        return f"{quantile(v, 0.99):.3f} / {max(v):.3f}" if v else "-"

    def trio(v: list[float]) -> str:
        return f"{quantile(v, 0.5):.3f} / {quantile(v, 0.99):.3f} / {max(v):.3f}" if v else "-"

    print(f"\n### Player output ticks under service requests: a {duration:.1f} s file at {1 / PERIOD:.0f} Hz "
          f"to the mock joints over DDS\n")
    print("| profile | condition | ticks | lateness p50 / p99 / max (ms) | largest gap (ms) "
          "| lateness p99 / max in the burst's stretch (ms) | answer p50 / p99 / max (ms) | CPU % |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['profile']} | {r['condition']} | {r['ticks']} | {trio(r['late'])} | {r['gap']:.3f} "
              f"| {duo(r['window_late'])} | {trio(r['answers'])} | {r['cpu']:.1f} |")
    print("\nLateness and gaps from the DDS source timestamps of the commands (when the player published them,"
          "\nwithout DDS delivery), against the player's schedule (every period, moved to a tick more than one"
          "\nperiod late), counted from the earliest command of each stretch. The burst's stretch: from a third"
          "\nof the way into the play (when the burst starts) for the burst's length and 0.5 s, in both"
          "\nconditions. Answer: from the client's call to its answer (rclpy, in the benchmark's process)."
          "\nCPU: the player's utime + stime over the play's wall time, % of one core.\n")
    print("| profile | condition | arrival lateness p50 / p99 / max (ms) | arrival gap (ms) "
          "| player's own line | mock's arrivals line |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['profile']} | {r['condition']} | {trio(r['arrival_late'])} | {r['arrival_gap']:.3f} "
              f"| {r['node']} | {r['mock']} |")
    print("\nArrival: the same figures from the receive times (with DDS delivery to another process, what a"
          "\ncontroller sees).\n")
    for r in runs:
        res = r["result"]
        kinds = ", ".join(f"{k} {a} accepted / {f} refused" for k, (a, f) in sorted(r["by_kind"].items()))
        print(f"- {r['profile']} {r['condition']}: {r['wall']:.1f} s wall, load average {r['load']:.1f}; "
              f"result valid={res.valid}, {res.points_played} points, {res.alarm_count} alarms, \"{res.message}\""
              + (f"; requests: {kinds}" if kinds else ""))
    if any(r["answers"] for r in runs):
        print(f"\nBurst: {args.requests} requests {args.spacing_s * 1e3:.0f} ms apart, random state "
              f"{args.rng_state}, a third of the way into the play.")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--receive":
        receive(Path(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=["debug", "release", "both"], default="both",
                        help="which cargo build of the nodes to run (target/debug, target/release)")
    parser.add_argument("--seconds", type=float, default=30.0, help="least duration of the played file at speed 1")
    parser.add_argument("--requests", type=int, default=100, help="requests in the burst")
    parser.add_argument("--spacing-s", type=float, default=0.01, help="time between two requests of the burst")
    parser.add_argument("--rng-state", type=int, default=7,
                        help="state of the random generator of the waypoints and the requests")
    args = parser.parse_args()
    profiles = ["debug", "release"] if args.profile == "both" else [args.profile]
    from lockstep_testing.harness import binary
    for profile in profiles:
        for name in ("lockstep", "lockstep_interpolation_player", "lockstep_mock_joints"):
            print(f"{profile}: {binary(name, profile)}")
    os.environ["LOCKSTEP_PROFILE"] = profiles[0]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root, path, first, duration, s_max = make_file(tmp, args.seconds, args.rng_state)
        print(f"file: {duration:.1f} s at speed 1, s_max {s_max:.4f} at T_c {PERIOD} s", flush=True)
        for profile in profiles:
            for burst in (False, True):
                r = play(profile, burst, args, tmp, root, first, duration, s_max)
                print(f"{profile} {r['condition']}: {r['ticks']} ticks, lateness max {max(r['late']):.3f} ms, "
                      f"largest gap {r['gap']:.3f} ms, CPU {r['cpu']:.1f} %", flush=True)
                runs.append(r)
    print_table(runs, duration, args)


if __name__ == "__main__":
    main()
