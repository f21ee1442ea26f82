// The environments by name.
#include "envs/env_context.h"
#include "envs/memory/memory_env.h"
#include "envs/schedule/schedule_env.h"
#include "support/quote.h"

namespace tensorgym {

std::vector<std::string> env_names() { return {"schedule-v0", "memory-v0"}; }

Expected<std::unique_ptr<Env>> make_env(const std::string& name, std::shared_ptr<EnvContext> context) {
  if (!context) context = std::make_shared<EnvContext>();
  if (name == "schedule-v0") return std::unique_ptr<Env>(std::make_unique<ScheduleEnv>(std::move(context)));
  if (name == "memory-v0") return std::unique_ptr<Env>(std::make_unique<MemoryEnv>(std::move(context)));
  return not_found("unknown environment " + quote_text(name) + " (known: schedule-v0, memory-v0)");
}

}  // namespace tensorgym
