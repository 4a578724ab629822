"""Drive the r2r end-to-end fixture from rclpy and print what happened (used by scripts/demo.sh)."""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

from builtin_interfaces.msg import Time  # noqa: E402

from lockstep_interfaces.action import Countdown  # noqa: E402
from lockstep_interfaces.msg import DependencyHeader  # noqa: E402
from lockstep_interfaces.srv import GetTopology  # noqa: E402
from lockstep_testing.harness import RosTestContext, allocate_domain_id  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as logs:
        ros = RosTestContext(domain_id=allocate_domain_id(), log_dir=Path(logs))
        ok = False
        try:
            ros.start("lockstep_e2e_fixture", params={"sequence_offset": 1000, "module_name": "demo_module"})
            ros.wait_for_subscriber("/e2e/in")
            echoed = ros.collect(DependencyHeader, "/e2e/out")
            pub = ros.publisher(DependencyHeader, "/e2e/in")
            probe = DependencyHeader(module_name="rclpy", channel_name="/e2e/in", sequence_num=7,
                                     start_stamp=Time(sec=int(time.time())))
            ros.wait_until(lambda: pub.publish(probe) or echoed, 15, "the echo")
            out = echoed[0]
            print(f"topic:   rclpy sent header seq 7 on /e2e/in; r2r answered on /e2e/out with module "
                  f"'{out.module_name}', seq {out.sequence_num}, input {out.inputs[0].channel_name}"
                  f"#{out.inputs[0].sequence_num}")
            topo = ros.call(GetTopology, "/e2e/get_topology", GetTopology.Request())
            comp = topo.topology.components[0]
            print(f"service: /e2e/get_topology -> {comp.module_name}: reads {list(comp.reader_channels)}, "
                  f"writes {list(comp.writer_channels)}")
            client = ros.action_client(Countdown, "/e2e/countdown")
            feedback = []
            handle = ros.send_goal(client, Countdown.Goal(start=3, step_period_secs=0.1), feedback)
            result = ros.result(handle)
            print(f"action:  /e2e/countdown start=3 -> feedback {[f.remaining for f in feedback]}, "
                  f"steps_done={result.result.steps_done}, status={result.status} (4 = succeeded)")
            ok = out.sequence_num == 1007 and result.result.steps_done == 3
        finally:
            ros.close(print_logs=not ok)
        print("end-to-end proof:", "OK" if ok else "FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
