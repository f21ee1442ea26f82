#include "codegen/analysis/scratch.h"

#include <algorithm>

#include "codegen/ir/interval.h"

namespace tensorgym {
namespace {

class ScratchPeak {
 public:
  explicit ScratchPeak(int threads) : threads_(std::max(threads, 1)) {}

  // Peak bytes live during one execution of `s`, each allocation counted `copies` times.
  int64_t peak(const Stmt& s, int64_t copies, bool in_parallel) {
    if (!s.defined()) return 0;
    switch (s.kind()) {
      case NodeKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        const int64_t bytes = a->num_elements() * a->dtype.bytes() * int64_t(a->dtype.lanes);
        return bytes * copies + peak(a->body, copies, in_parallel);
      }
      case NodeKind::kFor: {
        const For* f = s.as<For>();
        if (f->kind == ForKind::kParallel && !in_parallel) {
          const IntRange ext = constant_bounds(f->extent, {});
          const int64_t extent = ext.max == IntRange::kPosInf ? int64_t(threads_) : std::max<int64_t>(ext.max, 1);
          return peak(f->body, copies * std::min<int64_t>(threads_, extent), true);
        }
        return peak(f->body, copies, in_parallel);
      }
      case NodeKind::kBlock: {
        int64_t m = 0;
        for (const Stmt& c : s.as<Block>()->stmts) m = std::max(m, peak(c, copies, in_parallel));
        return m;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* i = s.as<IfThenElse>();
        return std::max(peak(i->then_case, copies, in_parallel), peak(i->else_case, copies, in_parallel));
      }
      case NodeKind::kLetStmt: return peak(s.as<LetStmt>()->body, copies, in_parallel);
      default: return 0;
    }
  }

 private:
  int threads_;
};

}  // namespace

int64_t peak_scratch_bytes(const LoopNest& nest, int threads) { return ScratchPeak(threads).peak(nest.body, 1, false); }

}  // namespace tensorgym
