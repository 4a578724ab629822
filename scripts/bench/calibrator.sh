#!/usr/bin/env bash
# Calibrator figures, two benches on simulated drives:
# 1. heldout: 20 drives of new random scripts with the simulator's centripetal slip and 20 with its lateral
#    slip (a model the calibrator was not written from), ours next to a naive windowed baseline on the same
#    data; goal: radius and track width within 0.1 %, delay within 10 ms, beta's truth within 2 sigma on
#    19 of 20, a better median than the baseline on every parameter, every online step under 50 ms.
# 2. accuracy: the long mixed drive at two SLAM noise levels next to the closed-form least squares of
#    Censi et al. 2013 and the Cramer-Rao bound (skip with --goal-only).
# Prints markdown tables; exits non-zero when a goal is missed (both benches still run).
#   Usage: calibrator.sh [--drives N (20)] [--goal-only] [accuracy options: --seeds N --secs S ...]
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
drives=20
goal_only=0
rest=()
while [ $# -gt 0 ]; do
    case "$1" in
        --drives) drives="$2"; shift 2 ;;
        --goal-only) goal_only=1; shift ;;
        *) rest+=("$1"); shift ;;
    esac
done
cargo bench -q -p lockstep_calibrator --bench heldout --bench accuracy --no-run || exit 1
status=0
cargo bench -q -p lockstep_calibrator --bench heldout -- --drives "$drives" || status=$?
if [ "$goal_only" = 0 ]; then
    cargo bench -q -p lockstep_calibrator --bench accuracy -- "${rest[@]}" || status=$?
fi
if [ "$status" != 0 ]; then
    echo "calibrator.sh: a goal was missed (or a bench failed: exit status $status)" >&2
fi
exit "$status"
