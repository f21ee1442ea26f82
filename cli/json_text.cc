#include "cli/json_text.h"

#include <cmath>

namespace tensorgym::cli {
namespace {

void write(const Json& v, std::string* out) {
  if (v.is_object()) {
    *out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) *out += ", ";
      first = false;
      *out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
      *out += ": ";
      write(it.value(), out);
    }
    *out += '}';
  } else if (v.is_array()) {
    *out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) *out += ", ";
      write(v[i], out);
    }
    *out += ']';
  } else {
    // Invalid UTF-8 in a message (a worker's stderr) is replaced, not fatal.
    *out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

template <class T, class F>
Json tensor(const std::vector<int64_t>& shape, const std::vector<T>& values, size_t dim, size_t* pos, F element) {
  Json a = Json::array();
  if (dim == shape.size()) return *pos < values.size() ? element(values[(*pos)++]) : Json(nullptr);
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (dim + 1 == shape.size()) {
      a.push_back(*pos < values.size() ? element(values[(*pos)++]) : Json(nullptr));
    } else {
      a.push_back(tensor(shape, values, dim + 1, pos, element));
    }
  }
  return a;
}

}  // namespace

std::string json_text(const Json& value) {
  std::string out;
  write(value, &out);
  return out;
}

Json event_json(const Event& e) {
  return std::visit(
      [](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, double>) {
          return number(v);
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, Int64Tensor>) {
          size_t pos = 0;
          return tensor(v.shape, v.values, 0, &pos, [](int64_t x) { return Json(x); });
        } else if constexpr (std::is_same_v<T, DoubleTensor>) {
          size_t pos = 0;
          return tensor(v.shape, v.values, 0, &pos, number);
        } else if constexpr (std::is_same_v<T, EventDict>) {
          Json o = Json::object();
          for (const auto& [key, value] : v) o[key] = event_json(value);
          return o;
        } else {
          Json a = Json::array();
          for (const Event& item : v) a.push_back(event_json(item));
          return a;
        }
      },
      e.value);
}

Json parsed_json(const std::string& text) {
  if (text.empty()) return nullptr;
  Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() ? Json(nullptr) : v;
}

}  // namespace tensorgym::cli
