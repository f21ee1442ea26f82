#include "proto/jobs.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "proto/provenance_json.h"
#include "proto/tensorgym.pb.h"
#include "spaces/event_json.h"
#include "support/sha256.h"

namespace tensorgym::client {
namespace {

void put_field(std::string* out, std::string_view s) {
  fmt::format_to(std::back_inserter(*out), "{}:{};", s.size(), s);
}

BatchJob from_proto(const proto::EvaluateJob& p) {
  BatchJob job;
  job.key = p.key();
  job.env = p.env();
  job.benchmark = p.benchmark();
  job.program = p.program();
  job.actions = p.actions();
  job.action_space = p.action_space();
  job.observations.assign(p.observations().begin(), p.observations().end());
  job.rewards.assign(p.rewards().begin(), p.rewards().end());
  for (const auto& [k, v] : p.parameters()) job.parameters[k] = v;
  job.timeout_s = p.timeout_s();
  job.target = p.target();
  return job;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// The key of a line that is not a job: its own "key" when it is a JSON object with
// one (so the user finds the error under the name they gave), else the hash of its text.
std::string key_of_bad_line(const std::string& line) {
  const nlohmann::json obj = nlohmann::json::parse(line, nullptr, false);
  if (obj.is_object()) {
    auto it = obj.find("key");
    if (it != obj.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) return it->get<std::string>();
  }
  return sha256_hex("tensorgym-bad-job-line-v1;" + trim(line)).substr(0, 32);
}

}  // namespace

std::string job_content_key(const BatchJob& job) {
  std::string enc = "tensorgym-job-v1;";
  put_field(&enc, job.env.empty() ? "schedule-v0" : job.env);
  put_field(&enc, job.benchmark);
  put_field(&enc, job.program);
  put_field(&enc, job.actions);
  put_field(&enc, job.action_space);
  put_field(&enc, fmt::format("{}", job.observations.size()));
  for (const std::string& o : job.observations) put_field(&enc, o);
  put_field(&enc, fmt::format("{}", job.rewards.size()));
  for (const std::string& r : job.rewards) put_field(&enc, r);
  put_field(&enc, fmt::format("{}", job.parameters.size()));
  for (const auto& [k, v] : job.parameters) {
    put_field(&enc, k);
    put_field(&enc, v);
  }
  put_field(&enc, fmt::format("{:.17g}", job.timeout_s));
  if (!job.target.empty()) {
    put_field(&enc, "target");
    put_field(&enc, job.target);
  }
  return sha256_hex(enc).substr(0, 32);
}

void job_to_proto(const BatchJob& job, proto::EvaluateJob* p) {
  p->Clear();
  p->set_key(job.key);
  p->set_env(job.env);
  p->set_benchmark(job.benchmark);
  p->set_program(job.program);
  p->set_actions(job.actions);
  p->set_action_space(job.action_space);
  for (const std::string& o : job.observations) p->add_observations(o);
  for (const std::string& r : job.rewards) p->add_rewards(r);
  for (const auto& [k, v] : job.parameters) (*p->mutable_parameters())[k] = v;
  p->set_timeout_s(job.timeout_s);
  p->set_target(job.target);
}

std::string job_to_json(const BatchJob& job) {
  proto::EvaluateJob p;
  job_to_proto(job, &p);
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(p, &out, opts);
  return out;
}

Expected<BatchJob> parse_job_line(std::string_view line) {
  proto::EvaluateJob p;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(line), &p, opts);
  if (!st.ok()) return invalid_argument("not a job: " + std::string(st.message()));
  BatchJob job = from_proto(p);
  if (job.benchmark.empty() && job.program.empty())
    return invalid_argument("a job needs \"benchmark\" (a URI) or \"program\" (program text)");
  if (!std::isfinite(job.timeout_s) || job.timeout_s < 0) return invalid_argument("\"timeout_s\" must be >= 0");
  if (job.key.empty()) job.key = job_content_key(job);
  return job;
}

Expected<std::vector<JobLine>> read_job_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read the job file " + path);
  std::vector<JobLine> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    JobLine j;
    j.line = number;
    Expected<BatchJob> job = parse_job_line(line);
    if (job.ok()) {
      j.job = std::move(*job);
    } else {
      j.error = invalid_argument(fmt::format("{}:{}: {}", path, number, job.status().message()));
      j.job.key = key_of_bad_line(line);
    }
    out.push_back(std::move(j));
  }
  if (in.bad()) return Status(StatusCode::kDataLoss, "error while reading " + path);
  return out;
}

const Event* BatchResult::observation(const std::string& name) const {
  for (const auto& [n, v] : observations)
    if (n == name) return &v;
  return nullptr;
}

const double* BatchResult::reward(const std::string& name) const {
  for (const auto& [n, v] : rewards)
    if (n == name) return &v;
  return nullptr;
}

std::string job_error_class(proto::JobError error) {
  const std::string& name = proto::JobError_Name(error);
  if (name.empty()) return fmt::format("JOB_ERROR_{}", int(error));
  return name.rfind("JOB_", 0) == 0 ? name.substr(4) : name;
}

BatchResult result_from_proto(const proto::EvaluateJob& job, const proto::JobResult& r) {
  BatchResult out;
  out.key = r.key();
  out.error = job_error_class(r.error());
  out.message = r.error_message();
  out.benchmark = job.benchmark();
  // Values come in the job's order; a result that does not match its job has none.
  if (r.observation_size() == job.observations_size()) {
    for (int i = 0; i < r.observation_size(); ++i) {
      Expected<Event> v = event_from_proto(r.observation(i));
      out.observations.emplace_back(job.observations(i), v.ok() ? std::move(*v) : Event());
    }
  }
  if (r.reward_size() == job.rewards_size())
    for (int i = 0; i < r.reward_size(); ++i) out.rewards.emplace_back(job.rewards(i), r.reward(i));
  out.queue_ms = r.queue_ms();
  out.compile_ms = r.compile_ms();
  out.run_ms = r.run_ms();
  out.instance_id = r.instance_id();
  out.slot = r.slot();
  out.worker_pid = r.worker_pid();
  if (r.has_provenance()) out.provenance_json = provenance_to_json(r.provenance());
  return out;
}

std::string result_to_json(const BatchResult& r) {
  nlohmann::ordered_json j;
  j["key"] = r.key;
  j["error"] = r.error;
  j["message"] = r.message;
  j["benchmark"] = r.benchmark;
  nlohmann::ordered_json observations = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.observations) observations[name] = event_json(value);
  j["observations"] = std::move(observations);
  nlohmann::ordered_json rewards = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.rewards) rewards[name] = event_json(Event(value));
  j["rewards"] = std::move(rewards);
  // Non-finite times print as null.
  j["queue_ms"] = r.queue_ms;
  j["compile_ms"] = r.compile_ms;
  j["run_ms"] = r.run_ms;
  j["endpoint"] = r.endpoint;
  j["instance"] = r.instance_id;
  j["slot"] = r.slot;
  j["worker_pid"] = r.worker_pid;
  j["attempts"] = r.attempts;
  if (!r.provenance_json.empty()) {
    nlohmann::ordered_json provenance = nlohmann::ordered_json::parse(r.provenance_json, nullptr, false);
    if (!provenance.is_discarded()) j["provenance"] = std::move(provenance);
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Expected<ResultLine> parse_result_line(std::string_view line) {
  nlohmann::json obj;
  try {
    obj = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    return invalid_argument(fmt::format("not a JSON object: {}", e.what()));
  }
  if (!obj.is_object()) return invalid_argument("not a JSON object");
  auto str = [&](const char* name) {
    auto it = obj.find(name);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  ResultLine r;
  r.key = str("key");
  if (r.key.empty()) return invalid_argument("a result line needs a string \"key\"");
  r.error = str("error");
  r.message = str("message");
  r.endpoint = str("endpoint");
  if (auto it = obj.find("attempts"); it != obj.end() && it->is_number()) r.attempts = it->get<int>();
  // nlohmann::json keeps object keys sorted, so equal values print equally.
  auto canonical = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (auto it = obj.find("observations"); it != obj.end()) r.observations_json = canonical(*it);
  if (auto it = obj.find("rewards"); it != obj.end()) r.rewards_json = canonical(*it);
  return r;
}

}  // namespace tensorgym::client
