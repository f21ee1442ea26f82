"""Vector environments: N sessions stepped together (gymnasium.vector)."""
from __future__ import annotations

import functools
from typing import Any, Optional, Sequence, Union

import gymnasium

from .service import ManagedService


class _VectorEnvWithService(gymnasium.vector.AsyncVectorEnv):
    """An AsyncVectorEnv that stops the managed service its environments share."""

    def __init__(self, env_fns, service: ManagedService, **kwargs):
        self._tensorgym_service = service
        try:
            super().__init__(env_fns, **kwargs)
        except BaseException:
            service.close()
            raise

    def close_extras(self, **kwargs):
        try:
            super().close_extras(**kwargs)
        finally:
            self._tensorgym_service.close()


def make_vec(env: str = "schedule-v0", num_envs: int = 2, service: Union[None, str, Sequence[str]] = None,
             vectorization_mode: str = "async", context: Optional[str] = "forkserver",
             server_args: Sequence[str] = (), binary: Optional[str] = None, **env_kwargs: Any):
    """N environments, each its own session, stepped together.

    service: None starts one managed service for all of them (stopped when the vector
    env closes); "host:port" puts every session there; a list of endpoints spreads them
    round-robin (environment i on service[i % len]). vectorization_mode "async" runs each
    environment in a worker process (gymnasium.vector.AsyncVectorEnv, started with
    `context`: forkserver by default, so workers never inherit the parent's gRPC state);
    "sync" steps them in this process. Other keyword arguments go to tensorgym.make."""
    managed = None
    if service is None:
        # Kept alive on its port: the workers reach it by address, so when it dies they
        # reconnect to its successor and replay their episodes.
        managed = ManagedService(binary, list(server_args), keep_alive=True)
        endpoints = [managed.address]
    elif isinstance(service, str):
        endpoints = [service]
    else:
        endpoints = list(service)
    from . import make
    fns = [functools.partial(make, env, service=endpoints[i % len(endpoints)], **env_kwargs) for i in range(num_envs)]
    if vectorization_mode == "sync":
        vec = gymnasium.vector.SyncVectorEnv(fns)
        if managed is not None:
            closer = vec.close_extras

            def close_extras(**kwargs):
                try:
                    closer(**kwargs)
                finally:
                    managed.close()
            vec.close_extras = close_extras
        return vec
    if vectorization_mode != "async":
        raise ValueError(f"vectorization_mode is 'async' or 'sync', not {vectorization_mode!r}")
    if managed is not None:
        return _VectorEnvWithService(fns, managed, context=context)
    return gymnasium.vector.AsyncVectorEnv(fns, context=context)
