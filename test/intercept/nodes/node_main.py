"""The `main` of these plain rclpy nodes: spin until Ctrl-C or `ros2 launch` stops the process, exit 0.

A stop can land while a callback runs: rclpy's signal handler shuts the context down first, and the callback's
next publish then fails with "context is invalid" (RCLError), or spin ends with ExternalShutdownException.
Either is the stop asked for, not a failure of the node; an error while the context is still up is raised."""
import rclpy
from rclpy.executors import ExternalShutdownException


def run(make_node) -> None:
    rclpy.init()
    node = make_node()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
    node.destroy_node()
    rclpy.try_shutdown()
