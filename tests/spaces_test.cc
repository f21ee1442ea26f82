// Spaces: containment, seeded sampling, text forms and the proto round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "proto/tensorgym.pb.h"
#include "spaces/space.h"

namespace tensorgym {
namespace {

std::vector<Space> all_kinds() {
  return {
      Space::discrete("d", 10),
      Space::named_discrete("nd", {"a", "b", "c"}),
      Space::int64_range("ir", -5, 5),
      Space::double_range("dr", 0.0, 1.0),
      Space::int64_box("ib", {2, 3}, 0, 1),
      Space::double_box("db", {-1, 4}, -1.0, 1.0),
      Space::dict("dict", {Space::discrete("x", 3), Space::boolean("flag")}),
      Space::sequence("seq", Space::int64_range("e", 0, 9), 1, 5),
      Space::string("s", 16),
      Space::boolean("b"),
  };
}

TEST(Spaces, SamplesAreContainedAndSeeded) {
  for (const Space& s : all_kinds()) {
    Rng a(42), b(42);
    for (int i = 0; i < 50; ++i) {
      Event x = s.sample(a);
      EXPECT_TRUE(s.contains(x)) << s.to_string() << " sampled " << event_to_json(x);
      EXPECT_EQ(x, s.sample(b)) << s.to_string();
    }
  }
}

TEST(Spaces, ContainmentRejectsWhatDoesNotBelong) {
  EXPECT_FALSE(Space::discrete("d", 10).contains(Event(int64_t(10))));
  EXPECT_FALSE(Space::discrete("d", 10).contains(Event(int64_t(-1))));
  EXPECT_FALSE(Space::discrete("d", 10).contains(Event(1.0)));
  EXPECT_FALSE(Space::int64_range("r", 0, 3).contains(Event(int64_t(4))));
  EXPECT_FALSE(Space::double_range("r", 0, 1).contains(Event(std::nan(""))));
  EXPECT_FALSE(Space::int64_box("b", {2}, 0, 1).contains(Event(Int64Tensor{{3}, {0, 0, 0}})));
  EXPECT_FALSE(Space::int64_box("b", {2}, 0, 1).contains(Event(Int64Tensor{{2}, {0, 2}})));
  EXPECT_TRUE(Space::double_box("b", {-1, 2}, -1, 1).contains(Event(DoubleTensor{{3, 2}, {0, 0, 0, 0, 0, 0}})));
  EXPECT_FALSE(Space::double_box("b", {-1, 2}, -1, 1).contains(Event(DoubleTensor{{2, 2}, {0, 0, 0}})));
  EXPECT_FALSE(Space::string("s", 3).contains(Event(std::string("abcd"))));
  Space d = Space::dict("d", {Space::discrete("x", 3)});
  EXPECT_FALSE(d.contains(Event(EventDict{{"y", Event(int64_t(0))}})));
  EXPECT_TRUE(d.contains(Event(EventDict{{"x", Event(int64_t(2))}})));
}

TEST(Spaces, ProtoRoundTripKeepsEverything) {
  for (Space s : all_kinds()) {
    s.set_deterministic(false).set_platform_dependent(true).set_description("about " + s.name());
    Rng rng(7);
    s.set_default(s.sample(rng));
    proto::Space p;
    s.to_proto(&p);
    Expected<Space> back = Space::from_proto(p);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(back->to_string(), s.to_string());
    EXPECT_EQ(back->name(), s.name());
    EXPECT_EQ(back->deterministic(), false);
    EXPECT_EQ(back->platform_dependent(), true);
    EXPECT_EQ(back->description(), s.description());
    EXPECT_EQ(back->default_value(), s.default_value());
    for (int i = 0; i < 20; ++i) {
      Event x = s.sample(rng);
      EXPECT_EQ(back->contains(x), s.contains(x));
      proto::Event pe;
      event_to_proto(x, &pe);
      Expected<Event> xe = event_from_proto(pe);
      ASSERT_TRUE(xe.ok());
      EXPECT_EQ(*xe, x);
      // Moved into a message that held something else: the same message.
      proto::Event moved;
      moved.set_string_value("stale");
      Event copy = x;
      event_to_proto(std::move(copy), &moved);
      EXPECT_EQ(moved.SerializeAsString(), pe.SerializeAsString()) << s.name();
    }
  }
}

TEST(Spaces, TextForms) {
  EXPECT_EQ(Space::discrete("d", 10).to_string(), "Discrete(10)");
  EXPECT_EQ(Space::named_discrete("n", {"a", "b"}).to_string(), "NamedDiscrete([a, b])");
  EXPECT_EQ(Space::double_box("f", {-1, 164}).to_string(), "Box(float64, [-1, 164], -inf..inf)");
  EXPECT_EQ(event_to_json(Event(Int64Tensor{{2, 2}, {1, 2, 3, 4}})), "[[1,2],[3,4]]");
  EXPECT_EQ(event_to_json(Event(EventDict{{"a", Event(true)}, {"b", Event(std::string("x\"y"))}})),
            "{\"a\":true,\"b\":\"x\\\"y\"}");
  EXPECT_EQ(event_to_string(Event(DoubleTensor{{1, 2}, {0.5, std::nan("")}})), "float64[1, 2]: [[0.5,null]]");
  EXPECT_EQ(json_quote(std::string("a\x01\xff")), "\"a\\u0001\xef\xbf\xbd\"");  // bad UTF-8 becomes U+FFFD
  EXPECT_EQ(event_to_json(Event(0.25)), "0.25");
  EXPECT_EQ(event_to_json(Event(std::nan(""))), "null");
}

TEST(Spaces, MalformedProtoIsAnError) {
  proto::Space p;
  p.set_name("empty");
  EXPECT_FALSE(Space::from_proto(p).ok());
  proto::Event e;
  e.mutable_event_dict()->add_key("a");
  EXPECT_FALSE(event_from_proto(e).ok());
}

}  // namespace
}  // namespace tensorgym
