"""The fault script (scripts/faults.sh) as part of the suite: the recorder killed with kill -9 at seeded random
moments, a disk filling up, bags cut at every 10 % and files of random bytes through `lockstep bag reindex`.
The script prints a table of outcomes and exits non-zero on any crash, hang or lost message."""

from __future__ import annotations

import os
import subprocess

from lockstep_testing.harness import REPO_ROOT, allocate_domain_id, binary, release_domain_id


def test_recorder_and_reindex_lose_nothing_under_faults() -> None:
    domain = allocate_domain_id()
    env = dict(
        os.environ,
        FAULTS_DOMAIN_ID=str(domain),
        LOCKSTEP_BIN=os.environ.get("LOCKSTEP_BIN") or str(binary("lockstep")),
        LOCKSTEP_LOADGEN=str(binary("lockstep_loadgen")),
    )
    try:
        result = subprocess.run(
            ["bash", str(REPO_ROOT / "scripts/faults.sh")], capture_output=True, text=True, timeout=600, env=env,
        )
    finally:
        release_domain_id(domain)
    print(result.stdout)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    assert "| ok" in result.stdout or " ok " in result.stdout, result.stdout
