#!/usr/bin/env python3
"""An unmodified timer-driven rclpy node: every `period_s` it publishes /cmd, twice the latest /fused, stamped
with the node's clock (now())."""
from geometry_msgs.msg import Vector3Stamped
from rclpy.node import Node
from std_msgs.msg import Float64
from node_main import run


class Controller(Node):
    def __init__(self):
        super().__init__("controller")
        self.latest = None
        self.pub = self.create_publisher(Vector3Stamped, "cmd", 10)
        self.create_subscription(Float64, "fused", self.on_fused, 10)
        self.create_timer(self.declare_parameter("period_s", 0.1).value, self.on_timer)

    def on_fused(self, msg):
        self.latest = msg.data

    def on_timer(self):
        if self.latest is None:
            return
        out = Vector3Stamped()
        out.header.stamp = self.get_clock().now().to_msg()
        out.vector.x = 2.0 * self.latest
        self.pub.publish(out)


def main():
    run(Controller)


if __name__ == "__main__":
    main()
