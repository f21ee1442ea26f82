// Work that reads only constant inputs (`input W: f32[...] const`): the root-level
// statements of a lowered nest that fill a root buffer from constant inputs and other
// such buffers (a layer's weights packed into another layout, once for the whole
// tensor). Their results are the same on every run with the same constant inputs, so a
// backend may run them once, ahead of the runs it times, as TVM's layout rewrite packs
// a layer's weights once at compile time (layout-free placeholders).
//
//   allocate P { allocate WP {            prologue: WP[...] = W[...]
//     P[...] = X[...]                      main:     allocate P { P[...] = X[...]
//     WP[...] = W[...]          ==>                               Y[...] += P[...] * WP[...] }
//     Y[...] += P[...] * WP[...] } }                 (WP one more input)
//
// The nest itself keeps all its work: run() of an executable does both parts, the
// interpreter and the analyses read the whole nest.
#pragma once

#include <optional>
#include <vector>

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

struct ConstantWork {
  // The buffers the constant work fills (root Allocates of the nest), in the order their
  // work runs; each flat (one dimension, its element count).
  std::vector<BufferArg> prepared;
  // inputs: the nest's; outputs: `prepared`; body: the constant work, in nest order.
  LoopNest prologue;
  // inputs: the nest's, then `prepared`; outputs: the nest's; body: the rest of the nest.
  LoopNest main;
};

// The nest split in two; nullopt where no root statement reads only constant inputs.
// A statement is constant work when every buffer it reads is a constant input, a buffer
// constant work filled before it, or the one root buffer it writes, and every statement
// that writes that buffer is constant work too.
std::optional<ConstantWork> split_constant_work(const LoopNest& nest);

}  // namespace tensorgym
