#!/usr/bin/env python3
"""An unmodified rclpy node, as users write them: /raw -> /filtered, scaled by the parameter `gain`."""
from rclpy.node import Node
from std_msgs.msg import Float64
from node_main import run


class Filter(Node):
    def __init__(self):
        super().__init__("filter")
        self.gain = self.declare_parameter("gain", 0.5).value
        self.pub = self.create_publisher(Float64, "filtered", 10)
        self.create_subscription(Float64, "raw", self.on_raw, 10)

    def on_raw(self, msg):
        self.pub.publish(Float64(data=msg.data * self.gain))


def main():
    run(Filter)


if __name__ == "__main__":
    main()
