"""`lockstep bag record` as a user types it: rosbag2's flag names, the recorder node in the process, Ctrl-C
finishes the bag, and the bag is read back by the Python `rosbags` and `mcap` packages. Also `lockstep
completions`."""

import os
import shutil
import subprocess

from mcap.reader import make_reader
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from std_msgs.msg import String

from lockstep_interfaces.msg import RecorderStatus
from lockstep_testing.harness import binary, reliable

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
WAIT_SECS = 120


def test_record_named_topics_with_zstd_until_ctrl_c(ros, tmp_path):
    chatter = ros.publisher(String, "/chatter", reliable())
    other = ros.publisher(String, "/other", reliable())
    bag = tmp_path / "run1"
    status = ros.collect(RecorderStatus, "/lockstep_recorder/status")
    proc = ros.start("lockstep", "bag", "record", "/chatter", "-o", str(bag), "--compression-format", "zstd",
                     "-d", "3600", name="bag_record")
    ros.wait_for_matched(chatter, timeout=WAIT_SECS)
    for i in range(50):
        chatter.publish(String(data=f"hello {i}"))
        other.publish(String(data=f"not recorded {i}"))
    ros.wait_until(lambda: status and status[-1].total_messages == 50, WAIT_SECS, "50 messages recorded", proc)
    assert proc.stop(timeout=60) == 0, proc.log()
    log = proc.log()
    assert f"{bag}: 1 topics, 50 messages" in log, log
    with Reader(bag) as reader:
        assert [c.topic for c in reader.connections] == ["/chatter"]
        data = [TYPESTORE.deserialize_cdr(raw, conn.msgtype).data for conn, _, raw in reader.messages()]
    assert data == [f"hello {i}" for i in range(50)]
    files = sorted(bag.glob("*.mcap"))
    with open(files[0], "rb") as f:
        chunks = list(make_reader(f).get_summary().chunk_indexes)
    assert chunks and {c.compression for c in chunks} == {"zstd"}, chunks


def run_lockstep(*args, cwd):
    return subprocess.run([str(binary("lockstep")), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=WAIT_SECS)


def test_nothing_to_record_or_an_existing_bag_is_refused_and_nothing_is_touched(tmp_path):
    done = run_lockstep("bag", "record", cwd=tmp_path)
    assert done.returncode == 2, done
    assert "required" in done.stderr and "--all" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []

    existing = tmp_path / "old"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    done = run_lockstep("bag", "record", "-a", "-o", str(existing), cwd=tmp_path)
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "exists already" in lines[0], done.stderr
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]
    assert (existing / "keep.txt").read_text() == "mine"


def test_completions_for_bash_zsh_and_fish(tmp_path):
    for shell in ("bash", "zsh", "fish"):
        done = run_lockstep("completions", shell, cwd=tmp_path)
        assert done.returncode == 0, done
        for word in ("record", "max-bag-size", "exclude-regex", "calibrate", "replay"):
            assert word in done.stdout, (shell, word)
    script = tmp_path / "lockstep.bash"
    script.write_text(run_lockstep("completions", "bash", cwd=tmp_path).stdout)
    # bash completes `lockstep bag rec<TAB>` to `record` with the generated script.
    probe = (f"source {script}; COMP_WORDS=(lockstep bag rec); COMP_CWORD=2; COMP_LINE='lockstep bag rec'; "
             "COMP_POINT=${#COMP_LINE}; _lockstep lockstep rec bag; printf '%s\\n' \"${COMPREPLY[@]}\"")
    bash = shutil.which("bash")
    done = subprocess.run([bash, "-c", probe], capture_output=True, text=True, timeout=WAIT_SECS,
                          env=dict(os.environ))
    assert done.stdout.split() == ["record"], done
