"""Cheap steps travel on one open Session stream per environment; a step that may
measure stays unary. The stream keeps each step's deadline, recovers like a unary step,
and closes with its environment."""
import os
import signal
import time

import pytest

import tensorgym
from tensorgym import ServiceError, _step_stream
from tensorgym.proto import pb

ACTIONS = ["split(C.i, 16, io, ii)", "parallel(C.io)", "split(C.k, 8, ko, ki)"]


def _wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture(params=["direct", "public"])
def transport(request, monkeypatch):
    """Each test on both streams: driven from the stepping thread (grpcio's internal
    call API), and grpcio's public stream API, the fallback."""
    if request.param == "public":
        monkeypatch.setattr(_step_stream, "_direct_works", False)
    elif not _step_stream._direct_works:
        pytest.skip("this grpcio has no internal call API of the expected shape")
    return request.param


def _stopped(pid):
    """Whether every thread of the process has stopped (SIGSTOP reaches them one by one)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "T":
                    return False
        except FileNotFoundError:
            pass
    return True


def test_cheap_steps_share_one_stream_and_answer_as_unary_steps(service, transport):
    streamed = tensorgym.make("schedule-v0", service=service, observation_space=["features_flat", "flops"])
    unary = tensorgym.make("schedule-v0", service=service, observation_space=["features_flat", "flops"])
    unary._open_step_stream = lambda: None  # this instance steps unary only
    try:
        streamed.reset(seed=0)
        unary.reset(seed=0)
        stream = None
        for a in ACTIONS:
            got = streamed.step(a)
            want = unary.step(a)
            stream = stream or streamed._step_stream
            assert streamed._step_stream is stream  # one stream for the whole episode
            assert stream.direct == (transport == "direct")
            assert got[1] == want[1] and got[2:4] == want[2:4]
            assert (got[0]["features_flat"] == want[0]["features_flat"]).all()
            assert got[4]["action_had_no_effect"] == want[4]["action_had_no_effect"]
            assert (got[4]["action_mask"] == want[4]["action_mask"]).all()
        # A refused action: the same error in info, on either path.
        got, want = streamed.step("reorder(C, nope, io)"), unary.step("reorder(C, nope, io)")
        assert got[4]["error"] == want[4]["error"] and got[4]["error_code"] == want[4]["error_code"]
        assert list(streamed.state.actions) == list(unary.state.actions) == ACTIONS
        assert "_step_stream" not in unary.__dict__
    finally:
        streamed.close()
        unary.close()


def test_a_step_that_may_measure_is_unary(service):
    env = tensorgym.make("schedule-v0", service=service, observation_space=None, reward_space=None)
    try:
        env.reset(seed=0)
        assert not env._cannot_measure([], ["runtime"])
        assert not env._cannot_measure(["inst_count"], [])
        assert env._cannot_measure(["features_flat", "action_mask"], ["est_cycles"])
        env.step(ACTIONS[0], observations=["program"], rewards=["est_cycles"])
        assert env.__dict__.get("_step_stream") is not None
    finally:
        env.close()


def test_the_stream_closes_with_its_environment(service, transport):
    env = tensorgym.make("schedule-v0", service=service)
    env.reset(seed=0)
    env.step(ACTIONS[0])
    stream = env._step_stream
    assert stream in _step_stream._open
    env.close()
    assert _wait_for(lambda: stream not in _step_stream._open)


def test_a_fork_steps_on_its_own_stream(service, transport):
    env = tensorgym.make("schedule-v0", service=service)
    try:
        env.reset(seed=0)
        env.step(ACTIONS[0])
        fork = env.fork()
        try:
            fork.step(ACTIONS[1])
            env.step(ACTIONS[2])
            assert fork._step_stream is not env._step_stream
            assert list(fork.state.actions) == ACTIONS[:2]
            assert list(env.state.actions) == [ACTIONS[0], ACTIONS[2]]
        finally:
            fork.close()
        env.step("split(C.j, 4, jo, ji)")  # the original's stream outlives the fork
    finally:
        env.close()


def test_past_the_cap_steps_are_unary(service, monkeypatch):
    monkeypatch.setattr(_step_stream, "_MAX_STREAMS", len(_step_stream._open) + 1)
    a = tensorgym.make("schedule-v0", service=service)
    b = tensorgym.make("schedule-v0", service=service)
    try:
        a.reset(seed=0)
        b.reset(seed=0)
        ra = [a.step(x)[1] for x in ACTIONS]
        rb = [b.step(x)[1] for x in ACTIONS]
        assert ra == rb
        assert a.__dict__.get("_step_stream") is not None and b.__dict__.get("_step_stream") is None
    finally:
        a.close()
        b.close()


def test_a_stream_step_past_its_deadline_fails_and_the_episode_goes_on(service, transport):
    managed = service  # stopped for a moment, then resumed
    env = tensorgym.make("schedule-v0", service=managed, timeout_s=1.0)
    try:
        env.reset(seed=0)
        env.step(ACTIONS[0])
        os.kill(managed.pid, signal.SIGSTOP)
        try:
            assert _wait_for(lambda: _stopped(managed.pid))
            start = time.monotonic()
            with pytest.raises(ServiceError) as e:
                env.step(ACTIONS[1])
            assert e.value.code.name == "DEADLINE_EXCEEDED"
            assert time.monotonic() - start < 10
        finally:
            os.kill(managed.pid, signal.SIGCONT)
        _, _, _, _, info = env.step(ACTIONS[1])
        assert "error" not in info
        assert list(env.state.actions) == ACTIONS[:2]
    finally:
        env.close()


def test_a_stream_broken_by_a_crash_recovers(transport):
    managed = tensorgym.ManagedService()
    env = tensorgym.make("schedule-v0", service=managed)
    try:
        env.reset(seed=0)
        env.step(ACTIONS[0])
        first = env._step_stream
        managed.kill()
        _, _, _, _, info = env.step(ACTIONS[1])
        assert "error" not in info
        assert env._step_stream is not first and env.connection.stats["restarts"] == 1
        assert list(env.state.actions) == ACTIONS[:2]
    finally:
        env.close()
        managed.close()


def test_a_session_the_server_forgot_is_replayed_on_the_stream(service, transport):
    env = tensorgym.make("schedule-v0", service=service)
    try:
        env.reset(seed=0)
        env.step(ACTIONS[0])
        env.connection.raw("EndSession", pb.EndSessionRequest(session_id=env.session_id))
        _, _, _, _, info = env.step(ACTIONS[1])
        assert "error" not in info and env.connection.stats["replays"] == 1
        assert list(env.state.actions) == ACTIONS[:2]
    finally:
        env.close()


def test_a_stream_whose_service_stopped_recovers():
    env = tensorgym.make("schedule-v0", service=tensorgym.ManagedService())
    managed = env.connection.managed
    try:
        env.reset(seed=0)
        env.step(ACTIONS[0])
        managed.close()  # stopped for good: recovery restarts it
        _, _, _, _, info = env.step(ACTIONS[1])
        assert "error" not in info and list(env.state.actions) == ACTIONS[:2]
    finally:
        env.close()
        managed.close()
