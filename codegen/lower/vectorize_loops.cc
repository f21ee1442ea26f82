#include "codegen/lower/vectorize_loops.h"

#include <unordered_set>

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/simplify.h"

namespace tensorgym {
namespace {

bool is_vector(const Expr& e) { return e.type().is_vector(); }

// Replaces one loop variable by a ramp and widens what depends on it.
class LaneWidener : public IRMutator {
 public:
  LaneWidener(std::string var, Expr min, int lanes) : var_(std::move(var)), min_(std::move(min)), lanes_(lanes) {}
  bool failed() const { return failed_; }

 protected:
  Expr widen(const Expr& e) { return is_vector(e) ? e : Broadcast::make(e, lanes_); }
  // The stride folded, so that a backend sees a constant stride as a constant.
  Expr ramp(Expr base, const Expr& stride) const { return Ramp::make(std::move(base), simplify(stride), lanes_); }

  Expr visit(const Variable* op) override {
    if (op->name == var_) return ramp(min_, make_int(1));
    if (vector_lets_.count(op->name)) return Variable::make(op->type.with_lanes(lanes_), op->name);
    return op;
  }

  // Affine forms stay ramps so that a backend sees contiguous accesses.
  Expr visit(const Add* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (!is_vector(a) && !is_vector(b)) return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Add::make(a, b);
    const Ramp* ra = a.as<Ramp>();
    const Ramp* rb = b.as<Ramp>();
    if (ra && rb) return ramp(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride));
    if (ra && !is_vector(b)) return ramp(Add::make(ra->base, b), ra->stride);
    if (rb && !is_vector(a)) return ramp(Add::make(a, rb->base), rb->stride);
    return Add::make(widen(a), widen(b));
  }
  Expr visit(const Sub* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (!is_vector(a) && !is_vector(b)) return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Sub::make(a, b);
    const Ramp* ra = a.as<Ramp>();
    const Ramp* rb = b.as<Ramp>();
    if (ra && rb) return ramp(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride));
    if (ra && !is_vector(b)) return ramp(Sub::make(ra->base, b), ra->stride);
    if (rb && !is_vector(a)) return ramp(Sub::make(a, rb->base), Sub::make(make_int(0), rb->stride));
    return Sub::make(widen(a), widen(b));
  }
  Expr visit(const Mul* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (!is_vector(a) && !is_vector(b)) return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Mul::make(a, b);
    const Ramp* ra = a.as<Ramp>();
    const Ramp* rb = b.as<Ramp>();
    if (ra && !is_vector(b)) return ramp(Mul::make(ra->base, b), Mul::make(ra->stride, b));
    if (rb && !is_vector(a)) return ramp(Mul::make(a, rb->base), Mul::make(a, rb->stride));
    return Mul::make(widen(a), widen(b));
  }

  template <class T>
  Expr widen_binary(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (!is_vector(a) && !is_vector(b)) return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : T::make(a, b);
    return T::make(widen(a), widen(b));
  }
  Expr visit(const Div* op) override { return widen_binary(op); }
  Expr visit(const Mod* op) override { return widen_binary(op); }
  Expr visit(const Min* op) override { return widen_binary(op); }
  Expr visit(const Max* op) override { return widen_binary(op); }
  Expr visit(const EQ* op) override { return widen_binary(op); }
  Expr visit(const NE* op) override { return widen_binary(op); }
  Expr visit(const LT* op) override { return widen_binary(op); }
  Expr visit(const LE* op) override { return widen_binary(op); }
  Expr visit(const GT* op) override { return widen_binary(op); }
  Expr visit(const GE* op) override { return widen_binary(op); }
  Expr visit(const And* op) override { return widen_binary(op); }
  Expr visit(const Or* op) override { return widen_binary(op); }

  Expr visit(const Select* op) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (!is_vector(c) && !is_vector(t) && !is_vector(f)) {
      if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return op;
      return Select::make(c, t, f);
    }
    // A scalar condition picks a whole vector; a vector condition picks per lane.
    return Select::make(c, widen(t), widen(f));
  }

  Expr visit(const Cast* op) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return op;
    return Cast::make(op->type.with_lanes(v.type().lanes), v);
  }

  Expr visit(const Load* op) override {
    Expr idx = mutate(op->indices[0]);
    if (idx.same_as(op->indices[0])) return op;
    return Load::make(op->type.with_lanes(idx.type().lanes), op->name, {idx});
  }

  Expr visit(const Ramp* op) override {
    failed_ = true;  // already vectorized: nested vectorization is not supported
    return op;
  }
  Expr visit(const Broadcast* op) override {
    failed_ = true;
    return op;
  }

  Stmt visit(const Store* op) override {
    Expr idx = mutate(op->indices[0]);
    Expr value = mutate(op->value);
    if (!is_vector(idx) && is_vector(value)) {
      failed_ = true;  // every lane would write the same element
      return op;
    }
    if (is_vector(idx)) value = widen(value);
    if (idx.same_as(op->indices[0]) && value.same_as(op->value)) return op;
    return Store::make(op->name, {idx}, value);
  }

  Stmt visit(const LetStmt* op) override {
    Expr v = mutate(op->value);
    bool vec = is_vector(v);
    if (vec) vector_lets_.insert(op->name);
    Stmt body = mutate(op->body);
    if (vec) vector_lets_.erase(op->name);
    if (v.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmt::make(op->name, v, body);
  }

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (is_vector(min) || is_vector(extent) || op->kind == ForKind::kParallel || op->kind == ForKind::kVectorized) {
      failed_ = true;
      return op;
    }
    Stmt body = mutate(op->body);
    if (body.same_as(op->body)) return op;
    return For::make(op->name, op->min, op->extent, op->kind, body, op->thread_tag);
  }

  Stmt visit(const Allocate* op) override {
    failed_ = true;  // a buffer per lane is not supported
    return op;
  }

 private:
  std::string var_;
  Expr min_;
  int lanes_;
  bool failed_ = false;
  std::unordered_set<std::string> vector_lets_;
};

// Lanes of the next chunk of a vectorized loop with `rest` iterations left: the largest
// power of two while 16 or more remain, then the whole rest (7; 14; 28 = 16 + 12;
// 49 = 32 + 16 + 1), which a backend runs as one partial vector of the next power of
// two lanes (masked loads and stores) rather than as 4 + 2 + 1 pieces.
int64_t chunk_lanes(int64_t rest) {
  int64_t lanes = 64;
  while (lanes > rest) lanes /= 2;
  return lanes >= 16 ? lanes : rest;
}

// The loop as vector code, in chunks of chunk_lanes(): never a vector of more than 16
// lanes that is not a power of two, since LLVM's x86 backend legalizes a <28 x float>
// by widening and splitting it, which spills every accumulator of a register tile (a
// 28-lane GEMM-like tile ran 20x slower than a 16-lane one). The lanes of a vectorized
// loop are independent, so chunks may run in sequence. A chunk of one lane is a serial
// one-iteration loop. Undefined when a chunk fails.
Stmt vectorize_in_chunks(const std::string& name, const Expr& min, int64_t extent, const Stmt& body) {
  std::vector<Stmt> chunks;
  int64_t offset = 0;
  while (offset < extent) {
    const int64_t lanes = chunk_lanes(extent - offset);
    Expr base = offset == 0 ? min : Add::make(min, make_int(offset));
    if (lanes == 1) {
      chunks.push_back(For::make(name, base, make_int(1), ForKind::kSerial, body));
    } else {
      LaneWidener w(name, base, int(lanes));
      Stmt vec = w.mutate(body);
      if (w.failed()) return Stmt();
      chunks.push_back(vec);
    }
    offset += lanes;
  }
  return chunks.size() == 1 ? chunks[0] : Block::make(std::move(chunks));
}

class LoopVectorizer : public IRMutator {
 protected:
  Stmt visit(const For* op) override {
    Stmt body = mutate(op->body);
    const int64_t* extent = as_const_int(op->extent);
    if (op->kind == ForKind::kVectorized) {
      if (extent && *extent > 1 && *extent <= 64) {
        Stmt vec = vectorize_in_chunks(op->name, op->min, *extent, body);
        if (vec.defined()) return vec;
      }
      return For::make(op->name, op->min, op->extent, ForKind::kSerial, body);
    }
    if (body.same_as(op->body)) return op;
    return For::make(op->name, op->min, op->extent, op->kind, body, op->thread_tag);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return LoopVectorizer().mutate(s); }

}  // namespace tensorgym
