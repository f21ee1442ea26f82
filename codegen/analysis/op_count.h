// Operation and byte counts of a Program, from its definition (independent of any
// schedule): the numerators of arithmetic intensity and of achieved GFLOP/s.
#pragma once

#include <cstdint>
#include <string_view>

#include "codegen/ir/program.h"

namespace tensorgym {

struct OpCounts {
  double flops = 0;       // float arithmetic, min/max, comparisons, and one per math call
  double int_ops = 0;     // the same on integers and bools, plus && || !
  double math_calls = 0;  // exp, log, sqrt, tanh

  OpCounts& operator+=(const OpCounts& o) {
    flops += o.flops;
    int_ops += o.int_ops;
    math_calls += o.math_calls;
    return *this;
  }
  OpCounts scaled(double k) const { return {flops * k, int_ops * k, math_calls * k}; }
};

// Operations of one evaluation of `e`. Index expressions inside Load indices are not
// counted (they are addressing, not computation); casts, selects and loads are free;
// abs counts as one arithmetic op; an op on a vector counts once per lane.
OpCounts count_expr_ops(const Expr& e);

// Iterations of a stage: the product of the extents of its axes and reduce axes.
double stage_iterations(const StageDef& stage);

// Operations of one stage: the body's ops times its iterations, plus, for a
// reduction, one combine op (+, max or min) per iteration.
OpCounts count_stage_ops(const StageDef& stage);

// All stages together. A GEMM M x N x K (C[i, j] += A[i, k] * B[k, j]) gives exactly
// 2 * M * N * K flops.
OpCounts count_ops(const Program& program);

// Bytes of an input or stage tensor (elements * element size); 0 for an unknown name.
int64_t tensor_bytes(const Program& program, std::string_view name);

}  // namespace tensorgym
