// A schedule of a benchmark measured side by side, in this process, with the
// benchmark's expert schedule (when it has one) and the vendor libraries that compute
// the same operator (benchmarks/baselines/vendor_baselines.h): what `tensorgym suite`, `tensorgym
// search --vs-vendor` and the benchmarks/ programs report.
//
//   Expected<KernelComparison> c = compare_kernels(benchmark, best_trace, {.threads = 1});
//   c->ours_gflops; c->vendor_speedup();  // ours' throughput over the fastest vendor's
#pragma once

#include <string>
#include <vector>

#include "benchmarks/baselines/side_by_side.h"
#include "benchmarks/baselines/tvm_kernel.h"
#include "datasets/benchmark.h"

namespace tensorgym {

struct ComparedKernel {
  std::string name;         // "expert", "OpenBLAS", "oneDNN", a peer's name ("MetaSchedule")
  std::string role;         // "expert", "vendor" or "peer"
  double gflops = 0;        // the benchmark's flops over the median time
  double speedup = 0;       // ours' throughput over this one's: median of per-round t_this / t_ours
  double max_rel_error = 0; // largest |this - ours| / max(1, |ours|) over the output
};

struct KernelComparison {
  double ours_gflops = 0;
  double flops = 0;
  int threads = 1;
  int rounds = 0;
  std::vector<ComparedKernel> others;  // the expert schedule first (if any), then the vendors, then the peers

  const ComparedKernel* expert() const;
  // The peer named `name`, or null.
  const ComparedKernel* peer(const std::string& name) const;
  // The fastest vendor kernel, or null when none computes this benchmark.
  const ComparedKernel* fastest_vendor() const;
};

struct CompareOptions {
  int threads = 1;  // for every contender; 0: every core
  SideBySideOptions timing{.rounds = 3};
  bool with_expert = true;
  bool with_vendors = true;
  // Kernels another compiler built for the same benchmark (TVM's MetaSchedule),
  // loaded into this process (benchmarks/baselines/tvm_kernel.h) and timed as more
  // contenders. Each takes ours' inputs, in the program's order, then its outputs;
  // with a prepack, one input is packed once first and `main` takes the packed copy.
  struct Peer {
    std::string name;
    TvmLibraries libs;
    std::string module_path;
    TvmPrepack prepack;
  };
  std::vector<Peer> peers;
  // A vendor whose output differs from ours by more than this (relative) is an error:
  // the two would not be computing the same thing.
  double tolerance = 1e-3;
};

// Compiles `trace` (and the expert schedule), makes the vendor kernels and loads the
// peers, runs each once and checks its output against ours, then times them all side
// by side. Errors: the schedule does not compile, a vendor or a peer computes
// something else (INTERNAL), a peer cannot be loaded or refuses the buffers (its
// loader's status, naming the peer).
Expected<KernelComparison> compare_kernels(const Benchmark& benchmark, const std::string& trace,
                                           const CompareOptions& options);

}  // namespace tensorgym
