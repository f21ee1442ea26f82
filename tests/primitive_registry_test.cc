// The primitive registry drives the trace parser, both action spaces, the action mask,
// random schedules and the reference table in docs/schedule_primitives.md.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_reference.h"
#include "codegen/schedule/primitive_text.h"
#include "codegen/schedule/random_schedule.h"
#include "envs/schedule/cursor_actions.h"
#include "envs/schedule/primitive_actions.h"

namespace tensorgym {
namespace {

ProgramPtr parse(const char* text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

const char* const kPrograms[] = {
    "input A: f32[13, 17]\ninput B: f32[17, 11]\nC[i, j] += A[i, k] * B[k, j]\nR[i, j] = max(C[i, j], 0.0)\n",
    "input X: f32[6, 10]\nM[i] max= X[i, j]\nE[i, j] = exp(X[i, j] - M[i])\nS[i] += E[i, j]\nO[i, j] = E[i, j] / S[i]\n",
    "input A: f32[5, 12]\ninput B: f32[5, 12]\nT1[i, j] = A[i, j] * B[i, j]\nT2[i, j] = T1[i, j] + 1.0\n"
    "T3[i, j] = max(T2[i, j], 0.0)\n",
    "input X: f32[1, 3, 7, 7]\ninput W: f32[4, 3, 3, 3]\n"
    "P[n, c, h, w] = select(h >= 1 && h <= 7 && w >= 1 && w <= 7, X[n, c, h - 1, w - 1], 0.0) where h in 0..9, w in "
    "0..9\nY[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..7, x in 0..7\n",
};

// What a schedule state is, as text: enough to tell two states apart.
std::string describe_state(const ScheduleState& state) {
  std::string out;
  for (const StageSchedule& s : state.stages()) {
    out += s.name() + " attach=" + std::to_string(int(s.attach)) + ":" + s.attach_stage + "." + s.attach_loop + " [";
    for (int l : s.leaf) {
      const Loop& loop = s.loops[size_t(l)];
      out += loop.name + "/" + std::to_string(loop.extent) + "/" + for_kind_name(loop.kind) + loop.thread_tag;
      for (const auto& [k, v] : loop.pragmas) out += "/" + k + "=" + std::to_string(v);
      out += " ";
    }
    out += "] aligns=" + std::to_string(s.aligns.size()) + " order=" + std::to_string(s.storage_order.size()) + "\n";
  }
  return out;
}

TEST(PrimitiveRegistry, DocsTableIsTheRegistrysTable) {
  std::ifstream in(std::string(TENSORGYM_SOURCE_DIR) + "/docs/schedule_primitives.md");
  ASSERT_TRUE(in) << "docs/schedule_primitives.md";
  std::string line, table;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("| primitive | what it does |", 0) == 0) inside = true;
    if (inside && line.empty()) break;
    if (inside) table += line + "\n";
  }
  EXPECT_EQ(table, primitive_reference_markdown())
      << "docs/schedule_primitives.md's table differs from the registry's (primitive_reference_markdown())";
}

TEST(PrimitiveRegistry, EveryPrimitiveIsFoundByItsName) {
  std::set<std::string_view> names;
  for (const PrimitiveDef* p : all_primitives()) {
    EXPECT_TRUE(names.insert(p->name).second) << p->name;
    EXPECT_EQ(find_primitive(p->name), p);
    EXPECT_EQ(p->usage.substr(0, p->name.size() + 1), std::string(p->name) + "(");
    EXPECT_FALSE(p->args.empty()) << p->name;
    EXPECT_TRUE(p->check && p->apply) << p->name;
    EXPECT_EQ(p->flat.slots == ActionSlots::kNone, p->flat.make == nullptr) << p->name;
  }
  EXPECT_EQ(find_primitive("nonesuch"), nullptr);
  EXPECT_NE(find_primitive("reverse_compute_at"), nullptr);
}

// The flat space's blocks start where they always did; a new primitive's block follows.
TEST(PrimitiveActions, BlocksKeepTheirIndices) {
  const std::vector<std::pair<int64_t, std::string>> starts = {
      {0, "split"},          {864, "reorder"},       {960, "fuse"},          {1056, "vectorize"},
      {1152, "parallel"},    {1248, "unroll"},       {1344, "pragma"},       {1632, "cache_read"},
      {1664, "cache_write"}, {1672, "compute_at"},   {1768, "compute_inline"}, {1776, "compute_root"},
      {1784, "rfactor"},     {1880, "storage_align"}, {1976, "bind"},
      {2648, "set_scope"},   {2672, "tensorize"},    {2768, "pragma"},       {2864, "set_scope"}};
  for (const auto& [index, name] : starts) {
    EXPECT_EQ(PrimitiveActions::describe(index).rfind(name + "(stage 0", 0), 0u) << index << " " << name;
    if (index > 0) {
      EXPECT_EQ(PrimitiveActions::describe(index - 1).find(name + "("), std::string::npos);
    }
  }
  EXPECT_EQ(PrimitiveActions::size(), 1976 + 8 * 12 * 7 + 8 * 3 + 8 * 12 + 8 * 12 + 8 * 3);
  EXPECT_EQ(PrimitiveActions::describe(1), "split(stage 0, loop 0, choice 1)");
  EXPECT_EQ(PrimitiveActions::describe(1632 + 5), "cache_read(stage 1, choice 1)");
  EXPECT_EQ(PrimitiveActions::describe(1975), "storage_align(stage 7, loop 11)");
  EXPECT_EQ(PrimitiveActions::describe(2647), "bind(stage 7, loop 11, choice 6)");
  EXPECT_EQ(PrimitiveActions::describe(2648 + 5), "set_scope(stage 1, choice 2)");
  EXPECT_EQ(PrimitiveActions::describe(2672 + 12 + 3), "tensorize(stage 1, loop 3)");
  EXPECT_EQ(PrimitiveActions::describe(2768 + 1), "pragma(stage 0, loop 1)");
  EXPECT_EQ(PrimitiveActions::describe(2864 + 5), "set_scope(stage 1, choice 2)");
  EXPECT_EQ(PrimitiveActions::describe(2888), "out of range");
}

TEST(CursorActions, NamesFollowTheTable) {
  const std::vector<std::string> expected = {
      "stage_next",    "stage_prev",   "loop_in",       "loop_out",     "split_2",         "split_4",
      "split_8",       "split_16",     "split_32",      "split_64",     "swap_next",       "fuse_next",
      "vectorize",     "parallel",     "unroll",        "auto_unroll_64", "cache_read_0",  "cache_read_1",
      "cache_read_2",  "cache_read_3", "cache_write",   "compute_at_here", "inline",       "root",
      "rfactor",       "storage_align", "reverse_compute_at_here"};
  EXPECT_EQ(CursorActions::names(), expected);
}

// An index decodes to a bound primitive; applied as such or as its printed text it
// gives the same schedule, and a masked-in action passes its primitive's check.
TEST(PrimitiveActions, IndexAndTextPathsAgree) {
  int applied = 0;
  for (const char* text : kPrograms) {
    ProgramPtr program = parse(text);
    for (int t = 0; t < 12; ++t) {
      Rng rng(uint64_t(t) * 31 + 5);
      Schedule schedule(program);
      apply_random_primitives(schedule, rng, int(rng.range(0, 6)));
      SCOPED_TRACE(schedule.trace().to_string());
      // With thread binding: every block, GPU primitives (bind) included.
      std::vector<int64_t> mask = PrimitiveActions::mask(schedule.state(), TargetKind::kGpu);
      for (size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) continue;
        Expected<BoundPrimitive> bound = PrimitiveActions::decode(schedule.state(), int64_t(i));
        ASSERT_TRUE(bound.ok()) << PrimitiveActions::describe(int64_t(i)) << ": " << bound.status().to_string();
        Status check = bound->def->check(schedule.state(), bound->args);
        EXPECT_TRUE(check.ok()) << PrimitiveActions::describe(int64_t(i)) << ": " << check.to_string();
        Primitive printed = primitive_text(schedule.state(), *bound);
        std::optional<Schedule> by_index, by_text;
        PrimitiveResult a = schedule.apply_to_copy(*bound, &by_index);
        PrimitiveResult b = schedule.apply_to_copy(printed, &by_text);
        ASSERT_EQ(a.ok(), b.ok()) << printed.to_string();
        if (!a.ok()) {
          EXPECT_EQ(a.status().to_string(), b.status().to_string());
          continue;
        }
        ASSERT_EQ(by_index.has_value(), by_text.has_value());
        if (!by_index) continue;
        ++applied;
        EXPECT_EQ(by_index->trace(), by_text->trace());
        EXPECT_EQ(*by_index->last_primitive(), printed);
        EXPECT_EQ(describe_state(by_index->state()), describe_state(by_text->state())) << printed.to_string();
      }
    }
  }
  EXPECT_GT(applied, 500);
}

// Binding text and printing it back gives the text, for every primitive random
// schedules propose.
TEST(PrimitiveText, BindingThenPrintingIsTheIdentity) {
  int bound = 0;
  for (const char* text : kPrograms) {
    ProgramPtr program = parse(text);
    Rng rng(99);
    Schedule schedule(program);
    for (int step = 0; step < 200; ++step) {
      BoundPrimitive p = propose_random_primitive(schedule.state(), rng, step);
      Primitive printed = primitive_text(schedule.state(), p);
      Expected<BoundPrimitive> again = bind_primitive(schedule.state(), printed);
      ASSERT_TRUE(again.ok()) << printed.to_string() << ": " << again.status().to_string();
      EXPECT_EQ(primitive_text(schedule.state(), *again), printed);
      ++bound;
      (void)schedule.apply(p);  // most proposals fail; the few that apply move the state on
    }
  }
  EXPECT_EQ(bound, 800);
}

TEST(PrimitiveText, BindingErrorsSayWhichArgument) {
  ProgramPtr program = parse(kPrograms[0]);
  Schedule s(program);
  auto error = [&](const char* text) {
    Status st = s.apply_text(text);
    EXPECT_FALSE(st.ok()) << text;
    return st.to_string();
  };
  EXPECT_NE(error("nonesuch(C)").find("unknown primitive 'nonesuch'"), std::string::npos);
  EXPECT_NE(error("split(C.i, 4)").find("wrong number of arguments; usage: split(STAGE.loop, factor, outer, inner)"),
            std::string::npos);
  EXPECT_NE(error("split(C.i, x, a, b)").find("split factor must be an integer, found 'x'"), std::string::npos);
  EXPECT_NE(error("split(C.q, 4, a, b)").find("stage C has no loop 'q'"), std::string::npos);
  EXPECT_NE(error("cache_read(Z, C, Z2)").find("unknown tensor 'Z'"), std::string::npos);
  EXPECT_NE(error("pragma(C.i, unroll_all, 4)").find("unknown pragma 'unroll_all' (known: auto_unroll_max_step, dma_copy)"),
            std::string::npos);
  EXPECT_NE(error("reorder_storage(R, i, q)").find("stage R has no dimension 'q'"), std::string::npos);
  EXPECT_EQ(s.trace_length(), 0u);
}

}  // namespace
}  // namespace tensorgym
