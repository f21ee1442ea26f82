// ONNX import (datasets/onnx_import.h import_onnx_bytes): serialized ModelProto
// bytes to a memory-planning graph. A graph that imports must be valid, and a small
// one is planned (plans are verified before they are returned: an INTERNAL error is a
// planner bug). Without ONNX in the build every input is UNIMPLEMENTED.
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "datasets/onnx_import.h"
#include "memplan/planner.h"

namespace tg = tensorgym;

namespace {
constexpr size_t kMaxPlannedOps = 256;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tg::Expected<tg::Graph> graph = tg::import_onnx_bytes(bytes, "fuzz.onnx");
  if (!graph.ok()) return 0;
  if (tg::Status valid = graph->validate(); !valid.ok()) {
    fmt::print(stderr, "imported graph is not valid: {}\n", valid.message());
    std::abort();
  }
  if (graph->ops.size() > kMaxPlannedOps) return 0;
  tg::GraphPlanOptions options;
  options.planner = "greedy_by_size";
  for (bool inplace : {false, true}) {
    options.inplace = inplace;
    tg::Expected<tg::GraphPlan> plan = tg::plan_graph(*graph, options);
    if (!plan.ok() && plan.status().code() == tg::StatusCode::kInternal) {
      fmt::print(stderr, "plan_graph: {}\n", plan.status().message());
      std::abort();
    }
  }
  return 0;
}
