#include "codegen/cuda/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "codegen/analysis/features.h"
#include "codegen/analysis/op_count.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_launch.h"
#include "codegen/lower/gpu_private_buffers.h"

namespace tensorgym::cuda {
namespace {

constexpr int kSectorBytes = 32;  // the unit of global memory traffic
constexpr int kBaseRegisters = 24;

// Every For of the nest by its name (loop names are unique in a lowered nest).
class LoopIndex : public IRVisitor {
 public:
  std::map<std::string, const For*> loops;
  void visit(const For* op) override {
    loops.emplace(op->name, op);
    IRVisitor::visit(op);
  }
};

// One kernel while its stores are added up.
struct KernelWork {
  KernelEstimate estimate;
  double single_thread_cycles = 0;  // work outside any kernel
  double kernel_footprint_bytes = 0;  // one launch, every access
  double unique_bytes = 0;            // all launches, each access's distinct sectors
  int64_t unrolled_lanes = 1;         // the most unrolled or vectorized copies one store has
};

// A warp's threads: `lanes` along threadIdx.x, then `rows` of threadIdx.y when
// threadIdx.x has fewer than 32.
struct WarpShape {
  int tx_loop = -1, ty_loop = -1;
  int64_t lanes = 1, rows = 1;
  int64_t threads() const { return lanes * rows; }
};

// The 32-byte sectors one warp's access touches.
double warp_sectors(const NestAccess& access, const WarpShape& warp, int elem_bytes) {
  if (warp.tx_loop < 0 || warp.threads() <= 1) return 1;
  const int64_t sx = std::llabs(access.index.stride_of(warp.tx_loop));
  const int64_t sy = warp.ty_loop < 0 ? 0 : std::llabs(access.index.stride_of(warp.ty_loop));
  // Along x: a broadcast (stride 0), a contiguous run, or a sector per lane.
  const double row = sx == 0 ? 1 : std::min(double(warp.lanes), std::ceil(double(warp.lanes * sx * elem_bytes) / kSectorBytes));
  if (sy == 0 || warp.rows == 1) return row;  // the rows read the same sectors
  if (sx != 0 && sy == warp.lanes * sx)  // the rows continue the run
    return std::min(double(warp.threads()), std::ceil(double(warp.threads() * sx * elem_bytes) / kSectorBytes));
  return row * double(warp.rows);
}

// The shared-memory wavefronts one warp's access takes: the most distinct 4-byte words
// its lanes touch in one of the 32 banks (lanes reading one word share it: a
// broadcast). Lanes along threadIdx.x, then rows of threadIdx.y, as the warp runs.
// `vector`: the elements each lane reads at once (a vector load of unrolled copies).
int shared_wavefronts(const NestAccess& access, const WarpShape& warp, int elem_bytes, int64_t vector) {
  constexpr int kBanks = 32;
  const int64_t sx = warp.tx_loop < 0 ? 0 : access.index.stride_of(warp.tx_loop);
  const int64_t sy = warp.ty_loop < 0 ? 0 : access.index.stride_of(warp.ty_loop);
  const int64_t words_per_element = std::max(1, elem_bytes / 4);
  std::map<int64_t, std::set<int64_t>> words_in_bank;
  for (int64_t y = 0; y < warp.rows; ++y)
    for (int64_t x = 0; x < warp.lanes; ++x)
      for (int64_t w = 0; w < vector * words_per_element; ++w) {
        const int64_t word = (x * sx + y * sy) * words_per_element + w;
        words_in_bank[((word % kBanks) + kBanks) % kBanks].insert(word);
      }
  size_t most = 1;
  for (const auto& [bank, words] : words_in_bank) most = std::max(most, words.size());
  return int(most);
}

// The registers a thread is estimated to need: a base, one per unrolled or vectorized
// copy of a store (the element it keeps), and the operands a register tile of n of
// them reuses (a row and a column: 2 sqrt(n)), within the GPU's most. On the GEMM
// tiles of docs/gpu.md it stays within 15% of ptxas's counts.
int estimated_registers(const GpuSpec& gpu, int64_t unrolled_lanes) {
  const int64_t operands = 2 * int64_t(std::ceil(std::sqrt(double(unrolled_lanes))));
  return int(std::min<int64_t>(gpu.max_registers_per_thread, kBaseRegisters + unrolled_lanes + operands));
}

// Resident blocks per SM, with the registers a thread is estimated to need and the
// shared memory a block takes.
int resident_blocks(const GpuSpec& gpu, int64_t threads_per_block, int registers, int64_t shared_bytes) {
  const int64_t warps = (threads_per_block + gpu.warp_size - 1) / gpu.warp_size;
  const int64_t by_threads = gpu.max_threads_per_sm / (warps * gpu.warp_size);
  // Registers are allocated per warp in units of 256 (8 per thread).
  const int64_t regs_per_warp = ((int64_t(registers) * gpu.warp_size + 255) / 256) * 256;
  const int64_t by_registers = gpu.registers_per_sm / std::max<int64_t>(1, regs_per_warp * warps);
  const int64_t by_shared = shared_bytes > 0 ? gpu.shared_bytes_per_sm / shared_bytes : gpu.max_blocks_per_sm;
  return int(std::max<int64_t>(0, std::min<int64_t>({gpu.max_blocks_per_sm, by_threads, by_registers, by_shared})));
}

void finish_kernel(KernelWork& w, const GpuSpec& gpu) {
  KernelEstimate& k = w.estimate;
  const double launch = gpu.launch_overhead_s * double(k.launches);
  if (k.single_thread) {
    k.compute_s = w.single_thread_cycles / gpu.clock_hz;
    k.seconds = launch + k.compute_s;
    return;
  }
  k.registers = estimated_registers(gpu, w.unrolled_lanes);
  k.blocks_per_sm = std::max(1, resident_blocks(gpu, k.threads_per_block, k.registers, k.shared_bytes));
  const int64_t warps_per_block = (k.threads_per_block + gpu.warp_size - 1) / gpu.warp_size;
  const double active_warps = double(k.blocks_per_sm * warps_per_block);
  k.occupancy = active_warps / double(gpu.max_threads_per_sm / gpu.warp_size);
  // Waves of blocks over the SMs: the last one may leave SMs idle.
  const double slots = double(gpu.sms) * k.blocks_per_sm;
  const double waves = std::ceil(double(k.blocks) / slots);
  const double sm_use = double(k.blocks) / (waves * slots);
  const double lane_use = double(k.threads_per_block) / double(warps_per_block * gpu.warp_size);
  const double compute_hiding = std::min(1.0, active_warps / gpu.warps_to_hide_compute);
  const double memory_hiding = std::min(1.0, active_warps / gpu.warps_to_hide_memory);
  const double peak_flops = 2.0 * gpu.fp32_lanes_per_sm * gpu.sms * gpu.clock_hz;
  k.compute_s = k.flops / (peak_flops * lane_use * sm_use * compute_hiding);
  // DRAM: each distinct sector once while the kernel's footprint fits L2; past that,
  // the share of the L2 traffic that does not fit comes from DRAM again.
  const double spill = w.kernel_footprint_bytes > double(gpu.l2_bytes)
                           ? 1.0 - double(gpu.l2_bytes) / w.kernel_footprint_bytes
                           : 0.0;
  k.dram_bytes = std::max(w.unique_bytes, k.l2_bytes * spill);
  k.l1_s = k.l1_bytes / (gpu.l1_bytes_per_cycle_per_sm * gpu.sms * gpu.clock_hz * sm_use * memory_hiding);
  k.l2_s = k.l2_bytes / (gpu.l2_bytes_per_s * sm_use * memory_hiding);
  k.dram_s = k.dram_bytes / (gpu.dram_bytes_per_s * sm_use * memory_hiding);
  k.seconds = launch + std::max({k.compute_s, k.l1_s, k.l2_s, k.dram_s});
}

}  // namespace

const GpuSpec& GpuSpec::h100_sxm() {
  static const GpuSpec spec = [] {
    GpuSpec s;
    s.name = "h100-sxm";
    s.arch = "sm_90";
    return s;
  }();
  return spec;
}

const GpuSpec& GpuSpec::h200_sxm() {
  static const GpuSpec spec = [] {
    GpuSpec s;
    s.name = "h200-sxm";
    s.arch = "sm_90";
    s.dram_bytes_per_s = 4.8e12;
    return s;
  }();
  return spec;
}

namespace {

// The most elements of a thread's own part of a block-wide private buffer that stay in
// registers (its accesses at constant offsets once unrolled, as ptxas keeps them).
constexpr int64_t kMaxRegisterElements = 128;

// The buffers of one kernel that live on the SM: those in shared memory, and the
// thread's own parts of private buffers computed outside its thread loops
// (gpu_private_buffers.h), in registers. Returns the shared bytes a block takes.
int64_t on_chip_buffers_of(const For* kernel, std::set<std::string>* shared, std::set<std::string>* registers) {
  struct Finder : IRVisitor {
    std::set<std::string>* shared;
    std::set<std::string>* registers;
    int64_t bytes = 0;
    void visit(const Allocate* op) override {
      if (op->scope == MemoryScope::kShared) {
        shared->insert(op->name);
        bytes += op->num_elements() * op->dtype.bytes();
      } else if (Expected<PrivateLayout> layout = private_layout(op);
                 layout.ok() && layout->uses_threads() && layout->elements_per_thread <= kMaxRegisterElements) {
        registers->insert(op->name);
      }
      IRVisitor::visit(op);
    }
  } finder;
  finder.shared = shared;
  finder.registers = registers;
  finder.visit_stmt(Stmt(kernel));
  return finder.bytes;
}

}  // namespace

RuntimeEstimate estimate_gpu_time(const LoopNest& nest, const GpuSpec& gpu) {
  const NestSummary summary = summarize_nest(nest);
  LoopIndex index;
  if (nest.body.defined()) index.visit_stmt(nest.body);
  std::map<std::string, const For*> kernels;  // by the kernel's loop name
  if (nest.body.defined()) for_each_kernel(nest.body, [&](const For* k) { kernels.emplace(k->name, k); });

  std::set<std::string> shared;        // the buffers in shared memory
  std::set<std::string> in_registers;  // threads' parts of block-wide private buffers
  std::vector<KernelWork> work;  // program order of their first store
  std::map<std::string, size_t> work_of;
  for (const NestStore& store : summary.stores) {
    // The chain: host loops, then the kernel's loop and what it contains.
    size_t first_kernel_loop = store.loops.size();
    for (size_t i = 0; i < store.loops.size(); ++i) {
      if (kernels.count(summary.loops[size_t(store.loops[i])].name)) {
        first_kernel_loop = i;
        break;
      }
    }
    const bool single_thread = first_kernel_loop == store.loops.size();
    const std::string key =
        single_thread ? "#" + summary.buffers[size_t(store.buffer)].name
                      : summary.loops[size_t(store.loops[first_kernel_loop])].name;
    auto [it, added] = work_of.emplace(key, work.size());
    if (added) {
      KernelWork w;
      w.estimate.single_thread = single_thread;
      if (single_thread) {
        w.estimate.stage = summary.buffers[size_t(store.buffer)].name;
      } else {
        const For* kernel = kernels.at(key);
        const GpuLaunch launch = launch_of(kernel);
        w.estimate.stage = std::string(stage_of_loop(kernel->name));
        w.estimate.blocks = launch.blocks[0] * launch.blocks[1] * launch.blocks[2];
        w.estimate.threads_per_block = launch.threads_per_block();
        w.estimate.shared_bytes = on_chip_buffers_of(kernel, &shared, &in_registers);
        for (size_t i = 0; i < first_kernel_loop; ++i)
          w.estimate.launches *= summary.loops[size_t(store.loops[i])].extent;
      }
      work.push_back(std::move(w));
    }
    KernelWork& w = work[it->second];

    double executions = store.fraction;
    for (int l : store.loops) executions *= double(summary.loops[size_t(l)].extent);
    const OpCounts ops = count_expr_ops(store.node->value);
    if (single_thread) {
      w.single_thread_cycles += executions * (gpu.single_thread_cycles_per_op * (ops.flops + ops.int_ops + 1) +
                                              gpu.single_thread_cycles_per_access * double(store.accesses.size()));
      continue;
    }
    w.estimate.flops += executions * ops.flops;

    // Lanes of a warp run along threadIdx.x; the loops that vary within a block and
    // within one launch of the kernel.
    WarpShape warp;
    int64_t unrolled = 1;
    std::vector<char> in_launch(summary.loops.size(), 0), threads(summary.loops.size(), 0);
    std::vector<int> serial;  // the kernel's loops inside a thread, outermost first
    for (size_t i = first_kernel_loop; i < store.loops.size(); ++i) {
      const int l = store.loops[i];
      const NestLoop& loop = summary.loops[size_t(l)];
      auto found = index.loops.find(loop.name);
      const GpuTag tag = found == index.loops.end() ? GpuTag{} : parse_gpu_tag(found->second->thread_tag);
      in_launch[size_t(l)] = 1;
      if (tag.dim == GpuDim::kThread) threads[size_t(l)] = 1;
      if (tag.dim != GpuDim::kBlock && tag.dim != GpuDim::kThread) serial.push_back(l);
      if (tag.dim == GpuDim::kThread && tag.axis == 0) warp.tx_loop = l;
      if (tag.dim == GpuDim::kThread && tag.axis == 1) warp.ty_loop = l;
      // Copies of the store side by side: each element it writes is a register.
      if ((loop.kind == ForKind::kUnrolled || loop.kind == ForKind::kVectorized) &&
          (store.accesses.empty() || store.accesses[0].index.depends_on(l)))
        unrolled *= loop.extent;
    }
    w.unrolled_lanes = std::max(w.unrolled_lanes, unrolled);
    if (warp.tx_loop >= 0) {
      warp.lanes = std::min<int64_t>(gpu.warp_size, summary.loops[size_t(warp.tx_loop)].extent);
      if (warp.ty_loop >= 0)
        warp.rows = std::min<int64_t>((gpu.warp_size + warp.lanes - 1) / warp.lanes,
                                      summary.loops[size_t(warp.ty_loop)].extent);
    }
    const double blocks_run = double(w.estimate.blocks) * double(w.estimate.launches);
    // L1 per resident block: what is left beside the other blocks on the SM.
    const int blocks_per_sm = std::max(1, resident_blocks(gpu, w.estimate.threads_per_block,
                                                           estimated_registers(gpu, unrolled), w.estimate.shared_bytes));
    const double l1_per_block =
        std::max(0.0, double(gpu.l1_bytes_per_sm) / blocks_per_sm - double(w.estimate.shared_bytes));
    for (const NestAccess& access : store.accesses) {
      const int bytes = summary.buffers[size_t(access.buffer)].dtype.element_of().bytes();
      // An accumulator: the stored element, invariant in the innermost loops, stays in
      // a register while they run (the compiler promotes it); it is read and written
      // once per run of them. Unrolled and vectorized loops it depends on are copies
      // side by side, each its own register.
      double promoted = 1;
      if (access.buffer != store.buffer) {
        // A load the unrolled copies share (its index does not vary along them) is
        // loaded once for all of them: the register tile's operand reuse.
        for (size_t i = first_kernel_loop; i < store.loops.size(); ++i) {
          const int l = store.loops[i];
          const ForKind kind = summary.loops[size_t(l)].kind;
          if ((kind == ForKind::kUnrolled || kind == ForKind::kVectorized) && !access.index.depends_on(l))
            promoted *= double(summary.loops[size_t(l)].extent);
        }
      } else {
        for (size_t i = store.loops.size(); i-- > first_kernel_loop;) {
          const int l = store.loops[i];
          const ForKind kind = summary.loops[size_t(l)].kind;
          const bool copies = kind == ForKind::kUnrolled || kind == ForKind::kVectorized;
          if (threads[size_t(l)] || (access.index.depends_on(l) && !copies)) break;
          if (!access.index.depends_on(l)) promoted *= double(summary.loops[size_t(l)].extent);
        }
      }
      const double requested = executions * access.fraction / promoted / double(warp.threads()) *
                               warp_sectors(access, warp, bytes) * kSectorBytes;
      // Shared memory is on the SM: an access costs a 128-byte wavefront per conflict
      // of its lanes on one bank (storage_align's padding removes them), and never
      // reaches L2.
      const std::string& buffer = summary.buffers[size_t(access.buffer)].name;
      if (shared.count(buffer)) {
        // Unrolled copies at neighbouring elements load together (ld.shared.v2 / .v4).
        int64_t vector = 1;
        for (size_t i = first_kernel_loop; i < store.loops.size(); ++i) {
          const int l = store.loops[i];
          const NestLoop& loop = summary.loops[size_t(l)];
          if ((loop.kind == ForKind::kUnrolled || loop.kind == ForKind::kVectorized) &&
              access.index.stride_of(l) == 1)
            vector = std::max<int64_t>(vector, loop.extent % 4 == 0 ? 4 : loop.extent % 2 == 0 ? 2 : 1);
        }
        w.estimate.l1_bytes += executions * access.fraction / promoted / double(vector) / double(warp.threads()) *
                               shared_wavefronts(access, warp, bytes, vector) * 128.0;
        continue;
      }
      if (in_registers.count(buffer)) continue;  // no memory traffic at all
      // A block's threads run together: what they touch while the loops inside a thread
      // from `s` inwards run is re-read from L1 when it fits there, fetched from L2 once
      // per iteration of the loops outside `s`. The outermost such `s` that fits wins.
      double from_l2 = requested;
      std::vector<char> varying = threads;
      double outer_iterations = 1;
      for (int l : serial) outer_iterations *= double(summary.loops[size_t(l)].extent);
      for (size_t s = serial.size() + 1; s-- > 0;) {
        if (s < serial.size()) {
          varying[size_t(serial[s])] = 1;
          outer_iterations /= double(summary.loops[size_t(serial[s])].extent);
        }
        const double bytes_at = access_footprint(summary, access, varying, kSectorBytes).lines * kSectorBytes;
        if (bytes_at > l1_per_block) break;
        from_l2 = std::min(requested, bytes_at * outer_iterations * blocks_run);
      }
      w.estimate.l1_bytes += requested;
      w.estimate.l2_bytes += from_l2;
      const Footprint launch = access_footprint(summary, access, in_launch, kSectorBytes);
      w.kernel_footprint_bytes += launch.lines * kSectorBytes;
      w.unique_bytes += std::min(from_l2, launch.lines * kSectorBytes * double(w.estimate.launches));
    }
  }

  RuntimeEstimate out;
  for (KernelWork& w : work) {
    finish_kernel(w, gpu);
    out.seconds += w.estimate.seconds;
    out.kernels.push_back(std::move(w.estimate));
  }
  return out;
}

}  // namespace tensorgym::cuda
