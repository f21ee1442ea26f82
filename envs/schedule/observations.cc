#include "envs/schedule/observations.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "codegen/analysis/features.h"
#include "codegen/analysis/op_count.h"
#include "codegen/analysis/scratch.h"
#include "codegen/backend/registry.h"
#include "codegen/ir/ir_printer.h"
#include "envs/schedule/metrics.h"
#include "envs/schedule/primitive_actions.h"

namespace tensorgym {
namespace {

// The first line of the loop_nest observation: which pipeline the nest comes from.
constexpr std::string_view kLoopNestHeader =
    "# target-independent: the generic passes, before the target's own (tensorgym lower --after limit_code_size)\n";

Expected<Event> loop_nest_text(ScheduleEpisode& e) {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
  std::string s;
  s.reserve(1024);
  s += kLoopNestHeader;
  for (const std::vector<BufferArg>* args : {&nest->inputs.get(), &nest->outputs.get()}) {
    for (const BufferArg& a : *args) {
      s += args == &nest->inputs.get() ? "input " : "output ";
      s += a.name;
      s += ": ";
      s += a.dtype.str();
      if (a.constant) s += " const";
      s += '\n';
    }
  }
  append_to_string(nest->body, &s);
  return Event(std::move(s));
}

// An observation of one target's code or model, asked of an episode on another.
Status other_target(const ScheduleEpisode& e, std::string_view observation, std::string_view its_target,
                    std::string_view instead) {
  return failed_precondition(fmt::format("{} is the {} target's; this episode's target is {}{}", observation,
                                         its_target, e.target, instead.empty() ? "" : fmt::format(" ({})", instead)));
}

// The labels of fpga_cycles: the fpga executable's simulated counts, in this order.
const std::vector<std::string>& fpga_count_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"cycles",          "instructions",   "macs",           "gemm_iterations",
                                  "alu_iterations",  "dram_read_bytes", "dram_write_bytes"};
    for (const char* m : {"load", "compute", "store"})
      for (const char* c : {"instructions", "busy", "dependency_stall", "dram_stall", "idle"})
        n.push_back(std::string(m) + "." + c);
    return n;
  }();
  return names;
}

Expected<Event> fpga_cycles(ScheduleEpisode& e) {
  if (e.target != "fpga") return other_target(e, "fpga_cycles", "fpga", "");
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> exe, e.derived->target_code());
  TG_ASSIGN_OR_RETURN(std::vector<NamedCount> counts, exe->simulated_counts());
  Int64Tensor t{{int64_t(fpga_count_names().size())}, {}};
  for (const std::string& name : fpga_count_names()) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const NamedCount& c) { return c.name == name; });
    if (it == counts.end()) return internal_error("the fpga executable does not count " + name);
    t.values.push_back(it->value);
  }
  return Event(std::move(t));
}

const std::vector<std::string>& fpga_resource_names() {
  static const std::vector<std::string> names = {"luts", "flip_flops", "dsps", "bram18"};
  return names;
}

Expected<Event> fpga_resources(ScheduleEpisode& e) {
  if (e.target != "fpga") return other_target(e, "fpga_resources", "fpga", "");
  TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
  TG_ASSIGN_OR_RETURN(DeviceResources r, backend->resources());
  auto column = [](const std::vector<NamedCount>& counts) -> Expected<Event> {
    Int64Tensor t{{int64_t(fpga_resource_names().size())}, {}};
    for (const std::string& name : fpga_resource_names()) {
      auto it = std::find_if(counts.begin(), counts.end(), [&](const NamedCount& c) { return c.name == name; });
      if (it == counts.end()) return internal_error("the fpga resource report has no " + name);
      t.values.push_back(it->value);
    }
    return Event(std::move(t));
  };
  TG_ASSIGN_OR_RETURN(Event used, column(r.used));
  TG_ASSIGN_OR_RETURN(Event available, column(r.available));
  return Event(EventDict{{"design", Event(r.design)},
                         {"part", Event(r.part)},
                         {"used", std::move(used)},
                         {"available", std::move(available)},
                         {"fits", Event(r.fits)},
                         {"summary", Event(r.summary)}});
}

// The columns of ptxas_stats, one row per kernel.
const std::vector<std::string>& ptxas_columns() {
  static const std::vector<std::string> columns = {"registers",         "shared_bytes",     "stack_bytes",
                                                   "spill_store_bytes", "spill_load_bytes", "threads_per_block",
                                                   "blocks"};
  return columns;
}

Expected<Event> ptxas_stats(ScheduleEpisode& e) {
  if (e.target != "cuda") return other_target(e, "ptxas_stats", "cuda", "");
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> exe, e.derived->target_code());
  Int64Tensor t;
  t.shape = {int64_t(exe->kernels().size()), int64_t(ptxas_columns().size())};
  for (const DeviceKernel& k : exe->kernels()) {
    if (!k.assembled)
      return failed_precondition(
          "ptxas_stats needs the CUDA toolkit's ptxas, which was not found or could not start (set "
          "TENSORGYM_PTXAS or put ptxas on PATH)");
    t.values.insert(t.values.end(), {int64_t(k.registers), k.shared_bytes, k.stack_bytes, k.spill_store_bytes,
                                     k.spill_load_bytes, k.threads[0] * k.threads[1] * k.threads[2],
                                     k.blocks[0] * k.blocks[1] * k.blocks[2]});
  }
  return Event(std::move(t));
}

// The columns of gpu_features, one row per kernel (KernelEstimate's fields).
const std::vector<std::string>& gpu_feature_columns() {
  static const std::vector<std::string> columns = {
      "single_thread", "launches", "blocks",   "threads_per_block", "shared_bytes", "registers", "occupancy", "flops",
      "l1_bytes",      "l2_bytes", "dram_bytes", "compute_s",        "l1_s",         "l2_s",      "dram_s",    "seconds"};
  return columns;
}

Expected<Event> gpu_features(ScheduleEpisode& e) {
  TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
  TG_ASSIGN_OR_RETURN(RuntimeEstimate estimate, backend->estimate_runtime(*nest));
  DoubleTensor t;
  t.shape = {int64_t(estimate.kernels.size()), int64_t(gpu_feature_columns().size())};
  for (const KernelEstimate& k : estimate.kernels)
    t.values.insert(t.values.end(),
                    {k.single_thread ? 1.0 : 0.0, double(k.launches), double(k.blocks), double(k.threads_per_block),
                     double(k.shared_bytes), double(k.registers), k.occupancy, k.flops, k.l1_bytes, k.l2_bytes, k.dram_bytes, k.compute_s,
                     k.l1_s, k.l2_s, k.dram_s, k.seconds});
  return Event(std::move(t));
}

Expected<Event> action_mask(ScheduleEpisode& e) {
  const ScheduleState& state = e.schedule->state();
  std::vector<int64_t> m = e.action_space == ActionSpaceKind::kCursor ? CursorActions::mask(state, e.cursor, e.target_kind)
                                                                      : PrimitiveActions::mask(state, e.target_kind);
  int64_t n = int64_t(m.size());
  return Event(Int64Tensor{{n}, std::move(m)});
}

Expected<Event> inst_count(ScheduleEpisode& e) {
  if (e.target != kDefaultTarget) return other_target(e, "inst_count", "cpu", "its code: ptx, ptxas_stats");
  TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->compilation());
  TG_ASSIGN_OR_RETURN(std::vector<int64_t> counts, host_backend().count_opcodes(r.code_text));
  int64_t n = int64_t(counts.size());
  return Event(Int64Tensor{{n}, std::move(counts)});
}

Expected<Event> features(ScheduleEpisode& e) {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
  NestFeatures f = extract_features(*nest);
  DoubleTensor t;
  t.shape = {int64_t(f.rows.size()), kFeaturesPerStore};
  t.values.reserve(f.rows.size() * kFeaturesPerStore);
  for (const StoreFeatureRow& row : f.rows) t.values.insert(t.values.end(), row.begin(), row.end());
  return Event(std::move(t));
}

Expected<Event> pooled_features(ScheduleEpisode& e) {
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
  std::vector<float> f = features_flat(*nest);
  return Event(DoubleTensor{{int64_t(f.size())}, std::vector<double>(f.begin(), f.end())});
}

std::vector<ObservationDef> make_observations() {
  std::vector<ObservationDef> obs;
  auto text = [](const char* name, const char* description) {
    return Space::string(name).set_default(Event(std::string())).set_description(description);
  };
  auto real = [](const char* name, const char* description, double lo = 0) {
    return Space::double_range(name, lo).set_default(Event(-1.0)).set_description(description);
  };
  obs.push_back({text("program", "the benchmark's program text"),
                 [](ScheduleEpisode& e) -> Expected<Event> { return Event(e.schedule->program().to_text()); }});
  obs.push_back({text("schedule", "the schedule trace, one primitive per line"),
                 [](ScheduleEpisode& e) -> Expected<Event> { return Event(e.schedule->trace().to_string()); }});
  obs.push_back({text("loop_nest",
                      "the lowered loop nest, target-independent: after the generic passes, before the target's own "
                      "(its first line says so)"),
                 loop_nest_text});
  obs.push_back({text("cursor", "the loop the cursor points at (cursor action space)"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   return Event(CursorActions::describe(e.schedule->state(), e.cursor));
                 }});
  obs.push_back({Space::int64_box("action_mask", {-1}, 0, 1)
                     .set_default(Event(Int64Tensor{{0}, {}}))
                     .set_description("1 for each action of the episode's action space that is likely applicable"),
                 action_mask});
  obs.push_back({Space::double_box("features", {-1, kFeaturesPerStore})
                     .set_labels(feature_names())
                     .set_default(Event(DoubleTensor{{0, kFeaturesPerStore}, {}}))
                     .set_description("per-store features in the Ansor layout, log-scaled (docs/features.md)"),
                 features});
  obs.push_back({Space::double_box("features_flat", {kFeaturesFlat})
                     .set_labels(features_flat_names())
                     .set_default(Event(DoubleTensor{{kFeaturesFlat}, std::vector<double>(kFeaturesFlat, 0.0)}))
                     .set_description("features pooled over stores: sum, mean, max per column, then the store count"),
                 pooled_features});
  obs.push_back({real("est_cycles", "cycles estimated by the analytical cost model (docs/cost_model.md)"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   if (e.target != kDefaultTarget) return other_target(e, "est_cycles", "cpu", "its model: est_gpu_time");
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
                   return Event(estimated_cycles(*nest));
                 }});
  obs.push_back({real("est_cycles_host", "est_cycles with this host's caches, cores and measured gather costs")
                     .set_deterministic(false)
                     .set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
                   return Event(estimated_cycles_on_host(*nest));
                 }});
  obs.push_back({real("est_gpu_time",
                      "seconds the cuda target's GPU model estimates for one run on an H100 SXM (docs/gpu.md); work "
                      "no bound loop holds counts as one GPU thread"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
                   TG_ASSIGN_OR_RETURN(RuntimeEstimate estimate, backend->estimate_runtime(*nest));
                   return Event(estimate.seconds);
                 }});
  obs.push_back({Space::double_box("gpu_features", {-1, int64_t(gpu_feature_columns().size())})
                     .set_labels(gpu_feature_columns())
                     .set_default(Event(DoubleTensor{{0, int64_t(gpu_feature_columns().size())}, {}}))
                     .set_description("per kernel, in program order, the GPU model's view (cuda target): launch, "
                                      "estimated registers and occupancy, flops, L1/L2/DRAM bytes and times"),
                 gpu_features});
  obs.push_back({Space::int64_range("peak_scratch_bytes", 0)
                     .set_default(Event(int64_t(-1)))
                     .set_description("largest total of local buffers live at once, counting parallel copies"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
                   int threads = e.context->threads > 0 ? e.context->threads : host_backend().target().num_cores;
                   return Event(int64_t(peak_scratch_bytes(*nest, threads)));
                 }});
  obs.push_back({real("flops", "floating-point operations of the program (multiply-add = 2)"),
                 [](ScheduleEpisode& e) -> Expected<Event> { return Event(count_ops(e.schedule->program()).flops); }});
  obs.push_back({text("llvm_ir", "the optimized LLVM IR of the compiled kernel").set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   if (e.target != kDefaultTarget) return other_target(e, "llvm_ir", "cpu", "its code: ptx");
                   TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->compilation());
                   return Event(r.code_text);
                 }});
  obs.push_back({text("ptx", "the PTX of the cuda target's kernels (LLVM's NVPTX backend, sm_90)")
                     .set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   if (e.target != "cuda") return other_target(e, "ptx", "cuda", "");
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> exe, e.derived->target_code());
                   return Event(exe->code_text());
                 }});
  obs.push_back({Space::int64_box("ptxas_stats", {-1, int64_t(ptxas_columns().size())}, 0, Space::kInf)
                     .set_labels(ptxas_columns())
                     .set_platform_dependent(true)
                     .set_default(Event(Int64Tensor{{0, int64_t(ptxas_columns().size())}, {}}))
                     .set_description("per kernel, in launch order: ptxas's registers per thread, shared, stack and "
                                      "spill bytes, and its launch (threads per block, blocks)"),
                 ptxas_stats});
  obs.push_back({text("fpga_instructions",
                      "the fpga target's instruction stream, one instruction a line, after a line naming the layer "
                      "and its tiling (docs/fpga.md \"ISA\")"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   if (e.target != "fpga") return other_target(e, "fpga_instructions", "fpga", "");
                   TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> exe, e.derived->target_code());
                   return Event(exe->code_text());
                 }});
  obs.push_back({Space::int64_box("fpga_cycles", {int64_t(fpga_count_names().size())}, 0, Space::kInf)
                     .set_labels(fpga_count_names())
                     .set_default(Event(Int64Tensor{{int64_t(fpga_count_names().size())},
                                                    std::vector<int64_t>(fpga_count_names().size(), 0)}))
                     .set_description("the fpga target's simulated run (fsim, or the RTL with runner.simulator=rtl): "
                                      "cycles, instructions, MACs, DRAM bytes, and per module (load, compute, store) "
                                      "its instructions and cycles busy, stalled on a dependency, stalled on DRAM "
                                      "and idle"),
                 fpga_cycles});
  obs.push_back({Space::dict("fpga_resources",
                             {Space::string("design"), Space::string("part"),
                              Space::int64_box("used", {4}, 0, Space::kInf).set_labels(fpga_resource_names()),
                              Space::int64_box("available", {4}, 0, Space::kInf).set_labels(fpga_resource_names()),
                              Space::boolean("fits"), Space::string("summary")})
                     // yosys's counts are its version's; and the call is slow (the service
                     // runs it off its fast path, as it runs measurements).
                     .set_platform_dependent(true)
                     .set_description("what yosys's synthesis of the fpga target's design uses of its part (LUTs, "
                                      "flip-flops, DSP48E1, block RAM in 18 Kb halves) and whether it fits; the "
                                      "first call may synthesize (a minute or two)"),
                 fpga_resources});
  const std::vector<std::string>& opcodes = host_backend().opcode_names();
  obs.push_back({Space::int64_box("inst_count", {int64_t(opcodes.size())}, 0, Space::kInf)
                     .set_labels(opcodes)
                     .set_platform_dependent(true)
                     .set_default(Event(Int64Tensor{{int64_t(opcodes.size())}, std::vector<int64_t>(opcodes.size(), 0)}))
                     .set_description("instructions per LLVM opcode in the optimized module (labels: opcode names)"),
                 inst_count});
  obs.push_back({real("runtime", "seconds per run, median of the measured repeats (sandboxed worker)")
                     .set_deterministic(false)
                     .set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->measurement());
                   return Event(r.runtime.median_s);
                 }});
  obs.push_back({real("gflops", "flops / median runtime, in GFLOP/s").set_deterministic(false).set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->measurement());
                   return Event(r.gflops);
                 }});
  obs.push_back({real("compile_time", "seconds to compile the kernel").set_deterministic(false).set_platform_dependent(true),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->measurement());
                   return Event(r.compile_ms / 1e3);
                 }});
  obs.push_back({Space::boolean("correct")
                     .set_default(Event(false))
                     .set_platform_dependent(true)
                     .set_description("the compiled kernel's outputs match the reference evaluator (where the "
                                      "target cannot run here: the reference interpreter runs its nest)"),
                 [](ScheduleEpisode& e) -> Expected<Event> {
                   TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
                   if (!backend->target().can_run) {
                     TG_ASSIGN_OR_RETURN(bool correct, e.derived->interpreted_correct());
                     return Event(correct);
                   }
                   Expected<MeasureResult> r = e.derived->measurement();
                   if (!r.ok()) {
                     if (r.status().message().rfind("WRONG_ANSWER", 0) == 0) return Event(false);
                     return r.status();
                   }
                   return Event(r->correct);
                 }});
  return obs;
}

}  // namespace

const std::vector<ObservationDef>& schedule_observations() {
  // Never destroyed: threads of a server still running at exit may read it.
  static const auto* obs = new std::vector<ObservationDef>(make_observations());
  return *obs;
}

const ObservationDef* find_schedule_observation(const std::string& name) {
  for (const ObservationDef& o : schedule_observations())
    if (o.space.name() == name) return &o;
  return nullptr;
}

}  // namespace tensorgym
