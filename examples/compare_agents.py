"""Agents side by side on schedule-v0's held-out ops-v0 benchmarks, at the same number
of cost evaluations: MaskablePPO (examples/ppo_maskable.py, when the [rl] extra is
installed), REINFORCE in numpy (examples/pg_numpy.py), the random masked agent, and the
built-in evolutionary search (`tensorgym search --agent evolutionary --reward est_cycles`).

    python examples/compare_agents.py --timesteps 50000 --budget 256 \
        --plot docs/python_learning_curve.svg

PPO and REINFORCE first train for --timesteps env steps on ppo_maskable.TRAIN; the
learning curve (mean log speedup of the training episodes against env steps, the
random agent's level beside it) goes to --plot. Then, on each benchmark of
ppo_maskable.HELD_OUT, every agent gets --budget cost evaluations:

- PPO, REINFORCE, random: budget / EPISODE_LENGTH episodes of EPISODE_LENGTH steps,
  each step one est_cycles evaluation; the learned agents sample from their policies
  (their deterministic episode is reported too), and each agent's figure is the best
  speedup any of its episodes reached.
- evolutionary: `--trials budget`, a trial being one complete schedule evaluated by
  est_cycles, with `--analytical-prior 0` so that it sees no est_cycles value outside
  its counted trials (by default it ranks extra candidates by est_cycles).

A speedup is the unscheduled program's est_cycles over the schedule's.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

import numpy as np

import tensorgym

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_numpy as pg  # noqa: E402
import ppo_maskable as ppo  # noqa: E402

L = ppo.EPISODE_LENGTH


def evolutionary(benchmark: str, trials: int, seed: int) -> Dict[str, float]:
    """The built-in search with `trials` est_cycles evaluations; the best schedule's speedup,
    read from the episode state it writes (its est_cycles reward replays exactly)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "best.jsonl")
        start = time.perf_counter()
        out = subprocess.run([tensorgym.find_binary(), "search", "--benchmark", benchmark, "--agent", "evolutionary",
                              "--reward", "est_cycles", "--trials", str(trials), "--analytical-prior", "0",
                              "--workers", "1", "--seed", str(seed), "--quiet", "--json", "--state-out", path],
                             capture_output=True, text=True, check=True)
        elapsed = time.perf_counter() - start
        outcome = json.loads(out.stdout)
        state = tensorgym.read_states(path)[-1]
    return {"best_speedup": 1.0 / (1.0 - state.reward), "trials": outcome["trials"], "seconds": elapsed}


def rolling(values: List[float], window: int) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    c = np.cumsum(np.concatenate([[0.0], v]))
    lo = np.maximum(np.arange(1, len(v) + 1) - window, 0)
    return (c[1:] - c[lo]) / (np.arange(1, len(v) + 1) - lo)


def plot(path: str, curves: Dict[str, list], random_level: float, title: str) -> None:
    """curves: name -> [[env steps, mean log speedup], ...] (every 25th episode's rolling mean)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, points in curves.items():
        x, y = zip(*points)
        ax.plot(x, y, label=name, linewidth=1.5)
    ax.axhline(random_level, color="gray", linestyle="--", label="random masked agent")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean log speedup per episode (est_cycles)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, format=os.path.splitext(path)[1].lstrip(".") or "svg", metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=50000, help="training env steps (PPO and REINFORCE each)")
    parser.add_argument("--budget", type=int, default=256, help="cost evaluations per held-out benchmark and agent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agents", default="ppo,reinforce,random,evolutionary")
    parser.add_argument("--plot", default=None, help="learning-curve image (.svg or .png)")
    parser.add_argument("--json-out", default=None, help="every figure as JSON")
    args = parser.parse_args(argv)
    agents = args.agents.split(",")
    if "ppo" in agents:
        try:
            import sb3_contrib  # noqa: F401
        except ImportError:
            print("sb3-contrib is not installed (pip install -e 'python/[rl]'): skipping PPO", file=sys.stderr)
            agents.remove("ppo")

    def log(*a):
        print(*a, file=sys.stderr, flush=True)

    figures: Dict[str, dict] = {"command": " ".join(["python", "examples/compare_agents.py", *(argv or sys.argv[1:])]),
                                "train": ppo.TRAIN, "held_out": ppo.HELD_OUT, "episode_length": L,
                                "budget": args.budget, "timesteps": args.timesteps, "seed": args.seed,
                                "python": platform.python_version(), "held_out_results": {}, "seconds": {}}
    curves = {}
    results: Dict[str, Dict[str, dict]] = {b: {} for b in ppo.HELD_OUT}
    episodes_per_budget = max(1, args.budget // L)
    with tensorgym.ManagedService() as service:
        pg_env = pg.make_env(ppo.TRAIN, L, service=service)
        try:
            # The random agent's level on the training benchmarks (the curves' reference).
            rand_train = pg.evaluate(pg_env, pg.random_policy(pg_env), ppo.TRAIN, episodes=8, greedy=False,
                                     seed=args.seed)
            random_level = pg._mean(rand_train, "mean_log_speedup")
            figures["random_train_mean_log_speedup"] = random_level
            log(f"random masked agent on the training benchmarks: mean log speedup {random_level:.3f}")

            if "ppo" in agents:
                start = time.perf_counter()
                model, train_env = ppo.train(args.timesteps, seed=args.seed, service=service)
                figures["seconds"]["ppo_training"] = time.perf_counter() - start
                x = [e["env_steps"] for e in train_env.episodes]
                y = rolling([e["log_speedup"] for e in train_env.episodes], 100)
                figures["ppo_curve"] = [[int(a), float(b)] for a, b in zip(x[::25], y[::25])]
                curves["MaskablePPO"] = figures["ppo_curve"]
                train_env.close()
                start = time.perf_counter()
                for b, r in ppo.evaluate(model, budget_steps=args.budget, seed=args.seed, service=service).items():
                    results[b]["ppo"] = r
                figures["seconds"]["ppo_held_out"] = time.perf_counter() - start

            if "reinforce" in agents:
                per_iteration = len(ppo.TRAIN)
                iterations = max(1, args.timesteps // (per_iteration * L))
                start = time.perf_counter()
                trained = pg.train(pg_env, ppo.TRAIN, iterations=iterations, episodes_per_iteration=per_iteration,
                                   seed=args.seed,
                                   log=lambda p: log(f"reinforce steps {p['env_steps']:7d}  mean log speedup "
                                                     f"{p['mean_log_speedup']:7.3f}") if p["iteration"] % 10 == 0 else None)
                figures["seconds"]["reinforce_training"] = time.perf_counter() - start
                steps = np.cumsum([len(e.actions) for e in trained.episodes])
                y = rolling([e.log_speedup for e in trained.episodes], 100)
                figures["reinforce_curve"] = [[int(a), float(b)] for a, b in zip(steps[::25], y[::25])]
                curves["REINFORCE (numpy, linear)"] = figures["reinforce_curve"]
                start = time.perf_counter()
                greedy = pg.evaluate(pg_env, trained.policy, ppo.HELD_OUT, episodes=1, greedy=True, seed=args.seed)
                sampled = pg.evaluate(pg_env, trained.policy, ppo.HELD_OUT, episodes=episodes_per_budget,
                                      greedy=False, seed=args.seed)
                for b in ppo.HELD_OUT:
                    results[b]["reinforce"] = {"greedy_speedup": greedy[b]["best_speedup"],
                                               "best_speedup": sampled[b]["best_speedup"],
                                               "mean_log_speedup": sampled[b]["mean_log_speedup"]}
                figures["seconds"]["reinforce_held_out"] = time.perf_counter() - start

            if "random" in agents:
                start = time.perf_counter()
                rand = pg.evaluate(pg_env, pg.random_policy(pg_env), ppo.HELD_OUT, episodes=episodes_per_budget,
                                   greedy=False, seed=args.seed)
                for b in ppo.HELD_OUT:
                    results[b]["random"] = {"best_speedup": rand[b]["best_speedup"],
                                            "mean_log_speedup": rand[b]["mean_log_speedup"]}
                figures["seconds"]["random_held_out"] = time.perf_counter() - start
        finally:
            pg_env.close()

    if "evolutionary" in agents:
        start = time.perf_counter()
        for b in ppo.HELD_OUT:
            results[b]["evolutionary"] = evolutionary(b, args.budget, args.seed)
            log(f"evolutionary {b}: {results[b]['evolutionary']['best_speedup']:.2f}x")
        figures["seconds"]["evolutionary_held_out"] = time.perf_counter() - start

    figures["held_out_results"] = results
    columns = [("ppo", "greedy_speedup", "PPO greedy"), ("ppo", "best_speedup", "PPO best"),
               ("reinforce", "greedy_speedup", "REINF. greedy"), ("reinforce", "best_speedup", "REINF. best"),
               ("random", "best_speedup", "random best"), ("evolutionary", "best_speedup", "evolutionary")]
    columns = [c for c in columns if c[0] in agents]
    print(f"Held-out est_cycles speedup over the unscheduled program; 'best': best of {args.budget} "
          f"cost evaluations per benchmark, 'greedy': the policy's one deterministic {L}-step episode.")
    print("| benchmark | " + " | ".join(c[2] for c in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    logs = {c: [] for c in columns}
    for b in ppo.HELD_OUT:
        cells = []
        for c in columns:
            v = results[b][c[0]][c[1]]
            logs[c].append(math.log(v))
            cells.append(f"{v:.2f}")
        print(f"| {b.split('/')[-1]} | " + " | ".join(cells) + " |")
    print("| geometric mean | " + " | ".join(f"{math.exp(np.mean(logs[c])):.2f}" for c in columns) + " |")
    if args.plot and curves:
        plot(args.plot, curves, figures["random_train_mean_log_speedup"],
             f"schedule-v0, {len(ppo.TRAIN)} ops-v0 training benchmarks, {L}-step episodes, est_cycles")
        log(f"wrote {args.plot}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
