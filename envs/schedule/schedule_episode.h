// The state of one schedule-v0 episode and what it derives to. The state is exactly
// (benchmark, actions); the schedule, cursor and every observation follow from it.
// Derived values (the lowered nest, compilations, measurements) are computed on
// demand, once per schedule, and shared with forks.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "datasets/benchmark.h"
#include "envs/env_context.h"
#include "envs/schedule/cursor_actions.h"
#include "codegen/measure/measurement.h"
#include "support/deferred_release.h"

namespace tensorgym {

enum class ActionSpaceKind { kPrimitives, kCursor };

class DerivedState {
 public:
  // `previous`: the derived state of the schedule this one follows in the episode
  // (may be null); its lowering is reused where the schedules allow (lower_reusing).
  // `target`: the backend the episode compiles for (codegen/backend/registry.h).
  DerivedState(std::shared_ptr<const Schedule> schedule, std::shared_ptr<const std::string> program_text,
               std::shared_ptr<EnvContext> context, RunnerSettings settings, std::string target,
               const DerivedState* previous = nullptr);

  const Schedule& schedule() const { return *schedule_; }
  const std::string& target() const { return target_; }
  // The target-independent nest (what features, the cost models and the interpreter
  // read); loops bound by bind() keep their tags where the target binds threads.
  Expected<std::shared_ptr<const LoopNest>> nest();
  // The nest lowered for the target (its own passes and checks after the generic ones):
  // an error says why the target cannot run this schedule.
  Expected<std::shared_ptr<const LoopNest>> target_nest();
  // The target nest compiled in this process with its code text kept (cuda: the PTX and
  // its kernels, assembled by ptxas where it is installed). Nothing runs it: measuring
  // is the runner's, in its sandboxed workers.
  Expected<std::shared_ptr<const Executable>> target_code();
  // Whether the target nest computes what the program says, run by the reference
  // interpreter on the runner's random inputs and checked as a measurement checks
  // (codegen/measure/measure_job.h): the `correct` check of a target nothing here runs.
  // RESOURCE_EXHAUSTED past kMaxInterpretedSteps.
  Expected<bool> interpreted_correct();
  static constexpr int64_t kMaxInterpretedSteps = int64_t(1) << 27;
  // A measured run (sandboxed worker): runtime, GFLOP/s, compile time, correctness.
  // Under a cancelled MeasureCancellation (envs/env.h) these return CANCELLED and
  // cache nothing.
  Expected<MeasureResult> measurement();
  // The provenance of this schedule's measurement when it has been measured (and
  // succeeded); measures nothing.
  std::optional<Provenance> measured_provenance() const;
  // Compilation only (sandboxed worker), with the optimized LLVM IR.
  Expected<MeasureResult> compilation();

 private:
  Expected<MeasureResult> run_worker(bool compile_only);

  // What the next state of the episode may reuse: this state's lowering when it was
  // computed, else the lowering this state would have reused.
  std::shared_ptr<const LoweredNest> reusable_lowering() const;

  std::shared_ptr<const Schedule> schedule_;
  std::shared_ptr<const std::string> program_text_;
  std::shared_ptr<EnvContext> context_;
  RunnerSettings settings_;
  std::string target_;
  mutable std::mutex mu_;
  std::shared_ptr<const LoweredNest> previous_lowering_;  // handed to lower_reusing with nest_
  std::optional<Expected<std::shared_ptr<const LoweredNest>>> nest_;
  std::optional<Expected<MeasureResult>> measurement_;
  std::optional<Expected<MeasureResult>> compilation_;
  std::optional<Expected<std::shared_ptr<const LoopNest>>> target_nest_;
  std::optional<Expected<std::shared_ptr<const Executable>>> target_code_;
  std::optional<Expected<bool>> interpreted_correct_;
};

struct ScheduleEpisode {
  std::shared_ptr<EnvContext> context;
  Benchmark benchmark;
  // Immutable once made: an action makes a new schedule, so derived states and forks
  // share it instead of copying it.
  std::shared_ptr<const Schedule> schedule;
  ActionSpaceKind action_space = ActionSpaceKind::kPrimitives;
  std::string target = "cpu";  // the backend it compiles for and is measured on
  TargetKind target_kind = TargetKind::kCpu;  // which primitives apply (PrimitiveDef::targets)
  Cursor cursor;
  std::vector<std::string> actions;  // canonical text of every applied action
  RunnerSettings runner_settings;
  std::shared_ptr<DerivedState> derived;
  std::shared_ptr<const std::string> program_text;  // benchmark.program_text, shared with derived states

  // Refreshes `derived` after the schedule or the runner settings changed.
  void invalidate() {
    if (!program_text) program_text = std::make_shared<const std::string>(benchmark.program_text);
    std::shared_ptr<DerivedState> previous = std::move(derived);
    derived = std::make_shared<DerivedState>(schedule, program_text, context, runner_settings, target,
                                             previous.get());
    // The previous state owns the previous schedule and lowered nest; a server drops
    // them after its answer is sent.
    release_later(std::move(previous));
  }
};

}  // namespace tensorgym
