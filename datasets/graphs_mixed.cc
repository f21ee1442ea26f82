// benchmark://graphs-v0/mixed_<seed>: random but realistic model graphs for training
// memory planners. A stem, then three or four stages of blocks drawn from a seed:
// residual (basic or bottleneck, projection where the shape changes), branchy
// (inception-like parallel convolution chains joined by a concatenation or a sum),
// and attention (single-head self-attention over the stage's pixels with a residual
// and a layer norm). Stages downsample by a strided convolution or a pooling; widths,
// depths and branch counts vary with the seed. The mix is what makes operator order
// and in-place reuse matter: long skips, wide fan-outs and quadratic score tensors.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "datasets/graphs.h"
#include "memplan/graph_builder.h"
#include "support/random.h"

namespace tensorgym {
namespace {

int conv_relu(GraphBuilder& b, int x, int64_t channels, int64_t k, int64_t stride = 1) {
  return b.unary("relu", b.conv2d(x, channels, k, stride, k / 2));
}

int residual_block(GraphBuilder& b, Rng& rng, int x, int64_t channels) {
  const int64_t in = b.shape(x)[1];
  int y;
  if (rng.chance(0.5)) {  // basic: two 3x3
    y = b.conv2d(conv_relu(b, x, channels, 3), channels, 3, 1, 1);
  } else {  // bottleneck: 1x1 down, 3x3, 1x1 up
    const int64_t mid = std::max<int64_t>(8, channels / 4);
    y = b.conv2d(conv_relu(b, conv_relu(b, x, mid, 1), mid, 3), channels, 1, 1, 0);
  }
  const int shortcut = in == channels ? x : b.conv2d(x, channels, 1, 1, 0);
  return b.unary("relu", b.binary("add", y, shortcut));
}

int branchy_block(GraphBuilder& b, Rng& rng, int x, int64_t channels) {
  const int branches = int(rng.range(2, 4));
  const bool concat = rng.chance(0.6);
  const int64_t width = concat ? std::max<int64_t>(8, channels / branches) : channels;
  std::vector<int> outs;
  for (int i = 0; i < branches; ++i) {
    int y = x;
    if (i == branches - 1 && rng.chance(0.5)) y = b.pool("maxpool", y, 3, 1, 1);  // a pooling branch
    const int depth = int(rng.range(1, 3));
    for (int d = 0; d < depth; ++d) y = conv_relu(b, y, width, d == 0 ? 1 : rng.chance(0.5) ? 3 : 5);
    outs.push_back(y);
  }
  if (!concat) {
    int sum = outs[0];
    for (size_t i = 1; i < outs.size(); ++i) sum = b.binary("add", sum, outs[i]);
    return sum;
  }
  int y = b.concat(outs, 1);
  if (b.shape(y)[1] != channels) y = b.conv2d(y, channels, 1, 1, 0);
  return y;
}

int attention_block(GraphBuilder& b, int x) {
  const std::vector<int64_t> shape = b.shape(x);  // [1, c, h, w]
  const int64_t c = shape[1], tokens = shape[2] * shape[3];
  const int seq = b.transpose(b.reshape(x, {1, c, tokens}), {0, 2, 1});  // [1, tokens, c]
  const int q = b.dense(seq, c), k = b.dense(seq, c), v = b.dense(seq, c);
  const int scores = b.softmax(b.scale(b.matmul(q, k, true), 1.0 / std::sqrt(double(c))));
  const int attended = b.dense(b.matmul(scores, v), c);
  const int out = b.layernorm(b.binary("add", attended, seq));
  return b.reshape(b.transpose(out, {0, 2, 1}), shape);
}

}  // namespace

Expected<Graph> mixed_graph(uint64_t seed, int64_t size) {
  if (size <= 0) size = 128;
  Rng rng(seed * 0x9e3779b97f4a7c15ull + 0x5851f42d4c957f2dull);
  GraphBuilder b(fmt::format("mixed_{}@{}", seed, size));
  int64_t channels = 8 * rng.range(2, 6);
  int x = b.input("image", {1, 3, size, size});
  x = conv_relu(b, x, channels, 3, 2);
  const int stages = int(rng.range(3, 4));
  for (int s = 0; s < stages; ++s) {
    if (s > 0) {  // downsample and widen
      channels = std::min<int64_t>(512, channels * 2);
      x = rng.chance(0.5) ? conv_relu(b, x, channels, 3, 2) : b.pool(rng.chance(0.5) ? "maxpool" : "avgpool", x, 2, 2, 0);
    }
    const int blocks = int(rng.range(1, 3));
    for (int k = 0; k < blocks; ++k) {
      const int64_t pixels = b.shape(x)[2] * b.shape(x)[3];
      const double pick = rng.uniform();
      // Attention at the low-resolution stages, as hybrid networks place it (at most
      // 256 tokens: a score matrix of 256 KiB).
      if (pick < 0.3 && pixels <= 256) {
        x = attention_block(b, x);
      } else if (pick < 0.6) {
        x = branchy_block(b, rng, x, channels);
      } else {
        x = residual_block(b, rng, x, channels);
      }
    }
  }
  b.mark_output(b.dense(b.global_avgpool(x), 10 * rng.range(10, 100)));
  return b.finish();
}

}  // namespace tensorgym
