// Reading the accelerator's convolution layer off a program: the programs of
// datasets/fpga/ (docs/datasets.md "fpga") are quantized int8 convolutions written in
// VTA's blocked layouts, which are the row-major layouts of the program's tensors:
//
//   input X: i8[N/B, C/BI, H, W, B, BI]
//   input W: i8[K/BO, C/BI, R, S, BO, BI]
//   P[n, c, h, w, b, i] = select(h >= pad && h <= H + pad - 1 && w >= pad && w <= W + pad - 1,
//                                X[n, c, h - pad, w - pad, b, i], 0) where h in 0..H+2pad, w in 0..W+2pad
//   C[n, k, y, x, b, o] += i32(P[n, c, y * stride + r, x * stride + s, b, i]) * i32(W[k, c, r, s, o, i])
//   Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 2^shift, 127), lo))
//
// with lo 0 (ReLU) or -128 (int8's range); the padding stage only where pad > 0 (C then
// reads X), `min(max(..., lo), 127)` and a missing `/ 1` accepted. Y's row-major layout
// [N/B, K/BO, OH, OW, B, BO] is the stream's output layout, so a program's tensors are
// the DRAM image's regions as they are.
#pragma once

#include <string>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/conv2d_stream.h"
#include "codegen/ir/program.h"
#include "support/status.h"

namespace tensorgym::fpga {

// The layer `program` computes on `config` (name empty). FAILED_PRECONDITION naming
// the stage and what the accelerator cannot run for every other form: not three (or
// two) stages of the shapes above, tensor blocks that are not the design's BATCH x
// BLOCK_IN x BLOCK_OUT, non-int8 operands, indices other than the conv's, different
// strides or padding across rows and columns, padding that is not symmetric or not
// zero, an output extent that is not the layer's, a divisor that is not a power of two,
// a clamp other than ReLU's or int8's.
// `operands`, where given, receives the names of the inputs the conv reads as its image
// and its weights.
struct Conv2dOperands {
  std::string input, weights;
};
Expected<Conv2dLayer> recognize_conv2d(const Program& program, const AccelConfig& config,
                                       Conv2dOperands* operands = nullptr);

// The program of that form for `layer` blocked for `config` (no comment line; the
// padding stage only where pad > 0): recognize_conv2d's inverse.
std::string conv2d_program_text(const Conv2dLayer& layer, const AccelConfig& config);

}  // namespace tensorgym::fpga
