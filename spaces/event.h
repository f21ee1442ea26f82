// Values of spaces: observations, actions and rewards. A small tagged value that maps
// one to one onto proto::Event.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "support/status.h"

namespace tensorgym {

namespace proto {
class Event;
}

struct Int64Tensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
  bool operator==(const Int64Tensor&) const = default;
};

struct DoubleTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool operator==(const DoubleTensor&) const = default;
};

struct Event;
using EventList = std::vector<Event>;
using EventDict = std::vector<std::pair<std::string, Event>>;  // ordered

struct Event {
  std::variant<std::monostate, bool, int64_t, double, std::string, Int64Tensor, DoubleTensor, EventDict, EventList>
      value;

  Event() = default;
  Event(bool v) : value(v) {}                     // NOLINT(google-explicit-constructor)
  Event(int64_t v) : value(v) {}                  // NOLINT(google-explicit-constructor)
  Event(int v) : value(int64_t(v)) {}             // NOLINT(google-explicit-constructor)
  Event(double v) : value(v) {}                   // NOLINT(google-explicit-constructor)
  Event(std::string v) : value(std::move(v)) {}   // NOLINT(google-explicit-constructor)
  Event(const char* v) : value(std::string(v)) {} // NOLINT(google-explicit-constructor)
  Event(Int64Tensor v) : value(std::move(v)) {}   // NOLINT(google-explicit-constructor)
  Event(DoubleTensor v) : value(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  Event(EventDict v) : value(std::move(v)) {}     // NOLINT(google-explicit-constructor)
  Event(EventList v) : value(std::move(v)) {}     // NOLINT(google-explicit-constructor)

  bool empty() const { return value.index() == 0; }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(value);
  }
  template <class T>
  const T& as() const {
    return std::get<T>(value);
  }
  // The value as a number when it is one (bool, int64, double), else nullopt-like NaN.
  double to_double() const;
  bool operator==(const Event& o) const { return value == o.value; }
};

void event_to_proto(const Event& e, proto::Event* out);
// The same, moving a string value into the message instead of copying it.
void event_to_proto(Event&& e, proto::Event* out);
Expected<Event> event_from_proto(const proto::Event& p);

// JSON text: numbers, strings, booleans, arrays (tensors nest by shape), objects.
std::string event_to_json(const Event& e);
// Short human text: "3", "0.25", "true", the string itself, "int64[2, 3]: [...]".
std::string event_to_string(const Event& e);

// A JSON string literal with escapes.
std::string json_quote(const std::string& s);

}  // namespace tensorgym
