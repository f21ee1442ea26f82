"""MaskablePPO (sb3-contrib) on schedule-v0, trained on some ops-v0 benchmarks and
evaluated on others it never saw.

    pip install -e "python/[rl]"      # torch, stable-baselines3, sb3-contrib, matplotlib
    python examples/ppo_maskable.py --timesteps 20000

The agent reads the `features_flat` observation (log1p-scaled), draws only actions
that `action_mask` allows (TensorGymEnv.action_masks(), which MaskablePPO calls), and
learns from the deterministic `est_cycles` reward, turned into per-step log speedups as
in pg_numpy.py, so an episode's return is log(unscheduled cycles / final cycles).
Episodes last EPISODE_LENGTH steps. examples/compare_agents.py puts it side by side
with the random agent, REINFORCE and the built-in evolutionary search.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Dict, List, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs

import tensorgym

FAMILIES = ["gmm", "c1d", "c2d", "c3d", "grp", "dil", "dep", "t2d", "cap", "nrm"]
# The split: each operator family's two smallest single-batch shapes train; its third
# shape is held out (same kinds of operator, shapes never seen in training).
TRAIN = [f"benchmark://ops-v0/{f}-{i}" for f in FAMILIES for i in (1, 2)]
HELD_OUT = [f"benchmark://ops-v0/{f}-3" for f in FAMILIES]
EPISODE_LENGTH = 8


class ScheduleWrapper(gym.Wrapper):
    """features_flat as log1p-scaled float32, est_cycles rewards as log speedups, the
    action mask for MaskablePPO, and a record of every finished episode
    (env steps so far, benchmark, cumulative est_cycles reward, log speedup)."""

    def __init__(self, env: tensorgym.TensorGymEnv):
        super().__init__(env)
        self.observation_space = gs.Box(-np.inf, np.inf, env.observation_space.shape, np.float32)
        self.episodes: List[Dict[str, float]] = []
        self.total_steps = 0
        self._return = 0.0

    @staticmethod
    def scale(obs: np.ndarray) -> np.ndarray:
        return (np.sign(obs) * np.log1p(np.abs(obs))).astype(np.float32)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._return = 0.0
        return self.scale(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(int(action))
        self.total_steps += 1
        before = max(1.0 - self._return, 1e-12)  # cycles / unscheduled cycles
        self._return += float(reward)
        after = max(1.0 - self._return, 1e-12)
        if terminated or truncated:
            self.episodes.append({"env_steps": self.total_steps, "benchmark": self.env.unwrapped.benchmark,
                                  "return": self._return, "log_speedup": -math.log(after)})
        return self.scale(obs), math.log(before / after), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        mask = self.env.unwrapped.action_masks()
        return mask if mask.any() else np.ones_like(mask)


def make_env(benchmarks: Sequence[str], service=None, episode_length: int = EPISODE_LENGTH) -> ScheduleWrapper:
    return ScheduleWrapper(tensorgym.make("schedule-v0", benchmark=list(benchmarks),
                                          observation_space="features_flat", reward_space="est_cycles",
                                          max_episode_steps=episode_length, service=service))


def train(timesteps: int, benchmarks: Sequence[str] = TRAIN, seed: int = 0, service=None, log_every: int = 2048):
    """Trains MaskablePPO; returns (model, the training env's episode records)."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    env = make_env(benchmarks, service)
    env.reset(seed=seed)

    class Progress(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % log_every == 0 and env.episodes:
                recent = env.episodes[-50:]
                print(f"ppo steps {self.num_timesteps:7d}  mean log speedup (last {len(recent)} episodes) "
                      f"{np.mean([e['log_speedup'] for e in recent]):7.3f}", file=sys.stderr, flush=True)
            return True

    # Small, quick updates: 8-step episodes, 512 steps a rollout.
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=4, learning_rate=3e-4,
                        gamma=0.99, gae_lambda=0.95, ent_coef=0.01, policy_kwargs={"net_arch": [128, 128]},
                        seed=seed, verbose=0, device="cpu")
    model.learn(total_timesteps=timesteps, callback=Progress())
    return model, env


def rollout(model, env: ScheduleWrapper, benchmark: str, deterministic: bool, seed: int) -> Dict[str, float]:
    """One episode on `benchmark`; its cumulative est_cycles reward and speedup."""
    obs, info = env.reset(seed=seed, options={"benchmark": benchmark})
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=deterministic)
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    record = env.episodes[-1]
    return {"return": record["return"], "speedup": math.exp(record["log_speedup"])}


def evaluate(model, benchmarks: Sequence[str] = HELD_OUT, budget_steps: int = 256, seed: int = 0,
             service=None) -> Dict[str, Dict[str, float]]:
    """Per benchmark: the deterministic policy's one episode ("greedy") and the best of
    the sampled episodes that fit in `budget_steps` env steps ("best")."""
    env = make_env(benchmarks, service)
    try:
        out = {}
        for b in benchmarks:
            greedy = rollout(model, env, b, True, seed)
            sampled = [rollout(model, env, b, False, seed + 1 + i) for i in range(max(1, budget_steps // EPISODE_LENGTH))]
            out[b] = {"greedy_speedup": greedy["speedup"], "greedy_return": greedy["return"],
                      "best_speedup": max(s["speedup"] for s in sampled),
                      "mean_log_speedup": float(np.mean([math.log(s["speedup"]) for s in sampled]))}
        return out
    finally:
        env.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=20000)
    parser.add_argument("--budget", type=int, default=256, help="env steps per held-out benchmark")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--service", default=None, help="host:port of a running service (default: a managed one)")
    parser.add_argument("--save", default=None, help="save the trained model here (.zip)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    model, env = train(args.timesteps, seed=args.seed, service=args.service)
    print(f"trained {args.timesteps} env steps in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.save:
        model.save(args.save)
    results = evaluate(model, budget_steps=args.budget, seed=args.seed, service=args.service)
    env.close()
    print(f"{'held-out benchmark':28s} {'greedy speedup':>15s} {f'best of {args.budget} steps':>18s}")
    for b, r in results.items():
        print(f"{b.split('/')[-1]:28s} {r['greedy_speedup']:15.2f} {r['best_speedup']:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
