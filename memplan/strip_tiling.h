// Hard offset instances with a known optimum: perfect tilings of a strip whose cuts
// move over time. The arena [0, width) is cut into pieces at time 0; at each later
// event a run of adjacent pieces ends and the interval they covered is cut again
// into new pieces that start then. Every moment is tiled exactly, so the live bytes
// equal `width` throughout and the optimum is `width`, the live lower bound. The
// planted offsets are a witness; buffers are shuffled so that their order gives
// nothing away. Generated from a seed, for tests and benchmarks; nothing here is
// fitted to any instance set.
#pragma once

#include <cstdint>

#include "memplan/instance.h"

namespace tensorgym {

struct StripTilingOptions {
  uint64_t seed = 1;
  int buffers = 300;           // about this many (the last event may add a few)
  int64_t width = 1 << 20;     // the optimum arena, in bytes
  int64_t granule = 1024;      // every cut is a multiple of this (width a multiple too)
  int initial_pieces = 6;      // pieces at time 0
  int max_run = 4;             // pieces ending together at one event, at most (>= 2)
  int max_new_pieces = 4;      // pieces replacing them, at most (>= 2)
};

struct StripTiling {
  Instance instance;
  Offsets witness;      // an optimal plan: the planted offsets
  int64_t optimum = 0;  // == width
};

// INVALID_ARGUMENT when the options cannot make a tiling (width not a positive
// multiple of granule, too few granules for the pieces, counts out of range).
Expected<StripTiling> make_strip_tiling(const StripTilingOptions& options);

}  // namespace tensorgym
