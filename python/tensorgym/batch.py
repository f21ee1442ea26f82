"""Batch evaluation from Python: the service's `Evaluate` stream, with the job files and
the results journal of `tensorgym batch` (docs/protocol.md, "Evaluate").

A job is one episode in a fresh environment: a benchmark, action text, and the
observations and rewards to compute once at the end. Jobs are idempotent, so a job
that failed for a reason outside itself (its measurement worker was killed, the service
went away) can run again elsewhere with the same deterministic values.

    import tensorgym.batch as tb
    jobs = tb.read_jobs("jobs.jsonl")                  # tensorgym batch --make-jobs ... > jobs.jsonl
    with open("results.jsonl", "w") as out:
        for r in tb.evaluate(jobs, service="host:port"):
            print(r.key, r.error, r.observations.get("est_cycles"))
            tb.write_result(out, r)                    # the journal line of `tensorgym batch --out`

Exactly once: every job has a key (a job without one gets the content hash that the C++
client computes, so the same job has the same key in both), jobs that share a key are one
job, and `evaluate` yields exactly one Result per key: the first final answer. Answers of
the classes the protocol marks as retryable (JOB_UNAVAILABLE, JOB_WORKER_LOST), and jobs
in flight on a stream that broke, are sent again, at most `max_attempts` sends per job;
a job still without an answer then gets a final JOB_UNAVAILABLE result saying why.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import math
import queue
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

import grpc
from google.protobuf import json_format

from .errors import ServiceUnavailable, from_rpc_error
from .proto import pb
from .spaces import from_event

# The classes a client sends again (docs/protocol.md, the "sent again" column).
RETRYABLE = frozenset({pb.JOB_UNAVAILABLE, pb.JOB_WORKER_LOST})

JobLike = Union["pb.EvaluateJob", Dict[str, Any], str, bytes]


# -- jobs ---------------------------------------------------------------------------------

def _field(out: bytearray, text: str) -> None:
    data = text.encode("utf-8")
    out += f"{len(data)}:".encode() + data + b";"


def job_key(job: "pb.EvaluateJob") -> str:
    """The content key of a job: 32 hex digits of SHA-256 over every field but the key,
    the same encoding as the C++ client's job_content_key, so both name a job alike."""
    enc = bytearray(b"tensorgym-job-v1;")
    _field(enc, job.env or "schedule-v0")
    _field(enc, job.benchmark)
    _field(enc, job.program)
    _field(enc, job.actions)
    _field(enc, job.action_space)
    _field(enc, str(len(job.observations)))
    for o in job.observations:
        _field(enc, o)
    _field(enc, str(len(job.rewards)))
    for r in job.rewards:
        _field(enc, r)
    # std::map order: by key, bytewise (code points order UTF-8 the same way).
    _field(enc, str(len(job.parameters)))
    for k in sorted(job.parameters):
        _field(enc, k)
        _field(enc, job.parameters[k])
    _field(enc, _g17(job.timeout_s))
    if job.target:  # only when named: keys from before targets existed stay
        _field(enc, "target")
        _field(enc, job.target)
    return hashlib.sha256(bytes(enc)).hexdigest()[:32]


def _g17(x: float) -> str:
    # fmt's "{:.17g}", which spells infinities and NaN in lower case as Python does.
    return format(x, ".17g")


def _check(job: "pb.EvaluateJob") -> None:
    if not job.benchmark and not job.program:
        raise ValueError('a job needs "benchmark" (a URI) or "program" (program text)')
    if not math.isfinite(job.timeout_s) or job.timeout_s < 0:
        raise ValueError('"timeout_s" must be >= 0')


def to_job(x: JobLike) -> "pb.EvaluateJob":
    """An EvaluateJob, keyed: from an EvaluateJob (copied), a dict in the protobuf JSON
    mapping, or one line of a job file (the format `tensorgym batch --make-jobs` prints).
    Unknown fields, a job without benchmark or program, or a negative timeout raise
    ValueError."""
    if isinstance(x, pb.EvaluateJob):
        job = pb.EvaluateJob()
        job.CopyFrom(x)
    elif isinstance(x, dict):
        job = pb.EvaluateJob()
        try:
            json_format.ParseDict(x, job, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            raise ValueError(f"not a job: {e}") from None
    elif isinstance(x, (str, bytes)):
        job = pb.EvaluateJob()
        try:
            json_format.Parse(x, job, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            raise ValueError(f"not a job: {e}") from None
    else:
        raise TypeError(f"a job is an EvaluateJob, a dict or a JSON line, not {type(x).__name__}")
    _check(job)
    if not job.key:
        job.key = job_key(job)
    return job


def job_to_json(job: "pb.EvaluateJob") -> str:
    """One job as a line of a job file (no newline); to_job reads it back."""
    d = json_format.MessageToDict(job, preserving_proto_field_name=True)
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False)


def read_jobs(path: str) -> List["pb.EvaluateJob"]:
    """The jobs of a job file (JSON Lines, one EvaluateJob per line; blank lines skipped),
    keyed, in order. A line that is not a job raises ValueError naming FILE:LINE."""
    jobs = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                jobs.append(to_job(line))
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
    return jobs


def write_jobs(path: str, jobs: Iterable[JobLike]) -> None:
    """Writes a job file that `tensorgym batch --jobs` and read_jobs accept."""
    with open(path, "w", encoding="utf-8") as f:
        for j in jobs:
            f.write(job_to_json(to_job(j)) + "\n")


# -- results --------------------------------------------------------------------------------

def error_class(error: int) -> str:
    """The text name of a JobError without JOB_: "OK", "MALFORMED", "WORKER_LOST", ..."""
    try:
        name = pb.JobError.Name(error)
    except ValueError:
        return f"JOB_ERROR_{int(error)}"
    return name[4:] if name.startswith("JOB_") else name


@dataclasses.dataclass
class Result:
    """The final answer for one job: `job`, the service's `result` (a JobResult), the
    number of times the job was sent (`attempts`) and the endpoint of the answer."""
    job: "pb.EvaluateJob"
    result: "pb.JobResult"
    attempts: int = 1
    endpoint: str = ""

    @property
    def key(self) -> str:
        return self.result.key

    @property
    def error(self) -> str:
        """The error class, "OK" when the job has its values."""
        return error_class(self.result.error)

    @property
    def ok(self) -> bool:
        return self.result.error == pb.JOB_OK

    @property
    def message(self) -> str:
        return self.result.error_message

    @property
    def observations(self) -> Dict[str, Any]:
        """Observation values by name (Python and numpy values), in the job's order;
        empty when the result does not match its job."""
        if len(self.result.observation) != len(self.job.observations):
            return {}
        return {n: from_event(e) for n, e in zip(self.job.observations, self.result.observation)}

    @property
    def rewards(self) -> Dict[str, float]:
        if len(self.result.reward) != len(self.job.rewards):
            return {}
        return dict(zip(self.job.rewards, self.result.reward))

    def to_dict(self) -> Dict[str, Any]:
        return result_to_dict(self)

    def to_json(self) -> str:
        return result_to_json(self)


def _finite(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _tensor(shape, values) -> Any:
    # Nested lists following the shape, row-major, as the C++ journal writes tensors.
    values = list(values)
    if not shape:
        return values[0] if values else None
    pos = 0

    def build(dim):
        nonlocal pos
        out = []
        for _ in range(shape[dim]):
            if dim + 1 == len(shape):
                out.append(values[pos] if pos < len(values) else None)
                pos += 1
            else:
                out.append(build(dim + 1))
        return out

    return build(0)


def event_json(event: "pb.Event") -> Any:
    """An Event as a JSON value, as the C++ journal writes it: numbers (non-finite as
    null), strings, booleans, nested lists for tensors, objects for dicts."""
    kind = event.WhichOneof("value")
    if kind == "double_value":
        return _finite(event.double_value)
    if kind == "int64_value":
        return event.int64_value
    if kind == "string_value":
        return event.string_value
    if kind == "boolean_value":
        return event.boolean_value
    if kind == "int64_tensor":
        return _tensor(list(event.int64_tensor.shape), event.int64_tensor.value)
    if kind == "double_tensor":
        return _tensor(list(event.double_tensor.shape), [_finite(v) for v in event.double_tensor.value])
    if kind == "event_dict":
        return {k: event_json(v) for k, v in zip(event.event_dict.key, event.event_dict.value)}
    if kind == "event_list":
        return [event_json(e) for e in event.event_list.event]
    return None


def result_to_dict(result: Union[Result, "pb.JobResult"], job: Optional["pb.EvaluateJob"] = None, *,
                   endpoint: str = "", attempts: int = 0) -> Dict[str, Any]:
    """A result as the journal line of `tensorgym batch --out` (a dict in its key order):
    key, error, message, benchmark, observations{}, rewards{}, queue_ms, compile_ms,
    run_ms, endpoint, instance, slot, worker_pid, attempts, and provenance when the job
    measured. A bare JobResult needs its job to name its values."""
    if isinstance(result, Result):
        job, endpoint, attempts, r = result.job, result.endpoint, result.attempts, result.result
    else:
        r = result
    obs_names = list(job.observations) if job is not None else []
    reward_names = list(job.rewards) if job is not None else []
    observations = ({n: event_json(e) for n, e in zip(obs_names, r.observation)}
                    if job is not None and len(r.observation) == len(obs_names) else {})
    rewards = ({n: _finite(v) for n, v in zip(reward_names, r.reward)}
               if job is not None and len(r.reward) == len(reward_names) else {})
    out = {"key": r.key, "error": error_class(r.error), "message": r.error_message,
           "benchmark": job.benchmark if job is not None else "", "observations": observations,
           "rewards": rewards, "queue_ms": _finite(r.queue_ms), "compile_ms": _finite(r.compile_ms),
           "run_ms": _finite(r.run_ms), "endpoint": endpoint, "instance": r.instance_id, "slot": r.slot,
           "worker_pid": r.worker_pid, "attempts": attempts}
    if r.HasField("provenance"):
        out["provenance"] = json_format.MessageToDict(r.provenance, preserving_proto_field_name=True)
    return out


def result_to_json(result: Union[Result, "pb.JobResult"], job: Optional["pb.EvaluateJob"] = None, **kwargs) -> str:
    """result_to_dict as one compact JSON line (no newline)."""
    return json.dumps(result_to_dict(result, job, **kwargs), separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def write_result(f, result: Union[Result, "pb.JobResult"], job: Optional["pb.EvaluateJob"] = None, **kwargs) -> None:
    """Appends one journal line to an open text file and flushes it."""
    f.write(result_to_json(result, job, **kwargs) + "\n")
    f.flush()


def read_results(path: str) -> Dict[str, Dict[str, Any]]:
    """A journal's results by key (the C++ journal or write_result's); a torn last line
    (a write cut short) is skipped."""
    out: Dict[str, Dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue  # torn last line: its job runs again
            raise ValueError(f"{path}:{i + 1}: not a result line") from None
        if not isinstance(d, dict) or not isinstance(d.get("key"), str):
            raise ValueError(f'{path}:{i + 1}: a result line needs a string "key"')
        out.setdefault(d["key"], d)
    return out


def unavailable(job: "pb.EvaluateJob", message: str, attempts: int = 0, endpoint: str = "") -> Result:
    """The final result of a job that got no answer: JOB_UNAVAILABLE with the reason."""
    return Result(job, pb.JobResult(key=job.key, error=pb.JOB_UNAVAILABLE, error_message=message),
                  attempts, endpoint)


# -- evaluation -----------------------------------------------------------------------------

_END = object()


def unique_jobs(jobs: Iterable[JobLike]) -> List["pb.EvaluateJob"]:
    """The jobs keyed, first of each key kept, in order."""
    seen = set()
    out = []
    for j in jobs:
        job = to_job(j)
        if job.key not in seen:
            seen.add(job.key)
            out.append(job)
    return out


def evaluate(jobs: Iterable[JobLike], service: Any = None, *, max_attempts: int = 4,
             max_in_flight: Optional[int] = None, max_jobs_per_message: int = 64,
             timeout_s: Optional[float] = None, **connection_options) -> Iterator[Result]:
    """Evaluates jobs on one service through its Evaluate stream and yields one Result
    per distinct key, as each finishes (in any order).

    service: None (the process's managed local service), "host:port", a ManagedService or
    a Connection (kept open). Other keyword arguments go to Connection (auth_token,
    tls, reconnect_timeout_s, ...). max_attempts: sends of one job in all. max_in_flight:
    jobs sent and not answered (default: what the service announces it runs and queues,
    at most 256). timeout_s: the deadline of each stream.

    A stream that breaks with UNAVAILABLE is reopened after Connection.recover() (a
    managed service is restarted; a remote one is waited for, up to the connection's
    reconnect_timeout_s); its unanswered jobs count one attempt and are sent again. When
    the service cannot be reached any more, the jobs left get JOB_UNAVAILABLE results.
    Any other failure of the stream (a wrong token, say) raises ServiceError."""
    from .connection import Connection, connect
    job_list = unique_jobs(jobs)
    if not job_list:
        return
    owns = not isinstance(service, Connection)
    conn = connect(service, **connection_options)
    try:
        yield from _Run(conn, job_list, max_attempts, max_in_flight, max_jobs_per_message, timeout_s).results()
    finally:
        if owns:
            conn.close()


class _Run:
    """One batch on one connection: a queue of jobs to send, the jobs in flight on the
    current stream, and the final results."""

    def __init__(self, conn, jobs, max_attempts, max_in_flight, per_message, timeout_s):
        self.conn = conn
        self.by_key = {j.key: j for j in jobs}
        self.todo = collections.deque(j.key for j in jobs)
        self.attempts = {j.key: 0 for j in jobs}
        self.max_attempts = max(1, int(max_attempts))
        self.max_in_flight = max_in_flight
        self.per_message = max(1, int(per_message))
        self.timeout_s = timeout_s
        self.done = set()
        self.last_error = ""
        self.draining = False  # the service answered JOB_UNAVAILABLE: send it nothing new

    def _final(self, key: str, result: "pb.JobResult") -> Result:
        self.done.add(key)
        return Result(self.by_key[key], result, self.attempts[key], self.conn.address)

    def results(self) -> Iterator[Result]:
        backoff = 0.02
        idle_streams = 0
        while len(self.done) < len(self.by_key):
            epoch = self.conn.epoch
            broken = None
            before = len(self.done)
            self.draining = False
            try:
                yield from self._stream()
            except grpc.RpcError as e:
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                    grpc.StatusCode.CANCELLED):
                    raise from_rpc_error(e, "Evaluate") from None
                broken = from_rpc_error(e, "Evaluate")
            if len(self.done) == len(self.by_key):
                return
            self.last_error = broken.message if broken is not None else "the Evaluate stream ended early"
            # Jobs out of sends get their final answer; the others go again.
            for key in list(self.todo):
                if self.attempts[key] >= self.max_attempts:
                    self.todo.remove(key)
                    yield self._final(key, pb.JobResult(
                        key=key, error=pb.JOB_UNAVAILABLE,
                        error_message=f"no answer after {self.attempts[key]} sends: {self.last_error}"))
            if len(self.done) == len(self.by_key):
                return
            # A stream that ends with nothing answered and nothing sent must not spin.
            idle_streams = idle_streams + 1 if len(self.done) == before else 0
            if idle_streams > self.max_attempts + 2:
                for key in list(self.todo):
                    self.todo.remove(key)
                    yield self._final(key, pb.JobResult(key=key, error=pb.JOB_UNAVAILABLE,
                                                        error_message=f"no answer: {self.last_error}"))
                return
            if broken is not None and broken.code == grpc.StatusCode.UNAVAILABLE:
                try:
                    self.conn.recover(epoch)
                except ServiceUnavailable as e:
                    for key in list(self.todo):
                        self.todo.remove(key)
                        yield self._final(key, pb.JobResult(key=key, error=pb.JOB_UNAVAILABLE,
                                                            error_message=e.message))
                    return
            elif self.draining:
                time.sleep(backoff)  # it refused work (shutting down, or its cache was full)
                backoff = min(2 * backoff, 1.0)

    def _window(self, greeting: "pb.EvaluateResponse") -> int:
        if self.max_in_flight:
            return max(1, int(self.max_in_flight))
        concurrency = max(1, greeting.concurrency)
        window = max(2 * concurrency, 8)
        if greeting.max_queued_jobs > 0:
            window = min(window, concurrency + greeting.max_queued_jobs)
        return max(1, min(window, 256))

    def _stream(self) -> Iterator[Result]:
        """One Evaluate stream: sends what is queued, within the window; answers that are
        retryable go back in the queue. Jobs unanswered when it ends go back too."""
        outbox: "queue.Queue" = queue.Queue()

        def requests():
            while True:
                item = outbox.get()
                if item is _END:
                    return
                yield item

        in_flight: Dict[str, bool] = {}
        call = self.conn.stub.Evaluate(requests(), timeout=self.timeout_s, metadata=self.conn._metadata)
        window = 1
        closed = False

        def send():
            nonlocal closed
            batch = []
            while self.todo and len(in_flight) < window and not self.draining:
                key = self.todo.popleft()
                in_flight[key] = True
                self.attempts[key] += 1
                batch.append(self.by_key[key])
                if len(batch) == self.per_message:
                    outbox.put(pb.EvaluateRequest(job=batch))
                    batch = []
            if batch:
                outbox.put(pb.EvaluateRequest(job=batch))
            if (not self.todo or self.draining) and not in_flight and not closed:
                closed = True
                outbox.put(_END)  # half-close: the stream ends once every job is answered

        try:
            greeted = False
            for response in call:
                if not greeted:
                    greeted = True
                    window = self._window(response)
                    send()
                for r in response.result:
                    if in_flight.pop(r.key, None) is None:
                        continue  # not ours, or answered already
                    if r.error in RETRYABLE and self.attempts[r.key] < self.max_attempts:
                        self.last_error = f"{error_class(r.error)}: {r.error_message}"
                        self.todo.append(r.key)
                        if r.error == pb.JOB_UNAVAILABLE:
                            self.draining = True
                        continue
                    yield self._final(r.key, r)
                send()
        finally:
            if not closed:
                outbox.put(_END)
            call.cancel()
            # Whatever is still in flight went unanswered: queue it again, first.
            for key in reversed(list(in_flight)):
                self.todo.appendleft(key)
