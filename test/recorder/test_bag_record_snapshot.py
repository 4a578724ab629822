"""`lockstep bag record --snapshot-mode`: only the last `--max-cache-size` bytes of messages are kept in memory,
nothing is written until `~/snapshot` is called, and a snapshot writes exactly the last whole messages that
fit, in order, each later snapshot into a new file. Checked with a burst far larger than the cache."""

from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from std_msgs.msg import String
from std_srvs.srv import Trigger

from lockstep_interfaces.msg import RecorderStatus
from lockstep_testing.harness import reliable

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
WAIT_SECS = 120
PAYLOAD = 1000  # characters per message
CACHE = 50_000  # bytes kept: about 49 messages of PAYLOAD


def burst(ros, publisher, status, first, count, proc):
    for i in range(first, first + count):
        publisher.publish(String(data=f"{i:08d}" + "x" * (PAYLOAD - 8)))
    ros.wait_until(lambda: status and next((t.received for t in status[-1].topics if t.topic == "/burst"), 0)
                   >= first + count, WAIT_SECS, f"{first + count} messages received", proc)


def test_a_snapshot_writes_only_the_last_whole_messages_that_fit(ros, tmp_path):
    publisher = ros.publisher(String, "/burst", reliable(depth=5000))
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    bag = tmp_path / "snap"
    proc = ros.start("lockstep", "bag", "record", "/burst", "-o", str(bag), "--snapshot-mode",
                     "--max-cache-size", str(CACHE), name="bag_record")
    ros.wait_for_matched(publisher, timeout=WAIT_SECS)
    burst(ros, publisher, status, 0, 2000, proc)
    held = status[-1]
    assert held.total_messages == 0, "nothing is written before a snapshot"
    assert [t.dropped for t in held.topics] == [0], "the burst reached memory whole"
    assert 0 < held.queue_bytes <= CACHE and held.max_queue_bytes == CACHE, (held.queue_bytes, held.max_queue_bytes)

    first = ros.call(Trigger, "/lockstep_recorder/snapshot", Trigger.Request())
    assert first.success and "to file 0" in first.message, first.message
    burst(ros, publisher, status, 2000, 300, proc)
    second = ros.call(Trigger, "/lockstep_recorder/snapshot", Trigger.Request())
    assert second.success and "to file 1" in second.message, second.message
    empty = ros.call(Trigger, "/lockstep_recorder/snapshot", Trigger.Request())
    assert empty.success and "wrote 0 messages" in empty.message, empty.message
    assert proc.stop(timeout=60) == 0, proc.log()

    with Reader(bag) as reader:
        assert len(sorted(bag.glob("*.mcap"))) == 2, sorted(bag.iterdir())
        numbers = [int(TYPESTORE.deserialize_cdr(raw, conn.msgtype).data[:8]) for conn, _, raw in reader.messages()]
        texts = {len(TYPESTORE.deserialize_cdr(raw, conn.msgtype).data) for conn, _, raw in reader.messages()}
    assert texts == {PAYLOAD}, "no message torn"
    # Each CDR string message takes PAYLOAD + 9 bytes (length, text, terminator) + 4 (encapsulation).
    per_snapshot = CACHE // (PAYLOAD + 13)
    assert numbers == list(range(2000 - per_snapshot, 2000)) + list(range(2300 - per_snapshot, 2300)), numbers
