// What the runner takes and returns: plain C++ values. Protocol Buffers appear only
// where these cross a process boundary (the worker frame, measure_wire.h; the service),
// with the same fields as their messages in proto/tensorgym.proto.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/measure/timing.h"

namespace tensorgym {

// How the runner measures. A zero field means "the default" (runner_settings.h says
// which); seed 0 is a seed like any other.
struct RunnerSettings {
  int number = 0;            // initial runs per repeat (grows)
  int repeat = 0;            // timed samples (the most, with min_repeat and target_cv)
  int min_repeat = 0;        // the fewest timed samples: fewer than repeat once they agree within target_cv
  double target_cv = 0;      // the samples' coefficient of variation at which sampling may stop
  double min_repeat_ms = 0;  // the shortest a repeat may take
  bool flush_cache = false;  // evict the caches before every repeat
  int threads = 0;           // threads for parallel loops (0: all cores)
  uint64_t seed = 0;         // random inputs
  double compile_timeout_s = 0;
  double run_timeout_s = 0;
  int64_t check_points = 0;  // output points compared with the reference evaluator
  double rtol = 0;
  double atol = 0;
  // A simulated target's simulator (fpga: "fsim" or "rtl"); empty: the target's own.
  std::string simulator;

  bool operator==(const RunnerSettings&) const = default;
};

// The error classes of a measurement (measure_error.h describes each). The values are
// the wire's (proto MeasureError).
enum class MeasureError {
  kOk = 0,
  kInstantiation = 1,  // the schedule did not apply or did not lower
  kCompile = 2,        // the backend rejected or failed on the nest
  kRuntimeCrash = 3,   // the kernel crashed the worker (signal) or reported an error
  kWrongAnswer = 4,    // outputs differ from the reference evaluator
  kTimeout = 5,        // compile or run passed its deadline; the worker was killed
  kWorkerLost = 6,     // the worker died or broke the protocol outside a kernel run
  kResourceExhausted = 7,  // past a memory cap: the program's or its lowered buffers', or the worker's limit
};

// Makes a worker fail on purpose, so isolation is tested for real. Test-only. The
// values are the wire's (proto TestFault).
enum class TestFault {
  kNone = 0,
  kCrashInCompile = 1,
  kHangInCompile = 2,
  kCrashInRun = 3,
  kHangInRun = 4,
  kExitInRun = 5,
  kCorruptOutput = 6,
  kAllocateInRun = 7,  // allocates past the worker's memory limit
  kExecInRun = 8,      // tries execve and socket, which the worker's sandbox denies
};

struct MeasureRequest {
  uint64_t job_id = 0;
  // The backend that compiles and runs it (codegen/backend/registry.h); empty: "cpu".
  std::string target;
  std::string program;   // program text
  std::string schedule;  // trace text
  RunnerSettings settings;
  bool emit_code_text = false;  // keep the generated code's text (LLVM IR for cpu)
  // Compile (and check it compiles) without running: for llvm_ir-style observations.
  bool compile_only = false;
  TestFault test_fault = TestFault::kNone;
  // Set instead of program and schedule: a whole model graph to run in its planned
  // arena (the bytes of a proto GraphExecution; memplan/exec/graph_wire.h builds them).
  std::string graph;
};

// Where a number came from, so results are only compared like with like.
struct Provenance {
  std::string tensorgym_version;
  std::string target;            // the backend's name: "cpu"
  std::string compiler_version;  // of the target's code generator (LLVM for cpu)
  std::string target_triple;
  std::string device;            // the processor (the CPU's name for cpu)
  std::string features;          // the target's enabled features
  std::string clock;             // what timed it: "host", "device", "fsim", "rtl" (TargetInfo::clock)
  int threads = 0;
  RunnerSettings settings;
  std::string hostname;
  int64_t worker_pid = 0;
  // Set by a client that had it measured remotely: the service's address and its
  // instance id.
  std::string endpoint;
  std::string instance_id;
};

struct MeasureResult {
  uint64_t job_id = 0;
  std::string target;  // the backend that compiled and ran it
  MeasureError error = MeasureError::kOk;
  std::string error_message;  // the failing check, the signal, the worker's stderr
  TimingStats runtime;        // seconds per run: median, spread, the samples
  double compile_ms = 0;
  bool correct = false;
  double max_abs_error = 0;
  int64_t checked_points = 0;
  double flops = 0;
  double gflops = 0;  // flops / median
  Provenance provenance;
  std::string code_text;  // the generated code's text when asked (LLVM IR for cpu)
  bool kernel_cache_hit = false;

  bool ok() const { return error == MeasureError::kOk; }
};

}  // namespace tensorgym
