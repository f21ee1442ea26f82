"""Vector environments: N sessions on one managed service, or spread over endpoints."""
import numpy as np
import pytest

import gymnasium
import tensorgym


def _masked_actions(masks, rng):
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_async_vector_env_on_one_managed_service():
    vec = tensorgym.make_vec("schedule-v0", num_envs=3, benchmark="benchmark://ops-v0/gmm-1")
    try:
        obs, info = vec.reset(seed=7)
        assert obs.shape == (3, 493)
        assert info["action_mask"].shape == (3, 2888)
        addresses = vec.get_attr("service_address")
        assert len(set(addresses)) == 1
        rng = np.random.default_rng(0)
        for _ in range(5):
            obs, rewards, terminated, truncated, info = vec.step(_masked_actions(info["action_mask"], rng))
            assert obs.shape == (3, 493) and rewards.shape == (3,) and np.all(np.isfinite(rewards))
        service = vec._tensorgym_service
        assert service.alive()
    finally:
        vec.close()
    assert not service.alive()


def test_async_vector_env_spread_over_endpoints():
    with tensorgym.ManagedService() as a, tensorgym.ManagedService() as b:
        vec = tensorgym.make_vec("memory-v0", num_envs=4, service=[a.address, b.address],
                                 benchmark="benchmark://graphs-v0/mobilenet_v2", action_space="placement",
                                 observation_space="arena_ratio")
        try:
            assert list(vec.get_attr("service_address")) == [a.address, b.address, a.address, b.address]
            obs, _ = vec.reset(seed=1)
            assert obs.shape == (4,) and np.all(obs >= 1.0)
            obs, rewards, _, _, _ = vec.step(np.zeros(4, dtype=np.int64))
            # The same decision in the same episode gives the same deterministic reward.
            assert np.all(rewards == rewards[0])
        finally:
            vec.close()


def test_gymnasium_async_vector_env_with_tensorgym_make(service):
    address = service.address  # the workers get the address, not the process handle
    # "tensorgym:" imports the package in the worker, which registers the environments.
    fns = [lambda: gymnasium.make("tensorgym:tensorgym/schedule-v0", service=address,
                                  benchmark="benchmark://ops-v0/gmm-2") for _ in range(2)]
    vec = gymnasium.vector.AsyncVectorEnv(fns, context="forkserver")
    try:
        obs, info = vec.reset(seed=0)
        assert obs.shape == (2, 493)
        obs, rewards, _, _, _ = vec.step(np.array([0, 0]))
        assert rewards[0] == rewards[1]
    finally:
        vec.close()


def test_sync_vector_env():
    vec = tensorgym.make_vec("schedule-v0", num_envs=2, vectorization_mode="sync", observation_space="est_cycles")
    try:
        obs, _ = vec.reset(seed=0)
        assert obs.shape == (2,) and np.all(obs > 0)
    finally:
        vec.close()
    with pytest.raises(ValueError):
        tensorgym.make_vec("schedule-v0", num_envs=1, vectorization_mode="threads", service="127.0.0.1:1")


def test_workers_survive_their_shared_service_dying():
    actions = ["split(C.i, 16, io, ii)", "parallel(C.io)", "split(C.j, 8, jo, ji)", "vectorize(C.ji)"]
    reference = tensorgym.make("schedule-v0", benchmark="benchmark://ops-v0/gmm-3", observation_space=None)
    try:
        reference.reset()
        expected = [reference.step(a)[1] for a in actions]
    finally:
        reference.close()
    vec = tensorgym.make_vec("schedule-v0", num_envs=2, benchmark="benchmark://ops-v0/gmm-3",
                             observation_space="est_cycles")
    try:
        vec.reset(seed=0)
        rewards = [vec.step(np.array([a, a], dtype=object))[1] for a in actions[:2]]
        service = vec._tensorgym_service
        old_pid = service.pid
        service.kill()  # the watcher starts another on the same port
        rewards += [vec.step(np.array([a, a], dtype=object))[1] for a in actions[2:]]
        assert service.pid != old_pid and service.alive()
        for r, e in zip(rewards, expected):
            assert list(r) == [e, e]
    finally:
        vec.close()
