"""tensorgym.ray on a real local Ray instance (2 CPUs): batch evaluation spread over
actors, an actor killed mid-batch, and rollout workers. The actors connect to a managed
service of this process by its address, as they would to services on other hosts."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import tensorgym
import tensorgym.batch as tb

ray = pytest.importorskip("ray")
import tensorgym.ray as tgr  # noqa: E402

from conftest import run_cli  # noqa: E402

OBSERVE = ["est_cycles", "loop_nest"]


def gcs_log_tail(temp_dir, lines=20):
    """The GCS server's stderr and its warnings and errors under `temp_dir` (the last `lines` of
    each log), to say why it did not start."""
    tails = []
    for path in sorted(glob.glob(os.path.join(temp_dir, "session_*", "logs", "gcs_server.*"))):
        with open(path, errors="replace") as f:
            kept = [line for line in f if path.endswith(".err") or re.match(r"\[\S+ \S+ [WEF] ", line)]
        tails.append(f"{path}:\n" + "".join(kept[-lines:]))
    return "\n".join(tails) or f"(no GCS log under {temp_dir})"


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance with 2 CPUs, shut down after the module even when a test fails
    (one that another module started is used as it is, and left running).

    It lives in a fresh temporary directory (never a stale /tmp/ray of another run), its GCS
    server gets 45 s to bind its port instead of 30 (a loaded 2-core machine has taken
    longer), and a start that fails is tried once more (both within the first test's
    timeout); a second failure names the GCS logs."""
    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "45")
    temp_dir = tempfile.mkdtemp(prefix="tgray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    for attempt in (1, 2):
        try:
            ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024,
                     log_to_driver=False, configure_logging=False, _temp_dir=temp_dir)
            break
        except Exception as e:  # Ray raises RuntimeError, ConnectionError, TimeoutError by version
            ray.shutdown()
            if attempt == 2:
                why = gcs_log_tail(temp_dir)
                shutil.rmtree(temp_dir, ignore_errors=True)
                pytest.fail(f"Ray did not start twice: {e}\n{why}")
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """30 jobs: random legal schedules of ops-v0 benchmarks, from `tensorgym batch --make-jobs`."""
    path = tmp_path_factory.mktemp("jobs") / "jobs.jsonl"
    path.write_text(run_cli("batch", "--make-jobs", "--suite", "ops-v0", "--schedules", "random:3", "--seed", "3",
                            "--observe", ",".join(OBSERVE), "--limit", "10").stdout)
    return tb.read_jobs(str(path))


@pytest.fixture(scope="module")
def expected(jobs, service):
    """The deterministic values, from one stream in this process."""
    return {r.key: r.to_dict()["observations"] for r in tb.evaluate(jobs, service=service)}


def check_exactly_once(results, jobs, expected):
    assert [r.key for r in results] == [j.key for j in jobs]
    assert all(r.ok for r in results), [(r.error, r.message) for r in results if not r.ok]
    for r in results:
        assert r.to_dict()["observations"] == expected[r.key]


@pytest.mark.timeout(120)
def test_ray_batch_gives_the_values_of_one_stream(ray_instance, service, jobs, expected):
    assert len(jobs) == 30
    # Two endpoint entries for one service: the actors take them round robin.
    results = tgr.evaluate(jobs + jobs[:5], [service.address, service.address], num_actors=2, chunk_size=4,
                           timeout_s=90)
    check_exactly_once(results, jobs, expected)
    assert all(r.endpoint == service.address and r.attempts == 1 for r in results)
    # One result matches a plain environment stepped through the same schedule.
    env = tensorgym.make("schedule-v0", benchmark=jobs[0].benchmark, observation_space="est_cycles",
                         reward_space=None, service=service)
    try:
        env.reset()
        obs, _, _, _, info = env.multistep([a for a in jobs[0].actions.split("\n") if a])
        assert "error" not in info
        assert results[0].observations["est_cycles"] == obs
    finally:
        env.close()


@pytest.mark.timeout(180)
def test_actors_killed_mid_batch_still_give_one_result_per_job(ray_instance, service, jobs, expected):
    """Two actors die while they hold a chunk: one by SIGKILL of its process, one by
    ray.kill. Replacements take their slots, the chunks go again, and every job has
    exactly one result with the values of a healthy run."""
    with tgr.BatchPool([service.address], num_actors=2, chunk_size=3) as pool:
        pids = pool.actor_pids()
        assert len(set(pids)) == 2
        killed = []

        def on_submit(slot, actor, keys):
            if len(killed) == 0:
                os.kill(pids[slot], signal.SIGKILL)
                killed.append(("sigkill", slot, list(keys)))
            elif len(killed) == 1 and slot != killed[0][1]:
                ray.kill(actor, no_restart=True)
                killed.append(("ray.kill", slot, list(keys)))

        results = pool.evaluate(jobs, on_submit=on_submit, timeout_s=150)
        assert [k[0] for k in killed] == ["sigkill", "ray.kill"]
        assert pool.stats["actor_deaths"] == 2
        check_exactly_once(results, jobs, expected)
        lost = {k for _, _, keys in killed for k in keys}
        assert all(r.attempts >= 2 for r in results if r.key in lost)
        assert all(r.attempts == 1 for r in results if r.key not in lost)
        # The pool's actors work after the deaths: new processes, the same answers again.
        assert set(pool.actor_pids()).isdisjoint(pids)
        again = pool.evaluate(jobs[:6], timeout_s=60)
        check_exactly_once(again, jobs[:6], expected)


@pytest.mark.timeout(180)
def test_a_service_lost_mid_batch_sends_its_jobs_to_the_other(ray_instance, service, jobs, expected):
    """Two endpoints; the second service stops as soon as its actor gets a chunk. That
    actor cannot reach it within its 1 s reconnect budget and hands the chunk back as
    JOB_UNAVAILABLE; the driver sends those jobs to the first endpoint."""
    other = tensorgym.ManagedService(args=["--workers", "1"])
    try:
        stopped = []

        def on_submit(slot, actor, keys):
            if slot == 1 and not stopped:
                other.close()
                stopped.append(list(keys))

        with tgr.BatchPool([service.address, other.address], num_actors=2, chunk_size=3,
                           worker_options={"reconnect_timeout_s": 1.0}) as pool:
            results = pool.evaluate(jobs, on_submit=on_submit, timeout_s=150)
            assert stopped and pool.stats["resent"] >= len(stopped[0])
    finally:
        other.close()
    check_exactly_once(results, jobs, expected)
    assert all(r.endpoint == service.address for r in results if r.key in stopped[0])


@pytest.mark.timeout(120)
def test_ray_rollouts_of_short_episodes(ray_instance, service):
    env_kwargs = {"benchmark": "benchmark://ops-v0/gmm-1", "observation_space": "est_cycles",
                  "reward_space": "est_cycles", "max_episode_steps": 4}
    episodes = tgr.rollout([service.address], episodes=4, num_actors=2, env_kwargs=env_kwargs, max_steps=4, seed=10,
                           timeout_s=90)
    assert [e["seed"] for e in episodes] == [10, 11, 12, 13]
    for e in episodes:
        assert 1 <= e["length"] <= 4 and len(e["observations"]) == e["length"] + 1
        assert e["return"] == pytest.approx(sum(e["rewards"]))
        assert all(err is None for err in e["errors"])  # the mask only offers actions that apply
        assert len(e["state_actions"]) == e["length"]
    # Seeded: the same seeds give the same episodes, on whichever actor they land.
    again = tgr.rollout([service.address], episodes=2, num_actors=1, env_kwargs=env_kwargs, max_steps=4, seed=10,
                        timeout_s=90)
    for a, b in zip(again, episodes[:2]):
        assert a["actions"] == b["actions"] and a["rewards"] == b["rewards"]

    # A rollout actor killed with episodes in hand: a replacement runs them from their seeds.
    killed = []

    def kill_first(slot, actor, seeds):
        if not killed:
            ray.kill(actor, no_restart=True)
            killed.extend(seeds)

    survived = tgr.rollout([service.address], episodes=4, num_actors=2, env_kwargs=env_kwargs, max_steps=4, seed=10,
                           on_submit=kill_first, timeout_s=90)
    assert killed == [10]
    assert [(e["seed"], e["actions"], e["rewards"]) for e in survived] == \
        [(e["seed"], e["actions"], e["rewards"]) for e in episodes]

    # A policy of the caller's (pickled to the actors): the first action the mask allows.
    def first_allowed(obs, info, action_space):
        return int(np.flatnonzero(info["action_mask"])[0])

    greedy = tgr.rollout([service.address], episodes=2, num_actors=2, env_kwargs=env_kwargs, max_steps=3,
                         policy=first_allowed, keep_observations=False, timeout_s=90)
    assert greedy[0]["actions"] == greedy[1]["actions"] and "observations" not in greedy[0]

    # The episode replays in a plain environment with the same rewards.
    env = tensorgym.make("schedule-v0", service=service, **env_kwargs)
    try:
        env.reset(seed=10)
        rewards = [env.step(a)[1] for a in episodes[0]["actions"]]
        assert rewards == episodes[0]["rewards"]
    finally:
        env.close()


def test_ray_needs_endpoints_and_says_when_it_is_missing(ray_instance):
    with pytest.raises(ValueError, match="endpoint"):
        tgr.evaluate([], [])
    # Without Ray installed, the error says how to get it.
    code = ("import sys; sys.modules['ray'] = None\n"
            "import tensorgym.ray as t\n"
            "try:\n    t.BatchPool(['127.0.0.1:1'])\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install" in out.stdout and "ray" in out.stdout, out.stderr
