// GPU sketches for the evolutionary agent on the cuda target (Ansor's and TVM
// MetaSchedule's GPU multi-level tiling). A GpuSketchPlan says which stages take the
// shared-memory template (codegen/lower/gpu_shared_tile.h: reductions with a spatial
// axis); a GpuGenome holds, per stage, the template's choices (blocks x threads x
// outputs per thread per axis, reduction tiles, which inputs are in shared memory, the
// local accumulator, vector width of the shared loads, unrolling of the reduction
// tile) or, for the other stages, the threads per block of the default binding (each
// stage's spatial loops fused over blockIdx.x and threadIdx.x). Injective producers
// are inlined (into a shared copy, or into their reader) where they can be.
//
// Stages render consumers first, so a tile is drawn and rendered on the state its
// consumers left. A genome that does not render, or whose schedule does not lower for
// the target, is the caller's to drop: the agent proposes only schedules that lower.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower/gpu_shared_tile.h"
#include "codegen/schedule/schedule.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

struct GpuSketchPlan {
  ProgramPtr program;
  std::vector<std::string> stages;  // program order
  std::vector<bool> tileable;       // per stage: the shared-memory template applies
  std::vector<std::vector<size_t>> thread_axes;  // per stage: gpu_thread_axes of its extents
};

struct GpuStageGenes {
  bool tiled = false;            // the shared-memory template (tileable stages)
  GpuSharedTile tile;            // its choices (kept when not tiled, for mutations back)
  int64_t threads = 256;         // otherwise: threads per block of the default binding
  bool operator==(const GpuStageGenes&) const = default;
};

struct GpuGenome {
  std::vector<GpuStageGenes> stages;  // parallel to GpuSketchPlan::stages
  bool operator==(const GpuGenome&) const = default;
};

GpuSketchPlan make_gpu_sketch_plan(const ProgramPtr& program);

// A random genome: each tileable stage takes the template nine times in ten.
GpuGenome random_gpu_genome(const GpuSketchPlan& plan, Rng& rng);
// A mutant: a factor of a tile moved between levels of one axis (its product kept), an
// input's shared caching flipped, the local cache, vector width or unrolling changed,
// the template switched on or off, or a default binding's threads.
GpuGenome mutate_gpu_genome(const GpuSketchPlan& plan, const GpuGenome& g, Rng& rng);
// Axis by axis and choice by choice from one parent or the other.
GpuGenome crossover_gpu_genomes(const GpuSketchPlan& plan, const GpuGenome& a, const GpuGenome& b, Rng& rng);

// The schedule a genome stands for; errors when the template refuses a step.
Expected<Schedule> render_gpu_genome(const GpuSketchPlan& plan, const GpuGenome& g);

// Text form (one line per stage) and back.
std::string gpu_genome_to_text(const GpuGenome& g);
Expected<GpuGenome> gpu_genome_from_text(const GpuSketchPlan& plan, const std::string& text);

}  // namespace tensorgym
