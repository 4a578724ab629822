"""The `## Interface` tables of the packages' READMEs against the running nodes (black box, rclpy).

Every node binary documented with a `<!-- interface: <binary> [p:=v ...] -->` table is started (one process
per parameter variant the table names: the marker's parameters, plus one per `only with `p:=v`` condition),
all at once on one domain, each variant in a namespace of its own. Then, for each, what rclpy sees is compared
with the table both ways:
- a row the node does not have fails (name and type), naming the node, the kind and the name;
- a publisher, subscription, service, service client, action server, action client or parameter the node has
  that no row names fails the same way;
- each parameter's type, and its default where the test did not set it, must be the table's.

`<module_name>` in a name is the node's module name: its namespace first, without the leading slash
(`obstacle_fusion` in the root namespace, `v1/obstacle_fusion` under `/v1`), as traced modules name their
latched topology topic. Rows whose name holds any other `<placeholder>` that is not a parameter of the node are
patterns for what the node makes at run time; they may match any number of endpoints, none included. Only the
nodes in DYNAMIC may have such rows.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from lockstep_testing.recordings import topology_recording

from interface_support import (ENDPOINT_KINDS, REPO_ROOT, STANDARD_PARAMETERS, Table, absolute, graph_interface,
                               parameters, parse_tables, pattern_of)

# The ROS node name each documented binary starts.
NODE_NAMES = {
    "lockstep_sim_node": "lockstep_sim_node",
    "lockstep_recorder": "lockstep_recorder",
    "lockstep_module_m1": "obstacle_fusion",
    "lockstep_module_m2": "motion_controller",
    "lockstep_module_m2_py": "motion_controller",
    "lockstep_module_m3": "mission_planner",
    "lockstep_module_split": "range_splitter",
    "lockstep_replay": "lockstep_replay",
    "lockstep_bag_player": "lockstep_bag_player",
    "lockstep_calibrator": "lockstep_calibrator",
    "lockstep_interpolation_player": "lockstep_interpolation_player",
    "lockstep_mock_joints": "lockstep_mock_joints",
    "lockstep_task_manager": "lockstep_task_manager",
    "lockstep_actuator": "lockstep_actuator",
    "lockstep_view": "lockstep_view",
}

# Placeholders every table may use besides its parameters: filled in from where the instance runs.
KNOWN_PLACEHOLDERS = {"module_name"}

# The allowance list: the nodes whose tables may have dynamic rows (`<...>` patterns), and why. Their fixed rows
# are checked like every other node's; an endpoint only a pattern row covers must still match that pattern.
DYNAMIC = {
    # Subscribes every selected topic as it appears in the graph (companion node lockstep_recorder_generic):
    # here, the topics of all the other nodes this test starts.
    "lockstep_recorder": "recorded topics",
    # Step clients and topology subscriptions per module of the recording; data publishers per fed channel.
    "lockstep_replay": "the recording's modules and channels",
    # One publisher per played topic of the bag (companion node lockstep_bag_player_generic).
    "lockstep_bag_player": "the bag's topics",
    # One action client per actuator of the configuration file.
    "lockstep_task_manager": "the configuration's actuators",
    # Readers, parameter clients and service clients only while a Foxglove client asks for them.
    "lockstep_view": "what Foxglove clients look at",
}

WAIT_SECS = 180.0  # a loaded 2-core machine starting ~30 debug node processes at once (each wait ends on its condition)
GRACE_SECS = 10.0  # discovery of the last endpoints once every node is there


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(binary: str, tmp_path: Path, index: int) -> tuple[list[str], dict]:
    """(command-line arguments, parameters) a binary needs to start at all here; the test sets these, so their
    defaults are not compared."""
    if binary == "lockstep_sim_node":
        rules = REPO_ROOT / "config/rules"
        return [], {"scene_file": str(REPO_ROOT / "config/scenes/warehouse.scene"),
                    "rule_files": f"{rules / 'surface.dl'},{rules / 'behaviour.dl'}"}
    if binary == "lockstep_recorder":
        return [], {"output": str(tmp_path / f"recording_{index}")}
    if binary == "lockstep_replay":
        # Modules that never answer: it keeps looking for them (the discovery time) and the test stops it.
        bag = topology_recording(tmp_path / "topology.mcap")
        return [str(bag), "--output", str(tmp_path / f"replay_{index}"), "--discovery-ms", "600000",
                "--quiet"], {}
    if binary == "lockstep_bag_player":
        return [], {"bag": str(REPO_ROOT / "test/data/rosbag2/mcap/talker"), "start_paused": True}
    if binary in ("lockstep_interpolation_player", "lockstep_mock_joints"):
        limits = tmp_path / "limits.yaml"
        limits.write_text("joint_limits:\n  a: {max_velocity: 1.0, max_acceleration: 2.0}\n")
        roots = tmp_path / "roots"
        roots.mkdir(exist_ok=True)
        if binary == "lockstep_mock_joints":
            return [], {"joints": "a", "limits_file": str(limits)}
        return [], {"roots": str(roots), "limits_file": str(limits), "controller_joints": "a"}
    if binary == "lockstep_task_manager":
        return [], {"config_file": str(REPO_ROOT / "config/tasks/warehouse.yaml")}
    if binary == "lockstep_view":
        return [], {"port": free_port(), "address": "127.0.0.1"}
    return [], {}


@dataclass
class Instance:
    table: Table
    variant: dict[str, str]  # the documented parameters this instance runs with
    namespace: str
    set_by_test: dict = field(default_factory=dict)
    proc: object = None

    @property
    def node(self) -> str:
        return NODE_NAMES[self.table.binary]

    @property
    def label(self) -> str:
        variant = " ".join(f"{k}:={v}" for k, v in self.variant.items())
        return f"{self.table.binary} ({self.namespace.rstrip('/')}/{self.node}{', ' + variant if variant else ''})"

    def values(self) -> dict[str, str]:
        """Every parameter's value as this instance runs: the table's defaults, then what was set."""
        values = dict(self.table.parameter_defaults())
        values.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in self.set_by_test.items()})
        values.update(self.variant)
        namespace = self.namespace.strip("/")
        values["module_name"] = f"{namespace}/{self.node}" if namespace else self.node
        return values

    def expected_rows(self):
        values = self.values()
        return [r for r in self.table.rows if r.kind != "parameter"
                and (r.condition is None or values.get(r.condition[0]) == r.condition[1])]


def instances(tables: list[Table]) -> list[Instance]:
    out, per_node = [], {}
    for table in tables:
        seen = []
        for variant in table.variants():
            effective = dict(table.parameter_defaults(), **variant)
            if effective in seen:
                continue  # a condition on a default value: the same node as the base one
            seen.append(effective)
            # Numbered per node name: two binaries of one node (the Rust and Python motion controllers) get
            # namespaces of their own, so no two nodes of the graph share a name.
            node = NODE_NAMES[table.binary]
            index = per_node[node] = per_node.get(node, -1) + 1
            out.append(Instance(table, variant, "/" if index == 0 else f"/v{index}"))
    return out


def start(ros, inst: Instance, tmp_path: Path, index: int) -> None:
    args, params = setup(inst.table.binary, tmp_path, index)
    inst.set_by_test = params
    remaps = {"__ns": inst.namespace} if inst.namespace != "/" else None
    all_params = {**params, **inst.variant}
    if inst.table.binary == "lockstep_replay":
        assert not all_params and remaps is None, "the replay node takes arguments, not parameters"
        inst.proc = ros.start(inst.table.binary, *args, name=f"{inst.table.binary}-{index}")
        return
    inst.proc = ros.start(inst.table.binary, *args, name=f"{inst.table.binary}-{index}",
                          params=all_params or None, remaps=remaps)


# ----- comparing -----
def actual_endpoints(ros, inst: Instance) -> dict[str, dict[str, str]] | None:
    """kind -> {name: type} of the node and its companion `<node>_generic` (the generic subscriptions and
    publishers of the same process); None while the node is not in the graph."""
    graph = ros.node.get_node_names_and_namespaces()
    if (inst.node, inst.namespace) not in graph:
        return None
    found = graph_interface(ros.node, inst.node, inst.namespace)
    companion = f"{inst.node}_generic"
    for ns in dict.fromkeys([inst.namespace, "/"]):
        if (companion, ns) in graph:
            for kind, endpoints in graph_interface(ros.node, companion, ns).items():
                found[kind].update(endpoints)
            break
    return found


def compare_endpoints(inst: Instance, found: dict[str, dict[str, str]]) -> list[str]:
    problems = []
    values = inst.values()
    covered: dict[str, set] = {k: set() for k in ENDPOINT_KINDS}
    for row in inst.expected_rows():
        name_re, dynamic = pattern_of(row.name, values, inst.node, inst.namespace)
        matches = [n for n in found[row.kind] if name_re.match(n)]
        if dynamic:
            # `<its type>`: any type; a fixed type must be the one.
            covered[row.kind].update(n for n in matches if "<" in row.type or found[row.kind][n] == row.type)
            continue
        if not matches:
            problems.append(f"{inst.label}: {row.kind} {row.name} ({row.where}) is in the table, not in the node")
            continue
        for n in matches:
            covered[row.kind].add(n)
            if found[row.kind][n] != row.type:
                problems.append(f"{inst.label}: {row.kind} {row.name} is {found[row.kind][n]}, the table says "
                                f"{row.type} ({row.where})")
    for kind in ENDPOINT_KINDS:
        for n, t in sorted(found[kind].items()):
            if n not in covered[kind]:
                problems.append(f"{inst.label}: {kind} {n} ({t}) is in the node, no row of {inst.table.where} "
                                "names it")
    return problems


def missing_fixed(inst: Instance, found) -> list[str]:
    """Fixed rows not (yet) seen: what the wait waits for."""
    values = inst.values()
    out = []
    for row in inst.expected_rows():
        name_re, dynamic = pattern_of(row.name, values, inst.node, inst.namespace)
        if not dynamic and not any(name_re.match(n) for n in found[row.kind]):
            out.append(f"{row.kind} {row.name}")
    return out


def compare_parameters(inst: Instance, actual: dict[str, tuple]) -> list[str]:
    problems = []
    documented = {r.name: r for r in inst.table.rows if r.kind == "parameter"}
    for name, row in documented.items():
        if name not in actual:
            problems.append(f"{inst.label}: parameter {name} ({row.where}) is in the table, not in the node")
            continue
        typ, value, _ = actual[name]
        if typ != row.type:
            problems.append(f"{inst.label}: parameter {name} is {typ}, the table says {row.type} ({row.where})")
        elif name not in inst.set_by_test and name not in inst.variant and value != row.default:
            problems.append(f"{inst.label}: parameter {name} defaults to {value}, the table says {row.default} "
                            f"({row.where})")
    for name in sorted(set(actual) - set(documented) - STANDARD_PARAMETERS):
        problems.append(f"{inst.label}: parameter {name} ({actual[name][0]}) is in the node, no row of "
                        f"{inst.table.where} names it")
    return problems


def has_parameter_services(ros, inst: Instance) -> bool:
    services = dict(ros.node.get_service_names_and_types_by_node(inst.node, inst.namespace))
    return absolute("~/list_parameters", inst.node, inst.namespace) in services


# ----- the test -----
def test_tables_are_well_formed_and_name_known_nodes():
    tables = parse_tables()
    binaries = {t.binary for t in tables}
    assert binaries == set(NODE_NAMES), (sorted(binaries ^ set(NODE_NAMES)), "documented vs NODE_NAMES")
    for table in tables:
        dynamic = [r for r in table.rows if re.search(r"<[^<>]+>", r.name) and
                   not all(p in table.parameter_defaults() or p in KNOWN_PLACEHOLDERS
                           for p in re.findall(r"<([^<>]+)>", r.name))]
        assert not dynamic or table.binary in DYNAMIC, \
            f"{table.where}: dynamic rows {[r.name for r in dynamic]} in a node not allowed them (DYNAMIC)"
        for row in table.rows:
            if row.condition:
                assert row.condition[0] in table.parameter_defaults(), \
                    f"{row.where}: condition on {row.condition[0]}, which is no parameter row of the table"


# Python nodes (rclpy console scripts) are compared in a test of their own: an rclpy process costs more to start
# than a Rust one, and ~30 node processes starting at once on two cores is already the most this test asks.
PYTHON_BINARIES = {"lockstep_module_m2_py"}


def test_every_documented_node_has_exactly_its_table(ros, tmp_path):
    run_and_compare(ros, tmp_path, [t for t in parse_tables() if t.binary not in PYTHON_BINARIES])


def test_every_documented_python_node_has_exactly_its_table(ros, tmp_path):
    tables = [t for t in parse_tables() if t.binary in PYTHON_BINARIES]
    assert {t.binary for t in tables} == PYTHON_BINARIES
    run_and_compare(ros, tmp_path, tables)


def run_and_compare(ros, tmp_path: Path, tables: list[Table]) -> None:
    insts = instances(tables)
    for index, inst in enumerate(insts):
        start(ros, inst, tmp_path, index)
    try:
        compare_all(ros, insts)
    finally:
        # Only the interfaces are under test here, not the nodes' clean stop (their own tests check that): kill
        # them all at once. Stopping ~30 processes with SIGINT took 26 s one after the other, and at once some
        # hung in Fast DDS (DataReaderImpl::stop waiting in ResourceEvent::unregister_timer) until SIGKILL.
        for inst in insts:
            if inst.proc.alive():
                inst.proc.kill9()


def compare_all(ros, insts: list[Instance]) -> None:
    # Wait until every node is in the graph with every fixed row of its table (or the deadline), then look.
    state: dict = {}

    def all_up():
        # Done when every node has every fixed row; or GRACE_SECS after every node (with its parameter
        # services) is in the graph: a row still missing then is missing (the comparison below says so).
        pending, present = [], True
        for inst in insts:
            found = actual_endpoints(ros, inst)
            if found is None:
                pending.append(f"{inst.label}: not in the graph")
                present = False
                continue
            missing = missing_fixed(inst, found)
            params_ok = inst.table.binary == "lockstep_replay" or has_parameter_services(ros, inst)
            present = present and params_ok
            if missing or not params_ok:
                pending.append(f"{inst.label}: {missing or 'parameter services'}")
        state["pending"] = pending
        if present:
            state.setdefault("present_since", time.monotonic())
            if time.monotonic() - state["present_since"] > GRACE_SECS:
                return True
        return not pending

    try:
        ros.wait_until(all_up, WAIT_SECS, "every documented node with its documented interface")
    except TimeoutError:
        print("the wait ended with:", *state.get("pending", []), sep="\n  ")  # the comparison names the rest
    problems = [f"still not in the graph: {p}" for p in state.get("pending", []) if "not in the graph" in p]
    for inst in insts:
        found = actual_endpoints(ros, inst)
        if found is None:
            continue
        problems += compare_endpoints(inst, found)
        if inst.table.binary != "lockstep_replay":  # no parameters: created without declare_parameters
            problems += compare_parameters(inst, parameters(ros.node, inst.node, inst.namespace, timeout=WAIT_SECS))
        else:
            assert not has_parameter_services(ros, inst)
    for inst in insts:
        assert inst.proc.alive(), f"{inst.label} exited: {inst.proc.log()[-2000:]}"
    print(f"{len(insts)} node processes compared with {len({i.table.where for i in insts})} tables")
    assert not problems, "\n".join(problems)
