"""A connection to a TensorGym service: managed (a local `tensorgym serve` it starts and
restarts) or remote ("host:port", with TLS and a bearer token).

Calls that fail with UNAVAILABLE are retried after `recover()`: a managed service that
died is restarted; a remote one is probed with doubling backoff until it answers or
`reconnect_timeout_s` passes, after which ServiceUnavailable says what was tried.
Environments compare `epoch` to learn that their sessions are gone and replay them.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

import grpc

from . import service as service_mod
from .errors import ServiceError, ServiceUnavailable, from_rpc_error
from .proto import pb, pb_grpc


class Connection:
    def __init__(self, endpoint: Optional[str] = None, *, binary: Optional[str] = None,
                 server_args: Sequence[str] = (), auth_token: Optional[str] = None,
                 auth_token_file: Optional[str] = None, tls: bool = False, tls_ca_file: Optional[str] = None,
                 tls_server_name: Optional[str] = None,
                 call_timeout_s: float = 300.0, reconnect_timeout_s: float = 30.0,
                 startup_timeout_s: float = 30.0, backoff_initial_s: float = 0.02, backoff_max_s: float = 1.0,
                 max_message_bytes: int = 1 << 30, managed_service: Optional[service_mod.ManagedService] = None):
        self.endpoint = endpoint
        self.call_timeout_s = call_timeout_s
        self.reconnect_timeout_s = reconnect_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.max_message_bytes = max_message_bytes
        self.tls = tls
        self._tls_server_name = tls_server_name  # the name the certificate must carry, when not the host's
        self._tls_roots = None
        if tls_ca_file:
            with open(tls_ca_file, "rb") as f:
                self._tls_roots = f.read()
        token = auth_token
        if not token and auth_token_file:
            with open(auth_token_file) as f:
                token = f.readline().strip()
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._lock = threading.Lock()
        self._closed = False
        self._users = 1  # acquire()/release(): environments that share this connection
        self._owns_managed = False
        self.managed: Optional[service_mod.ManagedService] = None
        self.stats = {"restarts": 0, "reconnects": 0, "replays": 0}
        if endpoint is None:
            if managed_service is not None:
                self.managed = managed_service
            else:
                self.managed = service_mod.acquire_shared(binary, server_args, startup_timeout_s)
                self._owns_managed = True
            self._generation = self.managed.generation
            address = self.managed.address
        else:
            address = endpoint
        self.epoch = 0
        self.instance_id = ""
        self._open_channel(address)
        try:
            self.instance_id = self._probe(startup_timeout_s).instance_id
        except ServiceError:
            self.close()
            raise

    # -- channels -------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._address

    def _open_channel(self, address: str) -> None:
        options = [("grpc.max_receive_message_length", self.max_message_bytes),
                   ("grpc.max_send_message_length", self.max_message_bytes)]
        if self.tls:
            if self._tls_server_name:
                options.append(("grpc.ssl_target_name_override", self._tls_server_name))
            creds = grpc.ssl_channel_credentials(root_certificates=self._tls_roots)
            channel = grpc.secure_channel(address, creds, options=options)
        else:
            channel = grpc.insecure_channel(address, options=options)
        self._address = address
        self.channel = channel
        self.stub = pb_grpc.TensorGymStub(channel)

    def _probe(self, timeout_s: float):
        try:
            return self.stub.GetVersion(pb.GetVersionRequest(), timeout=max(timeout_s, 0.001),
                                        metadata=self._metadata, wait_for_ready=True)
        except grpc.RpcError as e:
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                # Waiting for the channel to connect ran out: the service cannot be reached.
                raise ServiceUnavailable(f"{self._address} did not answer within {timeout_s:g} s "
                                         f"({e.code().name}: {e.details()})") from None
            raise from_rpc_error(e, f"{self._address} did not answer GetVersion") from None

    # -- calls ----------------------------------------------------------------------

    def call(self, method: str, request, timeout: Optional[float] = None, retry: bool = True):
        """A unary call; UNAVAILABLE is retried after recovery when `retry`."""
        epoch = self.epoch
        attempts = 0
        while True:
            try:
                return getattr(self.stub, method)(request, timeout=timeout or self.call_timeout_s,
                                                  metadata=self._metadata)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or not retry or attempts >= 8:
                    raise from_rpc_error(e, method) from None
                attempts += 1
                self.recover(epoch)
                epoch = self.epoch

    def raw(self, method: str, request, timeout: Optional[float] = None):
        """A unary call without retries: raises grpc.RpcError (environments handle recovery)."""
        return getattr(self.stub, method)(request, timeout=timeout or self.call_timeout_s, metadata=self._metadata)

    def open_session_stream(self, requests):
        """A Session stream that sends the StepRequests `requests` yields; returns the
        iterator of StepResponses. No deadline: its user keeps one per step."""
        return self.stub.Session(requests, metadata=self._metadata)

    def recover(self, seen_epoch: int) -> None:
        """Brings the service back after UNAVAILABLE. When the server that answers is
        another process (a restart), `epoch` changes and environments replay; when it is
        the same one, their sessions are still there."""
        with self._lock:
            if self.epoch != seen_epoch:
                return  # another caller already recovered
            deadline = time.monotonic() + self.reconnect_timeout_s
            backoff = self.backoff_initial_s
            last = "no attempt"
            attempts = 0
            while True:
                attempts += 1
                if self.managed is not None and not self.managed.alive():
                    try:
                        self.managed.restart(self._generation)
                        self._generation = self.managed.generation
                        self.stats["restarts"] += 1
                        self.channel.close()
                        self._open_channel(self.managed.address)
                    except ServiceError as e:
                        last = e.message
                elif self.managed is not None and self.managed.address != self._address:
                    self.channel.close()
                    self._open_channel(self.managed.address)
                    self._generation = self.managed.generation
                try:
                    left = max(0.05, min(2.0, deadline - time.monotonic()))
                    version = self._probe(left)
                    self.stats["reconnects"] += 1
                    if version.instance_id != self.instance_id:
                        # Another server process: every session there is gone.
                        self.instance_id = version.instance_id
                        self.epoch += 1
                    return
                except ServiceError as e:
                    last = e.message
                if time.monotonic() >= deadline:
                    raise ServiceUnavailable(f"cannot reach the service at {self._address} after {attempts} "
                                             f"attempts over {self.reconnect_timeout_s:g} s: {last}")
                time.sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max_s)

    # -- the service's catalogue --------------------------------------------------------

    def version(self):
        return self.call("GetVersion", pb.GetVersionRequest())

    def spaces(self, env: str):
        return self.call("GetSpaces", pb.GetSpacesRequest(env=env))

    def datasets(self) -> List[Dict]:
        response = self.call("ListDatasets", pb.ListDatasetsRequest())
        return [{"name": d.name, "description": d.description, "size": d.size} for d in response.dataset]

    def benchmarks(self, dataset: str, limit: Optional[int] = None) -> List[str]:
        """A dataset's benchmark URIs (every page, or the first `limit`)."""
        uris: List[str] = []
        token = ""
        while True:
            page = self.call("ListBenchmarks", pb.ListBenchmarksRequest(dataset=dataset, page_size=1000,
                                                                        page_token=token))
            uris.extend(b.uri for b in page.benchmark)
            token = page.next_page_token
            if not token or (limit is not None and len(uris) >= limit):
                return uris[:limit] if limit is not None else uris

    def add_benchmark(self, name: str, program: str) -> str:
        return self.call("AddBenchmark", pb.AddBenchmarkRequest(name=name, program=program)).uri

    def validate(self, state, tolerance: float = 0.25):
        """Replays an EpisodeState on the service and checks it: (ok, error, replayed rewards)."""
        from .state import Validation
        response = self.call("Validate", pb.ValidateRequest(state=state, tolerance=tolerance))
        return Validation(response.ok, response.error, dict(response.replayed_reward))

    def evaluate(self, jobs: Iterable, timeout: Optional[float] = None, max_attempts: int = 4) -> Iterator:
        """Streams jobs (EvaluateJob messages, dicts in their JSON form, or job-file lines)
        to the service's batch evaluation and yields one JobResult per distinct job key,
        as each finishes; JOB_UNAVAILABLE and JOB_WORKER_LOST answers and jobs of a broken
        stream are sent again, at most `max_attempts` times. tensorgym.batch.evaluate
        gives the same as Result objects (job, values by name, attempts)."""
        from .batch import evaluate
        for r in evaluate(jobs, service=self, timeout_s=timeout, max_attempts=max_attempts):
            yield r.result

    # -- life -----------------------------------------------------------------------

    def acquire(self) -> "Connection":
        with self._lock:
            self._users += 1
        return self

    def release(self) -> None:
        """Drops one user; the last one closes the connection."""
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.channel.close()
        except Exception:
            pass
        if self._owns_managed and self.managed is not None:
            service_mod.release_shared(self.managed)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def connect(service=None, **options) -> Connection:
    """A Connection from what `make(service=...)` accepts: None (managed), "host:port",
    a ManagedService, or a Connection (returned as is)."""
    if isinstance(service, Connection):
        return service
    if isinstance(service, service_mod.ManagedService):
        return Connection(None, managed_service=service, **options)
    return Connection(service, **options)
