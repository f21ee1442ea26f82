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

#include "codegen/lower/loop_nest.h"
#include "codegen/schedule/schedule.h"
#include "datasets/benchmark.h"
#include "envs/env.h"
#include "envs/schedule/cursor_actions.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym {

enum class ActionSpaceKind { kPrimitives, kCursor };

class DerivedState {
 public:
  DerivedState(Schedule schedule, std::string program_text, std::shared_ptr<EnvContext> context,
               proto::RunnerSettings settings);

  const Schedule& schedule() const { return schedule_; }
  Expected<std::shared_ptr<const LoopNest>> nest();
  // A measured run (sandboxed worker): runtime, GFLOP/s, compile time, correctness.
  // Under a cancelled MeasureCancellation (envs/env.h) these return CANCELLED and
  // cache nothing.
  Expected<proto::MeasureResult> measurement();
  // Compilation only (sandboxed worker), with the optimized LLVM IR.
  Expected<proto::MeasureResult> compilation();

 private:
  Expected<proto::MeasureResult> run_worker(bool compile_only);

  Schedule schedule_;
  std::string program_text_;
  std::shared_ptr<EnvContext> context_;
  proto::RunnerSettings settings_;
  std::mutex mu_;
  std::optional<Expected<std::shared_ptr<const LoopNest>>> nest_;
  std::optional<Expected<proto::MeasureResult>> measurement_;
  std::optional<Expected<proto::MeasureResult>> compilation_;
};

struct ScheduleEpisode {
  std::shared_ptr<EnvContext> context;
  Benchmark benchmark;
  std::optional<Schedule> schedule;
  ActionSpaceKind action_space = ActionSpaceKind::kPrimitives;
  Cursor cursor;
  std::vector<std::string> actions;  // canonical text of every applied action
  proto::RunnerSettings runner_settings;
  std::shared_ptr<DerivedState> derived;

  // Refreshes `derived` after the schedule or the runner settings changed.
  void invalidate() {
    derived = std::make_shared<DerivedState>(*schedule, benchmark.program_text, context, runner_settings);
  }
};

}  // namespace tensorgym
