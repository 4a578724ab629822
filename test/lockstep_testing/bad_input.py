"""Bad-input robustness checks for any node: non-finite and out-of-range values on every input.

A node must drop a message or answer a request whose numbers it cannot use (NaN, +-inf, values so large that
arithmetic on them overflows), keep running, and keep its outputs finite. `check_bad_input` checks exactly that,
for any node, from the outside:

1. it subscribes to the node's output topics (before anything else, so it sees what the node publishes while
   it is being flooded);
2. it publishes bad messages on every input topic, a few at a time, each batch acknowledged by the node's
   reader before the next (so that a shallow keep-last subscription does not lose them): copies of a template
   (default: the message type's defaults) whose float fields -- found recursively through the rclpy message's fields and slot types, nested messages,
   fixed arrays and sequences included -- are set to NaN, +inf, -inf, +1e308 and -1e308 (float32 fields get
   +-3.4e38, the largest float32), first all of them at once, then one field at a time with each value. With
   `Input(..., integers=True)` the integer fields also get their type's minimum and maximum;
3. it calls every service with such requests and expects an answer to each (an error answer is fine; a hang
   is not);
4. it asserts that the node process is still alive, that every output topic produced `fresh` messages after
   the flood, and that no message received on an output topic, before, during or after the flood, holds a
   non-finite float anywhere.

Everything is deterministic (the same inputs in the same order on every run) and every wait is on a condition
(a matched subscription, acknowledged publications, service answers, fresh output messages), with timeouts.

Example (a shortened version of what test/sim/test_sim_hardening.py does to the simulator)::

    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from lockstep_interfaces.srv import SetDestination
    from lockstep_testing.bad_input import Input, check_bad_input

    proc = ros.start("lockstep_sim_node", params={"mode": "commanded"})
    report = check_bad_input(
        ros, proc,
        topics=[(Twist, "/cmd_vel")],
        services=[Input(SetDestination, "/lockstep_sim_node/set_destination", integers=True)],
        outputs=[(Odometry, "/odom")],
    )
    assert not any(r.success for r in report.responses["/lockstep_sim_node/set_destination"])

The public API is `__all__`; the rest are helpers.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, Union

from rclpy.qos import QoSProfile
from rosidl_parser.definition import (
    AbstractNestedType,
    Array,
    BasicType,
    BoundedSequence,
    NamespacedType,
)

from lockstep_testing.harness import NodeProcess, RosTestContext, reliable

#: The values every float field is set to, in this order. float32 fields get +-FLOAT32_HUGE instead of +-1e308.
BAD_FLOATS = (math.nan, math.inf, -math.inf, 1e308, -1e308)
FLOAT32_HUGE = 3.4e38

_FLOAT_TYPES = {"float", "double", "long double"}
_INT_BITS = {
    "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
    "uint8": (8, False), "uint16": (16, False), "uint32": (32, False), "uint64": (64, False),
    "short": (16, True), "long": (32, True), "long long": (64, True),
    "unsigned short": (16, False), "unsigned long": (32, False), "unsigned long long": (64, False),
}


@dataclass(frozen=True)
class Input:
    """One input of the node under test.

    type: the message type (for a topic) or the service type (for a service), e.g. `Twist`, `SetDestination`.
    name: the topic or service name, e.g. "/cmd_vel".
    template: a message (topic) or request (service) whose values are kept except those set to bad ones;
        default `type()` (for a service, `type.Request()`). Give one when the interesting floats sit in
        sequences that are empty by default, e.g. a `SetParameters.Request` holding one double parameter.
    integers: also send the minimum and maximum of every integer field (for inputs whose integers are
        indices or cells, like `SetDestination`). Off by default: integers often encode enums and types.
    """

    type: Any
    name: str
    template: Any = None
    integers: bool = False


InputLike = Union[Input, Sequence[Any]]
"""An `Input`, or a tuple `(type, name)` / `(type, name, template)`."""


@dataclass
class BadInputReport:
    """What `check_bad_input` sent and got back.

    published: topic -> number of bad messages published (all acknowledged by the node's reader).
    responses: service name -> the answers, in the order of the requests (same order as `requests`).
    requests: service name -> the bad requests sent.
    received: output topic -> every message received on it during the check.
    """

    published: dict[str, int] = field(default_factory=dict)
    responses: dict[str, list] = field(default_factory=dict)
    requests: dict[str, list] = field(default_factory=dict)
    received: dict[str, list] = field(default_factory=dict)


# ----- walking rclpy messages -----

def _fields(msg) -> Iterator[tuple[str, Any]]:
    """(field name, rosidl slot type) of a message, in declaration order."""
    return zip(msg.get_fields_and_field_types().keys(), type(msg).SLOT_TYPES)


def _leaves(msg, path: tuple = ()) -> Iterator[tuple[tuple, str, Any]]:
    """Every number-holding leaf: (path, kind, slot type) with kind in float, floats, int, ints.

    A path is a tuple of field names and sequence indices; `floats`/`ints` are whole arrays or sequences of
    numbers (set as one leaf). Nested messages and sequences of messages are walked into.
    """
    for name, slot in _fields(msg):
        value = getattr(msg, name)
        if isinstance(slot, NamespacedType):
            yield from _leaves(value, path + (name,))
        elif isinstance(slot, AbstractNestedType):
            inner = slot.value_type
            if isinstance(inner, NamespacedType):
                for i, element in enumerate(value):
                    yield from _leaves(element, path + (name, i))
            elif isinstance(inner, BasicType) and inner.typename in _FLOAT_TYPES:
                yield path + (name,), "floats", slot
            elif isinstance(inner, BasicType) and inner.typename in _INT_BITS:
                yield path + (name,), "ints", slot
        elif isinstance(slot, BasicType):
            if slot.typename in _FLOAT_TYPES:
                yield path + (name,), "float", slot
            elif slot.typename in _INT_BITS:
                yield path + (name,), "int", slot


def _basic(slot) -> BasicType:
    return slot.value_type if isinstance(slot, AbstractNestedType) else slot


def _float_value(slot, value: float) -> float:
    """`value`, or the largest float32 of its sign where a float32 cannot hold it."""
    if _basic(slot).typename == "float" and math.isfinite(value) and abs(value) > FLOAT32_HUGE:
        return math.copysign(FLOAT32_HUGE, value)
    return value


def _int_value(slot, which: str) -> int:
    bits, signed = _INT_BITS[_basic(slot).typename]
    if which == "min":
        return -(1 << (bits - 1)) if signed else 0
    return (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1


def _set_leaf(msg, path: tuple, kind: str, slot, value) -> None:
    parent = msg
    for step in path[:-1]:
        parent = parent[step] if isinstance(step, int) else getattr(parent, step)
    name = path[-1]
    if kind in ("float", "int"):
        setattr(parent, name, value)
        return
    # A whole array or sequence: every element; an empty sequence gets one element (bounded: if room).
    length = len(getattr(parent, name))
    if isinstance(slot, Array):
        length = slot.size
    elif length == 0 and not (isinstance(slot, BoundedSequence) and slot.maximum_size == 0):
        length = 1
    setattr(parent, name, [value] * length)


def _with(template, leaves: list, value_of) -> Any:
    msg = copy.deepcopy(template)
    for path, kind, slot in leaves:
        _set_leaf(msg, path, kind, slot, value_of(kind, slot))
    return msg


def bad_variants(template, integers: bool = False) -> list:
    """Deterministic bad copies of `template` (a message or request instance).

    First, for each value of BAD_FLOATS, a copy with EVERY float field set to it; then, when there are several
    float leaves, for each leaf and each value a copy with only that leaf bad, so that a node that checks some
    fields but uses others unchecked is caught (a leaf is a float field, or a whole float array or sequence). With `integers`, then: all integers at their minimum, all at their
    maximum, and one copy per integer leaf at its maximum (even leaves) or minimum (odd leaves).
    """
    leaves = list(_leaves(template))
    floats = [leaf for leaf in leaves if leaf[1] in ("float", "floats")]
    ints = [leaf for leaf in leaves if leaf[1] in ("int", "ints")]
    out = []
    if floats:
        for bad in BAD_FLOATS:
            out.append(_with(template, floats, lambda _k, slot, bad=bad: _float_value(slot, bad)))
        if len(floats) > 1:
            for leaf in floats:
                for bad in BAD_FLOATS:
                    out.append(_with(template, [leaf], lambda _k, slot, bad=bad: _float_value(slot, bad)))
    if integers and ints:
        for which in ("min", "max"):
            out.append(_with(template, ints, lambda _k, slot, which=which: _int_value(slot, which)))
        if len(ints) > 1:
            for i, leaf in enumerate(ints):
                which = "max" if i % 2 == 0 else "min"
                out.append(_with(template, [leaf], lambda _k, slot, which=which: _int_value(slot, which)))
    return out


def non_finite_fields(msg) -> list[str]:
    """Dotted paths (`pose.pose.position.x`, `position[1]`) of every non-finite float in a message."""
    bad = []
    for path, kind, _slot in _leaves(msg):
        if kind not in ("float", "floats"):
            continue
        value = msg
        for step in path:
            value = value[step] if isinstance(step, int) else getattr(value, step)
        text = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path).lstrip(".")
        if kind == "float":
            if not math.isfinite(value):
                bad.append(f"{text}={value}")
        else:
            bad.extend(f"{text}[{i}]={v}" for i, v in enumerate(value) if not math.isfinite(v))
    return bad


# ----- talking to the node -----

def _as_input(item: InputLike) -> Input:
    if isinstance(item, Input):
        return item
    return Input(*item)


def _publish_bad(ros: RosTestContext, proc: NodeProcess, item: Input, count: int, batch: int,
                 timeout: float) -> int:
    template = item.template if item.template is not None else item.type()
    variants = bad_variants(template, item.integers)
    assert variants, f"{item.type.__name__} on {item.name} has no number field to make bad"
    batch = max(1, batch)
    # Whole batches only (the last one cycles on through the variants): see below.
    total = -(-max(count, len(variants)) // batch) * batch
    # A writer history exactly one batch deep: a batch fills it, and Fast DDS then asks the reader for its
    # acknowledgement at once; with room to spare it waits for its periodic heartbeat (3 s).
    pub = ros.publisher(item.type, item.name, reliable(depth=batch))
    try:
        ros.wait_until(lambda: pub.get_subscription_count() >= 1, timeout,
                       f"the node's subscription to {item.name}", proc=proc)
        for start in range(0, total, batch):
            for i in range(start, start + batch):
                pub.publish(variants[i % len(variants)])
            # A batch at a time, each acknowledged by the node's reader before the next: a longer burst would
            # overflow a keep-last reader history before the node takes the messages, and the node would
            # never see some of them.
            ros.wait_for_acked(pub, timeout, proc=proc)
        return total
    finally:
        ros.node.destroy_publisher(pub)


def _call_once(ros: RosTestContext, proc: NodeProcess, client, request, timeout: float, what: str,
               resend: bool):
    """One answer to `request`. With `resend`, the request is sent again every `RESEND_SECS` until one is
    answered: right after discovery Fast DDS may report the service ready before the server's reply path to
    this client is matched, and the first request's answer is then lost (the call would hang)."""
    deadline = time.monotonic() + timeout
    while True:
        future = client.call_async(request)
        wait = min(RESEND_SECS, deadline - time.monotonic()) if resend else deadline - time.monotonic()
        try:
            ros.wait_until(future.done, max(wait, 0.0), what, proc=proc)
            return future.result()
        except TimeoutError:
            client.remove_pending_request(future)
            if not resend or time.monotonic() >= deadline:
                raise


#: Seconds before an unanswered first request to a service is sent again (see `_call_once`).
RESEND_SECS = 2.0


def _call_bad(ros: RosTestContext, proc: NodeProcess, item: Input, timeout: float) -> tuple[list, list]:
    template = item.template if item.template is not None else item.type.Request()
    variants = bad_variants(template, item.integers)
    if not variants:
        variants = [copy.deepcopy(template)]  # no number to spoil (std_srvs/Trigger): it must still answer
    client = ros.node.create_client(item.type, item.name)
    responses = []
    try:
        ros.wait_until(client.service_is_ready, timeout, f"service {item.name}", proc=proc)
        for i, request in enumerate(variants):
            responses.append(_call_once(ros, proc, client, request, timeout,
                                        f"the answer of {item.name} to bad request {i}: {request}",
                                        resend=i == 0))
        return variants, responses
    finally:
        ros.node.destroy_client(client)


def check_bad_input(ros: RosTestContext, proc: NodeProcess, topics: Sequence[InputLike] = (),
                    services: Sequence[InputLike] = (),
                    outputs: Sequence[tuple[Any, str] | tuple[Any, str, QoSProfile]] = (),
                    per_topic: int = 10, batch: int = 5, fresh: int = 3,
                    timeout: float = 60.0) -> BadInputReport:
    """Flood a running node's inputs with non-finite and huge numbers; assert it survives with finite outputs.

    ros: the test's `RosTestContext` (the `ros` fixture). proc: the node's process (`ros.start(...)`); the
        checks fail as soon as it exits.
    topics: the input topics, as `Input`s or `(msg_type, topic)` / `(msg_type, topic, template)` tuples.
        Each gets `max(per_topic, number of variants)` messages from `bad_variants` (rounded up to whole
        batches), cycling through them, `batch` at a time: a batch is published back to back, then the node's reader must acknowledge it.
        Keep `batch` at most the node's subscription depth (DDS discovery does not tell it), or a keep-last
        reader drops some messages before the node takes them (harmless for the checks here, but a test
        that counts what the node dropped would count short).
    services: the services, likewise (`(srv_type, service)` ...); each is called once with every variant of
        its request and must answer within `timeout`. A request type with no number (std_srvs/Trigger) is
        called once with its template.
    outputs: `(msg_type, topic)` or `(msg_type, topic, qos)` (default QoS: reliable, volatile, depth 1000;
        give the publisher's durability for latched topics). Each must publish at least `fresh` messages
        after the flood, and no message received may hold a non-finite float.
    Returns a `BadInputReport` for further checks (e.g. that every answer says `success=False`).
    """
    report = BadInputReport()
    marks = {}
    for out in outputs:
        msg_type, topic = out[0], out[1]
        qos = out[2] if len(out) > 2 else reliable(depth=1000)
        report.received[topic] = ros.collect(msg_type, topic, qos)
    for item in map(_as_input, topics):
        report.published[item.name] = _publish_bad(ros, proc, item, per_topic, batch, timeout)
    for item in map(_as_input, services):
        report.requests[item.name], report.responses[item.name] = _call_bad(ros, proc, item, timeout)
    assert proc.alive(), f"{proc.name} died from bad input (exit {proc.popen.returncode})"

    for topic, received in report.received.items():
        marks[topic] = len(received)
    for topic, received in report.received.items():
        ros.wait_until(lambda r=received, m=marks[topic]: len(r) >= m + fresh, timeout,
                       f"{fresh} fresh messages on {topic} after the bad input", proc=proc)
    problems = []
    for topic, received in report.received.items():
        for i, msg in enumerate(list(received)):
            bad = non_finite_fields(msg)
            if bad:
                when = "before/while flooding" if i < marks[topic] else "after flooding"
                problems.append(f"{topic} message {i} ({when}): {', '.join(bad[:6])}")
    assert not problems, "non-finite output after bad input:\n" + "\n".join(problems[:20])
    assert proc.alive(), f"{proc.name} died after the bad input (exit {proc.popen.returncode})"
    return report


def wait_for_log(ros: RosTestContext, proc: NodeProcess, text: str, timeout: float = 30.0) -> str:
    """Until `text` appears in the node's log; returns the log."""
    return ros.wait_until(lambda: text in proc.log() and proc.log(), timeout, f"`{text}` in the log of {proc.name}",
                          proc=proc)


__all__ = ["BAD_FLOATS", "BadInputReport", "Input", "bad_variants", "check_bad_input", "non_finite_fields",
           "wait_for_log"]
