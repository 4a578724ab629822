#!/usr/bin/env python3
"""An unmodified rclpy node that reads the wall clock: /raw -> /stamped, the value plus the wall time's
fraction of a second (a replay cannot reproduce it)."""
import time

from rclpy.node import Node
from std_msgs.msg import Float64
from node_main import run


class WallClock(Node):
    def __init__(self):
        super().__init__("wallclock")
        self.pub = self.create_publisher(Float64, "stamped", 10)
        self.create_subscription(Float64, "raw", self.on_raw, 10)

    def on_raw(self, msg):
        self.pub.publish(Float64(data=msg.data + time.time() % 1.0))


def main():
    run(WallClock)


if __name__ == "__main__":
    main()
