"""The example three-module pipeline (m1, m2, m3) recorded by lockstep_recorder: the bag holds the live wiring as
the module topology, and every cmd_vel (c5) message in the bag has its header, naming the exact
obstacles/mission/odom (c3/c6/c4) messages the controller used — checked by recomputing the command from
the recorded inputs the header names.

Every wait is on something observed (acknowledged messages, outputs that used the last inputs, the recorder's
status counts); the only sleeps pace rclpy's sensor publishing loop (`Sensors.run`), on purpose."""

import collections
import hashlib
import json
import math
import os
import subprocess

import yaml
from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from mcap.reader import make_reader
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Range

from lockstep_interfaces.msg import DependencyHeader, RecorderStatus
from test_pipeline import (EXPECTED_TOPOLOGY, HOLD, M1, M2, M3, WAYPOINTS, Sensors, digest, expected_command,
                           wait_for_the_last_inputs_to_be_used)

TYPES = {"/cmd_vel": Twist, "/obstacles": PoseArray, "/mission": PoseStamped, "/odom": Odometry,
         "/scan_front": Range, "/scan_rear": Range}


def read_raw(bag):
    """topic -> decoded messages in log order, straight from the MCAP files (rclpy decodes)."""
    out = collections.defaultdict(list)
    attachments = []
    for path in sorted(bag.glob("*.mcap")):
        with open(path, "rb") as f:
            reader = make_reader(f)
            for _schema, channel, message in reader.iter_messages(log_time_order=True):
                topic = channel.topic
                msg_type = DependencyHeader if topic.endswith("/lockstep_header") else TYPES.get(topic)
                if msg_type is not None:
                    out[topic].append(deserialize_message(message.data, msg_type))
            f.seek(0)
            attachments += [a.name for a in make_reader(f).iter_attachments()]
    return out, attachments


def recorded_counts(status: RecorderStatus) -> dict:
    """topic -> messages written, from one recorder status."""
    return {t.topic: t.messages for t in status.topics}


def record_pipeline(ros, bag, ticks: int = 120, kill_recorder: bool = False, namespace: str = "",
                    m2_binary: str = "lockstep_module_m2"):
    """Runs m1, m2 and m3 with rclpy's sensors for `ticks` ticks under lockstep_recorder into `bag`, until
    the recorder wrote everything sent and every output seen; returns (sensors, seen): what rclpy sent, and
    the outputs and headers it saw (/obstacles, /obstacles/lockstep_header, /cmd_vel/lockstep_header).
    `kill_recorder`: end the recorder with kill -9 instead of a clean stop (the bag is left without summary
    or metadata.yaml, as after a crash). `namespace` (e.g. "/robot1"): the modules run under it
    (`-r __ns:=`) and the sensors publish under it; `seen` keeps the root names as keys. `m2_binary`: the
    motion controller to run (`lockstep_module_m2_py` for the Python one)."""
    ns = namespace.rstrip("/")
    remaps = {"__ns": ns} if ns else None
    # Our own view of the modules' outputs, subscribed before they start: to know when the pipeline is done.
    seen = {t: ros.collect(DependencyHeader if t.endswith("/lockstep_header") else TYPES[t], ns + t)
            for t in ["/obstacles", "/obstacles/lockstep_header", "/cmd_vel", "/cmd_vel/lockstep_header"]}
    statuses = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    sensors = Sensors(ros, ns)
    recorder = ros.start("lockstep_recorder", params={
        "output": str(bag), "discovery_period_secs": 0.05, "status_period_secs": 0.1,
        "exclude_regex": "^/rosout$|^/parameter_events$"})
    # m1 and m2 take no input before their outputs (data and header topic) matched every reader: m1's the
    # recorder, m2 and us; m2's the recorder and us. Only then is no output lost to a late match.
    modules = [ros.start("lockstep_module_m1", params={"processing_delay_ms": 2, "wait_for_subscribers": 3},
                         remaps=remaps),
               ros.start(m2_binary, params={"rate_hz": 10.0, "processing_delay_ms": 5,
                                                       "wait_for_subscribers": 2}, remaps=remaps),
               ros.start("lockstep_module_m3", params={"rate_hz": 5.0, "hold": HOLD}, remaps=remaps)]
    for proc, output in [(modules[0], ns + "/obstacles"), (modules[1], ns + "/cmd_vel")]:
        ros.wait_until(lambda p=proc, o=output: f"subscriber(s) on {o}: starting" in p.log(), 30,
                       f"the module publishing {output} to match its readers", proc=proc)

    def counts():
        return recorded_counts(statuses[-1]) if statuses else {}

    def wait_for_recorder(predicate, what):
        try:
            ros.wait_until(predicate, 120, what, proc=recorder)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; the recorder's last counts: {counts()}") from None

    def recorded(*topics, paired=()):
        topics, paired = [ns + t for t in topics], [ns + t for t in paired]
        now = counts()
        return (all(now.get(t, 0) >= 1 for t in topics)
                and all(now.get(t) == now.get(t + "/lockstep_header") for t in paired))

    # m3 publishes from its start: once the recorder wrote a mission and its header, the m3 -> recorder links
    # are matched.
    wait_for_recorder(lambda: recorded("/mission", "/mission/lockstep_header"),
                      "the recorder to write a mission and its header")
    # The modules and the recorder acknowledge the first sensor messages: both sides of every sensor link match
    # (m1 and the recorder on the scans, m2 and the recorder on odometry).
    sensors.start(readers=2)
    sensors.run(ticks)
    n_front, n_rear, n_odom = sensors.n_front, sensors.n_rear, len(sensors.sent_odom)
    wait_for_the_last_inputs_to_be_used(ros, sensors, seen["/obstacles"], seen["/obstacles/lockstep_header"],
                                        seen["/cmd_vel/lockstep_header"])
    for proc in modules:
        assert proc.stop() == 0, proc.log()

    # Stop the recorder once it wrote every sensor message, every output we saw, and a header for each output.
    # (Missions are left out of the pairing: m3 published before the recorder's subscriptions matched, so the
    # bag may start with a mission whose header, or a header whose mission, it never got.)
    # m2 publishes on its timer until it is stopped: the command it sent last can reach us and not the recorder
    # when its process is gone before DDS sends it again (its data, or only its header). The bag may lack that
    # one command's header, never an earlier one's.
    def recorded_everything():
        now = counts()
        sent = [("/scan_front", n_front), ("/scan_rear", n_rear), ("/odom", n_odom)]
        commands, command_headers = now.get(ns + "/cmd_vel", 0), now.get(ns + "/cmd_vel/lockstep_header", 0)
        return (all(now.get(ns + t) == n for t, n in sent)
                and now.get(ns + "/obstacles", 0) >= len(seen["/obstacles"])
                and command_headers >= len(seen["/cmd_vel/lockstep_header"]) - 1
                and commands - command_headers in (0, 1)
                and recorded(paired=("/obstacles",)))

    wait_for_recorder(recorded_everything, f"the recorder to write everything sent ({n_front} front, "
                      f"{n_rear} rear, {n_odom} odom, {len(seen['/obstacles'])} obstacles)")
    if kill_recorder:
        recorder.kill9()
    else:
        assert recorder.stop() == 0, recorder.log()

    return sensors, seen


def test_recorded_pipeline_has_topology_and_exact_headers(ros, tmp_path):
    bag = tmp_path / "bag"
    sensors, seen = record_pipeline(ros, bag)
    n_front, n_odom = sensors.n_front, len(sensors.sent_odom)

    # The topology, as stored in metadata.yaml, is the live wiring — and nothing else (rclpy's publishers
    # are not modules).
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    topology = json.loads(info["custom_data"]["lockstep.topology"])
    assert {m: (w["reads"], w["writes"]) for m, w in topology.items()} == {
        m: (sorted(r), sorted(w)) for m, (r, w) in EXPECTED_TOPOLOGY.items()}

    recorded, attachments = read_raw(bag)
    assert "lockstep/topology.pb" in attachments  # the dependency-header protobuf form
    info_out = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "info", str(bag)], capture_output=True,
                              text=True, timeout=60)
    assert info_out.returncode == 0 and "lockstep/topology.pb" in info_out.stdout, info_out.stdout
    assert "motion_controller: [/mission, /obstacles, /odom] -> [/cmd_vel]" in info_out.stdout, info_out.stdout
    assert "mission_planner: [] -> [/mission]" in info_out.stdout, info_out.stdout
    assert "(a DAG: replayable in lock-step)" in info_out.stdout, info_out.stdout
    assert info["custom_data"]["lockstep.topology_check"] == "acyclic"

    # Every external input arrived in order.
    assert len(recorded["/odom"]) == n_odom and len(recorded["/scan_front"]) == n_front

    cmd, cmd_headers = recorded["/cmd_vel"], recorded["/cmd_vel/lockstep_header"]
    if len(cmd) == len(cmd_headers) + 1:
        cmd = cmd[:-1]  # the command in flight when m2 stopped, whose header did not reach the recorder
    assert len(cmd) >= 8 and collections.Counter(map(digest, cmd)) == collections.Counter(
        h.payload_digest for h in cmd_headers)
    c3_headers = {h.sequence_num: h for h in recorded["/obstacles/lockstep_header"]}
    c3_data = {digest(m): m for m in recorded["/obstacles"]}
    c6_headers = {h.sequence_num: h for h in recorded["/mission/lockstep_header"]}
    cmd_by_digest = {digest(m): m for m in cmd}
    for h in cmd_headers:
        assert (h.module_name, [i.channel_name for i in h.inputs]) == (M2, ["/obstacles", "/mission", "/odom"])
        assert h.inputs[0].module_name == M1 and h.inputs[1].module_name == M3
        # The named obstacles and mission messages are in the bag (recorded from the start).
        assert h.inputs[1].sequence_num in c6_headers

    # Every input is found in the bag exactly by (channel, payload digest): obstacles by the header m1 wrote,
    # odometry (an untraced publisher, numbered only by its arrival at m2) by the digest of the bag's data.
    odom_by_digest = {digest(m): m for m in recorded["/odom"]}
    assert len(odom_by_digest) == len(recorded["/odom"])
    for h in cmd_headers:
        c3, c6, c4 = h.inputs
        assert c3_headers[c3.sequence_num].payload_digest == c3.payload_digest
        assert c3_headers[c3.sequence_num].epoch == c3.epoch != 0
        obstacles = c3_data[c3.payload_digest]
        goal = WAYPOINTS[(c6.sequence_num // HOLD) % len(WAYPOINTS)]
        linear, angular = expected_command([p.position.x for p in obstacles.poses], goal,
                                           odom_by_digest[c4.payload_digest])
        out = cmd_by_digest[h.payload_digest]
        assert math.isclose(out.linear.x, linear, abs_tol=1e-9), (h.sequence_num, out, linear)
        assert math.isclose(out.angular.z, angular, abs_tol=1e-9), (h.sequence_num, out, angular)

    # Lock-step re-simulation of this recording, in-process (the modules' own functions): every replayed
    # frame gives the recorded output bit for bit, and three replays write byte-identical bags.
    hashes = []
    for run in range(3):
        out = tmp_path / f"replay{run}" / "simulated"
        out.parent.mkdir()
        report = lockstep_replay(bag, out, f"mission_planner.hold={HOLD}")
        channels = report["channels"]
        assert sorted(channels) == ["/cmd_vel", "/mission", "/obstacles"], channels
        for name, c in channels.items():
            assert c["simulated"] > 0 and c["exact"] == c["simulated"] and c["first_difference"] is None, (name, c)
        assert channels["/obstacles"]["simulated"] == channels["/obstacles"]["recorded"]
        # Only frames that used a mission sent before the recorder's subscription matched can be skipped.
        assert all("/mission" in s["reason"] for s in report["frames_skipped"]), report["frames_skipped"]
        assert report["frames_selected"] == report["frames_replayed"] + len(report["frames_skipped"])
        hashes.append(bag_hashes(out))
    assert hashes[0] == hashes[1] == hashes[2], hashes
    # A changed controller (a lower speed limit) is found: the right channel, from the first frame that moves.
    out = tmp_path / "changed" / "simulated"
    out.parent.mkdir()
    report = lockstep_replay(bag, out, f"mission_planner.hold={HOLD}", "motion_controller.max_linear_mps=0.05")
    changed = report["channels"]
    assert changed["/obstacles"]["exact"] == changed["/obstacles"]["simulated"]
    assert changed["/cmd_vel"]["exact"] < changed["/cmd_vel"]["simulated"]
    first = changed["/cmd_vel"]["first_difference"]
    assert first["module"] == M2
    faster = [h.sequence_num for h in cmd_headers if cmd_by_digest[h.payload_digest].linear.x > 0.05 + 1e-9]
    assert first["sequence_num"] == min(faster), (first, faster[:5])


def test_a_recording_cut_by_kill_9_and_reindexed_still_replays_in_lockstep(ros, tmp_path):
    """The recorder stores the module topology as it grows, not only at close: a recording whose recorder was
    killed (no summary and no topology written at close), salvaged by `lockstep bag reindex`,
    replays in lock-step with every replayed frame exact."""
    bag = tmp_path / "bag"
    record_pipeline(ros, bag, ticks=60, kill_recorder=True)
    repair = subprocess.run([os.environ["LOCKSTEP_BIN"], "bag", "reindex", str(bag)], capture_output=True,
                            text=True, timeout=120)
    assert repair.returncode == 0, repair.stderr
    salvaged = tmp_path / "bag.reindexed"
    assert "salvaged" in repair.stdout and salvaged.is_dir(), repair.stdout
    out = tmp_path / "replay" / "simulated"
    out.parent.mkdir()
    report = lockstep_replay(salvaged, out, f"mission_planner.hold={HOLD}")
    channels = report["channels"]
    assert sorted(channels) == ["/cmd_vel", "/mission", "/obstacles"], channels
    for name, c in channels.items():
        assert c["simulated"] > 0 and c["exact"] == c["simulated"], (name, c)


def bag_hashes(out) -> dict:
    """SHA-256 of every file of the bag directory `out`, the differences plot included (report.json left out:
    it holds wall-clock timings)."""
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(out.iterdir())
            if f.name != "report.json"}


def lockstep_replay(bag, out, *params) -> dict:
    """`lockstep replay --in-process` of `bag` into `out`; its report.json."""
    args = [os.environ["LOCKSTEP_BIN"], "replay", str(bag), "--output", str(out), "--in-process", "--quiet"]
    for p in params:
        args += ["--param", p]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "in lock-step" in run.stdout, run.stdout
    return json.loads((out / "report.json").read_text())


def test_a_module_restarted_mid_recording_keeps_every_output_identified(ros, tmp_path):
    """m1 is stopped and started again while the recorder runs: its sequence numbers start from 0 again,
    and its epoch tells the two runs apart, so (module, channel, epoch, sequence) names one recorded message
    and every input m2 names is found in the bag exactly."""
    statuses = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    bag = tmp_path / "bag"
    recorder = ros.start("lockstep_recorder", params={
        "output": str(bag), "discovery_period_secs": 0.05, "status_period_secs": 0.1,
        "exclude_regex": "^/rosout$|^/parameter_events$"})
    # m1 takes no input before the recorder and m2 read its outputs and headers: no output of either run is lost.
    m1_params = {"processing_delay_ms": 2, "wait_for_subscribers": 2}
    m1 = ros.start("lockstep_module_m1", params=m1_params)
    others = [ros.start("lockstep_module_m2", params={"rate_hz": 20.0, "processing_delay_ms": 1}),
              ros.start("lockstep_module_m3", params={"rate_hz": 5.0, "hold": HOLD})]

    def written(topic):
        return recorded_counts(statuses[-1]).get(topic, 0) if statuses else 0

    sensors = Sensors(ros)
    sensors.start(readers=2)
    sensors.run(80)
    ros.wait_until(lambda: written("/obstacles/lockstep_header") >= 30, 30, "obstacles headers of the first run")
    assert m1.stop() == 0, m1.log()
    before = written("/obstacles/lockstep_header")
    m1 = ros.start("lockstep_module_m1", params=m1_params)
    # The restarted m1 reads the sensors again once its subscriptions match (recorder + m1 on each).
    for pub in sensors.publishers():
        ros.wait_until(lambda pub=pub: pub.get_subscription_count() >= 2, 20, f"m1 back on {pub.topic_name}")
    for _ in range(200):
        sensors.run(sensors.ticks + 10)
        if written("/obstacles/lockstep_header") >= before + 20:
            break
    ros.wait_until(lambda: written("/obstacles/lockstep_header") >= before + 20, 30,
                   "obstacles headers of the second run")
    sensors.run(sensors.ticks + 20)
    for proc in [m1, *others]:
        assert proc.stop() == 0, proc.log()
    ros.wait_until(lambda: written("/cmd_vel/lockstep_header") == written("/cmd_vel"), 15, "every command's header")
    assert recorder.stop() == 0, recorder.log()

    recorded, _ = read_raw(bag)
    c3 = recorded["/obstacles/lockstep_header"]
    runs = collections.defaultdict(list)
    for h in c3:
        runs[h.epoch].append(h.sequence_num)
    assert len(runs) == 2 and 0 not in runs, {e: s[:5] for e, s in runs.items()}
    first, second = sorted(runs)
    # Each run numbers from 0 without gaps: the restarted run reuses the first run's numbers.
    for epoch in (first, second):
        assert runs[epoch] == list(range(len(runs[epoch]))), (epoch, runs[epoch][:10])
    by_id = {(h.epoch, h.sequence_num): h for h in c3}
    assert len(by_id) == len(c3) > len({h.sequence_num for h in c3})  # sequence numbers alone repeat
    # m2 names each obstacles input by epoch and number; it is in the bag, with the digest m2 names.
    used = collections.Counter()
    for h in recorded["/cmd_vel/lockstep_header"]:
        obstacles = h.inputs[0]
        producer = by_id.get((obstacles.epoch, obstacles.sequence_num))
        assert producer is not None, (h.sequence_num, obstacles.epoch, obstacles.sequence_num)
        assert producer.payload_digest == obstacles.payload_digest, h.sequence_num
        used[obstacles.epoch] += 1
    assert used[first] > 0 and used[second] > 0, used
