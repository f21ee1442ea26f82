#include "envs/env_context.h"
#include "envs/schedule/schedule_episode.h"

#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner.h"

namespace tensorgym {
namespace {

// Not cached: the next call measures again.
Status cancelled_measurement() { return Status(StatusCode::kCancelled, "measurement cancelled by the caller"); }

bool is_cancelled(const Expected<MeasureResult>& r) {
  return !r.ok() && r.status().code() == StatusCode::kCancelled;
}

// Lowering for a target: thread binding where the target runs bound loops (a GPU), the
// on-chip scopes and virtual threads on an accelerator.
LowerOptions lower_options(const std::string& target) {
  LowerOptions options;
  Expected<const Backend*> backend = find_backend(target);
  options.allow_thread_binding = backend.ok() && (*backend)->lowering().thread_binding;
  options.allow_accelerator_scopes = backend.ok() && (*backend)->lowering().kind == TargetKind::kAccelerator;
  return options;
}

}  // namespace

DerivedState::DerivedState(std::shared_ptr<const Schedule> schedule, std::shared_ptr<const std::string> program_text,
                           std::shared_ptr<EnvContext> context, RunnerSettings settings, std::string target,
                           const DerivedState* previous)
    : schedule_(std::move(schedule)),
      program_text_(std::move(program_text)),
      context_(std::move(context)),
      settings_(std::move(settings)),
      target_(std::move(target)) {
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
    nest_ = lower_reusing(std::move(state), std::move(previous_lowering_), lower_options(target_));
  }
  if (!nest_->ok()) return nest_->status();
  const std::shared_ptr<const LoweredNest>& lowered = **nest_;
  return std::shared_ptr<const LoopNest>(lowered, &lowered->nest);
}

Expected<std::shared_ptr<const LoopNest>> DerivedState::target_nest() {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> generic, nest());
  std::lock_guard<std::mutex> lock(mu_);
  if (!target_nest_) {
    Expected<const Backend*> backend = find_backend(target_);
    if (!backend.ok()) {
      target_nest_ = backend.status();
    } else {
      LoopNest nest = *generic;
      // The state lives as long as the schedule it belongs to (aliasing pointer).
      if ((*backend)->lowering().needs_schedule)
        nest.schedule = std::shared_ptr<const ScheduleState>(schedule_, &schedule_->state());
      Expected<LoopNest> lowered = lower_for_target(std::move(nest), (*backend)->lowering(), lower_options(target_));
      if (lowered.ok()) {
        target_nest_ = std::shared_ptr<const LoopNest>(std::make_shared<LoopNest>(std::move(*lowered)));
      } else {
        target_nest_ = lowered.status();
      }
    }
  }
  return *target_nest_;
}

Expected<std::shared_ptr<const Executable>> DerivedState::target_code() {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, target_nest());
  std::lock_guard<std::mutex> lock(mu_);
  if (!target_code_) {
    Expected<const Backend*> backend = find_backend(target_);
    CompileOptions options;
    options.keep_code_text = true;
    if (backend.ok() && (*backend)->target().simulated) options.simulator = settings_.simulator;
    target_code_ = backend.ok() ? (*backend)->compile(*nest, options)
                                : Expected<std::shared_ptr<const Executable>>(backend.status());
  }
  return *target_code_;
}

Expected<bool> DerivedState::interpreted_correct() {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, target_nest());
  std::lock_guard<std::mutex> lock(mu_);
  if (!interpreted_correct_) {
    interpreted_correct_ = [&]() -> Expected<bool> {
      const Program& program = schedule_->program();
      std::vector<HostBuffer> inputs = make_random_inputs(program, settings_.seed);
      std::vector<HostBuffer> outputs = make_output_buffers(*nest);
      InterpreterOptions options;
      options.max_steps = kMaxInterpretedSteps;
      Status run = interpret(*nest, const_pointers(inputs), pointers(outputs), options);
      if (run.code() == StatusCode::kResourceExhausted)
        return resource_exhausted("the " + target_ + " target cannot run here, and the program is too large for the "
                                  "reference interpreter to check (" + run.message() + ")");
      TG_RETURN_IF_ERROR(run.with_context("interpreting the " + target_ + " nest"));
      std::vector<std::string> names;
      for (const BufferArg& out : nest->outputs) names.push_back(out.name);
      MeasureResult check = check_outputs(program, names, inputs, outputs, settings_);
      if (check.error == MeasureError::kWrongAnswer) return false;
      if (!check.ok()) return measure_error_status(check, StatusCode::kFailedPrecondition);
      return true;
    }();
  }
  return *interpreted_correct_;
}

Expected<MeasureResult> DerivedState::run_worker(bool compile_only) {
  MeasureRequest request;
  request.target = target_;
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
