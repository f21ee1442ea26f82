#include "codegen/analysis/constant_work.h"

#include <algorithm>
#include <set>
#include <string>

#include "codegen/ir/ir_visitor.h"

namespace tensorgym {
namespace {

// The buffers a statement reads and writes, its own allocations left out.
struct Accesses : IRVisitor {
  std::set<std::string> reads, writes, local;
  void visit(const Load* op) override {
    reads.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    writes.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    local.insert(op->name);
    IRVisitor::visit(op);
  }
  static Accesses of(const Stmt& s) {
    Accesses a;
    a.visit_stmt(s);
    for (const std::string& name : a.local) a.reads.erase(name), a.writes.erase(name);
    return a;
  }
};

}  // namespace

std::optional<ConstantWork> split_constant_work(const LoopNest& nest) {
  std::set<std::string> constant;  // constant inputs, then the buffers constant work fills
  for (const BufferArg& in : nest.inputs)
    if (in.constant) constant.insert(in.name);
  if (constant.empty() || !nest.body.defined()) return std::nullopt;

  // The root: a chain of allocations around the statements that run in order.
  std::vector<const Allocate*> roots;
  Stmt inner = nest.body;
  while (const Allocate* a = inner.as<Allocate>()) {
    roots.push_back(a);
    inner = a->body;
  }
  std::vector<Stmt> stmts;
  if (const Block* b = inner.as<Block>())
    stmts = b->stmts;
  else
    stmts.push_back(inner);
  std::vector<Accesses> access;
  for (const Stmt& s : stmts) access.push_back(Accesses::of(s));

  // A root buffer joins `constant` when each statement writing it writes only it and
  // reads only constant buffers and itself (a reduction reads what it accumulates);
  // until none more does.
  std::vector<const Allocate*> filled;  // in the order they joined
  for (bool grew = true; grew;) {
    grew = false;
    for (const Allocate* a : roots) {
      if (constant.count(a->name)) continue;
      bool written = false, ok = true;
      for (const Accesses& acc : access) {
        if (!acc.writes.count(a->name)) continue;
        written = true;
        ok = acc.writes.size() == 1 && std::all_of(acc.reads.begin(), acc.reads.end(), [&](const std::string& r) {
               return r == a->name || constant.count(r) > 0;
             });
        if (!ok) break;
      }
      if (written && ok) {
        constant.insert(a->name);
        filled.push_back(a);
        grew = true;
      }
    }
  }
  if (filled.empty()) return std::nullopt;

  ConstantWork work;
  std::set<std::string> prepared_names;
  // In the order of the statements that fill them.
  for (size_t i = 0; i < stmts.size(); ++i) {
    if (access[i].writes.size() != 1) continue;
    const std::string& name = *access[i].writes.begin();
    for (const Allocate* a : filled) {
      if (a->name != name || prepared_names.count(name)) continue;
      prepared_names.insert(name);
      work.prepared.push_back({a->name, a->dtype, {a->num_elements()}});
    }
  }
  std::vector<Stmt> before, after;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const bool is_constant = access[i].writes.size() == 1 && prepared_names.count(*access[i].writes.begin());
    (is_constant ? before : after).push_back(stmts[i]);
  }
  if (after.empty()) return std::nullopt;  // nothing left to time (no output's work is constant)
  Stmt main = Block::make(std::move(after));
  for (auto it = roots.rbegin(); it != roots.rend(); ++it)
    if (!prepared_names.count((*it)->name)) main = (*it)->with_body(main);

  work.prologue.inputs = nest.inputs;
  work.prologue.outputs = work.prepared;
  work.prologue.body = Block::make(std::move(before));
  work.prologue.target = nest.target;
  work.prologue.schedule = nest.schedule;
  std::vector<BufferArg> main_inputs = nest.inputs.get();
  main_inputs.insert(main_inputs.end(), work.prepared.begin(), work.prepared.end());
  work.main.inputs = std::move(main_inputs);
  work.main.outputs = nest.outputs;
  work.main.body = main;
  work.main.target = nest.target;
  work.main.schedule = nest.schedule;
  return work;
}

}  // namespace tensorgym
