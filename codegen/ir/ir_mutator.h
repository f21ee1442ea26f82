// Rebuilding traversal. Override visit for the nodes to rewrite; the defaults mutate
// the children and rebuild a node only when a child changed (sharing is preserved).
#pragma once

#include <vector>

#include "codegen/ir/ir_visitor.h"

namespace tensorgym {

// Maps `f` over `in`. Returns true when some element changed (is not the same node),
// and then *out holds every mapped element; *out stays empty, and nothing is
// allocated, while none changed.
template <class T, class F>
bool map_if_changed(const std::vector<T>& in, std::vector<T>* out, F&& f) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    T x = f(in[i]);
    if (out->empty()) {
      if (x.same_as(in[i])) continue;
      out->reserve(in.size());
      out->insert(out->end(), in.begin(), in.begin() + long(i));
    }
    out->push_back(std::move(x));
  }
  return !out->empty();
}

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define TG_DECLARE_MUTATE_EXPR(Node) virtual Expr visit(const Node* op);
  TG_FOR_EACH_EXPR_NODE(TG_DECLARE_MUTATE_EXPR)
#undef TG_DECLARE_MUTATE_EXPR
#define TG_DECLARE_MUTATE_STMT(Node) virtual Stmt visit(const Node* op);
  TG_FOR_EACH_STMT_NODE(TG_DECLARE_MUTATE_STMT)
#undef TG_DECLARE_MUTATE_STMT

  // Mutates each element; returns true when any changed, and then *out holds every
  // element (*out is left empty when none changed, so nothing is allocated).
  bool mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out);
};

}  // namespace tensorgym
