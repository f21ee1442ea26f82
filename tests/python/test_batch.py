"""tensorgym.batch: the Evaluate stream from Python, against real services and the
`tensorgym batch` command line (job files, content keys, the journal)."""
import json
import math

import pytest

import tensorgym
import tensorgym.batch as tb
from tensorgym.proto import pb

from conftest import run_cli

OBSERVE = ["est_cycles", "loop_nest"]


def make_jobs(tmp_path, schedules=3, limit=4, seed=1):
    """A job file from the command line: random legal schedules of ops-v0 benchmarks."""
    path = tmp_path / "jobs.jsonl"
    out = run_cli("batch", "--make-jobs", "--suite", "ops-v0", "--schedules", f"random:{schedules}", "--seed",
                  str(seed), "--observe", ",".join(OBSERVE), "--limit", str(limit)).stdout
    path.write_text(out)
    return str(path)


def direct_values(job, service):
    """What a plain environment observes after the job's actions (the ground truth)."""
    env = tensorgym.make("schedule-v0", benchmark=job.benchmark, observation_space=list(job.observations),
                         reward_space=None, service=service)
    try:
        obs, _ = env.reset()
        actions = [a for a in job.actions.split("\n") if a.strip()]
        if actions:
            obs, _, _, _, info = env.multistep(actions)
            assert "error" not in info, info
        return obs
    finally:
        env.close()


def test_batch_equals_a_direct_environment(service):
    jobs = [{"benchmark": "benchmark://ops-v0/gmm-1", "observations": OBSERVE},
            {"benchmark": "benchmark://ops-v0/gmm-1", "actions": "split(C.i, 32, io, ii)", "observations": OBSERVE},
            {"benchmark": "benchmark://ops-v0/gmm-2", "actions": "split(C.j, 8, jo, ji)\nreorder(C, k, jo)",
             "observations": OBSERVE, "rewards": ["est_cycles"]}]
    results = list(tb.evaluate(jobs, service=service))
    assert len(results) == 3
    by_key = {r.key: r for r in results}
    for j in jobs:
        job = tb.to_job(j)
        r = by_key[job.key]
        assert r.ok, r.message
        assert r.attempts == 1 and r.endpoint == service.address
        expected = direct_values(job, service)
        assert r.observations["est_cycles"] == expected["est_cycles"]
        assert r.observations["loop_nest"] == expected["loop_nest"]
    # The schedule changes the estimate: the values are the job's own.
    assert len({r.observations["est_cycles"] for r in results}) == 3
    rewards = by_key[tb.to_job(jobs[2]).key].rewards
    assert list(rewards) == ["est_cycles"] and math.isfinite(rewards["est_cycles"])


def test_cli_job_file_is_read_and_evaluated_like_the_cli(service, tmp_path):
    path = make_jobs(tmp_path)
    lines = [json.loads(line) for line in open(path)]
    jobs = tb.read_jobs(path)
    assert len(jobs) == len(lines) == 12
    for line, job in zip(lines, jobs):
        assert job.key == line["key"]
        # The Python content key is the C++ one.
        unkeyed = dict(line)
        del unkeyed["key"]
        assert tb.to_job(unkeyed).key == line["key"]
        assert tb.to_job(tb.job_to_json(job)) == job

    results = list(tb.evaluate(jobs, service=service.address))
    assert sorted(r.key for r in results) == sorted(j.key for j in jobs)
    assert all(r.ok for r in results), [(r.error, r.message) for r in results if not r.ok]
    for r in results[:3]:
        expected = direct_values(r.job, service)
        assert r.observations["est_cycles"] == expected["est_cycles"]

    # The C++ batch client on the same file: the same values, and its journal has the
    # fields result_to_dict writes, in the same order.
    journal = tmp_path / "cli.jsonl"
    run_cli("batch", "--jobs", path, "--out", str(journal), "--endpoints", service.address, "--quiet")
    cli = tb.read_results(str(journal))
    assert set(cli) == {r.key for r in results}
    for r in results:
        mine = r.to_dict()
        assert list(mine) == list(cli[r.key])
        assert mine["observations"] == cli[r.key]["observations"]
        assert mine["error"] == cli[r.key]["error"] == "OK"

    # A journal written from Python is one the C++ client resumes: nothing left to run.
    ours = tmp_path / "py.jsonl"
    with open(ours, "w") as f:
        for r in results:
            tb.write_result(f, r)
    out = run_cli("batch", "--jobs", path, "--out", str(ours), "--endpoints", service.address, "--resume",
                  "--quiet").stdout
    assert f"0 in this run, {len(jobs)} already in the journal" in out
    assert len(tb.read_results(str(ours))) == len(jobs)


def test_job_errors_duplicates_and_bad_input(service, tmp_path):
    good = {"benchmark": "benchmark://ops-v0/gmm-1", "actions": "split(C.i, 4, io, ii)", "observations": ["est_cycles"]}
    jobs = [good, dict(good), {"key": "missing", "benchmark": "benchmark://ops-v0/no-such-op"},
            {"key": "bad-action", "benchmark": "benchmark://ops-v0/gmm-1", "actions": "split(Q.i, 2, a, b)"},
            {"key": "bad-space", "benchmark": "benchmark://ops-v0/gmm-1", "observations": ["no_such_observation"]}]
    results = {r.key: r for r in tb.evaluate(jobs, service=service)}
    # The same content twice is one job: one result.
    assert len(results) == 4
    assert results[tb.to_job(good).key].ok
    assert results["missing"].error == "NOT_FOUND" and "no-such-op" in results["missing"].message
    assert results["bad-action"].error == "INVALID_ACTION" and "Q" in results["bad-action"].message
    assert results["bad-space"].error == "MALFORMED"
    # Final errors are not sent again.
    assert all(r.attempts == 1 for r in results.values())
    assert results["missing"].to_dict()["error"] == "NOT_FOUND"

    with pytest.raises(ValueError, match="benchmark"):
        tb.to_job({"actions": "split(C.i, 4, io, ii)"})
    with pytest.raises(ValueError, match="not a job"):
        tb.to_job({"benchmark": "benchmark://ops-v0/gmm-1", "colour": "red"})
    with pytest.raises(ValueError, match="timeout_s"):
        tb.to_job({"benchmark": "benchmark://ops-v0/gmm-1", "timeout_s": -1})
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n\nnot json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:3: not a job"):
        tb.read_jobs(str(path))


def test_connection_evaluate_yields_job_results(service):
    conn = tensorgym.connect(service)
    try:
        jobs = [{"benchmark": f"benchmark://ops-v0/gmm-{i}", "observations": ["est_cycles"]} for i in (1, 2, 3)]
        results = list(conn.evaluate(jobs))
        assert all(isinstance(r, pb.JobResult) for r in results)
        assert sorted(r.key for r in results) == sorted(tb.to_job(j).key for j in jobs)
        assert all(r.error == pb.JOB_OK and len(r.observation) == 1 for r in results)
    finally:
        conn.close()


def test_a_service_killed_mid_batch_loses_and_repeats_no_job(tmp_path):
    """The managed service dies with jobs in flight: the stream breaks, the connection
    restarts the service, and the unanswered jobs are sent again. Every job has exactly
    one result, with the deterministic values a healthy run gives."""
    jobs = tb.read_jobs(make_jobs(tmp_path, schedules=4, limit=6, seed=7))
    assert len(jobs) == 24
    with tensorgym.ManagedService(args=["--workers", "1", "--concurrency", "1"]) as s:
        conn = tensorgym.connect(s, reconnect_timeout_s=30)
        try:
            expected = {r.key: r.to_dict()["observations"] for r in tb.evaluate(jobs, service=conn)}
            first_pid = s.pid
            seen = []
            for r in tb.evaluate(jobs, service=conn, max_in_flight=2, max_jobs_per_message=1):
                seen.append(r)
                if len(seen) == 3:
                    s.kill()
            assert s.pid != first_pid and conn.stats["restarts"] >= 1
        finally:
            conn.close()
    assert sorted(r.key for r in seen) == sorted(expected)
    assert all(r.ok for r in seen), [(r.error, r.message) for r in seen if not r.ok]
    assert all(r.to_dict()["observations"] == expected[r.key] for r in seen)
    assert any(r.attempts == 2 for r in seen)  # the jobs in flight went twice


def test_an_unreachable_service_gives_every_job_an_unavailable_result():
    with tensorgym.ManagedService(args=["--workers", "1"]) as s:
        conn = tensorgym.connect(s.address, reconnect_timeout_s=0.5)
        s.close()  # the remote endpoint goes away, and stays away
        try:
            jobs = [{"benchmark": f"benchmark://ops-v0/gmm-{i}", "observations": ["est_cycles"]} for i in (1, 2)]
            results = list(tb.evaluate(jobs, service=conn))
        finally:
            conn.close()
    assert len(results) == 2
    assert all(r.error == "UNAVAILABLE" and "cannot reach" in r.message for r in results)


def test_cuda_jobs_made_by_the_cli_are_keyed_and_evaluated_alike(service, tmp_path):
    # --make-jobs --target cuda: random GPU schedules, each job naming its target; the
    # Python content key includes the target exactly as the C++ one does.
    path = tmp_path / "gpu.jobs"
    out = run_cli("batch", "--make-jobs", "--suite", "ops-v0", "--limit", "2", "--schedules", "random:2",
                  "--target", "cuda", "--observe", "est_gpu_time", "--rewards", "est_gpu_time").stdout
    path.write_text(out)
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 4 and all(line["target"] == "cuda" for line in lines)
    assert all("threadIdx.x" in line["actions"] for line in lines)
    for line in lines:
        unkeyed = dict(line)
        del unkeyed["key"]
        assert tb.to_job(unkeyed).key == line["key"]
        del unkeyed["target"]
        assert tb.to_job(unkeyed).key != line["key"]
    results = list(tb.evaluate(tb.read_jobs(str(path)), service=service.address))
    assert all(r.ok for r in results), [(r.error, r.message) for r in results if not r.ok]
    assert all(r.observations["est_gpu_time"] > 0 for r in results)
