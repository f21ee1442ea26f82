"""examples/memory_order_agent.py against a real service: memory-v0's order decision over
RPC, episodes scored by the arena_final reward, and evolution strategies that run."""
import os
import sys

import numpy as np

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples"))
import memory_order_agent as agent  # noqa: E402

GRAPH = "benchmark://graphs-v0/mixed_1@128"


def test_orders_change_the_arena_and_the_return_says_by_how_much(service):
    env = agent.make_env([GRAPH], service=service)
    try:
        rng = np.random.default_rng(0)
        # Zero weights, greedily: the first ready operator, i.e. program order, the default.
        first = agent.episode(env, GRAPH, np.zeros(agent.N_FEATURES), rng, greedy=True)
        assert first["arena"] == first["default_arena"] and first["return"] == 0.0
        # Freeing bytes first (a negative weight on the net) lowers this graph's arena.
        frees = agent.episode(env, GRAPH, np.array([0.0, 0.0, -5.0, 0.0, 0.0]), rng, greedy=True)
        assert frees["arena"] < frees["default_arena"] and frees["return"] > 0
        # Greedy episodes are deterministic: the mean over one graph is its return.
        assert agent.mean_return(env, [GRAPH], np.array([0.0, 0.0, -5.0, 0.0, 0.0])) == frees["return"]
    finally:
        env.close()


def test_evolution_strategies_train_and_the_held_out_table_is_complete(service):
    graphs = agent.uris([1, 3], 64)
    env = agent.make_env(graphs, service=service)
    try:
        weights = agent.train(env, graphs, iterations=1, pairs=2, seed=0)
        assert weights.shape == (agent.N_FEATURES,) and np.all(np.isfinite(weights))
        rows = agent.evaluate(env, agent.uris([100], 64), weights)
    finally:
        env.close()
    assert [r["benchmark"] for r in rows] == ["benchmark://graphs-v0/mixed_100@64"]
    assert rows[0]["ratio"] == rows[0]["arena"] / rows[0]["best_fit_program_order"]
