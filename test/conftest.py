"""Shared pytest fixtures for the black-box suite (see lockstep_testing/harness.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from lockstep_testing.harness import RosTestContext, allocate_domain_id  # noqa: E402


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Remember each phase's outcome on the test item so fixtures know, at teardown, whether the test failed.
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def ros(request, tmp_path):
    """An rclpy node on a ROS_DOMAIN_ID of this test's own, plus node processes started through it.

    At teardown every started process is stopped (SIGINT, then SIGKILL) and, if the test failed, each
    process's log is printed.
    """
    context = RosTestContext(domain_id=allocate_domain_id(), log_dir=tmp_path)
    try:
        yield context
    finally:
        rep = getattr(request.node, "rep_call", None)
        failed = rep is None or rep.failed
        context.close(print_logs=failed)
