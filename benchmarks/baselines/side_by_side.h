// Timing kernels side by side in one process: a schedule compiled here with its
// buffers, and several contenders (our kernels, vendor libraries) timed alternately
// round after round with the runner's protocol (codegen/measure/timing.h), so that
// noise on a shared machine hits all of them alike. Ratios are medians of per-round
// ratios, never ratios of medians taken at different times.
//
//   CompiledSchedule ours = *compile_schedule(benchmark.program, best_trace);
//   SideBySide t = *time_side_by_side({{"ours", [&] { ours.run(1); }}, {"OpenBLAS", blas}}, 5);
//   double vs_blas = t.speedup_of_first[1];  // ours' throughput over OpenBLAS'
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/ir/program.h"
#include "support/status.h"

namespace tensorgym {

// A schedule compiled in this process, with random inputs and output buffers.
struct CompiledSchedule {
  ProgramPtr program;
  std::shared_ptr<const Executable> kernel;
  std::vector<HostBuffer> inputs, outputs;  // in the program's order
  std::vector<std::string> output_names;
  std::vector<void*> args;
  double flops = 0;     // of the program (codegen/analysis/op_count.h)
  double compile_ms = 0;

  // The kernel's constant work, done once (Executable::prepare); null where it has none.
  std::shared_ptr<const PreparedConstants> prepared;

  void run(int threads) const { kernel->run_prepared(prepared.get(), args.data(), threads); }
  // The output named `name`, or null.
  const HostBuffer* output(const std::string& name) const;
};

// Parses `trace` (empty: the unscheduled program), lowers and compiles it; inputs are
// make_random_inputs(program, input_seed). Errors say which step failed.
Expected<CompiledSchedule> compile_schedule(const ProgramPtr& program, const std::string& trace,
                                            uint64_t input_seed = 1);

struct Contender {
  std::string name;
  std::function<void()> run;
};

struct SideBySide {
  std::vector<double> median_s;          // per contender: median over rounds of its per-run median
  std::vector<double> speedup_of_first;  // per contender: median over rounds of t_i / t_0 (1 for the first)
};

struct SideBySideOptions {
  int rounds = 5;
  int repeat = 5;            // timed samples per contender per round
  double min_repeat_ms = 50;
};

// Times every contender once per round, in order, for `rounds` rounds.
// INVALID_ARGUMENT without contenders; the timing protocol's errors otherwise.
Expected<SideBySide> time_side_by_side(const std::vector<Contender>& contenders, const SideBySideOptions& options);

// Largest |a - b| / max(1, |b|) over two buffers of equal size (f32); infinity when
// their element counts differ.
double max_relative_error(const HostBuffer& a, const HostBuffer& b);

double median_of(std::vector<double> v);
double geometric_mean(const std::vector<double>& v);  // of the positive values; 0 when none

}  // namespace tensorgym
