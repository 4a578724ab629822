"""Ray driver of `lockstep test --ray ADDRESS`: runs each case of a suite as one Ray task on the cluster.

The lockstep binary embeds this file and runs it as `python3 - --address ADDRESS --plan PLAN_JSON` with the
source on stdin, so it uses no `__file__`, and the task function lives at module level in `__main__`, which
Ray (cloudpickle) ships to the workers by value: the workers need Ray and the lockstep binaries, not this file.

PLAN_JSON: {"lockstep": path, "suite": path, "output": dir, "cases": [ids], "extra_args": [args]}.
Each task runs `lockstep test SUITE --run-case ID --output OUTPUT EXTRA_ARGS...` on its worker; that case runner
writes its results into OUTPUT/cases/ID/ itself, atomically, so a task Ray retries after its worker died simply
runs the case again. Stdout gets one line per case, as it finishes: `done ID RETURNCODE`, or `failed ID REASON`
when Ray gave the task up (worker lost on every attempt). Exit status: 0 when every task returned (whatever its
case's result: the lockstep binary reads the reports), 1 when a task was given up, 2 when the cluster cannot be
reached, 130 on Ctrl-C or SIGTERM (the outstanding tasks are cancelled, which kills their case runners).
"""

import argparse
import ctypes
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys

import ray

# prctl(2) option: the signal the kernel sends a process when its parent (thread) dies.
PR_SET_PDEATHSIG = 1
# How often Ray runs a case again whose worker or node died (a case that merely fails is not retried).
MAX_RETRIES = 3


@ray.remote(num_cpus=1, max_retries=MAX_RETRIES)
def run_case(lockstep, suite, output, case, extra_args):
    """One case on one worker (1 CPU), its case runner's exit status and the end of its stderr."""
    if not os.path.exists(lockstep):
        # The driver's path is not on this machine (another node, another image): use the installed lockstep.
        found = shutil.which("lockstep")
        if found is None:
            raise FileNotFoundError(f"no lockstep on this Ray node (neither {lockstep} nor on PATH)")
        lockstep = found
    # The case runner dies with this worker: whoever kills the worker (Ray cancelling the task, a lost node, a
    # kill -9) takes the case runner with it, and the case runner's own death signals take its ROS processes.
    # libc is looked up here, before the fork, so the child only makes the prctl call before exec.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    proc = subprocess.run(
        [lockstep, "test", suite, "--run-case", case, "--output", output, *extra_args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        preexec_fn=lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL),
    )
    return {"case": case, "returncode": proc.returncode, "stderr_tail": proc.stderr.splitlines()[-20:]}


def one_line(error):
    """The first non-empty line of an error's message (Ray's messages span many lines)."""
    if isinstance(error, ray.exceptions.RayTaskError) and error.cause is not None:
        error = error.cause  # what the task raised, without Ray's wrapping and remote traceback
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def unreachable(address):
    """Why nothing takes a TCP connection at ADDRESS's host:port, or None (reachable, or for ray.init to word).

    ray.init keeps retrying an address where nobody answers for many minutes; a plain connect says so in seconds.
    """
    target = address.removeprefix("ray://")
    try:
        if target == "auto":
            # The cluster of this machine's last `ray start`, found as ray.init finds it.
            target = ray._private.services.canonicalize_bootstrap_address(target)
        host, port = target.rsplit(":", 1)
        port = int(port)
    except Exception:
        return None  # no cluster found, or a malformed address: ray.init says which
    try:
        socket.create_connection((host.strip("[]"), port), timeout=10).close()
    except OSError as error:
        where = "" if target == address.removeprefix("ray://") else f"{target}: "
        return f"{where}{error.strerror or error}"
    return None


def main():
    parser = argparse.ArgumentParser(prog="lockstep test --ray", description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True, help="Ray cluster: auto, HOST:PORT or ray://HOST:PORT")
    parser.add_argument("--plan", required=True, help="JSON file naming lockstep, suite, output, cases")
    args = parser.parse_args()
    try:
        with open(args.plan, encoding="utf-8") as f:
            plan = json.load(f)
    except (OSError, ValueError) as error:
        print(f"error: cannot read the case plan {args.plan}: {error}", file=sys.stderr)
        return 2

    # Stdout carries only our lines. Ray prints the cluster's events (a worker died, a task is retried) on
    # sys.stdout: those go to stderr, uncoloured, beside the warnings of Ray's core.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr

    def say(line):
        print(line, file=protocol, flush=True)  # flushed: the lockstep binary reads the lines as cases finish

    os.environ["RAY_COLOR_PREFIX"] = "0"

    def stop(signum, frame):
        raise KeyboardInterrupt

    def catch_signals():
        # Ctrl-C and SIGTERM end the run (exit 130), also when started from a shell that ignores SIGINT in
        # background jobs (the interpreter then ignores it too). Again after ray.init, whose core installs a
        # SIGTERM handler of its own that prints a stack dump and exits 1.
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)

    catch_signals()
    # The driver ends with the lockstep binary that started it, even one killed with SIGKILL: the kernel then sends
    # it SIGTERM, which cancels the cases (else they would run on with nobody to collect them).
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        return 130  # it died before the request took effect

    reason = unreachable(args.address)
    if reason is None:
        try:
            # Quiet: the workers' output stays on the workers (the case runner captures its own), no banner.
            ray.init(address=args.address, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as error:  # ConnectionError, ValueError (malformed address), Ray Client errors
            reason = one_line(error)
    if reason is not None:
        print(f"error: cannot reach the Ray cluster at {args.address}: {reason}", file=sys.stderr)
        return 2
    catch_signals()

    pending = {}  # ObjectRef -> case id
    gave_up = False
    try:
        for case in plan["cases"]:
            ref = run_case.remote(plan["lockstep"], plan["suite"], plan["output"], case, plan.get("extra_args", []))
            pending[ref] = case
        while pending:
            # Wait for the next task to finish: ray.wait returns as soon as one is ready.
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                case = pending.pop(ref)
                try:
                    say(f"done {case} {ray.get(ref)['returncode']}")
                except ray.exceptions.WorkerCrashedError:
                    gave_up = True  # the worker running it was killed (out of memory, kill -9) on every attempt
                    say(f"failed {case} its Ray worker died on each of its {1 + MAX_RETRIES} attempts")
                except ray.exceptions.RayError as error:
                    # Its node was lost on every attempt, or the task raised (RayTaskError, e.g. no lockstep on the
                    # worker): the case has no result.
                    gave_up = True
                    say(f"failed {case} {one_line(error)}")
    except KeyboardInterrupt:
        # Force-cancelling kills the workers of running tasks, and with them their case runners.
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass  # finished meanwhile, or the cluster is gone: nothing left to stop
        return 130
    return 1 if gave_up else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # while connecting, before any case was submitted
        sys.exit(130)
