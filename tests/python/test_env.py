"""The Gymnasium environments against a real service: spaces, reset/step, errors,
observations on request, fork, state and validation."""
import math
import pathlib

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tensorgym
from tensorgym import ServiceError

GMM = "benchmark://ops-v0/gmm-1"


@pytest.fixture
def env(service):
    e = tensorgym.make("schedule-v0", benchmark=GMM, service=service)
    yield e
    e.close()


@pytest.mark.parametrize("name", ["schedule-v0", "memory-v0"])
def test_check_env_passes_with_a_deterministic_reward(service, name):
    env = tensorgym.make(name, service=service)
    try:
        assert env.deterministic
        check_env(env, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("name", ["schedule-v0", "memory-v0"])
def test_gymnasium_make_registers_both_environments(service, name):
    env = gymnasium.make(f"tensorgym/{name}", service=service.address)
    try:
        assert env.spec.id == f"tensorgym/{name}"
        assert not env.spec.nondeterministic
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        assert info["action_mask"].shape == (env.action_space.n,)
    finally:
        env.close()


def test_measured_reward_is_registered_nondeterministic(service):
    env = gymnasium.make("tensorgym/schedule-v0", service=service.address, reward_space="runtime")
    try:
        assert env.spec.nondeterministic
        assert not env.unwrapped.deterministic
    finally:
        env.close()


def test_spaces_map_to_gymnasium_spaces(env):
    assert isinstance(env.action_space, gymnasium.spaces.Discrete) and env.action_space.n == 2888
    spaces = env.observation.spaces
    assert isinstance(spaces["features_flat"], gymnasium.spaces.Box) and spaces["features_flat"].shape == (493,)
    assert isinstance(spaces["features"], gymnasium.spaces.Sequence)
    assert isinstance(spaces["loop_nest"], gymnasium.spaces.Text)
    assert spaces["est_cycles"].shape == () and spaces["est_cycles"].dtype == np.float64
    assert spaces["peak_scratch_bytes"].dtype == np.int64
    assert spaces["action_mask"].shape == (2888,)


def test_reset_and_step_follow_the_gymnasium_api(env):
    obs, info = env.reset(seed=0)
    assert obs.shape == (493,) and obs.dtype == np.float64
    mask = info["action_mask"]
    assert mask.shape == (2888,) and mask.dtype == np.int8 and 0 < mask.sum() < 2888
    assert mask[env.action_space.sample(mask=mask)] == 1
    action = int(np.flatnonzero(mask)[0])
    obs2, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs2)
    assert isinstance(reward, float) and np.isfinite(reward)
    assert terminated is False and truncated is False
    assert info["action_had_no_effect"] is False
    assert "error" not in info
    assert len(env.state.actions) == 1


def test_every_form_of_an_action_is_the_same_step(env):
    _, info = env.reset(seed=0)
    first = int(np.flatnonzero(info["action_mask"])[0])
    env.step(first)
    (text,) = env.state.actions
    # An index as int, numpy integer or 0-d array, or its text: the same recorded action.
    for action in (np.int64(first), np.array(first, dtype=np.int32), text):
        env.reset(seed=0)
        env.step(action)
        assert list(env.state.actions) == [text]
    env.reset(seed=0)
    env.multistep([first, "parallel(C.j)", np.int16(first)])
    recorded = list(env.state.actions)
    assert recorded[:2] == [text, "parallel(C.j)"] and len(recorded) == 3
    with pytest.raises(TypeError):
        env.step(1.5)
    assert list(env.state.actions) == recorded


def test_an_action_that_does_not_apply_reports_its_error_in_info(env):
    env.reset()
    before = list(env.state.actions)
    _, reward, _, _, info = env.step("split(C.zz, 4, a, b)")
    assert info["error_code"] == "NOT_FOUND" and "no loop 'zz'" in info["error"]
    assert reward == 0.0
    assert list(env.state.actions) == before


def test_action_without_effect_is_flagged(env):
    env.reset()
    env.step("parallel(C.j)")
    _, _, _, _, info = env.step("parallel(C.j)")
    assert info["action_had_no_effect"] is True


def test_bad_input_raises_the_services_message_and_status(env):
    env.reset()
    with pytest.raises(ServiceError) as e:
        env.step(100000)
    assert e.value.code.name == "INVALID_ARGUMENT" and "out of range" in e.value.message
    with pytest.raises(ServiceError) as e:
        env.step("split(C.i, 4")
    assert e.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(ServiceError) as e:
        env.step(0, observations=["no_such_observation"])
    assert e.value.code.name == "INVALID_ARGUMENT" and "no_such_observation" in e.value.message
    with pytest.raises(ServiceError) as e:
        env.reset(options={"benchmark": "benchmark://ops-v0/no-such-op"})
    assert e.value.code.name == "NOT_FOUND" and "no-such-op" in e.value.message
    with pytest.raises(ServiceError) as e:
        tensorgym.make("schedule-v0", service=env.connection, observation_space="nope")
    assert e.value.code.name == "INVALID_ARGUMENT"
    # The episode is unchanged by all of it.
    assert list(env.state.actions) == []


def test_several_observations_and_rewards_per_step(env):
    env.reset()
    obs, rewards, _, _, _ = env.step("split(C.i, 8, io, ii)", observations=["est_cycles", "features", "schedule"],
                                     rewards=["est_cycles", "est_cycles_norm_expert"])
    est, features, schedule = obs
    assert isinstance(est, float) and est > 0
    assert features.ndim == 2 and features.shape[1] == 164
    assert "split(C.i, 8, io, ii)" in schedule
    assert len(rewards) == 2


def test_typed_observation_accessor(env):
    env.reset()
    features = env.observation["features"]
    assert isinstance(features, np.ndarray) and features.shape[1] == 164
    assert isinstance(env.observation["loop_nest"], str)
    assert env.observation["est_cycles"] == env.observation("est_cycles")[0]
    with pytest.raises(ServiceError):
        env.observation["nope"]


def test_dict_observation_space(service):
    env = tensorgym.make("schedule-v0", benchmark=GMM, service=service,
                         observation_space=["features_flat", "est_cycles"])
    try:
        obs, _ = env.reset()
        assert set(obs) == {"features_flat", "est_cycles"}
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_fork_is_independent(env):
    env.reset()
    env.step("split(C.i, 8, io, ii)")
    other = env.fork()
    try:
        other.step("parallel(C.io)")
        assert list(env.state.actions) == ["split(C.i, 8, io, ii)"]
        assert list(other.state.actions) == ["split(C.i, 8, io, ii)", "parallel(C.io)"]
    finally:
        other.close()
    _, _, _, _, info = env.step("split(C.j, 4, jo, ji)")  # the original still works after the fork closed
    assert "error" not in info and len(env.state.actions) == 2


def test_state_and_validate(env):
    env.reset()
    total = 0.0
    for a in ["split(C.i, 8, io, ii)", "parallel(C.io)"]:
        total += env.step(a)[1]
    state = env.state
    assert state.env == "schedule-v0" and state.benchmark == GMM
    assert state.reward == pytest.approx(total, abs=1e-12)
    assert env.validate().ok
    state.deterministic_rewards["est_cycles"] = state.deterministic_rewards["est_cycles"] + 0.5
    bad = env.validate(state)
    assert not bad.ok and "est_cycles" in bad.error


def test_reset_seed_picks_benchmarks_reproducibly(service):
    env = tensorgym.make("schedule-v0", benchmark="benchmark://ops-v0", service=service, action_mask=False)
    try:
        first = [env.reset(seed=s)[1]["benchmark"] for s in range(5)]
        again = [env.reset(seed=s)[1]["benchmark"] for s in range(5)]
        assert first == again and len(set(first)) > 1
        assert all(b.startswith("benchmark://ops-v0/") for b in first)
    finally:
        env.close()


def test_memory_env_episode_to_the_end(service):
    env = tensorgym.make("memory-v0", benchmark="benchmark://graphs-v0/mobilenet_v2", service=service,
                         action_space="placement", observation_space="arena_ratio")
    try:
        obs, info = env.reset()
        assert obs >= 1.0
        total, terminated, steps = 0.0, False, 0
        while not terminated and steps < 1000:
            _, r, terminated, _, info = env.step(0)
            total += r
            steps += 1
        assert terminated
        assert env.state.reward == pytest.approx(total, abs=1e-9)
        assert env.observation["plan"].count("\n") > 1
    finally:
        env.close()


def test_cursor_action_space_and_names(service):
    env = tensorgym.make("schedule-v0", benchmark=GMM, service=service, action_space="cursor",
                         observation_space="cursor")
    try:
        obs, _ = env.reset()
        assert env.action_names[0] == "stage_next" and env.action_space.n == len(env.action_names)
        assert obs.startswith("C.")
        obs, _, _, _, _ = env.step(env.action_names.index("loop_in"))
        assert obs.startswith("C.")
    finally:
        env.close()


def test_render_ansi(service):
    env = tensorgym.make("schedule-v0", benchmark=GMM, service=service, render_mode="ansi")
    try:
        env.reset()
        assert "# target-independent" in env.render()
    finally:
        env.close()


def test_max_episode_steps_truncates(service):
    env = tensorgym.make("schedule-v0", benchmark=GMM, service=service, max_episode_steps=2)
    try:
        env.reset()
        assert env.step("split(C.i, 4, io, ii)")[3] is False
        assert env.step("split(C.j, 4, jo, ji)")[3] is True
    finally:
        env.close()


def test_session_parameters_are_checked_by_the_service(service):
    env = tensorgym.make("schedule-v0", benchmark=GMM, service=service, parameters={"runner.repeat": "2"})
    try:
        env.reset()
        env.set_parameter("runner.number", "1")
        with pytest.raises(ServiceError) as e:
            env.set_parameter("runner.no_such_setting", "1")
        assert e.value.code.name == "INVALID_ARGUMENT"
        env.step("split(C.i, 4, io, ii)")  # the session goes on
    finally:
        env.close()
    bad = tensorgym.make("schedule-v0", benchmark=GMM, service=service, parameters={"runner.repeat": "zero"})
    try:
        with pytest.raises(ServiceError) as e:
            bad.reset()
        assert e.value.code.name == "INVALID_ARGUMENT"
    finally:
        bad.close()


def test_reset_may_change_the_action_space(service):
    env = tensorgym.make("memory-v0", benchmark="benchmark://graphs-v0/mobilenet_v2", service=service,
                         action_space="placement;memory_limit=100000000", observation_space="action_mask")
    try:
        obs, info = env.reset()
        assert env.action_space.n == 4 and env.action_names[0] == "best_fit" and obs.shape == (4,)
        obs, info = env.reset(options={"action_space": "order"})
        assert env.action_space.n == 256 and env.action_names is None
        assert obs.shape == (256,) and env.observation_space.contains(obs)
        assert env.state.action_space.startswith("order")
        with pytest.raises(ServiceError) as e:
            env.reset(options={"action_space": "nope"})
        assert "placement" in e.value.message
        assert env.action_space.n == 256  # unchanged by the refused reset
    finally:
        env.close()


def test_memory_rewrites_under_a_limit_through_the_gym_api(service):
    # MobileNetV2 at 64 pixels needs 491,520 bytes in any plan; rewriting it fits 300,000.
    env = tensorgym.make("memory-v0", benchmark="benchmark://graphs-v0/mobilenet_v2@64", service=service,
                         action_space="rewrite;memory_limit=300000;default_order=search", reward_space="arena",
                         observation_space=["feasible", "rewrites_offered"], action_mask=True)
    try:
        obs, info = env.reset()
        assert env.action_space.n == 1024 and not obs["feasible"]
        offered = obs["rewrites_offered"].splitlines()
        assert offered and int(info["action_mask"].sum()) == len(offered) + 1
        # A rewrite by its text, then stop: the defaults finish the plan.
        split = next(t for t in offered if t.startswith("split conv2d_5..add_15") and t.endswith("in 4 tiles"))
        obs, reward, terminated, truncated, info = env.step(split)
        assert obs["feasible"] and reward > 0 and not terminated
        obs, reward, terminated, truncated, info = env.step("stop")
        assert terminated and obs["feasible"]
        assert env.state.actions == [split, "stop"]
    finally:
        env.close()


def test_memory_runtime_reward_runs_the_whole_graph_and_validates(service):
    # The runtime reward: the rewritten graph run whole in its planned arena in a worker,
    # against the original planned by the defaults; the state replays.
    env = tensorgym.make("memory-v0", benchmark="benchmark://graphs-v0/mobilenet_v2@64", service=service,
                         action_space="rewrite;memory_limit=300000;default_order=search", reward_space="runtime",
                         observation_space=["rewrites_offered"],
                         parameters={"runner.repeat": "3", "runner.min_repeat_ms": "1"})
    try:
        obs, info = env.reset()
        split = next(t for t in obs["rewrites_offered"].splitlines()
                     if t.startswith("split conv2d_5..add_15") and t.endswith("in 4 tiles"))  # it fits
        obs, reward, terminated, truncated, info = env.step(split)
        assert reward == 0.0 and not terminated  # measured once, at the end
        obs, reward, terminated, truncated, info = env.step("stop")
        assert terminated and math.isfinite(reward) and reward != 0.0 and reward > -10.0
        assert "runtime" not in env.state.deterministic_rewards
        # The state replays and is measured again (whether it lands within the tolerance
        # depends on the machine's load: only a measured difference may fail it).
        v = env.validate()
        assert math.isfinite(v.replayed_rewards["runtime"])
        assert v.ok or v.error.startswith("reward runtime:")
    finally:
        env.close()


GPU_BIND = ["split(C.i, 16, io, ii)", "split(C.j, 32, jo, ji)", "reorder(C, io, jo, ii, ji, k)",
            "bind(C.io, blockIdx.y)", "bind(C.jo, blockIdx.x)", "bind(C.ii, threadIdx.y)", "bind(C.ji, threadIdx.x)"]


def test_the_cuda_target_is_a_reset_option(service):
    env = tensorgym.make("schedule-v0", service=service, benchmark=GMM, target="cuda", observation_space=None)
    try:
        assert env.reward_space_name == "est_gpu_time"  # est_cycles models the cpu
        env.reset(seed=0)
        total = sum(env.step(a)[1] for a in GPU_BIND)
        assert total > np.log(100)  # the GPU model: one thread to 512 threads x 32 blocks
        assert env.state.target == "cuda"
        assert ".entry" in env.observation["ptx"]
        # The env's reward has no model on the cpu, and there is no tpu: both resets are
        # refused and the episode goes on where it was.
        actions = list(env.state.actions)
        with pytest.raises(ServiceError) as no_model:
            env.reset(options={"target": "cpu"})
        assert no_model.value.code.name == "UNIMPLEMENTED" and "est_gpu_time" in no_model.value.message
        with pytest.raises(ServiceError) as unknown:
            env.reset(options={"target": "tpu"})
        assert unknown.value.code.name == "INVALID_ARGUMENT" and "cpu, cuda" in unknown.value.message
        assert env.state.target == "cuda" and list(env.state.actions) == actions
        # Another env's reset option: a cuda episode on an env made for the cpu.
        cpu = tensorgym.make("schedule-v0", service=service, benchmark=GMM, observation_space=None,
                             reward_space=None)
        try:
            cpu.reset(options={"target": "cuda"})
            assert cpu.state.target == "cuda"
            cpu.reset()
            assert cpu.state.target == "cpu"
        finally:
            cpu.close()
    finally:
        env.close()


def test_a_cuda_state_replays_on_cuda(service):
    env = tensorgym.make("schedule-v0", service=service, benchmark=GMM, target="cuda", observation_space=None)
    other = tensorgym.make("schedule-v0", service=service, benchmark=GMM, observation_space=None,
                           reward_space="est_gpu_time")
    try:
        env.reset()
        for a in GPU_BIND:
            env.step(a)
        state = env.state
        other.reset(options={"state": state})
        assert other.state.target == "cuda" and list(other.state.actions) == list(state.actions)
        assert env.validate().ok
    finally:
        env.close()
        other.close()


FPGA_GEMM = "benchmark://fpga-v0/gemm_16x512x512"
REPO = pathlib.Path(__file__).resolve().parents[2]


def expert_actions(schedule):
    return [a.strip() for line in schedule.splitlines() if not line.startswith("#")
            for a in line.split(";") if a.strip()]


def test_the_fpga_target_rewards_simulated_runtime(service):
    env = tensorgym.make("schedule-v0", service=service, benchmark=FPGA_GEMM, target="fpga",
                         observation_space=None)
    try:
        assert env.reward_space_name == "runtime"
        env.reset()
        schedule = (REPO / "datasets" / "fpga" / "gemm_16x512x512.fpga.sched").read_text()
        rewards = [env.step(a)[1] for a in expert_actions(schedule)]
        # Nothing to run until the schedule is whole; then the gain over the smallest tiling.
        assert rewards[:-1] == [0.0] * (len(rewards) - 1) and rewards[-1] > 0.5
        cycles = env.observation["fpga_cycles"]
        assert cycles.shape == (22,) and cycles[0] > 0
        assert "GEMM" in env.observation["fpga_instructions"]
        state = env.state
        assert state.target == "fpga" and state.deterministic_rewards["runtime"] == pytest.approx(sum(rewards))
        assert env.validate().ok  # the simulated runtime replays to the bit
    finally:
        env.close()
