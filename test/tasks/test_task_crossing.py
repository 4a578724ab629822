"""Four simulated robots sent across one crossing at once, each from its own arm to a station on a diagonal
(a 45-degree turn at the crossing): the crossing holds one robot at a time, so the task manager lets them
through one after the other (the others' WAITING events name the holder). All four tasks complete within a
bound computed from the map (every route driven one after the other, with room for a loaded machine), and
the robots' ground-truth poses never have two robots inside the crossing at once."""

from __future__ import annotations

import math
import time

from lockstep_interfaces.msg import TaskEvent

from tasks_support import GO_CONFIG as CONFIG, Manager, side_by_side, start_robots

# The open asphalt west of the first rack (config/scenes/warehouse.scene, columns 1-7, rows 6-10): the
# crossing X, four arms 2 m long, four destinations on the diagonals.
STATIONS = {"X": (4.5, 6.5), "N": (4.5, 8.5), "S": (4.5, 4.5), "W": (2.5, 6.5), "E": (6.5, 6.5),
            "NE": (6.5, 8.5), "NW": (2.5, 8.5), "SE": (6.5, 4.5), "SW": (3.5, 5.5)}
# Robot -> (start station, its cell (column, row), destination): each turns 45 degrees at X.
ROBOTS = {"robot1": ("W", (2, 8), "SE"), "robot2": ("N", (4, 6), "SW"), "robot3": ("E", (6, 8), "NW"),
          "robot4": ("S", (4, 10), "NE")}
SPEED_MPS = 0.8
# The crossing: within this distance of X's centre.
CROSSING_M = 1.0


def crossing_map(tmp_path):
    stations = "\n".join(f"  {name}: {{x: {x}, y: {y}}}" for name, (x, y) in STATIONS.items())
    lanes = "\n".join(f"  - {{from: {end}, to: X, speed_limit_mps: 1.0}}" for end in STATIONS if end != "X")
    path = tmp_path / "crossing.yaml"
    path.write_text(f"frame_id: map\nstations:\n{stations}\nlanes:\n{lanes}\n")
    return path


def route_s(start: str, end: str) -> float:
    """The planned route's time: start -> X -> end at the task's speed (below every lane's limit)."""
    return (math.dist(STATIONS[start], STATIONS["X"]) + math.dist(STATIONS["X"], STATIONS[end])) / SPEED_MPS


def test_four_robots_cross_one_crossing_one_at_a_time_and_all_arrive(ros, tmp_path):
    truth, _ = start_robots(ros, {robot: cell for robot, (_, cell, _) in ROBOTS.items()}, depth=20000)
    config = tmp_path / "crossing_tasks.yaml"
    config.write_text(CONFIG)
    m = Manager(ros, config, servers={r: f"/{r}/navigate" for r in ROBOTS}, map_file=str(crossing_map(tmp_path)),
                robots=",".join(ROBOTS), start_stations=",".join(s for s, _, _ in ROBOTS.values()))
    m.wait_for_actuators(*ROBOTS)
    started = time.monotonic()
    handles = [m.send("go", {"to": to, "speed": SPEED_MPS}, robot=robot) for robot, (_, _, to) in ROBOTS.items()]
    # One after the other, every route driven in full; three times that and a minute for a loaded machine
    # (the simulators, the actuators and the manager share its cores).
    bound_s = 3.0 * sum(route_s(start, end) for start, _, end in ROBOTS.values()) + 60.0
    results = [m.result(h, timeout=bound_s + 120.0) for h in handles]
    took_s = time.monotonic() - started
    assert all(r.success for r in results), [r.summary for r in results]
    assert took_s < bound_s, f"{took_s:.1f} s, more than the bound of {bound_s:.1f} s"
    for robot, (_, _, to) in ROBOTS.items():
        end = truth[robot][-1].pose.position
        assert math.dist((end.x, end.y), STATIONS[to]) < 0.4, (robot, end.x, end.y)
    # Three of them waited for the crossing, each wait naming who held it.
    waits = [(e.robot, e.reason) for e in list(m.events) if e.kind == TaskEvent.WAITING]
    waited = {robot for robot, why in waits if "station X, held by robot" in why}
    assert len(waited) >= 3, waits

    # Never two robots inside the crossing at once (poses stamped within 50 ms of each other).
    def inside(pose) -> bool:
        return math.dist((pose.pose.position.x, pose.pose.position.y), STATIONS["X"]) < CROSSING_M
    names = list(ROBOTS)
    crossed = {robot: [p for p in list(truth[robot]) if inside(p)] for robot in names}
    assert all(crossed.values()), {r: len(p) for r, p in crossed.items()}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            together = [(p, q) for p, q in side_by_side(crossed[a], crossed[b])]
            assert not together, f"{a} and {b} inside the crossing together ({len(together)} pose pairs)"
