"""Runs the command blocks of Markdown pages as a user would type them.

A block runs when its fence says so:

    ```bash run                  the commands must all succeed
    ```bash run exit=1           the block's first failing command must exit with 1 (a documented refusal)
    ```bash run ctrl-c=20        one long-running command, interrupted after 20 s as a user would with Ctrl-C;
                                 it must then finish cleanly (exit 0)

The blocks of one page run in order in one bash session (so `source scripts/env.sh`, `&` jobs and `%1` carry
from block to block, as in a terminal), with job control on, in a work folder that looks like a clone of the
repository: every top-level entry is a symlink to the repository's, and what the commands write stays in the
work folder. Nothing is waited for by a fixed sleep except the Ctrl-C of a `ctrl-c=N` block, which is the
step itself (a recording N seconds long).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```bash run(?P<options>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
DONE = "__lockstep_docs_done__"
# What a clone of the repository has that the work folder should see; outputs of earlier runs are left out.
SKIP = {".git", "demo-output", "bench-results", "log", "build", "install"}


@dataclass
class Block:
    page: Path
    line: int
    body: str
    ctrl_c_s: float | None = None
    exit_status: int = 0

    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The runnable blocks of a page, in order; an unknown option is an error naming the page and line."""
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        block = Block(page, text.count("\n", 0, m.start()) + 1, m.group("body"))
        for option in m.group("options").split():
            key, _, value = option.partition("=")
            if key == "ctrl-c" and value:
                block.ctrl_c_s = float(value)
            elif key == "exit" and value:
                block.exit_status = int(value)
            else:
                raise ValueError(f"{block.where()}: unknown option `{option}` of a `bash run` block")
        found.append(block)
    return found


def work_folder(path: Path) -> Path:
    """A folder that looks like a clone: each top-level entry of the repository linked into it."""
    path.mkdir(parents=True, exist_ok=True)
    for entry in sorted(REPO_ROOT.iterdir()):
        if entry.name not in SKIP and not (path / entry.name).exists():
            (path / entry.name).symlink_to(entry)
    return path


class Shell:
    """One bash session fed block by block; its output goes to `log`."""

    def __init__(self, cwd: Path, env: dict[str, str], log: Path):
        self.log_path = log
        self._log = open(log, "ab")
        self._read, self._write = os.pipe()
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=cwd, env=env, pass_fds=(self._write,),
                                     start_new_session=True)
        self._send("set -m\n")

    def run(self, block: Block, deadline_s: float = 900.0) -> None:
        """Runs one block; an AssertionError names the block and shows the end of the session's output."""
        self._note(f"\n===== {block.where()} =====\n")
        fd = self._write
        if block.ctrl_c_s is None:
            self._send("__ls_fail=0\ntrap '__ls_s=$?; [ \"$__ls_fail\" = 0 ] && __ls_fail=$__ls_s' ERR\n"
                       f"{block.body}\ntrap - ERR\necho \"{DONE} $__ls_fail\" >&{fd}\n")
            status = self._wait_done(block, deadline_s)
        else:
            # The command runs as a job of its own (a process group, as a terminal's foreground job is): Ctrl-C
            # reaches every process of it and nothing else.
            self._send(f"{{ {block.body}\n}} &\n__ls_job=$!\necho \"{DONE} started\" >&{fd}\n")
            self._wait_done(block, deadline_s)
            self._sleep_unless_exited(block.ctrl_c_s)
            self._send(f"kill -INT -$__ls_job 2>/dev/null; wait $__ls_job; echo \"{DONE} $?\" >&{fd}\n")
            status = self._wait_done(block, deadline_s)
        if int(status) != block.exit_status:
            raise AssertionError(f"{block.where()}: the block exited with {status}, expected {block.exit_status}"
                                 f"\n{self.tail()}")

    def close(self) -> None:
        """Ends the session and everything it started (Ctrl-C first, as a user leaving would)."""
        for sig, grace in ((signal.SIGINT, 30.0), (signal.SIGKILL, 10.0)):
            for pid in self._started():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + grace
            while self._started() and time.monotonic() < end:
                time.sleep(0.1)
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=30)
        os.close(self._read)
        os.close(self._write)
        self._log.close()

    def _started(self) -> list[int]:
        return [pid for pid in _session_members(self.proc.pid) if pid != self.proc.pid]

    def tail(self, lines: int = 60) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def _send(self, text: str) -> None:
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def _note(self, text: str) -> None:
        self._log.write(text.encode())
        self._log.flush()

    def _wait_done(self, block: Block, deadline_s: float) -> str:
        end = time.monotonic() + deadline_s
        buffered = b""
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"{block.where()}: the shell ended (exit {self.proc.returncode})\n{self.tail()}")
            ready, _, _ = select.select([self._read], [], [], 0.5)
            if ready:
                buffered += os.read(self._read, 4096)
                if b"\n" in buffered:
                    line = buffered.split(b"\n", 1)[0].decode()
                    return line.split()[-1]
        raise AssertionError(f"{block.where()}: not finished within {deadline_s:.0f} s\n{self.tail()}")

    def _sleep_unless_exited(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.proc.poll() is None:
            time.sleep(min(0.5, max(end - time.monotonic(), 0)))


def _session_members(sid: int) -> list[int]:
    """The processes of a session (the shell's jobs run in process groups of their own, but in its session)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


def run_pages(pages: list[Path], folder: Path, env: dict[str, str]) -> list[tuple[Path, float]]:
    """Runs the pages one after another in one work folder, each in a session of its own; returns the seconds
    each took."""
    work_folder(folder)
    took = []
    for page in pages:
        shell = Shell(folder, env, folder / f"{page.stem}.docs.log")
        start = time.monotonic()
        try:
            for block in blocks(page):
                shell.run(block)
        finally:
            shell.close()
        took.append((page, time.monotonic() - start))
    return took
