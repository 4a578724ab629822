"""Small recordings written directly (python `mcap`) for tests that need a bag of a given shape."""

from __future__ import annotations

from pathlib import Path

from mcap.reader import make_reader
from mcap.writer import Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore


def topology_recording(path: Path) -> Path:
    """A recording holding only the example pipeline's module topology (no messages): the replay node looks
    for its modules and waits for them (its discovery time), which is all a test of its start needs."""
    with open(path, "wb") as f:
        writer = Writer(f)
        writer.start(profile="ros2", library="lockstep-test")
        writer.add_metadata("lockstep_topology", {
            "obstacle_fusion": "reads=/scan_front,/scan_rear;writes=/obstacles",
            "motion_controller": "reads=/mission,/obstacles,/odom;writes=/cmd_vel",
            "mission_planner": "reads=;writes=/mission"})
        writer.finish()
    return path


def copy_mcap(bag: Path, dst: Path, keep=lambda topic, log_time, data: True, change=lambda topic, data: data,
              metadata=lambda name, data: data) -> Path:
    """A one-file copy of `bag` (python `mcap`, independent of our bag library) with the messages `keep`
    accepts, their data passed through `change`, and every metadata record passed through `metadata`."""
    (src,) = sorted(Path(bag).glob("*.mcap"))
    with open(src, "rb") as f, open(dst, "wb") as g:
        reader = make_reader(f)
        summary = reader.get_summary()
        writer = Writer(g)
        writer.start(profile="ros2", library="lockstep-test")
        schemas = {sid: writer.register_schema(s.name, s.encoding, s.data) for sid, s in summary.schemas.items()}
        channels = {cid: writer.register_channel(c.topic, c.message_encoding, schemas[c.schema_id], c.metadata)
                    for cid, c in summary.channels.items()}
        for _, channel, message in reader.iter_messages(log_time_order=True):
            if keep(channel.topic, message.log_time, message.data):
                writer.add_message(channels[channel.id], message.log_time, change(channel.topic, message.data),
                                   message.publish_time)
        f.seek(0)
        for record in make_reader(f).iter_metadata():
            writer.add_metadata(record.name, metadata(record.name, record.metadata))
        writer.finish()
    return dst


def typestore_from_bag(reader):
    """A typestore knowing every connection's type from the definition stored in the bag."""
    store = get_typestore(Stores.ROS2_JAZZY)
    for conn in reader.connections:
        if conn.msgtype not in store.types and conn.msgdef.data:
            parsed = get_types_from_msg(conn.msgdef.data, conn.msgtype)
            store.register({name: fields for name, fields in parsed.items() if name not in store.types})
    return store


def decode(store, raw, msgtype):
    """rosbags files the types of a parsed `pkg/srv/Name` or `pkg/action/Name` under `pkg/srv/msg/Name`."""
    if msgtype not in store.types:
        msgtype = msgtype.replace("/srv/", "/srv/msg/").replace("/action/", "/action/msg/")
    return store.deserialize_cdr(raw, msgtype)
