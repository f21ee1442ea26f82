// Lowering: a scheduled program to one imperative loop nest. The pipeline, pass by
// pass, is listed in lower.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/lower/loop_nest.h"
#include "codegen/schedule/schedule.h"
#include "support/status.h"

namespace tensorgym {

// Most statements one unrolled loop may expand to (limit_code_size.cc).
inline constexpr int64_t kMaxUnrolledStatements = 256;

// A pass a target adds after the generic pipeline: a rewrite of the nest's body, or a
// check that rejects a nest the target cannot run (the error says why).
struct TargetPass {
  std::string_view name;  // as the lowering log (`tensorgym lower --after`) names it
  Stmt (*run)(const Stmt& body) = nullptr;
  Status (*check)(const Stmt& body) = nullptr;
};

// What lowering needs of a target: its name and its own passes, in order (a backend
// gives them: Backend::lowering(), codegen/backend/backend.h).
struct LoweringTarget {
  std::string name;  // "cpu"
  std::vector<TargetPass> passes;
  // Whether the target runs loops bound by bind() (a GPU); lowering for it allows
  // thread binding whatever LowerOptions say.
  bool thread_binding = false;
  // What kind of target it is: which primitives its schedules use.
  TargetKind kind = TargetKind::kCpu;
  // Whether the target's compiler reads the schedule too (LoopNest::schedule): an
  // accelerator whose instructions are a tiling, not the nest's loops.
  bool needs_schedule = false;
};

struct LowerOptions {
  // GPU backends accept bind(); the CPU target rejects a bound loop. Lowering for a
  // target with LoweringTarget::thread_binding sets it.
  bool allow_thread_binding = false;
  // The accelerator's on-chip buffer scopes and virtual threads (vthread); lowering for
  // a target of kind kAccelerator sets it. Without either option only the cpu's
  // schedules lower.
  bool allow_accelerator_scopes = false;
  // Run the simplifier (turn off only to look at the raw nest).
  bool simplify = true;
  // The lowering log: called after each pass that changes the nest, with the pass's
  // name (lowering_pass_names()) and the nest as it then is.
  std::function<void(std::string_view pass, const LoopNest& nest)> after_pass;
};

// The target-independent pipeline: the nest the analyses (features, cost model) and
// the interpreter read; LoopNest::target stays empty. Errors are FAILED_PRECONDITION /
// INVALID_ARGUMENT with a message naming the stage or loop; the measurement layer
// reports them as INSTANTIATION errors.
Expected<LoopNest> lower(const ScheduleState& state, const LowerOptions& options = {});
inline Expected<LoopNest> lower(const Schedule& schedule, const LowerOptions& options = {}) {
  return lower(schedule.state(), options);
}

// The whole pipeline for a target: the generic passes, then the target's own. The
// nest a backend compiles (LoopNest::target is the target's name).
Expected<LoopNest> lower(const ScheduleState& state, const LoweringTarget& target, const LowerOptions& options = {});
inline Expected<LoopNest> lower(const Schedule& schedule, const LoweringTarget& target,
                                const LowerOptions& options = {}) {
  return lower(schedule.state(), target, options);
}

// The target's passes on a target-independent nest (FAILED_PRECONDITION when the nest
// was already lowered for a target).
Expected<LoopNest> lower_for_target(LoopNest nest, const LoweringTarget& target, const LowerOptions& options = {});

// The names of the passes that change the nest, in pipeline order: the generic ones,
// then the target's.
std::vector<std::string> lowering_pass_names(const LoweringTarget& target = {});

// A lowering, with what a later lowering of a similar state can reuse. Immutable:
// environments share it between forks and steps.
struct LoweredNest {
  LoopNest nest;
  // The state lowered (kept alive, never copied) and the options used.
  std::shared_ptr<const ScheduleState> state;
  LowerOptions options;
  // The nest before limit_code_size when it depends on the loop kinds only through
  // its For nodes (no auto_unroll_max_step pragma); undefined otherwise.
  Stmt kind_independent_body;
  // Whether this lowering reused an earlier one (for tests and benchmarks).
  bool reused = false;
};

// The same nest as lower(*state, options), reusing `previous` (an earlier result,
// may be null) when its state is one rewritable primitive away from `state`: the
// kinds of leaf loops (vectorize, parallel, unroll), one split by a dividing factor
// or one reorder of a perfect nest before the reduction (reuse_nest.h says exactly
// when). Then bounds, loop building, flattening and simplification are skipped, the
// earlier nest is rewritten and only limit_code_size runs again. Takes `previous`
// and lets go of it before lowering when it cannot be reused, so that the memory
// of its nest (often the last thing the caller touched) serves the new one.
Expected<std::shared_ptr<const LoweredNest>> lower_reusing(std::shared_ptr<const ScheduleState> state,
                                                           std::shared_ptr<const LoweredNest> previous,
                                                           const LowerOptions& options = {});

}  // namespace tensorgym
