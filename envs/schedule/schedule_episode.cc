#include "envs/env_context.h"
#include "envs/schedule/schedule_episode.h"

#include "codegen/lower/lower.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/runner.h"

namespace tensorgym {
namespace {

// Not cached: the next call measures again.
Status cancelled_measurement() { return Status(StatusCode::kCancelled, "measurement cancelled by the caller"); }

bool is_cancelled(const Expected<MeasureResult>& r) {
  return !r.ok() && r.status().code() == StatusCode::kCancelled;
}

}  // namespace

DerivedState::DerivedState(std::shared_ptr<const Schedule> schedule, std::shared_ptr<const std::string> program_text,
                           std::shared_ptr<EnvContext> context, RunnerSettings settings,
                           const DerivedState* previous)
    : schedule_(std::move(schedule)),
      program_text_(std::move(program_text)),
      context_(std::move(context)),
      settings_(std::move(settings)) {
  if (previous) {
    previous_lowering_ = previous->reusable_lowering();
  } else if (schedule_->trace_length() == 0) {
    // An episode's start: its lowering and its first action's rewrite the program's
    // shared lowering.
    previous_lowering_ = context_->initial_lowering(schedule_->program_ptr());
  }
}

std::shared_ptr<const LoweredNest> DerivedState::reusable_lowering() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (nest_ && nest_->ok()) return **nest_;
  return previous_lowering_;
}

Expected<std::shared_ptr<const LoopNest>> DerivedState::nest() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!nest_) {
    // The state lives as long as the schedule it belongs to (aliasing pointer).
    std::shared_ptr<const ScheduleState> state(schedule_, &schedule_->state());
    nest_ = lower_reusing(std::move(state), std::move(previous_lowering_));
  }
  if (!nest_->ok()) return nest_->status();
  const std::shared_ptr<const LoweredNest>& lowered = **nest_;
  return std::shared_ptr<const LoopNest>(lowered, &lowered->nest);
}

Expected<MeasureResult> DerivedState::run_worker(bool compile_only) {
  MeasureRequest request;
  request.target = context_->target;
  request.program = *program_text_;
  request.schedule = schedule_->trace().to_string();
  request.settings = settings_;
  if (context_->threads > 0 && request.settings.threads == 0) request.settings.threads = context_->threads;
  request.compile_only = compile_only;
  request.emit_code_text = compile_only;
  // A cancellable call (MeasureCancellation): tag the job so the caller can stop it.
  const MeasureCancellation* token = MeasureCancellation::current();
  if (token) {
    if (token->cancelled()) return cancelled_measurement();
    request.job_id = token->job_id();
  }
  MeasureResult result = context_->runner().measure(request);
  if (token && token->cancelled()) return cancelled_measurement();
  if (!result.ok()) return measure_error_status(result, StatusCode::kFailedPrecondition);
  return result;
}

Expected<MeasureResult> DerivedState::measurement() {
  std::lock_guard<std::mutex> lock(mu_);
  if (measurement_) return *measurement_;
  Expected<MeasureResult> r = run_worker(false);
  if (!is_cancelled(r)) measurement_ = r;
  return r;
}

std::optional<Provenance> DerivedState::measured_provenance() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!measurement_ || !measurement_->ok()) return std::nullopt;
  return (**measurement_).provenance;
}

Expected<MeasureResult> DerivedState::compilation() {
  std::lock_guard<std::mutex> lock(mu_);
  if (compilation_) return *compilation_;
  Expected<MeasureResult> r = run_worker(true);
  if (!is_cancelled(r)) compilation_ = r;
  return r;
}

}  // namespace tensorgym
