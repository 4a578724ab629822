#!/usr/bin/env bash
# Benchmarks of lockstep_rules, printed as one table: ours vs ascent vs clingo, all from the same run.
#
#   1. behaviour tick: config/rules/surface.dl + behaviour.dl evaluated over one tick's facts (criterion).
#   2. transitive closure of a seeded random graph (10,000 edges, 1,000 nodes).
#   3. same generation on a seeded random tree (4,000 nodes: node c hangs under a node drawn from 0..c).
#   For 2 and 3: ours and ascent (the same rules compiled by the sequential `ascent!` macro, a dev-dependency
#   of the benches) in criterion, and clingo (Python API, ground + solve) on the same program and the same
#   fact file, generated here once. The three must derive the same number of tuples.
#
# Needs the PyPI package `clingo` in the Python named by $LOCKSTEP_PYTHON (default: python3). The project
# venv has it: `source scripts/env.sh && bash scripts/bench/rules.sh`. Elsewhere, e.g.
#   python3 -m venv /tmp/venv-rules && /tmp/venv-rules/bin/pip install clingo
#   LOCKSTEP_PYTHON=/tmp/venv-rules/bin/python bash scripts/bench/rules.sh
# Environment: NODES, EDGES, SEED (graph; SEED also seeds the tree), TREE_NODES (default 4000),
# CLINGO_RUNS (default 3), CARGO_TARGET_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${LOCKSTEP_PYTHON:-python3}"
NODES="${NODES:-1000}"
EDGES="${EDGES:-10000}"
SEED="${SEED:-42}"
TREE_NODES="${TREE_NODES:-4000}"
CLINGO_RUNS="${CLINGO_RUNS:-3}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if ! "$PY" -c 'import clingo' 2>/dev/null; then
    echo "error: '$PY' cannot import clingo; run 'source scripts/env.sh' first, or install it with" >&2
    echo "  python3 -m venv /tmp/venv-rules && /tmp/venv-rules/bin/pip install clingo" >&2
    echo "and run with LOCKSTEP_PYTHON=/tmp/venv-rules/bin/python" >&2
    exit 1
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The same texts are valid input for lockstep rules and (after translate()) clingo; the benches hold copies.
cat > "$WORK/closure.dl" <<'DL'
// Transitive closure.
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
DL
cat > "$WORK/same_generation.dl" <<'DL'
// Same generation: distinct nodes at the same depth of the tree.
sg(X, Y) :- parent(X, P), parent(Y, P), X != Y.
sg(X, Y) :- parent(X, A), sg(A, B), parent(Y, B).
DL

# The fact files are generated once, with a fixed seed, and fed to every engine.
"$PY" - "$NODES" "$EDGES" "$SEED" "$TREE_NODES" "$WORK/edges.dl" "$WORK/tree.dl" <<'PY'
import random, sys
nodes, edges, seed, tree_nodes = (int(a) for a in sys.argv[1:5])
edges_out, tree_out = sys.argv[5], sys.argv[6]
if edges > nodes * nodes:
    sys.exit("more edges than node pairs")
rng = random.Random(seed)
seen = set()
while len(seen) < edges:
    seen.add((rng.randrange(nodes), rng.randrange(nodes)))
with open(edges_out, "w") as f:
    f.writelines(f"edge({a},{b}).\n" for a, b in sorted(seen))
# A random recursive tree: node 0 is the root, node c hangs under a node drawn uniformly from 0..c-1.
rng = random.Random(seed)
with open(tree_out, "w") as f:
    f.writelines(f"parent({c},{rng.randrange(c)}).\n" for c in range(1, tree_nodes))
PY

echo "== criterion (cargo bench -p lockstep_rules) ==" >&2
(cd "$ROOT" && LOCKSTEP_RULES_TC_FACTS="$WORK/edges.dl" LOCKSTEP_RULES_SG_FACTS="$WORK/tree.dl" \
    CARGO_TARGET_DIR="$TARGET" \
    cargo bench -p lockstep_rules --bench tick --bench closure --bench same_generation 2>&1 |
    tee "$WORK/criterion.log" >&2)

"$PY" - "$WORK" "$TARGET" "$EDGES" "$TREE_NODES" "$CLINGO_RUNS" <<'PY'
import json, re, statistics, sys, time
from pathlib import Path
import clingo

work, target = Path(sys.argv[1]), Path(sys.argv[2])
edges, tree_nodes, runs = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def translate(text):
    """lockstep rules syntax -> clingo: `!p(..)` -> `not p(..)`, `//` comments -> `%`.
    Valid for programs over integers and symbols (clingo has no floats)."""
    text = re.sub(r"//", "%", text)
    return re.sub(r"!(?=\s*[a-z])", "not ", text)

def criterion_median(name):
    est = json.loads((target / "criterion" / name / "new" / "estimates.json").read_text())
    return est["median"]["point_estimate"] * 1e-9  # seconds

def clingo_run(program_file, facts_file, predicate):
    """Median ground + solve time over `runs` runs (parsing excluded), and the number of `predicate` atoms."""
    program = translate((work / program_file).read_text())
    facts = (work / facts_file).read_text()
    times, load_times, count = [], [], None
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
            count = sum(1 for _ in ctl.symbolic_atoms.by_signature(predicate, 2))
    return statistics.median(times), statistics.median(load_times), count

log = (work / "criterion.log").read_text()
def counts(pattern):
    m = re.search(pattern, log)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)

tc_ours_n, tc_ascent_n = counts(r"closure: \d+ edges, (\d+) path tuples \(ascent: (\d+)\)")
sg_ours_n, sg_ascent_n = counts(r"same_generation: \d+ parent facts, (\d+) sg tuples \(ascent: (\d+)\)")
tick = criterion_median("behaviour_tick")
tc_ours, tc_ascent = criterion_median("closure/ours"), criterion_median("closure/ascent")
sg_ours, sg_ascent = criterion_median("same_generation/ours"), criterion_median("same_generation/ascent")
tc_clingo, tc_parse, tc_clingo_n = clingo_run("closure.dl", "edges.dl", "path")
sg_clingo, sg_parse, sg_clingo_n = clingo_run("same_generation.dl", "tree.dl", "sg")

def fmt(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"

print()
print(f"lockstep_rules vs ascent 0.8 (sequential ascent!) vs clingo {clingo.__version__} "
      f"(criterion medians; clingo median of {runs} runs)")
print(f"{'benchmark':<44} {'ours':>10} {'ascent':>10} {'clingo':>10} {'ascent/ours':>12} {'clingo/ours':>12}")
print(f"{'behaviour tick (surface.dl + behaviour.dl)':<44} {fmt(tick):>10} {'n/a':>10} {'n/a':>10} {'':>12} {'':>12}")
rows = [
    (f"transitive closure ({edges} edges)", tc_ours, tc_ascent, tc_clingo),
    (f"same generation (tree, {tree_nodes} nodes)", sg_ours, sg_ascent, sg_clingo),
]
for label, ours, ascent, clingo_s in rows:
    print(f"{label:<44} {fmt(ours):>10} {fmt(ascent):>10} {fmt(clingo_s):>10} "
          f"{ascent / ours:>11.2f}x {clingo_s / ours:>11.2f}x")
print()
ok = True
for what, ours_n, ascent_n, clingo_n in [
    ("path", tc_ours_n, tc_ascent_n, tc_clingo_n),
    ("sg", sg_ours_n, sg_ascent_n, sg_clingo_n),
]:
    same = ours_n is not None and ours_n == ascent_n == clingo_n
    ok &= same
    print(f"{what} tuples: ours {ours_n}, ascent {ascent_n}, clingo {clingo_n}" + ("" if same else "  MISMATCH"))
print("ratios above 1 mean ours is faster")
print(f"ours and ascent: assert facts + evaluate (criterion; ascent builds its program struct, runs, drops it); "
      f"clingo: ground + solve, parsing excluded (parse {fmt(tc_parse)} closure, {fmt(sg_parse)} same generation)")
print("behaviour tick goal: < 50 µs; clingo has no floats, so it does not run the behaviour rules")
if not ok:
    sys.exit(1)
PY
