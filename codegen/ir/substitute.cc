#include "codegen/ir/substitute.h"

#include "codegen/ir/ir_mutator.h"

namespace tensorgym {
namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& values) : values_(values) {}

 protected:
  Expr visit(const Variable* op) override {
    if (hidden_.count(op->name)) return op;
    auto it = values_.find(op->name);
    return it == values_.end() ? Expr(op) : it->second;
  }
  Stmt visit(const For* op) override { return with_hidden(op->name, [&] { return IRMutator::visit(op); }); }
  Stmt visit(const LetStmt* op) override {
    Expr v = mutate(op->value);
    Stmt b = with_hidden(op->name, [&] { return mutate(op->body); });
    if (v.same_as(op->value) && b.same_as(op->body)) return op;
    return LetStmt::make(op->name, v, b);
  }

 private:
  template <class F>
  Stmt with_hidden(const std::string& name, F&& f) {
    if (!values_.count(name) || hidden_.count(name)) return f();
    hidden_.insert(name);
    Stmt s = f();
    hidden_.erase(name);
    return s;
  }
  const VarMap& values_;
  std::unordered_set<std::string> hidden_;
};

class LoadReplacer : public IRMutator {
 public:
  LoadReplacer(const std::string& buffer, const std::function<Expr(const Load*)>& rewrite)
      : buffer_(buffer), rewrite_(rewrite) {}

 protected:
  Expr visit(const Load* op) override {
    Expr inner = IRMutator::visit(op);
    const Load* l = inner.as<Load>();
    return l && l->name == buffer_ ? rewrite_(l) : inner;
  }

 private:
  const std::string& buffer_;
  const std::function<Expr(const Load*)>& rewrite_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& values) {
  if (values.empty()) return e;
  return Substituter(values).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& values) {
  if (values.empty()) return s;
  return Substituter(values).mutate(s);
}

Expr replace_loads(const Expr& e, const std::string& buffer, const std::function<Expr(const Load*)>& rewrite) {
  return LoadReplacer(buffer, rewrite).mutate(e);
}

bool uses_var(const Expr& e, const std::string& name) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) {
    if (const Variable* v = n.as<Variable>()) found |= v->name == name;
  });
  return found;
}

bool uses_any_var(const Expr& e, const std::unordered_set<std::string>& names) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) {
    if (const Variable* v = n.as<Variable>()) found |= names.count(v->name) > 0;
  });
  return found;
}

}  // namespace tensorgym
