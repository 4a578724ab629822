"""A corpus of short pipeline recordings for `lockstep test`: bag directories run_1 .. run_N of the example
pipeline (m1, m2, m3 with m3's hold = test_pipeline.HOLD), recorded by lockstep_recorder as
test/trace/test_pipeline_recording.py records them. Each recording runs the sensors for a different number of
ticks, so the recordings differ in length (and, the modules running on their own timers, in content)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trace"))

from test_pipeline import HOLD  # noqa: E402,F401  (re-exported: the hold the corpus was recorded with)
from test_pipeline_recording import record_pipeline  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
# The modules of the corpus, as the suites start them: the example pipeline in step mode.
REPLAY_LAUNCH = REPO_ROOT / "launch" / "replay_system.launch.xml"
FIRST_TICKS, TICKS_STEP = 20, 4  # run_1 has 20 sensor ticks (0.4 s of sensor data), run_2 24, ...
_CORPORA: dict[int, list[Path]] = {}


def ticks_of(index: int) -> int:
    """Sensor ticks of run_<index> (1-based)."""
    return FIRST_TICKS + TICKS_STEP * (index - 1)


def message_counts(bag: Path) -> dict[str, int]:
    """topic -> messages, from the bag's metadata.yaml."""
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}


def make_corpus(ros, root: Path, count: int = 6) -> list[Path]:
    """Records `count` pipeline runs into `root/run_1` .. `root/run_<count>` on `ros`'s domain, one after the
    other (each starts and stops its own recorder and modules); returns the bag directories. Each one's
    recording time is printed (pytest shows it with -s or on failure)."""
    root.mkdir(parents=True, exist_ok=True)
    bags = []
    for i in range(1, count + 1):
        bag = root / f"run_{i}"
        start = time.monotonic()
        record_pipeline(ros, bag, ticks=ticks_of(i))
        print(f"corpus: {bag.name} ({ticks_of(i)} ticks) recorded in {time.monotonic() - start:.1f} s")
        bags.append(bag)
    # The recordings differ: each holds the sensor messages of its own number of ticks.
    scans = [message_counts(b)["/scan_front"] for b in bags]
    assert len(set(scans)) == len(scans), f"recordings of equal length: /scan_front counts {scans}"
    return bags


def shared_corpus(ros, tmp_path_factory, count: int = 6) -> list[Path]:
    """A corpus of `count` recordings shared by the tests of one pytest worker (recorded by the first test
    that asks for that many, on its domain)."""
    if count not in _CORPORA:
        _CORPORA[count] = make_corpus(ros, tmp_path_factory.mktemp(f"lockstep_corpus_{count}"), count)
    return _CORPORA[count]
