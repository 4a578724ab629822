#!/usr/bin/env python3
"""An unmodified rclpy node downstream of the example pipeline: /cmd_vel -> /cmd_vel_scaled, every velocity
scaled by the parameter `scale`."""
from geometry_msgs.msg import Twist
from rclpy.node import Node
from node_main import run


class Scale(Node):
    def __init__(self):
        super().__init__("scale")
        self.scale = self.declare_parameter("scale", 0.5).value
        self.pub = self.create_publisher(Twist, "cmd_vel_scaled", 10)
        self.create_subscription(Twist, "cmd_vel", self.on_cmd, 10)

    def on_cmd(self, msg):
        out = Twist()
        out.linear.x = msg.linear.x * self.scale
        out.angular.z = msg.angular.z * self.scale
        self.pub.publish(out)


def main():
    run(Scale)


if __name__ == "__main__":
    main()
