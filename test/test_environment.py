"""The suite's own environment: DDS discovery stays on this machine.

scripts/test.sh and the benchmark scripts source scripts/env-local.sh, which sets
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST: a test then neither hears nor disturbs nodes of another machine on the
same network, and two runs on different hosts cannot cross-talk even on the same ROS_DOMAIN_ID.
"""

import os


def test_dds_discovery_is_kept_on_this_machine():
    assert os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST", (
        "run the suite through scripts/test.sh, or `source scripts/env-local.sh` first: "
        f"ROS_AUTOMATIC_DISCOVERY_RANGE is {os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE')!r}, not LOCALHOST")
