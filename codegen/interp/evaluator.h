// Evaluates a Program straight from its definition, one element at a time, with no
// loop nest, no schedule and no lowering involved: the independent reference that
// lowered code is checked against.
//
// value_at() computes one element: the stage body with the axes bound to the index;
// for reductions the reduce axes run nested in declaration order (first outermost)
// over [min, min + extent) and the body is combined into the identity (0 for +=,
// lowest / -inf for max=, highest / +inf for min=). Reads of other stages recurse,
// memoized per element, so a sample of a large program costs only what it reads (one
// element of a 1024^3 GEMM is 1024 body evaluations). The numeric semantics are the
// interpreter's (scalar_semantics in interpreter.h): f32 rounds after every op,
// integers wrap, integer / and % floor, only the chosen side of a select is evaluated.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "codegen/interp/host_buffer.h"
#include "codegen/ir/program.h"
#include "support/status.h"

namespace tensorgym {

struct EvaluatorOptions {
  // Cap on body evaluations over the evaluator's lifetime (RESOURCE_EXHAUSTED past it).
  int64_t max_steps = int64_t(1) << 33;
  // Stages with at most this many elements memoize in a dense array; larger ones in a
  // hash map of the elements actually computed.
  int64_t dense_memo_max_elements = int64_t(1) << 22;
};

class ProgramEvaluator {
 public:
  // `inputs` follow program.inputs in order, with the declared dtypes and shapes; the
  // buffers must outlive the evaluator (the program is copied). A mismatch, or a
  // program the evaluator cannot run, is reported by status() and by every call.
  ProgramEvaluator(const Program& program, std::vector<const HostBuffer*> inputs,
                   const EvaluatorOptions& options = {});
  ~ProgramEvaluator();
  ProgramEvaluator(const ProgramEvaluator&) = delete;
  ProgramEvaluator& operator=(const ProgramEvaluator&) = delete;

  // OK when the program and inputs were accepted.
  const Status& status() const;
  const Program& program() const;

  // One element of an input or stage (one index per dimension, in range). Integer
  // results are exact up to 2^53 (all of i32). With `magnitude`, also the sum of the
  // magnitudes of the terms the element sums, Σ|term| in double (|value| for an
  // element that sums nothing): the element is then computed afresh, not recalled.
  Expected<double> value_at(std::string_view tensor, const std::vector<int64_t>& index, double* magnitude = nullptr);
  // The whole tensor (inputs are copied), e.g. as the reference output in tests.
  Expected<HostBuffer> evaluate(std::string_view tensor);

  // Body evaluations so far.
  int64_t steps() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorgym
