// The cuda target: barriers between the threads of a block that exchange data through
// shared memory. Inside each kernel, walking its statements in order with, per shared
// buffer, whether it was written and whether it was read since the last barrier, a
// barrier goes before a statement that reads a buffer written since (read after
// write: the tile another thread loaded) or writes one read since (write after read:
// the next tile over one still in use). A loop is walked as if twice, so that what
// its last iteration leaves pending reaches its first (the barrier at the top of a
// k-tile loop). Thread loops are not entered: check_gpu_scopes.cc keeps shared writes
// and the reads that need them in different ones, so barriers sit outside them, where
// every thread of the block arrives (and a run of thread loops one after another, the
// interpreter's, computes the same).
#include <string>
#include <vector>

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym {
namespace {

// Per shared buffer, what happened to it since the last barrier.
struct Pending {
  std::vector<bool> written, read;
  void clear() {
    written.assign(written.size(), false);
    read.assign(read.size(), false);
  }
  void merge(const Pending& o) {
    for (size_t i = 0; i < written.size(); ++i) {
      written[i] = written[i] || o.written[i];
      read[i] = read[i] || o.read[i];
    }
  }
};

class BarrierPlacer {
 public:
  explicit BarrierPlacer(std::vector<std::string> buffers) : buffers_(std::move(buffers)) {}

  Stmt place(const Stmt& body) {
    Pending p{std::vector<bool>(buffers_.size()), std::vector<bool>(buffers_.size())};
    return walk(body, p);
  }

 private:
  std::vector<std::string> buffers_;

  std::vector<BufferUse> uses(const Stmt& s) const {
    std::vector<BufferUse> u;
    u.reserve(buffers_.size());
    for (const std::string& b : buffers_) u.push_back(buffer_use(s, b));
    return u;
  }

  static bool any_use(const std::vector<BufferUse>& u) {
    for (const BufferUse& x : u)
      if (x.writes || x.reads) return true;
    return false;
  }

  // Whether a statement that uses the buffers `u` must wait for what is pending.
  static bool conflicts(const std::vector<BufferUse>& u, const Pending& p) {
    for (size_t i = 0; i < u.size(); ++i)
      if ((u[i].reads && p.written[i]) || (u[i].writes && p.read[i])) return true;
    return false;
  }

  // `s` as one step: a barrier before it where it needs one.
  Stmt step(const Stmt& s, const std::vector<BufferUse>& u, Pending& p) const {
    const bool barrier = conflicts(u, p);
    if (barrier) p.clear();
    for (size_t i = 0; i < u.size(); ++i) {
      p.written[i] = p.written[i] || u[i].writes;
      p.read[i] = p.read[i] || u[i].reads;
    }
    return barrier ? Block::make({Barrier::make(), s}) : s;
  }

  Stmt walk(const Stmt& s, Pending& p) {
    if (!s.defined()) return s;
    const std::vector<BufferUse> u = uses(s);
    if (!any_use(u)) return s;
    switch (s.kind()) {
      case NodeKind::kBlock: {
        std::vector<Stmt> out;
        for (const Stmt& x : s.as<Block>()->stmts) out.push_back(walk(x, p));
        return Block::make(std::move(out));
      }
      case NodeKind::kFor: {
        const For* op = s.as<For>();
        const GpuDim dim = parse_gpu_tag(op->thread_tag).dim;
        if (dim == GpuDim::kThread) return step(s, u, p);
        if (dim == GpuDim::kBlock) return For::make(op->name, op->min, op->extent, op->kind, walk(op->body, p), op->thread_tag);
        // A barrier the loop needs at its entry goes before it, not into every iteration.
        const bool before = conflicts(u, p);
        if (before) p.clear();
        // What one iteration leaves pending is pending at the start of the next.
        Pending first = p;
        walk(op->body, first);
        p.merge(first);
        Stmt loop = For::make(op->name, op->min, op->extent, op->kind, walk(op->body, p), op->thread_tag);
        return before ? Block::make({Barrier::make(), loop}) : loop;
      }
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        return LetStmt::make(op->name, op->value, walk(op->body, p));
      }
      case NodeKind::kAllocate: return s.as<Allocate>()->with_body(walk(s.as<Allocate>()->body, p));
      case NodeKind::kIfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        Pending other = p;
        Stmt then_case = walk(op->then_case, p);
        Stmt else_case = walk(op->else_case, other);
        p.merge(other);
        return IfThenElse::make(op->condition, then_case, else_case);
      }
      default: return step(s, u, p);
    }
  }
};

// The shared buffers a kernel allocates.
std::vector<std::string> shared_buffers(const For* kernel) {
  struct Finder : IRVisitor {
    std::vector<std::string> names;
    void visit(const Allocate* op) override {
      if (op->scope == MemoryScope::kShared) names.push_back(op->name);
      IRVisitor::visit(op);
    }
  } finder;
  finder.visit_stmt(Stmt(kernel));
  return finder.names;
}

class KernelRewriter : public IRMutator {
 protected:
  Stmt visit(const For* op) override {
    if (!is_launch_loop(op)) return IRMutator::visit(op);
    std::vector<std::string> buffers = shared_buffers(op);
    if (buffers.empty()) return op;
    return BarrierPlacer(std::move(buffers)).place(op);
  }
};

}  // namespace

Stmt insert_gpu_barriers(const Stmt& body) { return KernelRewriter().mutate(body); }

}  // namespace tensorgym
