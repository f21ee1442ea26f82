#include "codegen/measure/measure_error.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace tensorgym {

std::string measure_error_name(proto::MeasureError error) {
  const std::string& name = proto::MeasureError_Name(error);
  return name.empty() ? "MEASURE_ERROR_" + std::to_string(int(error)) : name;
}

proto::MeasureResult error_result(proto::MeasureError error, std::string message) {
  proto::MeasureResult r;
  r.set_error(error);
  r.set_error_message(std::move(message));
  r.set_correct(false);
  return r;
}

Status measure_error_status(const proto::MeasureResult& result, StatusCode code) {
  if (result.error() == proto::RESOURCE_EXHAUSTED) code = StatusCode::kResourceExhausted;
  return Status(code, measure_error_name(result.error()) + ": " + result.error_message());
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
    default: return "signal " + std::to_string(sig);
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
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  return "ended with wait status " + std::to_string(wait_status);
}

}  // namespace tensorgym
