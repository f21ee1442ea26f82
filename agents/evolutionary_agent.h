// The evolutionary agent (Ansor-style): schedules are genomes over the sketches of
// agents/sketch.h (the cpu) or agents/gpu_sketch.h (the cuda target: the analytical
// model below is then est_gpu_time, and a genome that does not lower for the target
// is never proposed); each round it evolves a population ranked by a learned cost model
// (XGBoost on per-store features, agents/cost_model_xgb.h) and proposes the best
// unmeasured candidates for measurement, plus a few random ones (epsilon-greedy).
// After each round the model is retrained from scratch on every measurement so far.
//
// Round by round:
//  1. the first `warmup_random_rounds` rounds (and any round before the model can
//     train) propose random genomes, except `analytical_prior` of the batch: the
//     best-estimated (est_cycles) of 8 random genomes per pick;
//  2. otherwise the initial population is the best measured genomes (up to 1/8 of it)
//     and random genomes; for `generations` generations, parents are drawn with
//     probability proportional to their predicted score and each child is a mutant
//     (probability `mutation_probability`) or a stage-wise crossover of two parents;
//     every valid candidate seen is kept with its score;
//  3. the batch is the `batch_size * analytical_prior` unmeasured candidates with the
//     lowest est_cycles (the analytical model hedges a learned model that has seen few
//     measurements; it helps most on convolutions, where the first rounds' XGBoost
//     ranks worse than chance), then the best-scored by the learned model up to
//     `batch_size * (1 - eps_greedy)`, and the rest drawn at random from the last
//     population.
// The ranking quality of the model on each new batch (measured after the model was
// trained, so held out) is kept: pairwise accuracy and top-k recall.
#pragma once

#include <memory>

#include "agents/search.h"

namespace tensorgym {

std::unique_ptr<SearchAgent> make_evolutionary_agent();

}  // namespace tensorgym
