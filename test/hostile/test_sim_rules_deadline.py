"""A rule file with a rule that never reaches a fixpoint (`runaway(N + 1) :- runaway(N).`) on the simulator:
each evaluation stops at `rules_max_seconds`, the node logs a warning naming the rule file and the limit (at
most once per 2 s for the same text), the step goes on without the rules (the vehicle holds still), and the
node keeps stepping and answering its services."""

import sys
import time
from pathlib import Path

from rcl_interfaces.srv import GetParameters
from std_srvs.srv import Trigger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))

from sim_support import NODE, Sim, copy_rules, sim_params, stamp_secs  # noqa: E402

LIMIT = "time limit of 0.5 s (rules_max_seconds)"


def test_a_rule_without_a_fixpoint_stops_each_step_at_rules_max_seconds_and_the_node_keeps_running(ros, tmp_path):
    rules = copy_rules(tmp_path)
    runaway = rules / "runaway.dl"
    # Only while driving (the behaviour asserts `state`): the scene still decodes at start.
    runaway.write_text("runaway(0) :- state(_).\nrunaway(N + 1) :- runaway(N).\n")
    params = sim_params(rules, rules_max_seconds=0.5)
    params["rule_files"] += f",{runaway}"
    sim = Sim(ros, params)
    started = time.monotonic()
    ros.wait_until(lambda: LIMIT in sim.proc.log(), 60, "the warning of the time limit", proc=sim.proc)
    line = next(line for line in sim.proc.log().splitlines() if LIMIT in line)
    assert str(runaway) in line and "holding still" in line, line

    # Still running: it answers its services, and simulated time goes on (a step every 0.5 s or so).
    got = sim.call(GetParameters, f"/{NODE}/get_parameters", GetParameters.Request(names=["rules_max_seconds"]))
    assert got.values[0].double_value == 0.5, got
    answer = sim.call(Trigger, f"/{NODE}/reload", Trigger.Request())
    assert answer.success, answer.message
    before = stamp_secs(sim.latest().header)
    ros.wait_until(lambda: stamp_secs(sim.latest().header) > before, 60, "the simulation going on",
                   proc=sim.proc)
    assert sim.state() != "arrived"

    # The same warning at most once per 2 s (plus the first).
    lines = [line for line in sim.proc.log().splitlines() if LIMIT in line]
    assert len(lines) <= (time.monotonic() - started) / 2 + 2, len(lines)
    assert sim.proc.alive()
