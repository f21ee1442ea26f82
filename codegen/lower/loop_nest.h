// The result of lowering: one imperative function over the program's input and output
// buffers. Every backend (the interpreter, LLVM, later CUDA) consumes this.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/ir/stmt.h"
#include "support/shared_vector.h"

namespace tensorgym {

class ScheduleState;  // codegen/schedule/schedule_state.h

// A buffer passed to the function: dense, row-major, 64-byte aligned by the caller.
struct BufferArg {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  bool constant = false;  // an input declared `const` (TensorInput::constant)
};

struct LoopNest {
  // Shared, not copied, between the lowerings of one program's schedules.
  SharedVector<BufferArg> inputs;   // the program's inputs, in declaration order
  SharedVector<BufferArg> outputs;  // the program's outputs, in definition order
  // After storage flattening every Load and Store has one flat index and every
  // Allocate one extent (its element count). Intermediate buffers are Allocate'd
  // inside the body; loop variables and indices are i32.
  Stmt body;
  // The target whose own lowering passes ran (lower(state, target)); empty for the
  // target-independent nest. A backend compiles only a nest lowered for it.
  std::string target;
  // The state lowered, kept for a target whose compiler reads the schedule as well as
  // the nest (LoweringTarget::needs_schedule: fpga reads a convolution's tiling off it);
  // null otherwise.
  std::shared_ptr<const ScheduleState> schedule;

  // Inputs then outputs, the order in which a backend receives buffers.
  std::vector<BufferArg> args() const {
    std::vector<BufferArg> all = inputs.get();
    all.insert(all.end(), outputs.begin(), outputs.end());
    return all;
  }
};

}  // namespace tensorgym
