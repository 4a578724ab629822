"""The demo's progress display (scripts/demo.py): one line per stage, rewritten while it runs (stage k/N,
elapsed), a failed stage's whole error kept for report.json and its log, and the final table."""

from __future__ import annotations

import sys
import threading
import time
import traceback


class Progress:
    def __init__(self, names: list[str]):
        self.names = names
        self.rows: list[tuple[str, str, float, str]] = []
        self.error: str | None = None
        self.tty = sys.stdout.isatty()
        self.t0 = time.monotonic()

    def run(self, k: int, fn, *args):
        name = self.names[k]
        label = f"[{k + 1}/{len(self.names)}] {name:<10}"
        start = time.monotonic()
        stop = threading.Event()

        def ticker():
            while not stop.wait(0.5):
                print(f"\r{label} running  {time.monotonic() - start:6.1f} s", end="", flush=True)

        if self.tty:
            threading.Thread(target=ticker, daemon=True).start()
        else:
            print(f"{label} running ...", flush=True)
        status, summary = "ok", ""
        self.error = None
        try:
            summary = fn(*args) or ""
        except Exception as e:  # noqa: BLE001 - reported in the table, the other stages still run
            # The table gets the first line; report.json and logs/<stage>.log the whole error and traceback.
            self.error = f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}"
            status, summary = "FAILED", f"{type(e).__name__}: {e}".splitlines()[0][:200]
            traceback.print_exc()
        finally:
            stop.set()
        took = time.monotonic() - start
        line = f"{label} {status:<7}{took:6.1f} s  {summary}"
        print(("\r" + line + " " * 10) if self.tty else line, flush=True)
        self.rows.append((name, status, took, summary))
        return status == "ok"

    def table(self) -> str:
        out = [f"{'stage':<10} {'state':<7} {'time':>8}  figures", "-" * 100]
        for name, status, took, summary in self.rows:
            out.append(f"{name:<10} {status:<7} {took:7.1f}s  {summary}")
        out.append(f"{'total':<10} {'':<7} {time.monotonic() - self.t0:7.1f}s")
        return "\n".join(out)
