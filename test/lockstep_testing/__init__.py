"""Black-box test harness for Lockstep nodes: processes, rclpy helpers."""
