#!/usr/bin/env python3
"""An unmodified rclpy service server: /set_switch (std_srvs/SetBool) answers with the state it was set to and
publishes it on /switched."""
from rclpy.node import Node
from std_msgs.msg import Bool
from std_srvs.srv import SetBool
from node_main import run


class Server(Node):
    def __init__(self):
        super().__init__("switch")
        self.pub = self.create_publisher(Bool, "switched", 10)
        self.create_service(SetBool, "set_switch", self.on_set)

    def on_set(self, request, response):
        self.pub.publish(Bool(data=request.data))
        response.success = True
        response.message = "on" if request.data else "off"
        return response


def main():
    run(Server)


if __name__ == "__main__":
    main()
