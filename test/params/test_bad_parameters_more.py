"""The task manager, the simulated actuators, the recorder, the live view and the bag player check their
parameters against their declared ranges (lockstep_ros::ParamRules), like the simulator and the calibrator:

- a bad value given at start stops the node with an error naming the parameter, the value and the range;
- a bad `~/set_parameters` answers `successful: false` with that reason, and the value in force stays;
- these nodes read their parameters at start only, so a good run-time set is refused too, saying to restart.
"""

import math

import pytest
from rcl_interfaces.srv import GetParameters

from lockstep_testing.harness import REPO_ROOT
from test_bad_parameters import assert_refused, get_one, set_one

TALKER_BAG = REPO_ROOT / "test/data/rosbag2/mcap/talker"


def start_task_manager(ros, tmp_path):
    return ros.start("lockstep_task_manager",
                     params={"config_file": str(REPO_ROOT / "config/tasks/warehouse.yaml")})


def start_actuator(ros, tmp_path):
    return ros.start("lockstep_actuator", name="lift", params={"kind": "lift", "duration_s": 0.5},
                     remaps={"__node": "lift"})


def start_recorder(ros, tmp_path):
    return ros.start("lockstep_recorder", params={"output": str(tmp_path / "bag"), "topics": "/none",
                                                  "all_topics": False})


def start_view(ros, tmp_path):
    # Port 0: any free port, so parallel tests do not collide.
    return ros.start("lockstep_view", params={"port": 0, "address": "127.0.0.1"})


def start_bag_player(ros, tmp_path):
    return ros.start("lockstep_bag_player", params={"bag": str(TALKER_BAG), "start_paused": True})


# node name, how to start it, [(parameter, bad value, the range the reason must name)], a good run-time set.
NODES = {
    "task_manager": ("lockstep_task_manager", start_task_manager, [
        ("step_period_s", math.nan, "must be finite and in [0.001, 60] s"),
        ("step_period_s", 1e-300, "must be finite and in [0.001, 60] s"),
        ("server_wait_s", 1e308, "must be finite and in [0, 3600] s"),
        ("keep_finished", -1, "must be an integer in [0, 1000000] tasks"),
        ("config_file", "", "must not be empty"),
    ], ("step_period_s", 0.02)),
    "actuator": ("lift", start_actuator, [
        ("duration_s", math.nan, "must be finite and in [0, 3600] s"),
        ("accept_delay_s", -1.0, "must be finite and in [0, 3600] s"),
        ("control_rate_hz", 0.0, "must be finite and in (0, 1000] Hz"),
        ("pose_timeout_s", math.inf, "must be finite and in (0, 3600] s"),
        ("kind", "forklift", "must be one of `navigation`, `localization`, `lift`"),
    ], ("duration_s", 2.0)),
    "recorder": ("lockstep_recorder", start_recorder, [
        ("discovery_period_secs", math.nan, "must be finite and in [0.01, 3600] s"),
        ("status_period_secs", 1e308, "must be finite and in [0.01, 3600] s"),
        ("max_bag_duration_secs", -1.0, "must be finite and in [0, 1000000000] s"),
        ("max_queue_bytes", 0, "must be an integer in [1, 9223372036854775807] bytes"),
        ("compression", "lz4", "must be one of `none`, `zstd`"),
    ], ("compression", "zstd")),
    "view": ("lockstep_view", start_view, [
        ("discovery_period_secs", math.nan, "must be finite and in [0.01, 3600] s"),
        ("discovery_period_secs", -math.inf, "must be finite and in [0.01, 3600] s"),
        ("queue", 0, "must be an integer in [1, 1000000] messages"),
        ("port", 70000, "must be an integer in [0, 65535]"),
        ("address", "", "must not be empty"),
    ], ("queue", 10)),
    "bag_player": ("lockstep_bag_player", start_bag_player, [
        ("rate", math.nan, "must be finite and in [0.001, 1000]"),
        ("clock", -1.0, "must be finite and in [0, 10000] Hz"),
        ("delay", 1e300, "must be finite and in [0, 1000000000] s"),
        ("read_ahead_queue_size", 0, "must be an integer in [1, 10000000] messages"),
    ], ("rate", 2.0)),
}


@pytest.mark.parametrize("which", list(NODES))
def test_bad_run_time_parameters_are_refused_with_the_range_and_the_value_stays(ros, tmp_path, which):
    node, start, bad_sets, (good_name, good_value) = NODES[which]
    proc = start(ros, tmp_path)
    # The parameter services answer once the node is set up (generous: the machine may be loaded).
    ros.call(GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=[good_name]), timeout=60)
    for name, bad, reason in bad_sets:
        assert_refused(ros, node, proc, name, bad, reason)
    # Every parameter is read at start: a good value is refused too, saying so, rather than taken and ignored.
    before = get_one(ros, node, good_name)
    result = set_one(ros, node, good_name, good_value, proc)
    assert not result.successful and "read at start only; restart the node" in result.reason, result
    assert get_one(ros, node, good_name) == before
    assert "refused, the value in force stays" in proc.log(), proc.log()
    assert proc.alive() and proc.stop() == 0, proc.log()


# (binary, its parameters, the reason the start must end with)
BAD_STARTS = {
    "actuator": ("lockstep_actuator", {"kind": "lift", "duration_s": math.nan},
                 "parameter 'duration_s' = NaN: must be finite and in [0, 3600] s"),
    "actuator-kind": ("lockstep_actuator", {"kind": "forklift"},
                      "parameter 'kind' = \"forklift\": must be one of `navigation`"),
    "recorder": ("lockstep_recorder", {"status_period_secs": 0.0},
                 "parameter 'status_period_secs' = 0: must be finite and in [0.01, 3600] s"),
    "view": ("lockstep_view", {"queue": -5}, "parameter 'queue' = -5: must be an integer in [1, 1000000] messages"),
    "bag_player": ("lockstep_bag_player", {"bag": str(TALKER_BAG), "clock": 1e-300},
                   "parameter 'clock' = 1e-300: must be 0 (no /clock) or in [0.001, 10000] Hz"),
}


@pytest.mark.parametrize("which", list(BAD_STARTS))
def test_a_bad_start_value_stops_the_node_naming_the_parameter_and_the_range(ros, tmp_path, which):
    binary, params, reason = BAD_STARTS[which]
    if binary == "lockstep_recorder":
        params = {"output": str(tmp_path / "bag"), **params}
    proc = ros.start(binary, params=params)
    ros.wait_until(lambda: not proc.alive(), 30, "the node to stop")
    code = proc.stop()
    assert code not in (0, 101), (code, proc.log())  # an error, not a panic
    assert reason in proc.log() and "panicked" not in proc.log(), proc.log()
