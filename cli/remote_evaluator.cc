#include "cli/remote_evaluator.h"

#include <fmt/format.h>

#include "client/batch_evaluator.h"
#include "proto/provenance_json.h"
#include "proto/tensorgym.pb.h"
#include "spaces/event.h"

namespace tensorgym::cli {
namespace {

// The service's provenance of the measurement (host, CPU, LLVM, settings, worker) with
// where it ran: the endpoint and the service instance.
std::string remote_provenance(const client::BatchResult& r) {
  proto::Provenance p = provenance_from_json(r.provenance_json);
  p.set_endpoint(r.endpoint);
  p.set_instance_id(r.instance_id);
  if (p.worker_pid() == 0) p.set_worker_pid(r.worker_pid);
  return provenance_to_json(p);
}

class RemoteEvaluator : public Evaluator {
 public:
  RemoteEvaluator(std::unique_ptr<client::BatchEvaluator> batch, int threads)
      : batch_(std::move(batch)), threads_(threads) {}

  std::string metric() const override { return "runtime"; }
  bool deterministic() const override { return false; }

  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    const RunnerSettings settings = search_runner_settings();
    std::vector<client::BatchJob> jobs;
    for (const Candidate& c : candidates) {
      client::BatchJob j;
      j.benchmark = c.benchmark;
      j.program = c.program_text;
      j.actions = c.trace;
      j.observations = {"runtime", "flops"};
      j.parameters["runner.repeat"] = std::to_string(settings.repeat);
      j.parameters["runner.min_repeat_ms"] = std::to_string(int(settings.min_repeat_ms));
      if (threads_ > 0) j.parameters["runner.threads"] = std::to_string(threads_);
      j.timeout_s = settings.compile_timeout_s;
      jobs.push_back(std::move(j));
    }
    std::vector<client::BatchResult> results = batch_->evaluate(jobs);
    std::vector<Evaluation> out(candidates.size());
    for (size_t i = 0; i < results.size() && i < out.size(); ++i) {
      const client::BatchResult& r = results[i];
      Evaluation& e = out[i];
      e.provenance_json = remote_provenance(r);
      const Event* flops = r.observation("flops");
      if (flops) e.flops = flops->to_double();
      if (!r.ok()) {
        const StatusCode code = r.error == "INVALID_ACTION" || r.error == "INSTANTIATION" ? StatusCode::kInvalidArgument
                                : r.error == "TIMEOUT"                                  ? StatusCode::kDeadlineExceeded
                                : r.error == "UNAVAILABLE"                              ? StatusCode::kUnavailable
                                                                                         : StatusCode::kFailedPrecondition;
        e.status = Status(code, r.error + ": " + r.message);
        continue;
      }
      const Event* runtime = r.observation("runtime");
      if (!runtime || !(runtime->to_double() > 0)) {
        e.status = internal_error("the service answered without a runtime");
        continue;
      }
      e.cost = runtime->to_double();
      e.gflops = e.flops / e.cost / 1e9;
    }
    return out;
  }

 private:
  std::unique_ptr<client::BatchEvaluator> batch_;
  int threads_;
};

}  // namespace

Expected<std::unique_ptr<Evaluator>> make_remote_evaluator(const RemoteEvaluatorOptions& options) {
  client::BatchOptions bo;
  bo.endpoints = options.endpoints;
  bo.auth_token_file = options.auth_token_file;
  bo.tls = options.tls;
  bo.tls_ca_file = options.tls_ca_file;
  bo.preflight_measure = true;
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(bo);
  if (!batch.ok()) return batch.status();
  if (!(*batch)->wait_ready(1, options.connect_timeout_s)) {
    std::string why;
    for (const client::EndpointReport& e : (*batch)->endpoints())
      why += fmt::format("{}{}: {}{}", why.empty() ? "" : "; ", e.name, e.state,
                         e.last_error.empty() ? "" : fmt::format(" ({})", e.last_error));
    return Status(StatusCode::kUnavailable,
                  fmt::format("--endpoints: no endpoint ready within {} s: {}", int(options.connect_timeout_s), why));
  }
  return std::unique_ptr<Evaluator>(std::make_unique<RemoteEvaluator>(std::move(*batch), options.threads));
}

}  // namespace tensorgym::cli
