"""Two simulated robots sent head-on through the warehouse's upper corridor, marked one lane wide: the task
manager holds lanes and stations before each drive, so one robot waits (its WAITING event names the other),
the two waiting on each other are broken up by one stepping aside to a free side station, both tasks complete,
and the robots' ground-truth poses never come within 0.5 m of each other."""

from __future__ import annotations

import math

from lockstep_interfaces.msg import TaskEvent
from visualization_msgs.msg import Marker, MarkerArray

from lockstep_testing.harness import REPO_ROOT, reliable
from tasks_support import GO_CONFIG as CONFIG, Manager, closest_approach, start_robots

# Robot -> (start station, its cell, destination).
ROBOTS = {"robot1": ("C", (2, 2), "D"), "robot2": ("D", (17, 2), "C")}
STATIONS = {"C": (2.5, 12.5), "D": (17.5, 12.5)}
CORRIDOR = ("{from: C, to: J6, speed_limit_mps: 1.0}", "{from: J6, to: J7, speed_limit_mps: 1.0}",
            "{from: J7, to: D, speed_limit_mps: 1.0}")


def one_lane_map(tmp_path):
    """The shipped warehouse map with the upper corridor's three lanes marked narrow (one lane wide)."""
    text = (REPO_ROOT / "config/tasks/warehouse_map.yaml").read_text()
    for lane in CORRIDOR:
        assert lane in text, lane
        text = text.replace(lane, lane[:-1] + ", narrow: true}")
    path = tmp_path / "one_lane_map.yaml"
    path.write_text(text)
    return path


def test_head_on_in_a_one_lane_corridor_one_waits_one_steps_aside_and_both_arrive(ros, tmp_path):
    truth, _ = start_robots(ros, {robot: cell for robot, (_, cell, _) in ROBOTS.items()}, depth=1000)
    views = ros.collect(MarkerArray, "/fleet_markers", reliable(depth=1000))
    config = tmp_path / "floor.yaml"
    config.write_text(CONFIG)
    m = Manager(ros, config, servers={r: f"/{r}/navigate" for r in ROBOTS}, map_file=str(one_lane_map(tmp_path)),
                robots=",".join(ROBOTS), start_stations=",".join(s for s, _, _ in ROBOTS.values()))
    m.wait_for_actuators(*ROBOTS)
    handles = [m.send("go", {"to": to, "speed": 1.0}, robot=robot) for robot, (_, _, to) in ROBOTS.items()]
    results = [m.result(h, timeout=400) for h in handles]
    assert all(r.success for r in results), [r.summary for r in results]
    waits = [(e.robot, e.reason) for e in list(m.events) if e.kind == TaskEvent.WAITING]
    # robot1 holds the corridor up to J7 first; robot2 waits at D for it.
    assert ("robot2", "waiting at D for station J7, held by robot1") in waits, waits
    asides = [(r, why) for r, why in waits if "steps aside" in why]
    assert len(asides) == 1 and asides[0][1].startswith("steps aside from J7 to J8"), waits
    for robot, (_, _, to) in ROBOTS.items():
        end = truth[robot][-1].pose.position
        assert math.hypot(end.x - STATIONS[to][0], end.y - STATIONS[to][1]) < 0.4, (robot, end.x, end.y)
    # The live view showed robot2 waiting (orange) while robot1 held lanes of the corridor.
    def waiting_shown(view) -> bool:
        names = {m.id: m.text for m in view.markers if m.ns == "names"}
        orange = [names.get(m.id) for m in view.markers
                  if m.ns == "robots" and abs(m.color.g - 0.55) < 0.01 and m.color.r > 0.99]
        held = [names.get(m.id) for m in view.markers if m.ns == "held_lanes" and m.type == Marker.LINE_LIST]
        return orange == ["robot2"] and "robot1" in held
    assert any(waiting_shown(v) for v in list(views)), len(views)
    least = closest_approach(list(truth["robot1"]), list(truth["robot2"]))
    assert 0.5 <= least < math.inf, f"the robots came {least:.2f} m close"
