#!/usr/bin/env bash
# Calibrator figures: accuracy of the online calibrator over seeded simulated runs
# at two SLAM noise levels (2 cm / 0.5 deg, 5 cm / 1.5 deg), next to the closed-form least-squares baseline
# of Censi et al. 2013 on the same data and the Cramer-Rao bound; fit time per 3 s window (goal < 50 ms).
# Prints markdown tables; exits non-zero when a window fit takes 50 ms or more.
#   Usage: calibrator.sh [--seeds N (20)] [--secs S (150)] [--straight-seeds N (5)] [--fit-goal-ms MS (50)]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../env-local.sh
source scripts/env-local.sh
cargo bench -q -p lockstep_calibrator --bench accuracy --no-run
if cargo bench -q -p lockstep_calibrator --bench accuracy -- "$@"; then
    exit 0
else
    status=$?
    echo "calibrator.sh: the fit-time goal was missed (or the bench failed: exit status $status)" >&2
    exit "$status"
fi
