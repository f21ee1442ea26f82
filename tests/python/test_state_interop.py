"""Episode states move between Python and the command line, both ways, as JSON Lines."""
import pytest

import tensorgym
from conftest import run_cli

ACTIONS = ["split(C.i, 16, io, ii)", "parallel(C.io)", "split(C.j, 8, jo, ji)"]


def test_the_cli_validates_a_state_written_from_python(service, tmp_path):
    env = tensorgym.make("schedule-v0", benchmark="benchmark://ops-v0/gmm-2", service=service)
    try:
        env.reset()
        for a in ACTIONS:
            env.step(a)
        path = tmp_path / "python.jsonl"
        tensorgym.append_state(str(path), env.state)
    finally:
        env.close()
    result = run_cli("validate", "--quiet", str(path), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    replay = run_cli("replay", str(path))
    for a in ACTIONS:
        assert a in replay.stdout


def test_python_replays_a_state_written_by_the_cli(service, tmp_path):
    path = tmp_path / "cli.jsonl"
    run_cli("run", "--benchmark", "benchmark://ops-v0/gmm-2", "--actions", "; ".join(ACTIONS), "--reward",
            "est_cycles", "--state-out", str(path))
    [state] = tensorgym.read_states(str(path))
    assert list(state.actions) == ACTIONS
    env = tensorgym.make("schedule-v0", service=service)
    try:
        assert env.validate(state).ok
        env.reset(options={"state": state})
        mine = env.state
        assert list(mine.actions) == ACTIONS and mine.benchmark == state.benchmark
        assert mine.deterministic_rewards["est_cycles"] == state.deterministic_rewards["est_cycles"]
        _, _, _, _, info = env.step("parallel(C.jo)")  # the episode goes on from there
        assert "error" not in info and len(env.state.actions) == len(ACTIONS) + 1
    finally:
        env.close()


def test_a_python_file_round_trips_through_json_lines(tmp_path):
    state = tensorgym.EpisodeState(env="memory-v0", benchmark="benchmark://graphs-v0/resnet50",
                                   actions=["best_fit", "top"], reward_space="arena", reward=0.25,
                                   action_space="placement")
    state.deterministic_rewards["arena"] = 0.25
    path = tmp_path / "s.jsonl"
    tensorgym.write_states(str(path), [state, state])
    assert tensorgym.read_states(str(path)) == [state, state]
    line = tensorgym.state_to_json(state)
    assert '"deterministic_rewards":{"arena":0.25}' in line and "\n" not in line


def test_a_torn_or_bad_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = tensorgym.state_to_json(tensorgym.EpisodeState(env="schedule-v0", benchmark="benchmark://ops-v0/gmm-1"))
    path.write_text(good + "\n" + '{"env": "schedule-v0", "nope": 1}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2:"):
        tensorgym.read_states(str(path))
    path.write_text(good + "\n" + good[:20])
    with pytest.raises(ValueError, match=r"bad.jsonl:2: the last line is cut short"):
        tensorgym.read_states(str(path))
