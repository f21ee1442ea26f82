// Hand-written instruction streams with their DRAM images and expected outputs: what
// the simulators are checked on before (and beside) the compiler's streams, and what
// the RTL testbench and the C++ simulator are compared on.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/isa.h"
#include "support/status.h"

namespace tensorgym::fpga {

// C[M, N] = clip((A[M, K] x W[N, K]^T) >> shift) to int8, ReLU'd where asked; A and W
// int8, uniformly random from `seed`. Output blocks (BLOCK_OUT columns) are computed one
// after another through `slots` weight and accumulator slots: with 1 the next block's
// weights load only when the previous block is done; with 2 they load while it computes
// (the double buffering that virtual threads give).
struct GemmProgramOptions {
  int64_t m = 16, n = 64, k = 64;  // multiples of BATCH, BLOCK_OUT and BLOCK_IN
  int slots = 2;
  int shift = 6;
  bool relu = false;
  uint64_t seed = 1;
};

struct SampleProgram {
  std::vector<Instruction> stream;
  std::vector<uint8_t> dram;     // inputs, weights, micro-ops; the output's place zeroed
  int64_t output_offset = 0;     // byte offset of the output in `dram`
  // The output as it must end up there: entries (row block, column block) of BATCH x
  // BLOCK_OUT, row-major (at batch 1, C row-major).
  std::vector<int8_t> expected;
};

// The GEMMs the simulators' tests run on a configuration: 16x64x64, 3x48x32 and
// 40x16x80, N and K rounded down to the core, with `slots` and `relu`, each its own seed.
std::vector<GemmProgramOptions> sample_gemm_options(const AccelConfig& config, int slots, bool relu);

// INVALID_ARGUMENT where the shapes are not multiples of the core or do not fit on chip.
Expected<SampleProgram> make_gemm_program(const AccelConfig& config, const GemmProgramOptions& options);

// The output region of a DRAM image after a run, as int8.
std::vector<int8_t> output_of(const SampleProgram& program, const std::vector<uint8_t>& dram);

}  // namespace tensorgym::fpga
