"""Helpers of the interface-table test: the `<!-- interface: ... -->` tables of the packages' READMEs parsed,
the documented nodes started as they need to be, and what a running node really has read from the ROS graph
and its parameter services (rclpy only, black box).

Table format (one per node binary; see test_interface_tables.py for the rules the test applies):

    <!-- interface: lockstep_actuator kind:=lift -->
    | kind | name | type | notes |
    |---|---|---|---|
    | publishes | `/actuator_states` | `lockstep_interfaces/msg/ActuatorState` | ... |
    | action | `navigate` | `lockstep_interfaces/action/Navigate` | only with `kind:=navigation` ... |
    | parameter | `kind` | `string`, default `""` | ... |

- The marker names the binary and, optionally, `param:=value` pairs the documented instance is started with.
- A row whose notes say ``only with `p:=v` `` exists only when parameter `p` is `v`: the test starts one more
  instance per such condition (with the marker's parameters).
- `<p>` in a name, where `p` is one of the node's parameters, stands for that parameter's value. Any other
  `<...>` marks a name the node makes at run time (a recorded module's step service, say): such a row is a
  pattern (`<...>` matches one or more characters) that may match any number of the node's endpoints, and the
  node need not have any.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "test"))  # also when run as a script

from lockstep_testing.harness import RosTestContext, answer  # noqa: E402
README_GLOB = "packages/*/README.md"

MARKER = re.compile(r"^<!--\s*interface:\s*(\S+)((?:\s+[\w.]+:=\S*)*)\s*-->\s*$")
CONDITION = re.compile(r"only with `([\w.]+):=([^`]*)`")
PLACEHOLDER = re.compile(r"<([^<>]+)>")
ENDPOINT_KINDS = ("publishes", "subscribes", "service", "service client", "action", "action client")
KINDS = ENDPOINT_KINDS + ("parameter",)

PARAMETER_TYPES = {
    ParameterType.PARAMETER_BOOL: "bool",
    ParameterType.PARAMETER_INTEGER: "integer",
    ParameterType.PARAMETER_DOUBLE: "double",
    ParameterType.PARAMETER_STRING: "string",
    ParameterType.PARAMETER_BYTE_ARRAY: "byte_array",
    ParameterType.PARAMETER_BOOL_ARRAY: "bool_array",
    ParameterType.PARAMETER_INTEGER_ARRAY: "integer_array",
    ParameterType.PARAMETER_DOUBLE_ARRAY: "double_array",
    ParameterType.PARAMETER_STRING_ARRAY: "string_array",
}

# What every rcl node has and no table lists: the standard parameter services, /rosout and /parameter_events.
STANDARD_SERVICES = ("describe_parameters", "get_parameter_types", "get_parameters", "get_type_description",
                     "list_parameters", "set_parameters", "set_parameters_atomically")
STANDARD_TOPICS = {"/rosout", "/parameter_events"}
# Every Lockstep node with checked parameters also has the two service introspection parameters (documented
# once, in docs/record-your-robot.md).
STANDARD_PARAMETERS = {"use_sim_time", "start_type_description_service", "service_configure_introspection",
                       "client_configure_introspection"}


# ----- the tables -----
@dataclass
class Row:
    kind: str
    name: str
    type: str
    default: str | None
    notes: str
    where: str  # file:line, for messages

    @property
    def condition(self) -> tuple[str, str] | None:
        found = CONDITION.search(self.notes)
        return (found.group(1), found.group(2)) if found else None


@dataclass
class Table:
    binary: str
    params: dict[str, str]
    rows: list[Row]
    where: str

    def parameter_defaults(self) -> dict[str, str]:
        return {r.name: r.default for r in self.rows if r.kind == "parameter" and r.default is not None}

    def variants(self) -> list[dict[str, str]]:
        """The parameter sets to start this node with: the marker's, plus one per row condition."""
        out = [dict(self.params)]
        for row in self.rows:
            if row.condition:
                p, v = row.condition
                variant = dict(self.params, **{p: v})
                if variant not in out:
                    out.append(variant)
        return out


def _cells(line: str) -> list[str]:
    """The cells of a table line; `\\|` is a `|` inside a cell."""
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _code(text: str) -> str:
    return text.strip().strip("`")


def parse_tables(paths: list[Path] | None = None) -> list[Table]:
    """Every interface table of the packages' READMEs, in file order."""
    tables = []
    for path in paths or sorted(REPO_ROOT.glob(README_GLOB)):
        lines = path.read_text().splitlines()
        rel = path.relative_to(REPO_ROOT)
        i = 0
        while i < len(lines):
            marker = MARKER.match(lines[i].strip())
            i += 1
            if not marker:
                continue
            params = dict(p.split(":=", 1) for p in marker.group(2).split())
            table = Table(marker.group(1), params, [], f"{rel}:{i}")
            while i < len(lines) and not lines[i].strip():
                i += 1
            header = _cells(lines[i]) if i < len(lines) else []
            assert header[:4] == ["kind", "name", "type", "notes"], f"{rel}:{i + 1}: table header {header}"
            i += 2  # header and |---|
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = _cells(lines[i])
                where = f"{rel}:{i + 1}"
                assert len(cells) == 4, f"{where}: {len(cells)} cells, want 4"
                kind, name, typ, notes = cells
                assert kind in KINDS, f"{where}: kind `{kind}` is not one of {KINDS}"
                default = None
                if kind == "parameter":
                    found = re.fullmatch(r"`(\w+)`, default `(.*)`", typ)
                    assert found, f"{where}: parameter type must read `type`, default `value`: {typ}"
                    typ, default = found.group(1), found.group(2)
                table.rows.append(Row(kind, _code(name), _code(typ), default, notes, where))
                i += 1
            tables.append(table)
    return tables


# ----- names -----
def absolute(name: str, node: str, namespace: str = "/") -> str:
    """A node's relative or private name made absolute (as the graph shows it)."""
    ns = namespace.rstrip("/")
    if name.startswith("~/"):
        return f"{ns}/{node}/{name[2:]}"
    if name.startswith("/"):
        return name
    return f"{ns}/{name}"


def pattern_of(name: str, values: dict[str, str], node: str, namespace: str = "/") -> tuple[re.Pattern, bool]:
    """(regex of the absolute name, whether it is dynamic): `<p>` of a known parameter is replaced by its value,
    any other `<...>` matches one or more characters."""
    text = PLACEHOLDER.sub(lambda m: str(values[m.group(1)]).rstrip("/") if m.group(1) in values else m.group(0),
                           name)
    dynamic = bool(PLACEHOLDER.search(text))
    if not text.startswith("<"):
        text = absolute(text, node, namespace)
    parts = PLACEHOLDER.split(text)  # text, placeholder, text, ...
    regex = "".join(re.escape(part) if i % 2 == 0 else ".+" for i, part in enumerate(parts))
    return re.compile(regex + r"\Z"), dynamic


# ----- what a running node has -----
def _names_types(pairs) -> dict[str, str]:
    return {name: ",".join(types) for name, types in pairs}


def graph_interface(rclpy_node, name: str, namespace: str = "/") -> dict[str, dict[str, str]]:
    """kind -> {absolute name: type} of the node `namespace/name`, as rclpy sees it. Action servers and clients
    are told by their hidden `<action>/_action/...` endpoints (an action server serves
    `<action>/_action/send_goal` and publishes `<action>/_action/status`; a client calls `send_goal`), which are
    not listed as topics or services themselves; nor are /rosout, /parameter_events and the standard parameter
    services every node has."""
    pubs = _names_types(rclpy_node.get_publisher_names_and_types_by_node(name, namespace))
    subs = _names_types(rclpy_node.get_subscriber_names_and_types_by_node(name, namespace))
    services = _names_types(rclpy_node.get_service_names_and_types_by_node(name, namespace))
    clients = _names_types(rclpy_node.get_client_names_and_types_by_node(name, namespace))
    private = f"{namespace.rstrip('/')}/{name}/"
    out: dict[str, dict[str, str]] = {k: {} for k in ENDPOINT_KINDS}

    def actions(endpoints: dict[str, str]) -> dict[str, str]:
        found = {}
        for n, t in endpoints.items():
            if n.endswith("/_action/send_goal"):
                # lockstep_interfaces/action/Navigate_SendGoal -> lockstep_interfaces/action/Navigate
                found[n[: -len("/_action/send_goal")]] = t.rsplit("_SendGoal", 1)[0]
        return found

    out["action"] = actions(services)
    out["action client"] = actions(clients)
    for kind, endpoints in (("publishes", pubs), ("subscribes", subs), ("service", services),
                            ("service client", clients)):
        for n, t in endpoints.items():
            if "/_action/" in n or n in STANDARD_TOPICS:
                continue
            if kind in ("service", "service client") and n.startswith(private) and \
                    n[len(private):] in STANDARD_SERVICES:
                continue
            out[kind][n] = t
    return out


def _call(rclpy_node, srv_type, service: str, request, timeout: float):
    client = rclpy_node.create_client(srv_type, service)
    try:
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"service {service} did not appear within {timeout} s")
            time.sleep(0.05)
        # Parameter queries only, so they may be asked again when a reply is lost (see `answer`).
        return answer(client, request, max(deadline - time.monotonic(), 0.0), f"an answer from {service}",
                      retry_every=RosTestContext.QUERY_RETRY_S)
    finally:
        rclpy_node.destroy_client(client)


def value_text(value) -> str:
    """A ParameterValue as a table writes it (`1.0`, `true`, `""` for the empty string)."""
    t = value.type
    if t == ParameterType.PARAMETER_BOOL:
        return "true" if value.bool_value else "false"
    if t == ParameterType.PARAMETER_INTEGER:
        return str(value.integer_value)
    if t == ParameterType.PARAMETER_DOUBLE:
        return repr(float(value.double_value))
    if t == ParameterType.PARAMETER_STRING:
        return value.string_value if value.string_value else '""'
    return "(not set)" if t == ParameterType.PARAMETER_NOT_SET else str(value)


def parameters(rclpy_node, name: str, namespace: str = "/", timeout: float = 30.0) -> dict[str, tuple]:
    """name -> (type, value text, description) of every parameter the node declares, through its
    list_parameters, describe_parameters and get_parameters services."""
    base = f"{namespace.rstrip('/')}/{name}"
    names = list(_call(rclpy_node, ListParameters, f"{base}/list_parameters",
                       ListParameters.Request(), timeout).result.names)
    described = _call(rclpy_node, DescribeParameters, f"{base}/describe_parameters",
                      DescribeParameters.Request(names=names), timeout).descriptors
    values = _call(rclpy_node, GetParameters, f"{base}/get_parameters",
                   GetParameters.Request(names=names), timeout).values
    return {n: (PARAMETER_TYPES.get(d.type, str(d.type)), value_text(v), d.description)
            for n, d, v in zip(names, described, values)}


# ----- drafting a table from a running node (for a README; the test checks it afterwards) -----
def relative(absolute_name: str, node: str, namespace: str = "/") -> str:
    private = f"{namespace.rstrip('/')}/{node}/"
    if absolute_name.startswith(private):
        return "~/" + absolute_name[len(private):]
    return absolute_name


def draft(rclpy_node, name: str, namespace: str = "/") -> str:
    lines = [f"<!-- interface: {name} -->", "| kind | name | type | notes |", "|---|---|---|---|"]
    found = graph_interface(rclpy_node, name, namespace)
    for kind in ENDPOINT_KINDS:
        for n, t in sorted(found[kind].items()):
            lines.append(f"| {kind} | `{relative(n, name, namespace)}` | `{t}` |  |")
    services = dict(rclpy_node.get_service_names_and_types_by_node(name, namespace))
    if f"{namespace.rstrip('/')}/{name}/list_parameters" in services:  # not every node has parameters
        for n, (t, v, d) in sorted(parameters(rclpy_node, name, namespace).items()):
            if n not in STANDARD_PARAMETERS:
                d = " ".join(d.split()).replace("|", "\\|")
                lines.append(f"| parameter | `{n}` | `{t}`, default `{v}` | {d} |")
    return "\n".join(lines)


def main() -> int:
    """`python3 test/interfaces/interface_support.py <node name>...`: print a draft table of each running node
    (on $ROS_DOMAIN_ID)."""
    import rclpy
    parser = argparse.ArgumentParser()
    parser.add_argument("nodes", nargs="+")
    parser.add_argument("--wait", type=float, default=5.0, help="seconds of discovery before looking")
    args = parser.parse_args()
    rclpy.init()
    node = rclpy.create_node("interface_draft")
    from rclpy.executors import SingleThreadedExecutor
    import threading
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    time.sleep(args.wait)
    for name in args.nodes:
        ns, _, base = name.rpartition("/")
        try:
            print(draft(node, base, ns or "/"))
        except Exception as e:  # noqa: BLE001 - a node not (yet) in the graph
            print(f"{name}: {e}")
        print()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
