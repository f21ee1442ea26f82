// The machines the cost model describes: the fixed reference machine, and the host's
// (its vector width, cores and caches read, its gather, scatter and L3 costs measured).
#include <unistd.h>

#include <algorithm>

#include "codegen/analysis/cost_model.h"
#include "support/host_caches.h"
#include "support/host_memory_bandwidth.h"
#include "support/host_vector_costs.h"

namespace tensorgym {

MachineModel MachineModel::reference() { return MachineModel(); }

namespace {

void read_host_caches(MachineModel* m) {
  for (const HostCache& c : host_data_caches()) {
    if (c.line_bytes > 0) m->line_bytes = c.line_bytes;
    if (c.level == 1) {
      m->l1_bytes = c.bytes;
      if (c.ways > 0) m->l1_ways = c.ways;
    } else if (c.level == 2) {
      m->l2_bytes = c.bytes;
      if (c.ways > 0) m->l2_ways = c.ways;
    } else if (c.level == 3) {
      m->l3_bytes = c.bytes;
      if (c.ways > 0) m->l3_ways = c.ways;
    }
  }
}

}  // namespace

MachineModel MachineModel::from_host() {
  int bits = 128;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    bits = 512;
  } else if (__builtin_cpu_supports("avx2")) {
    bits = 256;
  }
#endif
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return from_host(bits, n > 0 ? int(n) : 1);
}

MachineModel MachineModel::from_host(int vector_bits, int cores) {
  MachineModel m;
  m.name = "host";
  m.vector_bits = std::max(vector_bits, 128);
  // LLVM's loop vectorizer prefers 256-bit vectors on AVX-512 parts.
  m.auto_vector_bits = std::min(m.vector_bits, 256);
  m.vector_registers = m.vector_bits >= 512 ? 32 : 16;
  m.vector_gather = m.vector_bits >= 256;
  m.vector_scatter = m.vector_bits >= 512;
  m.cores = std::max(cores, 1);
  read_host_caches(&m);
  // Gather and scatter costs differ severalfold between parts of one instruction set
  // (microcode mitigations), so they are measured, not assumed.
  const HostVectorCosts& v = host_vector_costs();
  if (v.gather_lane_cycles > 0) m.gather_lane_cycles = v.gather_lane_cycles;
  if (v.scatter_lane_cycles > 0) m.scatter_lane_cycles = v.scatter_lane_cycles;
  // Together nearer their sum than the larger of the two: one sequencer runs both.
  const double g = v.gather_lane_cycles, sc = v.scatter_lane_cycles;
  if (g > 0 && sc > 0 && v.gather_scatter_lane_cycles > 0)
    m.indexed_accesses_serialize = v.gather_scatter_lane_cycles > (std::max(g, sc) + g + sc) / 2;
  // L3 bandwidth per core varies severalfold between parts: measured too.
  const HostMemoryBandwidth& bw = host_memory_bandwidth();
  if (bw.l3_bytes_per_cycle > 0) m.l3_bandwidth = bw.l3_bytes_per_cycle;
  return m;
}

}  // namespace tensorgym
