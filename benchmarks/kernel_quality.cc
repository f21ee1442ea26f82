// Kernel quality against the vendor libraries, side by side in one process: the
// expert schedules shipped with the suites (ops-v0/gmm-4, the GEMM 1024^3; the ResNet
// 3x3 conv2d of resnet50-v0 with its ReLU) compiled by the LLVM backend, against
// OpenBLAS sgemm and oneDNN matmul / convolution. Everything is timed with the
// runner's protocol, alternating in every round; ratios are medians of per-round
// ratios (benchmarks/baselines/kernel_comparison.h, which also checks every vendor's output
// against ours). OpenBLAS runs with the best core type the host supports
// (benchmarks/baselines/vendor_baselines.h).
//
//   build/bin/kernel_quality [--rounds 5] [--threads 1,2]
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/baselines/kernel_comparison.h"
#include "benchmarks/baselines/side_by_side.h"
#include "benchmarks/baselines/vendor_baselines.h"
#include "codegen/backend/registry.h"
#include "datasets/registry.h"

namespace tensorgym {
namespace {

int run(int rounds, const std::vector<int>& thread_counts) {
  const char* const workloads[][2] = {
      {"gemm 1024^3", "benchmark://ops-v0/gmm-4"},
      {"conv2d 3x3 64->64 56x56 relu", "benchmark://resnet50-v0/conv-56x56-64-64-3x3-s1"}};
  const TargetInfo& t = host_backend().target();
  fmt::print("host: {}, {}, {}-bit vectors, {} cores; LLVM {}; {}\n", t.triple, t.device, t.vector_bits, t.num_cores,
             t.compiler_version, vendor_libraries_text());
  fmt::print("{:<30} {:>7}  {:<9} {:>12} {:>12} {:>8} {:>10}\n", "workload", "threads", "baseline", "ours GF/s",
             "base GF/s", "ratio", "max err");
  for (const auto& [label, uri] : workloads) {
    Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
    if (!b.ok() || b->expert_schedule.empty()) {
      std::cerr << "kernel_quality: " << uri << ": " << (b.ok() ? "no expert schedule" : b.status().to_string()) << "\n";
      return 1;
    }
    for (int threads : thread_counts) {
      CompareOptions co;
      co.threads = threads;
      co.timing.rounds = rounds;
      co.with_expert = false;  // the expert schedule is "ours" here
      Expected<KernelComparison> c = compare_kernels(*b, b->expert_schedule, co);
      if (!c.ok()) {
        std::cerr << "kernel_quality: " << c.status().to_string() << "\n";
        return 1;
      }
      for (const ComparedKernel& k : c->others)
        fmt::print("{:<30} {:7}  {:<9} {:12.1f} {:12.1f} {:8.3f} {:10.2g}\n", label, threads, k.name, c->ours_gflops,
                   k.gflops, k.speedup, k.max_rel_error);
    }
  }
  // Compile time of the GEMM expert schedule.
  Expected<Benchmark> gemm = DatasetRegistry::global().resolve("benchmark://ops-v0/gmm-4");
  std::vector<double> compile_ms;
  for (int i = 0; i < 7; ++i) {
    Expected<CompiledSchedule> c = compile_schedule(gemm->program, gemm->expert_schedule);
    if (!c.ok()) {
      std::cerr << "kernel_quality: " << c.status().to_string() << "\n";
      return 1;
    }
    compile_ms.push_back(c->compile_ms);
  }
  fmt::print("GEMM expert schedule compile time: median {:.1f} ms over {} compiles\n", median_of(compile_ms),
             compile_ms.size());
  return 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  int rounds = 5;
  std::vector<int> threads = {1, 2};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      std::stringstream ss(argv[++i]);
      std::string item;
      while (std::getline(ss, item, ',')) threads.push_back(std::atoi(item.c_str()));
    } else {
      std::cerr << "usage: kernel_quality [--rounds R] [--threads 1,2]\n";
      return 2;
    }
  }
  return tensorgym::run(rounds, threads);
}
