// Program text of the common operators, shared by the suites (ops-v0, resnet50-v0,
// mobilenetv2-v0) and used by the tests at reduced sizes.
//
// Conventions: f32; convolutions are NC[D]HW (NCL for 1-D) with input X, weights W, a
// padding stage P when pad > 0, the convolution Y and, with an activation, its stage
// R. Spatial variables are (d, h, w) on the input, (z, y, x) on the output and
// (q, r, s) on the kernel, the last ones used in 1-D and 2-D. Output sizes are
// (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensorgym {

enum class Activation { kNone, kRelu, kRelu6 };

// A grouped, dilated convolution over 1, 2 or 3 spatial dimensions with a cubic
// kernel. Weights are [out_channels, in_channels / groups, kernel...].
struct ConvSpec {
  int64_t batch = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  std::vector<int64_t> input_size;  // {L}, {H, W} or {D, H, W}
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t dilation = 1;
  int64_t groups = 1;  // must divide both channel counts
  Activation activation = Activation::kNone;
  bool constant_weights = false;  // `input W: ... const`: weights known ahead of the runs
  std::string comment;            // written as the first line, "# comment", when not empty
};
std::vector<int64_t> conv_output_size(const ConvSpec& spec);
std::string conv_program(const ConvSpec& spec);

// Depthwise 2-D convolution (channel multiplier 1): weights [channels, kernel, kernel].
struct DepthwiseSpec {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t height = 1, width = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  Activation activation = Activation::kNone;
  bool constant_weights = false;  // as ConvSpec's
  std::string comment;
};
std::string depthwise_conv2d_program(const DepthwiseSpec& spec);

// Transposed 2-D convolution, weights [in_channels, out_channels, kernel, kernel];
// output size (in - 1) * stride - 2 * pad + kernel. Written as a zero-inserted,
// padded input D (X's pixels at stride `stride`, kernel - 1 - pad zeros around)
// followed by a stride-1 convolution Y with the flipped kernel. Needs pad < kernel.
struct TransposedConvSpec {
  int64_t batch = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t height = 1, width = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  bool constant_weights = false;  // as ConvSpec's
  std::string comment;
};
int64_t transposed_conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad);
std::string transposed_conv2d_program(const TransposedConvSpec& spec);

// Capsule 2-D convolution (matrix capsules, as TVM's conv2d_capsule): every pixel of
// every channel is a capsule x capsule matrix; input [N, Ci, H, W, cap, cap], weights
// [Co, Ci, K, K, cap, cap], and the output matrix is the sum over c, r, s of the
// matrix products input(c, y*S+r, x*S+s) . weight(f, c, r, s).
struct CapsuleConvSpec {
  int64_t batch = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t height = 1, width = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t capsule = 4;
  bool constant_weights = false;  // as ConvSpec's
  std::string comment;
};
std::string capsule_conv2d_program(const CapsuleConvSpec& spec);

// C[i, j] += A[i, k] * B[k, j] with A: n x k, B: k x m; batch > 0 adds a leading
// batch dimension b to all three.
std::string matmul_program(int64_t batch, int64_t n, int64_t m, int64_t k, const std::string& comment = "");

// Y[b] = sqrt(sum over i, j of A[b, i, j]^2): the 2-norm (Frobenius) of each of
// `batch` m x n matrices.
std::string norm_program(int64_t batch, int64_t m, int64_t n, const std::string& comment = "");

// Fully connected layer: Y[n, j] += X[n, k] * W[j, k] (W: out x in), plus a bias
// stage Z[n, j] = Y[n, j] + B[j] when `bias`.
std::string dense_program(int64_t batch, int64_t in_features, int64_t out_features, bool bias,
                          const std::string& comment = "");

}  // namespace tensorgym
