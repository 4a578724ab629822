#!/usr/bin/env python3
"""Hostile input, tried as a hostile user would: seeded random suite files, special files where a file is
expected, parameter files, task goals and task state files, service storms and WebSocket handshakes. Each try
is classified: crash (a panic, a signal, a node that died), hang (no end or no answer within its deadline),
clear (refused with at most three lines naming what and where, or answered with a reason), handled (taken, and
the tool or node went on), unclear (refused without saying why, or echoing the input back), data lost.

    python3 scripts/faults_input.py                 # after the build; about two minutes
    python3 scripts/faults_input.py --run 7         # other random tries (the same run, the same tries)
    python3 scripts/faults_input.py --only suites   # one class

Prints a table per class; exits 1 on any crash, hang, unclear answer or data lost."""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test/tasks"), str(REPO / "test/hostile"),
                str(REPO / "test/interpolation")]

from lockstep_testing.harness import RosTestContext, allocate_domain_id, release_domain_id  # noqa: E402

BAG = REPO / "test/data/rosbag2/mcap/cdr_test/cdr_test_0.mcap"
LAUNCH = REPO / "launch/replay_system.launch.xml"
KINDS = ("crash", "hang", "clear", "handled", "unclear", "lost")
# Values no field should take without a reason: not numbers, not finite, overflowing, absurd, paths out.
HOSTILE = [".nan", "-.inf", "1e999", "-1", "0", "9223372036854775808", "-9223372036854775809", "''", "..",
           "/dev/zero", "/", "'%s'" % ("x" * 100_000), "[" * 5000 + "]" * 5000, "{a: &a [*a, *a]}", "~", "true",
           "!!binary AAAA", "'\u202e\u0000'", "[1, [2, [3]]]", "{}"]


def lockstep_bin() -> str:
    return os.environ.get("LOCKSTEP_BIN") or str(REPO / "target/debug/lockstep")


def judge_exit(rc: int | None, stderr: str, names: list[str]) -> str:
    """What a finished (or timed-out: rc None) command's end says: accepted, a clear refusal, or worse."""
    if rc is None:
        return "hang"
    if rc == 101 or rc < 0 or rc >= 128 or "panicked" in stderr:
        return "crash"
    if rc == 0:
        return "handled"
    lines = [line for line in stderr.splitlines() if line.strip()]
    if 1 <= len(lines) <= 3 and any(n in lines[0] for n in names) and len(stderr) < 2000:
        return "clear"
    return "unclear"


def shown(text: str) -> str:
    """Output shown in one line of the table: its lines joined, cut at 400 characters."""
    return " | ".join(line.strip() for line in text.strip().splitlines())[:400]


def run_tool(args: list[str], cwd: Path, names: list[str], timeout: float = 60.0) -> tuple[str, str]:
    env = dict(os.environ, RUST_BACKTRACE="0")
    try:
        run = subprocess.run([lockstep_bin(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                             env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", f"lockstep {' '.join(args)[:80]}: no end within {timeout:.0f} s"
    return judge_exit(run.returncode, run.stderr, names), shown(run.stderr)


def mutate_yaml(rng: random.Random, text: str) -> str:
    """A YAML text with one hostile change: a value replaced, a line dropped or doubled, cut, or garbage."""
    lines = text.splitlines()
    op = rng.randrange(6)
    i = rng.randrange(len(lines))
    if op <= 2 and ":" in lines[i]:
        key, _, _ = lines[i].partition(":")
        lines[i] = f"{key}: {rng.choice(HOSTILE)}"
    elif op == 3:
        del lines[i]
    elif op == 4:
        lines.insert(i, lines[i])
    else:
        cut = rng.randrange(len(text) + 1)
        return text[:cut] + rng.randbytes(rng.randrange(1, 64)).decode("latin-1")
    return "\n".join(lines) + "\n"


def try_suites(rng: random.Random, work: Path, tries: int) -> list[tuple[str, str, str]]:
    shutil_copy(BAG, work / "rec_1.mcap")
    base = (f"recordings:\n  - rec_*.mcap\nmodules:\n  launch: {LAUNCH}\n  arguments: {{hold: 4}}\n"
            "  variants:\n    a: {}\n    b: {arguments: {hold: 2}}\nreplay:\n  timeout_ms: 5000\n  frames: all\n"
            "  repeat: 1\nexpect:\n  /cmd_vel:\n    abs_tol: 0.01\n    fields:\n      linear.x: exact\n"
            "baseline: recording\n")
    out = []
    for n in range(tries):
        suite = work / f"suite_{n}.yaml"
        suite.write_text(mutate_yaml(rng, base), errors="replace")
        kind, detail = run_tool(["test", str(suite), "--list"], work, [suite.name])
        out.append(("suite files", kind, detail))
    return out


def try_special_files(rng: random.Random, work: Path, tries: int) -> list[tuple[str, str, str]]:
    from test_special_files import COMMANDS  # the commands and their other arguments

    os.mkfifo(work / "fifo")
    (work / "loop").symlink_to(work / "loop")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(work / "socket"))
    (work / "rules.dl").write_text("a(1).\n")
    specials = [str(work / "fifo"), str(work / "loop"), str(work / "socket"), "/dev/zero", "/dev/urandom",
                "/dev/null", "/proc/self/mem", str(work / "missing/deeper")]
    out = []
    for _ in range(tries):
        name, special = rng.choice(sorted(COMMANDS)), rng.choice(specials)
        args = [a.replace("{f}", special) for a in COMMANDS[name]]
        kind, detail = run_tool(args, work, [Path(special).name])
        out.append(("special files", kind, f"{name} {special}: {detail}"))
    sock.close()
    return out


def node_start(ctx: RosTestContext, binary: str, params_file: Path, wait_s: float) -> tuple[str, str]:
    """A node on a parameter file: refused at once (clear or not), or running after `wait_s` (handled)."""
    proc = ctx.start(binary, params_file=params_file)
    deadline = time.monotonic() + wait_s
    while proc.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.alive():
        proc.stop()
        return "handled", "started"
    rc = proc.stop()
    log = proc.log()
    return judge_exit(rc, log, [params_file.name, "parameter '", "parameter `"]), shown(log)


NODES = {"lockstep_calibrator": "config/calibrator.yaml", "lockstep_interpolation_player":
         "config/interpolation_player.yaml", "lockstep_actuator": "config/actuator.yaml",
         "lockstep_bag_player": "config/bag_player.yaml", "lockstep_recorder": "config/recorder.yaml"}


def try_parameter_files(rng: random.Random, work: Path, tries: int, ctx: RosTestContext):
    out = []
    for n in range(tries):
        binary, config = rng.choice(sorted(NODES.items()))
        text = (REPO / config).read_text()
        f = work / f"params_{n}.yaml"
        f.write_text(mutate_yaml(rng, text) if rng.random() < 0.8 else "a:\n" + "  - " * 3000 + "x\n",
                     errors="replace")
        kind, detail = node_start(ctx, binary, f, wait_s=8.0)
        out.append(("parameter files", kind, f"{binary}: {detail}"))
    return out


def hostile_goal(rng: random.Random):
    from lockstep_interfaces.action import ExecuteTask

    big = "x" * rng.choice([300, 100_000, 1_000_000])
    goal = ExecuteTask.Goal()
    goal.task_type = rng.choice(["shuttle", "shuttle", "teleport", "", big, "shuttle\u0000", "../../etc"])
    goal.parameters_json = rng.choice([
        '{"from": "A", "to": "B"}', '{"from": "A"}', "{", '{"from": NaN, "to": "B"}', "[" * 10_000,
        '{"from": "A", "to": "B", "speed": -1e308}', '{"from": "%s", "to": "B"}' % big, '"x"', "null",
        '{"from": 1e999, "to": "B"}'])
    goal.priority = rng.choice([0, 1, -1, 2**31 - 1, -(2**31)])
    goal.robot = rng.choice(["", "", "nobody", big])
    return goal


def try_task_goals(rng: random.Random, work: Path, tries: int, ctx: RosTestContext):
    from lockstep_interfaces.srv import ListTasks
    from tasks_support import TIMED, Manager
    from test_task_manager_hostile import storm_client

    config = work / "tasks.yaml"
    config.write_text(TIMED)
    manager = Manager(ctx, config)
    log_before = len(manager.proc.log())
    # A deep history on this side too: answers this client reads slowly are not overwritten.
    client = storm_client(ctx)
    futures = [client.send_goal_async(hostile_goal(rng)) for _ in range(tries)]
    sent = time.monotonic()
    deadline = sent + 60
    while time.monotonic() < deadline and not all(f.done() for f in futures) and manager.proc.alive():
        time.sleep(0.05)
    out = []
    grew = len(manager.proc.log()) - log_before
    for f in futures:
        if not manager.proc.alive():
            out.append(("task goals", "crash", "the manager died"))
        elif not f.done():
            out.append(("task goals", "hang", "no goal response within 60 s"))
        else:
            out.append(("task goals", "clear" if not f.result().accepted else "handled", ""))
    if grew > 2000 * tries:
        out[-1] = ("task goals", "unclear", f"the log grew {grew} bytes for {tries} goals: input echoed")
    try:
        ctx.call(ListTasks, "/list_tasks", ListTasks.Request(), timeout=30)
    except TimeoutError:
        out.append(("task goals", "hang", "/list_tasks no longer answers"))
    manager.proc.stop()
    return out


def try_state_files(rng: random.Random, work: Path, tries: int, ctx: RosTestContext):
    from tasks_support import TIMED

    config = work / "tasks.yaml"
    config.write_text(TIMED)
    out = []
    for n in range(tries):
        state = work / f"state_{n}.yaml"
        choice = rng.randrange(4)
        if choice == 0:
            state.write_bytes(rng.randbytes(rng.randrange(1, 4096)))
        elif choice == 1:
            state.write_text("tasks: " + "[" * 20_000)
        elif choice == 2:
            state.write_text(mutate_yaml(rng, "stations: {A: r1}\ntasks:\n  - {id: t1, type: shuttle}\n"))
        else:
            state = Path(rng.choice(["/dev/zero", "/dev/null", str(work)]))
        proc = ctx.start("lockstep_task_manager", params={"config_file": str(config), "state_file": str(state)})
        deadline = time.monotonic() + 8
        while proc.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.alive():
            proc.stop()
            out.append(("task state files", "handled", f"{state.name}: started"))
        else:
            rc = proc.stop()
            kind = judge_exit(rc, proc.log(), ["state_file"])
            out.append(("task state files", kind, shown(proc.log())))
    return out


def try_storms(rng: random.Random, work: Path, tries: int, ctx: RosTestContext):
    """`tries` requests in about a second to the task manager's services: each answered within 5 s of the last."""
    from lockstep_interfaces.srv import AddAttribute, ListTasks
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from tasks_support import TIMED

    config = work / "tasks.yaml"
    config.write_text(TIMED)
    proc = ctx.start("lockstep_task_manager", params={"config_file": str(config)})
    deep = QoSProfile(depth=max(tries, 10), reliability=ReliabilityPolicy.RELIABLE)
    clients = {"list": ctx.node.create_client(ListTasks, "/list_tasks", qos_profile=deep),
               "add": ctx.node.create_client(AddAttribute, "/add_attribute", qos_profile=deep)}
    for c in clients.values():
        if not c.wait_for_service(timeout_sec=60):
            return [("service storms", "hang", "the services never appeared")]
    # One answered call per client before the storm: a server drops the reply to a client whose reply reader
    # it has not discovered yet (rmw_fastrtps, 100 ms), which on a loaded machine is the client's first
    # requests; that is discovery, not the server under a storm. Asked again until answered.
    warm = {"list": ListTasks.Request(), "add": AddAttribute.Request(task_id="nope", path="task", kind="delay")}
    for name, c in clients.items():
        deadline = time.monotonic() + 60
        while True:
            future = c.call_async(warm[name])
            asked = time.monotonic()
            while not future.done() and time.monotonic() < min(asked + 5, deadline):
                time.sleep(0.05)
            if future.done():
                break
            if time.monotonic() >= deadline:
                return [("service storms", "hang", f"no answer to a first {name} request in 60 s")]
    answers: list = []
    t0 = time.monotonic()
    for i in range(tries):
        time.sleep(max(0.0, t0 + i / tries - time.monotonic()))
        if rng.random() < 0.5:
            request = ListTasks.Request()
            future = clients["list"].call_async(request)
        else:
            request = AddAttribute.Request(task_id=rng.choice(["", "t" * 10_000, "nope"]), path="task",
                                           kind=rng.choice(["delay", "", "x" * 1000]),
                                           delay_s=rng.choice([float("nan"), -1.0, 1e308, 1.0]))
            future = clients["add"].call_async(request)
        future.add_done_callback(lambda f: answers.append(time.monotonic()))
    sent = time.monotonic()
    while len(answers) < tries and time.monotonic() < sent + 60 and proc.alive():
        time.sleep(0.05)
    late = sum(1 for t in answers if t > sent + 5.0)
    out = [("service storms", "clear", "") for _ in range(len(answers) - late)]
    out += [("service storms", "hang", f"answered over 5 s after the last request") for _ in range(late)]
    missing = tries - len(answers)
    out += [("service storms", "crash" if not proc.alive() else "hang", "no answer") for _ in range(missing)]
    proc.stop()
    return out


def handshake(rng: random.Random) -> bytes:
    version = rng.choice(["13", "99", "0", "-1", "13.0", "", "18446744073709551616", "8, 13", "x" * 10_000])
    headers = ["GET / HTTP/1.1", "Host: localhost", "Upgrade: websocket", "Connection: Upgrade",
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", f"Sec-WebSocket-Version: {version}",
               "Sec-WebSocket-Protocol: foxglove.websocket.v1"]
    op = rng.randrange(5)
    if op == 1:
        del headers[rng.randrange(1, len(headers))]
    elif op == 2:
        headers += [f"X-{i}: {'y' * 100}" for i in range(rng.choice([100, 2000]))]
    elif op == 3:
        return rng.randbytes(rng.randrange(1, 8192)) + b"\r\n\r\n"
    elif op == 4:
        headers[0] = rng.choice(["POST / HTTP/1.1", "GET / HTTP/9.9", "GET " + "/" * 20_000 + " HTTP/1.1"])
    return ("\r\n".join(headers) + "\r\n\r\n").encode()


def try_handshakes(rng: random.Random, work: Path, tries: int, ctx: RosTestContext):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    view = ctx.start("lockstep", "view", "--port", str(port), "--discovery-period-secs", "0.5", name="view")
    deadline = time.monotonic() + 60
    while "live view on " not in view.log() and time.monotonic() < deadline and view.alive():
        time.sleep(0.1)
    out = []
    for _ in range(tries):
        request = handshake(rng)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=15) as c:
                c.sendall(request)
                reply = c.recv(200)
            status = reply.split(b"\r\n", 1)[0].decode("latin-1")
            ok = status.startswith("HTTP/1.1 ") or reply == b""
            kind = "handled" if " 101 " in status else ("clear" if ok else "unclear")
            out.append(("WebSocket handshakes", kind, status[:80] or "closed"))
        except (socket.timeout, TimeoutError):
            out.append(("WebSocket handshakes", "hang", "no answer within 15 s"))
        except (ConnectionResetError, BrokenPipeError):
            out.append(("WebSocket handshakes", "clear", "connection closed"))
        if not view.alive():
            out[-1] = ("WebSocket handshakes", "crash", view.log()[-200:])
            break
    view.stop()
    return out


CLASSES = {"suites": (try_suites, 40, False), "special": (try_special_files, 40, False),
           "params": (try_parameter_files, 10, True), "goals": (try_task_goals, 60, True),
           "state": (try_state_files, 6, True), "storms": (try_storms, 300, True),
           "handshakes": (try_handshakes, 30, True)}


def shutil_copy(src: Path, dst: Path) -> None:
    dst.write_bytes(src.read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=int, default=11, help="which random tries (the same run, the same tries)")
    parser.add_argument("--only", choices=sorted(CLASSES), action="append", help="only these classes")
    args = parser.parse_args()
    results: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="lockstep-faults-input.") as tmp:
        domain = allocate_domain_id()
        ctx = RosTestContext(domain_id=domain, log_dir=Path(tmp))
        try:
            for name in args.only or list(CLASSES):
                fn, tries, ros = CLASSES[name]
                work = Path(tmp) / name
                work.mkdir()
                rng = random.Random(f"{args.run}-{name}")
                results += fn(rng, work, tries, ctx) if ros else fn(rng, work, tries)
        finally:
            ctx.close()
            release_domain_id(domain)
    counts: dict[str, Counter] = {}
    for cls, kind, _ in results:
        counts.setdefault(cls, Counter())[kind] += 1
    print(f"| class | tries | {' | '.join(KINDS)} |\n|---|---|{'---|' * len(KINDS)}")
    for cls, c in counts.items():
        print(f"| {cls} | {sum(c.values())} | {' | '.join(str(c[k]) for k in KINDS)} |")
    bad = [r for r in results if r[1] in ("crash", "hang", "unclear", "lost")]
    for cls, kind, detail in bad:
        print(f"{kind}: {cls}: {detail}")
    print(f"run {args.run}: {len(results)} tries, {len(bad)} crashes, hangs, unclear answers or data lost")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
