// Per-store program features of a lowered LoopNest in the layout of Ansor (TVM's
// auto_scheduler per-store features): 164 floats for every Store of the nest, in
// program order, plus a fixed-length pooled vector for agents that need one. Every
// column is documented in docs/features.md.
//
// The first half of this header is the access summary both the features and the
// analytical cost model (cost_model.h) read: one walk over the nest that records its
// loops, buffers, allocations and stores, with every flat index decomposed into a sum
// of loop variables times strides (let-bound names expanded; c * (x / c) + x % c, the
// form fused loops leave, folded back to x; other divisions, modulos, min/max and
// non-affine parts kept as terms with a value range).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// ---- access summary -------------------------------------------------------------------

// One For loop of the nest.
struct NestLoop {
  std::string name;
  ForKind kind = ForKind::kSerial;
  std::string thread_tag;  // blockIdx.x, threadIdx.y, vthread, ...; empty when not bound
  int64_t min = 0;     // constant lower bound of the loop's first value
  int64_t extent = 1;  // constant upper bound of the extent (>= 1; 1 when unknown)
  int parent = -1;     // the enclosing loop, -1 at the top level
  int depth = 0;       // number of enclosing loops: the loop's position in a store's chain
  // Statement instances one execution of the loop runs (its extent times those of its
  // body; what pragma(auto_unroll_max_step) compares against).
  double steps = 1;
  // The estimated fraction of its parent's iterations (of the top level's one run) in
  // which the loop runs: the guards between the two (as NestStore::fraction).
  double fraction = 1;
};

// coeff * x, where x is a loop variable or a non-affine part of an index.
struct IndexTerm {
  int64_t coeff = 0;
  int loop = -1;          // the loop whose variable x is; -1 for a non-affine part
  std::vector<int> deps;  // non-affine: the loops whose variables it reads
  int64_t min_value = 0;  // non-affine: the range of x over its loops' full ranges
  int64_t max_value = 0;
  double values = 1;  // non-affine: distinct values x takes over those ranges
  // non-affine: how much x changes when one dep's variable goes from its first value
  // to the next, the others at their first values (parallel to deps)
  std::vector<int64_t> dep_steps;
  // non-affine, x = (v + offset) / divisor or (v + offset) % divisor (`remainder`) with
  // v the variable of its one dep and divisor a constant, the parts of a fused loop;
  // divisor 0 for any other form. Over a run of that loop's iterations that starts
  // on a multiple of n dividing the divisor, a quotient stays put and a remainder
  // steps by one: LLVM's vectorizer proves it for vectors of n lanes.
  int64_t divisor = 0;
  int64_t offset = 0;
  bool remainder = false;
};

// A flat index as constant + sum(terms), one term per loop at most.
struct IndexForm {
  std::vector<IndexTerm> terms;
  int64_t constant = 0;

  bool depends_on(int loop) const;
  // The coefficient of `loop` when it occurs linearly; for a loop that only occurs
  // inside a non-affine part, an estimate (the term's coefficient times the part's
  // average step per iteration); 0 when it does not occur.
  int64_t stride_of(int loop) const;
  // The smallest and largest value over the full ranges of the loops.
  void value_range(const std::vector<NestLoop>& loops, double* lo, double* hi) const;
};

enum class AccessKind : uint8_t { kRead, kWrite };

struct NestAccess {
  int buffer = -1;
  AccessKind kind = AccessKind::kRead;
  IndexForm index;
  // Of the store's executions, the estimated fraction at which this access happens
  // (a load on one side of a select; 1 otherwise).
  double fraction = 1;
};

struct NestStore {
  const Store* node = nullptr;
  int buffer = -1;
  std::vector<int> loops;            // the enclosing loops, outermost first
  std::vector<NestAccess> accesses;  // the write first, then the loads of the value in order
  // Guards (if-then-else around the store): the estimated fraction of the iterations
  // of `loops` at which the store runs, and the loops the guard conditions read.
  // Linear comparisons assume the compared value spreads uniformly over its range;
  // conjunctions assume independence.
  double fraction = 1;
  std::vector<int> guard_loops;
  // Each guard on its own: its fraction and the loops its condition reads.
  struct Guard {
    double fraction = 1;
    std::vector<int> loops;
  };
  std::vector<Guard> guards;
};

struct NestBuffer {
  std::string name;
  DataType dtype;
  int64_t elements = 0;
  std::vector<int64_t> shape;  // arguments: the declared shape; allocations: {elements}
  int alloc = -1;              // index into NestSummary::allocs, -1 for an argument
};

struct NestAlloc {
  int buffer = -1;
  std::vector<int> loops;  // the loops enclosing the Allocate, outermost first
};

struct NestSummary {
  std::vector<NestLoop> loops;  // pre-order
  std::vector<NestBuffer> buffers;
  std::vector<NestAlloc> allocs;
  std::vector<NestStore> stores;  // program order
};

// The loops, buffers and stores of what each run repeats: without the nest's constant
// work (constant_work.h), which a backend does once, ahead of the runs.
NestSummary summarize_nest(const LoopNest& nest);

// Distinct elements and cache lines an access touches while the loops of its store's
// chain at positions >= `level` run (the outer ones fixed). `level` = 0: the whole
// execution; `level` = loops.size(): one instance of the access. Capped at the
// buffer's size. Exact for dense and for strided affine indices; overlapping and
// non-affine indices are estimated.
struct Footprint {
  double elements = 1;
  double lines = 1;
  // Its shape: `runs` contiguous runs of `run` elements, `run_stride` elements apart
  // (0 when there is one run).
  double run = 1;
  double runs = 1;
  double run_stride = 0;
};
Footprint access_footprint(const NestSummary& summary, const NestStore& store, const NestAccess& access, int level,
                           int line_bytes);
// The same with an explicit set of varying loops: loop l varies when varying[l] != 0
// (the others fixed). The cost model uses it to treat a vectorized loop's lanes as
// simultaneous.
Footprint access_footprint(const NestSummary& summary, const NestAccess& access, const std::vector<char>& varying,
                           int line_bytes);

// ---- per-store features --------------------------------------------------------------

inline constexpr int kFeaturesPerStore = 164;
inline constexpr int kFeatureBuffers = 5;                        // buffer slots per store
inline constexpr int kFeaturesFlat = 3 * kFeaturesPerStore + 1;  // 493

using StoreFeatureRow = std::array<float, kFeaturesPerStore>;

struct FeatureOptions {
  int cache_line_bytes = 64;
  bool log_scale = true;  // log2(1 + x) on magnitudes (Ansor's default); one-hots stay 0/1
};

struct NestFeatures {
  std::vector<StoreFeatureRow> rows;  // one per Store, in program order
  std::vector<std::string> stores;    // the buffer each row's Store writes
};

NestFeatures extract_features(const LoopNest& nest, const FeatureOptions& options = {});

// The 164 column names, in order ("float_mad", ..., "B0.acc_type.read", ...).
std::vector<std::string> feature_names();

// A fixed-length vector: for each of the 164 columns its sum, mean and max over the
// stores (the values as extracted, i.e. log-scaled), then log2(1 + number of stores).
// Zeros when the nest has no store.
std::vector<float> pool_features(const NestFeatures& features);
std::vector<float> features_flat(const LoopNest& nest, const FeatureOptions& options = {});
// "sum.float_mad", ..., "mean.float_mad", ..., "max.float_mad", ..., "num_stores".
std::vector<std::string> features_flat_names();

}  // namespace tensorgym
