#include "codegen/interp/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tensorgym {
namespace {

std::string dims_text(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return index;
}

// |a - e|, with any NaN (or inf - inf) counted as infinite.
double error_of(double e, double a) {
  if (std::isnan(e) || std::isnan(a)) return std::numeric_limits<double>::infinity();
  const double d = std::fabs(a - e);
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
}

// Folds one element into `c`. `magnitude` is Σ|term| of the element; when it is not
// known (negative), |e| stands for it first, and `more` is asked for it if the element
// is outside that bound (an error from it fails the comparison).
void accumulate(Comparison& c, int64_t flat, double e, double a, bool exact, Tolerance tol, double magnitude,
                const std::function<Expected<double>()>& more = nullptr) {
  ++c.checked;
  bool ok;
  double abs_err = 0, rel_err = 0, allowed = 0;
  const bool e_nan = std::isnan(e), a_nan = std::isnan(a);
  if (e_nan || a_nan) {
    ok = e_nan && a_nan;
    if (!ok) abs_err = rel_err = std::numeric_limits<double>::infinity();
  } else if (e == a) {  // covers equal infinities
    ok = true;
  } else if (std::isinf(e) || std::isinf(a)) {
    ok = false;
    abs_err = rel_err = std::numeric_limits<double>::infinity();
  } else {
    abs_err = std::fabs(a - e);
    rel_err = e == 0 ? std::numeric_limits<double>::infinity() : abs_err / std::fabs(e);
    auto bound = [&](double m) {
      return tol.atol + tol.rtol * std::fabs(e) + tol.sum_allowance * std::max(std::fabs(e), m);
    };
    allowed = bound(magnitude);
    ok = !exact && abs_err <= allowed;
    if (!ok && !exact && magnitude < 0 && tol.sum_allowance > 0 && more) {
      Expected<double> m = more();
      if (!m.ok()) {
        c.match = false;
        if (c.error.empty()) c.error = m.status().to_string();
        return;
      }
      allowed = bound(*m);
      ok = abs_err <= allowed;
    }
  }
  if (abs_err > c.max_abs_error) c.max_abs_error = abs_err;
  if (rel_err > c.max_rel_error) c.max_rel_error = rel_err;
  if (ok) return;
  c.match = false;
  const bool worse = c.worst_index < 0 || abs_err > error_of(c.expected_value, c.actual_value);
  ++c.mismatches;
  if (worse) {
    c.worst_index = flat;
    c.expected_value = e;
    c.actual_value = a;
    c.allowed_error = allowed;
  }
}

double element(const HostBuffer& b, int64_t i) {
  return b.dtype().is_float() ? b.get_float(i) : double(b.get_int(i));
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::string Comparison::describe() const {
  if (!error.empty()) return "mismatch: " + error;
  if (match)
    return fmt::format("match ({} elements, max abs error {:.9g}, max rel error {:.9g})", checked, max_abs_error,
                       max_rel_error);
  std::string s = fmt::format("{} of {} elements differ (max abs error {:.9g}, max rel error {:.9g}); worst at {}",
                              mismatches, checked, max_abs_error, max_rel_error, worst_index);
  if (!shape.empty()) {
    s += ' ';
    s += dims_text(unravel(worst_index, shape));
  }
  fmt::format_to(std::back_inserter(s), ": expected {:.9g}, got {:.9g}", expected_value, actual_value);
  if (allowed_error > 0) fmt::format_to(std::back_inserter(s), " (allowed error {:.9g})", allowed_error);
  return s;
}

double reordered_sum_allowance(DataType dtype, int64_t terms) {
  if (!dtype.is_float() || terms <= 1) return 0;
  const double unit_roundoff = std::ldexp(1.0, dtype.bits == 32 ? -24 : -53);
  return 16 * unit_roundoff * std::sqrt(double(terms));
}

int64_t summed_terms(const Program& program, std::string_view tensor) {
  std::map<std::string, int64_t, std::less<>> terms;  // stages so far, producers first
  for (const StageDef& s : program.stages) {
    int64_t own = 0;
    if (s.reduce == ReduceKind::kSum) {
      own = 1;
      for (const IterVar& r : s.reduce_axes) own *= std::max<int64_t>(r.extent, 0);
    }
    int64_t read = 0;
    for (const std::string& name : program.reads_of(s)) {
      auto it = terms.find(name);
      if (it != terms.end()) read = std::max(read, it->second);
    }
    terms[s.name] = own + read;
    if (s.name == tensor) return own + read;
  }
  return 0;
}

Tolerance tolerance_for(const Program& program, std::string_view output, double rtol, double atol) {
  Tolerance t{rtol, atol};
  if (program.find_stage(output))
    t.sum_allowance = reordered_sum_allowance(program.dtype_of(output), summed_terms(program, output));
  return t;
}

MagnitudeFn evaluator_magnitudes(ProgramEvaluator& evaluator, std::string_view output) {
  return [&evaluator, name = std::string(output)](const std::vector<int64_t>& index) -> Expected<double> {
    double magnitude = 0;
    TG_RETURN_IF_ERROR(evaluator.value_at(name, index, &magnitude).status());
    return magnitude;
  };
}

Comparison compare_buffers(const HostBuffer& expected, const HostBuffer& actual, Tolerance tol,
                           const MagnitudeFn& magnitude) {
  Comparison c;
  c.shape = expected.shape();
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    c.match = false;
    c.error = "expected " + expected.describe() + ", got " + actual.describe();
    return c;
  }
  const bool exact = !expected.dtype().is_float();
  const int64_t n = expected.num_elements();
  int64_t at = 0;
  const std::function<Expected<double>()> more = [&]() -> Expected<double> { return magnitude(unravel(at, c.shape)); };
  const std::function<Expected<double>()>& ask = magnitude ? more : nullptr;
  if (expected.dtype() == DataType::f32()) {
    const float* e = expected.typed<float>();
    const float* a = actual.typed<float>();
    for (at = 0; at < n; ++at) accumulate(c, at, double(e[at]), double(a[at]), false, tol, -1, ask);
  } else {
    for (at = 0; at < n; ++at) accumulate(c, at, element(expected, at), element(actual, at), exact, tol, -1, ask);
  }
  return c;
}

namespace {

// The checks both comparisons with the evaluator start with: a named tensor of the
// buffer's dtype and shape. Empty when they hold, else why not.
std::string mismatched_output(ProgramEvaluator& evaluator, std::string_view output, const HostBuffer& actual) {
  if (!evaluator.status().ok()) return "evaluator: " + evaluator.status().to_string();
  const Program& program = evaluator.program();
  if (!program.find_stage(output) && !program.find_input(output)) return "no tensor named " + std::string(output);
  const DataType dtype = program.dtype_of(output);
  const std::vector<int64_t> shape = program.shape_of(output);
  if (dtype != actual.dtype() || shape != actual.shape())
    return "expected " + dtype.str() + dims_text(shape) + ", got " + actual.describe();
  return "";
}

// `max_points` of the indices 0..n-1 (all when there are no more): the first, the last
// and random ones from `seed`.
std::vector<int64_t> pick_points(int64_t n, int64_t max_points, uint64_t seed) {
  std::vector<int64_t> points;
  if (n <= max_points) {
    points.reserve(size_t(n));
    for (int64_t i = 0; i < n; ++i) points.push_back(i);
    return points;
  }
  points.reserve(size_t(max_points) + 2);
  points.push_back(0);
  uint64_t state = seed;
  for (int64_t k = 0; k < max_points; ++k)
    points.push_back(int64_t((unsigned __int128)splitmix64(state) * uint64_t(n) >> 64));
  points.push_back(n - 1);
  return points;
}

// Each point of `actual` against the evaluator's value there, into `c`; false (with
// c.error) when the evaluator fails.
bool compare_points(ProgramEvaluator& evaluator, std::string_view output, const HostBuffer& actual,
                    const std::vector<int64_t>& points, Tolerance tol, Comparison& c) {
  const std::vector<int64_t>& shape = actual.shape();
  const bool exact = !actual.dtype().is_float();
  for (int64_t flat : points) {
    double magnitude = -1;
    Expected<double> e = evaluator.value_at(output, unravel(flat, shape), tol.sum_allowance > 0 ? &magnitude : nullptr);
    if (!e.ok()) {
      c.match = false;
      c.error = "evaluating " + std::string(output) + dims_text(unravel(flat, shape)) + ": " + e.status().to_string();
      return false;
    }
    accumulate(c, flat, *e, element(actual, flat), exact, tol, magnitude);
  }
  return true;
}

}  // namespace

Comparison compare_with_evaluator(ProgramEvaluator& evaluator, std::string_view output, const HostBuffer& actual,
                                  Tolerance tol, int64_t max_points, uint64_t seed) {
  Comparison c;
  c.shape = actual.shape();
  if (std::string why = mismatched_output(evaluator, output, actual); !why.empty()) {
    c.match = false;
    c.error = std::move(why);
    return c;
  }
  compare_points(evaluator, output, actual, pick_points(actual.num_elements(), max_points, seed), tol, c);
  return c;
}

Comparison compare_written_with_evaluator(ProgramEvaluator& evaluator, std::string_view output,
                                          const HostBuffer& actual, Tolerance tol, int64_t max_points, uint64_t seed,
                                          int64_t* written) {
  Comparison c;
  c.shape = actual.shape();
  if (written) *written = 0;
  auto fail = [&](std::string why) {
    c.match = false;
    c.error = std::move(why);
    return c;
  };
  if (std::string why = mismatched_output(evaluator, output, actual); !why.empty()) return fail(std::move(why));
  // NaN marks an element never written, so only float outputs can be told apart.
  if (!actual.dtype().is_float()) return fail("written elements of " + std::string(output) + " need a float output");
  std::vector<int64_t> done;
  for (int64_t i = 0, n = actual.num_elements(); i < n; ++i)
    if (!std::isnan(element(actual, i))) done.push_back(i);
  if (written) *written = int64_t(done.size());
  if (done.empty()) return fail("no element of " + std::string(output) + " written");
  std::vector<int64_t> points = pick_points(int64_t(done.size()), max_points, seed);
  for (int64_t& p : points) p = done[size_t(p)];
  compare_points(evaluator, output, actual, points, tol, c);
  return c;
}

}  // namespace tensorgym
