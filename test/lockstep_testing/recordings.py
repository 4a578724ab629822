"""Small recordings written directly (python `mcap`) for tests that need a bag of a given shape."""

from __future__ import annotations

from pathlib import Path

from mcap.writer import Writer


def topology_recording(path: Path) -> Path:
    """A recording holding only the example pipeline's module topology (no messages): the replay node looks
    for its modules and waits for them (its discovery time), which is all a test of its start needs."""
    with open(path, "wb") as f:
        writer = Writer(f)
        writer.start(profile="ros2", library="lockstep-test")
        writer.add_metadata("lockstep_topology", {
            "obstacle_fusion": "reads=/scan_front,/scan_rear;writes=/obstacles",
            "motion_controller": "reads=/mission,/obstacles,/odom;writes=/cmd_vel",
            "mission_planner": "reads=;writes=/mission"})
        writer.finish()
    return path
