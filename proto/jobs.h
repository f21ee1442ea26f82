// Batch jobs and their results as files.
//
// A job file is JSON Lines, one job per line, with the fields of proto EvaluateJob
// (protobuf JSON mapping; unknown fields are errors):
//
//   {"key": "gmm1-a", "benchmark": "benchmark://ops-v0/gmm-1", "actions": "split(C.i, 32, io, ii)",
//    "observations": ["est_cycles", "loop_nest"], "rewards": ["est_cycles"],
//    "parameters": {"runner.repeat": "3"}, "timeout_s": 30}
//
// A job without a `key` is keyed by the content hash of what it evaluates
// (job_content_key), so the same job always has the same key and a retry or a resumed
// run cannot count it twice. A line that is not a job still gets a key (the hash of
// its text, or its own "key" when it has one) and a MALFORMED result naming the file
// and line.
//
// Results are JSON Lines too (result_to_json), one per job, each with its job's key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spaces/event.h"
#include "support/status.h"

namespace tensorgym::proto {
class EvaluateJob;
class JobResult;
enum JobError : int;
}  // namespace tensorgym::proto

namespace tensorgym::client {

struct BatchJob {
  std::string key;  // empty: job_content_key(*this)
  std::string env;  // empty: schedule-v0
  std::string benchmark;
  std::string program;  // program text instead of a URI (benchmark is then a label)
  std::string actions;  // action text (schedule-v0: primitives, one per line or ';'-separated)
  std::string action_space;
  std::vector<std::string> observations;
  std::vector<std::string> rewards;
  std::map<std::string, std::string> parameters;
  double timeout_s = 0;  // compile and run deadlines of its measurement (0: the runner's)
  std::string target;    // its backend (empty: cpu)
};

// 32 hex digits of SHA-256 over every field but the key, in a fixed, unambiguous
// encoding (lengths before contents, the environment's default spelled out; the
// target only when one is named, so keys made before targets existed stay).
std::string job_content_key(const BatchJob& job);

// One job as a JSON line (no newline), the job file's format; parse_job_line reads it
// back. parse_job_line errors are INVALID_ARGUMENT saying what is wrong.
std::string job_to_json(const BatchJob& job);
Expected<BatchJob> parse_job_line(std::string_view line);

struct JobLine {
  int line = 0;  // 1-based line number in the file
  BatchJob job;  // keyed; for a line that is not a job, only the key is set
  Status error;  // why the line is not a job ("FILE:LINE: ...")
};

// The jobs of a job file, keyed, in order (blank lines skipped). Fails only when the
// file cannot be read.
Expected<std::vector<JobLine>> read_job_file(const std::string& path);

struct BatchResult {
  std::string key;
  // The error class: "OK", or MALFORMED, NOT_FOUND, INVALID_ACTION, OBSERVATION_FAILED,
  // INSTANTIATION, COMPILE, RUNTIME_CRASH, WRONG_ANSWER, TIMEOUT, WORKER_LOST,
  // UNAVAILABLE, INTERNAL, RESOURCE_EXHAUSTED (docs/protocol.md).
  std::string error = "OK";
  std::string message;
  std::string benchmark;
  std::vector<std::pair<std::string, Event>> observations;  // in the job's order
  std::vector<std::pair<std::string, double>> rewards;
  double queue_ms = 0;    // waiting on the server
  double compile_ms = 0;  // compiling the kernel, when measured
  double run_ms = 0;      // the rest of the job's execution
  std::string endpoint;   // where it ran ("" when it never reached one)
  std::string instance_id;
  int slot = -1;
  int64_t worker_pid = 0;
  int attempts = 0;  // times it was sent
  // Where and how the job's runtime was measured (host, CPU, LLVM, settings, worker):
  // proto Provenance in the protobuf JSON mapping; empty when it did not measure.
  std::string provenance_json;

  bool ok() const { return error == "OK"; }
  // An observation or reward by name (null when the job did not ask for it).
  const Event* observation(const std::string& name) const;
  const double* reward(const std::string& name) const;
};

// The wire forms (proto EvaluateJob and JobResult). result_from_proto takes the
// names of the values from the job, since a result lists them in the job's order.
void job_to_proto(const BatchJob& job, proto::EvaluateJob* out);
// The text name of an error class: "OK", "MALFORMED", "COMPILE", ... (JobError without JOB_).
std::string job_error_class(proto::JobError error);
BatchResult result_from_proto(const proto::EvaluateJob& job, const proto::JobResult& result);

// One result as a JSON line (no newline).
std::string result_to_json(const BatchResult& result);

// What --resume and the tests read back from a result line.
struct ResultLine {
  std::string key;
  std::string error;
  std::string message;
  std::string endpoint;
  int attempts = 0;
  std::string observations_json;  // the "observations" object, re-serialized canonically
  std::string rewards_json;
};
// INVALID_ARGUMENT when the line is not a JSON object with a string "key".
Expected<ResultLine> parse_result_line(std::string_view line);

}  // namespace tensorgym::client
