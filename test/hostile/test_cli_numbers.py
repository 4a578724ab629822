"""Every number a `lockstep` subcommand takes, given hostile values: NaN, infinities, values that overflow on
parsing or in arithmetic, subnormals, negatives, empty and non-numeric text.

Each try must end on its own within a deadline (no hang), without a panic or a signal, and print at most a few
lines. A value no sane run can use (not finite, not a number, negative where only positive makes sense, or
absurdly large or small for a command that would then run forever) must be refused with a non-zero exit and an
error naming the option. The values a command may legitimately take (zero where it means "never", a huge limit)
may also succeed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lockstep_testing.harness import allocate_domain_id, binary, release_domain_id

REPO = Path(__file__).resolve().parents[2]
TALKER_BAG = REPO / "test/data/rosbag2/mcap/talker"

# Never usable by any option: not a number, not finite, or a float that overflows to infinity when parsed.
NOT_NUMBERS = ["nan", "NaN", "inf", "-inf", "1e999", "abc", "", "0x10", "18446744073709551616"]
# Finite but hostile: overflow in later arithmetic, subnormals, signs.
EXTREMES = ["-1", "1e300", "1e-300", "4.9e-324", "-0", "9223372036854775807"]

LIMITS = """joint_limits:
  shoulder: {max_velocity: 1.5, max_acceleration: 4.0}
  elbow: {max_velocity: 1.0, max_acceleration: 3.0}
"""


def lockstep_exe() -> str:
    return os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep"))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile_numbers")
    (d / "wp.csv").write_text("shoulder,elbow\n0,0\n0.8,-0.5\n0.2,0.4\n")
    (d / "limits.yaml").write_text(LIMITS)
    (d / "move.csv").write_text("# period_s: 0.002\nshoulder,elbow\n0,0\n0.000001,0\n0.000002,0\n")
    (d / "rules.dl").write_text("edge(1, 2).\nedge(2, 3).\npath(X, Y) :- edge(X, Y).\n")
    return {
        "wp": d / "wp.csv",
        "limits": d / "limits.yaml",
        "move": d / "move.csv",
        "rules": d / "rules.dl",
        "dir": d,
    }


# (id, argv before the option, option, kind). kind "ends": the command finishes by itself with valid values, so
# extremes may succeed; "runs": it runs until stopped with valid values (a server, a recorder), so every
# hostile value must be refused at start.
def cases(f: dict[str, Path]) -> list[tuple[str, list[str], str, str]]:
    out = f["dir"]
    bag = str(TALKER_BAG)
    return [
        ("player-generate-period", ["player", "generate", str(f["wp"]), "--limits", str(f["limits"]), "-o",
                                    str(out / "gen.csv")], "--period-s", "ends"),
        ("player-check-period", ["player", "check", str(f["move"]), "--limits", str(f["limits"])],
         "--output-period-s", "ends"),
        ("calibrate-radius", ["calibrate", bag, "--output", str(out / "cal1")], "--nominal-radius-m", "ends"),
        ("calibrate-track", ["calibrate", bag, "--output", str(out / "cal2")], "--nominal-track-m", "ends"),
        ("calibrate-window", ["calibrate", bag, "--output", str(out / "cal3")], "--window-secs", "ends"),
        ("calibrate-sigma-xy", ["calibrate", bag, "--output", str(out / "cal4")], "--pose-sigma-xy-m", "ends"),
        ("calibrate-sigma-yaw", ["calibrate", bag, "--output", str(out / "cal5")], "--pose-sigma-yaw-rad",
         "ends"),
        ("rules-max-tuples", ["rules", "eval", str(f["rules"])], "--max-tuples", "ends"),
        ("rules-max-seconds", ["rules", "eval", str(f["rules"])], "--max-seconds", "ends"),
        ("echo-limit", ["bag", "echo", bag, "/topic"], "--limit", "ends"),
        ("echo-start-offset", ["bag", "echo", bag, "/topic"], "--start-offset", "ends"),
        ("convert-size", ["bag", "convert", bag, str(out / "conv-size")], "--max-bag-size-bytes", "ends"),
        ("convert-duration", ["bag", "convert", bag, str(out / "conv-dur")], "--max-bag-duration-secs", "ends"),
        ("play-rate", ["bag", "play", "--quiet", "--start-offset", "4.3", bag], "--rate", "runs"),
        ("play-start-offset", ["bag", "play", "--quiet", "--playback-duration", "0.2", bag], "--start-offset", "ends"),
        ("play-duration", ["bag", "play", "--quiet", "--start-offset", "4.3", bag], "--playback-duration", "ends"),
        ("play-delay", ["bag", "play", "--quiet", "--start-offset", "4.3", bag], "--delay", "ends"),
        ("play-clock", ["bag", "play", "--quiet", "--start-offset", "4.3", bag], "--clock", "runs"),
        ("play-queue", ["bag", "play", "--quiet", "--start-offset", "4.3", bag], "--read-ahead-queue-size", "ends"),
        ("record-size", ["bag", "record", "-q", "/hostile_none", "-o", str(out / "rec-b")], "--max-bag-size",
         "runs"),
        ("record-duration", ["bag", "record", "-q", "/hostile_none", "-o", str(out / "rec-d")],
         "--max-bag-duration", "runs"),
        ("record-cache", ["bag", "record", "-q", "/hostile_none", "-o", str(out / "rec-c")], "--max-cache-size",
         "runs"),
        ("record-polling", ["bag", "record", "-q", "/hostile_none", "-o", str(out / "rec-p")],
         "--polling-interval", "runs"),
        ("replay-timeout", ["replay", bag, "-o", str(out / "rp1")], "--timeout-ms", "ends"),
        ("replay-discovery", ["replay", bag, "-o", str(out / "rp2")], "--discovery-ms", "ends"),
        ("view-port", ["view"], "--port", "runs"),
        ("view-discovery", ["view"], "--discovery-period-secs", "runs"),
        ("view-queue", ["view"], "--queue", "runs"),
        ("launch-sigterm", ["launch", "--print", str(REPO / "launch/sim.launch.xml")], "--sigterm-timeout",
         "ends"),
    ]


def case_ids() -> list[str]:
    return [c[0] for c in cases({k: Path("/") for k in ("wp", "limits", "move", "rules", "dir")})]


# Options where a negative number has a meaning (`--playback-duration -1`: to the end, as in ros2 bag play).
NEGATIVE_MEANS_OFF = {"--playback-duration"}


def run(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess | None:
    domain = allocate_domain_id()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), RUST_BACKTRACE="0")
    try:
        return subprocess.run(
            [lockstep_exe(), *argv], capture_output=True, text=True, timeout=timeout_s, env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None
    finally:
        release_domain_id(domain)


@pytest.mark.parametrize("case_id", case_ids())
def test_hostile_numbers_are_refused_or_handled(case_id: str, files: dict[str, Path]) -> None:
    (_, argv, option, kind) = next(c for c in cases(files) if c[0] == case_id)
    values = NOT_NUMBERS + (EXTREMES if kind == "ends" else [v for v in EXTREMES if v != "-0"])
    problems = []
    for value in values:
        # A "runs" command with a value it may legitimately take would run until stopped: only values it must
        # refuse are tried on it, so the deadline stays a hang detector.
        attempt = [*argv, f"{option}={value}"]
        # The output folders must not exist for a second try.
        for p in files["dir"].glob("*"):
            if p.is_dir() and p.name.startswith(("cal", "conv", "rec-", "rp")):
                subprocess.run(["rm", "-rf", str(p)], check=True)
        # A refusal comes before any work: a command that must refuse and is still running after 30 s took
        # the value. Ending commands get 90 s for their work on a loaded machine.
        deadline_s = 30 if kind == "runs" else 90
        result = run(attempt, timeout_s=deadline_s)
        shown = f"lockstep {' '.join(attempt[:3])} ... {option}={value!r}"
        if result is None:
            problems.append(f"{shown}: still running after {deadline_s} s (hang, or the value was taken)")
            continue
        err = result.stderr
        lines = [line for line in err.splitlines() if line.strip()]
        if result.returncode < 0 or result.returncode == 101 or "panicked" in err:
            problems.append(f"{shown}: crashed (exit {result.returncode}): {err[-400:]}")
            continue
        if "stack backtrace" in err or "RUST_BACKTRACE" in err:
            problems.append(f"{shown}: a backtrace instead of an error")
        must_refuse = value in NOT_NUMBERS or kind == "runs" or (value == "-1" and option not in NEGATIVE_MEANS_OFF)
        if must_refuse:
            if result.returncode == 0:
                problems.append(f"{shown}: accepted (exit 0), must be refused")
            elif option not in err and option.lstrip("-").replace("-", "_") not in err:
                problems.append(f"{shown}: refused without naming {option}: {err[-300:]!r}")
        if result.returncode != 0 and len(lines) > 6:
            problems.append(f"{shown}: {len(lines)} lines of errors, expected one or two: {err[-600:]!r}")
    assert not problems, "\n".join(problems)
