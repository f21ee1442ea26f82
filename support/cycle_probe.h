#pragma once
// Timing a probe in core cycles: against a chain of dependent integer adds (one
// cycle each on every x86 core), run in turns with the probe, so that both go
// through the same slow spells of a shared machine. Used by the host's measured
// vector costs and memory bandwidth.
#include <cstdint>
#include <functional>

namespace tensorgym {

// Cycles per unit of work of `probe` (which does `units` units a run): the fastest
// run of the probe over the fastest run of the add chain, taken in turns until
// neither has got faster for 60 turns (about 20 ms), at most 400. 0 where the host
// is not x86-64 (no chain to time against).
double probe_cycles_per_unit(const std::function<void()>& probe, double units);

}  // namespace tensorgym
