"""`lockstep bag record --use-sim-time`: messages are stamped with the ROS clock (`/clock`), as rosbag2's
recorder does under `use_sim_time`, so a bag of a simulation carries the simulation's times."""

import time

from builtin_interfaces.msg import Time
from rosbags.rosbag2 import Reader
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from lockstep_interfaces.msg import RecorderStatus
from lockstep_testing.harness import reliable

WAIT_SECS = 120
SIM_NS = 1000 * 10**9 + 250_000_000


def test_messages_are_stamped_with_the_simulation_clock(ros, tmp_path):
    clock = ros.publisher(Clock, "/clock", reliable())
    ticking = ros.node.create_timer(0.02, lambda: clock.publish(Clock(clock=Time(sec=1000, nanosec=250_000_000))))
    chatter = ros.publisher(String, "/chatter", reliable())
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    bag = tmp_path / "sim"
    proc = ros.start("lockstep", "bag", "record", "/chatter", "-o", str(bag), "--use-sim-time", name="bag_record")
    ros.wait_for_matched(chatter, timeout=WAIT_SECS)

    def recorded_enough():
        chatter.publish(String(data="tick"))
        time.sleep(0.05)  # pacing the publisher, not waiting for a result
        return status and status[-1].total_messages >= 30

    ros.wait_until(recorded_enough, WAIT_SECS, "30 messages recorded", proc)
    ros.node.destroy_timer(ticking)
    assert proc.stop(timeout=60) == 0, proc.log()
    with Reader(bag) as reader:
        stamps = [t for _, t, _ in reader.messages()]
    # Before the recorder's first /clock message its ROS clock reads 0; from then on the simulation's time.
    assert set(stamps) <= {0, SIM_NS}, sorted(set(stamps))[:5]
    assert stamps[-10:] == [SIM_NS] * 10, stamps
