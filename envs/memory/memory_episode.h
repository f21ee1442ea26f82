// The state of one memory-v0 episode: a graph (or an offset-only instance) and the
// decisions taken so far. Decisions come in phases. With the `rewrite` action space,
// the graph is first rewritten to need less memory (memplan/rewrites.h: operators
// split into tiles, tensors recomputed) until the agent stops. While operators remain, the
// next decision is either which ready operator runs next (`order`) or, right after
// one ran, whether to take an in-place or fusion opportunity it opened (`inplace`).
// Then every buffer gets an offset, largest first (`placement`: best fit, first fit,
// highest gap, or the top of the arena). The agent takes one kind of decision; the
// others follow the episode's default heuristics. The state is exactly (benchmark,
// settings, actions): replaying the actions gives the same plan.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "datasets/graphs.h"
#include "memplan/lifetimes.h"
#include "memplan/offset_planners.h"
#include "memplan/rewrites.h"

namespace tensorgym {

enum class Decision { kRewrite, kOrder, kInplace, kPlacement, kDone };
const char* decision_name(Decision d);

// The placement candidates, in action order.
const std::vector<std::string>& placement_names();  // best_fit, first_fit, highest_gap, top
// Most ready operators the order action space addresses.
inline constexpr int64_t kMaxReadyOps = 256;
// Rewrite actions: 0 stops rewriting, 1.. the rewrites offered (at most this many in all).
inline constexpr int64_t kMaxRewriteActions = 1024;
// Most rewrites one episode applies; then only stopping is legal.
inline constexpr int kMaxEpisodeRewrites = 16;

struct MemorySettings {
  std::string default_order = "program_order";  // an order name of memplan/order.h
  bool default_inplace = true;
  std::string default_placement = "best_fit";
  int64_t memory_limit = 0;  // > 0: a hard limit on the arena
  int64_t alignment = 0;     // 0: 64 for graphs, 1 for offset-only instances
};

// One in-place or fusion opportunity.
struct Opportunity {
  Alias alias;
  int64_t bytes_saved = 0;
};

class MemoryEpisode {
 public:
  // Starts an episode; `controlled` is the decision kind the agent takes (kRewrite,
  // kOrder and kInplace need a graph). Defaults run until the first controlled decision.
  static Expected<MemoryEpisode> start(const GraphBenchmark& bench, const MemorySettings& settings,
                                       Decision controlled);

  Decision pending() const;
  Decision controlled() const { return controlled_; }
  bool done() const { return pending() == Decision::kDone; }

  // Legal action indices of the pending decision (for action_mask).
  std::vector<int64_t> legal_actions() const;
  // Applies an action of the controlled kind (an index or its text), then the
  // defaults up to the next controlled decision. On error nothing changed.
  Status apply(int64_t index);
  Status apply_text(const std::string& text);
  // Canonical text of every applied controlled action.
  const std::vector<std::string>& actions() const { return actions_; }

  // The plan this state leads to when every remaining decision takes its default.
  struct Rollout {
    GraphDecisions decisions;
    Instance instance;
    std::vector<int> kinds;  // BufferKind per buffer (2 for instances)
    Offsets offsets;
    int64_t arena = 0;
    int64_t lb_live = 0;
  };
  const Rollout& rollout() const;

  // What the observations show.
  const GraphBenchmark& bench() const { return bench_; }
  const MemorySettings& settings() const { return settings_; }
  int64_t alignment() const { return alignment_; }
  const std::vector<int>& ready() const { return ready_; }  // pending order decision
  const std::vector<Opportunity>& opportunities() const { return opportunities_; }
  int64_t current_arena() const;  // top of the buffers placed so far
  bool placing() const { return placing_; }
  const Instance& placement_instance() const { return instance_; }
  const Offsets& offsets() const { return offsets_; }
  int next_buffer() const;  // the buffer to place next, -1 when none
  // Offsets of the placement candidates for the next buffer, in action order.
  std::vector<int64_t> candidate_offsets() const;
  const std::vector<std::vector<int>>& conflicts() const { return conflicts_; }
  // Bytes produced and freed by running a ready operator now.
  void order_effect(int op, int64_t* produced, int64_t* freed) const;
  // The rewrites offered (action i + 1 applies offered()[i]) and the state so far.
  const std::vector<NextRewrite>& offered() const { return offered_; }
  const Rewrites& rewrites() const { return rewrites_; }
  // The graph before any rewrite (the episode's graph otherwise).
  const Graph& original_graph() const { return *original_graph_ptr(); }
  const std::shared_ptr<const Graph>& original_graph_ptr() const { return original_ ? original_ : bench_.graph; }
  int64_t default_lb_live() const { return default_lb_live_; }
  int64_t default_arena() const { return default_arena_; }

 private:
  MemoryEpisode() = default;
  Status apply_decision(int64_t index, bool record);
  void advance();  // defaults until the next controlled decision or the end
  Status begin_ordering();  // nothing changes on error
  void offer_rewrites();
  int64_t default_action() const;
  void schedule(int op);
  void open_opportunities(int op, bool fused);
  void begin_placement();
  int64_t offset_for(int buffer, int choice) const;

  GraphBenchmark bench_;
  MemorySettings settings_;
  Decision controlled_ = Decision::kPlacement;
  int64_t alignment_ = 1;
  // Phase 0.
  bool rewriting_ = false;
  std::shared_ptr<const Graph> original_;
  Rewrites rewrites_;
  std::vector<NextRewrite> offered_;
  // Phase 1.
  std::vector<int> priority_;  // operator -> rank in the default order
  std::vector<int> waiting_;   // producers not yet run, per operator
  std::vector<std::vector<int>> users_;
  std::vector<char> done_;
  std::vector<int> position_;
  GraphDecisions decisions_;
  std::vector<int> ready_;
  std::vector<Opportunity> opportunities_;
  std::vector<char> taken_;  // tensors whose memory was taken over
  // Phase 2.
  bool placing_ = false;
  GraphLayout layout_;
  Instance instance_;
  std::vector<int> kinds_;
  std::vector<std::vector<int>> conflicts_;
  std::vector<int> placement_order_;
  size_t placed_ = 0;
  Offsets offsets_;
  std::vector<std::string> actions_;
  int64_t default_lb_live_ = 0, default_arena_ = 0;
  mutable std::shared_ptr<Rollout> rollout_;
};

}  // namespace tensorgym
