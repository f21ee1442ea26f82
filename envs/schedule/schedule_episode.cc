#include "envs/schedule/schedule_episode.h"

#include "codegen/lower/lower.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/runner.h"

namespace tensorgym {

DerivedState::DerivedState(Schedule schedule, std::string program_text, std::shared_ptr<EnvContext> context,
                           proto::RunnerSettings settings)
    : schedule_(std::move(schedule)),
      program_text_(std::move(program_text)),
      context_(std::move(context)),
      settings_(std::move(settings)) {}

Expected<std::shared_ptr<const LoopNest>> DerivedState::nest() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!nest_) {
    Expected<LoopNest> n = lower(schedule_);
    if (n.ok()) {
      nest_ = std::shared_ptr<const LoopNest>(std::make_shared<LoopNest>(std::move(*n)));
    } else {
      nest_ = Expected<std::shared_ptr<const LoopNest>>(n.status());
    }
  }
  return *nest_;
}

Expected<proto::MeasureResult> DerivedState::run_worker(bool compile_only) {
  proto::MeasureRequest request;
  request.set_program(program_text_);
  request.set_schedule(schedule_.trace().to_string());
  *request.mutable_settings() = settings_;
  if (context_->threads > 0 && request.settings().threads() == 0)
    request.mutable_settings()->set_threads(context_->threads);
  request.set_compile_only(compile_only);
  request.set_emit_llvm_ir(compile_only);
  proto::MeasureResult result = context_->runner().measure(request);
  if (result.error() != proto::MEASURE_OK)
    return Status(StatusCode::kFailedPrecondition,
                  std::string(proto::MeasureError_Name(result.error())) + ": " + result.error_message());
  return result;
}

Expected<proto::MeasureResult> DerivedState::measurement() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!measurement_) measurement_ = run_worker(false);
  return *measurement_;
}

Expected<proto::MeasureResult> DerivedState::compilation() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!compilation_) compilation_ = run_worker(true);
  return *compilation_;
}

}  // namespace tensorgym
