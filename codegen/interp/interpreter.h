// The reference interpreter: runs a flattened LoopNest on host buffers, exactly and
// with every access bounds-checked. It is the ground truth the backends and the
// schedule property tests are compared against, so it favours exactness and clear
// errors, but it is compiled (not tree-walking) to stay fast on small nests.
//
// Semantics of the flattened nest:
//  - Loops of every kind run serially, in order; min and extent are evaluated once on
//    entry. LetStmt binds a name in its body, IfThenElse and Block as expected.
//  - Every Load and Store has one flat index; its name is the innermost enclosing
//    Allocate of that name, else an input or output argument. Inputs are read-only.
//  - Select evaluates only the chosen side.
//  - Integers wrap to their width (two's complement); integer `/` and `%` round toward
//    negative infinity; integer division by zero is an error. f32 arithmetic rounds
//    to float after every operation, f64 is double. Min/Max of floats propagate NaN.
//  - Casts: int -> float converts (rounding to nearest); float -> int truncates toward
//    zero, saturating at the type's limits, NaN -> 0; to bool is `!= 0`; bool is 0/1.
//  - Allocated buffers start poisoned (NaN / 0x5A bytes) on every entry.
//  - Vector expressions (lanes > 1, Ramp, Broadcast) are UNIMPLEMENTED for now.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codegen/interp/host_buffer.h"
#include "codegen/ir/expr.h"
#include "codegen/lower/loop_nest.h"
#include "support/status.h"

namespace tensorgym {

struct InterpreterOptions {
  // Cap on executed steps: loop iterations, stores, if statements, and one per
  // Allocate entry plus one per 64 elements it poisons. Past it: RESOURCE_EXHAUSTED.
  int64_t max_steps = int64_t(1) << 31;
  // Cap on the bytes of all Allocate nodes together (each gets its own storage).
  int64_t max_allocation_bytes = int64_t(1) << 30;
  // Block sampling (0: every block runs). With N > 0, each loop bound to blockIdx.*
  // of a kernel that may be sampled runs min(N, extent) of its iterations: the first,
  // the last, and random ones in between (one per equal stretch, from sample_seed and
  // the loop). Exact for the points those blocks write, since blocks of one launch do
  // not synchronize. A kernel may be sampled when every global buffer it stores to is
  // a nest output that no other statement of the nest reads or writes; other kernels
  // run whole (their writes feed later kernels). A sampled block iteration that
  // stores no output element is an error (FAILED_PRECONDITION): it would pass unseen.
  int64_t sample_blocks = 0;
  uint64_t sample_seed = 1;
};

// Runs `nest` once. `inputs` and `outputs` follow nest.inputs / nest.outputs in
// order, with exactly the declared dtypes and shapes (INVALID_ARGUMENT otherwise).
// Errors: INVALID_ARGUMENT for a malformed nest (unbound variable, unknown buffer,
// type mismatch, store to an input, index count != 1) or an out-of-bounds access
// ("out of bounds store to C: index 1024, size 1024") or integer division by zero;
// RESOURCE_EXHAUSTED past a cap; UNIMPLEMENTED for vector nodes. Outputs may be
// partly written when an error is returned.
Status interpret(const LoopNest& nest, const std::vector<const HostBuffer*>& inputs,
                 const std::vector<HostBuffer*>& outputs, const InterpreterOptions& options = {});

// A nest compiled once and run many times (interpret() is compile + run). Not
// thread-safe: one instance per thread.
class CompiledNest {
 public:
  static Expected<std::unique_ptr<CompiledNest>> compile(const LoopNest& nest,
                                                          const InterpreterOptions& options = {});
  ~CompiledNest();

  Status run(const std::vector<const HostBuffer*>& inputs, const std::vector<HostBuffer*>& outputs);
  // Steps executed by the last run.
  int64_t last_steps() const { return last_steps_; }
  // Number of instructions of the compiled form (for tests and benchmarks).
  int64_t num_instructions() const;

  struct Impl;

 private:
  explicit CompiledNest(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int64_t last_steps_ = 0;
};

// The IR's scalar semantics, shared by the interpreter and ProgramEvaluator. A value
// lives in 64 bits: integers and bools sign- or zero-extended to int64 (canonical for
// their type), f32 in `f32`, f64 in `f64`.
namespace scalar_semantics {

union Value {
  int64_t i;
  double f64;
  float f32;
};

// Wraps `v` to `bits` (two's complement when signed; zero-extended otherwise).
inline int64_t wrap_int(int64_t v, int bits, bool is_signed) {
  if (bits >= 64) return v;
  const int shift = 64 - bits;
  const uint64_t u = uint64_t(v) << shift;
  return is_signed ? int64_t(u) >> shift : int64_t(u >> shift);
}
inline int64_t wrap_int(int64_t v, DataType t) { return wrap_int(v, t.bits, t.code == TypeCode::kInt); }

// Floor division / modulo for b != 0, wrapped to the type (INT_MIN / -1 wraps).
inline int64_t int_div(int64_t a, int64_t b, int bits, bool is_signed) {
  if (b == -1) return wrap_int(int64_t(0 - uint64_t(a)), bits, is_signed);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return wrap_int(q, bits, is_signed);
}
inline int64_t int_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <class F>
inline F float_min(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  return b < a ? b : a;
}
template <class F>
inline F float_max(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  return a < b ? b : a;
}
// Floor modulo of floats: the result has the sign of b.
template <class F>
inline F float_mod(F a, F b) {
  F r = std::fmod(a, b);
  if (r != F(0) && ((r < F(0)) != (b < F(0)))) r = r + b;
  return r;
}

// float -> integer type `t`: truncation toward zero, saturating, NaN -> 0; bool: != 0.
int64_t float_to_int(double v, DataType t);
// Converts `v` of scalar type `from` to scalar type `to` (see the header comment).
Value cast(Value v, DataType from, DataType to);
// A binary node (Add .. Max, EQ .. GE, And, Or) on operands of scalar type
// `operand_type`; the result is of the node's type. Returns false for integer
// division or modulo by zero.
bool binary(NodeKind kind, DataType operand_type, Value a, Value b, Value* out);
// A math call on a float scalar of type `t` (abs also on integers).
Value call(CallOp op, DataType t, Value a);
// The value as a double (integers exactly up to 2^53).
double to_double(Value v, DataType t);

}  // namespace scalar_semantics

}  // namespace tensorgym
