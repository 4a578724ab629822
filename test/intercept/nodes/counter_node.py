#!/usr/bin/env python3
"""An unmodified rclpy node downstream of an instrumented module: /obstacles (PoseArray) -> /obstacle_count."""
from geometry_msgs.msg import PoseArray
from rclpy.node import Node
from std_msgs.msg import Int32
from node_main import run


class Counter(Node):
    def __init__(self):
        super().__init__("obstacle_counter")
        self.pub = self.create_publisher(Int32, "obstacle_count", 10)
        self.create_subscription(PoseArray, "obstacles", lambda m: self.pub.publish(Int32(data=len(m.poses))), 10)


def main():
    run(Counter)


if __name__ == "__main__":
    main()
