"""Dependency headers and lock-step replay for rclpy nodes: the Python counterpart of the Rust library
`lockstep_trace_ros`, producing the same headers, digests and step answers byte for byte.

Instrumenting an existing node changes its publisher and subscription constructors and marks its compute
callback, nothing else::

    from lockstep_trace import TracedPublisher, TracedSubscription, compute

    class MotionController(Node):
        def __init__(self):
            super().__init__("motion_controller")
            self.pub = TracedPublisher(self, Twist, "cmd_vel", 10)             # was self.create_publisher(...)
            TracedSubscription(self, Odometry, "odom", self.on_odom, 10)        # was self.create_subscription(...)
            self.create_timer(0.1, self.on_timer)

        @compute                                                               # marks the compute callback
        def on_timer(self):
            self.pub.publish(self.command())

Each output is published with its header on `<topic>/lockstep_header`, naming the input messages the
computation used; the module's wiring is latched on `/lockstep/topology/<module>`. With the parameter
`lockstep_step_mode:=true` (declared by the library) the node computes only when `lockstep replay` grants a step
on `~/lockstep/step`, from exactly the inputs the step names.

`init_for_spin()` and `spin(node)` replace `rclpy.init()` and `rclpy.spin(node)` so that Ctrl-C stops the node
between two callbacks, never between an output and its header.
"""

from lockstep_trace._cdr import UnknownType, canonical_cdr, canonicalize, digest, message_digest, type_name
from lockstep_trace._matcher import HeaderMatcher
from lockstep_trace._model import (EXTERNAL_MODULE, Tracer, as_input, as_source, component, copy_header,
                                   external_header, module_name, now_ns, ns_to_time, time_to_ns)
from lockstep_trace._node import (DEFAULT_HEADER_TIMEOUT_SEC, HEADER_QOS, HEADER_TOPIC_SUFFIX, LATCHED_QOS,
                                  STEP_MODE_PARAMETER, TOPOLOGY_TOPIC_PREFIX, Lockstep, TracedPublisher,
                                  TracedSubscription, compute, header_topic, lockstep, topology_topic)
from lockstep_trace._spin import init_for_spin, spin
from lockstep_trace._step import DEFAULT_STEP_TIMEOUT_SEC, STEP_SERVICE, NotGranted, step_service_name

__all__ = [
    "DEFAULT_HEADER_TIMEOUT_SEC", "DEFAULT_STEP_TIMEOUT_SEC", "EXTERNAL_MODULE", "HEADER_QOS", "HEADER_TOPIC_SUFFIX",
    "LATCHED_QOS", "STEP_MODE_PARAMETER", "STEP_SERVICE", "TOPOLOGY_TOPIC_PREFIX", "HeaderMatcher", "Lockstep",
    "NotGranted", "Tracer", "TracedPublisher", "TracedSubscription", "UnknownType", "as_input", "as_source",
    "canonical_cdr", "canonicalize", "component", "compute", "copy_header", "digest", "external_header",
    "header_topic", "init_for_spin", "lockstep", "message_digest", "module_name", "now_ns", "ns_to_time", "spin",
    "step_service_name", "time_to_ns", "topology_topic", "type_name",
]
