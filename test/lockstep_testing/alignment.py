"""Frame alignment, the headline comparison of lock-step replay: replaying a recording into the live example modules,
how many recorded frames does the replay reproduce with exactly the recorded inputs? Lock-step replay
(`lockstep replay`, modules in step mode) against timed playback (`lockstep bag play` at a rate, modules
running on their own triggers), measured the same way: from the dependency headers the live modules publish
(in lock-step, as the replay wrote them into its output bag from the modules' answers; in timed playback, as
an rclpy subscriber receives them).
Shared by the test (test/trace/test_lockstep_replay.py) and the benchmark (scripts/bench/lockstep_bench.py)."""

import collections
import os
import subprocess
from pathlib import Path

from mcap.reader import make_reader
from rclpy.serialization import deserialize_message

from lockstep_interfaces.msg import DependencyHeader

OUTPUTS = ("/obstacles", "/cmd_vel")  # m1's and m2's: the modules with inputs
MODULE_BINARIES = {"/obstacles": "lockstep_module_m1", "/cmd_vel": "lockstep_module_m2"}
# Timed playback plays what lies outside m1 and m2: the sensors, odometry and m3's missions with headers.
PLAYED = ["/scan_front", "/scan_rear", "/odom", "/mission", "/mission/lockstep_header"]


def recorded_headers(bag: Path) -> dict:
    """Output channel -> the headers recorded for it, in log order."""
    out = collections.defaultdict(list)
    for path in sorted(Path(bag).glob("*.mcap")):
        with open(path, "rb") as f:
            for _, channel, message in make_reader(f).iter_messages(log_time_order=True):
                channel_name = channel.topic.removesuffix("/lockstep_header")
                if channel.topic.endswith("/lockstep_header") and channel_name in OUTPUTS:
                    out[channel_name].append(deserialize_message(message.data, DependencyHeader))
    return out


def inputs_of(header) -> tuple:
    return tuple((i.channel_name, i.payload_digest) for i in header.inputs)


def aligned(recorded: list, live: list) -> tuple[int, int]:
    """(recorded frames some live output reproduced with exactly the recorded inputs, recorded frames)."""
    available = collections.Counter(inputs_of(h) for h in live)
    hits = 0
    for h in recorded:
        key = inputs_of(h)
        if available[key] > 0:
            available[key] -= 1
            hits += 1
    return hits, len(recorded)


def collect_outputs(ros) -> dict:
    return {c: ros.collect(DependencyHeader, f"{c}/lockstep_header") for c in OUTPUTS}


def timed_playback(ros, bag: Path, rate: float, delay_ms: int = 0) -> dict:
    """m1 and m2 live on their own triggers, the rest played by `lockstep bag play --rate`; the headers
    of their outputs."""
    live = collect_outputs(ros)
    procs = [ros.start(MODULE_BINARIES["/obstacles"], params={"processing_delay_ms": delay_ms}),
             ros.start(MODULE_BINARIES["/cmd_vel"], params={"processing_delay_ms": delay_ms})]
    for topic in ("/scan_front", "/scan_rear", "/odom", "/mission", "/mission/lockstep_header"):
        ros.wait_until(lambda t=topic: ros.node.count_subscribers(t) >= 1, 20, f"a subscriber on {topic}")
    play = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "play", str(bag), "--rate", str(rate), "--quiet",
                           "--wait-for-subscribers", "1", "--topics", *PLAYED],
                          capture_output=True, text=True, timeout=600, env=ros.env)
    assert play.returncode == 0, play.stderr
    for p in procs:
        assert p.stop() == 0, p.log()
    return live


def replayable(recorded: dict, report: dict) -> dict:
    """`recorded` without the frames a lock-step replay (its report.json) skipped: those whose inputs precede
    the recording (a mission sent before the recorder matched), which no replay can reproduce."""
    skipped = {(s["channel"], s["sequence_num"]) for s in report["frames_skipped"]}
    return {c: [h for h in headers if (c, h.sequence_num) not in skipped] for c, headers in recorded.items()}


def alignment_table(recorded: dict, live: dict) -> dict:
    """Output channel -> (aligned, recorded frames)."""
    return {c: aligned(recorded[c], live[c]) for c in OUTPUTS}
