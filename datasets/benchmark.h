// A benchmark is a program to optimize, named by a URI; a dataset is a named set of
// them (a fixed suite, a generator, or programs users add). See docs/datasets.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/ir/program.h"
#include "support/status.h"

namespace tensorgym {

// One row of a dataset's listing.
struct BenchmarkInfo {
  std::string uri;    // canonical, e.g. "benchmark://ops-v0/gmm-4"
  std::string shape;  // human text, e.g. "N=1024 M=1024 K=1024"
};

struct Benchmark {
  std::string uri;              // canonical, e.g. "benchmark://ops-v0/gmm-4"
  std::string program_text;     // in the program language
  ProgramPtr program;           // parsed; the same pointer every time the URI resolves
  std::string expert_schedule;  // trace text of a hand-written schedule ("@expert"); empty when none
  std::string shape;            // as in BenchmarkInfo
};

// Caps for the built-in suites. They are the defaults except the iteration cap:
// the batch-16 3-D convolutions of ops-v0 run up to 1.06e11 iterations in one stage,
// over the default 2^36. Programs from users (file://, user-v0) get the defaults.
ProgramLimits builtin_program_limits();

// Most a single list() call returns (every size a request controls has a cap).
inline constexpr int64_t kMaxListLimit = 100000;

class Dataset {
 public:
  virtual ~Dataset();

  // "benchmark://ops-v0": the URI prefix of its benchmarks, without the final '/'.
  virtual std::string name() const = 0;
  // One line for listings.
  virtual std::string description() const = 0;
  // Number of benchmarks; -1 for an unbounded generator.
  virtual int64_t size() const = 0;
  // Benchmarks [offset, offset + limit) in the dataset's order. A negative limit
  // means "to the end" (for a generator: kMaxListLimit of them); at most
  // kMaxListLimit rows; an offset past the end gives none.
  virtual std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const = 0;
  // The benchmark called `name` (the URI after "<dataset name>/"). NOT_FOUND, with
  // the full URI in the message, when there is none. Thread-safe.
  virtual Expected<Benchmark> get(std::string_view name) const = 0;
};

// "A: f32[1024, 1024], B: f32[1024, 1024] -> C: f32[1024, 1024]": the shape text of
// programs that come without one (files, user programs).
std::string describe_program_shapes(const Program& program);

// Clamps (offset, limit) of a list() call to [begin, end) over a dataset of `size`
// benchmarks (size < 0: unbounded).
void list_range(int64_t size, int64_t offset, int64_t limit, int64_t* begin, int64_t* end);

}  // namespace tensorgym
