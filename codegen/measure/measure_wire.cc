#include "codegen/measure/measure_wire.h"

#include "proto/provenance_json.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym {

void to_proto(const RunnerSettings& in, proto::RunnerSettings* out) {
  out->set_number(in.number);
  out->set_repeat(in.repeat);
  out->set_min_repeat_ms(in.min_repeat_ms);
  out->set_flush_cache(in.flush_cache);
  out->set_threads(in.threads);
  out->set_seed(in.seed);
  out->set_compile_timeout_s(in.compile_timeout_s);
  out->set_run_timeout_s(in.run_timeout_s);
  out->set_check_points(in.check_points);
  out->set_rtol(in.rtol);
  out->set_atol(in.atol);
  out->set_simulator(in.simulator);
  out->set_min_repeat(in.min_repeat);
  out->set_target_cv(in.target_cv);
}

RunnerSettings from_proto(const proto::RunnerSettings& in) {
  RunnerSettings out;
  out.number = in.number();
  out.repeat = in.repeat();
  out.min_repeat_ms = in.min_repeat_ms();
  out.flush_cache = in.flush_cache();
  out.threads = in.threads();
  out.seed = in.seed();
  out.compile_timeout_s = in.compile_timeout_s();
  out.run_timeout_s = in.run_timeout_s();
  out.check_points = in.check_points();
  out.rtol = in.rtol();
  out.atol = in.atol();
  out.simulator = in.simulator();
  out.min_repeat = in.min_repeat();
  out.target_cv = in.target_cv();
  return out;
}

void to_proto(const Provenance& in, proto::Provenance* out) {
  out->set_tensorgym_version(in.tensorgym_version);
  out->set_target(in.target);
  out->set_llvm_version(in.compiler_version);
  out->set_target_triple(in.target_triple);
  out->set_cpu_name(in.device);
  out->set_cpu_features(in.features);
  out->set_threads(in.threads);
  to_proto(in.settings, out->mutable_settings());
  out->set_hostname(in.hostname);
  out->set_worker_pid(in.worker_pid);
  out->set_endpoint(in.endpoint);
  out->set_instance_id(in.instance_id);
  out->set_clock(in.clock);
}

Provenance from_proto(const proto::Provenance& in) {
  Provenance out;
  out.tensorgym_version = in.tensorgym_version();
  out.target = in.target();
  out.compiler_version = in.llvm_version();
  out.target_triple = in.target_triple();
  out.device = in.cpu_name();
  out.features = in.cpu_features();
  out.threads = in.threads();
  out.settings = from_proto(in.settings());
  out.hostname = in.hostname();
  out.worker_pid = in.worker_pid();
  out.endpoint = in.endpoint();
  out.instance_id = in.instance_id();
  out.clock = in.clock();
  return out;
}

void to_proto(const MeasureRequest& in, proto::MeasureRequest* out) {
  out->set_job_id(in.job_id);
  out->set_target(in.target);
  out->set_program(in.program);
  out->set_schedule(in.schedule);
  to_proto(in.settings, out->mutable_settings());
  out->set_emit_llvm_ir(in.emit_code_text);
  out->set_compile_only(in.compile_only);
  out->set_test_fault(proto::TestFault(int(in.test_fault)));
  out->set_graph(in.graph);
}

MeasureRequest from_proto(const proto::MeasureRequest& in) {
  MeasureRequest out;
  out.job_id = in.job_id();
  out.target = in.target();
  out.program = in.program();
  out.schedule = in.schedule();
  out.settings = from_proto(in.settings());
  out.emit_code_text = in.emit_llvm_ir();
  out.compile_only = in.compile_only();
  out.test_fault = TestFault(int(in.test_fault()));
  out.graph = in.graph();
  return out;
}

void to_proto(const MeasureResult& in, proto::MeasureResult* out) {
  out->set_job_id(in.job_id);
  out->set_target(in.target);
  out->set_error(proto::MeasureError(int(in.error)));
  out->set_error_message(in.error_message);
  // An unset runtime stays unset on the wire (no samples: nothing was timed).
  if (in.runtime.repeat > 0 || !in.runtime.samples_s.empty()) {
    proto::RuntimeStats* r = out->mutable_runtime();
    r->set_median_s(in.runtime.median_s);
    r->set_min_s(in.runtime.min_s);
    r->set_max_s(in.runtime.max_s);
    r->set_mean_s(in.runtime.mean_s);
    r->set_cv(in.runtime.cv);
    for (double s : in.runtime.samples_s) r->add_samples_s(s);
    r->set_number(in.runtime.number);
    r->set_repeat(in.runtime.repeat);
  }
  out->set_compile_ms(in.compile_ms);
  out->set_correct(in.correct);
  out->set_max_abs_error(in.max_abs_error);
  out->set_checked_points(in.checked_points);
  out->set_flops(in.flops);
  out->set_gflops(in.gflops);
  to_proto(in.provenance, out->mutable_provenance());
  out->set_llvm_ir(in.code_text);
  out->set_kernel_cache_hit(in.kernel_cache_hit);
}

MeasureResult from_proto(const proto::MeasureResult& in) {
  MeasureResult out;
  out.job_id = in.job_id();
  out.target = in.target();
  out.error = MeasureError(int(in.error()));
  out.error_message = in.error_message();
  const proto::RuntimeStats& r = in.runtime();
  out.runtime.median_s = r.median_s();
  out.runtime.min_s = r.min_s();
  out.runtime.max_s = r.max_s();
  out.runtime.mean_s = r.mean_s();
  out.runtime.cv = r.cv();
  out.runtime.samples_s.assign(r.samples_s().begin(), r.samples_s().end());
  out.runtime.number = r.number();
  out.runtime.repeat = r.repeat();
  out.compile_ms = in.compile_ms();
  out.correct = in.correct();
  out.max_abs_error = in.max_abs_error();
  out.checked_points = in.checked_points();
  out.flops = in.flops();
  out.gflops = in.gflops();
  out.provenance = from_proto(in.provenance());
  out.code_text = in.llvm_ir();
  out.kernel_cache_hit = in.kernel_cache_hit();
  return out;
}

std::string serialize(const MeasureRequest& request) {
  proto::MeasureRequest p;
  to_proto(request, &p);
  return p.SerializeAsString();
}

std::string serialize(const MeasureResult& result) {
  proto::MeasureResult p;
  to_proto(result, &p);
  return p.SerializeAsString();
}

Expected<MeasureRequest> parse_measure_request(const std::string& bytes) {
  proto::MeasureRequest p;
  if (!p.ParseFromString(bytes)) return Status(StatusCode::kDataLoss, "the bytes do not parse as a MeasureRequest");
  return from_proto(p);
}

Expected<MeasureResult> parse_measure_result(const std::string& bytes) {
  proto::MeasureResult p;
  if (!p.ParseFromString(bytes)) return Status(StatusCode::kDataLoss, "the bytes do not parse as a MeasureResult");
  return from_proto(p);
}

std::string provenance_to_json(const Provenance& provenance) {
  proto::Provenance p;
  to_proto(provenance, &p);
  return provenance_to_json(p);
}

}  // namespace tensorgym
