// The graph IR of memory planning: operators with input and output tensors (shape,
// dtype, bytes). What the planners may exploit is part of each operator: which
// inputs its output may overwrite in place (elementwise operators, reshapes), and
// whether it is an elementwise consumer that may fuse into the producer of its first
// input. Constants (weights) live outside the arena; graph inputs, graph outputs,
// intermediates and each operator's scratch live in it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

enum class TensorKind : uint8_t { kInput, kOutput, kIntermediate, kConstant };
const char* tensor_kind_name(TensorKind kind);

struct GraphTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "f32";
  int64_t bytes = 0;
  TensorKind kind = TensorKind::kIntermediate;
  // Filled by Graph::finalize().
  int producer = -1;           // operator index; -1 for inputs and constants
  std::vector<int> consumers;  // operator indices, each once, in program order
};

struct GraphOp {
  std::string name;
  std::string type;          // "conv2d", "relu", "add", ... (memplan/op_semantics.h)
  std::vector<int> inputs;   // tensor indices (constants included)
  std::vector<int> outputs;  // tensor indices
  // Attributes for the kernel: kernel, stride, pad, groups, perm, axis, ...
  std::map<std::string, std::vector<int64_t>> attrs;
  std::map<std::string, double> fattrs;  // scale, epsilon, ...
  int64_t scratch_bytes = 0;             // working memory during the operator (in the arena)
  // Positions in `inputs` whose memory outputs[0] may take over when that input dies
  // at this operator (same byte count required).
  std::vector<int> inplace_inputs;
  // An elementwise operator that may fuse into the producer of inputs[0].
  bool fusible = false;

  int64_t attr(const std::string& key, int64_t fallback, size_t index = 0) const;
};

struct Graph {
  std::string name;
  std::vector<GraphTensor> tensors;
  std::vector<GraphOp> ops;  // in program order (a topological order)

  // Adds a tensor (bytes from shape and dtype) and returns its index.
  int add_tensor(const std::string& name, std::vector<int64_t> shape, TensorKind kind,
                 const std::string& dtype = "f32");
  // Computes producers and consumers; then validate().
  Status finalize();
  // Every tensor has at most one producer; inputs and constants none; every other
  // tensor one; operators only read tensors produced earlier in program order;
  // in-place positions and byte counts are consistent. Names the first problem.
  Status validate() const;

  int find_tensor(const std::string& name) const;  // -1 when none
  int64_t total_bytes(TensorKind kind) const;
  // Tensors that occupy the arena (everything but constants).
  bool in_arena(int tensor) const { return tensors[size_t(tensor)].kind != TensorKind::kConstant; }
};

// Bytes of one element of a dtype ("f32" 4, "f16" 2, "i64" 8, ...); 0 when unknown.
int64_t dtype_bytes(const std::string& dtype);
int64_t shape_elements(const std::vector<int64_t>& shape);
std::string shape_text(const std::vector<int64_t>& shape);

// Caps on graphs from users (ONNX files).
inline constexpr int64_t kMaxGraphOps = 100000;
inline constexpr int64_t kMaxGraphTensors = 400000;

}  // namespace tensorgym
