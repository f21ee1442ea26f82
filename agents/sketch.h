// Sketches and annotations for the evolutionary agent, after Ansor (Zheng et al., OSDI
// 2020, section 4). A SketchPlan says, per program stage, which rule applies; a Genome
// fills in every choice the rules leave open (tile sizes, compute locations, packing,
// parallel granularity, unrolling, vector axis); render() turns a genome into a
// schedule trace. Rules for CPU:
//
//  - Multi-level tiling "SSRSRS" of a reduction with data reuse (GEMM, convolutions):
//    every spatial axis is split into four levels S0..S3 and every reduction axis into
//    two, R0 and R1. The outer stage O runs S0 S1 and computes the inner stage I
//    at its last loop of level 0 or 1; I runs [S1] R0 S2 R1 S3 over its tile. I is a
//    cache_write of the stage (O copies the accumulated tile out), or, when the stage's
//    only consumer is elementwise (after inlining elementwise epilogues), the stage
//    itself with that consumer as O ("fusion of the consumer").
//  - The innermost S3 loop (of the chosen vector axis) is vectorized, at most 64
//    lanes (powers of two drawn twice as often); O's innermost loop too when it fits.
//    An axis of 4 to 64 with no width of 8 or more (an image row of 7 or 14) may be
//    vectorized whole: always when no axis has a full width, else the last axis a
//    half of the time where vectorizing any full-width axis instead makes a tensor
//    that the last axis reads contiguously strided (a depthwise convolution's channels),
//    never otherwise (a convolution over 7 x 7 vectorizes its output channels).
//    Random genomes keep the register tile (the S3 factors, lanes included) at most
//    kMaxTileElements elements, so that its accumulators fit in registers.
//  - Optionally (flatten), where the vector axis is the last and short (under 16) and
//    its S3 loop is the whole axis, the S3 loops of the last two axes are fused and
//    vectorized together: whole rows of a small image in one vector loop.
//  - Optionally (layout), reorder_storage puts the vector axis innermost in I's buffer
//    and in the packed copies (Ansor's layout rewrite: a convolution can vectorize over
//    output channels with contiguous weights and accumulators). Random genomes whose
//    vector axis is not the last take the layout and pack the tensors that axis indexes
//    away from their innermost dimension (the weights of a convolution over output
//    channels) nine times in ten, since the vector loads are strided otherwise.
//  - Each tensor the tiled stage reads may be packed: a cache_read computed at O's
//    level-0 or level-1 loop or at I's R0 loop (a contiguous panel per tile), or at
//    root (the whole tensor once: small weights).
//  - pragma(auto_unroll_max_step) of 0, 16, 64 or 512 on I's outermost loop.
//  - The first loops of O are fused and run in parallel (granularity: how many).
//  - Elementwise stages that are not outputs are inlined (epilogues always; prologues
//    such as padding may also stay at root or be computed at a tile loop).
//  - rfactor of a reduction with a small spatial extent: the reduction loops fused,
//    split, and the inner part made a vectorized spatial axis of partial sums.
//  - Other stages: outer loops fused and parallel, the innermost split and vectorized.
//
// Rendering applies the structural steps (splits, reorders, cache_write, compute_at
// of I) and fails if one is rejected; optional steps (vectorize, unroll, parallel,
// packing, compute locations) that a state rejects are skipped, so most genomes render.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/schedule.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

enum class StageRule : uint8_t {
  kTiled,      // multi-level tiling (optionally fused into its consumer)
  kEpilogue,   // elementwise, not an output, between a tiled stage and its consumer: inlined
  kPrologue,   // elementwise, not an output: inline, root, or at a loop of a tiled reader
  kFusable,    // the elementwise output a tiled stage may fuse into (else simple)
  kRFactor,    // a reduction with small spatial extent: rfactor or simple
  kSimple,     // parallel outer loops, vectorized inner loop
};

struct StagePlan {
  std::string name;
  StageRule rule = StageRule::kSimple;
  std::vector<std::string> axes;       // spatial axes (names, program order)
  std::vector<int64_t> axis_extents;
  std::vector<std::string> reduce_axes;
  std::vector<int64_t> reduce_extents;
  // kTiled
  std::string consumer;                     // the fusable consumer, or empty
  std::vector<std::string> consumer_axes;   // its axes, parallel to `axes`
  std::vector<std::string> reads;           // tensors read (packing candidates)
  // Per read tensor, per spatial axis: the tensor's dimension that the axis indexes
  // directly (a bare variable), or -1; and the tensor's rank.
  std::vector<std::vector<int>> read_dims;
  std::vector<int> read_ranks;
  // Per read tensor, per spatial axis: whether the tensor's innermost index reads the
  // axis (in any expression: x in P[.., x * 2 + s]).
  std::vector<std::vector<bool>> read_inner;
  // kPrologue: the tiled stage that reads it, if any
  std::string tiled_reader;
};

struct SketchPlan {
  std::vector<StagePlan> stages;  // program order
  const StagePlan* find(const std::string& name) const;
  int index_of(const std::string& name) const;
};

// The rules that apply to each stage of a program.
SketchPlan make_sketch_plan(const Program& program);

// The choices for one stage (only the fields of its rule are used).
struct StageGenes {
  // kTiled
  bool fuse_consumer = true;
  std::vector<std::array<int64_t, 4>> spatial;  // per axis S0..S3, product = extent
  std::vector<std::array<int64_t, 2>> reduce;   // per reduction axis R0, R1
  int compute_level = 1;  // I computed at O's last loop of level 0 or 1
  int vec_axis = 0;       // the spatial axis whose S3 loop is innermost and vectorized
  // per read tensor: 0 none, 1 O level 0, 2 O level 1, 3 I's R0, 4 root (once, whole)
  std::vector<int> pack;
  // reorder_storage: the vector axis innermost in I's buffer and in the packed copies
  // (Ansor's layout rewrite; lets a convolution vectorize over output channels).
  bool layout = false;
  // The vector loop is the last two axes' S3 loops fused (see can_flatten): a small
  // image's rows run as one vector (7 x 7: 49 lanes, 32 + 16 + 1) instead of 7 vectors
  // of 7 lanes each; contiguous where the rows of what it reads are as wide as its own
  // (an inlined same-size padding).
  bool flatten = false;
  // kTiled, kSimple, kRFactor
  int parallel = 0;  // number of outer loops fused and made parallel
  int unroll = 0;    // index into kUnrollSteps
  // kSimple, kRFactor: vector width (a power of two; 1: none)
  int64_t vector = 1;
  // kRFactor
  bool use_rfactor = true;
  int64_t rfactor_inner = 16;  // lanes of the partial sums
  // kPrologue: 0 inline, 1 root, 2 at O level 0, 3 at O level 1, 4 at I's R0
  int location = 0;

  bool operator==(const StageGenes&) const = default;
};

inline constexpr int64_t kUnrollSteps[] = {0, 16, 64, 512};

struct Genome {
  std::vector<StageGenes> stages;  // parallel to SketchPlan::stages
  bool operator==(const Genome&) const = default;
};

// A random genome (random sketch choices, random tile sizes and annotations).
Genome random_genome(const SketchPlan& plan, Rng& rng);
// A mutant: one mutation among tile sizes, parallel granularity, unroll depth, compute
// location, packing, vector axis, and (rarely) the structural choices.
Genome mutate_genome(const SketchPlan& plan, const Genome& g, Rng& rng);
// Stage-wise crossover: each stage's genes from one parent or the other.
Genome crossover_genomes(const SketchPlan& plan, const Genome& a, const Genome& b, Rng& rng);

// The schedule a genome stands for. Errors when a structural step is rejected.
Expected<Schedule> render_genome(const SketchPlan& plan, const Genome& g, const ProgramPtr& program);

// Text form (one line per stage) and back; errors on malformed text or a mismatch
// with the plan.
std::string genome_to_text(const Genome& g);
Expected<Genome> genome_from_text(const SketchPlan& plan, const std::string& text);

}  // namespace tensorgym
