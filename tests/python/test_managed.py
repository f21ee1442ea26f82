"""Managed mode: the service lives exactly as long as its users, and no longer — not even
when the Python process is killed."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import grpc
import pytest

import tensorgym
from tensorgym import ServiceError


def _gone(pid: int) -> bool:
    """Whether a process has exited (a zombie nobody reaped counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))


def test_close_stops_the_service():
    env = tensorgym.make("schedule-v0")
    pid = env.connection.managed.pid
    env.reset()
    assert not _gone(pid)
    env.close()
    assert _wait_gone(pid)


def test_environments_share_one_managed_service_until_the_last_closes():
    a = tensorgym.make("schedule-v0")
    b = tensorgym.make("memory-v0")
    pid = a.connection.managed.pid
    assert b.connection.managed.pid == pid
    a.close()
    b.reset()
    assert not _gone(pid)
    b.close()
    assert _wait_gone(pid)


def test_exit_without_close_leaves_no_server():
    child = _child("""
        import tensorgym
        env = tensorgym.make("schedule-v0")
        env.reset()
        print(env.connection.managed.pid, flush=True)
    """)
    pid = int(child.stdout.readline())
    assert child.wait(60) == 0
    assert _wait_gone(pid)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_python_process_leaves_no_server(sig):
    child = _child("""
        import time, tensorgym
        env = tensorgym.make("schedule-v0")
        env.reset()
        print(env.connection.managed.pid, flush=True)
        time.sleep(120)
    """)
    pid = int(child.stdout.readline())
    assert not _gone(pid)
    child.send_signal(sig)
    child.wait(30)
    assert _wait_gone(pid), f"tensorgym serve (pid {pid}) outlived its client"


def test_a_server_started_from_a_thread_is_tied_to_the_process():
    child = _child("""
        import threading, time, tensorgym
        box = []
        t = threading.Thread(target=lambda: box.append(tensorgym.ManagedService()))
        t.start(); t.join()
        print(box[0].pid, flush=True)
        time.sleep(120)
    """)
    pid = int(child.stdout.readline())
    time.sleep(0.3)
    assert not _gone(pid)  # the thread ended, the server goes on
    child.kill()
    child.wait(30)
    assert _wait_gone(pid)


def test_a_missing_binary_is_a_clear_error():
    with pytest.raises(ServiceError) as e:
        tensorgym.make("schedule-v0", binary="/nonexistent/tensorgym")
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "/nonexistent/tensorgym" in e.value.message and "TENSORGYM_BINARY" in e.value.message


def test_a_server_that_fails_to_start_is_a_clear_error():
    with pytest.raises(ServiceError) as e:
        tensorgym.ManagedService(args=["--no-such-flag"])
    assert e.value.code == grpc.StatusCode.UNAVAILABLE and "before it was ready" in e.value.message
