// pragma(loop, auto_unroll_max_step, n): inside that loop, every serial loop whose
// whole execution is at most n statement instances is marked unrolled (TVM's rule).
#include <algorithm>

#include "codegen/ir/ir_mutator.h"
#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

// Statement instances one execution of `s` runs (loop extents multiply).
int64_t steps_of(const Stmt& s) {
  if (!s.defined()) return 0;
  if (const For* f = s.as<For>()) {
    const int64_t* e = as_const_int(f->extent);
    int64_t inner = steps_of(f->body);
    return e ? std::min<int64_t>(*e * inner, int64_t(1) << 40) : int64_t(1) << 40;
  }
  if (const Block* b = s.as<Block>()) {
    int64_t n = 0;
    for (const Stmt& x : b->stmts) n += steps_of(x);
    return n;
  }
  if (const IfThenElse* i = s.as<IfThenElse>()) return std::max(steps_of(i->then_case), steps_of(i->else_case));
  if (const LetStmt* l = s.as<LetStmt>()) return steps_of(l->body);
  if (const Allocate* a = s.as<Allocate>()) return steps_of(a->body);
  return 1;
}

class AutoUnroll : public IRMutator {
 public:
  explicit AutoUnroll(std::unordered_map<std::string, int64_t> pragmas) : pragmas_(std::move(pragmas)) {}

 protected:
  Stmt visit(const For* op) override {
    int64_t saved = max_step_;
    bool marks = false;
    if (auto it = pragmas_.find(op->name); it != pragmas_.end()) {
      max_step_ = it->second;
      marks = true;
    }
    Stmt body = mutate(op->body);
    max_step_ = saved;
    ForKind kind = op->kind;
    if (!marks && max_step_ > 0 && kind == ForKind::kSerial && op->thread_tag.empty() && as_const_int(op->extent)) {
      int64_t steps = *as_const_int(op->extent) * steps_of(body);
      if (steps <= max_step_) kind = ForKind::kUnrolled;
    }
    if (body.same_as(op->body) && kind == op->kind) return op;
    return For::make(op->name, op->min, op->extent, kind, body, op->thread_tag);
  }

 private:
  std::unordered_map<std::string, int64_t> pragmas_;  // loop variable -> max step
  int64_t max_step_ = 0;
};

}  // namespace

Stmt mark_auto_unroll(const Stmt& s, const LoweringContext& ctx) {
  std::unordered_map<std::string, int64_t> pragmas;
  for (const StageSchedule* stage : ctx.stages)
    for (const Loop& loop : stage->loops)
      for (const auto& [key, value] : loop.pragmas)
        if (key == "auto_unroll_max_step") pragmas[LoweringContext::loop_var(*stage, loop)] = value;
  if (pragmas.empty()) return s;
  return AutoUnroll(std::move(pragmas)).mutate(s);
}

}  // namespace tensorgym
