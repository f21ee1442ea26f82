// The evolutionary agent on the cuda target (agents/gpu_sketch.h): GPU genomes keep
// their tiles' products through mutation and crossover and read back from their text;
// a search through the GPU model (est_gpu_time) of a GEMM and a 3x3 convolution, small
// enough for the interpreter, proposes only schedules that lower for cuda and compute
// what the program computes, and with a fixed seed finds one at least as good as the
// default GPU schedule.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agents/evaluator.h"
#include "agents/gpu_sketch.h"
#include "agents/search.h"
#include "codegen/lower/default_gpu_schedule.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using cuda_test::parsed_program;

using cuda_test::cuda_backend;


std::string gemm_text() { return matmul_program(0, 64, 96, 32); }
std::string conv_text() {
  return conv_program({.batch = 1, .in_channels = 8, .out_channels = 16, .input_size = {10, 10}, .kernel = 3,
                       .pad = 1});
}

bool products_hold(const GpuSketchPlan& plan, const GpuGenome& g) {
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StageDef* d = plan.program->find_stage(plan.stages[i]);
    const GpuSharedTile& t = g.stages[i].tile;
    if (t.spatial.empty()) continue;
    for (size_t a = 0; a < d->axes.size(); ++a)
      if (t.spatial[a][0] * t.spatial[a][1] * t.spatial[a][2] != d->axes[a].extent) return false;
    for (size_t r = 0; r < d->reduce_axes.size(); ++r)
      if (t.reduce[r][0] * t.reduce[r][1] != d->reduce_axes[r].extent) return false;
  }
  return true;
}

TEST(GpuSketch, MutationsAndCrossoversKeepTheTilesAndTextRoundTrips) {
  for (const std::string& text : {gemm_text(), conv_text()}) {
    GpuSketchPlan plan = make_gpu_sketch_plan(parsed_program(text));
    Rng rng(5);
    GpuGenome a = random_gpu_genome(plan, rng), b = random_gpu_genome(plan, rng);
    int rendered = 0, changed = 0;
    for (int i = 0; i < 200; ++i) {
      GpuGenome c = i % 2 ? mutate_gpu_genome(plan, a, rng) : crossover_gpu_genomes(plan, a, b, rng);
      ASSERT_TRUE(products_hold(plan, c)) << gpu_genome_to_text(c);
      Expected<GpuGenome> back = gpu_genome_from_text(plan, gpu_genome_to_text(c));
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(*back, c);
      changed += !(c == a);
      Expected<Schedule> s = render_gpu_genome(plan, c);
      if (s.ok() && lower(*s, cuda_backend().lowering()).ok()) ++rendered;
      if (i % 10 == 9) a = c;
    }
    EXPECT_GT(changed, 100);
    EXPECT_GT(rendered, 50);  // most children lower; the agent drops the others
  }
}

class TempProgram {
 public:
  explicit TempProgram(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("tensorgym_cuda_evo_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".tg"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempProgram() { std::filesystem::remove(path_); }
  std::string uri() const { return "file://" + path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(CudaEvolutionary, SearchesLegalGpuSchedulesThatMatchAndBeatTheDefault) {
  Expected<std::unique_ptr<Evaluator>> e = make_search_evaluator("est_gpu_time", 1, 1);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  for (const std::string& text : {gemm_text(), conv_text()}) {
    ProgramPtr program = parsed_program(text);
    TempProgram file(text);
    SearchSetup setup;
    setup.benchmark = file.uri();
    setup.agent = "evolutionary";
    setup.seed = 7;
    setup.budget.max_trials = 40;
    setup.evaluator = e->get();
    setup.options.batch_size = 8;
    setup.options.population = 48;
    setup.options.generations = 2;
    setup.options.retrain_rounds = 20;
    Expected<std::unique_ptr<Search>> s = Search::create(setup);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->run().ok());
    ASSERT_EQ((*s)->records().size(), 40u);
    int shared = 0;
    for (const TrialRecord& r : (*s)->records()) {
      SCOPED_TRACE(r.trace);
      EXPECT_TRUE(r.eval.ok()) << r.eval.status.to_string();
      Expected<Schedule> sched = Schedule::from_text(program, r.trace);
      ASSERT_TRUE(sched.ok()) << sched.status().to_string();
      Expected<LoopNest> nest = lower(*sched, cuda_backend().lowering());
      ASSERT_TRUE(nest.ok()) << nest.status().to_string();
      EXPECT_EQ(cuda_test::interpreter_mismatch(*program, *nest), "");
      shared += r.trace.find("shared)") != std::string::npos;
    }
    EXPECT_GT(shared, 0);
    // At least as good as the default GPU schedule, valued by the same model.
    Expected<Schedule> baseline = default_gpu_schedule(program, cuda_backend().lowering());
    ASSERT_TRUE(baseline.ok());
    const std::vector<Evaluation> base = (*e)->evaluate({{file.uri(), "", baseline->trace().to_string()}});
    ASSERT_TRUE(base[0].ok()) << base[0].status.to_string();
    ASSERT_NE((*s)->best(), nullptr);
    EXPECT_LE((*s)->best()->eval.cost, base[0].cost) << (*s)->best()->trace;
    // The same seed proposes the same schedules.
    Expected<std::unique_ptr<Search>> again = Search::create(setup);
    ASSERT_TRUE(again.ok() && (*again)->run().ok());
    EXPECT_EQ((*again)->best()->trace, (*s)->best()->trace);
  }
}

}  // namespace
}  // namespace tensorgym
