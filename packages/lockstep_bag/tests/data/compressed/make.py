"""Writes the rosbag2-compressed test bags in this directory with the Python `rosbags` package (not
our writer): one bag per storage plugin x compression mode, `<storage>_<mode>/`, each holding the
same messages (tests/compressed.rs rebuilds the list): three std_msgs/msg/String topics, /a /b /c,
written c, a, b at every even time and b, c, a at every odd one, so equal timestamps must come out in
write order. Deterministic: run it again and only the timestamps rosbags puts in metadata change.

    python packages/lockstep_bag/tests/data/compressed/make.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

HERE = Path(__file__).resolve().parent
STORE = get_typestore(Stores.ROS2_JAZZY)
STRING = STORE.types["std_msgs/msg/String"]
ROUNDS = 4


def messages() -> list[tuple[str, int, str]]:
    """(topic, log time ns, text) in write order."""
    out = []
    for r in range(ROUNDS):
        t = 1_000_000_000 + r * 2
        for dt, order in ((0, ("/c", "/a", "/b")), (1, ("/b", "/c", "/a"))):
            for topic in order:
                out.append((topic, t + dt, f"{topic} {t + dt} #{len(out)}"))
    return out


def write(path: Path, storage: StoragePlugin, mode: CompressionMode) -> None:
    if path.exists():
        shutil.rmtree(path)
    writer = Writer(path, version=9, storage_plugin=storage)
    writer.set_compression(mode, CompressionFormat.ZSTD)
    with writer:
        conns = {
            t: writer.add_connection(t, "std_msgs/msg/String", typestore=STORE) for t in ("/a", "/b", "/c")
        }
        for topic, t, text in messages():
            writer.write(conns[topic], t, STORE.serialize_cdr(STRING(data=text), STRING.__msgtype__))


def main() -> None:
    for storage, name in ((StoragePlugin.MCAP, "mcap"), (StoragePlugin.SQLITE3, "sqlite3")):
        for mode, mode_name in ((CompressionMode.FILE, "file"), (CompressionMode.MESSAGE, "message")):
            write(HERE / f"{name}_{mode_name}", storage, mode)


if __name__ == "__main__":
    main()
