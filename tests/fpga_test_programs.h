// Programs the accelerator's tests share.
#pragma once

namespace tensorgym::fpga_test {

// A 3x3 convolution in VTA's blocked layout (blocks of 16 channels, batch 1), padded,
// requantized to int8 with ReLU: the form of datasets' ResNet layers, small.
inline constexpr const char* kBlockedConv = R"(
input X: i8[1, 2, 6, 6, 1, 16]
input W: i8[2, 2, 3, 3, 16, 16]
P[n, c, h, w, b, i] = select(h >= 1 && h <= 6 && w >= 1 && w <= 6, X[n, c, h - 1, w - 1, b, i], 0) where h in 0..8, w in 0..8
C[n, k, y, x, b, o] += i32(P[n, c, y + r, x + s, b, i]) * i32(W[k, c, r, s, o, i]) where y in 0..6, x in 0..6
Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 64, 127), 0))
)";

}  // namespace tensorgym::fpga_test
