"""Cheap steps on one open Session stream per environment.

grpcio starts a new call for every unary Step; on an open bidi stream a step is one
message each way, which takes about 40% less time over loopback
(benchmarks/python_throughput.py). Only steps that cannot measure go on the stream, as
with the C++ client's set_streaming: a measured step stays unary, with its deadline
enforced by the service.

The stream itself has no gRPC deadline. One watchdog thread per process, woken twice a
second, cancels a stream whose step is past its deadline (the step then fails with
DEADLINE_EXCEEDED, as a unary one would) and closes the streams of environments that
were closed or collected. At most _MAX_STREAMS are open in a process: channels in a
process share their connections, and the service admits a bounded number of calls on
one connection at a time; beyond that, steps are unary.
"""
from __future__ import annotations

import os
import queue
import threading
import time
import weakref
from typing import Optional

import grpc

_MAX_STREAMS = 32
_WATCH_PERIOD_S = 0.5


class StreamError(grpc.RpcError):
    """A step the stream could not carry, shaped like the RpcError of a unary call."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def initial_metadata(self):
        return ()

    def trailing_metadata(self):
        return ()


class StepStream:
    """A Session stream owned by one environment; `step` sends one StepRequest and
    returns its StepResponse, or raises grpc.RpcError (then the stream is closed)."""

    def __init__(self, owner, conn):
        self._owner = weakref.ref(owner)  # never the env itself: the watchdog must not keep it alive
        self.channel = conn.channel
        self._requests: "queue.SimpleQueue" = queue.SimpleQueue()
        self._closed = False
        self._expired = False
        self._deadline = 0.0  # monotonic time the step in flight must answer by; 0: none in flight
        self._responses = None
        self._responses = conn.open_session_stream(self._request_iterator())

    def usable_by(self, env, conn) -> bool:
        return (not self._closed and not self._expired and self._owner() is env
                and self.channel is conn.channel)

    def _request_iterator(self):
        # Runs on grpcio's request thread for this call; ends with the stream.
        requests = self._requests
        while True:
            try:
                request = requests.get(timeout=1.0)
            except queue.Empty:
                responses = self._responses
                if self._closed or (responses is not None and responses.done()):
                    return
                continue
            if request is None:
                return
            yield request

    def step(self, request, timeout_s: float):
        self._deadline = time.monotonic() + timeout_s
        self._requests.put(request)
        try:
            return next(self._responses)
        except StopIteration:
            self.close()
            raise StreamError(grpc.StatusCode.UNAVAILABLE, "the step stream closed") from None
        except grpc.RpcError as e:
            self.close()
            if self._expired:
                raise StreamError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
            if e.code() == grpc.StatusCode.CANCELLED:
                # Cancelled under it (its channel closed in a recovery): the connection was lost.
                raise StreamError(grpc.StatusCode.UNAVAILABLE, f"the step stream was cancelled: {e.details()}") from None
            raise
        finally:
            self._deadline = 0.0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._requests.put(None)
        try:
            self._responses.cancel()
        except Exception:
            pass
        with _lock:
            _open.discard(self)

    def _watch(self, now: float) -> None:
        owner = self._owner()
        if owner is None or getattr(owner, "_conn", None) is None or getattr(owner, "_step_stream", None) is not self:
            self.close()
            return
        deadline = self._deadline
        if deadline and now > deadline:
            self._expired = True
            try:
                self._responses.cancel()
            except Exception:
                pass


_lock = threading.Lock()
_open: "set[StepStream]" = set()
_watcher_pid: Optional[int] = None


def open_stream(env, conn) -> Optional[StepStream]:
    """A new stream for `env`, stored as env._step_stream, or None when this process
    already has _MAX_STREAMS open."""
    global _watcher_pid
    with _lock:
        if _watcher_pid != os.getpid():  # first use, or a forked child: the parent's streams are not ours
            _open.clear()
            _watcher_pid = os.getpid()
            threading.Thread(target=_watch_all, args=(_watcher_pid,), name="tensorgym-step-streams",
                             daemon=True).start()
        if len(_open) >= _MAX_STREAMS:
            return None
        stream = StepStream(env, conn)
        env._step_stream = stream
        _open.add(stream)
        return stream


def _watch_all(me: int) -> None:
    while _watcher_pid == me:
        time.sleep(_WATCH_PERIOD_S)
        with _lock:
            streams = list(_open)
        now = time.monotonic()
        for s in streams:
            try:
                s._watch(now)
            except Exception:
                pass
