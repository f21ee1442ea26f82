"""Environment steps per second from Python against the C++ client, on one service.

    python benchmarks/python_throughput.py [--rounds 7] [--steps 500] [--envs 1,2,4]
                                           [--vec-steps 300] [--json FILE]

Starts one `tensorgym serve` (managed, on 127.0.0.1) and measures on it:

1. One environment, three observation settings, the same action every step (index 865
   of gmm-1's primitives space: a reorder that swaps two loops, so every step changes
   the schedule and succeeds):
   - C++: build/bin/client_steps_benchmark, a client::RemoteEnv with default options
     in its own process, driven round by round over a pipe;
   - Python: one TensorGymEnv as made (cheap steps on its Session stream, driven from
     the stepping thread: python/tensorgym/_step_stream.py);
   - Python, public stream: the same stream through grpcio's public API (the fallback
     where grpcio's internals differ);
   - Python, unary: every step a unary call (what the stream saves).
   Rounds interleave the four (order rotated each round); each round starts a fresh
   episode (not timed) and times `--steps` steps. The table gives median steps/s and the
   median over rounds of each round's Python / C++ ratio.
2. N environments in a gymnasium AsyncVectorEnv (tensorgym.make_vec on the same
   service, one worker process each), for each N in --envs: environment steps per
   second (N x vector steps / time) and the speedup over N = 1, interleaved by round,
   medians; next to the machine's core count.

Speed depends on the machine and its load: figures are for comparing the clients side
by side in one run, not across machines.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import tensorgym
from tensorgym import _step_stream

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARK = "benchmark://ops-v0/gmm-1"
ACTION = 865  # gmm-1, primitives: reorder the two loops it names (alternates between two orders)

# name -> (observations, reward, action mask): what each step asks for.
SETTINGS = {
    "none": ([], None, False),
    "scalar (flops)": (["flops"], None, False),
    "features_flat + action_mask + est_cycles": (["features_flat"], "est_cycles", True),
}


class CppClient:
    """client_steps_benchmark in a child process: one RemoteEnv, rounds on request."""

    def __init__(self, program: str, address: str):
        self.process = subprocess.Popen([program, "--endpoint", address, "--benchmark", BENCHMARK],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"{program} did not start (said {line!r})")

    def round(self, steps: int, observations, reward, mask) -> float:
        names = list(observations) + (["action_mask"] if mask else [])
        self.process.stdin.write(f"{steps} {ACTION} {','.join(names) or '-'} {reward or '-'}\n")
        self.process.stdin.flush()
        seconds, errors = self.process.stdout.readline().split()
        if int(errors):
            raise RuntimeError(f"the C++ client's steps failed {errors} times")
        return steps / float(seconds)

    def close(self):
        self.process.stdin.close()
        self.process.wait(10)


def python_env(service, observations, reward, mask, transport="default"):
    env = tensorgym.make("schedule-v0", service=service, benchmark=BENCHMARK,
                         observation_space=(observations[0] if len(observations) == 1 else observations or None),
                         reward_space=reward, action_mask=mask)
    if transport == "unary":
        env._open_step_stream = lambda: None  # this instance only: every step a unary call
    elif transport == "public":
        # Its stream is opened now, on grpcio's public API, and kept for its life.
        _step_stream._direct_works = False
        try:
            env.reset(seed=0)
            env.step(ACTION)
        finally:
            _step_stream._direct_works = _step_stream._cygrpc is not None
        assert not env._step_stream.direct
    return env


def python_round(env, steps: int) -> float:
    env.reset(seed=0)
    step = env.step
    start = time.perf_counter()
    for _ in range(steps):
        _, _, _, _, info = step(ACTION)
    elapsed = time.perf_counter() - start
    if "error" in info:
        raise RuntimeError(f"the Python env's step failed: {info['error']}")
    return steps / elapsed


def vector_round(vec, n: int, steps: int) -> float:
    vec.reset(seed=0)
    actions = np.full(n, ACTION, dtype=np.int64)
    for _ in range(5):  # warm: the workers' first steps open their streams
        vec.step(actions)
    start = time.perf_counter()
    for _ in range(steps):
        vec.step(actions)
    return n * steps / (time.perf_counter() - start)


def machine() -> dict:
    model = platform.processor()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    import grpc
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version(), "grpcio": grpc.__version__,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "load_average": os.getloadavg()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=500, help="steps per round, one environment")
    parser.add_argument("--envs", default="1,2,4", help="vector sizes (comma-separated); empty: skip")
    parser.add_argument("--vec-steps", type=int, default=300, help="vector steps per round")
    parser.add_argument("--vec-rounds", type=int, default=5)
    parser.add_argument("--cpp-client", default=os.path.join(ROOT, "build", "bin", "client_steps_benchmark"))
    parser.add_argument("--binary", default=None, help="the tensorgym executable (default: tensorgym.find_binary())")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()

    info = machine()
    print(f"# {info['date_utc']} UTC, {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
          f"grpcio {info['grpcio']}, load average {info['load_average'][0]:.2f}", flush=True)
    service = tensorgym.ManagedService(args.binary)
    results = {"machine": info, "single": {}, "vector": {}}
    try:
        cpp = CppClient(args.cpp_client, service.address)
        try:
            print("\n| observation | C++ steps/s | Python steps/s | Python / C++ (range) "
                  "| public stream / C++ | unary / C++ |")
            print("| --- | --- | --- | --- | --- | --- |")
            for name, (observations, reward, mask) in SETTINGS.items():
                envs = {t: python_env(service, observations, reward, mask, t) for t in ("default", "public", "unary")}
                runs = {"cpp": [], "default": [], "public": [], "unary": []}
                ratios = {t: [] for t in envs}
                for r in range(args.rounds + 1):  # round 0 warms every client up, not counted
                    order = list(runs)
                    order = order[r % len(order):] + order[:r % len(order)]
                    got = {}
                    for who in order:
                        if who == "cpp":
                            got[who] = cpp.round(args.steps, observations, reward, mask)
                        else:
                            got[who] = python_round(envs[who], args.steps)
                    if r == 0:
                        continue
                    for who, v in got.items():
                        runs[who].append(v)
                    for t in envs:
                        ratios[t].append(got[t] / got["cpp"])
                for env in envs.values():
                    env.close()
                row = {k: statistics.median(v) for k, v in runs.items()}
                row.update({f"{t}_ratio": statistics.median(v) for t, v in ratios.items()},
                           ratio_min=min(ratios["default"]), ratio_max=max(ratios["default"]), rounds=runs)
                results["single"][name] = row
                print(f"| {name} | {row['cpp']:.0f} | {row['default']:.0f} | {row['default_ratio']:.2f} "
                      f"({row['ratio_min']:.2f}–{row['ratio_max']:.2f}) | {row['public_ratio']:.2f} | "
                      f"{row['unary_ratio']:.2f} |", flush=True)
        finally:
            cpp.close()

        sizes = [int(x) for x in args.envs.split(",") if x.strip()]
        if sizes:
            for name in ("scalar (flops)", "features_flat + action_mask + est_cycles"):
                observations, reward, mask = SETTINGS[name]
                vecs = {n: tensorgym.make_vec("schedule-v0", num_envs=n, service=service.address,
                                              benchmark=BENCHMARK, observation_space=observations[0],
                                              reward_space=reward, action_mask=mask) for n in sizes}
                runs = {n: [] for n in sizes}
                try:
                    for r in range(args.vec_rounds + 1):
                        order = sizes[r % len(sizes):] + sizes[:r % len(sizes)]
                        for n in order:
                            v = vector_round(vecs[n], n, args.vec_steps)
                            if r:
                                runs[n].append(v)
                finally:
                    for vec in vecs.values():
                        vec.close()
                base = statistics.median(runs[sizes[0]])
                table = {n: {"steps_per_s": statistics.median(v), "speedup": statistics.median(v) / base,
                             "rounds": v} for n, v in runs.items()}
                results["vector"][name] = table
                print(f"\nAsyncVectorEnv, {name}, {info['cores']} cores:\n")
                print("| envs | env steps/s | speedup over 1 |")
                print("| --- | --- | --- |")
                for n in sizes:
                    print(f"| {n} | {table[n]['steps_per_s']:.0f} | {table[n]['speedup']:.2f} |", flush=True)
    finally:
        service.close()
    results["machine"]["load_average_after"] = os.getloadavg()
    print(f"\n# load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
