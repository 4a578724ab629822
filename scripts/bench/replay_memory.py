"""Peak memory of `lockstep replay --in-process` against the payload a recording holds.

For each size asked (GB of image payload), records the example pipeline (m1, m2, m3 with rclpy's sensors,
under lockstep_recorder, as test/trace/test_pipeline_recording.py records it) for as long as a camera at
30 Hz takes to send that payload in sensor_msgs/Image of 1 MiB (1024 x 1024 mono8, every image different;
1 GB: about 32 s), with the camera's images beside it in the bag. Then replays the recording in-process
and prints, per size, the payload, the bag's size, the peak resident memory of the replay (the kernel's
maximum RSS of the process) and its wall time.

The images are written after the recording, at 30 Hz over the recording's time span, into a storage file
of their own added to the bag (a split bag, as rosbag2 writes when a bag exceeds its size limit): at
30 MiB/s over DDS, a loaded 2-core machine drops pipeline inputs while recording. `--live-camera` records
them over DDS instead, from a camera process (`python3 replay_memory.py camera --count N`).

Run by scripts/bench/replay_memory.sh; `--keep DIR` keeps the recordings, `--bag DIR` measures an existing
recording instead of recording one."""

import argparse
import array
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "test"), str(REPO / "test" / "trace")]

IMAGE_SIDE = 1024  # mono8: 1 MiB per image
RATE_HZ = 30.0
CAMERA_TOPIC = "/camera/image"
GB = 1e9


def camera(rate_hz: float, count: int) -> None:
    """Publishes `count` different 1 MiB images at `rate_hz` (paced by the clock) from when a subscriber
    (the recorder) matched, then waits to be ended."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node("bench_camera")
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
    pub = node.create_publisher(Image, CAMERA_TOPIC, qos)
    pixels = array.array("B", os.urandom(IMAGE_SIDE * IMAGE_SIDE))
    msg = Image(height=IMAGE_SIDE, width=IMAGE_SIDE, encoding="mono8", step=IMAGE_SIDE)
    # Start once the recorder subscribed, so that every image is recorded.
    while rclpy.ok() and pub.get_subscription_count() == 0:
        time.sleep(0.05)
    start = time.monotonic()
    for n in range(count):
        if not rclpy.ok():
            return
        # Every image differs (its first 8 bytes count), so no two share a payload digest.
        pixels[0:8] = array.array("B", n.to_bytes(8, "little"))
        msg.data = pixels
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
        msg.header.frame_id = "camera"
        pub.publish(msg)
        time.sleep(max(0.0, start + (n + 1) / rate_hz - time.monotonic()))
    print(f"camera: published {count} images", flush=True)
    # rclpy's signal handlers shut the context down on SIGINT or SIGTERM.
    while rclpy.ok():
        time.sleep(0.1)
    node.destroy_node()


def image_definition() -> bytes:
    """sensor_msgs/msg/Image's ros2msg definition with its dependencies, from the installed .msg files."""
    import sensor_msgs

    share = Path(sensor_msgs.__file__).resolve().parents[4] / "share"
    text = (share / "sensor_msgs/msg/Image.msg").read_text()
    for dep in ("std_msgs/msg/Header", "builtin_interfaces/msg/Time"):
        pkg, _, name = dep.split("/")
        text += "\n" + "=" * 80 + f"\nMSG: {pkg}/{name}\n" + (share / pkg / "msg" / f"{name}.msg").read_text()
    return text.encode()


def add_images(bag: Path, count: int, rate_hz: float = RATE_HZ) -> None:
    """Adds `count` different 1 MiB images at `rate_hz` from the bag's first message on, in a storage file of
    their own (chunks of 768 KiB, uncompressed, as the recorder writes), listed in metadata.yaml."""
    import yaml
    from mcap.writer import CompressionType, Writer
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Image

    md_path = bag / "metadata.yaml"
    md = yaml.safe_load(md_path.read_text())
    info = md["rosbag2_bagfile_information"]
    start = info["starting_time"]["nanoseconds_since_epoch"]
    name = f"{bag.name}_camera.mcap"
    pixels = array.array("B", os.urandom(IMAGE_SIDE * IMAGE_SIDE))
    msg = Image(height=IMAGE_SIDE, width=IMAGE_SIDE, encoding="mono8", step=IMAGE_SIDE)
    msg.header.frame_id = "camera"
    times = [start + round(n * 1e9 / rate_hz) for n in range(count)]
    with open(bag / name, "wb") as f:
        writer = Writer(f, chunk_size=768 * 1024, compression=CompressionType.NONE)
        writer.start(profile="ros2", library="scripts/bench/replay_memory.py")
        schema = writer.register_schema(name="sensor_msgs/msg/Image", encoding="ros2msg", data=image_definition())
        channel = writer.register_channel(topic=CAMERA_TOPIC, message_encoding="cdr", schema_id=schema,
                                          metadata={"offered_qos_profiles": "", "topic_type_hash": ""})
        for n, t in enumerate(times):
            pixels[0:8] = array.array("B", n.to_bytes(8, "little"))
            msg.data = pixels
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t, 1_000_000_000)
            writer.add_message(channel, log_time=t, publish_time=t, data=serialize_message(msg), sequence=n)
        writer.finish()
    info["relative_file_paths"].append(name)
    info["files"].append({"path": name, "starting_time": {"nanoseconds_since_epoch": times[0]},
                          "duration": {"nanoseconds": times[-1] - times[0]}, "message_count": count})
    info["topics_with_message_count"].append({
        "topic_metadata": {"name": CAMERA_TOPIC, "type": "sensor_msgs/msg/Image", "serialization_format": "cdr",
                           "offered_qos_profiles": [], "type_description_hash": ""},
        "message_count": count})
    info["message_count"] += count
    end = max(start + info["duration"]["nanoseconds"], times[-1])
    info["duration"]["nanoseconds"] = end - start
    md_path.write_text(yaml.safe_dump(md, sort_keys=False))


def recorded_images(bag: Path) -> int:
    """Images in the bag, from its metadata.yaml."""
    import yaml

    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return sum(t["message_count"] for t in info["topics_with_message_count"]
               if t["topic_metadata"]["name"] == CAMERA_TOPIC)


def record(bag: Path, payload_gb: float, live_camera: bool, ticks: int | None) -> None:
    """Records the pipeline for as long as the camera takes to send `payload_gb` of images at 30 Hz (or for
    `ticks` sensor ticks, the images then spread evenly over them), with the images beside it: added after
    the recording, or with `live_camera` published over DDS and recorded."""
    from lockstep_testing.harness import RosTestContext, allocate_domain_id
    from test_pipeline import TICK_S
    from test_pipeline_recording import record_pipeline

    images = max(1, math.ceil(payload_gb * GB / (IMAGE_SIDE * IMAGE_SIDE)))
    seconds = images / RATE_HZ
    ticks = ticks or math.ceil(seconds / TICK_S) + 10
    ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=bag.parent)
    cam = None
    try:
        if live_camera:
            cam = subprocess.Popen([sys.executable, __file__, "camera", "--count", str(images)], env=ros.env,
                                   stdout=open(bag.parent / "camera.log", "w"), stderr=subprocess.STDOUT)
        print(f"  recording {ticks} sensor ticks ({ticks * TICK_S:.0f} s) with {images} images of 1 MiB ...",
              flush=True)
        record_pipeline(ros, bag, ticks=ticks)
    finally:
        if cam is not None:
            cam.terminate()
            try:
                cam.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cam.kill()
                cam.wait()
        ros.close(print_logs=False)
    if not live_camera:
        add_images(bag, images, max(RATE_HZ, images / (ticks * TICK_S)))


def replay(bag: Path, out: Path) -> tuple[int, float]:
    """Runs `lockstep replay BAG --output OUT --in-process`; returns (peak RSS in bytes, wall seconds)."""
    argv = [os.environ["LOCKSTEP_BIN"], "replay", str(bag), "--output", str(out), "--in-process", "--quiet"]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait4 gives this child's own resource usage (ru_maxrss: its peak RSS, in KiB on Linux).
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"lockstep replay {bag} failed ({proc.returncode}):\n{err}")
    return usage.ru_maxrss * 1024, seconds


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "camera":
        parser = argparse.ArgumentParser(description="the benchmark's camera")
        parser.add_argument("camera")
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--rate", type=float, default=RATE_HZ)
        args = parser.parse_args()
        camera(args.rate, args.count)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=float, default=[0.1],
                        help="GB of image payload to record, one run each (default 0.1; e.g. 0.1 1 4)")
    parser.add_argument("--live-camera", action="store_true",
                        help="publish the images over DDS while recording (needs an unloaded machine)")
    parser.add_argument("--ticks", type=int,
                        help="record this many sensor ticks (20 ms each) and spread the images over them, instead "
                        "of recording as long as 30 Hz takes (a loaded machine drops inputs in long recordings)")
    parser.add_argument("--keep", type=Path, help="keep the recordings and outputs under this directory")
    parser.add_argument("--bag", type=Path, action="append", default=[],
                        help="measure this existing recording (repeatable) instead of recording")
    args = parser.parse_args()
    os.environ.setdefault("LOCKSTEP_PROFILE", "release")
    from lockstep_testing.harness import binary
    os.environ.setdefault("LOCKSTEP_BIN", str(binary("lockstep")))

    work = args.keep or Path(tempfile.mkdtemp(prefix="replay_memory_"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        jobs = [(bag, None) for bag in args.bag] + [(None, gb) for gb in args.sizes if not args.bag]
        for i, (bag, gb) in enumerate(jobs):
            if bag is None:
                run_dir = work / f"run{i}_{gb:g}GB"
                if run_dir.exists():
                    shutil.rmtree(run_dir)
                run_dir.mkdir(parents=True)
                bag = run_dir / "bag"
                print(f"{gb:g} GB of payload:", flush=True)
                record(bag, gb, args.live_camera, args.ticks)
            out = bag.parent / f"{bag.name}_replayed"
            if out.exists():
                shutil.rmtree(out)
            payload = recorded_images(bag) * IMAGE_SIDE * IMAGE_SIDE
            size = sum(f.stat().st_size for f in bag.iterdir())
            rss, seconds = replay(bag, out)
            rows.append((payload, size, rss, seconds))
            print(f"  replayed: payload {payload / GB:.2f} GB, peak RSS {rss / 1e6:.0f} MB, {seconds:.1f} s",
                  flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nlockstep replay --in-process ({os.environ['LOCKSTEP_PROFILE']} build)")
    print(f"{'payload GB':>10} {'bag GB':>8} {'peak RSS MB':>12} {'seconds':>8}")
    for payload, size, rss, seconds in rows:
        print(f"{payload / GB:>10.2f} {size / GB:>8.2f} {rss / 1e6:>12.0f} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
