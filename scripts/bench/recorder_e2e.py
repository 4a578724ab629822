"""End-to-end recorder benchmark over DDS on this machine: a Rust publisher (lockstep_loadgen) sends numbered
messages at a fixed rate, lockstep_recorder records them, then the bag is read back with the Python `mcap`
package and checked for loss and order. Prints messages/s, MB/s, loss and the recorder's CPU use."""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcap.reader import make_reader

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target")) / "release"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def run_case(size: int, rate: float, secs: float, domain: int) -> dict:
    count = int(rate * secs)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / "bag"
        rec = subprocess.Popen([TARGET / "lockstep_recorder", "--ros-args", "-p", f"output:={bag}",
                                "-p", "all_topics:=false", "-p", "topics:=/load"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)
        gen = subprocess.Popen([TARGET / "lockstep_loadgen", "--ros-args", "-p", "topic:=/load",
                                "-p", f"size_bytes:={size}", "-p", f"rate_hz:={rate}", "-p", f"count:={count}"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        # CPU is measured over the publishing window (from the generator's start to its end).
        cpu0, t0 = cpu_secs(rec.pid), time.monotonic()
        out, _ = gen.communicate(timeout=secs * 4 + 60)
        cpu1, t1 = cpu_secs(rec.pid), time.monotonic()
        parts = out.split()
        published, pub_secs = int(parts[1]), float(parts[2])
        # Let the recorder take what DDS still holds for it: stop once it has been idle for a second.
        drain_start = time.monotonic()
        while time.monotonic() - drain_start < 60:
            before = cpu_secs(rec.pid)
            time.sleep(1.0)
            if cpu_secs(rec.pid) - before < 0.05:
                break
        drain_secs = time.monotonic() - t1
        rec.send_signal(signal.SIGINT)
        rec.wait(120)
        indices = []
        for path in sorted(bag.glob("*.mcap")):
            with open(path, "rb") as f:
                for _schema, _channel, message in make_reader(f).iter_messages(log_time_order=False):
                    # CDR: 4-byte encapsulation, layout (dim seq len 4 + data_offset 4), data len 4, data
                    indices.append(int.from_bytes(message.data[16:24], "little"))
        in_order = indices == sorted(indices)
        lost = published - len(set(indices))
        missing = sorted(set(range(published)) - set(indices))
        if missing:
            print(f"{size} B: missing indices {missing[:10]}{' ...' if len(missing) > 10 else ''}")
        bag_bytes = sum(p.stat().st_size for p in bag.glob("*.mcap"))
    return {"size": size, "rate": rate, "published": published, "recorded": len(indices), "lost": lost,
            "in_order": in_order, "msgs_per_s": published / pub_secs,
            "mb_per_s": published * size / pub_secs / 1e6, "cpu_pct": 100 * (cpu1 - cpu0) / (t1 - t0),
            "bag_mb": bag_bytes / 1e6, "drain_secs": drain_secs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=30.0)
    args = ap.parse_args()
    cases = [(256, 10_000.0), (1 << 20, 100.0)]
    rows = [run_case(size, rate, args.secs, 90 + i) for i, (size, rate) in enumerate(cases)]
    print(f"{'payload':>9} {'target/s':>9} {'published':>10} {'recorded':>9} {'lost':>5} {'order':>6} "
          f"{'msg/s':>9} {'MB/s':>7} {'rec CPU%':>9} {'drain s':>8}")
    for r in rows:
        print(f"{r['size']:>9} {r['rate']:>9.0f} {r['published']:>10} {r['recorded']:>9} {r['lost']:>5} "
              f"{'ok' if r['in_order'] else 'NO':>6} {r['msgs_per_s']:>9.0f} {r['mb_per_s']:>7.1f} "
              f"{r['cpu_pct']:>9.1f} {r['drain_secs']:>8.1f}")
    return 0 if all(r["lost"] == 0 and r["in_order"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
