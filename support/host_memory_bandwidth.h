#pragma once
// How fast this host's L3 cache feeds one core, measured: the reference machine's
// 10 bytes a cycle (Emerald Rapids) is a third of what a Zen 4 core streams from its
// L3, and neither CPUID nor sysfs says. Used by the cost model's host machine.

namespace tensorgym {

struct HostMemoryBandwidth {
  // Bytes a core cycle that one core reads streaming from L3 (a buffer four times
  // the L2, at most half the L3), in whole bytes, at least 1; 0 where the caches are
  // unknown, the L3 is not at least four times the L2, or the host is not x86-64
  // with AVX.
  double l3_bytes_per_cycle = 0;
};

// Measured on the first call (tens of milliseconds) and remembered for the process.
const HostMemoryBandwidth& host_memory_bandwidth();

}  // namespace tensorgym
