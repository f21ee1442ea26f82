#include "memplan/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>

namespace tensorgym {

const char* tensor_kind_name(TensorKind kind) {
  switch (kind) {
    case TensorKind::kInput: return "input";
    case TensorKind::kOutput: return "output";
    case TensorKind::kIntermediate: return "intermediate";
    case TensorKind::kConstant: return "constant";
  }
  return "?";
}

int64_t GraphOp::attr(const std::string& key, int64_t fallback, size_t index) const {
  auto it = attrs.find(key);
  if (it == attrs.end() || it->second.size() <= index) return fallback;
  return it->second[index];
}

int64_t dtype_bytes(const std::string& dtype) {
  static const std::unordered_map<std::string, int64_t> sizes = {{"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8},
                                                                 {"i8", 1},  {"u8", 1},  {"i16", 2},  {"i32", 4},
                                                                 {"i64", 8}, {"bool", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

int64_t shape_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int Graph::add_tensor(const std::string& tensor_name, std::vector<int64_t> shape, TensorKind kind,
                      const std::string& dtype) {
  GraphTensor t;
  t.name = tensor_name;
  t.bytes = shape_elements(shape) * dtype_bytes(dtype);
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.kind = kind;
  tensors.push_back(std::move(t));
  return int(tensors.size()) - 1;
}

int Graph::find_tensor(const std::string& tensor_name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == tensor_name) return int(i);
  return -1;
}

int64_t Graph::total_bytes(TensorKind kind) const {
  int64_t n = 0;
  for (const GraphTensor& t : tensors)
    if (t.kind == kind) n += t.bytes;
  return n;
}

Status Graph::finalize() {
  for (GraphTensor& t : tensors) {
    t.producer = -1;
    t.consumers.clear();
  }
  for (size_t o = 0; o < ops.size(); ++o) {
    for (int t : ops[o].outputs) {
      if (t < 0 || size_t(t) >= tensors.size())
        return invalid_argument(fmt::format("operator '{}' writes tensor #{}, which does not exist", ops[o].name, t));
      if (tensors[size_t(t)].producer >= 0)
        return invalid_argument("tensor '" + tensors[size_t(t)].name + "' is produced by both '" +
                                ops[size_t(tensors[size_t(t)].producer)].name + "' and '" + ops[o].name + "'");
      tensors[size_t(t)].producer = int(o);
    }
    for (int t : ops[o].inputs) {
      if (t < 0 || size_t(t) >= tensors.size())
        return invalid_argument(fmt::format("operator '{}' reads tensor #{}, which does not exist", ops[o].name, t));
      std::vector<int>& c = tensors[size_t(t)].consumers;
      if (c.empty() || c.back() != int(o)) c.push_back(int(o));
    }
  }
  return validate();
}

Status Graph::validate() const {
  if (int64_t(ops.size()) > kMaxGraphOps)
    return resource_exhausted(
        fmt::format("graph '{}' has {} operators, over the limit of {}", name, ops.size(), kMaxGraphOps));
  if (int64_t(tensors.size()) > kMaxGraphTensors)
    return resource_exhausted(
        fmt::format("graph '{}' has {} tensors, over the limit of {}", name, tensors.size(), kMaxGraphTensors));
  for (const GraphTensor& t : tensors) {
    if (t.bytes < 0) return invalid_argument("tensor '" + t.name + "' has a negative size");
    const bool source = t.kind == TensorKind::kInput || t.kind == TensorKind::kConstant;
    if (source && t.producer >= 0)
      return invalid_argument(std::string(tensor_kind_name(t.kind)) + " tensor '" + t.name +
                              "' is produced by operator '" + ops[size_t(t.producer)].name + "'");
    if (!source && t.producer < 0) return invalid_argument("tensor '" + t.name + "' has no producer");
  }
  for (size_t o = 0; o < ops.size(); ++o) {
    const GraphOp& op = ops[o];
    if (op.outputs.empty()) return invalid_argument("operator '" + op.name + "' has no output");
    for (int t : op.inputs) {
      const int p = tensors[size_t(t)].producer;
      if (p >= int(o))
        return invalid_argument("operator '" + op.name + "' reads '" + tensors[size_t(t)].name +
                                "' before its producer '" + ops[size_t(p)].name + "' in program order");
    }
    for (int k : op.inplace_inputs) {
      if (k < 0 || size_t(k) >= op.inputs.size())
        return invalid_argument(
            fmt::format("operator '{}' names in-place input {} of {}", op.name, k, op.inputs.size()));
    }
    if (op.scratch_bytes < 0) return invalid_argument("operator '" + op.name + "' has negative scratch");
  }
  return Status();
}

}  // namespace tensorgym
