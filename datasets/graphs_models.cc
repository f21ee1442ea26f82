// The model graphs of benchmark://graphs-v0, generated in code at TFLite-like
// operator granularity: convolutions, matmuls and pools are operators; activations,
// bias adds and residual adds are operators of their own (elementwise, so they may
// run in place or fuse into their producer); batch norm is folded into the weights.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "datasets/graphs.h"
#include "memplan/graph_builder.h"
#include "support/random.h"

namespace tensorgym {
namespace {

int conv_relu(GraphBuilder& b, int x, int64_t co, int64_t kh, int64_t kw, int64_t s, int64_t ph, int64_t pw,
              const char* act = "relu") {
  return b.unary(act, b.conv2d(x, co, kh, kw, s, s, ph, pw));
}

int classifier(GraphBuilder& b, int x, int64_t classes) { return b.dense(b.global_avgpool(x), classes); }

}  // namespace

Expected<Graph> mobilenet_v2_graph(int64_t size) {
  if (size <= 0) size = 224;
  GraphBuilder b(fmt::format("mobilenet_v2@{}", size));
  int x = b.input("image", {1, 3, size, size});
  x = conv_relu(b, x, 32, 3, 3, 2, 1, 1, "relu6");
  struct Block {
    int64_t t, c, n, s;
  };
  const Block blocks[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t channels = 32;
  for (const Block& blk : blocks) {
    for (int64_t i = 0; i < blk.n; ++i) {
      const int64_t stride = i == 0 ? blk.s : 1;
      const int64_t hidden = channels * blk.t;
      int y = x;
      if (blk.t != 1) y = conv_relu(b, y, hidden, 1, 1, 1, 0, 0, "relu6");
      y = b.unary("relu6", b.conv2d(y, hidden, 3, 3, stride, stride, 1, 1, hidden));
      y = b.conv2d(y, blk.c, 1, 1, 0);
      if (stride == 1 && channels == blk.c) y = b.binary("add", y, x);
      x = y;
      channels = blk.c;
    }
  }
  x = conv_relu(b, x, 1280, 1, 1, 1, 0, 0, "relu6");
  b.mark_output(classifier(b, x, 1000));
  return b.finish();
}

Expected<Graph> resnet50_graph(int64_t size) {
  if (size <= 0) size = 224;
  GraphBuilder b(fmt::format("resnet50@{}", size));
  int x = b.input("image", {1, 3, size, size});
  x = conv_relu(b, x, 64, 7, 7, 2, 3, 3);
  x = b.pool("maxpool", x, 3, 2, 1);
  struct Stage {
    int blocks;
    int64_t mid, out, stride;
  };
  const Stage stages[] = {{3, 64, 256, 1}, {4, 128, 512, 2}, {6, 256, 1024, 2}, {3, 512, 2048, 2}};
  for (const Stage& st : stages) {
    for (int i = 0; i < st.blocks; ++i) {
      const int64_t stride = i == 0 ? st.stride : 1;
      // v1: the stride is on the first 1x1 convolution.
      int y = conv_relu(b, x, st.mid, 1, 1, stride, 0, 0);
      y = conv_relu(b, y, st.mid, 3, 3, 1, 1, 1);
      y = b.conv2d(y, st.out, 1, 1, 0);
      const int shortcut = i == 0 ? b.conv2d(x, st.out, 1, stride, 0) : x;
      x = b.unary("relu", b.binary("add", y, shortcut));
    }
  }
  b.mark_output(classifier(b, x, 1000));
  return b.finish();
}

Expected<Graph> bert_base_graph(int64_t seq, int64_t layers) {
  constexpr int64_t kHidden = 768, kHeads = 12, kHeadDim = 64, kFfn = 3072;
  GraphBuilder b(layers != 12 ? fmt::format("bert_base_{}x{}", seq, layers) : fmt::format("bert_base_{}", seq));
  int x = b.input("embeddings", {seq, kHidden});
  auto heads = [&](int t) { return b.transpose(b.reshape(t, {seq, kHeads, kHeadDim}), {1, 0, 2}); };
  for (int64_t l = 0; l < layers; ++l) {
    const int q = heads(b.dense(x, kHidden));
    const int k = heads(b.dense(x, kHidden));
    const int v = heads(b.dense(x, kHidden));
    const int scores = b.scale(b.matmul(q, k, /*transpose_b=*/true), 0.125);
    const int probs = b.softmax(scores);
    const int ctx = b.reshape(b.transpose(b.matmul(probs, v), {1, 0, 2}), {seq, kHidden});
    const int attn = b.layernorm(b.binary("add", b.dense(ctx, kHidden), x));
    const int ffn = b.dense(b.unary("gelu", b.dense(attn, kFfn)), kHidden);
    x = b.layernorm(b.binary("add", ffn, attn));
  }
  b.mark_output(x);
  return b.finish();
}

Expected<Graph> inception_v3_graph(int64_t size) {
  if (size <= 0) size = 299;
  GraphBuilder b(fmt::format("inception_v3@{}", size));
  auto conv = [&](int x, int64_t co, int64_t kh, int64_t kw, int64_t s = 1, bool same = true) {
    return conv_relu(b, x, co, kh, kw, s, same ? kh / 2 : 0, same ? kw / 2 : 0);
  };
  int x = b.input("image", {1, 3, size, size});
  x = conv(x, 32, 3, 3, 2, false);
  x = conv(x, 32, 3, 3, 1, false);
  x = conv(x, 64, 3, 3);
  x = b.pool("maxpool", x, 3, 2, 0);
  x = conv(x, 80, 1, 1);
  x = conv(x, 192, 3, 3, 1, false);
  x = b.pool("maxpool", x, 3, 2, 0);
  // Inception A (mixed 0-2).
  for (int64_t pool_features : {32, 64, 64}) {
    const int b1 = conv(x, 64, 1, 1);
    const int b5 = conv(conv(x, 48, 1, 1), 64, 5, 5);
    const int b3 = conv(conv(conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3);
    const int bp = conv(b.pool("avgpool", x, 3, 1, 1), pool_features, 1, 1);
    x = b.concat({b1, b5, b3, bp}, 1);
  }
  // Reduction A (mixed 3).
  {
    const int b3 = conv(x, 384, 3, 3, 2, false);
    const int bd = conv(conv(conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, false);
    const int bp = b.pool("maxpool", x, 3, 2, 0);
    x = b.concat({b3, bd, bp}, 1);
  }
  // Inception B with factorized 7x7 (mixed 4-7).
  for (int64_t c7 : {128, 160, 160, 192}) {
    const int b1 = conv(x, 192, 1, 1);
    const int b7 = conv(conv(conv(x, c7, 1, 1), c7, 1, 7), 192, 7, 1);
    int bd = conv(conv(x, c7, 1, 1), c7, 7, 1);
    bd = conv(conv(conv(bd, c7, 1, 7), c7, 7, 1), 192, 1, 7);
    const int bp = conv(b.pool("avgpool", x, 3, 1, 1), 192, 1, 1);
    x = b.concat({b1, b7, bd, bp}, 1);
  }
  // Reduction B (mixed 8).
  {
    const int b3 = conv(conv(x, 192, 1, 1), 320, 3, 3, 2, false);
    const int b7 = conv(conv(conv(conv(x, 192, 1, 1), 192, 1, 7), 192, 7, 1), 192, 3, 3, 2, false);
    const int bp = b.pool("maxpool", x, 3, 2, 0);
    x = b.concat({b3, b7, bp}, 1);
  }
  // Inception C (mixed 9-10).
  for (int i = 0; i < 2; ++i) {
    const int b1 = conv(x, 320, 1, 1);
    const int t3 = conv(x, 384, 1, 1);
    const int b3 = b.concat({conv(t3, 384, 1, 3), conv(t3, 384, 3, 1)}, 1);
    const int td = conv(conv(x, 448, 1, 1), 384, 3, 3);
    const int bd = b.concat({conv(td, 384, 1, 3), conv(td, 384, 3, 1)}, 1);
    const int bp = conv(b.pool("avgpool", x, 3, 1, 1), 192, 1, 1);
    x = b.concat({b1, b3, bd, bp}, 1);
  }
  b.mark_output(classifier(b, x, 1000));
  return b.finish();
}

Expected<Graph> randwire_ws_graph(uint64_t seed, int64_t size) {
  if (size <= 0) size = 224;
  constexpr int kNodes = 32, kNeighbours = 4;
  constexpr double kRewire = 0.75;
  constexpr int64_t kChannels = 78;
  GraphBuilder b(fmt::format("randwire_ws_{}@{}", seed, size));
  Rng rng(seed);
  int x = b.input("image", {1, 3, size, size});
  x = b.conv2d(x, kChannels / 2, 3, 2, 1);
  x = b.conv2d(b.unary("relu", x), kChannels, 3, 2, 1);
  int64_t channels = kChannels;
  for (int stage = 0; stage < 3; ++stage) {
    // Watts-Strogatz: a ring where each node links to its K/2 next neighbours, each
    // link rewired with probability P to a random node; edges run low -> high.
    std::set<std::pair<int, int>> edges;
    for (int i = 0; i < kNodes; ++i)
      for (int j = 1; j <= kNeighbours / 2; ++j) edges.insert({i, (i + j) % kNodes});
    std::vector<std::pair<int, int>> ring(edges.begin(), edges.end());
    for (auto& e : ring) {
      if (!rng.chance(kRewire)) continue;
      int target = int(rng.below(kNodes));
      int tries = 0;
      while ((target == e.first || edges.count({e.first, target}) || edges.count({target, e.first})) && tries++ < 64)
        target = int(rng.below(kNodes));
      if (tries >= 64) continue;
      edges.erase(e);
      edges.insert({e.first, target});
    }
    std::vector<std::vector<int>> preds(kNodes);
    std::vector<int> succ_count(kNodes, 0);
    for (const auto& [u, v] : edges) {
      const int lo = std::min(u, v), hi = std::max(u, v);
      preds[size_t(hi)].push_back(lo);
      ++succ_count[size_t(lo)];
    }
    const int64_t out_channels = channels * 2;
    std::vector<int> node_out(kNodes, -1);
    for (int n = 0; n < kNodes; ++n) {
      std::sort(preds[size_t(n)].begin(), preds[size_t(n)].end());
      preds[size_t(n)].erase(std::unique(preds[size_t(n)].begin(), preds[size_t(n)].end()), preds[size_t(n)].end());
      int in;
      int64_t stride = 1;
      if (preds[size_t(n)].empty()) {
        in = x;  // an input node reads the stage input, and downsamples
        stride = 2;
      } else {
        in = node_out[size_t(preds[size_t(n)][0])];
        for (size_t k = 1; k < preds[size_t(n)].size(); ++k)
          in = b.binary("add", in, node_out[size_t(preds[size_t(n)][k])]);
      }
      const int64_t in_channels = b.shape(in)[1];
      int y = b.unary("relu", in);
      y = b.conv2d(y, in_channels, 3, 3, stride, stride, 1, 1, in_channels);  // depthwise
      node_out[size_t(n)] = b.conv2d(y, out_channels, 1, 1, 0);               // pointwise
    }
    int sum = -1;
    for (int n = 0; n < kNodes; ++n)
      if (succ_count[size_t(n)] == 0) sum = sum < 0 ? node_out[size_t(n)] : b.binary("add", sum, node_out[size_t(n)]);
    x = sum;
    channels = out_channels;
  }
  x = b.unary("relu", b.conv2d(b.unary("relu", x), 1280, 1, 1, 0));
  b.mark_output(classifier(b, x, 1000));
  return b.finish();
}

}  // namespace tensorgym
