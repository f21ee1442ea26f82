// The lifetimes CSV (datasets/lifetimes_csv.h parse_lifetimes_csv): an instance that
// parses must print to CSV that parses back to the same instance, and a small one is
// planned (every plan is verified before it is returned: an INTERNAL error is a
// planner bug).
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "datasets/lifetimes_csv.h"
#include "memplan/planner.h"

namespace tg = tensorgym;

namespace {
// Planned instances stay small so that an input stays fast.
constexpr size_t kMaxPlannedBuffers = 256;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tg::Expected<tg::Instance> inst = tg::parse_lifetimes_csv(text, "fuzz.csv");
  if (!inst.ok()) return 0;
  const std::string csv = tg::lifetimes_to_csv(*inst);
  tg::Expected<tg::Instance> again = tg::parse_lifetimes_csv(csv, "printed.csv");
  if (!again.ok() || tg::lifetimes_to_csv(*again) != csv) {
    fmt::print(stderr, "printed lifetimes do not parse back:\n{}\n", csv);
    std::abort();
  }
  if (inst->buffers.size() > kMaxPlannedBuffers) return 0;
  tg::GraphPlanOptions options;
  for (const char* planner : {"greedy_by_size", "first_fit", "best_fit_best"}) {
    tg::Expected<tg::OffsetPlan> plan = tg::plan_instance(*inst, planner, options);
    if (!plan.ok() && plan.status().code() == tg::StatusCode::kInternal) {
      fmt::print(stderr, "{}: {}\n", planner, plan.status().message());
      std::abort();
    }
  }
  return 0;
}
