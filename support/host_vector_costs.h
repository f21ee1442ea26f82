#pragma once
// What a vector gather and a vector scatter cost on this host, measured: the same
// instruction costs 0.8 cycles a lane on one Xeon and 2.8 on another (Ice Lake parts
// under the microcode fix for Gather Data Sampling, which a guest is not told about),
// so neither CPUID nor sysfs can say. Used by the cost model's host machine.

namespace tensorgym {

struct HostVectorCosts {
  // Core cycles per lane of an 8-lane vector gather (AVX2) and scatter (AVX-512) of
  // floats from and to L1, in throughput, to one decimal and at least 0.1; 0 where
  // the host has no such instruction.
  double gather_lane_cycles = 0;
  double scatter_lane_cycles = 0;
  // Per lane of a gather and a scatter of independent data in turn: near the larger
  // of the two where they run on separate ports (Intel: gathers on the load ports,
  // scatters on the store port), their sum and more where both are sequenced by
  // microcode (AMD Zen 4: gather 1.2, scatter 1.5, together 3.3); 0 without scatters.
  double gather_scatter_lane_cycles = 0;
};

// Measured on the first call (tens of milliseconds) and remembered for the process.
const HostVectorCosts& host_vector_costs();

}  // namespace tensorgym
