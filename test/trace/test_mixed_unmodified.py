"""A mixed system in one lock-step replay: the Rust example modules in step mode, and downstream of them an
unmodified rclpy node (`scale`) recorded and replayed through the rcl interceptor."""

import sys
from pathlib import Path

from test_lockstep_replay import replay, start_step_modules, stop
from test_pipeline_recording import record_pipeline

NODES = Path(__file__).resolve().parents[1] / "intercept" / "nodes"


def test_step_modules_and_an_unmodified_node_replay_together(ros, tmp_path):
    bag = tmp_path / "mixed"
    scale = ros.start("lockstep", "trace", "--", sys.executable, str(NODES / "scale_node.py"), name="scale")
    ros.wait_for_subscriber("/cmd_vel", timeout=60)
    record_pipeline(ros, bag, ticks=60)
    assert scale.stop(timeout=60) == 0, scale.log()

    modules = start_step_modules(ros)
    replayed = ros.start("lockstep", "trace", "--replay", "--", sys.executable, str(NODES / "scale_node.py"),
                         name="scale_replayed")
    _, report = replay(ros, bag, tmp_path / "out", "--discovery-ms", "60000")
    assert sorted(report["channels"]) == ["/cmd_vel", "/cmd_vel_scaled", "/mission", "/obstacles"], report
    for name, c in report["channels"].items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)
    assert report["modules_not_live"] == [], report["modules_not_live"]
    stop(modules)
    assert replayed.stop(timeout=60) == 0, replayed.log()
