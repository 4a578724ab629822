#!/usr/bin/env python3
"""An unmodified rclpy service client: every `period_s` it asks /set_switch (std_srvs/SetBool) to switch on and
off in turn, without waiting for the server, and publishes each answer's message on /answers."""
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import SetBool
from node_main import run


class Caller(Node):
    def __init__(self):
        super().__init__("caller")
        self.count = 0
        self.pub = self.create_publisher(String, "answers", 10)
        self.client = self.create_client(SetBool, "set_switch")
        self.create_timer(self.declare_parameter("period_s", 0.1).value, self.on_timer)

    def on_timer(self):
        self.count += 1
        future = self.client.call_async(SetBool.Request(data=self.count % 2 == 1))
        future.add_done_callback(self.on_answer)

    def on_answer(self, future):
        self.pub.publish(String(data=f"{future.result().message} ({self.count})"))


def main():
    run(Caller)


if __name__ == "__main__":
    main()
