// Search agents: sketches render to legal, correct schedules; every agent is
// deterministic given its seed; a checkpointed and resumed search continues exactly
// where it stopped; budgets stop searches; the best episode is a state `tensorgym
// validate` accepts; a search with real measurements through the Runner works.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "agents/evaluator.h"
#include "agents/search.h"
#include "agents/serial.h"
#include "agents/sketch.h"
#include "benchmarks/baselines/vendor_baselines.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "envs/episode_state.h"
#include "proto/episode_state_io.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/agents_test_" + std::to_string(getpid()) + "_" + name;
}

Benchmark resolve(const std::string& uri) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return *b;
}

// --- sketches ----------------------------------------------------------------------

// Doubles are saved as C's hex floats, exact and readable by strtod.
TEST(SerialTest, DoublesAreSavedAsExactHexFloats) {
  EXPECT_EQ(double_to_exact(0.1), "0x1.999999999999ap-4");
  EXPECT_EQ(double_to_exact(-3.0), "-0x1.8p+1");
  EXPECT_EQ(double_to_exact(0.0), "0x0p+0");
  EXPECT_EQ(double_to_exact(4.9e-324), "0x0.0000000000001p-1022");
  for (double v : {0.1, -3.0, 1e-310, 1.7976931348623157e308, 123456.789}) {
    Expected<double> back = double_from_exact(double_to_exact(v));
    ASSERT_TRUE(back.ok()) << v;
    EXPECT_EQ(*back, v);
  }
}

TEST(SketchTest, PlansFollowTheRules) {
  SketchPlan gemm = make_sketch_plan(*resolve("benchmark://ops-v0/gmm-1").program);
  ASSERT_EQ(gemm.stages.size(), 1u);
  EXPECT_EQ(gemm.stages[0].rule, StageRule::kTiled);
  EXPECT_EQ(gemm.stages[0].reads, (std::vector<std::string>{"A", "B"}));

  SketchPlan norm = make_sketch_plan(*resolve("benchmark://ops-v0/nrm-1").program);
  ASSERT_EQ(norm.stages.size(), 2u);
  EXPECT_EQ(norm.stages[0].rule, StageRule::kRFactor);
  EXPECT_EQ(norm.stages[1].rule, StageRule::kSimple);

  SketchPlan conv = make_sketch_plan(*resolve("benchmark://ops-v0/c2d-3").program);
  ASSERT_EQ(conv.stages.size(), 2u);
  EXPECT_EQ(conv.stages[0].rule, StageRule::kPrologue);  // padding
  EXPECT_EQ(conv.stages[0].tiled_reader, "Y");
  EXPECT_EQ(conv.stages[1].rule, StageRule::kTiled);

  // conv, clamp, exp: the clamp is an epilogue, the exp the consumer Y may fuse into.
  SketchPlan chain = make_sketch_plan(*resolve("generator://random-ops-v0/1").program);
  ASSERT_EQ(chain.stages.size(), 3u);
  EXPECT_EQ(chain.stages[0].rule, StageRule::kTiled);
  EXPECT_EQ(chain.stages[0].consumer, "E2");
  EXPECT_EQ(chain.stages[1].rule, StageRule::kEpilogue);
  EXPECT_EQ(chain.stages[2].rule, StageRule::kFusable);
}

// The expert GEMM schedule is in the sketch space: the genome with its tile sizes
// renders a schedule of the same structure.
TEST(SketchTest, ExpertGemmIsASketch) {
  Benchmark b = resolve("benchmark://ops-v0/gmm-4");
  SketchPlan plan = make_sketch_plan(*b.program);
  Genome g;
  StageGenes s;
  s.fuse_consumer = false;
  s.spatial = {{1, 256, 1, 4}, {16, 1, 1, 64}};
  s.reduce = {{1, 1024}};
  s.compute_level = 1;
  s.vec_axis = 1;
  s.pack = {0, 1};  // B packed at the column block
  s.parallel = 2;
  s.unroll = 3;
  g.stages = {s};
  Expected<Schedule> sched = render_genome(plan, g, b.program);
  ASSERT_TRUE(sched.ok()) << sched.status().to_string();
  std::string text = sched->trace().to_string();
  EXPECT_NE(text.find("cache_write(C, C_local)"), std::string::npos) << text;
  EXPECT_NE(text.find("cache_read(B, C_local, B_C_local)"), std::string::npos) << text;
  EXPECT_NE(text.find("vectorize(C_local.j3)"), std::string::npos) << text;
  Expected<LoopNest> nest = lower(*sched);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
}

// The channel-blocked convolution (oneDNN's design) is in the sketch space: output
// channels vectorized, the accumulators and the packed weights channel-innermost, the
// weight copy writing contiguously.
TEST(SketchTest, ChannelBlockedConvIsASketch) {
  Benchmark b = resolve("benchmark://ops-v0/c2d-4");
  SketchPlan plan = make_sketch_plan(*b.program);
  const StagePlan* y = plan.find("Y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->reads, (std::vector<std::string>{"P", "W"}));
  // Y[n, f, y, x] reads W[f, c, r, s]: f is W's outermost dimension; P has no f.
  EXPECT_EQ(y->read_dims[1], (std::vector<int>{-1, 0, -1, -1}));
  EXPECT_EQ(y->read_ranks[1], 4);
  EXPECT_EQ(y->read_dims[0], (std::vector<int>{0, -1, -1, -1}));
  Rng rng(1);
  Genome g = random_genome(plan, rng);
  StageGenes& s = g.stages[size_t(plan.index_of("Y"))];
  s.fuse_consumer = false;
  s.spatial = {{1, 1, 1, 1}, {32, 1, 1, 16}, {7, 1, 1, 1}, {1, 1, 1, 7}};
  s.reduce = {{512, 1}, {3, 1}, {3, 1}};
  s.compute_level = 0;
  s.vec_axis = 1;
  s.layout = true;
  s.pack = {0, 1};  // W packed per block of 16 output channels
  Expected<Schedule> sched = render_genome(plan, g, b.program);
  ASSERT_TRUE(sched.ok()) << sched.status().to_string();
  const std::string text = sched->trace().to_string();
  EXPECT_CONTAINS(text, "vectorize(Y_local.f3)");
  EXPECT_CONTAINS(text, "reorder_storage(Y_local, n, y, x, f)");
  EXPECT_CONTAINS(text, "reorder_storage(W_Y_local, ax1, ax2, ax3, ax0)");
  EXPECT_CONTAINS(text, "reorder(W_Y_local, ax1, ax2, ax3, ax0)");
  ASSERT_TRUE(lower(*sched).ok());
}

// Random tiled genomes keep the register tile within 512 elements, never vectorize an
// axis without an 8-lane width (7 here), and mostly pack what a vector axis other than
// the last needs.
TEST(SketchTest, RandomTiledGenomesFollowTheSamplingRules) {
  Benchmark b = resolve("benchmark://ops-v0/c2d-4");
  SketchPlan plan = make_sketch_plan(*b.program);
  const size_t yi = size_t(plan.index_of("Y"));
  Rng rng(3);
  int f_vectors = 0, packed_layouts = 0;
  for (int i = 0; i < 200; ++i) {
    const StageGenes s = random_genome(plan, rng).stages[yi];
    int64_t tile = 1;
    for (const auto& f : s.spatial) tile *= f[3];
    EXPECT_LE(tile, 512);
    // n has extent 1 and y, x extent 7: only f (512 channels) can carry the vectors.
    EXPECT_EQ(s.vec_axis, 1);
    if (s.vec_axis == 1) ++f_vectors;
    if (s.layout && s.pack[1] != 0) ++packed_layouts;
  }
  EXPECT_EQ(f_vectors, 200);
  EXPECT_GT(packed_layouts, 200 * 6 / 10);  // 0.9 x 0.9 expected
}

// A depthwise convolution over 7x7 outputs: vectorizing its channels makes the input
// strided (it is NCHW), so the 7-wide rows carry the vector loop whole, half the
// time; the 7-high columns never do.
TEST(SketchTest, ShortRowsCarryTheVectorsWhereTheChannelsWouldStrideTheInput) {
  Benchmark b = resolve("benchmark://ops-v0/dep-3");
  SketchPlan plan = make_sketch_plan(*b.program);
  const size_t yi = size_t(plan.index_of("Y"));
  Rng rng(3);
  int rows = 0, channels = 0;
  for (int i = 0; i < 400; ++i) {
    const StageGenes s = random_genome(plan, rng).stages[yi];
    EXPECT_TRUE(s.vec_axis == 1 || s.vec_axis == 3) << s.vec_axis;  // (n, c, y, x)
    if (s.vec_axis == 3) {
      ++rows;
      EXPECT_EQ(s.spatial[3][3], 7);  // the whole row
    }
    channels += s.vec_axis == 1;
  }
  EXPECT_GT(rows, 400 * 3 / 8);
  EXPECT_LT(rows, 400 * 5 / 8);
  EXPECT_EQ(rows + channels, 400);
}

// A depthwise convolution over 7x7 outputs with its padding inlined: a flattened genome
// runs the 7 rows of 7 as one vector loop of 49 lanes (32 + 16 + 1), whose loads of the
// input are contiguous (the input's rows are as wide as the output's), and computes
// what the program does. Random genomes flatten now and then; a mutation switches it
// on (tiling the rows as it needs, within the register tile); the text form keeps it, and a genome written
// without it reads as not flattened.
TEST(SketchTest, SmallImagesRunWholeRowsAsOneVector) {
  Benchmark b = resolve("benchmark://ops-v0/dep-4");
  SketchPlan plan = make_sketch_plan(*b.program);
  const size_t yi = size_t(plan.index_of("Y"));
  const size_t pi = size_t(plan.index_of("P"));
  Rng rng(5);
  Genome g = random_genome(plan, rng);
  StageGenes& s = g.stages[yi];
  s.fuse_consumer = false;
  s.spatial = {{1, 1, 1, 1}, {256, 4, 1, 1}, {1, 1, 1, 7}, {1, 1, 1, 7}};
  s.reduce = {{1, 3}, {1, 3}};
  s.vec_axis = 3;
  s.flatten = true;
  s.pack = {0, 0};
  g.stages[pi].location = 0;  // P inlined
  Expected<Schedule> sched = render_genome(plan, g, b.program);
  ASSERT_TRUE(sched.ok()) << sched.status().to_string();
  const std::string text = sched->trace().to_string();
  EXPECT_CONTAINS(text, "fuse(Y_local.y3, Y_local.x3, yx3)");
  EXPECT_CONTAINS(text, "vectorize(Y_local.yx3)");
  EXPECT_CONTAINS(text, "vectorize(Y.yx2)");
  Expected<const Backend*> cpu = find_backend("cpu");
  ASSERT_TRUE(cpu.ok());
  Expected<LoopNest> nest = lower(*sched, (*cpu)->lowering());
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  const std::string code = to_string(nest->body);
  EXPECT_CONTAINS(code, "X[ramp(");
  EXPECT_CONTAINS(code, ", 1, 32)]");  // 32 lanes a unit stride apart
  Expected<LoopNest> generic = lower(*sched);
  ASSERT_TRUE(generic.ok());
  std::vector<HostBuffer> inputs = make_random_inputs(*b.program, 3);
  std::vector<HostBuffer> outputs = make_output_buffers(*generic);
  ASSERT_TRUE(interpret(*generic, const_pointers(inputs), pointers(outputs)).ok());
  ProgramEvaluator ref(*b.program, const_pointers(inputs));
  Comparison c = compare_with_evaluator(ref, "Y", outputs[0], {1e-3, 1e-4}, 256, 1);
  EXPECT_TRUE(c.match) << c.describe();

  // The text form keeps the gene; a line without it (written before it existed) reads
  // as not flattened.
  std::string line = genome_to_text(g);
  Expected<Genome> back = genome_from_text(plan, line);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(back->stages[yi].flatten);
  std::istringstream lines(line);
  std::string old, l;
  for (size_t i = 0; std::getline(lines, l); ++i) {
    if (i == yi) l.replace(l.find(" 1 ;"), 4, " ;");  // drop the flatten gene (the last before ';')
    old += l + "\n";
  }
  Expected<Genome> older = genome_from_text(plan, old);
  ASSERT_TRUE(older.ok()) << older.status().to_string() << "\n" << old;
  EXPECT_FALSE(older->stages[yi].flatten);

  // Random genomes flatten sometimes, and only where the rows carry the vectors whole.
  int flattened = 0;
  for (int i = 0; i < 400; ++i) {
    const StageGenes r = random_genome(plan, rng).stages[yi];
    if (!r.flatten) continue;
    ++flattened;
    EXPECT_EQ(r.vec_axis, 3);
    EXPECT_EQ(r.spatial[3][3], 7);
    EXPECT_GT(r.spatial[2][3], 1);
  }
  EXPECT_GT(flattened, 400 / 8);  // a half of the half whose rows carry the vectors
  EXPECT_LT(flattened, 400 * 3 / 8);
  // A mutation switches it on from a genome that vectorizes the channels.
  Genome m = g;
  m.stages[yi].flatten = false;
  m.stages[yi].vec_axis = 1;
  m.stages[yi].spatial = {{1, 1, 1, 1}, {64, 4, 1, 4}, {7, 1, 1, 1}, {7, 1, 1, 1}};
  bool switched_on = false;
  for (int i = 0; i < 400 && !switched_on; ++i) {
    const Genome child = mutate_genome(plan, m, rng);
    const StageGenes& c = child.stages[yi];
    if (!c.flatten) continue;
    switched_on = true;
    EXPECT_EQ(c.vec_axis, 3);
    EXPECT_EQ(c.spatial[3], (std::array<int64_t, 4>{1, 1, 1, 7}));
    EXPECT_EQ(c.spatial[2][3], 7);  // 4 x 7 x 7 elements: within the register tile's 512
    EXPECT_TRUE(render_genome(plan, child, b.program).ok());
  }
  EXPECT_TRUE(switched_on);
}

// Random genomes render, lower, round-trip through their text form, and compute what
// the unscheduled program computes.
TEST(SketchTest, RandomGenomesRenderCorrectSchedules) {
  const char* kUris[] = {"benchmark://ops-v0/gmm-1", "benchmark://ops-v0/nrm-1", "generator://random-ops-v0/1",
                         "generator://random-ops-v0/2", "generator://random-ops-v0/3",
                         "generator://random-ops-v0/4", "generator://random-ops-v0/5"};
  for (const char* uri : kUris) {
    Benchmark b = resolve(uri);
    SketchPlan plan = make_sketch_plan(*b.program);
    Rng rng(7);
    int rendered = 0;
    for (int i = 0; i < 12; ++i) {
      Genome g = random_genome(plan, rng);
      if (i % 3 == 1) g = mutate_genome(plan, g, rng);
      if (i % 3 == 2) g = crossover_genomes(plan, g, random_genome(plan, rng), rng);
      Expected<Genome> back = genome_from_text(plan, genome_to_text(g));
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(*back, g);
      Expected<Schedule> s = render_genome(plan, g, b.program);
      if (!s.ok()) continue;
      ++rendered;
      Expected<LoopNest> nest = lower(*s);
      ASSERT_TRUE(nest.ok()) << uri << ": " << nest.status().to_string() << "\n" << s->trace().to_string();
      if (i >= 3) continue;  // the interpreter is slow; check a few per program
      std::vector<HostBuffer> inputs = make_random_inputs(*b.program, 3);
      std::vector<HostBuffer> outputs = make_output_buffers(*nest);
      Status st = interpret(*nest, const_pointers(inputs), pointers(outputs));
      ASSERT_TRUE(st.ok()) << st.to_string();
      ProgramEvaluator ref(*b.program, const_pointers(inputs));
      for (size_t o = 0; o < nest->outputs.size(); ++o) {
        Comparison c = compare_with_evaluator(ref, nest->outputs[o].name, outputs[o], {1e-3, 1e-4}, 64, 1);
        EXPECT_TRUE(c.match) << uri << ": " << c.describe() << "\n" << s->trace().to_string();
      }
    }
    EXPECT_GE(rendered, 8) << uri;
  }
}

// --- searches with the deterministic evaluator ---------------------------------------

struct Outcome {
  std::vector<std::string> traces;
  std::vector<double> costs;
  std::string best;
  uint64_t rng = 0;
};

Outcome outcome(const Search& s) {
  Outcome o;
  for (const TrialRecord& r : s.records()) {
    o.traces.push_back(r.trace);
    o.costs.push_back(r.eval.ok() ? r.eval.cost : -1);
  }
  if (s.best()) o.best = s.best()->trace;
  o.rng = s.rng_state();
  return o;
}

SearchSetup small_setup(const std::string& agent, const std::string& uri, Evaluator* e, int64_t trials) {
  SearchSetup setup;
  setup.benchmark = uri;
  setup.agent = agent;
  setup.seed = 42;
  setup.budget.max_trials = trials;
  setup.evaluator = e;
  setup.options.batch_size = 8;
  setup.options.population = 48;
  setup.options.generations = 2;
  setup.options.retrain_rounds = 20;
  setup.options.episode_length = 4;
  setup.options.branching = 6;
  setup.options.beam_width = 2;
  return setup;
}

Outcome run_search(const SearchSetup& setup) {
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  return outcome(**s);
}

class AgentDeterminismTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(AgentDeterminismTest, SameSeedSameBest) {
  auto [agent, uri] = GetParam();
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  SearchSetup setup = small_setup(agent, uri, e.get(), 32);
  Outcome a = run_search(setup);
  Outcome b = run_search(setup);
  ASSERT_FALSE(a.best.empty()) << agent << " found nothing on " << uri;
  EXPECT_EQ(a.traces, b.traces);
  EXPECT_EQ(a.costs, b.costs);
  EXPECT_EQ(a.best, b.best);
  // The best beats the unscheduled program.
  std::vector<Evaluation> base = e->evaluate({{uri, "", ""}});
  ASSERT_TRUE(base[0].ok());
  double best = 1e300;
  for (double c : a.costs)
    if (c >= 0) best = std::min(best, c);
  EXPECT_LT(best, base[0].cost);
  // Another seed explores differently.
  setup.seed = 43;
  Outcome c = run_search(setup);
  EXPECT_NE(a.traces, c.traces);
}

INSTANTIATE_TEST_SUITE_P(Agents, AgentDeterminismTest,
                         ::testing::Values(std::make_tuple("random", "benchmark://ops-v0/gmm-1"),
                                           std::make_tuple("greedy", "benchmark://ops-v0/gmm-1"),
                                           std::make_tuple("beam", "benchmark://ops-v0/nrm-1"),
                                           std::make_tuple("evolutionary", "benchmark://ops-v0/gmm-1"),
                                           std::make_tuple("evolutionary", "benchmark://ops-v0/nrm-1"),
                                           std::make_tuple("evolutionary", "generator://random-ops-v0/1")));

// The evolutionary agent's warm-up batch with analytical_prior 1 is the best-estimated
// (est_cycles) of 8 random genomes per pick; with 0 it is random genomes. With the
// deterministic evaluator (cost = est_cycles) the first batch must cost less.
TEST(EvolutionaryAgent, TheAnalyticalPriorPicksTheBestEstimatedCandidates) {
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  auto first_batch_log_cost = [&](double prior) {
    SearchSetup setup = small_setup("evolutionary", "benchmark://ops-v0/c2d-1", e.get(), 8);
    setup.options.analytical_prior = prior;
    Outcome o = run_search(setup);
    EXPECT_EQ(o.costs.size(), 8u);
    double sum = 0;
    for (double c : o.costs) {
      EXPECT_GT(c, 0);
      sum += std::log(std::max(c, 1e-30));
    }
    return sum / double(std::max<size_t>(o.costs.size(), 1));
  };
  const double random = first_batch_log_cost(0), prior = first_batch_log_cost(1);
  EXPECT_LT(prior, random - std::log(1.5)) << "geometric means " << std::exp(prior) << " vs " << std::exp(random);
}

class ResumeTest : public ::testing::TestWithParam<const char*> {};

// N trials straight and N/2 + checkpoint + resume to N give the same history, best
// and generator state. N/2 falls in the middle of a batch on purpose.
TEST_P(ResumeTest, ResumedSearchContinuesExactly) {
  const std::string agent = GetParam();
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  const std::string uri = "benchmark://ops-v0/gmm-1";
  SearchSetup setup = small_setup(agent, uri, e.get(), 40);
  Outcome straight = run_search(setup);

  SearchSetup half = setup;
  half.budget.max_trials = 21;
  Expected<std::unique_ptr<Search>> first = Search::create(half);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->run().ok());
  EXPECT_EQ((*first)->trials(), 21);
  EXPECT_EQ((*first)->stop_reason(), StopReason::kTrials);
  const std::string path = temp_path(agent + ".ckpt");
  ASSERT_TRUE((*first)->save_checkpoint(path).ok());

  Expected<std::unique_ptr<Search>> resumed = Search::resume(path, setup);
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  EXPECT_EQ((*resumed)->trials(), 21);
  ASSERT_TRUE((*resumed)->run().ok());
  Outcome o = outcome(**resumed);
  EXPECT_EQ(o.traces, straight.traces);
  EXPECT_EQ(o.costs, straight.costs);
  EXPECT_EQ(o.best, straight.best);
  EXPECT_EQ(o.rng, straight.rng);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Agents, ResumeTest, ::testing::Values("random", "greedy", "beam", "evolutionary"));

TEST(SearchTest, CheckpointErrors) {
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  SearchSetup setup = small_setup("random", "benchmark://ops-v0/gmm-1", e.get(), 4);
  EXPECT_EQ(Search::resume(temp_path("missing"), setup).status().code(), StatusCode::kNotFound);
  const std::string path = temp_path("garbage.ckpt");
  {
    std::ofstream out(path);
    out << "magic 5\nhello\n";
  }
  EXPECT_FALSE(Search::resume(path, setup).ok());
  std::remove(path.c_str());
  // A checkpoint of an est_cycles search cannot continue with measured runtimes.
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  const std::string ck = temp_path("metric.ckpt");
  ASSERT_TRUE((*s)->save_checkpoint(ck).ok());
  RunnerEvaluatorOptions ro;
  ro.worker_binary = kBinary;
  std::unique_ptr<Evaluator> runner = make_runner_evaluator(ro);
  setup.evaluator = runner.get();
  EXPECT_EQ(Search::resume(ck, setup).status().code(), StatusCode::kInvalidArgument);
  std::remove(ck.c_str());
}

TEST(SearchTest, SetupErrors) {
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  SearchSetup setup = small_setup("nope", "benchmark://ops-v0/gmm-1", e.get(), 4);
  EXPECT_EQ(Search::create(setup).status().code(), StatusCode::kNotFound);
  setup.agent = "random";
  setup.benchmark = "benchmark://ops-v0/nope";
  EXPECT_EQ(Search::create(setup).status().code(), StatusCode::kNotFound);
  setup.benchmark = "benchmark://ops-v0/gmm-1";
  setup.budget.max_trials = 0;
  EXPECT_EQ(Search::create(setup).status().code(), StatusCode::kInvalidArgument);
  setup.budget.max_trials = 4;
  setup.options.analytical_prior = 1.5;
  Expected<std::unique_ptr<Search>> bad_prior = Search::create(setup);
  EXPECT_EQ(bad_prior.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad_prior.status().message(), "analytical_prior");
  setup.options.analytical_prior = 0.25;
  setup.evaluator = nullptr;
  EXPECT_EQ(Search::create(setup).status().code(), StatusCode::kInvalidArgument);
  EvaluatorChoice choice;
  choice.reward = "speed";
  EXPECT_EQ(make_evaluator(choice).status().code(), StatusCode::kInvalidArgument);
}

TEST(SearchTest, EarlyStoppingAndTimeBudget) {
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  SearchSetup setup = small_setup("random", "benchmark://ops-v0/gmm-1", e.get(), 500);
  setup.budget.early_stopping = 10;
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_EQ((*s)->stop_reason(), StopReason::kEarlyStopping);
  ASSERT_NE((*s)->best(), nullptr);
  EXPECT_EQ((*s)->trials(), (*s)->best()->trial + 10);

  setup.budget.early_stopping = 0;
  setup.budget.max_trials = 0;
  setup.budget.max_seconds = 0.5;
  s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_EQ((*s)->stop_reason(), StopReason::kTime);
  EXPECT_GT((*s)->trials(), 0);
}

// The best episode replays in schedule-v0 to the recorded deterministic reward, and
// `tensorgym validate` accepts it.
TEST(SearchTest, BestEpisodeStateValidates) {
  std::unique_ptr<Evaluator> e = make_est_cycles_evaluator();
  SearchSetup setup = small_setup("evolutionary", "benchmark://ops-v0/gmm-1", e.get(), 24);
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  Expected<EpisodeState> state = (*s)->best_episode_state();
  ASSERT_TRUE(state.ok()) << state.status().to_string();
  EXPECT_EQ(state->env, "schedule-v0");
  EXPECT_EQ(state->reward_space, "est_cycles");
  EXPECT_GT(state->reward, 0);
  ASSERT_TRUE(state->deterministic_rewards.count("est_cycles"));
  EXPECT_EQ((*s)->agent().report().at("analytical_prior.machine"), "reference");
  const std::string path = temp_path("est.jsonl");
  std::remove(path.c_str());
  ASSERT_TRUE(append_episode_state(path, *state).ok());
  EXPECT_EQ(std::system((kBinary + " validate " + path + " > /dev/null").c_str()), 0);
  std::remove(path.c_str());
}

// A search for the cuda target through the GPU model: random draws legal GPU
// schedules, greedy and beam step with bind; each beats the unscheduled program (one
// GPU thread) by far, its best replays on cuda to the recorded reward and validates;
// the evolutionary agent evolves GPU sketches.
TEST(SearchTest, AgentsSearchGpuSchedulesWithTheGpuModel) {
  Expected<std::unique_ptr<Evaluator>> e = make_search_evaluator("est_gpu_time", 1, 1);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)->metric(), "est_gpu_time");
  EXPECT_TRUE((*e)->deterministic());
  const std::vector<Evaluation> root = (*e)->evaluate({{"benchmark://ops-v0/gmm-1", "", ""}});
  ASSERT_TRUE(root[0].ok()) << root[0].status.to_string();
  for (const char* agent : {"random", "greedy", "beam"}) {
    SearchSetup setup = small_setup(agent, "benchmark://ops-v0/gmm-1", e->get(), 32);
    Expected<std::unique_ptr<Search>> s = Search::create(setup);
    ASSERT_TRUE(s.ok()) << agent << ": " << s.status().to_string();
    ASSERT_TRUE((*s)->run().ok()) << agent;
    const TrialRecord* best = (*s)->best();
    ASSERT_NE(best, nullptr) << agent;
    EXPECT_LT(best->eval.cost * 100, root[0].cost) << agent << ":\n" << best->trace;
    EXPECT_NE(best->trace.find("bind("), std::string::npos) << agent;
    Expected<EpisodeState> state = (*s)->best_episode_state();
    ASSERT_TRUE(state.ok()) << agent << ": " << state.status().to_string();
    EXPECT_EQ(state->target, "cuda");
    EXPECT_EQ(state->reward_space, "est_gpu_time");
    EXPECT_NEAR(state->reward, std::log(root[0].cost / best->eval.cost), 1e-9) << agent;
    const std::string path = temp_path("gpu.jsonl");
    std::remove(path.c_str());
    ASSERT_TRUE(append_episode_state(path, *state).ok());
    EXPECT_EQ(std::system((kBinary + " validate " + path + " > /dev/null").c_str()), 0) << agent;
    std::remove(path.c_str());
  }
  // The evolutionary agent evolves GPU sketches (tests/cuda_evolutionary_test.cc).
  SearchSetup evolutionary = small_setup("evolutionary", "benchmark://ops-v0/gmm-1", e->get(), 16);
  Expected<std::unique_ptr<Search>> s = Search::create(evolutionary);
  ASSERT_TRUE(s.ok() && (*s)->run().ok());
  ASSERT_NE((*s)->best(), nullptr);
  EXPECT_LT((*s)->best()->eval.cost * 100, root[0].cost);

  // A model values only its own target's schedules.
  EXPECT_EQ(make_search_evaluator("est_cycles", 1, 1, "", "cuda").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_search_evaluator("est_gpu_time", 1, 1, "", "cpu").status().code(), StatusCode::kInvalidArgument);
  // A checkpoint keeps its target: a GPU search does not resume as a cpu one.
  SearchSetup random = small_setup("random", "benchmark://ops-v0/gmm-1", e->get(), 8);
  Expected<std::unique_ptr<Search>> gpu = Search::create(random);
  ASSERT_TRUE(gpu.ok() && (*gpu)->run().ok());
  const std::string ck = temp_path("gpu.ckpt");
  ASSERT_TRUE((*gpu)->save_checkpoint(ck).ok());
  Expected<std::unique_ptr<Search>> resumed = Search::resume(ck, random);
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  Expected<std::unique_ptr<Evaluator>> cpu = make_search_evaluator("runtime", 1, 1, kBinary);
  ASSERT_TRUE(cpu.ok());
  random.evaluator = cpu->get();
  Expected<std::unique_ptr<Search>> wrong = Search::resume(ck, random);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  std::remove(ck.c_str());
}

// Measured GPU searches: on a machine without a GPU every trial fails and says why.
TEST(SearchTest, AMeasuredGpuSearchSaysWhereThereIsNoGpu) {
  Expected<std::unique_ptr<Evaluator>> e = make_search_evaluator("runtime", 1, 1, kBinary, "cuda");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)->target(), "cuda");
  Expected<const Backend*> cuda = find_backend("cuda");
  ASSERT_TRUE(cuda.ok());
  if ((*cuda)->target().can_run) GTEST_SKIP() << "a GPU is present: the measured path is cuda_runner_test's";
  const std::vector<Evaluation> v = (*e)->evaluate({{"benchmark://ops-v0/gmm-1", "", "gpu_tile(C.j, C.i, 32, 8, jo, io, ji, ii)"}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].ok());
  EXPECT_CONTAINS(v[0].status.message(), "no GPU on this machine");
}

// --- real measurements ---------------------------------------------------------------

TEST(SearchTest, EvolutionaryWithRealMeasurements) {
  RunnerEvaluatorOptions ro;
  ro.worker_binary = kBinary;
  ro.threads = 1;
  ro.settings = search_runner_settings();
  ro.settings.repeat = 1;
  ro.settings.min_repeat_ms = 1;
  std::unique_ptr<Evaluator> e = make_runner_evaluator(ro);
  SearchSetup setup = small_setup("evolutionary", "benchmark://ops-v0/gmm-1", e.get(), 12);
  setup.options.batch_size = 6;
  setup.env_context = std::make_shared<EnvContext>();
  setup.env_context->worker_binary = kBinary;
  setup.env_context->threads = 1;
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_EQ((*s)->trials(), 12);
  const TrialRecord* best = (*s)->best();
  ASSERT_NE(best, nullptr);
  EXPECT_GT(best->eval.gflops, 0);
  EXPECT_NE(best->eval.provenance_json.find("worker_pid"), std::string::npos) << best->eval.provenance_json;
  // Measured here, the analytical prior describes this host (est_cycles searches keep
  // the reference machine: BestEpisodeStateValidates).
  EXPECT_EQ((*s)->agent().report().at("analytical_prior.machine"), "host");
  // Every failure is an error class of the runner, never a crash of the search.
  for (const TrialRecord& r : (*s)->records())
    if (!r.eval.ok()) {
      EXPECT_NE(r.eval.status.message(), "") << r.trace;
    }

  Expected<EpisodeState> state = (*s)->best_episode_state();
  ASSERT_TRUE(state.ok()) << state.status().to_string();
  EXPECT_EQ(state->reward_space, "runtime");
  // (unscheduled - best) / unscheduled of two measured runtimes: how much faster the
  // best runs depends on the machine; that it is a fraction of a positive runtime does not.
  EXPECT_TRUE(std::isfinite(state->reward));
  EXPECT_LT(state->reward, 1);
  EXPECT_FALSE(state->provenance_json.empty());
  const std::string path = temp_path("runtime.jsonl");
  std::remove(path.c_str());
  ASSERT_TRUE(append_episode_state(path, *state).ok());
  Expected<std::vector<EpisodeState>> back = read_episode_states(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].actions, state->actions);
  // Validate replays and measures the schedule again; on a shared machine the runtime
  // reward of a 128^3 matmul can move by more than validate's default 0.25, so this
  // checks the replay, not the machine's steadiness.
  EXPECT_EQ(std::system((kBinary + " validate --tolerance 2 " + path + " > /dev/null").c_str()), 0);
  std::remove(path.c_str());
}

// est_cycles behind a first measurement that misleads: the first evaluation of each
// candidate ranks it upside down (a cost of 1e12 / its cost: the slowest look
// fastest), every later one is exact; not deterministic, so a search measures
// finalists with it. Of the finalists the trial measurements pick (the slowest), the
// one the new measurements pick is the fastest, never the first.
class MisleadingFirstEvaluator : public Evaluator {
 public:
  std::string metric() const override { return "runtime"; }
  bool deterministic() const override { return false; }
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out = est_->evaluate(candidates);
    for (size_t i = 0; i < out.size(); ++i) {
      if (seen_[candidates[i].trace]++ > 0 || !out[i].ok()) continue;
      const double misleading = 1e12 / out[i].cost;
      out[i].gflops *= out[i].cost / misleading;
      out[i].cost = misleading;
    }
    return out;
  }
  int evaluations_of(const std::string& trace) const {
    auto it = seen_.find(trace);
    return it == seen_.end() ? 0 : it->second;
  }
  double true_cost(const std::string& trace) const { return est_->evaluate({{kUri, "", trace}})[0].cost; }

  static constexpr const char* kUri = "benchmark://ops-v0/gmm-1";

 private:
  std::unique_ptr<Evaluator> est_ = make_est_cycles_evaluator();
  std::map<std::string, int> seen_;
};

// A measured search measures its best few candidates again and keeps the one whose
// new measurements are best, whatever its trial measurement said; the measurements
// come out of the trial budget, and a checkpoint keeps them.
TEST(SearchTest, FinalistsAreMeasuredAgainAndTheMedianPicksTheBest) {
  {
    MisleadingFirstEvaluator e;
    SearchSetup setup = small_setup("evolutionary", MisleadingFirstEvaluator::kUri, &e, 200);
    setup.finalists = 6;
    Expected<std::unique_ptr<Search>> s = Search::create(setup);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->run().ok());
    const Search& search = **s;
    ASSERT_EQ(search.finalists().size(), 6u);
    EXPECT_EQ(search.trials(), 200 - 6 * 3);
    EXPECT_EQ(search.progress().trials, 200);
    EXPECT_EQ(search.finalist_measurements(), 18);

    // The finalists are the six best trial measurements, in their order.
    std::vector<const TrialRecord*> valid;
    for (const TrialRecord& r : search.records())
      if (r.eval.ok()) valid.push_back(&r);
    std::stable_sort(valid.begin(), valid.end(),
                     [](const TrialRecord* a, const TrialRecord* b) { return a->eval.cost < b->eval.cost; });
    double best_true = std::numeric_limits<double>::infinity(), worst_true = 0;
    for (size_t i = 0; i < 6; ++i) {
      const FinalistRecord& f = search.finalists()[i];
      EXPECT_EQ(f.trial, valid[i]->trial);
      ASSERT_EQ(f.costs.size(), 3u);
      EXPECT_EQ(e.evaluations_of(valid[i]->trace), 4);
      const double t = e.true_cost(valid[i]->trace);
      for (double c : f.costs) EXPECT_DOUBLE_EQ(c, t);
      EXPECT_DOUBLE_EQ(f.median_cost, t);
      best_true = std::min(best_true, t);
      worst_true = std::max(worst_true, t);
    }
    // The pick is the finalist with the lowest true cost, reported at that cost; the
    // first by trial measurement was the slowest.
    ASSERT_LT(best_true, worst_true);
    const TrialRecord* best = search.best();
    ASSERT_NE(best, nullptr);
    EXPECT_DOUBLE_EQ(e.true_cost(best->trace), best_true);
    EXPECT_NE(best->trial, valid[0]->trial);
    EXPECT_DOUBLE_EQ(search.best_evaluation().cost, best_true);
    EXPECT_NEAR(search.best_evaluation().gflops * best_true, best->eval.gflops * best->eval.cost,
                1e-9 * best->eval.gflops * best->eval.cost);

    // A checkpoint keeps the finalists' measurements: resumed, nothing is measured again.
    const std::string ck = temp_path("finalists.ckpt");
    ASSERT_TRUE(search.save_checkpoint(ck).ok());
    Expected<std::unique_ptr<Search>> r = Search::resume(ck, setup);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ((*r)->best()->trial, best->trial);
    ASSERT_TRUE((*r)->run().ok());
    EXPECT_EQ((*r)->trials(), search.trials());
    EXPECT_EQ((*r)->finalist_measurements(), 18);
    EXPECT_EQ(e.evaluations_of(best->trace), 4);
    std::remove(ck.c_str());
  }

  MisleadingFirstEvaluator e;
  SearchSetup setup = small_setup("random", MisleadingFirstEvaluator::kUri, &e, 60);
  setup.finalists = 6;
  // Finalists take at most a tenth of the budget: 60 trials leave room for two.
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_EQ((*s)->finalists().size(), 2u);
  EXPECT_EQ((*s)->trials(), 54);
  // A checkpoint whose finalist is no trial of the search is refused by name.
  {
    Expected<Record> saved = Record::parse((*s)->checkpoint_bytes());
    ASSERT_TRUE(saved.ok());
    Record edited;
    for (const auto& [key, value] : saved->entries()) {
      if (key != "finalist") {
        edited.put(key, value);
        continue;
      }
      Record f;
      f.put_int("trial", 999);
      f.put_double("cost", 1.0);
      edited.put(key, f.bytes());
    }
    const std::string path = temp_path("bad-finalist.ckpt");
    {
      std::ofstream out(path, std::ios::binary);
      out << edited.bytes();
    }
    Expected<std::unique_ptr<Search>> bad = Search::resume(path, setup);
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_CONTAINS(bad.status().message(), "finalist 999 is not a valid trial");
    std::remove(path.c_str());
  }
  // 20 trials leave room for none; a deterministic evaluator needs none.
  setup.budget.max_trials = 20;
  s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_TRUE((*s)->finalists().empty());
  EXPECT_EQ((*s)->trials(), 20);
  std::unique_ptr<Evaluator> est = make_est_cycles_evaluator();
  setup.evaluator = est.get();
  setup.budget.max_trials = 200;
  s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_TRUE((*s)->finalists().empty());
  EXPECT_EQ((*s)->trials(), 200);

  setup.finalists = -1;
  Expected<std::unique_ptr<Search>> bad = Search::create(setup);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.status().message(), "finalists");
  setup.finalists = 4;
  setup.finalist_rounds = 0;
  bad = Search::create(setup);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.status().message(), "finalist_rounds");
}

// --- vendor baselines ----------------------------------------------------------------

// The vendor kernels compute what the benchmark computes, on the same inputs: matmuls
// (batched too), 1-D, grouped, dilated and depthwise convolutions, and a convolution
// with a ReLU epilogue. (No speed is asserted.)
TEST(VendorBaselinesTest, VendorsComputeWhatTheBenchmarkComputes) {
  const char* const uris[] = {"benchmark://ops-v0/gmm-2", "benchmark://ops-v0/gmm-1-b16",
                              "benchmark://ops-v0/c1d-4", "benchmark://ops-v0/c2d-4",
                              "benchmark://ops-v0/grp-4", "benchmark://ops-v0/dil-4",
                              "benchmark://ops-v0/dep-4", "benchmark://resnet50-v0/conv-7x7-512-512-3x3-s1"};
  const std::string libs = vendor_libraries_text();
  const bool have_blas = libs.find("OpenBLAS 0") != std::string::npos;
  const bool have_dnnl = libs.find("oneDNN 2") != std::string::npos || libs.find("oneDNN 3") != std::string::npos;
  for (const char* uri : uris) {
    Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    Expected<CompiledSchedule> ours = compile_schedule(b->program, "");
    ASSERT_TRUE(ours.ok()) << ours.status().to_string();
    Expected<std::vector<VendorKernel>> vendors = vendor_kernels(*b, *ours, 1);
    ASSERT_TRUE(vendors.ok()) << uri << ": " << vendors.status().to_string();
    const bool matmul = std::string(uri).find("gmm") != std::string::npos;
    EXPECT_EQ(vendors->size(), size_t(matmul ? have_blas + have_dnnl : have_dnnl)) << uri;
    ours->run(1);
    for (const VendorKernel& v : *vendors) {
      v.run();
      const HostBuffer* mine = ours->output(v.output);
      ASSERT_NE(mine, nullptr) << uri << " " << v.name;
      EXPECT_LT(max_relative_error(v.result(), *mine), 1e-3) << uri << " " << v.name;
    }
  }
  // Operators no vendor kernel here computes: none, and no error.
  Expected<Benchmark> norm = DatasetRegistry::global().resolve("benchmark://ops-v0/nrm-1");
  Expected<CompiledSchedule> c = compile_schedule(norm->program, "");
  ASSERT_TRUE(c.ok());
  Expected<std::vector<VendorKernel>> none = vendor_kernels(*norm, *c, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// --- the command line ----------------------------------------------------------------

TEST(SearchCommandTest, SearchWritesStatePlotAndCheckpoint) {
  const std::string state = temp_path("cli.jsonl"), plot = temp_path("cli.svg"), ck = temp_path("cli.ckpt"),
                    out = temp_path("cli.out");
  std::remove(state.c_str());
  std::string cmd = kBinary +
                    " search --benchmark benchmark://ops-v0/nrm-1 --agent evolutionary --trials 16 --batch 8"
                    " --population 32 --generations 1 --reward est_cycles --seed 3 --state-out " +
                    state + " --plot " + plot + " --checkpoint " + ck + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream svg(plot);
  std::stringstream ss;
  ss << svg.rdbuf();
  EXPECT_NE(ss.str().find("<polyline"), std::string::npos);
  EXPECT_EQ(std::system((kBinary + " validate " + state + " > /dev/null").c_str()), 0);
  // Resume to 24 trials.
  cmd = kBinary + " search --resume " + ck + " --trials 24 --reward est_cycles --json > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream o(out);
  std::stringstream os;
  os << o.rdbuf();
  EXPECT_NE(os.str().find("\"trials\": 24"), std::string::npos) << os.str();
  for (const std::string& p : {state, plot, ck, out}) std::remove(p.c_str());
}

// --endpoints: the candidates are measured by a running service through the batch
// evaluator; a search against no ready endpoint, or est_cycles with endpoints, is an
// error that says so.
TEST(SearchCommandTest, SearchMeasuresOnAServiceThroughEndpoints) {
  const std::string port_file = temp_path("serve.port"), state = temp_path("remote.jsonl"),
                    out = temp_path("remote.out");
  std::remove(port_file.c_str());
  std::remove(state.c_str());
  const pid_t server = fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    execl(kBinary.c_str(), kBinary.c_str(), "serve", "--port", "0", "--port-file", port_file.c_str(), "--threads", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string port;
  for (int i = 0; i < 600 && port.empty(); ++i) {
    std::ifstream in(port_file);
    std::getline(in, port);
    if (port.empty()) usleep(50000);
  }
  ASSERT_FALSE(port.empty()) << "the service did not start";
  std::string cmd = kBinary + " search --benchmark benchmark://ops-v0/gmm-1 --agent random --trials 8 --threads 1"
                              " --seed 2 --endpoints 127.0.0.1:" + port + " --state-out " + state + " --json > " + out +
                    " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream o(out);
  std::stringstream os;
  os << o.rdbuf();
  EXPECT_NE(os.str().find("\"trials\": 8"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("\"best\": {"), std::string::npos) << os.str();
  EXPECT_EQ(std::system((kBinary + " validate " + state + " > /dev/null").c_str()), 0);
  // The state names where the best was measured: the service's host, CPU and worker,
  // and the endpoint.
  {
    std::ifstream in(state);
    std::stringstream ss;
    ss << in.rdbuf();
    for (const char* field : {"cpu_name", "llvm_version", "hostname", "worker_pid", "settings"})
      EXPECT_CONTAINS(ss.str(), field);
    EXPECT_CONTAINS(ss.str(), "127.0.0.1:" + port);
  }
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);

  auto fails_with = [&](const std::string& args, const std::string& message) {
    std::string c = kBinary + " search --benchmark benchmark://ops-v0/gmm-1 --trials 4 " + args + " > " + out + " 2>&1";
    EXPECT_NE(std::system(c.c_str()), 0) << c;
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find(message), std::string::npos) << ss.str();
  };
  fails_with("--endpoints 127.0.0.1:1 --connect-timeout 1", "no endpoint ready");
  fails_with("--endpoints 127.0.0.1:1 --reward est_cycles", "est_cycles is a model and needs no endpoint");
  for (const std::string& p : {port_file, state, out}) std::remove(p.c_str());
}

}  // namespace
}  // namespace tensorgym
