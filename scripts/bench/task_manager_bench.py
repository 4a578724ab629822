"""DDS figures of lockstep_task_manager, release builds, real DDS, rclpy as the
client: a task of 1,000 leaf actions (10 duties x 10 messages x 10 actions) against an instant actuator
(lockstep_actuator kind display, duration 0):
- decomposition (and goal checking) time, from the manager's log;
- per leaf: the whole cycle over DDS (task time / 1,000), and the manager's own dispatch overhead (from a
  leaf's completion to the next leaf's running, stamps of /task_events);
- memory per queued task: the manager's resident memory with 20 more 1,000-leaf tasks queued behind a paused one;
- 1,000 AddAttribute calls (delay 0, on actions not yet started, last first) during a 1,000-leaf run: answers,
  time per call, each applied exactly once (one "delayed" status per accepted call), and the run completes;
- a fleet of 3 robots (each an instant display actuator in its namespace), one 1,000-leaf task per robot at
  the same time: the manager's dispatch overhead per leaf across the three, and the wall time.
Run by scripts/bench/task_manager.sh."""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test"))
os.environ["LOCKSTEP_PROFILE"] = "release"

from lockstep_interfaces.action import ExecuteTask  # noqa: E402
from lockstep_interfaces.msg import TaskEvent  # noqa: E402
from lockstep_interfaces.srv import AddAttribute, PauseTask  # noqa: E402
from lockstep_testing.harness import RosTestContext, allocate_domain_id, reliable  # noqa: E402

N = 10  # children per subtask: N**3 leaves
QUEUED = 20


def config() -> str:
    def kids(t):
        return "[" + ", ".join([f"{{type: {t}}}"] * N) + "]"
    return (f"levels: [task, duty, message, action]\n"
            f"actuators:\n  display: {{server: /display, type: lockstep_interfaces/action/Display, goal: {{text: label}}}}\n"
            f"templates:\n"
            f"  big: {{level: task, parameters: {{label: bench}}, children: {kids('duty')}}}\n"
            f"  duty: {{level: duty, children: {kids('message')}}}\n"
            f"  message: {{level: message, children: {kids('action')}}}\n"
            f"  action: {{level: action, actuator: display}}\n")


def fleet_config() -> str:
    return config().replace("server: /display", "server: display")


def gaps_of(events, task_id: str) -> list:
    """Per leaf of `task_id`: ms from a leaf's completion to the next leaf's running (/task_events stamps)."""
    gaps, done_at = [], None
    for e in events:
        if e.task_id != task_id or e.kind != TaskEvent.STATUS or e.level != 3:
            continue
        if e.new_status == "completed":
            done_at = secs(e.stamp)
        elif e.new_status == "running" and done_at is not None:
            gaps.append((secs(e.stamp) - done_at) * 1e3)
    return gaps


def fleet_figures(tmp: Path) -> tuple:
    """Three robots, one 1,000-leaf task each, all at once: (dispatch gaps in ms, wall s)."""
    (tmp / "fleet.yaml").write_text(fleet_config())
    robots = ["robot1", "robot2", "robot3"]
    ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
    try:
        events = ros.collect(TaskEvent, "/task_events", reliable(depth=100000))
        for r in robots:
            ros.start("lockstep_actuator", params={"kind": "display", "duration_s": 0.0},
                      remaps={"__ns": f"/{r}"})
        ros.start("lockstep_task_manager", params={"config_file": str(tmp / "fleet.yaml"),
                                                   "robots": ",".join(robots)})
        client = ros.action_client(ExecuteTask, "/execute_task", timeout=30)
        t0 = time.monotonic()
        handles = [ros.send_goal(client, ExecuteTask.Goal(task_type="big", parameters_json="{}", robot=r))
                   for r in robots]
        results = [ros.result(h, timeout=600).result for h in handles]
        wall = time.monotonic() - t0
        assert all(r.success and r.leaves_executed == N ** 3 for r in results), results
        assert sorted(r.robot for r in results) == robots, [r.robot for r in results]
        gaps = [g for r in results for g in gaps_of(list(events), r.task_id)]
    finally:
        ros.close()
    return gaps, wall


def secs(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def rss_kib(pid: int) -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "big.yaml").write_text(config())
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp)
        try:
            events = ros.collect(TaskEvent, "/task_events", reliable(depth=100000))
            ros.start("lockstep_actuator", params={"kind": "display", "duration_s": 0.0})
            manager = ros.start("lockstep_task_manager", params={"config_file": str(tmp / "big.yaml")})
            client = ros.action_client(ExecuteTask, "/execute_task", timeout=30)
            goal = ExecuteTask.Goal(task_type="big", parameters_json="{}")

            # 1. One 1,000-leaf run.
            t0 = time.monotonic()
            result = ros.result(ros.send_goal(client, goal), timeout=600).result
            wall = time.monotonic() - t0
            assert result.success and result.leaves_executed == N ** 3, result
            run1 = [e for e in events if e.task_id == result.task_id and e.kind == TaskEvent.STATUS and e.level == 3]
            gaps = []
            done_at = None
            for e in run1:
                if e.new_status == "completed":
                    done_at = secs(e.stamp)
                elif e.new_status == "running" and done_at is not None:
                    gaps.append((secs(e.stamp) - done_at) * 1e3)
            decompose = re.search(r"task-1: .* decomposed and checked in ([0-9.]+) ms", manager.log()).group(1)

            # 2. Memory per queued task: 20 tasks behind a paused one.
            first = ros.send_goal(client, goal)
            ros.wait_until(lambda: any(e.task_id == "task-2" and e.new_status == "running" and e.level == 3
                                       for e in events), 30, "task-2 running")
            paused = ros.call(PauseTask, "/pause_task", PauseTask.Request(task_id="task-2"))
            assert paused.success, paused.message
            time.sleep(0.5)  # let the allocator settle before measuring (a measurement, not a test wait)
            before = rss_kib(manager.popen.pid)
            queued = [ros.send_goal(client, goal) for _ in range(QUEUED)]
            ros.wait_until(lambda: f"task-{2 + QUEUED}: " in manager.log(), 60, "the queued tasks")
            after = rss_kib(manager.popen.pid)
            for handle in [first, *queued]:
                ros.cancel(handle)
                ros.result(handle, timeout=60)

            # 3. 1,000 AddAttribute calls during a 1,000-leaf run.
            handle = ros.send_goal(client, goal)
            task_id = f"task-{3 + QUEUED}"
            ros.wait_until(lambda: any(e.task_id == task_id and e.new_status == "running" for e in events), 30,
                           f"{task_id} running")
            cli = ros.node.create_client(AddAttribute, "/add_attribute")
            assert cli.wait_for_service(timeout_sec=10)
            paths = [f"task/duty[{d}]/message[{m}]/action[{a}]"
                     for d in range(N) for m in range(N) for a in range(N)][::-1]
            call_ms, accepted, refused = [], [], {}
            for path in paths:
                t = time.monotonic()
                future = cli.call_async(AddAttribute.Request(task_id=task_id, path=path, kind="delay", delay_s=0.0))
                # Woken by the answer itself (wait_until polls every 50 ms, which would be the figure).
                answered = threading.Event()
                future.add_done_callback(lambda _: answered.set())
                assert answered.wait(10), "no AddAttribute answer in 10 s"
                call_ms.append((time.monotonic() - t) * 1e3)
                answer = future.result()
                if answer.success:
                    accepted.append(path)
                else:
                    why = answer.message.split(": ", 2)[-1]
                    refused[why] = refused.get(why, 0) + 1
            result3 = ros.result(handle, timeout=600).result
            assert result3.success and result3.leaves_executed == N ** 3, result3
            delayed = [e.path for e in events if e.task_id == task_id and e.new_status == "delayed"]
            once = sorted(delayed) == sorted(accepted)
        finally:
            ros.close()
        fleet_gaps, fleet_wall = fleet_figures(tmp)

    print("### Task manager over DDS (release builds; rclpy client; instant display actuator)\n")
    print("| figure | value |")
    print("|---|---|")
    print(f"| decomposition + goal checks, 1,000-leaf task | {decompose} ms |")
    print(f"| whole cycle per leaf over DDS (goal, accept, result, next) | {wall / N ** 3 * 1e3:.2f} ms "
          f"({wall:.2f} s for {N ** 3}) |")
    print(f"| manager dispatch overhead per leaf (completed -> next running) | median {statistics.median(gaps):.3f} ms, "
          f"p99 {pct(gaps, 0.99):.3f} ms, max {max(gaps):.3f} ms |")
    print(f"| memory per queued 1,000-leaf task (RSS, {QUEUED} queued) | {(after - before) / QUEUED:.0f} KiB |")
    print(f"| AddAttribute during a run: time per call | median {statistics.median(call_ms):.2f} ms, "
          f"p99 {pct(call_ms, 0.99):.2f} ms |")
    print(f"| AddAttribute: accepted / refused | {len(accepted)} / {sum(refused.values())} "
          f"({', '.join(f'{v} {k}' for k, v in sorted(refused.items())) or '-'}) |")
    print(f"| each accepted attribute applied exactly once | {'yes' if once else 'NO'} "
          f"({len(delayed)} delayed statuses) |")
    print(f"| 3 robots, one 1,000-leaf task each at once: dispatch overhead per leaf | median "
          f"{statistics.median(fleet_gaps):.3f} ms, p99 {pct(fleet_gaps, 0.99):.3f} ms, max {max(fleet_gaps):.3f} ms "
          f"({len(fleet_gaps)} leaves) |")
    print(f"| 3 robots: wall time for the 3,000 leaves | {fleet_wall:.2f} s |")
    if not once:
        sys.exit(1)


if __name__ == "__main__":
    main()
