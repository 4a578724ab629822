#!/usr/bin/env bash
# Benchmarks of lockstep_rules, printed as a table: ours vs clingo.
#
#   1. behaviour tick: config/rules/surface.dl + behaviour.dl evaluated over one tick's facts (criterion).
#   2. transitive closure of a seeded random graph (10,000 edges, 1,000 nodes): ours (criterion) and clingo
#      (Python API, ground + solve) on the same program and the same edge file, generated here once.
#
# Needs the PyPI package `clingo` in the Python named by $LOCKSTEP_PYTHON (default: python3), e.g.
#   python3 -m venv /tmp/venv-rules && /tmp/venv-rules/bin/pip install clingo
#   LOCKSTEP_PYTHON=/tmp/venv-rules/bin/python bash scripts/bench/rules.sh
# Environment: NODES, EDGES, SEED (graph), CLINGO_RUNS (default 3), CARGO_TARGET_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${LOCKSTEP_PYTHON:-python3}"
NODES="${NODES:-1000}"
EDGES="${EDGES:-10000}"
SEED="${SEED:-42}"
CLINGO_RUNS="${CLINGO_RUNS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if ! "$PY" -c 'import clingo' 2>/dev/null; then
    echo "error: '$PY' cannot import clingo; install it with" >&2
    echo "  python3 -m venv /tmp/venv-rules && /tmp/venv-rules/bin/pip install clingo" >&2
    echo "and run with LOCKSTEP_PYTHON=/tmp/venv-rules/bin/python" >&2
    exit 1
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/closure.dl" <<'DL'
// Transitive closure: the same text is valid input for lockstep rules and (after translate()) clingo.
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
DL

# The edge file is generated once, with a fixed seed, and fed to both engines.
"$PY" - "$NODES" "$EDGES" "$SEED" "$WORK/edges.dl" <<'PY'
import random, sys
nodes, edges, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if edges > nodes * nodes:
    sys.exit("more edges than node pairs")
rng = random.Random(seed)
seen = set()
while len(seen) < edges:
    seen.add((rng.randrange(nodes), rng.randrange(nodes)))
with open(out, "w") as f:
    f.writelines(f"edge({a},{b}).\n" for a, b in sorted(seen))
PY

echo "== criterion (cargo bench -p lockstep_rules) ==" >&2
(cd "$ROOT" && LOCKSTEP_RULES_TC_FACTS="$WORK/edges.dl" CARGO_TARGET_DIR="$TARGET" \
    cargo bench -p lockstep_rules --bench tick --bench closure 2>&1 | tee "$WORK/criterion.log" >&2)

"$PY" - "$WORK" "$TARGET" "$EDGES" "$CLINGO_RUNS" <<'PY'
import json, re, statistics, sys, time
from pathlib import Path
import clingo

work, target, edges, runs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def translate(text):
    """lockstep rules syntax -> clingo: `!p(..)` -> `not p(..)`, `//` comments -> `%`.
    Valid for programs over integers and symbols (clingo has no floats)."""
    text = re.sub(r"//", "%", text)
    return re.sub(r"!(?=\s*[a-z])", "not ", text)

def criterion_median(name):
    est = json.loads((target / "criterion" / name / "new" / "estimates.json").read_text())
    return est["median"]["point_estimate"] * 1e-9  # seconds

log = (work / "criterion.log").read_text()
m = re.search(r"closure: (\d+) edges, (\d+) path tuples", log)
ours_paths = int(m.group(2)) if m else None
tick = criterion_median("behaviour_tick")
ours_tc = criterion_median(f"closure/{edges}_edges")

program = translate((work / "closure.dl").read_text())
facts = (work / "edges.dl").read_text()
times, load_times, clingo_paths = [], [], None
for i in range(runs):
    t0 = time.perf_counter()
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], program)
    ctl.add("base", [], facts)
    t1 = time.perf_counter()
    ctl.ground([("base", [])])
    ctl.solve()
    t2 = time.perf_counter()
    load_times.append(t1 - t0)
    times.append(t2 - t1)
    if i == 0:
        clingo_paths = sum(1 for _ in ctl.symbolic_atoms.by_signature("path", 2))
clingo_tc = statistics.median(times)

def fmt(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"

print()
print(f"lockstep_rules vs clingo {clingo.__version__} (median; clingo over {runs} runs)")
print(f"{'benchmark':<44} {'ours':>12} {'clingo':>12} {'speed-up':>9}")
print(f"{'behaviour tick (surface.dl + behaviour.dl)':<44} {fmt(tick):>12} {'n/a':>12} {'':>9}")
label = f"transitive closure ({edges} edges)"
print(f"{label:<44} {fmt(ours_tc):>12} {fmt(clingo_tc):>12} {clingo_tc / ours_tc:>8.1f}x")
print()
print(f"path tuples: ours {ours_paths}, clingo {clingo_paths}" + ("" if ours_paths == clingo_paths else "  MISMATCH"))
print(f"ours: assert facts + evaluate (criterion); clingo: ground + solve, parsing excluded "
      f"(parse {fmt(statistics.median(load_times))})")
print("behaviour tick goal: < 50 µs; clingo has no floats, so it does not run the behaviour rules")
if ours_paths != clingo_paths:
    sys.exit(1)
PY
