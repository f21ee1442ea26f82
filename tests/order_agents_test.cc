// The order agents of memory-v0: legal orders only, never worse than program order,
// repeatable by seed, and better where the order matters; bad options refused.
#include <gtest/gtest.h>

#include <set>

#include "agents/order_agents.h"
#include "datasets/graphs.h"
#include "memplan/lifetimes.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

// Every operator once, each after the producers of its inputs.
bool topological(const Graph& g, const std::vector<int>& order) {
  if (order.size() != g.ops.size()) return false;
  std::vector<int> position(g.ops.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    if (position[size_t(order[i])] >= 0) return false;
    position[size_t(order[i])] = int(i);
  }
  for (size_t i = 0; i < g.ops.size(); ++i)
    for (int t : g.ops[i].inputs) {
      const int p = g.tensors[size_t(t)].producer;
      if (p >= 0 && position[size_t(p)] > position[i]) return false;
    }
  return true;
}

TEST(OrderAgents, FindLegalOrdersNoWorseThanProgramOrderAndRepeatBySeed) {
  int improved = 0;
  for (uint64_t seed : {1, 3, 7}) {
    Expected<Graph> g = mixed_graph(seed, 64);
    ASSERT_TRUE(g.ok());
    for (const char* agent : {"random", "evolutionary"}) {
      SCOPED_TRACE(std::string(agent) + " mixed_" + std::to_string(seed));
      OrderSearchOptions o;
      o.agent = agent;
      o.trials = 60;
      Expected<OrderSearchResult> r = search_order(*g, o);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_TRUE(topological(*g, r->order));
      EXPECT_EQ(r->trials, 60);
      EXPECT_LE(r->arena, r->program_order_arena);
      EXPECT_EQ(*order_arena(*g, r->order, o), r->arena);
      improved += r->arena < r->program_order_arena;
      Expected<OrderSearchResult> again = search_order(*g, o);
      EXPECT_EQ(again->order, r->order);
    }
  }
  EXPECT_GT(improved, 0);  // the order matters on some of these graphs
}

TEST(OrderAgents, RefuseBadOptions) {
  Expected<Graph> g = mixed_graph(1, 32);
  ASSERT_TRUE(g.ok());
  OrderSearchOptions o;
  o.agent = "beam";
  EXPECT_CONTAINS(search_order(*g, o).status().message(), "unknown order agent 'beam'");
  o.agent = "random";
  o.trials = 0;
  EXPECT_EQ(search_order(*g, o).status().code(), StatusCode::kInvalidArgument);
  o.trials = 5;
  o.placement = "nope";
  EXPECT_CONTAINS(search_order(*g, o).status().message(), "unknown offset planner");
}

}  // namespace
}  // namespace tensorgym
