"""Spinning a traced node until SIGINT or SIGTERM, stopping between callbacks, never inside one.

`rclpy.spin` ends on Ctrl-C by raising `KeyboardInterrupt` wherever the main thread is, which can be inside a
callback between publishing an output and publishing its header: the recording then holds a message whose
header never comes. `spin` here only notes the signal; the callback running at that moment finishes, and the
loop ends before the next one starts.
"""

from __future__ import annotations

import signal
import threading

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

#: How long one wait for work lasts, seconds: the longest a noted signal waits before the loop sees it.
_WAIT_SEC = 0.1


def spin(node: Node, executor: Executor | None = None) -> int:
    """Spin `node` (on `executor`, a single-threaded one if None) until SIGINT or SIGTERM arrives or the context
    is shut down, letting the callback in progress finish. Must be called from the main thread (Python runs
    signal handlers there). Returns the number of the signal that stopped it, 0 if none did. The previous
    signal handlers are back in place when it returns."""
    stop = threading.Event()
    received = []

    def note(signum, _frame):
        received.append(signum)
        stop.set()

    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    own = executor is None
    executor = executor or SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while not stop.is_set() and node.context.ok():
            executor.spin_once(timeout_sec=_WAIT_SEC)
    except ExternalShutdownException:
        pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        executor.remove_node(node)
        if own:
            executor.shutdown(timeout_sec=0)
    return received[0] if received else 0


def init_for_spin(args=None) -> None:
    """`rclpy.init` without rclpy's own SIGINT/SIGTERM handlers, which shut the context down at once, even in
    the middle of a callback; `spin` handles the signals instead."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
