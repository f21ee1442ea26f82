"""Ray as the distributed engine: batch evaluations and rollouts over TensorGym services
on many hosts.

    import ray, tensorgym.ray as tgr
    ray.init(address="auto")                        # or ray.init() on one machine
    results = tgr.evaluate(jobs, endpoints=["10.0.0.5:50051", "10.0.0.6:50051"], num_actors=8)
    episodes = tgr.rollout(endpoints=["10.0.0.5:50051"], episodes=32, num_actors=4,
                           env_kwargs={"benchmark": "benchmark://ops-v0", "max_episode_steps": 8})

Each actor owns its own connection (and, for rollouts, its own session) to one service;
actors take the endpoints round robin. The batch path runs jobs through tensorgym.batch
(the service's Evaluate stream), so a job's retry rules are those of `tensorgym batch`.
On top of them the driver survives actors that die: the chunk a dead actor held is sent
again to a replacement, and answers are kept per job key, first one wins, so every job
gets exactly one result.

Ray is optional (`pip install "ray>=2.9"`); this module imports it only when used.
"""
from __future__ import annotations

import collections
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from . import batch as batch_mod
from .proto import pb


def _ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError('tensorgym.ray needs Ray: pip install "ray>=2.9" (or the package\'s [test] extra)') from e
    return ray


def _endpoints(endpoints) -> List[str]:
    if isinstance(endpoints, str):
        endpoints = [e for e in endpoints.split(",") if e]
    endpoints = list(endpoints)
    if not endpoints:
        raise ValueError('give at least one endpoint ("host:port" of a running `tensorgym serve`)')
    return endpoints


def _remote(cls, options: Optional[Dict[str, Any]]):
    ray = _ray()
    remote_cls = ray.remote(cls)
    return remote_cls.options(**options) if options else remote_cls


# -- batch evaluation ------------------------------------------------------------------

class BatchWorker:
    """A Ray actor's body: one connection to one service, evaluating chunks of jobs
    with tensorgym.batch.evaluate. Start it with tensorgym.ray.batch_actor(endpoint).

    It connects on first use, so an actor whose service is down starts anyway; a chunk
    it cannot deliver comes back as JOB_UNAVAILABLE results naming no instance, which
    the driver sends elsewhere. stream_timeout_s: the deadline of one Evaluate stream (a
    stream past it is dropped and its unanswered jobs sent again). connection_options go
    to Connection (auth_token, tls, reconnect_timeout_s: how long a lost service is
    waited for, ...)."""

    def __init__(self, endpoint: str, max_attempts: int = 4, stream_timeout_s: Optional[float] = None,
                 **connection_options):
        self.endpoint = endpoint
        self.max_attempts = max_attempts
        self.stream_timeout_s = stream_timeout_s
        self.options = dict(connection_options)
        self.options.setdefault("startup_timeout_s", self.options.get("reconnect_timeout_s", 30.0))
        self.conn = None

    def pid(self) -> int:
        return os.getpid()

    def evaluate(self, jobs: Sequence[Any]) -> List[batch_mod.Result]:
        """One Result per distinct job key (see tensorgym.batch.evaluate)."""
        from .connection import Connection
        from .errors import ServiceError
        if self.conn is None:
            try:
                self.conn = Connection(self.endpoint, **self.options)
            except ServiceError as e:
                return [batch_mod.unavailable(j, f"cannot reach {self.endpoint}: {e.message}", 0, self.endpoint)
                        for j in batch_mod.unique_jobs(jobs)]
        return list(batch_mod.evaluate(jobs, service=self.conn, max_attempts=self.max_attempts,
                                       timeout_s=self.stream_timeout_s))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def batch_actor(endpoint: str, actor_options: Optional[Dict[str, Any]] = None, **worker_options):
    """A BatchWorker actor on `endpoint`; actor_options go to ray's .options()
    (num_cpus, scheduling_strategy, ...), worker_options to BatchWorker."""
    return _remote(BatchWorker, actor_options).remote(endpoint, **worker_options)


class _Slot:
    __slots__ = ("index", "endpoint", "actor", "busy", "deaths")

    def __init__(self, index, endpoint):
        self.index = index
        self.endpoint = endpoint
        self.actor = None
        self.busy = None  # the in-flight chunk's object ref
        self.deaths = 0


class BatchPool:
    """Batch-evaluation actors spread over endpoints (actor i on endpoints[i % n]), kept
    between calls of evaluate(). Close it (or use it as a context manager) to end them.

    chunk_size: jobs per actor task. max_resends: how many times one job may be sent
    again by the driver (after its actor died, or an answer the protocol marks as
    retryable), each time to another endpoint when there is one. max_actor_deaths:
    replacements started in one evaluate() before it gives up on an endpoint's slot."""

    def __init__(self, endpoints: Sequence[str] | str, num_actors: Optional[int] = None, *, chunk_size: int = 16,
                 max_resends: int = 3, max_actor_deaths: int = 8, actor_options: Optional[Dict[str, Any]] = None,
                 worker_options: Optional[Dict[str, Any]] = None):
        self.ray = _ray()
        if not self.ray.is_initialized():
            raise RuntimeError("call ray.init() first (ray.init(address=...) to join a cluster)")
        self.endpoints = _endpoints(endpoints)
        n = int(num_actors or len(self.endpoints))
        if n < 1:
            raise ValueError("num_actors must be >= 1")
        self.chunk_size = max(1, int(chunk_size))
        self.max_resends = max(0, int(max_resends))
        self.max_actor_deaths = max(0, int(max_actor_deaths))
        self.actor_options = dict(actor_options or {})
        self.worker_options = dict(worker_options or {})
        self.slots = [_Slot(i, self.endpoints[i % len(self.endpoints)]) for i in range(n)]
        self.stats = {"chunks": 0, "actor_deaths": 0, "resent": 0, "duplicates": 0}
        for s in self.slots:
            self._start(s)

    def _start(self, slot: _Slot) -> None:
        slot.actor = batch_actor(slot.endpoint, self.actor_options, **self.worker_options)

    def _replace(self, slot: _Slot, died: bool = True) -> None:
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception:
            pass
        if died:
            slot.deaths += 1
            self.stats["actor_deaths"] += 1
        self._start(slot)

    def actor_pids(self, timeout_s: float = 60) -> List[int]:
        """The process id of each actor (in slot order); waits for them to start."""
        return self.ray.get([s.actor.pid.remote() for s in self.slots], timeout=timeout_s)

    def evaluate(self, jobs: Iterable[Any], *, timeout_s: Optional[float] = None,
                 on_submit: Optional[Callable[[int, Any, List[str]], None]] = None) -> List[batch_mod.Result]:
        """One Result per distinct job key, in the order the keys first appear."""
        job_list = batch_mod.unique_jobs(jobs)
        results = {r.key: r for r in self.iter_evaluate(job_list, timeout_s=timeout_s, on_submit=on_submit)}
        return [results[j.key] for j in job_list]

    def iter_evaluate(self, jobs: Iterable[Any], *, timeout_s: Optional[float] = None,
                      on_submit: Optional[Callable[[int, Any, List[str]], None]] = None) -> Iterator[batch_mod.Result]:
        """Yields one Result per distinct job key as chunks come back.

        timeout_s: the whole batch's deadline; jobs still without an answer then get
        JOB_UNAVAILABLE results. on_submit(slot, actor, keys) is called after each chunk
        is handed to an actor (progress displays; fault-injection tests)."""
        ray = self.ray
        from ray.exceptions import RayActorError
        job_list = batch_mod.unique_jobs(jobs)
        by_key = {j.key: j for j in job_list}
        sends = {k: 0 for k in by_key}       # chunks that carried the job to an actor
        attempts = {k: 0 for k in by_key}    # Evaluate sends over all actors; a chunk lost with its actor: 1
        last_endpoint: Dict[str, str] = {}
        why: Dict[str, str] = {}
        todo = collections.deque(by_key)
        done = set()
        in_flight: Dict[Any, tuple] = {}      # ref -> (slot, keys)
        down_until: Dict[str, float] = {}     # endpoints that could not be reached, until then
        backoff: Dict[str, float] = {}
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for s in self.slots:
            s.deaths = 0

        def final(result: batch_mod.Result) -> batch_mod.Result:
            done.add(result.key)
            return result

        def give_up(key: str, message: str) -> batch_mod.Result:
            return final(batch_mod.unavailable(by_key[key], message, attempts[key], last_endpoint.get(key, "")))

        def requeue(key: str, reason: str) -> Optional[batch_mod.Result]:
            why[key] = reason
            if sends[key] > self.max_resends:
                return give_up(key, f"no answer after {sends[key]} sends to actors: {reason}")
            self.stats["resent"] += 1
            todo.append(key)
            return None

        def usable() -> List[_Slot]:
            live = [s for s in self.slots if s.deaths <= self.max_actor_deaths]
            now = time.monotonic()
            up = [s for s in live if down_until.get(s.endpoint, 0) <= now]
            # With every endpoint down, they are tried anyway: a send is the probe.
            return up or live

        def next_chunk(slot: _Slot, free: List[_Slot]) -> List[str]:
            # A job sent before goes to another endpoint than its last when one is free.
            chunk, skipped = [], []
            other_free = any(s.endpoint != slot.endpoint for s in free if s is not slot)
            while todo and len(chunk) < self.chunk_size:
                key = todo.popleft()
                if other_free and last_endpoint.get(key) == slot.endpoint:
                    skipped.append(key)
                else:
                    chunk.append(key)
            todo.extendleft(reversed(skipped))
            return chunk

        def submit() -> None:
            slots = usable()
            for slot in slots:
                free = [s for s in slots if s.busy is None]
                if slot.busy is not None or not todo:
                    continue
                keys = next_chunk(slot, free)
                if not keys:
                    continue
                for k in keys:
                    sends[k] += 1
                    last_endpoint[k] = slot.endpoint
                ref = slot.actor.evaluate.remote([by_key[k] for k in keys])
                slot.busy = ref
                in_flight[ref] = (slot, keys)
                self.stats["chunks"] += 1
                if on_submit is not None:
                    on_submit(slot.index, slot.actor, list(keys))

        def settle(slot: _Slot, keys: List[str], out) -> Iterator[batch_mod.Result]:
            answered = set()
            unreachable = bool(out)
            for r in out:
                if r.key not in by_key or r.key in answered:
                    continue
                answered.add(r.key)
                attempts[r.key] += r.attempts
                if r.key in done:
                    self.stats["duplicates"] += 1
                    continue
                # A JOB_UNAVAILABLE that names no instance never reached the service.
                unreachable &= r.result.error == pb.JOB_UNAVAILABLE and not r.result.instance_id
                if r.result.error in batch_mod.RETRYABLE and sends[r.key] <= self.max_resends:
                    requeue(r.key, f"{r.error}: {r.message}")
                    continue
                r.attempts = attempts[r.key]
                yield final(r)
            for k in keys:
                if k not in answered and k not in done:
                    given_up = requeue(k, f"the actor on {slot.endpoint} returned no answer for it")
                    if given_up is not None:
                        yield given_up
            if unreachable:
                b = min(2 * backoff.get(slot.endpoint, 1.0), 60.0)
                backoff[slot.endpoint] = b
                down_until[slot.endpoint] = time.monotonic() + b
            else:
                backoff.pop(slot.endpoint, None)
                down_until.pop(slot.endpoint, None)

        try:
            while True:
                submit()
                if not in_flight:
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0 if left is None else min(1.0, left))
                for ref in ready:
                    slot, keys = in_flight.pop(ref)
                    slot.busy = None
                    try:
                        out = ray.get(ref)
                    except RayActorError as e:
                        # The actor died with the chunk: a replacement takes its slot,
                        # and the chunk's jobs go again.
                        self._replace(slot)
                        reason = f"the actor on {slot.endpoint} died ({type(e).__name__})"
                        for k in keys:
                            if k not in done:
                                attempts[k] += 1
                                given_up = requeue(k, reason)
                                if given_up is not None:
                                    yield given_up
                        continue
                    yield from settle(slot, keys, out)
        finally:
            # Chunks still out belong to a batch that is over (its deadline passed, or
            # the caller stopped): their actors are replaced so that a later call does
            # not queue behind them.
            for slot, _keys in list(in_flight.values()):
                slot.busy = None
                self._replace(slot, died=False)
            in_flight.clear()
        late = deadline is not None and time.monotonic() >= deadline
        for key in by_key:
            if key not in done:
                reason = f"no answer within {timeout_s:g} s" if late else why.get(key, "no actor could take it")
                yield give_up(key, reason)

    def close(self) -> None:
        for s in self.slots:
            if s.actor is not None:
                try:
                    self.ray.kill(s.actor, no_restart=True)
                except Exception:
                    pass
                s.actor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def evaluate(jobs: Iterable[Any], endpoints: Sequence[str] | str, num_actors: Optional[int] = None, *,
             chunk_size: int = 16, max_resends: int = 3, timeout_s: Optional[float] = None,
             actor_options: Optional[Dict[str, Any]] = None, worker_options: Optional[Dict[str, Any]] = None,
             on_submit: Optional[Callable[[int, Any, List[str]], None]] = None) -> List[batch_mod.Result]:
    """Evaluates jobs (EvaluateJobs, dicts or job-file lines) on Ray actors over the
    services at `endpoints` and returns one tensorgym.batch.Result per distinct job key,
    in the order the keys first appear. See BatchPool for the options."""
    with BatchPool(endpoints, num_actors, chunk_size=chunk_size, max_resends=max_resends,
                   actor_options=actor_options, worker_options=worker_options) as pool:
        return pool.evaluate(jobs, timeout_s=timeout_s, on_submit=on_submit)


# -- rollouts -------------------------------------------------------------------------------

def random_masked_policy(rng: np.random.Generator) -> Callable[[Any, Dict[str, Any]], int]:
    """A policy that picks uniformly among the actions the mask allows (any action when
    the env gives no mask)."""

    def policy(obs, info, action_space):
        mask = info.get("action_mask")
        if isinstance(mask, np.ndarray) and mask.size == action_space.n and mask.any():
            return int(rng.choice(np.flatnonzero(mask)))
        return int(rng.integers(action_space.n))

    return policy


class RolloutWorker:
    """A Ray actor's body: one TensorGymEnv on one service (its own session), running
    whole episodes. env_kwargs go to TensorGymEnv (benchmark, observation_space,
    reward_space, max_episode_steps, ...). Start it with tensorgym.ray.rollout_actor."""

    def __init__(self, service: str, env: str = "schedule-v0", **env_kwargs):
        from .env import TensorGymEnv
        self.env = TensorGymEnv(env, service=service, **env_kwargs)

    def pid(self) -> int:
        return os.getpid()

    def run(self, seeds: Sequence[int], policy: Optional[Callable] = None, max_steps: int = 16,
            keep_observations: bool = True) -> List[Dict[str, Any]]:
        """One episode per seed. policy(obs, info, action_space) -> action; None picks
        random actions the mask allows, seeded by the episode's seed. An episode ends when
        the env terminates or truncates, or after max_steps steps. Each episode is a dict:
        seed, benchmark, actions, rewards, return, length, terminated, truncated, errors
        (the service's message for an action it refused, else None), observations (one
        more than actions) unless keep_observations is False, and the final state's
        action text (`state_actions`)."""
        episodes = []
        for seed in seeds:
            act = policy if policy is not None else random_masked_policy(np.random.default_rng(seed))
            obs, info = self.env.reset(seed=int(seed))
            ep = {"seed": int(seed), "benchmark": info.get("benchmark"), "actions": [], "rewards": [],
                  "errors": [], "terminated": False, "truncated": False}
            observations = [obs]
            for _ in range(int(max_steps)):
                action = act(obs, info, self.env.action_space)
                obs, reward, terminated, truncated, info = self.env.step(action)
                ep["actions"].append(int(action) if isinstance(action, (int, np.integer)) else action)
                ep["rewards"].append(float(reward))
                ep["errors"].append(info.get("error"))
                observations.append(obs)
                if terminated or truncated:
                    ep["terminated"], ep["truncated"] = bool(terminated), bool(truncated)
                    break
            ep["return"] = float(sum(ep["rewards"]))
            ep["length"] = len(ep["actions"])
            ep["state_actions"] = list(self.env.state.actions)
            if keep_observations:
                ep["observations"] = observations
            episodes.append(ep)
        return episodes

    def close(self) -> None:
        self.env.close()


def rollout_actor(service: str, env: str = "schedule-v0", actor_options: Optional[Dict[str, Any]] = None,
                  **env_kwargs):
    """A RolloutWorker actor with its own session on `service` ("host:port")."""
    return _remote(RolloutWorker, actor_options).remote(service, env, **env_kwargs)


def rollout(endpoints: Sequence[str] | str, episodes: int, num_actors: Optional[int] = None, *,
            env: str = "schedule-v0", env_kwargs: Optional[Dict[str, Any]] = None, policy: Optional[Callable] = None,
            max_steps: int = 16, seed: int = 0, episodes_per_task: int = 1, keep_observations: bool = True,
            max_resends: int = 3, actor_options: Optional[Dict[str, Any]] = None,
            timeout_s: Optional[float] = None,
            on_submit: Optional[Callable[[int, Any, List[int]], None]] = None) -> List[Dict[str, Any]]:
    """Runs `episodes` episodes (seeds seed, seed+1, ...) on RolloutWorker actors spread
    over the endpoints, and returns them in seed order. An actor that dies is replaced
    and its episodes run again from their seeds (identical for a deterministic env and
    policy). policy is pickled to the actors (a function or callable object).
    episodes_per_task: episodes in one actor task. on_submit(slot, actor, seeds) is
    called after each task is handed to an actor. timeout_s bounds the whole call
    (TimeoutError past it)."""
    ray = _ray()
    from ray.exceptions import RayActorError
    if not ray.is_initialized():
        raise RuntimeError("call ray.init() first (ray.init(address=...) to join a cluster)")
    eps = _endpoints(endpoints)
    n = int(num_actors or len(eps))
    kwargs = dict(env_kwargs or {})
    slots = [_Slot(i, eps[i % len(eps)]) for i in range(n)]

    def start(slot):
        slot.actor = rollout_actor(slot.endpoint, env, actor_options, **kwargs)

    for s in slots:
        start(s)
    seeds = list(range(seed, seed + int(episodes)))
    per = max(1, int(episodes_per_task))
    todo = collections.deque(seeds[i:i + per] for i in range(0, len(seeds), per))
    sends: Dict[int, int] = collections.Counter()
    out: Dict[int, Dict[str, Any]] = {}
    in_flight: Dict[Any, tuple] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while todo or in_flight:
            for s in slots:
                if s.busy is None and todo:
                    group = todo.popleft()
                    for sd in group:
                        sends[sd] += 1
                    s.busy = s.actor.run.remote(group, policy, max_steps, keep_observations)
                    in_flight[s.busy] = (s, group)
                    if on_submit is not None:
                        on_submit(s.index, s.actor, list(group))
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"rollout: {len(seeds) - len(out)} episodes unfinished after {timeout_s:g} s")
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0 if left is None else min(1.0, left))
            for ref in ready:
                s, group = in_flight.pop(ref)
                s.busy = None
                try:
                    for ep in ray.get(ref):
                        out.setdefault(ep["seed"], ep)
                except RayActorError:
                    if any(sends[sd] > max_resends for sd in group):
                        raise
                    try:
                        ray.kill(s.actor, no_restart=True)
                    except Exception:
                        pass
                    start(s)
                    todo.append(group)
    finally:
        for s in slots:
            try:
                ray.kill(s.actor, no_restart=True)
            except Exception:
                pass
    return [out[sd] for sd in seeds]
