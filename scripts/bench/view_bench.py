"""Relay figures of `lockstep view`: messages published by an rclpy process on /bench
(std_msgs/String of a given size at a given rate, each starting with its publish time in ns) reach 1 and 4
Foxglove clients (test/view/client.js: @foxglove/ws-protocol's FoxgloveClient) through `lockstep view`, and
(the baseline, "direct") one rclpy subscriber taking the serialized messages itself with the same QoS. Per
case: messages received per client, the view's CPU over the publishing window, and the latency from publish
to receipt (p50 over the clients' medians, p99 the worst client's). Run by scripts/bench/view.sh."""

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "test/view/client.js"


def bench_qos():
    """The publisher's and the baseline subscriber's QoS (the view adapts its own to the publisher's)."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
    return QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)


def publish(size, rate, seconds):
    """The publisher process: waits for the view's subscription, then publishes on schedule."""
    import rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("view_bench_publisher")
    pub = node.create_publisher(String, "/bench", bench_qos())
    deadline = time.monotonic() + 60
    while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"matched": pub.get_subscription_count()}), flush=True)
    sys.stdin.readline()  # "go": every client has subscribed
    pad = "x" * size
    msg = String()
    start = time.monotonic()
    sent = 0
    print(json.dumps({"start": time.time()}), flush=True)
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        due = int((now - start) * rate) + 1
        while sent < due:
            stamp = str(time.time_ns())
            msg.data = stamp + pad[len(stamp):]
            pub.publish(msg)
            sent += 1
        time.sleep(0.0002)
    print(json.dumps({"sent": sent, "secs": time.monotonic() - start}), flush=True)
    time.sleep(1.0)
    rclpy.shutdown()


def direct():
    """The baseline: an rclpy subscriber taking the serialized messages itself (no view, no WebSocket), same
    QoS. Reads the publish stamp the same way client.js does; prints counts and latency at "stop" on stdin."""
    import rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("view_bench_direct")
    latencies = []

    def got(raw):
        now = time.time_ns()
        digits = raw[8:27].split(b"x")[0]
        latencies.append((now - int(digits)) / 1e6)

    node.create_subscription(String, "/bench", got, bench_qos(), raw=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    while not stop.is_set():
        rclpy.spin_once(node, timeout_sec=0.05)
    ordered = sorted(latencies)
    pct = lambda q: ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else None
    print(json.dumps({"received": len(latencies), "p50": pct(50), "p99": pct(99)}), flush=True)
    rclpy.shutdown()


def case_direct(size, rate, seconds):
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(100, 200)))
    publisher = subprocess.Popen([sys.executable, __file__, "--publish", str(size), str(rate), str(seconds)],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    sub = subprocess.Popen([sys.executable, __file__, "--direct"], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    json.loads(publisher.stdout.readline())  # matched
    publisher.stdin.write("go\n")
    publisher.stdin.flush()
    json.loads(publisher.stdout.readline())  # started
    end_line = json.loads(publisher.stdout.readline())
    publisher.wait(30)
    sub.stdin.write("stop\n")
    sub.stdin.flush()
    result = json.loads(sub.stdout.readline())
    sub.wait(30)
    return {"size": size, "rate": rate, "clients": "direct", "sent": end_line["sent"],
            "offered_rate": end_line["sent"] / end_line["secs"], "received": [result["received"]],
            "cpu_pct": None, "p50_ms": result["p50"] or 0, "p99_ms": result["p99"] or 0}


def cpu_secs(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_listening(port, view, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if view.poll() is not None:
            raise SystemExit(f"lockstep view exited with {view.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"lockstep view did not listen on port {port} within {timeout} s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def case(lockstep, size, rate, clients, seconds):
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(100, 200)))
    port = free_port()
    view = subprocess.Popen([lockstep, "view", "--port", str(port), "--address", "127.0.0.1",
                             "--topics", "/bench", "--discovery-period-secs", "0.2", "--queue", "4096"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    publisher = subprocess.Popen([sys.executable, __file__, "--publish", str(size), str(rate), str(seconds)],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    wait_listening(port, view)
    readers = [subprocess.Popen(["node", str(CLIENT), f"ws://127.0.0.1:{port}", "--subscribe", "/bench",
                                 "--quiet", "--latency", "--max", "1000000000", "--seconds", str(seconds + 30)],
                                stdout=subprocess.PIPE, text=True, cwd=CLIENT.parent) for _ in range(clients)]
    for r in readers:  # the client subscribes as soon as /bench is advertised to it
        while '"topic":"/bench"' not in (line := r.stdout.readline()):
            if not line:
                raise SystemExit("a client exited before /bench was advertised to it")
    json.loads(publisher.stdout.readline())  # the view's subscription matched the publisher
    publisher.stdin.write("go\n")
    publisher.stdin.flush()
    json.loads(publisher.stdout.readline())  # started
    cpu0, t0 = cpu_secs(view.pid), time.monotonic()
    end_line = json.loads(publisher.stdout.readline())
    cpu1, t1 = cpu_secs(view.pid), time.monotonic()
    publisher.wait(30)
    results = []
    for r in readers:
        out, _ = r.communicate(timeout=seconds + 30)
        done = [json.loads(l) for l in out.splitlines() if l.startswith('{"op":"done"')]
        results.append(done[-1] if done else {"counts": {}, "latency_ms": {}})
    view.terminate()
    view.wait(10)
    got = [r["counts"].get("/bench", 0) for r in results]
    p50 = sorted(r["latency_ms"].get("p50") or 0 for r in results)[len(results) // 2]
    p99 = max(r["latency_ms"].get("p99") or 0 for r in results)
    return {"size": size, "rate": rate, "clients": clients, "sent": end_line["sent"],
            "offered_rate": end_line["sent"] / end_line["secs"], "received": got,
            "cpu_pct": 100 * (cpu1 - cpu0) / (t1 - t0), "p50_ms": p50, "p99_ms": p99}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--publish":
        publish(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--direct":
        direct()
        return
    lockstep, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    rows = []
    for size, rate in ((256, 10_000), (1 << 20, 100)):
        for clients in ("direct", 1, 4):
            r = case_direct(size, rate, seconds) if clients == "direct" else case(lockstep, size, rate, clients,
                                                                                 seconds)
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    print("| message | clients | published (rate achieved) | received per client | view CPU (% of one core) "
          "| publish to receipt p50 / p99 |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        size = "256 B" if r["size"] == 256 else "1 MiB"
        print(f"| {size} @ {r['rate']:g}/s | {r['clients']} | {r['sent']} ({r['offered_rate']:.0f}/s) | "
              f"{min(r['received'])}-{max(r['received'])} | "
              f"{'-' if r['cpu_pct'] is None else format(r['cpu_pct'], '.1f')} | "
              f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f} ms |")


if __name__ == "__main__":
    main()
