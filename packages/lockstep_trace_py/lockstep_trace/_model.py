"""Dependency headers and a module's bookkeeping, as the Rust library `lockstep_trace` keeps them.

Headers are the ROS messages themselves (`lockstep_interfaces/msg/DependencyHeader`, `InputHeader`,
`DependencySource`): what a module publishes on `<topic>/lockstep_header`. The back-trace has two levels: an
output's header names the headers of the inputs it used (`inputs`), each with the inputs those were computed
from (`sources`).
"""

from __future__ import annotations

import time

from builtin_interfaces.msg import Time
from lockstep_interfaces.msg import ComponentTopology, DependencyHeader, DependencySource, InputHeader

from lockstep_trace._cdr import digest

#: Module name of an input from an untraced publisher (a sensor driver, a simulator): the receiver synthesizes
#: its header, so nobody is known to have produced it.
EXTERNAL_MODULE = ""

NS_PER_SEC = 1_000_000_000
#: The attribute `compute` sets on the callbacks it marks (read by the step server to find what to run).
COMPUTE_MARK = "__lockstep_compute__"
_U32_MAX = 2**32 - 1
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


def now_ns() -> int:
    """Wall-clock time now, nanoseconds since the Unix epoch."""
    return time.time_ns()


def ns_to_time(ns: int) -> Time:
    """Nanoseconds since the epoch as a ROS `Time` (`nanosec` in [0, 1e9) also for negative instants),
    saturating outside the message's range."""
    sec, nanosec = divmod(int(ns), NS_PER_SEC)
    if sec < _I32_MIN:
        return Time(sec=_I32_MIN, nanosec=0)
    if sec > _I32_MAX:
        return Time(sec=_I32_MAX, nanosec=NS_PER_SEC - 1)
    return Time(sec=sec, nanosec=nanosec)


def time_to_ns(stamp: Time) -> int:
    """A ROS `Time` as nanoseconds since the epoch."""
    return stamp.sec * NS_PER_SEC + stamp.nanosec


def duration_to_ns_u32(seconds_or_ns: int) -> int:
    """A duration in nanoseconds as the header's `uint32 process_time_ns`, saturating at about 4.29 s."""
    return max(0, min(int(seconds_or_ns), _U32_MAX))


def module_name(namespace: str, node_name: str) -> str:
    """The module name of a node: its fully qualified name without the leading slash (`obstacle_fusion` in the
    root namespace, `robot1/obstacle_fusion` under `/robot1`)."""
    namespace = namespace.strip("/")
    return f"{namespace}/{node_name}" if namespace else node_name


def as_source(header) -> DependencySource:
    """A header (`DependencyHeader` or `InputHeader`) seen as a second-level source of someone else's input."""
    return DependencySource(module_name=header.module_name, channel_name=header.channel_name,
                            sequence_num=header.sequence_num, epoch=header.epoch,
                            payload_digest=header.payload_digest)


def as_input(header: DependencyHeader) -> InputHeader:
    """A header seen as a first-level input of someone else's output: its own inputs become the sources, where
    the back-trace stops (two levels)."""
    return InputHeader(module_name=header.module_name, channel_name=header.channel_name,
                       sequence_num=header.sequence_num, epoch=header.epoch, payload_digest=header.payload_digest,
                       # Normalised (nanosec below 1e9) and saturated as the Rust library does.
                       start_stamp=ns_to_time(time_to_ns(header.start_stamp)), process_time_ns=header.process_time_ns,
                       sources=[as_source(i) for i in header.inputs])


def external_header(channel: str, sequence_num: int, received_ns: int, payload_digest: int) -> DependencyHeader:
    """The header a receiver synthesizes for a message from an untraced publisher: module "" (external), the
    receiver's own count of messages on the channel as sequence number, epoch 0."""
    return DependencyHeader(module_name=EXTERNAL_MODULE, channel_name=channel,
                            sequence_num=sequence_num & _U32_MAX, epoch=0, start_stamp=ns_to_time(received_ns),
                            process_time_ns=0, payload_digest=payload_digest, inputs=[])


def copy_header(header: DependencyHeader, payload_digest: int | None = None) -> DependencyHeader:
    """A copy of `header` (with another payload digest if given): a granted frame answered with a new output."""
    return DependencyHeader(module_name=header.module_name, channel_name=header.channel_name,
                            sequence_num=header.sequence_num, epoch=header.epoch, start_stamp=header.start_stamp,
                            process_time_ns=header.process_time_ns,
                            payload_digest=header.payload_digest if payload_digest is None else payload_digest,
                            inputs=list(header.inputs))


def component(module: str, readers, writers) -> ComponentTopology:
    """One module's wiring, channels sorted and unique (byte order, as the Rust library sorts them)."""
    return ComponentTopology(module_name=module, reader_channels=sorted(set(readers)),
                             writer_channels=sorted(set(writers)))


class Tracer:
    """The dependency bookkeeping of one module: per output channel a sequence counter from 0, per input
    channel the latest header received."""

    def __init__(self, module: str, epoch: int | None = None):
        self.module_name = module
        # The epoch tells this process's outputs from a restarted module's, which numbers from 0 again.
        self.epoch = max(1, now_ns()) if epoch is None else int(epoch)
        self._next_sequence: dict[str, int] = {}
        self._latest: dict[str, DependencyHeader] = {}

    def record_input(self, header: DependencyHeader, channel: str | None = None) -> None:
        """Remember `header` as the latest input received on `channel` (default: the channel it names)."""
        self._latest[channel or header.channel_name] = header

    def forget_input(self, channel: str) -> None:
        """Forget the latest input of `channel` (a rejected first message)."""
        self._latest.pop(channel, None)

    def latest_input(self, channel: str) -> DependencyHeader | None:
        """The latest input received on `channel`."""
        return self._latest.get(channel)

    def next_sequence(self, channel: str) -> int:
        """The sequence number the next output on `channel` gets."""
        return self._next_sequence.get(channel, 0)

    def finish(self, channel: str, payload: bytes, inputs, start_ns: int, process_time_ns: int) -> DependencyHeader:
        """The header of the output `payload` (canonical CDR) on `channel`, computed from `inputs` (headers) in a
        computation that started at `start_ns` (ns since the epoch) and took `process_time_ns`."""
        sequence_num = self._next_sequence.get(channel, 0)
        # Wrapping after 2^32 outputs keeps the module running; digests and start stamps still tell them apart.
        self._next_sequence[channel] = (sequence_num + 1) & _U32_MAX
        return DependencyHeader(module_name=self.module_name, channel_name=channel, sequence_num=sequence_num,
                                epoch=self.epoch, start_stamp=ns_to_time(start_ns),
                                process_time_ns=duration_to_ns_u32(process_time_ns),
                                payload_digest=digest(payload), inputs=[as_input(h) for h in inputs])
