// The schedule trace text (codegen/schedule/trace.h parse_trace), then the primitives
// it names applied to two programs of datasets/ops/ and the result lowered. A trace
// that parses must print to text that parses back to the same trace; a primitive
// either applies or leaves the schedule unchanged with an error (DESIGN.md, rule 2),
// and whatever applied must lower or fail with an error, never crash.
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "codegen/schedule/trace.h"

namespace tg = tensorgym;

namespace {

// datasets/ops/gemm_128.tg and datasets/ops/conv2d_resnet_3x3.tg.
constexpr std::string_view kGemm = R"(input A: f32[128, 128]
input B: f32[128, 128]
C[i, j] += A[i, k] * B[k, j]
)";
constexpr std::string_view kConv = R"(input X: f32[1, 64, 56, 56]
input W: f32[64, 64, 3, 3]
P[n, c, h, w] = select(h >= 1 && h <= 56 && w >= 1 && w <= 56, X[n, c, h - 1, w - 1], 0.0) where h in 0..58, w in 0..58
Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..56, x in 0..56
R[n, f, y, x] = max(Y[n, f, y, x], 0.0)
)";
// Primitives applied per program and input: enough for every seed, few enough that
// an input stays fast.
constexpr size_t kMaxSteps = 64;

tg::ProgramPtr parse_or_die(std::string_view text) {
  tg::Expected<tg::Program> p = tg::parse_program(text);
  if (!p.ok()) std::abort();
  return std::make_shared<const tg::Program>(std::move(p).value());
}

void apply_and_lower(const tg::ProgramPtr& program, const tg::Trace& trace) {
  tg::Schedule schedule(program);
  for (size_t i = 0; i < trace.steps.size() && i < kMaxSteps; ++i) {
    const size_t before = schedule.trace_length();
    tg::PrimitiveResult r = schedule.apply(trace.steps[i]);
    if (!r.ok() && schedule.trace_length() != before) std::abort();  // a failed primitive changed the trace
  }
  (void)tg::lower(schedule);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tg::ProgramPtr gemm = parse_or_die(kGemm);
  static const tg::ProgramPtr conv = parse_or_die(kConv);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tg::Expected<tg::Trace> trace = tg::parse_trace(text);
  if (!trace.ok()) return 0;
  const std::string printed = trace->to_string();
  tg::Expected<tg::Trace> again = tg::parse_trace(printed);
  if (!again.ok() || !(*again == *trace)) {
    fmt::print(stderr, "printed trace does not parse back to the same trace:\n{}\n", printed);
    std::abort();
  }
  apply_and_lower(gemm, *trace);
  apply_and_lower(conv, *trace);
  return 0;
}
