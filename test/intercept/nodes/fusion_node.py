#!/usr/bin/env python3
"""An unmodified rclpy node that caches the latest of one input: /fused = /filtered + the latest /odom."""
from rclpy.node import Node
from std_msgs.msg import Float64
from node_main import run


class Fusion(Node):
    def __init__(self):
        super().__init__("fusion")
        self.odom = 0.0
        self.pub = self.create_publisher(Float64, "fused", 10)
        self.create_subscription(Float64, "odom", self.on_odom, 10)
        self.create_subscription(Float64, "filtered", self.on_filtered, 10)

    def on_odom(self, msg):
        self.odom = msg.data

    def on_filtered(self, msg):
        self.pub.publish(Float64(data=msg.data + self.odom))


def main():
    run(Fusion)


if __name__ == "__main__":
    main()
