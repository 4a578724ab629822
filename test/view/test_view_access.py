"""`lockstep view` closed by default, against Foxglove's own client (test/view/client.js) and plain sockets: it
listens on this machine only unless `--address` is given; services are called and parameters set only when
allowlisted (a refusal is a status message naming what and why, and the view goes on); with a token, clients
without it are refused at the upgrade; with `--tls-cert`/`--tls-key` it serves wss:// (a self-signed
certificate made here with the openssl command)."""

import shutil
import socket
import ssl
import subprocess

import pytest

from test_view import Client, free_port, start_sim

OPENSSL = shutil.which("openssl")


def start_plain_view(ros, port, *args, env=None):
    """The view with its defaults (no --address), waiting until it listens."""
    view = ros.start("lockstep", "view", "--port", str(port), "--discovery-period-secs", "0.2", *args,
                     name="lockstep_view", env=env)
    ros.wait_until(lambda: "live view on " in view.log(), 60, "the view to listen", proc=view)
    return view


def non_loopback_ipv4():
    """An IPv4 address of this machine other than 127.x, or None."""
    try:
        listed = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        listed = []
    for address in listed:
        if ":" not in address and not address.startswith("127."):
            return address
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            address = s.getsockname()[0]
            return None if address.startswith("127.") else address
    except OSError:
        return None


def answers(client):
    return {a["callId"]: a for a in client.of("serviceCallResponse") + client.of("serviceCallFailure")}


def test_by_default_the_view_listens_on_this_machine_only(ros):
    port = free_port()
    view = start_plain_view(ros, port)
    assert f"live view on ws://127.0.0.1:{port}" in view.log(), view.log()
    client = Client(port, "--seconds", "30")
    ros.wait_until(lambda: client.of("serverInfo"), 30, "the client on 127.0.0.1 to connect", proc=view)
    client.proc.kill()
    address = non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no IPv4 address besides loopback: the refusal from outside is not checked")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, port), timeout=10).close()
    assert view.alive()


def test_by_default_no_service_is_called_and_no_parameter_set_but_reads_work(ros):
    from rcl_interfaces.srv import GetParameters
    start_sim(ros)  # time_scale 2.0
    port = free_port()
    view = start_plain_view(ros, port)
    client = Client(port, "--subscribe", "/odom", "--max", "1000000", "--seconds", "60",
                    "--set-parameter", "/lockstep_sim_node.time_scale=3", "--get-parameters", "",
                    "--call-service", "/lockstep_sim_node/set_destination={\"column\": 2, \"row\": 9}")
    ros.wait_until(lambda: client.of("parameterValues", id="get") and answers(client), 60,
                   "the answers to the parameter requests and the call", proc=view)
    client.proc.kill()
    statuses = client.of("status", level=2)
    messages = " | ".join(s["message"] for s in statuses)
    assert "setParameters refused for `/lockstep_sim_node.time_scale`" in messages, messages
    assert "--allow-parameters" in messages, messages
    assert client.of("parameterValues", id="set")[0]["parameters"] == []
    call = answers(client)[1]
    assert call["op"] == "serviceCallFailure", call
    assert "`/lockstep_sim_node/set_destination` refused" in call["message"], call
    assert "--allow-services" in call["message"] and call["message"] in messages, (call, messages)
    # Reading is open: every parameter of the simulator is listed.
    names = [p["name"] for p in client.of("parameterValues", id="get")[0]["parameters"]]
    assert "/lockstep_sim_node.time_scale" in names, names
    # The simulator kept its value.
    answer = ros.call(GetParameters, "/lockstep_sim_node/get_parameters", GetParameters.Request(names=["time_scale"]))
    assert answer.values[0].double_value == 2.0, answer
    assert view.alive()


def test_allowlisted_services_and_parameters_work_the_others_are_refused(ros):
    from rcl_interfaces.srv import GetParameters
    start_sim(ros)
    port = free_port()
    view = start_plain_view(ros, port, "--allow-services", "/lockstep_sim_node/set_.*",
                            "--allow-parameters", r"/lockstep_sim_node\.time_scale",
                            "--allow-topics", "/odom", "/markers/.*")
    client = Client(port, "--subscribe", "/odom", "--max", "1000000", "--seconds", "60",
                    "--set-parameter", "/lockstep_sim_node.time_scale=3",
                    "--set-parameter", "/lockstep_sim_node.seed=5",
                    "--get-parameters", "/lockstep_sim_node.time_scale",
                    "--call-service", "/lockstep_sim_node/set_destination={\"column\": 17, \"row\": 9}",
                    "--call-service", "/lockstep_sim_node/reload={}")
    ros.wait_until(lambda: client.of("parameterValues", id="get") and len(answers(client)) >= 2, 60,
                   "the answers", proc=view)
    client.proc.kill()
    calls = answers(client)
    assert calls[1]["op"] == "serviceCallResponse" and calls[1]["response"]["success"] is True, calls[1]
    assert calls[2]["op"] == "serviceCallFailure" and "`/lockstep_sim_node/reload` refused" in calls[2]["message"]
    assert "`/lockstep_sim_node/set_.*`" in calls[2]["message"], calls[2]
    messages = " | ".join(s["message"] for s in client.of("status", level=2))
    assert "setParameters refused for `/lockstep_sim_node.seed`" in messages, messages
    answer = ros.call(GetParameters, "/lockstep_sim_node/get_parameters", GetParameters.Request(names=["time_scale"]))
    assert answer.values[0].double_value == 3.0, answer
    # Only the allowed topics are offered.
    topics = {l["topic"] for l in client.of("advertise")}
    assert "/odom" in topics and all(t == "/odom" or t.startswith("/markers/") for t in topics), topics
    assert view.alive()


def test_with_a_token_clients_without_it_are_refused(ros, tmp_path):
    token = "a-token-for-the-test-7f3c"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    port = free_port()
    view = start_plain_view(ros, port, "--token-file", str(token_file))
    with open(f"/proc/{view.popen.pid}/cmdline", "rb") as f:
        assert token.encode() not in f.read(), "the token must not show in ps"
    none = Client(port, "--seconds", "30")
    wrong = Client(port, "--seconds", "30", "--token", "not-the-token")
    wrong_query = Client(port, "--seconds", "30", url=f"ws://127.0.0.1:{port}/?token=nope")
    for refused in (none, wrong, wrong_query):
        refused.wait(60)
        assert refused.of("refused", status=401) and not refused.of("serverInfo"), refused.lines
    assert "Authorization: Bearer" in none.of("refused")[0]["body"], none.lines
    assert wrong.of("refused")[0]["body"] == "wrong token", wrong.lines
    header = Client(port, "--seconds", "30", "--token", token)
    query = Client(port, "--seconds", "30", url=f"ws://127.0.0.1:{port}/?token={token}")
    for accepted in (header, query):
        ros.wait_until(lambda: accepted.of("serverInfo"), 30, "a client with the token to connect", proc=view)
        accepted.proc.kill()
    assert view.alive()


@pytest.mark.skipif(OPENSSL is None, reason="no openssl command to make a self-signed certificate")
def test_with_tls_the_view_serves_wss_with_the_given_certificate(ros, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:FALSE", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    token = "tls-token-42"
    port = free_port()
    view = start_plain_view(ros, port, "--tls-cert", str(cert), "--tls-key", str(key),
                            env={"LOCKSTEP_VIEW_TOKEN": token})
    assert f"live view on wss://127.0.0.1:{port}" in view.log(), view.log()
    # The TLS handshake, checked against the certificate made here.
    context = ssl.create_default_context(cafile=str(cert))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            assert tls.getpeercert()["subject"] == ((("commonName", "localhost"),),)
    # Foxglove's client over wss://, trusting that certificate, with the token from the environment.
    client = Client(port, "--seconds", "30", "--ca", str(cert), url=f"wss://localhost:{port}/?token={token}")
    ros.wait_until(lambda: client.of("serverInfo"), 30, "the wss:// client to connect", proc=view)
    client.proc.kill()
    # A plain ws:// client gets no WebSocket.
    plain = Client(port, "--seconds", "20")
    plain.wait(60)
    assert not plain.of("serverInfo"), plain.lines
    assert view.alive()


def test_a_bad_allowlist_or_certificate_is_refused_at_start(ros, tmp_path):
    port = free_port()
    bad = ros.start("lockstep", "view", "--port", str(port), "--allow-services", "/sim/(", name="bad_regex")
    assert bad.popen.wait(60) != 0
    assert "--allow-services (parameter allow_services) `/sim/(` is not a regular expression" in bad.log(), bad.log()
    missing = tmp_path / "missing.pem"
    bad = ros.start("lockstep", "view", "--port", str(port), "--tls-cert", str(missing), "--tls-key", str(missing),
                    name="bad_cert")
    assert bad.popen.wait(60) != 0
    assert f"--tls-cert {missing}" in bad.log(), bad.log()
