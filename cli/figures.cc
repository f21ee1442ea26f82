#include "cli/figures.h"

#include <fmt/format.h>

#include <cmath>

namespace tensorgym::cli {
namespace {

constexpr int kDigits = 4;

template <class T, class F>
std::string tensor_text(const std::vector<int64_t>& shape, const std::vector<T>& values, size_t dim, size_t* pos,
                        F element) {
  if (dim == shape.size()) return *pos < values.size() ? element(values[(*pos)++]) : "null";
  std::string out = "[";
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i) out += ", ";
    out += tensor_text(shape, values, dim + 1, pos, element);
  }
  return out + "]";
}

std::string shape_text(const char* type, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", type, fmt::join(shape, ", "));
}

}  // namespace

std::string figure(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 1e-3 || a >= 1e15) return fmt::format("{:.{}g}", v, kDigits);
  const int integer_digits = int(std::floor(std::log10(a))) + 1;
  const int decimals = std::max(0, kDigits - integer_digits);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  // "13.80" -> "13.8", "2.000" -> "2": trailing zeros say nothing.
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string seconds_text(double s) {
  if (!std::isfinite(s) || s < 0) return figure(s) + " s";
  if (s >= 120) {
    const int64_t whole = int64_t(std::llround(s));
    if (whole >= 3600) return fmt::format("{}h{:02}m", whole / 3600, whole / 60 % 60);
    return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  }
  if (s >= 1 || s == 0) return figure(s) + " s";
  if (s >= 1e-3) return figure(s * 1e3) + " ms";
  if (s >= 1e-6) return figure(s * 1e6) + " us";
  return figure(s * 1e9) + " ns";
}

std::string event_text(const Event& e) {
  if (e.is<std::string>()) return e.as<std::string>();
  if (e.is<double>()) return figure(e.as<double>());
  if (e.is<bool>()) return e.as<bool>() ? "true" : "false";
  if (e.is<int64_t>()) return std::to_string(e.as<int64_t>());
  if (e.empty()) return "null";
  if (e.is<Int64Tensor>()) {
    const Int64Tensor& t = e.as<Int64Tensor>();
    size_t pos = 0;
    return shape_text("int64", t.shape) + ": " +
           tensor_text(t.shape, t.values, 0, &pos, [](int64_t x) { return std::to_string(x); });
  }
  if (e.is<DoubleTensor>()) {
    const DoubleTensor& t = e.as<DoubleTensor>();
    size_t pos = 0;
    return shape_text("float64", t.shape) + ": " + tensor_text(t.shape, t.values, 0, &pos, figure);
  }
  std::string out;
  if (e.is<EventDict>()) {
    for (const auto& [key, value] : e.as<EventDict>()) out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", key, event_text(value));
    return "{" + out + "}";
  }
  for (const Event& item : e.as<EventList>()) out += (out.empty() ? "" : ", ") + event_text(item);
  return "[" + out + "]";
}

}  // namespace tensorgym::cli
