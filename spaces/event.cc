#include "spaces/event.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <utility>

#include "proto/tensorgym.pb.h"
#include "spaces/event_json.h"

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

namespace {

// Invalid UTF-8 in a string becomes U+FFFD rather than an exception or invalid JSON.
std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// Nested arrays following the shape, row-major; missing values are null.
template <class T>
nlohmann::ordered_json tensor_json(const std::vector<int64_t>& shape, const std::vector<T>& values, size_t dim,
                                   size_t* pos) {
  if (shape.empty()) return *pos < values.size() ? nlohmann::ordered_json(values[(*pos)++]) : nlohmann::ordered_json();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (dim + 1 == shape.size()) {
      out.push_back(*pos < values.size() ? nlohmann::ordered_json(values[(*pos)++]) : nlohmann::ordered_json());
    } else {
      out.push_back(tensor_json(shape, values, dim + 1, pos));
    }
  }
  return out;
}

}  // namespace

std::string json_quote(const std::string& s) { return dump(nlohmann::ordered_json(s)); }

nlohmann::ordered_json event_json(const Event& e) {
  return std::visit(
      [&](const auto& v) -> nlohmann::ordered_json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          // JSON has no NaN or infinity.
          return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
        } else if constexpr (std::is_same_v<T, Int64Tensor> || std::is_same_v<T, DoubleTensor>) {
          size_t pos = 0;
          return tensor_json(v.shape, v.values, 0, &pos);
        } else if constexpr (std::is_same_v<T, EventDict>) {
          nlohmann::ordered_json out = nlohmann::ordered_json::object();
          for (const auto& [name, value] : v) out[name] = event_json(value);
          return out;
        } else {
          nlohmann::ordered_json out = nlohmann::ordered_json::array();
          for (const Event& x : v) out.push_back(event_json(x));
          return out;
        }
      },
      e.value);
}

std::string event_to_json(const Event& e) { return dump(event_json(e)); }

std::string event_to_string(const Event& e) {
  if (e.is<std::string>()) return e.as<std::string>();
  if (e.is<Int64Tensor>() || e.is<DoubleTensor>()) {
    const std::vector<int64_t>& shape = e.is<Int64Tensor>() ? e.as<Int64Tensor>().shape : e.as<DoubleTensor>().shape;
    return fmt::format("{}[{}]: {}", e.is<Int64Tensor>() ? "int64" : "float64", fmt::join(shape, ", "),
                       event_to_json(e));
  }
  return event_to_json(e);
}

}  // namespace tensorgym
