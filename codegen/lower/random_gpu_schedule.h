// Random legal GPU schedules: for a reduction half the time the shared-memory template
// (codegen/lower/gpu_shared_tile.h); otherwise, for each stage, a tiling of its spatial loops over
// blocks and threads (threadIdx.x on the innermost spatial loop most of the time, a
// second thread dimension and a third block dimension sometimes), the rest of its
// loops inside each thread, now and then a reduction split and unrolled, an injective
// producer inlined. Every schedule returned lowers for the target given (its checks
// pass): property tests, random agents and the GPU model's sample draw from it.
#pragma once

#include <cstdint>

#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "support/random.h"

namespace tensorgym {

// A random GPU schedule of `program` that lowers for `target` (a GPU's
// LoweringTarget: Backend::lowering()). Draws up to `max_attempts` candidates;
// FAILED_PRECONDITION with the last lowering error when none lowers (a program whose
// only stage reduces to one value needs a reduction across threads, which GPU
// schedules do not have yet).
Expected<Schedule> random_gpu_schedule(const ProgramPtr& program, const LoweringTarget& target, Rng& rng,
                                       int max_attempts = 16);

}  // namespace tensorgym
