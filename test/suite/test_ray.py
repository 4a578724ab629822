"""`lockstep test --ray`: the same suite through a local Ray cluster (2 worker CPUs) gives the same results as
`--jobs`, and a Ray worker killed mid-case has its case run again, each case reported exactly once. The cluster
runs in network and PID namespaces of the test's own (`unshare`): Ray binds 127.0.0.1 when loopback is the only
interface, and the cluster's processes end with the namespace, never touching another test's cluster."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from test_lockstep_test import corpus_run, reports, junit_cases

pytestmark = pytest.mark.timeout(1500)
RUN_TIMEOUT_S = 900
# Start a head with 2 worker CPUs on loopback, then run the suite through it; the namespace's end stops Ray.
CLUSTER = r"""
set -e
ip link set lo up
ray start --head --num-cpus 2 --include-dashboard=false --disable-usage-stats > "$RAY_TMPDIR/start.log" 2>&1
exec "$LOCKSTEP_BIN" test "$SUITE" --ray auto --output "$OUTPUT" --quiet "$@"
"""


def through_ray(ros, suite: Path, output: Path, *args) -> subprocess.Popen:
    """`lockstep test <suite> --ray auto` against a fresh local cluster, started in the background."""
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths allow only a short folder
    env = dict(ros.env, RAY_TMPDIR=ray_tmp, SUITE=str(suite), OUTPUT=str(output),
               LOCKSTEP_BIN=os.environ["LOCKSTEP_BIN"])
    command = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "bash", "-c", CLUSTER,
               "cluster", *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    proc.ray_tmp = ray_tmp
    return proc


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"lockstep test --ray still ran after {RUN_TIMEOUT_S} s:\n{out}\n{err}") from None
    finally:
        shutil.rmtree(proc.ray_tmp, ignore_errors=True)
    assert "panicked" not in err and "Traceback" not in err, err
    return proc.returncode, out, err


def without_timings(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "timings"}


def test_the_suite_through_ray_gives_what_jobs_gave(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    rc, out, err = finish(through_ray(ros, runs["suite"], tmp_path / "ray"))
    assert rc == 1, f"{out}\n{err}"
    assert "6 of 12 cases passed (6 failed, 0 could not run)" in out, f"{out}\n{err}"
    local, remote = reports(runs["output"]), reports(tmp_path / "ray")
    assert sorted(remote) == sorted(local)
    for name in local:
        assert without_timings(remote[name]) == without_timings(local[name]), name
    assert len(junit_cases(tmp_path / "ray")) == 12
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert summary["parallel"] == "Ray cluster at auto"


def case_runners(output: Path) -> dict[int, str]:
    """pid -> case of every `lockstep test --run-case` process writing into `output` (this test's only)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if "--run-case" in words and str(output) in words:
            found[int(entry.name)] = words[words.index("--run-case") + 1]
    return found


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_a_killed_ray_worker_has_its_case_run_again_and_reported_once(ros, tmp_path_factory, tmp_path):
    runs = corpus_run(ros, tmp_path_factory)
    output = tmp_path / "ray"
    proc = through_ray(ros, runs["suite"], output, "--filter", "*__recorded")
    # Wait for a case runner, then kill -9 the Ray worker running it (its parent) while the case runs.
    deadline = time.monotonic() + 300
    runners = {}
    while not runners and proc.poll() is None and time.monotonic() < deadline:
        runners = case_runners(output)
        time.sleep(0.05)
    assert runners, f"no case runner seen within 300 s (exit {proc.poll()})"
    pid, killed_case = sorted(runners.items())[0]
    # Killed once its runner has begun writing the case (its folder exists): seen at exec, it could be killed
    # before it made the folder, and nothing would show it was interrupted. (The folder is named with the
    # runner's pid inside the cluster's own pid namespace, not the one seen here.)
    ros.wait_until(lambda: list((output / "cases").glob(f".{killed_case}.*.partial")), 60,
                   f"the case folder of {killed_case}")
    worker = parent_of(pid)
    os.kill(worker, signal.SIGKILL)
    rc, out, err = finish(proc)
    assert rc == 0, f"{out}\n{err}"
    assert "6 of 6 cases passed" in out, out
    summary = json.loads((output / "summary.json").read_text())
    names = [c["case"] for c in summary["cases"]]
    assert len(names) == len(set(names)) == 6, names
    assert all(c["passed"] for c in summary["cases"]), summary
    got = reports(output)
    assert sorted(got) == sorted(names)
    # The killed attempt left only its unfinished folder, which no report counts; its case ran again.
    assert got[killed_case]["passed"]
    partial = [p.name for p in (output / "cases").iterdir() if p.name.startswith(f".{killed_case}.")]
    assert partial, f"the case {killed_case} was not interrupted (its worker {worker} was killed after it finished?)"
    assert not case_runners(output), "a case runner outlived the run"
