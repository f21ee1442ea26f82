#pragma once
// Session parameters (Env::set_parameter) arrive as text; every environment parses
// them the same way and rejects them with the same message.
#include <cstdint>
#include <string>

#include "support/status.h"

namespace tensorgym {

struct RunnerSettings;  // codegen/measure/measurement.h

// `value` as a whole decimal integer in [lo, hi], else kInvalidArgument naming `key`.
Expected<int64_t> parse_int_parameter(const std::string& key, const std::string& value, int64_t lo, int64_t hi);

// The measurement parameters every environment that measures takes: runner.repeat,
// runner.min_repeat, runner.target_cv, runner.number, runner.min_repeat_ms,
// runner.threads, runner.seed,
// runner.flush_cache, runner.timeout_s, runner.simulator. NOT_FOUND for any other
// key (the caller names its own), INVALID_ARGUMENT for a bad value.
Status apply_runner_parameter(RunnerSettings* settings, const std::string& key, const std::string& value);
// The keys above, for messages.
extern const char* const kRunnerParameterNames;

}  // namespace tensorgym
