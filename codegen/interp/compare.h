// Comparing a computed output with a reference: element-wise with a tolerance, or
// at sampled points against a ProgramEvaluator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"

namespace tensorgym {

// Floats match when |actual - expected| <= atol + rtol * |expected|; integers and
// bools must be equal.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

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
  // Set when the buffers could not be compared at all (shape or dtype mismatch, an
  // evaluator error); match is then false.
  std::string error;

  // Shape of the compared tensor (for describe()'s multi-index).
  std::vector<int64_t> shape;

  // "match (4096 elements, max abs error 1.2e-06, max rel error 3e-07)", or
  // "3 of 4096 elements differ (max abs error ...); worst at 17 [0, 17]: expected
  // 1.5, got nan", or "mismatch: <error>".
  std::string describe() const;
};

// Element-wise over every element. NaN matches NaN (and only NaN); infinities match
// when equal.
Comparison compare_buffers(const HostBuffer& expected, const HostBuffer& actual, Tolerance tolerance = {});

// Compares `actual` (the whole tensor `output`) with the evaluator at every element
// when it has at most `max_points` elements, else at `max_points` points drawn with
// `seed` plus the first and the last element.
Comparison compare_with_evaluator(ProgramEvaluator& evaluator, std::string_view output, const HostBuffer& actual,
                                  Tolerance tolerance, int64_t max_points, uint64_t seed);

}  // namespace tensorgym
