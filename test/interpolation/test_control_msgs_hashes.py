"""The control_msgs interfaces the player's trajectory-controller mode speaks are the upstream ones: the type
hashes (RIHS01) of the package on this machine (msg/control_msgs when the machine had none) equal those of
ros-controls/control_msgs 5.x (ROS 2 Jazzy), computed with rosidl from the upstream definitions. A field renamed,
retyped, added or moved changes the hash, and a client built against the real package would no longer match
(with rmw_zenoh it would not even communicate)."""

from __future__ import annotations

import json
from pathlib import Path

from ament_index_python.packages import get_package_share_directory

UPSTREAM = {
    "action/FollowJointTrajectory": {
        "control_msgs/action/FollowJointTrajectory":
            "RIHS01_738ebcb7a2d7cfa42f9f1001cc99ce3a4383d1cfe508015d9be8485e4b1c66f6",
        "control_msgs/action/FollowJointTrajectory_Goal":
            "RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205",
        "control_msgs/action/FollowJointTrajectory_Result":
            "RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220",
        "control_msgs/action/FollowJointTrajectory_Feedback":
            "RIHS01_3fd0aaecf71725121ae1ff7f01098a5e0da581e672be18a6b2c286cb43d96b49",
        "control_msgs/action/FollowJointTrajectory_FeedbackMessage":
            "RIHS01_80398fcb9674a79081a9906e2ccf0c804dd7cb15e22e362e606ee87186beab71",
        "control_msgs/action/FollowJointTrajectory_SendGoal":
            "RIHS01_b13789dddc325a7a962825c45e28c77d37237ec129dd0c34dc5994562938c57f",
        "control_msgs/action/FollowJointTrajectory_GetResult":
            "RIHS01_e3ceb38e3e1867c8dc0f46014df26e90eb93422f27e9e97f936e07f94be4bc8b",
    },
    "msg/JointTolerance": {
        "control_msgs/msg/JointTolerance": "RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648",
    },
    "msg/JointComponentTolerance": {
        "control_msgs/msg/JointComponentTolerance":
            "RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4",
    },
    "msg/JointTrajectoryControllerState": {
        "control_msgs/msg/JointTrajectoryControllerState":
            "RIHS01_51d8dd89cc624cbe9daaeeb4d80d6de9b86168ffdc3be41fefc0953e3c26e480",
    },
    "msg/SpeedScalingFactor": {
        "control_msgs/msg/SpeedScalingFactor": "RIHS01_0c240f349f2b74e33e8741f83e0f196ddeb6585923663876ed3c1f51f0566037",
    },
}


def test_control_msgs_type_hashes_are_the_upstream_jazzy_ones():
    share = Path(get_package_share_directory("control_msgs"))
    for interface, expected in UPSTREAM.items():
        description = json.loads((share / f"{interface}.json").read_text())
        hashes = {h["type_name"]: h["hash_string"] for h in description["type_hashes"]}
        for type_name, hash_string in expected.items():
            assert hashes.get(type_name) == hash_string, (type_name, hashes.get(type_name))


def test_the_generated_python_types_have_the_upstream_fields():
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import SpeedScalingFactor

    result = FollowJointTrajectory.Result
    assert (result.SUCCESSFUL, result.INVALID_GOAL, result.INVALID_JOINTS, result.OLD_HEADER_TIMESTAMP,
            result.PATH_TOLERANCE_VIOLATED, result.GOAL_TOLERANCE_VIOLATED) == (0, -1, -2, -3, -4, -5)
    assert list(FollowJointTrajectory.Feedback.get_fields_and_field_types()) == [
        "header", "joint_names", "desired", "actual", "error", "multi_dof_joint_names", "multi_dof_desired",
        "multi_dof_actual", "multi_dof_error"]
    assert SpeedScalingFactor.get_fields_and_field_types() == {"factor": "double"}
