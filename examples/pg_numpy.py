"""REINFORCE with a baseline, in numpy, on schedule-v0.

A linear softmax policy over the `primitives` action space reads the `features_flat`
observation (log-scaled), draws only actions the `action_mask` allows, and learns from
the deterministic `est_cycles` reward over a set of ops-v0 benchmarks, in episodes of a
fixed number of steps. Its only dependencies are the tensorgym package and numpy, so
the path from observations to actions to rewards runs in CI (tests/python/test_training.py).

    python examples/pg_numpy.py --iterations 40 --episode-length 8

With all weights zero the policy is the uniform random masked policy, so training
starts from the random agent and the learning curve says how far it got from there.

The learning signal. est_cycles rewards are improvements divided by the unscheduled
program's cycles, so an episode's cumulative reward S_t says where the schedule stands:
cycles_t / cycles_0 = 1 - S_t. A few random actions can make a program a hundred times
slower (S far below -1) while the best ones approach S = 1, so the raw sum is dominated
by rare disasters. The learner therefore maximizes the log speedup,
log(cycles_0 / cycles_T) = sum_t log((1 - S_{t-1}) / (1 - S_t)), computed from the
est_cycles rewards alone (`--signal est_cycles` trains on the raw rewards instead).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

import tensorgym

# A small default training set: one operator of each kind that trains in seconds.
DEFAULT_BENCHMARKS = [
    "benchmark://ops-v0/gmm-1",
    "benchmark://ops-v0/c1d-1",
    "benchmark://ops-v0/c2d-1",
    "benchmark://ops-v0/nrm-1",
]


def make_env(benchmarks: Sequence[str], episode_length: int, service=None) -> tensorgym.TensorGymEnv:
    """schedule-v0 with the features_flat observation, the est_cycles reward, the action
    mask in info, and episodes truncated after `episode_length` steps."""
    return tensorgym.make("schedule-v0", benchmark=list(benchmarks), observation_space="features_flat",
                          reward_space="est_cycles", max_episode_steps=episode_length, service=service)


def featurize(obs: np.ndarray) -> np.ndarray:
    """log1p-scaled features, unit length, with a constant 1 for the bias."""
    x = np.sign(obs) * np.log1p(np.abs(np.asarray(obs, dtype=np.float64)))
    norm = np.linalg.norm(x)
    if norm > 0:
        x = x / norm
    return np.append(x, 1.0)


def log_speedups(rewards: Sequence[float]) -> np.ndarray:
    """Per-step log speedups from est_cycles rewards (see the module's docstring)."""
    remaining = 1.0 - np.cumsum(np.concatenate([[0.0], np.asarray(rewards, dtype=np.float64)]))
    remaining = np.maximum(remaining, 1e-12)  # cycles stay positive; guards rounding at S ~ 1
    return np.log(remaining[:-1] / remaining[1:])


class LinearSoftmaxPolicy:
    """pi(a | s) proportional to mask(a) * exp(W[a] . phi(s)). Zero weights: uniform over
    the allowed actions, the random masked agent."""

    def __init__(self, n_features: int, n_actions: int):
        self.weights = np.zeros((n_actions, n_features + 1))

    def probabilities(self, phi: np.ndarray, mask: np.ndarray) -> np.ndarray:
        allowed = np.flatnonzero(mask)
        if len(allowed) == 0:  # nothing allowed: fall back to every action (the env reports the error)
            allowed = np.arange(len(mask))
        logits = self.weights[allowed] @ phi  # only the allowed rows: a few hundred of 2888
        e = np.exp(logits - logits.max())
        p = np.zeros(len(mask))
        p[allowed] = e / e.sum()
        return p

    def act(self, phi: np.ndarray, mask: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> int:
        p = self.probabilities(phi, mask)
        if greedy:
            return int(np.argmax(p))
        return int(rng.choice(len(p), p=p))

    def copy(self) -> "LinearSoftmaxPolicy":
        other = LinearSoftmaxPolicy(0, 0)
        other.weights = self.weights.copy()
        return other


@dataclasses.dataclass
class Episode:
    benchmark: str
    phis: np.ndarray        # [T, n_features + 1]
    masks: np.ndarray       # [T, n_actions] as used for the draw
    actions: np.ndarray     # [T]
    rewards: np.ndarray     # [T], est_cycles
    errors: int             # steps the service refused (reward 0, state unchanged)
    state_reward: float     # the episode state's cumulative reward, as the service keeps it

    @property
    def ret(self) -> float:
        return float(self.rewards.sum())

    @property
    def speedup(self) -> float:
        """Unscheduled est_cycles over the final schedule's."""
        return float(1.0 / max(1.0 - self.ret, 1e-12))

    @property
    def log_speedup(self) -> float:
        return float(log_speedups(self.rewards).sum())


def rollout(env, policy: LinearSoftmaxPolicy, rng: np.random.Generator, benchmark: Optional[str] = None,
            greedy: bool = False, episode_length: Optional[int] = None) -> Episode:
    """One episode of `episode_length` steps (the env's max_episode_steps by default).
    An allowed action that the service refuses (a whole-schedule check the mask does not
    make) leaves the state unchanged; it is not drawn again until the state changes, so a
    greedy policy does not repeat it."""
    options = {"benchmark": benchmark} if benchmark else None
    obs, info = env.reset(seed=int(rng.integers(2**31)), options=options)
    phis, masks, actions, rewards = [], [], [], []
    refused = np.zeros(env.action_space.n, dtype=bool)
    errors = 0
    limit = episode_length or env._max_episode_steps or 8
    for _ in range(limit):
        phi = featurize(obs)
        mask = info["action_mask"].astype(bool) & ~refused
        a = policy.act(phi, mask, rng, greedy)
        obs, reward, terminated, truncated, info = env.step(a)
        phis.append(phi)
        masks.append(mask)
        actions.append(a)
        rewards.append(float(reward))
        if "error" in info:
            errors += 1
            refused[a] = True
        else:
            refused[:] = False
        if terminated or truncated:
            break
    return Episode(env.benchmark, np.array(phis), np.array(masks), np.array(actions), np.array(rewards), errors,
                   float(env.state.reward))


class Adam:
    def __init__(self, shape, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.t = 0

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        """Gradient ascent on params."""
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad * grad
        m_hat = self.m / (1 - self.beta1 ** self.t)
        v_hat = self.v / (1 - self.beta2 ** self.t)
        params += self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


@dataclasses.dataclass
class TrainResult:
    policy: LinearSoftmaxPolicy
    curve: List[Dict[str, float]]  # per iteration: env steps so far, mean return, mean log speedup, ...
    episodes: List[Episode]


def train(env, benchmarks: Sequence[str], iterations: int = 40, episodes_per_iteration: Optional[int] = None,
          lr: float = 0.05, seed: int = 0, signal: str = "log_speedup", baseline_decay: float = 0.8,
          entropy: float = 0.0, policy: Optional[LinearSoftmaxPolicy] = None, log=None) -> TrainResult:
    """REINFORCE with a baseline. Each iteration runs `episodes_per_iteration` episodes
    (default: one per benchmark, in turn), then takes one Adam step on the mean of
    sum_t A_t * grad log pi(a_t | s_t), where A_t is the return-to-go minus the baseline
    (a running mean of that benchmark's return-to-go at step t; est_cycles is
    deterministic, so this tracks the policy's expected return closely), normalized
    over the iteration."""
    if signal not in ("log_speedup", "est_cycles"):
        raise ValueError(f"signal must be log_speedup or est_cycles, not {signal!r}")
    rng = np.random.default_rng(seed)
    n_actions = int(env.action_space.n)
    n_features = int(env.observation_space.shape[0])
    policy = policy or LinearSoftmaxPolicy(n_features, n_actions)
    optimizer = Adam(policy.weights.shape, lr)
    per_iteration = episodes_per_iteration or len(benchmarks)
    baselines: Dict[str, np.ndarray] = {}
    curve: List[Dict[str, float]] = []
    all_episodes: List[Episode] = []
    steps = 0
    next_benchmark = 0
    for it in range(iterations):
        batch: List[Episode] = []
        for _ in range(per_iteration):
            benchmark = benchmarks[next_benchmark % len(benchmarks)]
            next_benchmark += 1
            batch.append(rollout(env, policy, rng, benchmark))
        steps += sum(len(e.actions) for e in batch)
        # Advantages.
        advantages = []
        for e in batch:
            r = log_speedups(e.rewards) if signal == "log_speedup" else e.rewards
            to_go = np.cumsum(r[::-1])[::-1]
            b = baselines.get(e.benchmark)
            if b is None or len(b) != len(to_go):
                b = np.zeros_like(to_go) if b is None else np.resize(b, len(to_go))
            advantages.append(to_go - b)
            baselines[e.benchmark] = baseline_decay * b + (1 - baseline_decay) * to_go
        flat = np.concatenate(advantages)
        scale = flat.std()
        if scale > 1e-12:
            # Gradient of sum_t A_t log pi(a_t | s_t) for a linear softmax: (onehot - pi) outer phi.
            grad = np.zeros_like(policy.weights)
            for e, adv in zip(batch, advantages):
                phis = e.phis
                probs = np.stack([policy.probabilities(p, m) for p, m in zip(phis, e.masks)])
                coef = -probs
                coef[np.arange(len(e.actions)), e.actions] += 1.0
                grad += (coef * (adv / scale)[:, None]).T @ phis
                if entropy > 0:
                    # d H / d logits = -pi * (log pi + H), on the allowed actions.
                    logp = np.log(np.where(probs > 0, probs, 1.0))
                    h = -(probs * logp).sum(axis=1, keepdims=True)
                    grad += entropy * (-(probs * (logp + h))).T @ phis
            optimizer.step(policy.weights, grad / len(batch))
        point = {
            "iteration": it + 1,
            "env_steps": steps,
            "mean_return": float(np.mean([e.ret for e in batch])),
            "mean_log_speedup": float(np.mean([e.log_speedup for e in batch])),
            "errors": int(sum(e.errors for e in batch)),
        }
        curve.append(point)
        all_episodes.extend(batch)
        if log:
            log(point)
    return TrainResult(policy, curve, all_episodes)


def evaluate(env, policy: LinearSoftmaxPolicy, benchmarks: Sequence[str], episodes: int = 1, greedy: bool = True,
             seed: int = 0) -> Dict[str, Dict[str, float]]:
    """Per benchmark: the mean cumulative est_cycles reward, mean log speedup, the best
    speedup over the unscheduled program and the errors, over `episodes` episodes."""
    rng = np.random.default_rng(seed)
    out = {}
    for b in benchmarks:
        eps = [rollout(env, policy, rng, b, greedy=greedy) for _ in range(episodes)]
        out[b] = {
            "mean_return": float(np.mean([e.ret for e in eps])),
            "mean_log_speedup": float(np.mean([e.log_speedup for e in eps])),
            "best_speedup": float(max(e.speedup for e in eps)),
            "errors": int(sum(e.errors for e in eps)),
        }
    return out


def random_policy(env) -> LinearSoftmaxPolicy:
    """The random masked agent: uniform over the allowed actions."""
    return LinearSoftmaxPolicy(int(env.observation_space.shape[0]), int(env.action_space.n))


def _mean(results: Dict[str, Dict[str, float]], key: str) -> float:
    return float(np.mean([r[key] for r in results.values()]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", default=",".join(DEFAULT_BENCHMARKS),
                        help="comma-separated URIs, or a dataset such as benchmark://ops-v0")
    parser.add_argument("--episode-length", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--episodes-per-iteration", type=int, default=None)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--signal", choices=["log_speedup", "est_cycles"], default="log_speedup")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=8, help="random agent's episodes per benchmark")
    parser.add_argument("--service", default=None, help="host:port of a running service (default: a managed one)")
    parser.add_argument("--curve-out", default=None, help="write the learning curve as JSON here")
    args = parser.parse_args(argv)

    env = make_env(args.benchmarks.split(",") if "," in args.benchmarks else [args.benchmarks],
                   args.episode_length, args.service)
    try:
        benchmarks = env._benchmarks()
        start = time.perf_counter()
        result = train(env, benchmarks, iterations=args.iterations, episodes_per_iteration=args.episodes_per_iteration,
                       lr=args.lr, seed=args.seed, signal=args.signal,
                       log=lambda p: print(f"iter {p['iteration']:4d}  steps {p['env_steps']:6d}  "
                                           f"return {p['mean_return']:9.3f}  log speedup {p['mean_log_speedup']:7.3f}  "
                                           f"errors {p['errors']}", file=sys.stderr))
        elapsed = time.perf_counter() - start
        trained = evaluate(env, result.policy, benchmarks, episodes=1, greedy=True, seed=args.seed)
        rand = evaluate(env, random_policy(env), benchmarks, episodes=args.eval_episodes, greedy=False, seed=args.seed)
    finally:
        env.close()
    print(f"trained {result.curve[-1]['env_steps']} env steps in {elapsed:.1f} s")
    print(f"{'benchmark':32s} {'trained speedup':>16s} {'random mean log speedup':>24s} {'trained log speedup':>20s}")
    for b in benchmarks:
        print(f"{b:32s} {trained[b]['best_speedup']:16.3f} {rand[b]['mean_log_speedup']:24.3f} "
              f"{trained[b]['mean_log_speedup']:20.3f}")
    print(f"mean log speedup: trained (greedy) {_mean(trained, 'mean_log_speedup'):.3f}, "
          f"random masked {_mean(rand, 'mean_log_speedup'):.3f}")
    if args.curve_out:
        with open(args.curve_out, "w") as f:
            json.dump({"curve": result.curve, "trained": trained, "random": rand}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
