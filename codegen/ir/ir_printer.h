// Text form of expressions (the program language's own syntax) and of loop nests.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/ir/expr.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
// Appends to_string(s) to *out.
void append_to_string(const Stmt& s, std::string* out);

// A printed statement and where the text of each statement in it is, so that a later
// print of a tree that shares statements with it copies their text instead of
// printing them again: an environment step changes a few statements of the last nest
// (reuse_nest.h) and prints the whole new one.
class PrintedStmts {
 public:
  // to_string(root), without the "<undefined>" of an undefined root.
  const std::string& text() const { return text_; }
  // Statements whose text is in text() (copied ones and those inside them included).
  size_t statements() const { return entries_.size(); }

 private:
  friend class StmtPrint;
  struct Entry {
    const BaseStmtNode* node;
    int indent;
    size_t start, size;
  };
  Stmt root_;  // keeps the statements alive: their addresses are the keys
  std::string text_;
  std::vector<Entry> entries_;   // in the order their text ends (children first)
  std::vector<size_t> by_node_;  // entries_ indices sorted by (node, indent)
  const Entry* find(const BaseStmtNode* node, int indent) const;
};

// Prints `s` as to_string does, copying the text of every statement that `previous`
// (may be null) printed at the same indentation.
std::shared_ptr<const PrintedStmts> print_reusing(const Stmt& s, const PrintedStmts* previous);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

// Shortest text that reads back to the same value of the type ("0.5", "1e-07", "3.0").
std::string float_literal(double v, DataType t);

}  // namespace tensorgym
