// ONNX import (Debian's libonnx-dev): a model file to a memory-planning graph.
// Shapes come from the model's value_info, inputs and outputs where given, and are
// inferred for the operators supported (Conv, Relu, Clip, Sigmoid, Tanh, Add, Sub,
// Mul, Div, MatMul, Gemm, Softmax, MaxPool, AveragePool, GlobalAveragePool, Concat,
// Reshape, Flatten, Transpose, BatchNormalization, LayerNormalization, Identity,
// Dropout). Initializers are constants (outside the arena). An unsupported operator
// is an UNIMPLEMENTED error naming every unsupported type found.
#pragma once

#include <string>

#include "datasets/file_access.h"
#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

// Most bytes an ONNX file may have.
inline constexpr int64_t kMaxOnnxFileBytes = int64_t(1) << 30;

// Whether this build has ONNX import (UNIMPLEMENTED from the functions below if not).
bool onnx_import_available();

// Reads the file through `files` (FileAccess::read and its errors).
Expected<Graph> import_onnx_file(const std::string& path, const FileAccess& files = FileAccess::any());
// From serialized ModelProto bytes; `source` names it in errors.
Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source);

}  // namespace tensorgym
