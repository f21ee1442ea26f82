"""A service that dies mid-episode does not kill the trainer: the client restarts it (or
reconnects) and replays the episode; a dead remote endpoint is a clear error."""
import time

import grpc
import pytest

import tensorgym
from tensorgym import ServiceUnavailable
from tensorgym.proto import pb

ACTIONS = ["split(C.i, 16, io, ii)", "parallel(C.io)", "split(C.k, 8, ko, ki)"]


def _episode(env, actions):
    env.reset(options={"benchmark": "benchmark://ops-v0/gmm-3"})
    return [env.step(a)[1] for a in actions]


def test_a_managed_service_killed_mid_episode_is_restarted_and_the_episode_replayed():
    reference = tensorgym.make("schedule-v0")
    env = tensorgym.make("schedule-v0", service=tensorgym.ManagedService())
    try:
        expected = _episode(reference, ACTIONS + ["split(C.j, 4, jo, ji)"])
        rewards = _episode(env, ACTIONS)
        old_pid = env.connection.managed.pid
        env.connection.managed.kill()
        obs, reward, terminated, truncated, info = env.step("split(C.j, 4, jo, ji)")
        assert "error" not in info and not terminated
        assert env.connection.managed.pid != old_pid
        assert env.connection.stats["restarts"] == 1 and env.connection.stats["replays"] == 1
        # The episode continued in the identical state: same actions, same deterministic rewards.
        assert rewards + [reward] == expected
        assert list(env.state.actions) == list(reference.state.actions)
        assert env.state.deterministic_rewards["est_cycles"] == reference.state.deterministic_rewards["est_cycles"]
    finally:
        managed = env.connection.managed
        env.close()
        managed.close()
        reference.close()


def test_a_session_the_server_forgot_is_replayed(service):
    env = tensorgym.make("schedule-v0", service=service)
    try:
        _episode(env, ACTIONS[:2])
        env.connection.raw("EndSession", pb.EndSessionRequest(session_id=env.session_id))
        old = env.session_id
        _, _, _, _, info = env.step(ACTIONS[2])
        assert "error" not in info and env.session_id != old
        assert list(env.state.actions) == ACTIONS
    finally:
        env.close()


def test_a_fork_recovers_on_its_own():
    managed = tensorgym.ManagedService()
    env = tensorgym.make("schedule-v0", service=managed)
    try:
        _episode(env, ACTIONS[:1])
        other = env.fork()
        managed.kill()
        other.step(ACTIONS[1])
        env.step(ACTIONS[2])
        assert list(other.state.actions) == ACTIONS[:2]
        assert list(env.state.actions) == [ACTIONS[0], ACTIONS[2]]
        other.close()
    finally:
        env.close()
        managed.close()


def test_a_dead_remote_endpoint_fails_clearly_after_its_retry_budget():
    managed = tensorgym.ManagedService()
    env = tensorgym.make("schedule-v0", service=managed.address, reconnect_timeout_s=1.0)
    try:
        _episode(env, ACTIONS[:1])
        managed.kill()
        start = time.monotonic()
        with pytest.raises(ServiceUnavailable) as e:
            env.step(ACTIONS[1])
        assert time.monotonic() - start < 30
        assert e.value.code == grpc.StatusCode.UNAVAILABLE
        assert managed.address in e.value.message and "attempts" in e.value.message
    finally:
        env.close()
        managed.close()


def test_an_unreachable_endpoint_at_connect_is_a_clear_error():
    with pytest.raises(ServiceUnavailable) as e:
        tensorgym.make("schedule-v0", service="127.0.0.1:1", startup_timeout_s=0.5)
    assert "127.0.0.1:1" in e.value.message


def test_a_step_past_its_deadline_leaves_the_episode_consistent(service):
    env = tensorgym.make("schedule-v0", service=service, benchmark="benchmark://ops-v0/gmm-3",
                         observation_space=None, reward_space=None, action_mask=False)
    try:
        env.reset()
        env._timeout = 0.01  # far less than compiling and timing a 512^3 GEMM takes
        with pytest.raises(tensorgym.ServiceError) as e:
            env.step("split(C.i, 16, io, ii)", observations=["runtime"])
        assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        env._timeout = None
        env.step("split(C.j, 16, jo, ji)")
        # Whatever the server did with the late step, the client's episode is the server's.
        actions = list(env.state.actions)
        assert actions[-1] == "split(C.j, 16, jo, ji)" and len(actions) in (1, 2)
        assert len([h for h in env._history if h.actions]) == len(actions)
    finally:
        env.close()
