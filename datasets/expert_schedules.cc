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
# The padded input P is built once; the convolution Y is computed into a register
# tile of 8 output channels x 32 columns per output row (Y computed at R.xo), with the
# reduction over c, r, s outside the tile; the ReLU stage copies the tile out.
split(R.f, 8, fo, fi); split(R.x, 32, xo, xi)
reorder(R, n, fo, y, xo, fi, xi)
compute_at(Y, R.xo)
reorder(Y, n, y, c, r, s, f, x)
unroll(Y.f); vectorize(Y.x)
vectorize(R.xi); parallel(R.fo)
)";

}  // namespace tensorgym
