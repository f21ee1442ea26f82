"""Remote mode against a running `tensorgym serve` with TLS and bearer tokens."""
import os
import subprocess
import time

import grpc
import pytest

import tensorgym
from tensorgym import ServiceError


@pytest.fixture(scope="module")
def secured(tmp_path_factory, binary):
    d = tmp_path_factory.mktemp("tls")
    cert, key, tokens, port_file = d / "cert.pem", d / "key.pem", d / "tokens", d / "port"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                           "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout",
                           str(key), "-out", str(cert)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    tokens.write_text("# one client a line\nalice alice-secret-token-0123456789\n")
    os.chmod(tokens, 0o600)  # the server refuses credentials others could read
    os.chmod(key, 0o600)
    server = subprocess.Popen([binary, "serve", "--port", "0", "--port-file", str(port_file), "--tls-cert", str(cert),
                               "--tls-key", str(key), "--auth-token-file", str(tokens), "--log-level", "warning"])
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert server.poll() is None and time.monotonic() < deadline, "tensorgym serve did not start"
            time.sleep(0.02)
        yield {"address": f"localhost:{int(port_file.read_text())}", "cert": str(cert), "token": "alice-secret-token-0123456789"}
    finally:
        server.terminate()
        server.wait(30)


def test_tls_and_token(secured, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(secured["token"] + "\n")
    env = tensorgym.make("schedule-v0", service=secured["address"], tls=True, tls_ca_file=secured["cert"],
                         auth_token_file=str(token_file))
    try:
        obs, _ = env.reset()
        assert obs.shape == (493,)
        assert "error" not in env.step("split(C.i, 4, io, ii)")[4]
    finally:
        env.close()


def test_a_wrong_token_is_refused(secured):
    with pytest.raises(ServiceError) as e:
        tensorgym.make("schedule-v0", service=secured["address"], tls=True, tls_ca_file=secured["cert"],
                       auth_token="not-the-token")
    assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_tls_server_name_override(secured):
    port = secured["address"].split(":")[1]
    env = tensorgym.make("schedule-v0", service=f"127.0.0.1:{port}", tls=True, tls_ca_file=secured["cert"],
                         tls_server_name="localhost", auth_token=secured["token"])
    env.close()
