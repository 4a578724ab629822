"""The rclpy side: traced publishers and subscriptions, the module's wiring, and its compute callbacks.

Every traced endpoint of a node shares one `Lockstep` (`lockstep(node)`, made on first use): the node's tracer
(module name, epoch, sequence numbers, latest input per channel), its latched topology on
`/lockstep/topology/<module>`, and, with the parameter `lockstep_step_mode:=true`, its step server.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque

from lockstep_interfaces.msg import DependencyHeader, ModuleTopology
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import ParameterDescriptor

from lockstep_trace._cdr import canonical_cdr, message_digest
from lockstep_trace._matcher import HeaderMatcher
from lockstep_trace._model import COMPUTE_MARK, Tracer, component, external_header, module_name, now_ns
from lockstep_trace._step import StepServer

#: Suffix of the sidecar topic that carries a channel's headers.
HEADER_TOPIC_SUFFIX = "/lockstep_header"
#: Prefix of the latched per-module topology topics.
TOPOLOGY_TOPIC_PREFIX = "/lockstep/topology/"
#: The parameter that puts a module in step mode.
STEP_MODE_PARAMETER = "lockstep_step_mode"
#: How long a message from a traced publisher waits for its header by default, seconds.
DEFAULT_HEADER_TIMEOUT_SEC = 0.2
#: Messages per input channel a module in step mode keeps to find a grant's inputs in.
RECENT_DEPTH = 256

#: Headers: reliable and deep enough that a recorder catching up on a burst still gets every one.
HEADER_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: The topology: latched, so a recorder started later still gets it.
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


def header_topic(channel: str) -> str:
    """The sidecar topic of a data topic."""
    return channel.rstrip("/") + HEADER_TOPIC_SUFFIX


def topology_topic(module: str) -> str:
    """The latched topic of one module's topology: `/lockstep/topology/<module>`."""
    return TOPOLOGY_TOPIC_PREFIX + module.strip("/")


def lockstep(node: Node) -> "Lockstep":
    """The Lockstep state of `node`, made on first use."""
    state = getattr(node, "_lockstep_state", None)
    if state is None:
        state = Lockstep(node)
        node._lockstep_state = state
    return state


class _Computation:
    """One computation in normal mode: when it started and the input headers it uses (snapshot at its start,
    so inputs arriving during it are not named)."""

    def __init__(self, inputs):
        self.start_ns = now_ns()
        self.started = time.monotonic_ns()
        self.inputs = inputs


class Lockstep:
    """A node's tracing and step-mode state, shared by its traced endpoints."""

    def __init__(self, node: Node):
        self.node = node
        self.module = module_name(node.get_namespace(), node.get_name())
        self.tracer = Tracer(self.module)
        self.lock = threading.RLock()
        self.publishers: list[TracedPublisher] = []
        self.subscriptions: list[TracedSubscription] = []
        self.extra_readers: list[str] = []
        self.computation: _Computation | None = None
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self._computes: list = []
        self._topology = node.create_publisher(ModuleTopology, topology_topic(self.module), LATCHED_QOS)
        self._topology_timer = None
        if not node.has_parameter(STEP_MODE_PARAMETER):
            node.declare_parameter(STEP_MODE_PARAMETER, False, ParameterDescriptor(
                description="Lock-step replay: compute only when granted a step on `~/lockstep/step`, from the "
                            "inputs it names."))
        self.step_mode = node.get_parameter(STEP_MODE_PARAMETER).value is True
        self.steps = None
        if self.step_mode:
            self.steps = StepServer(self)

    @property
    def logger(self):
        return self.node.get_logger()

    # The wiring ------------------------------------------------------------------------------------------

    def wiring(self):
        """The module's wiring: what its traced subscriptions (and declared readers) read and its traced
        publishers write."""
        readers = [s.channel for s in self.subscriptions] + self.extra_readers
        return component(self.module, readers, [p.channel for p in self.publishers])

    def add_reader(self, channel: str) -> None:
        """List `channel` as read in the wiring (an input read without a `TracedSubscription`)."""
        self.extra_readers.append(channel)
        self.wiring_changed()

    def wiring_changed(self) -> None:
        """Publish the wiring once the node's constructor is done (on the executor's first turn), and again
        whenever it changes later."""
        if self._topology_timer is None:
            self._topology_timer = self.node.create_timer(0.0, self._publish_topology, clock=self.steady_clock)

    def _publish_topology(self) -> None:
        timer, self._topology_timer = self._topology_timer, None
        if timer is not None:
            self.node.destroy_timer(timer)
        wiring = self.wiring()
        self._topology.publish(ModuleTopology(components=[wiring]))
        self.logger.info(f"{wiring.module_name}: reads {list(wiring.reader_channels)}, "
                         f"writes {list(wiring.writer_channels)}")

    # Computations ----------------------------------------------------------------------------------------

    def latest_inputs(self) -> list:
        """The latest header of each traced input named in outputs, in the order the subscriptions were made."""
        headers = (self.tracer.latest_input(s.channel) for s in self.subscriptions if s.named_in_outputs)
        return [h for h in headers if h is not None]

    def add_compute(self, callback) -> None:
        """Register `callback` (no arguments) as a compute callback: called in each granted step."""
        self._computes.append(callback)

    def compute_callbacks(self) -> list:
        """What a granted step calls after delivering the inputs: compute-marked timer callbacks, then the
        callbacks registered with `add_compute`."""
        marked = [t.callback for t in self.node.timers if getattr(t.callback, COMPUTE_MARK, False)]
        return marked + [c for c in self._computes if c not in marked]

    def run_compute(self, fn, args, kwargs):
        """Run a compute callback: in step mode only inside a granted step (held otherwise); in normal mode
        with the inputs' headers snapshot at its start."""
        if self.step_mode:
            if self.steps is None or not self.steps.running():
                return None
            return fn(*args, **kwargs)
        with self.lock:
            outer = self.computation
            self.computation = _Computation(self.latest_inputs()) if outer is None else outer
        try:
            return fn(*args, **kwargs)
        finally:
            with self.lock:
                self.computation = outer


def compute(fn=None, *, node: Node | None = None):
    """Mark the callback that computes and publishes a module's outputs (a timer callback, or a subscription
    callback that computes on each message).

    Normal mode: output headers name the latest input of each traced subscription as it was when the callback
    started, with its start time and duration. Step mode: the callback runs only inside a granted step, after
    the step's inputs were delivered to the subscription callbacks; timer ticks and messages do not trigger it.

    Use it on a method of an rclpy `Node` subclass (`@compute`), or with `node=` for any other callable."""
    if fn is None:
        return functools.partial(compute, node=node)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        owner = node
        if owner is None:
            owner = args[0] if args and isinstance(args[0], Node) else getattr(args[0] if args else None, "node", None)
        if not isinstance(owner, Node):
            raise TypeError(f"lockstep_trace.compute: {fn.__qualname__} is not a method of an rclpy Node; "
                            "pass the node: compute(callback, node=node)")
        return lockstep(owner).run_compute(fn, args, kwargs)

    setattr(wrapper, COMPUTE_MARK, True)
    return wrapper


class TracedPublisher:
    """A publisher of `msg_type` on `topic` plus its dependency headers on `<topic>/lockstep_header`, made like
    `node.create_publisher(msg_type, topic, qos_profile)`. The header's `payload_digest` is the digest of the
    message's canonical CDR; the channel is the fully qualified, remapped topic name."""

    def __init__(self, node: Node, msg_type, topic: str, qos_profile, **kwargs):
        self._state = lockstep(node)
        self._data = node.create_publisher(msg_type, topic, qos_profile, **kwargs)
        self.channel = self._data.topic_name
        self._headers = node.create_publisher(DependencyHeader, header_topic(self.channel), HEADER_QOS)
        with self._state.lock:
            self._state.publishers.append(self)
        self._state.wiring_changed()

    @property
    def publisher(self):
        """The data publisher (rclpy)."""
        return self._data

    def matched_subscriptions(self) -> int:
        """How many subscriptions both the data topic and its header topic have matched (the smaller)."""
        return min(self._data.get_subscription_count(), self._headers.get_subscription_count())

    def publish(self, msg) -> DependencyHeader | None:
        """Publish `msg` and its header; returns the header (None when held: in step mode outside a step)."""
        state = self._state
        with state.lock:
            if state.steps is not None and state.steps.running():
                return state.steps.publish_output(self, msg)
            if state.step_mode:
                state.logger.warning(f"an output on {self.channel} published outside a granted step was held "
                                     "(step mode publishes only the outputs lock-step replay grants)",
                                     throttle_duration_sec=5.0)
                return None
            payload = canonical_cdr(msg)
            computation = state.computation
            if computation is None:
                start_ns, process_ns, inputs = now_ns(), 0, state.latest_inputs()
            else:
                start_ns, inputs = computation.start_ns, computation.inputs
                process_ns = time.monotonic_ns() - computation.started
            header = state.tracer.finish(self.channel, payload, inputs, start_ns, process_ns)
            self.publish_with_header(msg, header)
            return header

    def publish_with_header(self, msg, header: DependencyHeader) -> None:
        """Publish `msg` and a header made elsewhere. The data goes first: a receiver holds data a little while
        for its header, not the other way round."""
        self._data.publish(msg)
        self._headers.publish(header)


class _Waiting:
    __slots__ = ("msg", "digest", "header", "deadline_ns")

    def __init__(self, msg, digest, deadline_ns):
        self.msg, self.digest, self.header, self.deadline_ns = msg, digest, None, deadline_ns


class TracedSubscription:
    """A subscription of `topic` that pairs each message with its dependency header before the callback sees
    it, made like `node.create_subscription(msg_type, topic, callback, qos_profile)`.

    - `traced=True` (the publisher is a traced module): each message waits up to `header_timeout_sec` for its
      header on `<topic>/lockstep_header`; one whose header does not come is dropped with a warning (an input
      nobody can name cannot be replayed).
    - `traced=False` (a sensor driver, a simulator, any untraced publisher): each message gets a synthesized
      header (module "", numbered by arrival from 0).
    - A callback that returns `False` rejects the message: output headers keep naming the previous input.
    - `named_in_outputs=False`: read (listed in the wiring, delivered in steps) but not named in output headers.

    In step mode callbacks are held: messages are kept by digest, and a granted step delivers exactly the ones
    it names."""

    def __init__(self, node: Node, msg_type, topic: str, callback, qos_profile, *, traced: bool = True,
                 header_timeout_sec: float = DEFAULT_HEADER_TIMEOUT_SEC, named_in_outputs: bool = True, **kwargs):
        self._state = lockstep(node)
        self._node = node
        self.callback = callback
        self.traced = traced
        self.named_in_outputs = named_in_outputs
        self._timeout_ns = int(max(0.0, float(header_timeout_sec)) * 1e9)
        self._matcher = HeaderMatcher()
        self._queue: deque = deque()
        self._timer = None
        self._received = 0
        self._recent: deque = deque(maxlen=RECENT_DEPTH)
        self.latest_header: DependencyHeader | None = None
        self.dropped_without_header = 0
        self._data = node.create_subscription(msg_type, topic, self._on_data, qos_profile, **kwargs)
        self.channel = self._data.topic_name
        self._headers = None
        if traced:
            self._headers = node.create_subscription(DependencyHeader, header_topic(self.channel), self._on_header,
                                                     HEADER_QOS)
        with self._state.lock:
            self._state.subscriptions.append(self)
        self._state.wiring_changed()

    @property
    def subscription(self):
        """The data subscription (rclpy)."""
        return self._data

    def find(self, digest: int):
        """Step mode: the newest kept message with `digest`, or None."""
        for d, msg in reversed(self._recent):
            if d == digest:
                return msg
        return None

    def _on_data(self, msg) -> None:
        try:
            digest = message_digest(msg)
        except Exception as e:  # a type whose definition cannot be found: nothing can be named
            self._state.logger.error(f"cannot digest a message of {self.channel}: {e}", throttle_duration_sec=5.0)
            return
        state = self._state
        with state.lock:
            if state.steps is not None:
                self._recent.append((digest, msg))
                state.steps.poll()
                return
            if not self.traced:
                header = external_header(self.channel, self._received, now_ns(), digest)
                self._received += 1
                self.deliver(msg, header)
                return
            waiting = _Waiting(msg, digest, time.monotonic_ns() + self._timeout_ns)
            waiting.header = self._matcher.push_data(digest, waiting)
            self._queue.append(waiting)
            self._release()

    def _on_header(self, header: DependencyHeader) -> None:
        with self._state.lock:
            if self._state.steps is not None:
                return
            waiting = self._matcher.push_header(header)
            if waiting is not None:
                waiting.header = header
                self._release()

    def _release(self) -> None:
        """Deliver waiting messages in arrival order (so "latest" stays latest when a header is late): the
        first as soon as its header is here or its wait is over."""
        now = time.monotonic_ns()
        while self._queue and (self._queue[0].header is not None or now >= self._queue[0].deadline_ns):
            waiting = self._queue.popleft()
            if waiting.header is None:
                self._matcher.give_up(waiting)
                self.dropped_without_header += 1
                self._state.logger.warning(
                    f"an input on {self.channel} arrived without its header within "
                    f"{self._timeout_ns // 1_000_000} ms; ignored ({self.dropped_without_header} so far)",
                    throttle_duration_sec=5.0)
                continue
            self.deliver(waiting.msg, waiting.header)
        if self._queue and self._timer is None:
            wait_s = max(0.0, (self._queue[0].deadline_ns - now) / 1e9)
            self._timer = self._node.create_timer(wait_s, self._on_timeout, clock=self._state.steady_clock)

    def _on_timeout(self) -> None:
        with self._state.lock:
            timer, self._timer = self._timer, None
            if timer is not None:
                self._node.destroy_timer(timer)
            self._release()

    def deliver(self, msg, header: DependencyHeader) -> None:
        """Hand `msg` to the callback with `header` as the channel's latest input (restored if it is rejected)."""
        tracer = self._state.tracer
        previous, previous_header = tracer.latest_input(self.channel), self.latest_header
        tracer.record_input(header, self.channel)
        self.latest_header = header
        if self.callback(msg) is False:
            tracer.forget_input(self.channel) if previous is None else tracer.record_input(previous, self.channel)
            self.latest_header = previous_header
