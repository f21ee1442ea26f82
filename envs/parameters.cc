#include "envs/parameters.h"

#include <fmt/format.h>

#include <charconv>

#include "codegen/measure/measurement.h"
#include "support/quote.h"

namespace tensorgym {

Expected<int64_t> parse_int_parameter(const std::string& key, const std::string& value, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
    return invalid_argument(
        fmt::format("parameter {} must be an integer in {}..{}, got {}", key, lo, hi, quote_text(value)));
  }
  return v;
}

const char* const kRunnerParameterNames =
    "runner.repeat, runner.min_repeat, runner.target_cv, runner.number, runner.min_repeat_ms, runner.threads, "
    "runner.seed, runner.flush_cache, runner.timeout_s, runner.simulator";

Status apply_runner_parameter(RunnerSettings* s, const std::string& key, const std::string& value) {
  if (key == "runner.repeat") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 1, 10000));
    s->repeat = int(v);
  } else if (key == "runner.min_repeat") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 1, 10000));
    s->min_repeat = int(v);
  } else if (key == "runner.target_cv") {
    // A fraction, e.g. 0.02 (from_chars: the same in every locale).
    double v = -1;
    const char* end = value.data() + value.size();
    const auto [ptr, ec] = std::from_chars(value.data(), end, v);
    if (value.empty() || ec != std::errc() || ptr != end || !(v > 0 && v <= 1))
      return invalid_argument("parameter runner.target_cv must be a number in (0, 1], got " + quote_text(value));
    s->target_cv = v;
  } else if (key == "runner.number") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 1, 1 << 30));
    s->number = int(v);
  } else if (key == "runner.min_repeat_ms") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 0, 60000));
    s->min_repeat_ms = double(v);
  } else if (key == "runner.threads") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 0, 1024));
    s->threads = int(v);
  } else if (key == "runner.seed") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 0, INT64_MAX));
    s->seed = uint64_t(v);
  } else if (key == "runner.flush_cache") {
    if (value != "true" && value != "false") return invalid_argument("runner.flush_cache must be true or false");
    s->flush_cache = value == "true";
  } else if (key == "runner.simulator") {
    if (value != "fsim" && value != "rtl")
      return invalid_argument("runner.simulator must be fsim or rtl (the fpga target's simulators), not " +
                              quote_text(value));
    s->simulator = value;
  } else if (key == "runner.timeout_s") {
    TG_ASSIGN_OR_RETURN(int64_t v, parse_int_parameter(key, value, 1, 3600));
    s->compile_timeout_s = double(v);
    s->run_timeout_s = double(v);
  } else {
    return not_found("not a runner parameter: " + quote_text(key));
  }
  return Status();
}

}  // namespace tensorgym
