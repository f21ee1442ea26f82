#include "codegen/ir/stmt.h"

#include <cassert>

namespace tensorgym {

Stmt LetStmt::make(std::string name, Expr value, Stmt body) {
  assert(value.defined() && body.defined());
  return new LetStmt(std::move(name), std::move(value), std::move(body));
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
  }
  return "?";
}

Stmt For::make(std::string name, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  assert(min.defined() && extent.defined() && body.defined());
  assert(min.type() == DataType::i32() && extent.type() == DataType::i32());
  assert(thread_tag.empty() || kind == ForKind::kSerial);
  return new For(std::move(name), std::move(min), std::move(extent), kind, std::move(body), std::move(thread_tag));
}

Stmt Store::make(std::string name, std::vector<Expr> indices, Expr value) {
  assert(value.defined());
  return new Store(std::move(name), std::move(indices), std::move(value));
}

int64_t Allocate::num_elements() const {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

const char* memory_scope_name(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::kAuto: return "auto";
    case MemoryScope::kGlobal: return "global";
    case MemoryScope::kShared: return "shared";
    case MemoryScope::kLocal: return "local";
    case MemoryScope::kInpBuffer: return "inp_buffer";
    case MemoryScope::kWgtBuffer: return "wgt_buffer";
    case MemoryScope::kAccBuffer: return "acc_buffer";
  }
  return "?";
}

Stmt Allocate::make(std::string name, DataType dtype, std::vector<int64_t> extents, Stmt body, MemoryScope scope) {
  assert(body.defined());
  return new Allocate(std::move(name), dtype, std::move(extents), std::move(body), scope);
}

Stmt Barrier::make() { return new Barrier(); }

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  assert(condition.defined() && condition.type().is_bool() && then_case.defined());
  return new IfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt Block::make(std::vector<Stmt> stmts) {
  // Usually already flat: then the vector becomes the block's as it is.
  bool flat_already = stmts.size() > 1;
  for (const Stmt& s : stmts) flat_already &= s.defined() && !s.as<Block>();
  if (flat_already) return new Block(std::move(stmts));
  std::vector<Stmt> flat;
  flat.reserve(stmts.size());
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const Block* b = s.as<Block>()) {
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.empty()) return Stmt();
  if (flat.size() == 1) return flat[0];
  return new Block(std::move(flat));
}

}  // namespace tensorgym
