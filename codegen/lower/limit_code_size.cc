// Keeps generated code proportional to the loop nest, whatever the schedule asks:
//  - unrolling: an unrolled loop stays unrolled only if its copies come to at most
//    `max_statements` statements (nested unrolled loops count inside it), so factors
//    that multiply through nests and through stages computed inside them cannot ask
//    the compiler for millions of statements;
//  - a parallel loop nested inside another parallel loop runs serially (the runtime
//    would run it serially anyway) and is not outlined again for every copy.
// Both are performance hints, so the program computes the same thing.
#include "codegen/ir/ir_mutator.h"
#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

class CodeSizeLimiter {
 public:
  explicit CodeSizeLimiter(int64_t max_statements) : max_(max_statements) {}

  // The statement and, in *size, how many statements its code will hold.
  Stmt limit(const Stmt& s, int64_t* size) {
    *size = 0;
    if (!s.defined()) return s;
    switch (s.kind()) {
      case NodeKind::kFor: return limit_for(s.as<For>(), size);
      case NodeKind::kBlock: {
        std::vector<Stmt> out;
        const bool changed = map_if_changed(s.as<Block>()->stmts, &out, [&](const Stmt& x) {
          int64_t n = 0;
          Stmt y = limit(x, &n);
          *size += n;
          return y;
        });
        return changed ? Block::make(std::move(out)) : s;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        int64_t a = 0, b = 0;
        Stmt t = limit(op->then_case, &a), e = limit(op->else_case, &b);
        *size = 1 + a + b;
        return t.same_as(op->then_case) && e.same_as(op->else_case) ? s : IfThenElse::make(op->condition, t, e);
      }
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        Stmt body = limit(op->body, size);
        *size += 1;
        return body.same_as(op->body) ? s : LetStmt::make(op->name, op->value, body);
      }
      case NodeKind::kAllocate: {
        const Allocate* op = s.as<Allocate>();
        Stmt body = limit(op->body, size);
        *size += 1;
        return body.same_as(op->body) ? s : op->with_body(body);
      }
      default: *size = 1; return s;
    }
  }

 private:
  Stmt limit_for(const For* op, int64_t* size) {
    ForKind kind = op->kind;
    if (kind == ForKind::kParallel && parallel_depth_ > 0) kind = ForKind::kSerial;
    if (kind == ForKind::kParallel) ++parallel_depth_;
    int64_t body_size = 0;
    Stmt body = limit(op->body, &body_size);
    if (kind == ForKind::kParallel) --parallel_depth_;
    const int64_t* e = as_const_int(op->extent);
    if (kind == ForKind::kUnrolled && (!e || *e * body_size > max_)) kind = ForKind::kSerial;
    *size = kind == ForKind::kUnrolled ? *e * body_size : 1 + body_size;
    if (body.same_as(op->body) && kind == op->kind) return op;
    return For::make(op->name, op->min, op->extent, kind, body, op->thread_tag);
  }

  int64_t max_;
  int parallel_depth_ = 0;
};

}  // namespace

Stmt limit_code_size(const Stmt& s, int64_t max_unrolled_statements) {
  int64_t size = 0;
  return CodeSizeLimiter(max_unrolled_statements).limit(s, &size);
}

}  // namespace tensorgym
