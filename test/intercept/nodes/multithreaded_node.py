#!/usr/bin/env python3
"""An unmodified rclpy node spun by a MultiThreadedExecutor with a reentrant callback group: /raw -> /echo.

SIGINT and SIGTERM only set a flag the spin loop looks at: rclpy's default KeyboardInterrupt can land in the
main thread while it holds one of the executor's locks, and the worker threads then wait on it forever.
"""
import signal
import threading

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import Float64


class Echo(Node):
    def __init__(self):
        super().__init__("echo")
        group = ReentrantCallbackGroup()
        self.pub = self.create_publisher(Float64, "echo", 10)
        self.create_subscription(Float64, "raw", self.pub.publish, 10, callback_group=group)
        self.create_subscription(Float64, "raw2", self.pub.publish, 10, callback_group=group)


def main():
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = Echo()
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    while not stop.is_set() and rclpy.ok():
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
