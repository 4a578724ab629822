"""Reading what unmodified nodes recorded under the rcl interceptor: a bag's data, dependency headers,
topologies and event logs, and payload digests computed independently (rosbags' CDR, zero padding)."""

import collections
import hashlib
from pathlib import Path

from mcap.reader import make_reader
from rclpy.serialization import deserialize_message
from rosbags.typesys import Stores, get_typestore

from lockstep_interfaces.msg import DependencyHeader, ModuleTopology, NodeEvents
from lockstep_testing.recordings import copy_mcap

NODES = Path(__file__).parent / "nodes"
TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def canonical(raw: bytes, typename: str) -> bytes:
    """The canonical CDR of serialized bytes: decoded and encoded again by rosbags (zero padding)."""
    return bytes(TYPESTORE.serialize_cdr(TYPESTORE.deserialize_cdr(raw, typename), typename))


def digest_of(raw: bytes, typename: str) -> int:
    """The payload digest Lockstep computes: first 8 bytes of SHA-256 of the canonical CDR, little-endian."""
    return int.from_bytes(hashlib.sha256(canonical(raw, typename)).digest()[:8], "little")


class Recording:
    """Everything a bag holds, per topic, in log order: data as (log time, raw, typename), headers, topologies
    and event batches decoded by rclpy."""

    def __init__(self, bag: Path):
        self.data = collections.defaultdict(list)
        self.headers = collections.defaultdict(list)
        self.topologies = collections.defaultdict(list)
        self.events = collections.defaultdict(list)
        for path in sorted(Path(bag).glob("*.mcap")):
            with open(path, "rb") as f:
                for schema, channel, message in make_reader(f).iter_messages(log_time_order=True):
                    self._add(schema.name, channel.topic, message)

    def _add(self, typename: str, topic: str, message) -> None:
        if typename == "lockstep_interfaces/msg/DependencyHeader":
            self.headers[topic.removesuffix("/lockstep_header")].append(
                deserialize_message(message.data, DependencyHeader))
        elif typename == "lockstep_interfaces/msg/ModuleTopology":
            self.topologies[topic].append(deserialize_message(message.data, ModuleTopology))
        elif typename == "lockstep_interfaces/msg/NodeEvents":
            self.events[topic.removeprefix("/lockstep/events/")].append(
                deserialize_message(message.data, NodeEvents))
        else:
            self.data[topic].append((message.log_time, bytes(message.data), typename))

    def by_digest(self, topic: str) -> dict:
        """digest -> decoded message, for a data topic."""
        return {digest_of(raw, t): TYPESTORE.deserialize_cdr(raw, t) for _, raw, t in self.data[topic]}

    def header_by_digest(self, topic: str) -> dict:
        return {h.payload_digest: h for h in self.headers[topic]}

    def node_events(self, node: str) -> list:
        """The node's events in order, checked to come without a gap."""
        batches = self.events[node]
        events = []
        for before, after in zip(batches, batches[1:]):
            assert after.first_index == before.first_index + len(before.events), (node, before.first_index)
        for batch in batches:
            events.extend(batch.events)
        return events


def cut(bag: Path, dst: Path, keep) -> Path:
    """A one-file copy of `bag` with the messages `keep(log_time)` accepts and every metadata record: a
    recording that started later."""
    return copy_mcap(bag, dst, keep=lambda topic, log_time, data: keep(log_time))


def topic_times(bag: Path) -> list:
    """(log time, topic) of every message, in order."""
    found = []
    for path in sorted(Path(bag).glob("*.mcap")):
        with open(path, "rb") as f:
            found.extend((m.log_time, c.topic) for _, c, m in make_reader(f).iter_messages(log_time_order=True))
    return sorted(found)
