// benchmark://bert-v0: the operators of one BERT-base encoder layer (Devlin et al.,
// 2019): sequence 128, batch 1, hidden 768, 12 heads of 64, feed-forward 3072.
//
// Activations are [tokens, features] row-major; projection weights are [in, out]
// with a bias stage (Y[i, j] += X[i, k] * W[k, j]; Z[i, j] = Y[i, j] + B[j]).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "datasets/suites.h"

namespace tensorgym {
namespace {

constexpr const char* kName = "benchmark://bert-v0";
constexpr int64_t kSeq = 128;
constexpr int64_t kHidden = 768;
constexpr int64_t kHeads = 12;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kFfn = 3072;

std::string linear(const std::string& what, int64_t in, int64_t out) {
  return fmt::format(
      "# {0}: [{1}, {2}] x [{2}, {3}] + bias\n"
      "input X: f32[{1}, {2}]\n"
      "input W: f32[{2}, {3}]\n"
      "input B: f32[{3}]\n"
      "Y[i, j] += X[i, k] * W[k, j]\n"
      "Z[i, j] = Y[i, j] + B[j]\n",
      what, kSeq, in, out);
}

std::string linear_shape(int64_t in, int64_t out) { return fmt::format("S={} IN={} OUT={} bias", kSeq, in, out); }

}  // namespace

std::unique_ptr<StaticDataset> make_bert_dataset() {
  const std::string head_shape = fmt::format("HEADS={} S={} D={}", kHeads, kSeq, kHeadDim);
  std::vector<SuiteEntry> entries;
  entries.push_back({"qkv-projection", linear_shape(kHidden, 3 * kHidden),
                     linear("BERT-base QKV projection (Q, K and V side by side)", kHidden, 3 * kHidden), ""});
  entries.push_back({"attention-scores", head_shape + " scale=1/8",
                     fmt::format("# BERT-base attention scores: Q . K^T / sqrt(64) per head\n"
                                 "input Q: f32[{0}, {1}, {2}]\n"
                                 "input K: f32[{0}, {1}, {2}]\n"
                                 "S[h, i, j] += Q[h, i, d] * K[h, j, d]\n"
                                 "T[h, i, j] = S[h, i, j] * 0.125\n",
                                 kHeads, kSeq, kHeadDim),
                     ""});
  entries.push_back({"attention-context", head_shape,
                     fmt::format("# BERT-base attention context: P . V per head\n"
                                 "input P: f32[{0}, {1}, {1}]\n"
                                 "input V: f32[{0}, {1}, {2}]\n"
                                 "C[h, i, d] += P[h, i, j] * V[h, j, d]\n",
                                 kHeads, kSeq, kHeadDim),
                     ""});
  entries.push_back({"output-projection", linear_shape(kHidden, kHidden),
                     linear("BERT-base attention output projection", kHidden, kHidden), ""});
  entries.push_back(
      {"ffn-up", linear_shape(kHidden, kFfn), linear("BERT-base feed-forward, first matmul", kHidden, kFfn), ""});
  entries.push_back(
      {"ffn-down", linear_shape(kFfn, kHidden), linear("BERT-base feed-forward, second matmul", kFfn, kHidden), ""});
  entries.push_back({"softmax", fmt::format("HEADS={} S={} axis=last", kHeads, kSeq),
                     fmt::format("# BERT-base attention softmax over the last axis\n"
                                 "input X: f32[{0}, {1}, {1}]\n"
                                 "M[h, i] max= X[h, i, j]\n"
                                 "E[h, i, j] = exp(X[h, i, j] - M[h, i])\n"
                                 "S[h, i] += E[h, i, j]\n"
                                 "Y[h, i, j] = E[h, i, j] / S[h, i]\n",
                                 kHeads, kSeq),
                     ""});
  entries.push_back({"layer-norm", fmt::format("S={} H={} eps=1e-12", kSeq, kHidden),
                     fmt::format("# BERT-base layer norm over the hidden axis, epsilon 1e-12\n"
                                 "input X: f32[{0}, {1}]\n"
                                 "input G: f32[{1}]\n"
                                 "input B: f32[{1}]\n"
                                 "M[i] += X[i, j] / {1}.0\n"
                                 "D[i, j] = X[i, j] - M[i]\n"
                                 "V[i] += D[i, j] * D[i, j] / {1}.0\n"
                                 "Y[i, j] = D[i, j] / sqrt(V[i] + 1e-12) * G[j] + B[j]\n",
                                 kSeq, kHidden),
                     ""});
  entries.push_back(
      {"gelu", fmt::format("S={} H={} tanh-approximation", kSeq, kFfn),
       fmt::format("# BERT-base GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))\n"
                   "input X: f32[{}, {}]\n"
                   "Y[i, j] = 0.5 * X[i, j] * (1.0 + tanh(0.7978845608028654 * (X[i, j] + 0.044715 * "
                   "X[i, j] * X[i, j] * X[i, j])))\n",
                   kSeq, kFfn),
       ""});
  return std::make_unique<StaticDataset>(
      kName, "BERT-base encoder layer, sequence 128, batch 1: projections, attention matmuls, softmax, layer norm, GELU",
      std::move(entries));
}

}  // namespace tensorgym
