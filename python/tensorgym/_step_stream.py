"""Cheap steps on one open Session stream per environment.

grpcio starts a new call for every unary Step; on an open bidi stream a step is one
message each way. grpcio's public stream API hands each message to a thread of its own
and each answer back from another, and on a small VM those wake-ups cost more than the
step; so the stream is driven from the stepping thread itself, on a call with its own
completion queue (grpcio's SegregatedCall, what its unary calls use inside). That is
grpcio's internal API: when it is not there in the shape this module expects, the
stream falls back to the public one (still faster than unary calls).
benchmarks/python_throughput.py measures all three. Only steps that cannot measure go
on the stream, as with the C++ client's set_streaming: a measured step stays unary,
with its deadline enforced by the service.

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

from .errors import status_code
from .proto import pb

try:
    from grpc._cython import cygrpc as _cygrpc
except ImportError:  # another grpcio layout: the public stream only
    _cygrpc = None

_MAX_STREAMS = 32
_WATCH_PERIOD_S = 0.5
_SESSION_METHOD = b"/tensorgym.proto.TensorGym/Session"
_direct_works = _cygrpc is not None  # cleared when opening a direct stream fails


class StreamError(grpc.RpcError):
    """A step the stream could not carry, shaped like the RpcError of a unary call."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata=()):
        super().__init__(details)
        self._code = code
        self._details = details
        self._trailing = tuple(trailing_metadata)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def initial_metadata(self):
        return ()

    def trailing_metadata(self):
        return self._trailing


class _DirectCall:
    """A Session stream on grpcio's SegregatedCall: the stepping thread sends and waits
    for each answer on the call's own completion queue, with no other thread involved.
    A ReceiveStatus operation stays pending for the stream's life (grpcio frees a
    segregated call once nothing is pending on it)."""

    _INIT, _STATUS, _STEP = "init", "status", "step"

    def __init__(self, conn):
        c = _cygrpc
        metadata = conn._metadata
        self._pending = {self._INIT, self._STATUS}
        self._status = None  # the stream's final status, once it came
        self._call = conn.channel._channel.segregated_call(
            c.PropagationConstants.GRPC_PROPAGATE_DEFAULTS, _SESSION_METHOD, None, None, metadata, None,
            (((c.SendInitialMetadataOperation(metadata, 0), c.ReceiveInitialMetadataOperation(0)), self._INIT),
             ((c.ReceiveStatusOnClientOperation(0),), self._STATUS)),
            c.build_census_context(), None)

    def step(self, data: bytes):
        c = _cygrpc
        try:
            started = bool(self._pending) and self._call.operate(
                (c.SendMessageOperation(data, 0), c.ReceiveMessageOperation(0)), self._STEP)
        except ValueError:  # the call ended under it (its channel closed)
            started = False
        message = None
        if started:
            self._pending.add(self._STEP)
            event = self._wait_for(self._STEP)
            if event.success:
                for op in event.batch_operations:
                    if op.type() == c.OperationType.receive_message:
                        message = op.message()
        if message is not None:
            return pb.StepResponse.FromString(message)
        self.finish()
        code, details, trailing = self._status or (grpc.StatusCode.UNAVAILABLE, "the step stream closed", ())
        if code == grpc.StatusCode.OK:
            code, details = grpc.StatusCode.UNAVAILABLE, "the step stream closed"
        raise StreamError(code, details, trailing)

    def _wait_for(self, tag):
        while True:
            try:
                event = self._call.next_event()
            except BaseException:
                # A signal handler raised (Ctrl-C) while it waited: grpcio has freed the
                # call, so no event may be taken from it again. The next step finds the
                # stream closed and settles the step this one left uncertain.
                self._pending.clear()
                raise
            self._pending.discard(event.tag)
            if event.tag == self._STATUS:
                for op in event.batch_operations:
                    if op.type() == _cygrpc.OperationType.receive_status_on_client:
                        self._status = (status_code(op.code()), op.details() or "", op.trailing_metadata() or ())
            if event.tag == tag or not self._pending:
                return event

    def cancel(self, details: str) -> None:
        try:
            self._call.cancel(_cygrpc.StatusCode.cancelled, details)
        except Exception:
            pass

    def finish(self) -> None:
        """Cancels the stream if it is open and takes every pending event, so that grpcio
        frees the call and its queue."""
        if not self._pending:
            return
        self.cancel("the step stream closed")
        while self._pending:
            self._wait_for(None)


def _open_direct(conn) -> "Optional[_DirectCall]":
    global _direct_works
    if not _direct_works:
        return None
    try:
        return _DirectCall(conn)
    except (AttributeError, TypeError):
        _direct_works = False  # not the grpcio this was written against: the public stream from now on
        return None
    except Exception:
        return None  # this once (a channel closing under it): the public stream says what went wrong


class StepStream:
    """A Session stream owned by one environment; `step` sends one serialized StepRequest
    and returns its StepResponse, or raises grpc.RpcError (then the stream is closed)."""

    def __init__(self, owner, conn, direct: bool = True):
        self._owner = weakref.ref(owner)  # never the env itself: the watchdog must not keep it alive
        self.channel = conn.channel
        self._closed = False
        self._expired = False
        self._deadline = 0.0  # monotonic time the step in flight must answer by; 0: none in flight
        self._responses = None
        self._direct = _open_direct(conn) if direct else None
        if self._direct is None:
            self._requests: "queue.SimpleQueue" = queue.SimpleQueue()
            self._responses = conn.open_session_stream(self._request_iterator())

    @property
    def direct(self) -> bool:
        return self._direct is not None

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

    def step(self, data: bytes, timeout_s: float):
        self._deadline = time.monotonic() + timeout_s
        try:
            if self._direct is not None:
                return self._direct.step(data)
            self._requests.put(pb.StepRequest.FromString(data))
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
        with _lock:  # the stepping thread and the watchdog may both close it
            if self._closed:
                return
            self._closed = True
            _open.discard(self)
        if self._direct is not None:
            self._direct.finish()
        else:
            self._requests.put(None)
            try:
                self._responses.cancel()
            except Exception:
                pass

    def _cancel(self) -> None:
        if self._direct is not None:
            self._direct.cancel("the step's deadline passed")
        else:
            try:
                self._responses.cancel()
            except Exception:
                pass

    def _watch(self, now: float) -> None:
        owner = self._owner()
        if owner is None or getattr(owner, "_conn", None) is None or getattr(owner, "_step_stream", None) is not self:
            self.close()
            return
        deadline = self._deadline
        if deadline and now > deadline:
            self._expired = True
            self._cancel()


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
