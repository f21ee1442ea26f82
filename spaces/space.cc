#include "spaces/space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iterator>

#include "proto/tensorgym.pb.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

// printf's %g: "-1", "164", "inf", "-inf".
std::string number(double v) { return fmt::format("{:g}", v); }

bool shape_matches(const std::vector<int64_t>& space, const std::vector<int64_t>& value, size_t count) {
  if (space.size() != value.size()) return false;
  int64_t n = 1;
  for (size_t i = 0; i < space.size(); ++i) {
    if (value[i] < 0 || (space[i] >= 0 && space[i] != value[i])) return false;
    n *= value[i];
  }
  return size_t(n) == count;
}

// Draws in [lo, hi], with unbounded ends replaced by a window around the other end.
double draw(Rng& rng, double lo, double hi) {
  if (std::isinf(lo) && std::isinf(hi)) lo = -1e3, hi = 1e3;
  else if (std::isinf(lo)) lo = hi - 1e3;
  else if (std::isinf(hi)) hi = lo + 1e3;
  return lo + (hi - lo) * rng.uniform();
}

int64_t draw_int(Rng& rng, int64_t lo, int64_t hi) {
  if (lo == std::numeric_limits<int64_t>::min() && hi == std::numeric_limits<int64_t>::max()) lo = -1000, hi = 1000;
  else if (lo == std::numeric_limits<int64_t>::min()) lo = hi - 1000;
  else if (hi == std::numeric_limits<int64_t>::max()) hi = lo + 1000;
  return rng.range(lo, hi);
}

}  // namespace

Space Space::discrete(std::string name, int64_t n) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kDiscrete;
  s.n_ = n;
  return s;
}

Space Space::named_discrete(std::string name, std::vector<std::string> names) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kNamedDiscrete;
  s.n_ = int64_t(names.size());
  s.names_ = std::move(names);
  return s;
}

Space Space::int64_range(std::string name, int64_t min, int64_t max) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kInt64Range;
  s.low_ = double(min);
  s.high_ = double(max);
  s.shape_ = {min, max};  // exact bounds (doubles lose precision near the extremes)
  return s;
}

Space Space::double_range(std::string name, double min, double max) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kDoubleRange;
  s.low_ = min;
  s.high_ = max;
  return s;
}

Space Space::int64_box(std::string name, std::vector<int64_t> shape, double low, double high) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kInt64Box;
  s.shape_ = std::move(shape);
  s.low_ = low;
  s.high_ = high;
  return s;
}

Space Space::double_box(std::string name, std::vector<int64_t> shape, double low, double high) {
  Space s = int64_box(std::move(name), std::move(shape), low, high);
  s.type_ = SpaceType::kDoubleBox;
  return s;
}

Space Space::dict(std::string name, std::vector<Space> fields) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kDict;
  s.fields_ = std::move(fields);
  return s;
}

Space Space::sequence(std::string name, Space element, int64_t min_length, int64_t max_length) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kSequence;
  s.fields_ = {std::move(element)};
  s.shape_ = {min_length, max_length};
  return s;
}

Space Space::string(std::string name, int64_t max_length) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kString;
  s.shape_ = {0, max_length};
  return s;
}

Space Space::boolean(std::string name) {
  Space s;
  s.name_ = std::move(name);
  s.type_ = SpaceType::kBoolean;
  return s;
}

bool Space::contains(const Event& v) const {
  switch (type_) {
    case SpaceType::kDiscrete:
    case SpaceType::kNamedDiscrete: return v.is<int64_t>() && v.as<int64_t>() >= 0 && v.as<int64_t>() < n_;
    case SpaceType::kInt64Range: return v.is<int64_t>() && v.as<int64_t>() >= shape_[0] && v.as<int64_t>() <= shape_[1];
    case SpaceType::kDoubleRange: {
      if (!v.is<double>()) return false;
      double x = v.as<double>();
      return !std::isnan(x) && x >= low_ && x <= high_;
    }
    case SpaceType::kInt64Box: {
      if (!v.is<Int64Tensor>()) return false;
      const Int64Tensor& t = v.as<Int64Tensor>();
      if (!shape_matches(shape_, t.shape, t.values.size())) return false;
      for (int64_t x : t.values)
        if (double(x) < low_ || double(x) > high_) return false;
      return true;
    }
    case SpaceType::kDoubleBox: {
      if (!v.is<DoubleTensor>()) return false;
      const DoubleTensor& t = v.as<DoubleTensor>();
      if (!shape_matches(shape_, t.shape, t.values.size())) return false;
      for (double x : t.values)
        if (std::isnan(x) || x < low_ || x > high_) return false;
      return true;
    }
    case SpaceType::kDict: {
      if (!v.is<EventDict>()) return false;
      const EventDict& d = v.as<EventDict>();
      if (d.size() != fields_.size()) return false;
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i].first != fields_[i].name() || !fields_[i].contains(d[i].second)) return false;
      return true;
    }
    case SpaceType::kSequence: {
      if (!v.is<EventList>()) return false;
      const EventList& l = v.as<EventList>();
      if (int64_t(l.size()) < shape_[0] || int64_t(l.size()) > shape_[1]) return false;
      for (const Event& x : l)
        if (!fields_[0].contains(x)) return false;
      return true;
    }
    case SpaceType::kString:
      return v.is<std::string>() && int64_t(v.as<std::string>().size()) >= shape_[0] &&
             int64_t(v.as<std::string>().size()) <= shape_[1];
    case SpaceType::kBoolean: return v.is<bool>();
  }
  return false;
}

Event Space::sample(Rng& rng) const {
  auto sample_shape = [&]() {
    std::vector<int64_t> shape = shape_;
    for (int64_t& d : shape)
      if (d < 0) d = rng.range(0, 8);
    return shape;
  };
  switch (type_) {
    case SpaceType::kDiscrete:
    case SpaceType::kNamedDiscrete: return Event(int64_t(rng.below(uint64_t(n_))));
    case SpaceType::kInt64Range: return Event(draw_int(rng, shape_[0], shape_[1]));
    case SpaceType::kDoubleRange: return Event(draw(rng, low_, high_));
    case SpaceType::kInt64Box: {
      Int64Tensor t;
      t.shape = sample_shape();
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      int64_t lo = std::isinf(low_) ? -1000 : int64_t(std::ceil(low_));
      int64_t hi = std::isinf(high_) ? lo + 2000 : int64_t(std::floor(high_));
      for (int64_t i = 0; i < n; ++i) t.values.push_back(rng.range(lo, hi));
      return Event(std::move(t));
    }
    case SpaceType::kDoubleBox: {
      DoubleTensor t;
      t.shape = sample_shape();
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      for (int64_t i = 0; i < n; ++i) t.values.push_back(draw(rng, low_, high_));
      return Event(std::move(t));
    }
    case SpaceType::kDict: {
      EventDict d;
      for (const Space& f : fields_) d.emplace_back(f.name(), f.sample(rng));
      return Event(std::move(d));
    }
    case SpaceType::kSequence: {
      int64_t hi = std::min<int64_t>(shape_[1], shape_[0] + 8);
      int64_t n = rng.range(shape_[0], hi);
      EventList l;
      for (int64_t i = 0; i < n; ++i) l.push_back(fields_[0].sample(rng));
      return Event(std::move(l));
    }
    case SpaceType::kString: {
      int64_t hi = std::min<int64_t>(shape_[1], shape_[0] + 16);
      int64_t n = rng.range(shape_[0], hi);
      std::string s;
      for (int64_t i = 0; i < n; ++i) s += char('a' + rng.below(26));
      return Event(std::move(s));
    }
    case SpaceType::kBoolean: return Event(rng.below(2) == 1);
  }
  return Event();
}

std::string Space::to_string() const {
  auto dims = [&] { return fmt::format("[{}]", fmt::join(shape_, ", ")); };
  switch (type_) {
    case SpaceType::kDiscrete: return fmt::format("Discrete({})", n_);
    case SpaceType::kNamedDiscrete: return fmt::format("NamedDiscrete([{}])", fmt::join(names_, ", "));
    case SpaceType::kInt64Range: return fmt::format("Int64Range({}..{})", shape_[0], shape_[1]);
    case SpaceType::kDoubleRange: return fmt::format("DoubleRange({}..{})", number(low_), number(high_));
    case SpaceType::kInt64Box: return fmt::format("Box(int64, {}, {}..{})", dims(), number(low_), number(high_));
    case SpaceType::kDoubleBox: return fmt::format("Box(float64, {}, {}..{})", dims(), number(low_), number(high_));
    case SpaceType::kDict: {
      std::string s = "Dict(";
      for (size_t i = 0; i < fields_.size(); ++i)
        fmt::format_to(std::back_inserter(s), "{}{}: {}", i ? ", " : "", fields_[i].name(), fields_[i].to_string());
      return s + ")";
    }
    case SpaceType::kSequence:
      return fmt::format("Sequence({}, length {}..{})", fields_[0].to_string(), shape_[0], shape_[1]);
    case SpaceType::kString: return fmt::format("String(length 0..{})", shape_[1]);
    case SpaceType::kBoolean: return "Boolean()";
  }
  return "?";
}

void Space::to_proto(proto::Space* out) const {
  out->Clear();
  out->set_name(name_);
  out->set_deterministic(deterministic_);
  out->set_platform_dependent(platform_dependent_);
  out->set_description(description_);
  if (!default_.empty()) event_to_proto(default_, out->mutable_default_value());
  switch (type_) {
    case SpaceType::kDiscrete: out->mutable_discrete()->set_n(n_); break;
    case SpaceType::kNamedDiscrete:
      for (const std::string& n : names_) out->mutable_named_discrete()->add_name(n);
      break;
    case SpaceType::kInt64Range:
      out->mutable_int64_range()->set_min(shape_[0]);
      out->mutable_int64_range()->set_max(shape_[1]);
      break;
    case SpaceType::kDoubleRange:
      if (!std::isinf(low_)) out->mutable_double_range()->set_min(low_);
      if (!std::isinf(high_)) out->mutable_double_range()->set_max(high_);
      out->mutable_double_range();
      break;
    case SpaceType::kInt64Box:
    case SpaceType::kDoubleBox: {
      auto* b = out->mutable_box();
      b->set_dtype(type_ == SpaceType::kInt64Box ? proto::BoxSpace::INT64 : proto::BoxSpace::DOUBLE);
      b->mutable_shape()->Add(shape_.begin(), shape_.end());
      if (!std::isinf(low_)) b->mutable_range()->set_min(low_);
      if (!std::isinf(high_)) b->mutable_range()->set_max(high_);
      for (const std::string& l : labels_) b->add_labels(l);
      break;
    }
    case SpaceType::kDict:
      for (const Space& f : fields_) f.to_proto(out->mutable_dict()->add_field());
      break;
    case SpaceType::kSequence:
      out->mutable_sequence()->mutable_length()->set_min(shape_[0]);
      out->mutable_sequence()->mutable_length()->set_max(shape_[1]);
      fields_[0].to_proto(out->mutable_sequence()->mutable_element());
      break;
    case SpaceType::kString:
      out->mutable_string()->mutable_length()->set_min(shape_[0]);
      out->mutable_string()->mutable_length()->set_max(shape_[1]);
      break;
    case SpaceType::kBoolean: out->mutable_boolean(); break;
  }
}

Expected<Space> Space::from_proto(const proto::Space& p) {
  Space s;
  switch (p.value_case()) {
    case proto::Space::kDiscrete:
      if (p.discrete().n() < 0)
        return invalid_argument("space " + quote_text(p.name()) + ": discrete size is negative");
      s = discrete(p.name(), p.discrete().n());
      break;
    case proto::Space::kNamedDiscrete:
      s = named_discrete(p.name(), {p.named_discrete().name().begin(), p.named_discrete().name().end()});
      break;
    case proto::Space::kInt64Range:
      s = int64_range(p.name(), p.int64_range().has_min() ? p.int64_range().min() : std::numeric_limits<int64_t>::min(),
                      p.int64_range().has_max() ? p.int64_range().max() : std::numeric_limits<int64_t>::max());
      break;
    case proto::Space::kDoubleRange:
      s = double_range(p.name(), p.double_range().has_min() ? p.double_range().min() : -kInf,
                       p.double_range().has_max() ? p.double_range().max() : kInf);
      break;
    case proto::Space::kBox: {
      const auto& b = p.box();
      std::vector<int64_t> shape(b.shape().begin(), b.shape().end());
      double lo = b.range().has_min() ? b.range().min() : -kInf;
      double hi = b.range().has_max() ? b.range().max() : kInf;
      s = b.dtype() == proto::BoxSpace::INT64 ? int64_box(p.name(), shape, lo, hi) : double_box(p.name(), shape, lo, hi);
      s.labels_ = {b.labels().begin(), b.labels().end()};
      break;
    }
    case proto::Space::kDict: {
      std::vector<Space> fields;
      for (const auto& f : p.dict().field()) {
        TG_ASSIGN_OR_RETURN(Space x, from_proto(f));
        fields.push_back(std::move(x));
      }
      s = dict(p.name(), std::move(fields));
      break;
    }
    case proto::Space::kSequence: {
      TG_ASSIGN_OR_RETURN(Space element, from_proto(p.sequence().element()));
      s = sequence(p.name(), std::move(element), p.sequence().length().min(),
                   p.sequence().length().has_max() ? p.sequence().length().max() : std::numeric_limits<int64_t>::max());
      break;
    }
    case proto::Space::kString:
      s = string(p.name(), p.string().length().has_max() ? p.string().length().max()
                                                          : std::numeric_limits<int64_t>::max());
      break;
    case proto::Space::kBoolean: s = boolean(p.name()); break;
    case proto::Space::VALUE_NOT_SET: return invalid_argument("space " + quote_text(p.name()) + " has no type");
  }
  s.deterministic_ = p.deterministic();
  s.platform_dependent_ = p.platform_dependent();
  s.description_ = p.description();
  if (p.has_default_value()) {
    TG_ASSIGN_OR_RETURN(Event d, event_from_proto(p.default_value()));
    s.default_ = std::move(d);
  }
  return s;
}

}  // namespace tensorgym
