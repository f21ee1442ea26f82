// A tensor program: what is computed (never how). Parsed from the program language,
// immutable afterwards, and shared between episodes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/ir/expr.h"
#include "support/status.h"

namespace tensorgym {

struct SourceLoc {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

// `input NAME: DTYPE[dims]`, or `input NAME: DTYPE[dims] const`
struct TensorInput {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  // `const`: its values are the same on every run of a compiled program (a layer's
  // weights), so work that reads only constant inputs may be done once, ahead of the runs
  // that are timed (LoopNest::prepared; TVM's layout-free placeholders).
  bool constant = false;
  SourceLoc loc;
};

// How a stage combines values: `=`, `+=`, `max=`, `min=`.
enum class ReduceKind : uint8_t { kNone, kSum, kMax, kMin };
const char* reduce_kind_op(ReduceKind kind);  // "=", "+=", "max=", "min="

// An iteration variable over the half-open range [min, min + extent).
struct IterVar {
  std::string name;
  int64_t min = 0;
  int64_t extent = 0;
  bool declared = false;  // the range came from a `where` clause (kept for printing)
};

// `NAME[axes] OP body [where ...]`. Spatial axes index the output (min 0, extent =
// that dimension); reduction axes are the body's other variables.
struct StageDef {
  std::string name;
  DataType dtype;
  std::vector<IterVar> axes;
  std::vector<IterVar> reduce_axes;
  ReduceKind reduce = ReduceKind::kNone;
  // The value at one point (for reductions, the operand combined into the output).
  // Variables are named as the axes; tensors are read by Load with one index per dim.
  Expr body;
  SourceLoc loc;

  std::vector<int64_t> shape() const;
  bool is_reduction() const { return reduce != ReduceKind::kNone; }
};

// Longest name (of a tensor, a stage, a variable, a loop) a program or a schedule
// may use: names travel in messages and observations.
inline constexpr size_t kMaxNameBytes = 256;

// Caps on what a program may ask for; past them it is rejected before anything runs.
struct ProgramLimits {
  int64_t max_text_bytes = int64_t(1) << 20;
  int64_t max_tensor_bytes = int64_t(1) << 30;  // any single tensor
  int64_t max_total_bytes = int64_t(4) << 30;   // all tensors together
  int64_t max_stage_iterations = int64_t(1) << 37;  // product of a stage's ranges (batch-16 3-D convs need 2^37)
  int max_rank = 8;
  int max_stages = 256;
};

struct Program {
  std::vector<TensorInput> inputs;
  std::vector<StageDef> stages;      // in definition order (producers before consumers)
  std::vector<std::string> outputs;  // stages nobody reads, in definition order

  const TensorInput* find_input(std::string_view name) const;
  const StageDef* find_stage(std::string_view name) const;
  bool is_output(std::string_view name) const;
  // Shape and type of an input or a stage; the tensor must exist.
  std::vector<int64_t> shape_of(std::string_view name) const;
  DataType dtype_of(std::string_view name) const;
  // Names of the tensors a stage reads, in first-read order.
  std::vector<std::string> reads_of(const StageDef& stage) const;

  // The program in the program language; parses back to an equal program.
  std::string to_text() const;
};

using ProgramPtr = std::shared_ptr<const Program>;

// Parses program text. Errors are INVALID_ARGUMENT "line:column: message" (or
// RESOURCE_EXHAUSTED past a limit) and name what was wrong.
Expected<Program> parse_program(std::string_view text, const ProgramLimits& limits = {});

// Same inputs and stages (names, types, shapes, ranges, bodies compared structurally).
bool structural_equal(const Program& a, const Program& b);

// Whether `e` reads tensor `name`.
bool expr_reads(const Expr& e, std::string_view name);

// Number of elements of a shape.
int64_t num_elements(const std::vector<int64_t>& shape);

}  // namespace tensorgym
