// Spaces: what actions, observations and rewards may be (Gymnasium's Discrete,
// NamedDiscrete, Box, Dict, Sequence, scalar ranges, strings and booleans). Each space
// has a name; observation spaces say whether they are deterministic and
// platform-dependent and carry the value reported when they cannot be computed.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "spaces/event.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

namespace proto {
class Space;
}

enum class SpaceType : uint8_t {
  kDiscrete,       // int64 in [0, n)
  kNamedDiscrete,  // int64 index into names
  kInt64Range,     // int64 in [min, max]
  kDoubleRange,    // double in [min, max]
  kInt64Box,       // Int64Tensor, elements in [low, high]
  kDoubleBox,      // DoubleTensor
  kDict,           // EventDict with the fields' names, in order
  kSequence,       // EventList of elements
  kString,         // string, length in range
  kBoolean,
};

class Space {
 public:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  static Space discrete(std::string name, int64_t n);
  static Space named_discrete(std::string name, std::vector<std::string> names);
  static Space int64_range(std::string name, int64_t min = std::numeric_limits<int64_t>::min(),
                           int64_t max = std::numeric_limits<int64_t>::max());
  static Space double_range(std::string name, double min = -kInf, double max = kInf);
  // A shape entry of -1 is a dimension whose size varies between values.
  static Space int64_box(std::string name, std::vector<int64_t> shape, double low, double high);
  static Space double_box(std::string name, std::vector<int64_t> shape, double low = -kInf, double high = kInf);
  static Space dict(std::string name, std::vector<Space> fields);
  static Space sequence(std::string name, Space element, int64_t min_length = 0,
                        int64_t max_length = std::numeric_limits<int64_t>::max());
  static Space string(std::string name, int64_t max_length = std::numeric_limits<int64_t>::max());
  static Space boolean(std::string name);

  // Builder-style metadata for observation and reward spaces.
  Space& set_deterministic(bool d) {
    deterministic_ = d;
    return *this;
  }
  Space& set_platform_dependent(bool p) {
    platform_dependent_ = p;
    return *this;
  }
  Space& set_default(Event v) {
    default_ = std::move(v);
    return *this;
  }
  Space& set_description(std::string d) {
    description_ = std::move(d);
    return *this;
  }
  Space& set_labels(std::vector<std::string> labels) {  // names of a box's last dimension
    labels_ = std::move(labels);
    return *this;
  }

  const std::string& name() const { return name_; }
  SpaceType type() const { return type_; }
  bool deterministic() const { return deterministic_; }
  bool platform_dependent() const { return platform_dependent_; }
  const Event& default_value() const { return default_; }
  const std::string& description() const { return description_; }
  int64_t n() const { return n_; }  // discrete size; names.size() for named discrete
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::string>& labels() const { return labels_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  double low() const { return low_; }
  double high() const { return high_; }
  const std::vector<Space>& fields() const { return fields_; }  // dict fields; [0] is a sequence's element

  bool contains(const Event& value) const;
  // A uniformly drawn value (unbounded ranges draw from a bounded window; variable
  // dimensions and lengths from 0..8).
  Event sample(Rng& rng) const;
  // Gymnasium-like text: "Discrete(1200)", "Box(float64, [-1, 164], -inf..inf)".
  std::string to_string() const;

  void to_proto(proto::Space* out) const;
  static Expected<Space> from_proto(const proto::Space& p);

 private:
  std::string name_;
  SpaceType type_ = SpaceType::kDiscrete;
  bool deterministic_ = true;
  bool platform_dependent_ = false;
  Event default_;
  std::string description_;
  int64_t n_ = 0;
  std::vector<std::string> names_;
  std::vector<std::string> labels_;
  std::vector<int64_t> shape_;
  double low_ = 0, high_ = 0;
  std::vector<Space> fields_;
};

}  // namespace tensorgym
