#include "codegen/measure/measure_error.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace tensorgym {

std::string measure_error_name(MeasureError error) {
  switch (error) {
    case MeasureError::kOk: return "MEASURE_OK";
    case MeasureError::kInstantiation: return "INSTANTIATION";
    case MeasureError::kCompile: return "COMPILE";
    case MeasureError::kRuntimeCrash: return "RUNTIME_CRASH";
    case MeasureError::kWrongAnswer: return "WRONG_ANSWER";
    case MeasureError::kTimeout: return "TIMEOUT";
    case MeasureError::kWorkerLost: return "WORKER_LOST";
    case MeasureError::kResourceExhausted: return "RESOURCE_EXHAUSTED";
  }
  return fmt::format("MEASURE_ERROR_{}", int(error));
}

Expected<TestFault> test_fault_from_name(const std::string& name) {
  static constexpr std::pair<const char*, TestFault> kFaults[] = {
      {"NO_FAULT", TestFault::kNone},           {"CRASH_IN_COMPILE", TestFault::kCrashInCompile},
      {"HANG_IN_COMPILE", TestFault::kHangInCompile}, {"CRASH_IN_RUN", TestFault::kCrashInRun},
      {"HANG_IN_RUN", TestFault::kHangInRun},   {"EXIT_IN_RUN", TestFault::kExitInRun},
      {"CORRUPT_OUTPUT", TestFault::kCorruptOutput}, {"ALLOCATE_IN_RUN", TestFault::kAllocateInRun},
      {"EXEC_IN_RUN", TestFault::kExecInRun},
  };
  if (name.empty()) return TestFault::kNone;
  for (const auto& [n, fault] : kFaults)
    if (name == n) return fault;
  return invalid_argument("unknown test fault '" + name + "'");
}

MeasureResult error_result(MeasureError error, std::string message) {
  MeasureResult r;
  r.error = error;
  r.error_message = std::move(message);
  r.correct = false;
  return r;
}

Status measure_error_status(const MeasureResult& result, StatusCode code) {
  if (result.error == MeasureError::kResourceExhausted) code = StatusCode::kResourceExhausted;
  return Status(code, measure_error_name(result.error) + ": " + result.error_message);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGSTKFLT: return "SIGSTKFLT";
    case SIGCHLD: return "SIGCHLD";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return fmt::format("signal {}", sig);
  }
}

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    std::string text = "killed by " + signal_name(sig);
    if (const char* what = strsignal(sig)) text += std::string(" (") + what + ")";
    if (WCOREDUMP(wait_status)) text += ", core dumped";
    return text;
  }
  if (WIFEXITED(wait_status)) return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
  return fmt::format("ended with wait status {}", wait_status);
}

}  // namespace tensorgym
