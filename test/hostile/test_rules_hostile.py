"""Hostile rule text on the simulator's `/sim_facts` topic: a message nested 2,000 parentheses deep, or a long
line of garbage, is dropped with a one-line reason (counted and logged at most once per period), and the
simulator keeps running: it goes on publishing, takes a good message afterwards and answers its services."""

import sys
from pathlib import Path

from std_msgs.msg import String
from std_srvs.srv import Trigger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))

from sim_support import NODE, Sim, copy_rules, sim_params, stamp_secs  # noqa: E402


def test_deeply_nested_and_long_fact_messages_are_dropped_and_the_simulator_keeps_running(ros, tmp_path):
    sim = Sim(ros, sim_params(copy_rules(tmp_path), time_scale=1.0))
    facts = ros.publisher(String, "/sim_facts")
    ros.wait_until(lambda: facts.get_subscription_count() >= 1, 30, "the node's sim_facts subscription",
                   proc=sim.proc)

    facts.publish(String(data="load_kg(" + "(" * 2000 + "120.0" + ")" * 2000 + ")."))
    ros.wait_until(lambda: "nested deeper than 256 levels" in sim.proc.log(), 60, "the depth refusal",
                   proc=sim.proc)
    refusal = next(line for line in sim.proc.log().splitlines() if "nested deeper than 256 levels" in line)
    assert "sim_facts:1:" in refusal, refusal

    # A long line of unclosed atoms: many errors, one log line that says how many were left out.
    facts.publish(String(data="p(" * 300_000))
    ros.wait_until(lambda: "sim_facts: 2" in sim.proc.log(), 60, "the count of two dropped messages",
                   proc=sim.proc)

    # Still running: the simulation goes on, a good message is taken, a service answers.
    before = stamp_secs(sim.latest().header)
    ros.wait_until(lambda: stamp_secs(sim.latest().header) > before + 0.5, 60, "the simulation going on",
                   proc=sim.proc)
    facts.publish(String(data="wet_floor."))
    ros.wait_until(lambda: "sim_facts: 1 fact(s) in force" in sim.proc.log(), 60, "the good facts",
                   proc=sim.proc)
    answer = sim.call(Trigger, f"/{NODE}/reload", Trigger.Request())
    assert answer.success, answer.message
    assert sim.proc.alive()


def test_a_program_without_a_fixpoint_stops_at_its_time_limit_naming_the_file(tmp_path):
    """`n(X + 1) :- n(X).` adds one row per round: the tuple limit would take hours to reach. `--max-seconds`
    (60 s by default) stops it with one line naming the rule file."""
    import os
    import subprocess
    rules = tmp_path / "forever.dl"
    rules.write_text("n(0).\nn(X + 1) :- n(X).\n")
    run = subprocess.run([os.environ["LOCKSTEP_BIN"], "rules", "eval", str(rules), "--max-seconds", "1"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, RUST_BACKTRACE="0"))
    assert run.returncode == 1, run
    assert str(rules) in run.stderr and "without reaching a fixpoint" in run.stderr, run.stderr
    assert len([line for line in run.stderr.splitlines() if line.strip()]) <= 2, run.stderr
