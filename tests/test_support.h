#pragma once
// Shared by the test files: a substring expectation, and short builders for IR
// written by hand (tests that must not depend on the parser build nests with these).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/ir/program.h"
#include "codegen/lower/loop_nest.h"

// Substring check without gmock.
#define EXPECT_CONTAINS(text, part)                                                                           \
  do {                                                                                                        \
    const std::string tg_text_ = (text);                                                                      \
    EXPECT_NE(tg_text_.find(part), std::string::npos) << "\"" << tg_text_ << "\" lacks \"" << (part) << "\""; \
  } while (0)

namespace tensorgym::ir_build {

inline Expr V(const std::string& name) { return make_var(name); }
inline Expr I(int64_t v) { return make_int(v); }
inline Expr F(double v) { return FloatImm::make(DataType::f32(), v); }
inline Expr operator+(Expr a, Expr b) { return Add::make(std::move(a), std::move(b)); }
inline Expr operator-(Expr a, Expr b) { return Sub::make(std::move(a), std::move(b)); }
inline Expr operator*(Expr a, Expr b) { return Mul::make(std::move(a), std::move(b)); }
inline Expr operator/(Expr a, Expr b) { return Div::make(std::move(a), std::move(b)); }
inline Expr operator%(Expr a, Expr b) { return Mod::make(std::move(a), std::move(b)); }
inline Expr operator&&(Expr a, Expr b) { return And::make(std::move(a), std::move(b)); }

// A load or store of a flat (one-index) buffer.
inline Expr Ld(const std::string& buf, Expr index, DataType t = DataType::f32()) {
  return Load::make(t, buf, {std::move(index)});
}
inline Stmt St(const std::string& buf, Expr index, Expr value) {
  return Store::make(buf, {std::move(index)}, std::move(value));
}
inline Stmt Loop(const std::string& var, int64_t extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(var, I(0), I(extent), kind, std::move(body));
}
inline Stmt Seq(std::vector<Stmt> s) { return Block::make(std::move(s)); }
inline BufferArg Arg(const std::string& name, std::vector<int64_t> shape, DataType t = DataType::f32()) {
  return {name, t, std::move(shape)};
}

// Program pieces: an axis, an input, a stage, a multi-dimensional tensor access.
inline IterVar Axis(const std::string& name, int64_t extent, int64_t min = 0) {
  IterVar v;
  v.name = name;
  v.min = min;
  v.extent = extent;
  return v;
}
inline TensorInput Input(const std::string& name, std::vector<int64_t> shape, DataType t = DataType::f32()) {
  TensorInput in;
  in.name = name;
  in.dtype = t;
  in.shape = std::move(shape);
  return in;
}
inline StageDef Stage(const std::string& name, DataType t, std::vector<IterVar> axes, Expr body,
                      ReduceKind reduce = ReduceKind::kNone, std::vector<IterVar> reduce_axes = {}) {
  StageDef s;
  s.name = name;
  s.dtype = t;
  s.axes = std::move(axes);
  s.reduce_axes = std::move(reduce_axes);
  s.reduce = reduce;
  s.body = std::move(body);
  return s;
}
inline Expr Tensor(const std::string& name, std::vector<Expr> idx, DataType t = DataType::f32()) {
  return Load::make(t, name, std::move(idx));
}

}  // namespace tensorgym::ir_build
