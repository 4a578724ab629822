"""`colcon test` runs a replay suite: an ament package calling lockstep_add_replay_test(SUITE ...) (the CMake
function package lockstep_suite exports) gets a CTest test that runs `lockstep test`, and `colcon
test-result` reads the suite's JUnit XML: one test case per (recording, variant), a passing suite's cases
pass, and a variant that changes m3's hold fails, as does `colcon test-result`."""

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from corpus import HOLD, REPLAY_LAUNCH, REPO_ROOT, shared_corpus
from lockstep_testing.harness import run_tool

PACKAGE = "replay_regression"
MODULES = "obstacle_fusion,motion_controller,mission_planner"

PACKAGE_XML = f"""<?xml version="1.0"?>
<package format="3">
  <name>{PACKAGE}</name>
  <version>0.0.1</version>
  <description>A replay regression suite run by colcon test.</description>
  <maintainer email="test@example.com">Lockstep tests</maintainer>
  <license>Apache-2.0</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <test_depend>lockstep_suite</test_depend>
  <export>
    <build_type>ament_cmake</build_type>
  </export>
</package>
"""

CMAKE_LISTS = f"""cmake_minimum_required(VERSION 3.16)
project({PACKAGE} NONE)
find_package(ament_cmake REQUIRED)
if(BUILD_TESTING)
  find_package(lockstep_suite REQUIRED)
  lockstep_add_replay_test(SUITE suites/regression.yaml TIMEOUT 900)
  lockstep_add_replay_test(SUITE suites/changed.yaml NAME hold_2 TIMEOUT 900 JOBS 2)
endif()
ament_package()
"""


def suite_yaml(recordings: list[str], variants: str) -> str:
    """A suite of the example pipeline started by launch/replay_system.launch.xml with the recorded hold."""
    listed = ", ".join(f'"{r}"' for r in recordings)
    return (f"recordings: [{listed}]\n"
            f"modules:\n"
            f"  launch: \"{REPLAY_LAUNCH}\"\n"
            f"  arguments: {{hold: \"{HOLD}\"}}\n"
            f"  variants: {variants}\n"
            f"expect: {{}}\n")


def junit_cases(result_file: Path) -> list[ET.Element]:
    """Every <testcase> of a JUnit XML file, whether under <testsuites> or a lone <testsuite>."""
    return list(ET.parse(result_file).getroot().iter("testcase"))


def failure_text(case: ET.Element) -> str | None:
    """The failure or error of a test case (message and text), or None if it passed."""
    for tag in ("failure", "error"):
        element = case.find(tag)
        if element is not None:
            return f"{element.get('message', '')}\n{element.text or ''}"
    return None


def label(case: ET.Element) -> str:
    """How a test case is named: its class name and name."""
    return f"{case.get('classname', '')} {case.get('name', '')}"


@pytest.mark.timeout(1200)
def test_colcon_test_runs_a_replay_suite_and_colcon_test_result_reports_its_cases(ros, tmp_path, tmp_path_factory):
    colcon = shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon is not installed (scripts/setup.sh installs it into .ros/venv)")
    (bag,) = shared_corpus(ros, tmp_path_factory, count=1)

    package = tmp_path / "ws" / PACKAGE
    (package / "suites").mkdir(parents=True)
    (package / "package.xml").write_text(PACKAGE_XML)
    (package / "CMakeLists.txt").write_text(CMAKE_LISTS)
    # The passing suite finds the recording by a glob; the changed one lists it.
    (package / "suites" / "regression.yaml").write_text(
        suite_yaml([str(bag.parent / "run_*")], "{as_recorded: {}}"))
    (package / "suites" / "changed.yaml").write_text(
        suite_yaml([str(bag)], '{as_recorded: {}, hold_2: {arguments: {hold: "2"}}}'))

    # find_program(lockstep) in the function takes the lockstep this suite tests.
    # COLCON_LOG_PATH: `colcon test-result` ignores --log-base and would log into the working directory.
    env = dict(ros.env, PATH=f"{Path(os.environ['LOCKSTEP_BIN']).parent}{os.pathsep}{os.environ['PATH']}",
               COLCON_LOG_PATH=str(tmp_path / "log"))
    base = ["--log-base", str(tmp_path / "log")]
    spaces = ["--build-base", str(tmp_path / "build"), "--install-base", str(tmp_path / "install")]
    # lockstep_suite and lockstep_ros (whose lockstep_cargo_build() lockstep_suite's CMakeLists.txt calls) are
    # built from this tree, so the function tested is the one in the source. Their cargo step is left out
    # (CARGO_EXECUTABLE=true): it would compile the whole workspace again into the build base, and neither
    # package installs a binary; the `lockstep` the test runs is the one the suite tests.
    build = run_tool([colcon, *base, "build", "--base-paths", str(package.parent),
                      str(REPO_ROOT / "packages" / "lockstep_ros"), str(REPO_ROOT / "packages" / "lockstep_suite"),
                      *spaces, "--event-handlers", "console_cohesion+",
                      "--cmake-args", f"-DCARGO_EXECUTABLE={shutil.which('true')}"],
                     env, timeout=600)
    assert build.returncode == 0, f"colcon build failed:\n{build.stdout}\n{build.stderr}"

    def colcon_test(*ctest_args: str):
        run = run_tool([colcon, *base, "test", "--base-paths", str(package.parent), "--packages-select", PACKAGE,
                        *spaces, "--event-handlers", "console_direct+", *ctest_args], env, timeout=900)
        assert run.returncode == 0, f"colcon test failed to run:\n{run.stdout}\n{run.stderr}"
        return run

    tested = colcon_test()
    results = tmp_path / "build" / PACKAGE / "test_results" / PACKAGE
    # The test names: the suite file's name (regression), or NAME (hold_2).
    regression_xml, hold_2_xml = results / "regression.xunit.xml", results / "hold_2.xunit.xml"
    assert regression_xml.is_file() and hold_2_xml.is_file(), (sorted(p.name for p in results.glob("*")),
                                                             tested.stdout)

    # The passing suite: one case (one recording, one variant), and it passed.
    assert len(junit_cases(regression_xml)) == 1, [label(c) for c in junit_cases(regression_xml)]
    case = junit_cases(regression_xml)[0]
    assert "run_1" in label(case) and "as_recorded" in label(case), label(case)
    assert failure_text(case) is None, (label(case), failure_text(case), tested.stdout)
    # The changed suite: the recorded variant passes, the one with m3's hold at 2 fails on m3's output.
    cases = {("hold_2" if "hold_2" in label(c) else "as_recorded"): c for c in junit_cases(hold_2_xml)}
    assert len(cases) == 2 == len(junit_cases(hold_2_xml)), [label(c) for c in junit_cases(hold_2_xml)]
    assert "as_recorded" in label(cases["as_recorded"]), label(cases["as_recorded"])
    assert failure_text(cases["as_recorded"]) is None, (label(cases["as_recorded"]),
                                                        failure_text(cases["as_recorded"]))
    failure = failure_text(cases["hold_2"])
    assert failure is not None and "/mission" in failure, (label(cases["hold_2"]), failure)
    # Each suite's output folder is the runner's: it holds the suite's own copy of the JUnit XML.
    for name in ("regression", "hold_2"):
        assert (tmp_path / "build" / PACKAGE / ".lockstep_test" / name / "junit.xml").is_file(), name

    # colcon test-result reads both files, counts each case once, and fails on the changed suite.
    report = run_tool([colcon, *base, "test-result", "--test-result-base", str(tmp_path / "build"), "--all",
                       "--verbose"], env, timeout=120)
    assert report.returncode == 1, f"{report.stdout}\n{report.stderr}"
    lines = report.stdout.splitlines()
    assert any(line.endswith("/regression.xunit.xml: 1 test, 0 errors, 0 failures, 0 skipped") for line in lines), (
        report.stdout)
    assert any(line.endswith("/hold_2.xunit.xml: 2 tests, 0 errors, 1 failure, 0 skipped") for line in lines), (
        report.stdout)
    # --verbose lists each failed case as "- <classname> <name>" with its message.
    failed = " ".join(filter(None, (cases["hold_2"].get("classname"), cases["hold_2"].get("name"))))
    assert any(line.startswith(f"- {failed}") for line in lines), report.stdout
    # The runner's own junit.xml in the output folder is not read as a second result file.
    counted = [line for line in lines if re.match(r"\S+\.xml: \d+ tests?, ", line)]
    assert counted and not any("/.lockstep_test/" in line for line in counted), report.stdout

    # A second run starts from an empty output folder again (the runner refuses a non-empty one).
    again = colcon_test("--ctest-args", "-R", "^regression$")
    assert "100% tests passed, 0 tests failed out of 1" in again.stdout, again.stdout
    assert failure_text(junit_cases(regression_xml)[0]) is None, again.stdout
