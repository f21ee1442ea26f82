// A quantized 2-D convolution layer on the accelerator, and the instruction stream
// that computes it for a given tiling: the code the `fpga` target's lowering emits once
// it has read the tiling off a schedule (docs/fpga.md "Convolution streams").
//
// Tensors live in DRAM in the blocked layouts of VTA: input [N/B][C/BI][H][W][B][BI],
// weights [K/BO][C/BI][R][S][BO][BI], output [N/B][K/BO][OH][OW][B][BO], all int8.
// Output = relu?(clip((conv(input, weights)) >> shift, int8)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/isa.h"
#include "codegen/fpga/sample_programs.h"
#include "support/status.h"

namespace tensorgym::fpga {

struct Conv2dLayer {
  std::string name;  // "resnet18.C2"
  int64_t n = 1, c = 64, h = 56, w = 56;  // input
  int64_t k = 64, r = 3, s = 3;           // output channels, kernel
  int64_t stride = 1, pad = 1;
  int shift = 8;
  bool relu = true;
  int64_t oh() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - s) / stride + 1; }
  int64_t macs() const { return n * k * oh() * ow() * c * r * s; }
  bool operator==(const Conv2dLayer&) const = default;
};

// How the layer is cut: an output tile of tile_h x tile_w pixels and tile_k channel
// blocks (of BLOCK_OUT), reduced tile_c input channel blocks (of BLOCK_IN) at a time;
// `virtual_threads` copies of the buffers let the next step's loads (and the previous
// tile's stores) run while the current step computes.
struct Conv2dTiling {
  int64_t tile_h = 14, tile_w = 14, tile_k = 1, tile_c = 1;
  int virtual_threads = 2;
};

std::string to_string(const Conv2dTiling& t);  // "h14 w14 k1 c1 vt2"

// The on-chip entries a tiling needs per virtual thread, and whether they fit.
struct Conv2dFootprint {
  int64_t inp = 0, wgt = 0, acc = 0, uops = 0;
};
Conv2dFootprint footprint(const AccelConfig& config, const Conv2dLayer& layer, const Conv2dTiling& tiling);

// INVALID_ARGUMENT naming the rule a layer or tiling breaks: channels not whole
// blocks, a tile that does not divide its dimension, buffers that do not fit, a
// padding or stride the instructions cannot express.
Status check_tiling(const AccelConfig& config, const Conv2dLayer& layer, const Conv2dTiling& tiling);

// The stream and DRAM image (random int8 input and weights from `seed`), with the
// expected output in its blocked layout; `with_data = false` leaves the image's data
// zero and `expected` empty (for timing alone).
Expected<SampleProgram> make_conv2d_program(const AccelConfig& config, const Conv2dLayer& layer,
                                            const Conv2dTiling& tiling, uint64_t seed = 1, bool with_data = true);

// A layer's input and weights, int8 in the blocked layouts above, row-major: exactly
// the elements of a program's X[N/B, C/BI, H, W, B, BI] and W[K/BO, C/BI, R, S, BO, BI]
// in order (conv2d_program.h).
struct Conv2dData {
  std::vector<int8_t> input, weights;
};

// The same stream with `data` in the DRAM image and `expected` computed from it;
// INVALID_ARGUMENT where the sizes are not the layer's.
Expected<SampleProgram> make_conv2d_program(const AccelConfig& config, const Conv2dLayer& layer,
                                            const Conv2dTiling& tiling, const Conv2dData& data);

// The expert rule (datasets/fpga/*.fpga.sched follow it): two virtual threads, the
// whole output width, as many output rows as fit, one output and one input channel
// block a step. INVALID_ARGUMENT where not even one row fits.
Expected<Conv2dTiling> row_tiling(const AccelConfig& config, const Conv2dLayer& layer);

// The tilings check_tiling accepts (tiles dividing each dimension, 1 or 2 virtual
// threads), for search and tests.
std::vector<Conv2dTiling> legal_tilings(const AccelConfig& config, const Conv2dLayer& layer);

// The layer's roofline on a design: every MAC at BATCH x BLOCK_IN x BLOCK_OUT a cycle,
// and every tensor crossing DRAM once at the port's bandwidth. No stream does better
// than the larger of the two.
struct Roofline {
  int64_t compute_cycles = 0, dram_cycles = 0;
  int64_t bound() const { return compute_cycles > dram_cycles ? compute_cycles : dram_cycles; }
};
Roofline roofline(const AccelConfig& config, const Conv2dLayer& layer);

// ResNet-18's convolutions at batch 1 that the accelerator runs (VTA's evaluation set:
// C2..C11; C1 has 3 input channels).
const std::vector<Conv2dLayer>& resnet18_layers();

}  // namespace tensorgym::fpga
