#!/usr/bin/env bash
# Simulator step figures: one Simulator::step (20 ms simulated) on the sample
# warehouse with the shipped rules, autonomous (a behaviour evaluation with the per-tick surface decoding)
# and commanded (per-tick decoding, cached while its facts are unchanged). Criterion, then a table of the
# medians; exits non-zero when the autonomous median is 50 us or more (the goal).
#   Usage: sim_step.sh [--goal-us US (50)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
goal_us=50
if [[ "${1:-}" == "--goal-us" ]]; then goal_us="$2"; fi
target="${CARGO_TARGET_DIR:-$repo/target}"
cargo bench -q -p lockstep_sim --bench step >&2
python3 - "$target/criterion/sim_step" "$goal_us" <<'PY'
import json, sys
from pathlib import Path
root, goal = Path(sys.argv[1]), float(sys.argv[2])
print(f"| step (20 ms simulated) | median | mean |\n|---|---|---|")
medians = {}
for name in ("autonomous", "commanded"):
    est = json.loads((root / name / "new" / "estimates.json").read_text())
    medians[name] = est["median"]["point_estimate"] / 1000
    print(f"| {name} | {medians[name]:.2f} us | {est['mean']['point_estimate'] / 1000:.2f} us |")
ok = medians["autonomous"] < goal
print(f"goal: autonomous median < {goal:g} us: {'met' if ok else 'MISSED'}")
sys.exit(0 if ok else 1)
PY
