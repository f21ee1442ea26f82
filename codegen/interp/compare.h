// Comparing a computed output with a reference: element-wise with a tolerance, or
// at sampled points against a ProgramEvaluator.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"

namespace tensorgym {

// Floats match when
//
//   |actual - expected| <= atol + rtol * |expected| + sum_allowance * magnitude
//
// where magnitude is the sum of the magnitudes of the terms the element sums, Σ|term|
// (|expected| where the element sums nothing, or where it is not known). Integers
// and bools must be equal. docs/measurement.md, "The correctness check".
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
  // How far two legal orders of the element's sums may drift apart, per unit of
  // magnitude: reordered_sum_allowance(); 0 for outputs that sum nothing.
  double sum_allowance = 0;
};

// 16 u sqrt(n): u the unit roundoff of `dtype` (2^-24 for f32, 2^-53 for f64), n the
// terms summed into one element. Each order of a sum of n terms is within about
// lambda sqrt(n) u Σ|term| of the exact sum, with probability at least
// 1 - 2n exp(-lambda^2 / 2) (Higham and Mary, 2019): lambda = 8 for each of the two
// orders compared. (The worst case, n u Σ|term|, would pass a dropped term of a sum of
// a few thousand.) 0 for integers and for n <= 1.
double reordered_sum_allowance(DataType dtype, int64_t terms);

// The terms summed into one element of `tensor`: the product of its reduce extents
// when it is a sum (+=), 0 for max= and min= (exact in any order) and for plain
// stages, plus the largest such count of the stages it reads (their rounding reaches
// it). 0 for inputs and unknown names.
int64_t summed_terms(const Program& program, std::string_view tensor);

// rtol and atol, with the sum allowance of `output` in `program`.
Tolerance tolerance_for(const Program& program, std::string_view output, double rtol, double atol);

// Σ|term| of the element at a multi-index, for compare_buffers: asked only for the
// elements outside the bound taken with |expected| for magnitude.
using MagnitudeFn = std::function<Expected<double>(const std::vector<int64_t>& index)>;

// Σ|term| of `output`'s elements, from the evaluator (which must outlive the function).
MagnitudeFn evaluator_magnitudes(ProgramEvaluator& evaluator, std::string_view output);

struct Comparison {
  bool match = true;
  int64_t checked = 0;     // elements compared
  int64_t mismatches = 0;  // elements out of tolerance
  double max_abs_error = 0;
  double max_rel_error = 0;  // |a - e| / |e| (infinite when e == 0 and a != e)
  // The mismatching element with the largest |actual - expected| (a NaN mismatch
  // counts as infinite), or -1 when all match.
  int64_t worst_index = -1;
  double expected_value = 0, actual_value = 0;
  double allowed_error = 0;  // the bound at the worst element
  // Set when the buffers could not be compared at all (shape or dtype mismatch, an
  // evaluator error); match is then false.
  std::string error;

  // Shape of the compared tensor (for describe()'s multi-index).
  std::vector<int64_t> shape;

  // "match (4096 elements, max abs error 1.2e-06, max rel error 3e-07)", or
  // "3 of 4096 elements differ (max abs error ...); worst at 17 [0, 17]: expected
  // 1.5, got 1.7 (allowed error 0.00015)", or "mismatch: <error>".
  std::string describe() const;
};

// Element-wise over every element. NaN matches NaN (and only NaN); infinities match
// when equal. Without `magnitude`, |expected| stands for Σ|term|.
Comparison compare_buffers(const HostBuffer& expected, const HostBuffer& actual, Tolerance tolerance = {},
                           const MagnitudeFn& magnitude = nullptr);

// Compares `actual` (the whole tensor `output`) with the evaluator at every element
// when it has at most `max_points` elements, else at `max_points` points drawn with
// `seed` plus the first and the last element. Σ|term| comes from the evaluator.
Comparison compare_with_evaluator(ProgramEvaluator& evaluator, std::string_view output, const HostBuffer& actual,
                                  Tolerance tolerance, int64_t max_points, uint64_t seed);

// For a run with sampled blocks (InterpreterOptions::sample_blocks) into a NaN-filled
// float output: compares with the evaluator only the elements that are not NaN (those
// the run wrote), all of them when at most `max_points`, else the first and the last
// written plus `max_points` drawn with `seed`. `written`, when given, gets their
// count. A non-float output, or one with no element written, is a mismatch.
Comparison compare_written_with_evaluator(ProgramEvaluator& evaluator, std::string_view output,
                                          const HostBuffer& actual, Tolerance tolerance, int64_t max_points,
                                          uint64_t seed, int64_t* written = nullptr);

}  // namespace tensorgym
