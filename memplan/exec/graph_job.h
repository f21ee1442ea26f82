// A whole model graph measured as one job, in the current process: what a worker runs
// for a MeasureRequest whose `graph` is set (a GraphExecution, graph_wire.h), so a
// memory plan's runtime is the graph's, in its arena, under the runner's sandbox and
// deadlines.
//
//   instantiate  parse the execution, lay out the plan (layout_graph)  -> INSTANTIATION
//   compile      every operator's kernels, for the plan and for the reference
//                (each tensor in a buffer of its own)                  -> COMPILE
//   -- hooks.on_compiled: the worker reports progress and waits for the go --
//   run, check   the reference and the plan side by side, operator by operator in
//                the plan's order, each operator's output compared as it is written
//                (a tensor overwritten while live shows at the operator that reads
//                it), then the graph's outputs at the end; within the settings' rtol
//                and atol                                              -> WRONG_ANSWER
//   time         time_runs() over whole runs of the plan (inputs written in, every
//                kernel), with the request's settings
//
// Only f32 graphs run (INSTANTIATION otherwise). flops stays 0: operators are counted
// in multiply-adds of their loops, not in flops.
#pragma once

#include "codegen/measure/measure_job.h"
#include "codegen/measure/measurement.h"
#include "memplan/exec/arena_exec.h"

namespace tensorgym {

MeasureResult run_graph_job(const MeasureRequest& request, const MeasureJobHooks& hooks, GraphKernelCache& cache);

}  // namespace tensorgym
