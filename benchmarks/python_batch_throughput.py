"""Batch evaluation throughput, side by side on one local service: the C++ client
(`tensorgym batch`), tensorgym.batch on one stream, and tensorgym.ray (a warm BatchPool,
and ray.evaluate() starting its own actors). Prints jobs/s, the median of 3 interleaved
rounds, and each one's ratio to the C++ client.

    TENSORGYM_BINARY=build/bin/tensorgym build/venv/bin/python benchmarks/python_batch_throughput.py
"""
import os
import statistics
import subprocess
import tempfile
import time

import ray

import tensorgym
import tensorgym.batch as tb
import tensorgym.ray as tgr


def main(rounds: int = 3) -> None:
    binary = tensorgym.find_binary()
    work = tempfile.mkdtemp(prefix="tg-batch-bench-")
    jobs_file, out_file = os.path.join(work, "jobs.jsonl"), os.path.join(work, "out.jsonl")
    made = subprocess.run([binary, "batch", "--make-jobs", "--suite", "ops-v0", "--schedules", "random:4", "--seed", "1",
                           "--observe", "est_cycles"], capture_output=True, text=True, check=True)
    with open(jobs_file, "w") as f:
        f.write(made.stdout)
    jobs = tb.read_jobs(jobs_file)
    ray.init(num_cpus=2, include_dashboard=False)
    rates = {"tensorgym batch (C++)": [], "tensorgym.batch.evaluate": [], "BatchPool, warm": [],
             "tensorgym.ray.evaluate": []}
    try:
        with tensorgym.ManagedService(args=["--workers", "1"]) as service, \
                tgr.BatchPool([service.address], 2, chunk_size=32) as pool:
            pool.actor_pids()
            list(tb.evaluate(jobs[:20], service=service.address))  # warm up

            def cpp():
                if os.path.exists(out_file):
                    os.remove(out_file)
                subprocess.run([binary, "batch", "--jobs", jobs_file, "--out", out_file, "--endpoints",
                                service.address, "--quiet"], check=True, capture_output=True)

            runs = {"tensorgym batch (C++)": cpp,
                    "tensorgym.batch.evaluate": lambda: list(tb.evaluate(jobs, service=service.address)),
                    "BatchPool, warm": lambda: pool.evaluate(jobs),
                    "tensorgym.ray.evaluate": lambda: tgr.evaluate(jobs, [service.address], num_actors=2,
                                                                   chunk_size=32)}
            for _ in range(rounds):
                for name, run in runs.items():
                    start = time.perf_counter()
                    run()
                    rates[name].append(len(jobs) / (time.perf_counter() - start))
    finally:
        ray.shutdown()
    base = statistics.median(rates["tensorgym batch (C++)"])
    print(f"{len(jobs)} jobs, {os.cpu_count()} cores")
    print("| client | jobs/s | vs tensorgym batch |\n| --- | --- | --- |")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.0f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
