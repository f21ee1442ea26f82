// Copies of the expert schedules in datasets/ops/ (see suites.h). Keep them identical
// to the files: datasets_test compares them byte for byte.
#include "datasets/suites.h"

namespace tensorgym {

const char* const kGemm1024ExpertSchedule = R"(# Expert schedule for f32 GEMM 1024^3 (stage C).
# Register tile of 4 rows x 64 columns accumulated in CL across the whole k loop
# (4 x 4 zmm / 4 x 8 ymm accumulators), a contiguous 1024 x 64 panel BP of B packed
# once per column block (the cache_read that keeps B's 4 KiB row stride from
# thrashing cache sets), column blocks split across threads.
split(C.i, 4, io, ii); split(C.j, 64, jo, ji)
reorder(C, jo, io, ii, ji)
cache_write(C, CL); compute_at(CL, C.io)
reorder(CL, k, i, j)
unroll(CL.i); vectorize(CL.j)
cache_read(B, CL, BP); compute_at(BP, C.jo)
vectorize(C.ji)
parallel(C.jo)
)";

const char* const kConv2dResnet3x3ExpertSchedule = R"(# Expert schedule for the ResNet 3x3 conv2d (64 -> 64 channels, 56 x 56, pad 1, ReLU).
# The padded input P is built once and the weights are packed once into WP laid out
# [c][r][s][f], so 16 output channels are one contiguous vector load. The convolution
# Y is computed per output row into a register tile of 14 columns x 16 output channels
# (Y computed at R.xo, stored [x][f]: x unrolled into 14 accumulators, f vectorized),
# with the reduction over c, r, s outside the tile; the ReLU stage copies it out.
split(R.f, 16, fo, fi); split(R.x, 14, xo, xi)
reorder(R, n, fo, y, xo, fi, xi)
compute_at(Y, R.xo)
reorder(Y, n, y, c, r, s, x, f)
unroll(Y.x); vectorize(Y.f)
cache_read(W, Y, WP); reorder_storage(WP, ax1, ax2, ax3, ax0)
reorder_storage(Y, n, y, x, f)
vectorize(R.xi); parallel(R.fo)
)";

}  // namespace tensorgym
