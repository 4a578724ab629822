"""Black-box tests of lockstep_sim_node (packages/lockstep_sim): the rule-driven vehicle simulator.

The node steps a fixed simulated time step and stamps everything with simulated time, so two runs with the
same scene, rules and seed produce the same ground-truth trace at the same stamps whatever the wall-clock
jitter; `time_scale` only decides how fast that happens.
"""

import math
import shutil

from geometry_msgs.msg import PoseWithCovarianceStamped, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from lockstep_interfaces.srv import SetDestination
from lockstep_testing.harness import reliable
from sim_support import (DEST, NODE, SCENE, START, Sim, cell_of, copy_rules, drive, sim_params, stamp_key,
                         stamp_secs, unwrap, wait_still, write_atomically, yaw_of)


def test_reaches_destination_autonomously(ros, tmp_path):
    rules = copy_rules(tmp_path)
    odom = ros.collect(Odometry, "/odom", reliable(depth=1000))
    slam = ros.collect(PoseWithCovarianceStamped, "/slam_pose", reliable(depth=1000))
    joints = ros.collect(JointState, "/joint_states", reliable(depth=1000))
    grid = ros.collect(MarkerArray, "/markers/grid", reliable(depth=1, latched=True))
    # Real time until the collection has matched (discovery on a loaded machine once took over 2 s, at 10x
    # the whole run), then hurry.
    sim = Sim(ros, sim_params(rules, time_scale=1.0))
    assert stamp_secs(sim.truth[0].header) < 4.0, "the ground truth matched too late to see the route"
    sim.set_param_double("time_scale", 10.0)
    sim.wait_arrived()

    last = sim.latest()
    assert cell_of(last.pose.position.x, last.pose.position.y) == DEST, last.pose.position
    names = sim.state_names()
    # It started exploring, had to stop at the rack and turn around it.
    assert names[0] == "explore"
    assert "obstacle_ahead" in names and ("turn_left" in names or "turn_right" in names), names
    assert names[-1] == "arrived"
    # The path left the start row: going straight east is blocked by the rack in column 8.
    rows_visited = {cell_of(m.pose.position.x, m.pose.position.y)[1] for m in sim.truth}
    assert len(rows_visited) >= 4, rows_visited
    # No trace sample ever lies inside an obstacle cell.
    obstacles = set()
    lines = [l for l in SCENE.read_text().splitlines() if l.strip() and not l.startswith("#")][1:]
    for r, line in enumerate(lines):
        for c, code in enumerate(line.split()):
            if code == "0":
                obstacles.add((c, r))
    assert not [m for m in sim.truth if cell_of(m.pose.position.x, m.pose.position.y) in obstacles]

    # The other outputs: frames as configured, SLAM close to but not equal to the truth, wheels turning.
    assert odom and odom[-1].header.frame_id == "odom" and odom[-1].child_frame_id == "base_link"
    assert slam and slam[-1].header.frame_id == "map"
    truth_by_stamp = sim.trace()
    errors = [math.dist((s.pose.pose.position.x, s.pose.pose.position.y), truth_by_stamp[stamp_key(s.header)])
              for s in slam if stamp_key(s.header) in truth_by_stamp]
    assert len(errors) >= 5
    assert 0.0 < max(errors) < 0.5, errors
    assert joints and list(joints[-1].name) == ["left_wheel_joint", "right_wheel_joint"]
    assert joints[-1].position[0] > 10.0 and joints[-1].position[1] > 10.0  # many radians of wheel travel
    ros.wait_for_messages(grid, 1, what="latched grid markers")
    cubes = {m.ns: len(m.points) for m in grid[-1].markers}
    assert cubes["obstacles"] == len(obstacles) and cubes["grid"] == 20 * 15 - len(obstacles), cubes


RIGHT_HANDED = "prefer_right :- left_open, right_open.\n"


def right_handed(behaviour: str) -> str:
    """The behaviour rules with one change: when both sides are open, turn right (instead of the roomier side)."""
    lines = behaviour.splitlines(keepends=True)
    out = [l for l in lines
           if not (l.startswith("prefer_left  :- left_open, right_open,")
                   or l.startswith("prefer_right :- left_open, right_open,"))]
    assert len(out) == len(lines) - 2, "the shipped behaviour.dl changed; update this test's edit"
    return "".join(out) + RIGHT_HANDED


def test_replacing_the_behaviour_rules_changes_the_path_without_restart(ros, tmp_path):
    # Reference run: the shipped rules, all the way to the destination. It starts paused (time_scale 0, the
    # node repeats its t=0 state) so that the trace is complete from the start.
    rules_a = copy_rules(tmp_path / "a")
    ref = Sim(ros, sim_params(rules_a, time_scale=0.0))
    ref.set_param_double("time_scale", 10.0)
    ref.wait_arrived()
    reference = ref.trace()
    ref.proc.stop()
    assert min(reference)[0] == 0 and "turn_right" not in ref.state_names()  # it turned left at the rack

    # Same seed and scene, slow at first so that the rule file can be swapped after the vehicle has driven on
    # the old rules but before it reaches the rack (its first decision is at about 3.4 simulated seconds).
    rules_b = copy_rules(tmp_path / "b")
    sim = Sim(ros, sim_params(rules_b, time_scale=0.0))
    sim.set_param_double("time_scale", 0.5)
    ros.wait_until(lambda: stamp_secs(sim.latest().header) > 1.0, 30, "1 s of driving", proc=sim.proc)
    behaviour = rules_b / "behaviour.dl"
    write_atomically(behaviour, right_handed(behaviour.read_text()))
    ros.wait_until(lambda: "file change: reloaded" in sim.proc.log(), 30, "the watcher to reload the rules",
                   proc=sim.proc)
    reloaded_at = stamp_secs(sim.latest().header)
    assert reloaded_at < 3.0, f"the reload came too late ({reloaded_at:.2f} s simulated) to test anything"
    assert set(sim.state_names()) == {"explore"}, sim.state_names()
    assert sim.proc.alive()
    sim.set_param_double("time_scale", 10.0)  # now hurry

    def diverged():
        trace = sim.trace()
        return any(k in reference and math.dist(p, reference[k]) > 1.5 for k, p in trace.items())

    ros.wait_until(diverged, 60, "the path to diverge from the reference run", proc=sim.proc)
    assert "turn_right" in sim.state_names(), sim.state_names()
    # Before the swap both runs were at the same place at the same simulated time, sample for sample.
    trace = sim.trace()
    early = [k for k in trace if k[0] + k[1] * 1e-9 < reloaded_at and k in reference]
    assert len(early) >= 10
    assert all(math.dist(trace[k], reference[k]) < 1e-9 for k in early)
    # The old rules sent it north around the rack, the new ones send it south.
    ros.wait_until(lambda: any(k[0] >= 10 for k in sim.trace()), 60, "10 simulated seconds", proc=sim.proc)
    trace = sim.trace()
    window = [k for k in trace if 6 <= k[0] < 10 and k in reference]
    assert len(window) >= 20
    assert max(reference[k][1] for k in window) > 7.0  # north of the start row (y = 5.5)
    assert min(trace[k][1] for k in window) < 4.0  # south of it


def test_broken_rule_file_keeps_old_rules_and_reload_reports_file_line(ros, tmp_path):
    rules = copy_rules(tmp_path)
    sim = Sim(ros, sim_params(rules, time_scale=2.0))
    ros.wait_until(lambda: sim.latest() and sim.latest().pose.position.x > START[0] + 0.5 + 0.3, 60,
                   "the vehicle to move", proc=sim.proc)
    behaviour = rules / "behaviour.dl"
    good = behaviour.read_text()
    broken_line = good.count("\n") + 2
    write_atomically(behaviour, good + "\nnext_state(explore :- state(explore).\n")
    ros.wait_until(lambda: "reload failed" in sim.proc.log(), 30, "the watcher to report the broken file",
                   proc=sim.proc)

    response = ros.call(Trigger, f"/{NODE}/reload", Trigger.Request(), timeout=30)
    assert not response.success
    assert f"{behaviour}:{broken_line}:" in response.message, response.message
    assert f"{behaviour}:{broken_line}:" in sim.proc.log()
    # Still driving on the old rules: it gets there.
    sim.set_param_double("time_scale", 10.0)
    sim.wait_arrived()
    last = sim.latest()
    assert cell_of(last.pose.position.x, last.pose.position.y) == DEST
    assert sim.proc.alive()

    # Fixing the file makes ~/reload succeed again, with no warning for the shipped rules...
    write_atomically(behaviour, good)
    response = ros.call(Trigger, f"/{NODE}/reload", Trigger.Request(), timeout=30)
    assert response.success and "warning" not in response.message, response.message
    # ...and one naming file:line:column for a rule that reads a predicate nothing defines (a typo).
    write_atomically(behaviour, good + "\nslow :- free_frnt(D), D < 0.5.\n")
    response = ros.call(Trigger, f"/{NODE}/reload", Trigger.Request(), timeout=30)
    assert response.success, response.message
    assert f"{behaviour}:{broken_line}:9: warning: `free_frnt` is used but never defined" in response.message, \
        response.message


def bad_scene_text():
    lines = SCENE.read_text().splitlines()
    header = next(i for i, l in enumerate(lines) if l.strip() and not l.startswith("#"))
    row = lines[header + 1 + 3].split()  # matrix row 3
    row[5] = "9"  # column 5: no surface rule decodes 9
    lines[header + 1 + 3] = " ".join(row)
    return "\n".join(lines) + "\n", header + 1 + 3 + 1  # text, 1-based line of row 3


def test_undecodable_typecode_fails_to_load_naming_row_and_column(ros, tmp_path):
    rules = copy_rules(tmp_path)
    text, line = bad_scene_text()
    scene = tmp_path / "bad.scene"
    scene.write_text(text)
    proc = ros.start(NODE, params=sim_params(rules, scene=scene))
    ros.wait_until(lambda: not proc.alive(), 60, "the node to exit")
    assert proc.popen.returncode != 0
    log = proc.log()
    assert "row 3, column 5" in log and "unknown typecode 9" in log, log
    assert f"{scene}:{line}:" in log, log


def test_bad_scene_on_reload_keeps_the_old_scene(ros, tmp_path):
    rules = copy_rules(tmp_path)
    scene = tmp_path / "warehouse.scene"
    shutil.copy(SCENE, scene)
    sim = Sim(ros, sim_params(rules, scene=scene, time_scale=2.0))
    text, _ = bad_scene_text()
    write_atomically(scene, text)
    response = ros.call(Trigger, f"/{NODE}/reload", Trigger.Request(), timeout=30)
    assert not response.success
    assert "row 3, column 5" in response.message and "unknown typecode 9" in response.message
    # A ragged row is named too.
    ragged = SCENE.read_text().replace("0 1 1 4 4 4 4 4 0 3 3 3 3 3 1 1 1 1 1 0", "0 1 1 4 4", 1)
    write_atomically(scene, ragged)
    response = ros.call(Trigger, f"/{NODE}/reload", Trigger.Request(), timeout=30)
    assert not response.success and "row 4 has 5 cell(s)" in response.message, response.message
    sim.set_param_double("time_scale", 10.0)
    sim.wait_state("arrived", timeout=120)
    assert sim.proc.alive()


def test_commanded_wheel_radius_and_track_mismatch_make_odometry_drift_the_predicted_way(ros, tmp_path):
    rules = copy_rules(tmp_path)
    odom = ros.collect(Odometry, "/odom", reliable(depth=1000))
    params = sim_params(rules, mode="commanded", start_column=1, start_row=13, time_scale=4.0,
                        cmd_timeout_secs=0.0, destination_column=-1, destination_row=-1)
    params.update({"true_vehicle.wheel_radius_m": 0.055, "nominal_vehicle.wheel_radius_m": 0.05,
                   "true_vehicle.track_width_m": 0.48, "nominal_vehicle.track_width_m": 0.40})
    sim = Sim(ros, params)
    ros.wait_until(lambda: sim.truth and odom, 30, "ground truth and odom")
    start = sim.truth[0].pose.position

    # Straight east along the free bottom row: the wheels turn as the nominal radius says for 0.5 m/s, but a
    # larger true wheel covers more ground, so odometry (nominal radius) reports less distance than travelled.
    forward = Twist()
    forward.linear.x = 0.5
    drive(ros, sim, forward, lambda: sim.latest().pose.position.x > start.x + 3.0, what="3 m of travel")
    wait_still(ros, sim, odom)
    truth_d = math.dist((sim.latest().pose.position.x, sim.latest().pose.position.y), (start.x, start.y))
    odom_d = math.hypot(odom[-1].pose.pose.position.x, odom[-1].pose.pose.position.y)
    assert truth_d > 3.0
    ratio = odom_d / truth_d
    assert abs(ratio - 0.05 / 0.055) < 0.01, (odom_d, truth_d)

    # Turn in place: the controller spreads the wheels for the nominal track; the true track is wider, so the
    # vehicle turns less than commanded and odometry (nominal track) over-reports the rotation.
    truth_yaw0 = len(sim.truth)
    odom_yaw0 = len(odom)
    turn = Twist()
    turn.angular.z = 0.5
    drive(ros, sim, turn, lambda: abs(unwrap([yaw_of(m.pose.orientation) for m in sim.truth[truth_yaw0 - 1:]])[-1])
          > 1.5, what="1.5 rad of true rotation")
    wait_still(ros, sim, odom)
    truth_turn = unwrap([yaw_of(m.pose.orientation) for m in sim.truth[truth_yaw0 - 1:]])[-1]
    odom_turn = unwrap([yaw_of(m.pose.pose.orientation) for m in odom[odom_yaw0 - 1:]])[-1]
    assert truth_turn > 1.5 and odom_turn > truth_turn, (truth_turn, odom_turn)
    # Same wheel angles: odom sees r_n * dphi / b_n, the ground r_t * dphi / b_t.
    predicted = (0.05 / 0.40) / (0.055 / 0.48)
    assert abs(odom_turn / truth_turn - predicted) < 0.02, (odom_turn, truth_turn, predicted)
    assert sim.state() == "commanded"


def test_set_destination_rejects_bad_cells_and_keeps_running(ros, tmp_path):
    rules = copy_rules(tmp_path)
    sim = Sim(ros, sim_params(rules, destination_column=-1, destination_row=-1))
    sim.wait_state("idle", timeout=60)

    rack = SetDestination.Request(column=8, row=9)  # the rack in column 8
    response = ros.call(SetDestination, f"/{NODE}/set_destination", rack, timeout=30)
    assert not response.success and "obstacle" in response.message, response.message
    outside = SetDestination.Request(column=40, row=-3)
    response = ros.call(SetDestination, f"/{NODE}/set_destination", outside, timeout=30)
    assert not response.success and "outside" in response.message, response.message
    assert sim.proc.alive()
    assert sim.state() == "idle"

    response = ros.call(SetDestination, f"/{NODE}/set_destination", SetDestination.Request(column=5, row=9),
                        timeout=30)
    assert response.success, response.message
    sim.wait_arrived(timeout=60)
    last = sim.latest()
    assert cell_of(last.pose.position.x, last.pose.position.y) == (5, 9)
