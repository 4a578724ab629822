"""The module side of lock-step replay's step protocol (`lockstep_interfaces/srv/Step`), for rclpy.

With `lockstep_step_mode:=true` a module serves `~/lockstep/step`. A request grants one computation: "compute
the output `frame` describes, from exactly the inputs it names". The module keeps the last messages of each
traced input by digest; once every input the frame names on a channel it subscribes has arrived (and, with
`use_sim_time`, once its clock reads the frame's start), it delivers those messages to the subscription
callbacks, calls its compute callbacks, and answers with what its traced publishers published: each output's
header is the granted frame of its channel with the digest of the new output. Inputs that do not arrive within
the request's timeout refuse the step, naming each missing channel and digest.
"""

from __future__ import annotations

import time

from lockstep_interfaces.msg import DependencyHeader, StepOutput
from lockstep_interfaces.srv import Step
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future

from lockstep_trace._cdr import canonical_cdr, digest
from lockstep_trace._model import COMPUTE_MARK, copy_header, time_to_ns

#: The step service of a node, relative to it.
STEP_SERVICE = "~/lockstep/step"
#: How long a module waits for a grant's inputs when the request says 0, seconds.
DEFAULT_STEP_TIMEOUT_SEC = 2.0
#: While a grant waits for `/clock` to read its start, it is looked at again this often, seconds.
CLOCK_POLL_SEC = 0.001


def step_service_name(module: str) -> str:
    """The step service of the module `module` (what the replay calls): `/<module>/lockstep/step`."""
    return f"/{module.strip('/')}/lockstep/step"


def refused(message: str) -> Step.Response:
    return Step.Response(success=False, message=message)


class Grant:
    """One granted computation, pending until its inputs are here."""

    def __init__(self, request: Step.Request, timeout_sec: float):
        self.frame = request.frame
        self.more_frames = list(request.more_frames)
        self.timeout_sec = timeout_sec
        self.started = time.monotonic_ns()
        self.missing: set[str] = set()
        self.future = Future()
        self.outputs: list = []
        self.timers: list = []

    def frames(self):
        return [self.frame, *self.more_frames]

    def input(self, channel: str):
        """The input the frame names on `channel` (an `InputHeader`), or None."""
        return next((i for i in self.frame.inputs if i.channel_name == channel), None)

    def input_digest(self, channel: str):
        named = self.input(channel)
        return None if named is None else named.payload_digest

    def frame_for(self, channel: str):
        return next((f for f in self.frames() if f.channel_name == channel), None)

    def name(self) -> str:
        return f"{self.frame.channel_name} #{self.frame.sequence_num}"

    def refusal(self) -> str:
        named = [f"{c} (digest {self.input_digest(c):016x})" for c in sorted(self.missing)]
        return (f"{self.name()}: inputs not received within {round(self.timeout_sec * 1000)} ms: "
                + (", ".join(named) if named else "(none looked up)"))


class StepServer:
    """Serves `~/lockstep/step` for a node's `Lockstep` and holds the pending grant."""

    def __init__(self, state):
        self._state = state
        node = state.node
        self._group = ReentrantCallbackGroup()
        self._service = node.create_service(Step, STEP_SERVICE, self._on_request, callback_group=self._group)
        self._sim_time = node.get_parameter("use_sim_time").value is True
        self.pending: Grant | None = None
        self._running: Grant | None = None

    def running(self) -> bool:
        """Whether a granted computation is running now (its outputs are the step's)."""
        return self._running is not None

    async def _on_request(self, request: Step.Request, _response: Step.Response) -> Step.Response:
        state, node = self._state, self._state.node
        timeout_sec = (request.timeout_ms or DEFAULT_STEP_TIMEOUT_SEC * 1000) / 1000.0
        grant = Grant(request, timeout_sec)
        with state.lock:
            if self.pending is not None:
                old = self.pending
                self._finish(old, refused(f"superseded by a newer grant; {old.refusal()}"))
            self.pending = grant
        grant.timers.append(node.create_timer(timeout_sec, lambda: self._expire(grant), clock=state.steady_clock,
                                              callback_group=self._group))
        if self._sim_time:
            grant.timers.append(node.create_timer(CLOCK_POLL_SEC, self.poll, clock=state.steady_clock,
                                                  callback_group=self._group))
        self.poll()
        try:
            return await grant.future
        finally:
            for timer in grant.timers:
                node.destroy_timer(timer)

    def _finish(self, grant: Grant, response: Step.Response) -> None:
        if self.pending is grant:
            self.pending = None
        if not grant.future.done():
            grant.future.set_result(response)

    def _clock_ns(self) -> int:
        return self._state.node.get_clock().now().nanoseconds

    def _expire(self, grant: Grant) -> None:
        with self._state.lock:
            if self.pending is not grant:
                return
            start = time_to_ns(grant.frame.start_stamp)
            if self._sim_time and self._clock_ns() != start:
                reason = (f"{grant.name()}: the node runs with use_sim_time and its clock reads {self._clock_ns()} ns, "
                          f"not the frame's start {start} ns: is /clock published (lockstep replay publishes it)?")
            else:
                reason = grant.refusal()
            self._finish(grant, refused(reason))

    def poll(self) -> None:
        """Compute the pending grant if everything it needs is here."""
        state = self._state
        with state.lock:
            grant = self.pending
            if grant is None or self._running is not None:
                return
            if self._sim_time and self._clock_ns() != time_to_ns(grant.frame.start_stamp):
                return
            inputs = []
            for sub in state.subscriptions:
                named = grant.input(sub.channel)
                if named is None:
                    continue  # the frame names nothing on this channel: the computation gets nothing new on it
                msg = sub.find(named.payload_digest)
                if msg is None:
                    grant.missing.add(sub.channel)
                    return
                inputs.append((sub, msg, named))
            self._finish(grant, self._compute(grant, inputs))

    def _compute(self, grant: Grant, inputs: list) -> Step.Response:
        state = self._state
        self._running = grant
        try:
            deferred = []
            for sub, msg, header in inputs:
                if getattr(sub.callback, COMPUTE_MARK, False):
                    deferred.append((sub, msg, header))
                else:
                    sub.deliver(msg, _as_header(header))
            for sub, msg, header in deferred:
                sub.deliver(msg, _as_header(header))
            computes = state.compute_callbacks()
            for callback in computes:
                callback()
            if not deferred and not computes:
                return refused(f"{grant.name()}: {state.module} has no compute callback: mark the callback that "
                               "publishes its outputs with @lockstep_trace.compute")
        except Exception as e:  # the module's own code failed: refuse this step, keep serving
            state.logger.error(f"{grant.name()}: the computation raised {type(e).__name__}: {e}")
            return refused(f"{grant.name()}: the computation raised {type(e).__name__}: {e}")
        finally:
            self._running = None
        return self._answer(grant)

    def publish_output(self, publisher, msg):
        """A traced publisher publishing inside the running step: the header is the frame of its channel."""
        grant = self._running
        frame = grant.frame_for(publisher.channel)
        if frame is None:
            named = ", ".join(f.channel_name for f in grant.frames())
            raise NotGranted(f"the step of {grant.name()} names no output on {publisher.channel} "
                                  f"(it names {named})")
        payload = canonical_cdr(msg)
        header = copy_header(frame, digest(payload))
        publisher.publish_with_header(msg, header)
        grant.outputs.append((header, payload))
        return header

    def _answer(self, grant: Grant) -> Step.Response:
        published = [h.channel_name for h, _ in grant.outputs]
        ordered = []
        for frame in grant.frames():
            found = next((o for o in grant.outputs if o[0].channel_name == frame.channel_name), None)
            if found is None:
                return refused(
                    f"{grant.name()}: the step names outputs on {', '.join(f.channel_name for f in grant.frames())}, "
                    f"but the module published nothing on {frame.channel_name} "
                    f"(it published on {', '.join(published) if published else 'none'})")
            ordered.append(found)
        (header, data), more = ordered[0], ordered[1:]
        return Step.Response(success=True, message="", header=header, data=data,
                             process_time_ns=min(time.monotonic_ns() - grant.started, 2**32 - 1),
                             more_outputs=[StepOutput(header=h, data=d) for h, d in more])


class NotGranted(RuntimeError):
    """An output published in a step on a channel the step names no output on."""


def _as_header(input_header):
    """The `DependencyHeader` of an input a frame names (what the module's tracer records as its latest)."""
    return DependencyHeader(module_name=input_header.module_name, channel_name=input_header.channel_name,
                            sequence_num=input_header.sequence_num, epoch=input_header.epoch,
                            start_stamp=input_header.start_stamp, process_time_ns=input_header.process_time_ns,
                            payload_digest=input_header.payload_digest, inputs=[])
