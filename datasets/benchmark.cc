#include "datasets/benchmark.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>

namespace tensorgym {

Dataset::~Dataset() = default;

ProgramLimits builtin_program_limits() {
  ProgramLimits limits;
  limits.max_stage_iterations = int64_t(1) << 37;
  return limits;
}

namespace {

std::string tensor_text(const std::string& name, DataType dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}: {}[{}]", name, dtype.str(), fmt::join(shape, ", "));
}

}  // namespace

std::string describe_program_shapes(const Program& program) {
  std::string s;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const TensorInput& in = program.inputs[i];
    s += (i ? ", " : "") + tensor_text(in.name, in.dtype, in.shape);
  }
  s += " -> ";
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const std::string& out = program.outputs[i];
    s += (i ? ", " : "") + tensor_text(out, program.dtype_of(out), program.shape_of(out));
  }
  return s;
}

void list_range(int64_t size, int64_t offset, int64_t limit, int64_t* begin, int64_t* end) {
  offset = std::max<int64_t>(offset, 0);
  if (limit < 0 || limit > kMaxListLimit) limit = kMaxListLimit;
  *begin = offset;
  *end = offset > INT64_MAX - limit ? INT64_MAX : offset + limit;
  if (size >= 0) {
    *begin = std::min(*begin, size);
    *end = std::min(*end, size);
  }
}

}  // namespace tensorgym
