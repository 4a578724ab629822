#!/usr/bin/env python3
"""An unmodified rclpy node spun by a MultiThreadedExecutor with a reentrant callback group: /raw -> /echo."""
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Float64


class Echo(Node):
    def __init__(self):
        super().__init__("echo")
        group = ReentrantCallbackGroup()
        self.pub = self.create_publisher(Float64, "echo", 10)
        self.create_subscription(Float64, "raw", self.pub.publish, 10, callback_group=group)
        self.create_subscription(Float64, "raw2", self.pub.publish, 10, callback_group=group)


def main():
    rclpy.init()
    node = Echo()
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
