"""The example pipeline's motion controller (m2, node `motion_controller`) as an rclpy node instrumented with
`lockstep_trace`: the same logic, parameters, topics and outputs as the Rust `lockstep_module_m2`, so either
can stand in for the other in a recording or a lock-step replay."""
