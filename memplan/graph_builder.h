// Builds model graphs operator by operator, with shapes inferred and the in-place,
// fusion and scratch facts of each operator type filled in. The graphs-v0
// generators and the ONNX importer both use it.
//
// Layouts: images NCHW, weights [out, in / groups, kh, kw]; matrices row-major.
// Operator types: conv2d, relu, relu6, gelu, sigmoid, tanh, add, sub, mul, div (with
// numpy broadcasting), scale, matmul, softmax, layernorm, maxpool, avgpool,
// global_avgpool, concat, reshape, transpose.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name);

  int input(const std::string& name, std::vector<int64_t> shape, const std::string& dtype = "f32");
  int constant(const std::string& name, std::vector<int64_t> shape);
  const std::vector<int64_t>& shape(int tensor) const { return graph_.tensors[size_t(tensor)].shape; }

  // Convolution with a new weight constant [out, in / groups, kh, kw]; pads symmetric.
  int conv2d(int x, int64_t out_channels, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
             int64_t pad_w, int64_t groups = 1);
  int conv2d(int x, int64_t out_channels, int64_t k, int64_t stride, int64_t pad, int64_t groups = 1) {
    return conv2d(x, out_channels, k, k, stride, stride, pad, pad, groups);
  }
  // Convolution with a given weight tensor.
  int conv2d_with(int x, int w, int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t groups);
  int unary(const std::string& type, int x);          // relu, relu6, gelu, sigmoid, tanh
  int binary(const std::string& type, int a, int b);  // add, sub, mul, div
  int scale(int x, double factor);
  // [.., n, k] x [.., k, m] (or [.., m, k] with transpose_b); b may be 2-D.
  int matmul(int a, int b, bool transpose_b = false);
  // x [.., in] x W[in, out] + bias[out]: a matmul and an add.
  int dense(int x, int64_t out_features);
  int softmax(int x);    // over the last axis
  int layernorm(int x);  // over the last axis, with new gamma and beta
  int layernorm_with(int x, int gamma, int beta);
  int pool(const std::string& type, int x, int64_t k, int64_t stride, int64_t pad);  // maxpool, avgpool
  int global_avgpool(int x);                                                         // [n, c, h, w] -> [n, c]
  int concat(const std::vector<int>& xs, int64_t axis);
  int reshape(int x, std::vector<int64_t> shape);
  int transpose(int x, std::vector<int64_t> perm);

  void mark_output(int tensor);
  // Renames a tensor, and the operator that produced it (importers keep their names).
  void rename(int tensor, const std::string& name);
  int tensor_count() const { return int(graph_.tensors.size()); }
  // Finishes the graph: producers, consumers, validation, and each operator's
  // scratch from its program.
  Expected<Graph> finish();

  // Errors met while building (a shape mismatch); finish() reports the first.
  const Status& error() const { return error_; }

 private:
  int add_op(const std::string& type, std::vector<int> inputs, std::vector<int64_t> out_shape);
  void fail(const std::string& message);

  Graph graph_;
  Status error_;
  int counter_ = 0;
};

// Numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);

}  // namespace tensorgym
