#!/usr/bin/env python3
"""An unmodified rclpy action server: /countdown (lockstep_interfaces/action/Countdown) counts down from
`start`, one feedback per step."""
import time

from rclpy.action import ActionServer
from rclpy.node import Node

from lockstep_interfaces.action import Countdown
from node_main import run


class Server(Node):
    def __init__(self):
        super().__init__("countdown_server")
        ActionServer(self, Countdown, "countdown", self.execute)

    def execute(self, goal_handle):
        done = 0
        for remaining in range(goal_handle.request.start, 0, -1):
            goal_handle.publish_feedback(Countdown.Feedback(remaining=remaining))
            time.sleep(goal_handle.request.step_period_secs)
            done += 1
        goal_handle.succeed()
        return Countdown.Result(steps_done=done)


def main():
    run(Server)


if __name__ == "__main__":
    main()
