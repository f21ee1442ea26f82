#include "spaces/event.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "proto/tensorgym.pb.h"

namespace tensorgym {

double Event::to_double() const {
  if (is<bool>()) return as<bool>() ? 1.0 : 0.0;
  if (is<int64_t>()) return double(as<int64_t>());
  if (is<double>()) return as<double>();
  return std::numeric_limits<double>::quiet_NaN();
}

void event_to_proto(const Event& e, proto::Event* out) {
  out->Clear();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out->set_boolean_value(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out->set_int64_value(v);
        } else if constexpr (std::is_same_v<T, double>) {
          out->set_double_value(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out->set_string_value(v);
        } else if constexpr (std::is_same_v<T, Int64Tensor>) {
          auto* t = out->mutable_int64_tensor();
          t->mutable_shape()->Add(v.shape.begin(), v.shape.end());
          t->mutable_value()->Add(v.values.begin(), v.values.end());
        } else if constexpr (std::is_same_v<T, DoubleTensor>) {
          auto* t = out->mutable_double_tensor();
          t->mutable_shape()->Add(v.shape.begin(), v.shape.end());
          t->mutable_value()->Add(v.values.begin(), v.values.end());
        } else if constexpr (std::is_same_v<T, EventDict>) {
          auto* d = out->mutable_event_dict();
          for (const auto& [k, x] : v) {
            d->add_key(k);
            event_to_proto(x, d->add_value());
          }
        } else if constexpr (std::is_same_v<T, EventList>) {
          auto* l = out->mutable_event_list();
          for (const Event& x : v) event_to_proto(x, l->add_event());
        }
      },
      e.value);
}

void event_to_proto(Event&& e, proto::Event* out) {
  if (auto* s = std::get_if<std::string>(&e.value)) {
    out->Clear();
    out->set_string_value(std::move(*s));
    return;
  }
  event_to_proto(std::as_const(e), out);
}

Expected<Event> event_from_proto(const proto::Event& p) {
  switch (p.value_case()) {
    case proto::Event::kBooleanValue: return Event(p.boolean_value());
    case proto::Event::kInt64Value: return Event(int64_t(p.int64_value()));
    case proto::Event::kDoubleValue: return Event(p.double_value());
    case proto::Event::kStringValue: return Event(p.string_value());
    case proto::Event::kInt64Tensor: {
      Int64Tensor t{{p.int64_tensor().shape().begin(), p.int64_tensor().shape().end()},
                    {p.int64_tensor().value().begin(), p.int64_tensor().value().end()}};
      return Event(std::move(t));
    }
    case proto::Event::kDoubleTensor: {
      DoubleTensor t{{p.double_tensor().shape().begin(), p.double_tensor().shape().end()},
                     {p.double_tensor().value().begin(), p.double_tensor().value().end()}};
      return Event(std::move(t));
    }
    case proto::Event::kEventDict: {
      const auto& d = p.event_dict();
      if (d.key_size() != d.value_size()) return invalid_argument("event dict has mismatched keys and values");
      EventDict out;
      for (int i = 0; i < d.key_size(); ++i) {
        TG_ASSIGN_OR_RETURN(Event v, event_from_proto(d.value(i)));
        out.emplace_back(d.key(i), std::move(v));
      }
      return Event(std::move(out));
    }
    case proto::Event::kEventList: {
      EventList out;
      for (const auto& x : p.event_list().event()) {
        TG_ASSIGN_OR_RETURN(Event v, event_from_proto(x));
        out.push_back(std::move(v));
      }
      return Event(std::move(out));
    }
    case proto::Event::VALUE_NOT_SET: return Event();
  }
  return Event();
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

namespace {

std::string json_number(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";  // JSON has no NaN or infinity
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Shortest text that reads back exactly.
  for (int p = 6; p < 17; ++p) {
    char s[32];
    std::snprintf(s, sizeof s, "%.*g", p, v);
    if (std::strtod(s, nullptr) == v) return s;
  }
  return buf;
}

// Nested arrays following the shape, row-major.
template <class T, class F>
void tensor_json(const std::vector<int64_t>& shape, const std::vector<T>& values, size_t dim, size_t* pos,
                 std::string* out, F&& format) {
  if (shape.empty()) {
    if (*pos < values.size()) *out += format(values[(*pos)++]);
    return;
  }
  *out += "[";
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i) *out += ", ";
    if (dim + 1 == shape.size()) {
      *out += *pos < values.size() ? format(values[(*pos)++]) : "null";
    } else {
      tensor_json(shape, values, dim + 1, pos, out, format);
    }
  }
  *out += "]";
}

}  // namespace

std::string event_to_json(const Event& e) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return json_number(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return json_quote(v);
        } else if constexpr (std::is_same_v<T, Int64Tensor>) {
          std::string out;
          size_t pos = 0;
          tensor_json(v.shape, v.values, 0, &pos, &out, [](int64_t x) { return std::to_string(x); });
          return out;
        } else if constexpr (std::is_same_v<T, DoubleTensor>) {
          std::string out;
          size_t pos = 0;
          tensor_json(v.shape, v.values, 0, &pos, &out, [](double x) { return json_number(x); });
          return out;
        } else if constexpr (std::is_same_v<T, EventDict>) {
          std::string out = "{";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            out += json_quote(v[i].first) + ": " + event_to_json(v[i].second);
          }
          return out + "}";
        } else {
          std::string out = "[";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            out += event_to_json(v[i]);
          }
          return out + "]";
        }
      },
      e.value);
}

std::string event_to_string(const Event& e) {
  if (e.is<std::string>()) return e.as<std::string>();
  if (e.is<Int64Tensor>() || e.is<DoubleTensor>()) {
    const std::vector<int64_t>& shape = e.is<Int64Tensor>() ? e.as<Int64Tensor>().shape : e.as<DoubleTensor>().shape;
    std::string s = e.is<Int64Tensor>() ? "int64[" : "float64[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]: " + event_to_json(e);
  }
  return event_to_json(e);
}

}  // namespace tensorgym
