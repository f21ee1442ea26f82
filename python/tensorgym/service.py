"""Managed mode: a `tensorgym serve` child process that lives as long as its users.

The child gets --parent-pid: it exits when it finds itself orphaned, so a Python process
killed with SIGKILL leaves no server. (No preexec_fn for PR_SET_PDEATHSIG: it makes
subprocess fork for real in a process with gRPC threads, whose fork handlers can abort
the child before it execs.) Stopped when the last user releases it, and at interpreter
exit.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import ServiceError, ServiceUnavailable

import grpc


def find_binary(binary: Optional[str] = None) -> str:
    """The `tensorgym` executable: `binary`, else $TENSORGYM_BINARY, else the one of the
    build this package sits in (build/bin/tensorgym), else `tensorgym` on PATH."""
    candidates = []
    if binary:
        candidates.append(binary)
    else:
        if os.environ.get("TENSORGYM_BINARY"):
            candidates.append(os.environ["TENSORGYM_BINARY"])
        here = os.path.dirname(os.path.abspath(__file__))
        repo = os.path.dirname(os.path.dirname(here))
        candidates.append(os.path.join(repo, "build", "bin", "tensorgym"))
        # The virtual environment scripts/setup makes lives in build/venv.
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "..", "bin", "tensorgym"))
        on_path = shutil.which("tensorgym")
        if on_path:
            candidates.append(on_path)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise ServiceError(grpc.StatusCode.NOT_FOUND,
                       "cannot find the tensorgym executable to start the service"
                       + (f" ({binary})" if binary else "")
                       + "; build it (scripts/setup), pass binary=, or set $TENSORGYM_BINARY")


class ManagedService:
    """One `tensorgym serve --host 127.0.0.1 --port 0` child process.

    `address` is "127.0.0.1:PORT". `restart()` starts a new one after it died; each start
    increments `generation`. With `keep_alive`, a watcher thread restarts it on the same
    port as soon as it exits, so clients in other processes that reach it by address
    (vector env workers, Ray actors) reconnect to it and replay their episodes."""

    def __init__(self, binary: Optional[str] = None, args: Sequence[str] = (), startup_timeout_s: float = 30.0,
                 keep_alive: bool = False):
        self.binary = find_binary(binary)
        self.args = list(args)
        self.startup_timeout_s = startup_timeout_s
        self.generation = 0
        self.process: Optional[subprocess.Popen] = None
        self.address = ""
        self._lock = threading.Lock()
        self._owner = os.getpid()  # a forked child must never stop its parent's server
        self._closed = threading.Event()
        self._start()
        _live.add(self)
        self._watcher = None
        if keep_alive:
            self._watcher = threading.Thread(target=self._watch, name="tensorgym-service-watcher", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while not self._closed.wait(0.05):
            with self._lock:
                if self._closed.is_set() or self.alive():
                    continue
                port = int(self.address.rsplit(":", 1)[1])
                try:
                    self._start(port)
                except ServiceError:
                    try:
                        self._start(0)  # the port was taken meanwhile
                    except ServiceError:
                        pass  # tried again on the next tick

    @property
    def pid(self) -> int:
        return self.process.pid if self.process else 0

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _start(self, port: int = 0) -> None:
        tmp = tempfile.mkdtemp(prefix="tensorgym-client-")
        port_file = os.path.join(tmp, "port")
        # Quiet unless asked: the service's info lines would interleave with the trainer's.
        level = [] if "--log-level" in self.args else ["--log-level", "warning"]
        argv = [self.binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--port-file", port_file,
                "--parent-pid", str(os.getpid())] + level + self.args
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ServiceUnavailable(f"cannot start {self.binary}: {e}") from e
        deadline = time.monotonic() + self.startup_timeout_s
        try:
            while True:
                try:
                    with open(port_file) as f:
                        text = f.read().strip()
                    if text and int(text) > 0:
                        self.address = f"127.0.0.1:{int(text)}"
                        break
                except (OSError, ValueError):
                    pass
                code = process.poll()
                if code is not None:
                    raise ServiceUnavailable(f"{self.binary} serve exited with status {code} before it was ready "
                                             "(its messages are above, on stderr)")
                if time.monotonic() > deadline:
                    _stop_process(process)
                    raise ServiceUnavailable(f"{self.binary} serve did not report its port within "
                                             f"{self.startup_timeout_s:g} s")
                time.sleep(0.005)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.process = process
        self.generation += 1

    def restart(self, seen_generation: int) -> None:
        """Starts a new server unless another caller already did since `seen_generation`."""
        with self._lock:
            if self.generation != seen_generation and self.alive():
                return
            if self.process is not None:
                _stop_process(self.process)
            self._start()

    def kill(self) -> None:
        """SIGKILL, now (for tests of recovery)."""
        if os.getpid() == self._owner and self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            if self.process is not None and os.getpid() == self._owner:
                _stop_process(self.process)
                self.process = None
        _live.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _stop_process(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_live: "set[ManagedService]" = set()
_shared: Dict[Tuple, Tuple[ManagedService, int]] = {}
_shared_lock = threading.Lock()


def acquire_shared(binary: Optional[str], args: Sequence[str], startup_timeout_s: float) -> ManagedService:
    """The process's managed service for (binary, args), started on first use."""
    key = (find_binary(binary), tuple(args))
    with _shared_lock:
        entry = _shared.get(key)
        if entry and entry[0].process is not None:
            _shared[key] = (entry[0], entry[1] + 1)
            return entry[0]
        service = ManagedService(key[0], args, startup_timeout_s)
        _shared[key] = (service, 1)
        return service


def release_shared(service: ManagedService) -> None:
    """Drops one user; the last one stops the service."""
    with _shared_lock:
        for key, (s, n) in list(_shared.items()):
            if s is service:
                if n > 1:
                    _shared[key] = (s, n - 1)
                    return
                del _shared[key]
                break
    service.close()


@atexit.register
def _stop_all() -> None:
    for service in list(_live):
        service.close()
