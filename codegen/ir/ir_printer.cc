#include "codegen/ir/ir_printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "codegen/ir/ir_visitor.h"

namespace tensorgym {
namespace {

// Appends to a string (printing runs on every loop_nest observation: no iostreams).
class TextOut {
 public:
  explicit TextOut(std::string& out) : out_(out) {}
  TextOut& operator<<(char c) {
    out_ += c;
    return *this;
  }
  TextOut& operator<<(const char* s) {
    out_.append(s, std::strlen(s));  // inlined, a literal's length is a constant
    return *this;
  }
  TextOut& operator<<(const std::string& s) {
    out_ += s;
    return *this;
  }
  TextOut& operator<<(int64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, end);
    return *this;
  }
  TextOut& operator<<(int v) { return *this << int64_t(v); }

 private:
  std::string& out_;
};

// Binding strength, loosest first; mirrors the parser's grammar.
enum Prec { kPrecOr = 1, kPrecAnd, kPrecCmp, kPrecAdd, kPrecMul, kPrecUnary, kPrecAtom };

class Printer : public IRVisitor {
 public:
  explicit Printer(std::string& out) : os_(out) {}

  void print(const Expr& e, int context_prec = 0) {
    int saved = context_;
    context_ = context_prec;
    visit_expr(e);
    context_ = saved;
  }
  void print(const Stmt& s) { visit_stmt(s); }

 private:
  TextOut os_;
  int context_ = 0;
  int indent_ = 0;

  void open(int prec) {
    if (prec < context_) os_ << '(';
  }
  void close(int prec) {
    if (prec < context_) os_ << ')';
  }
  // Left-associative binary operator: the right side binds one level tighter.
  void binary(const Expr& a, const Expr& b, const char* op, int prec, bool chain = true) {
    open(prec);
    print(a, chain ? prec : prec + 1);
    os_ << ' ' << op << ' ';
    print(b, prec + 1);
    close(prec);
  }
  void call(const char* name, std::initializer_list<Expr> args) {
    os_ << name << '(';
    bool first = true;
    for (const Expr& a : args) {
      if (!first) os_ << ", ";
      first = false;
      print(a);
    }
    os_ << ')';
  }
  void indices(const std::vector<Expr>& idx) {
    os_ << '[';
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) os_ << ", ";
      print(idx[i]);
    }
    os_ << ']';
  }
  void line() {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
  }
  void block_body(const Stmt& s) {
    os_ << " {\n";
    ++indent_;
    print(s);
    --indent_;
    line();
    os_ << "}\n";
  }

  void visit(const IntImm* op) override {
    if (op->type.is_bool()) {
      os_ << (op->value ? "true" : "false");
      return;
    }
    if (op->value < 0) open(kPrecUnary);
    os_ << op->value;
    if (op->value < 0) close(kPrecUnary);
  }
  void visit(const FloatImm* op) override {
    bool neg = std::signbit(op->value) && !std::isnan(op->value);
    if (neg) open(kPrecUnary);
    os_ << float_literal(op->value, op->type);
    if (neg) close(kPrecUnary);
  }
  void visit(const Variable* op) override { os_ << op->name; }
  void visit(const Cast* op) override { call(op->type.element_of().str().c_str(), {op->value}); }
  void visit(const Add* op) override { binary(op->a, op->b, "+", kPrecAdd); }
  void visit(const Sub* op) override { binary(op->a, op->b, "-", kPrecAdd); }
  void visit(const Mul* op) override { binary(op->a, op->b, "*", kPrecMul); }
  void visit(const Div* op) override { binary(op->a, op->b, "/", kPrecMul); }
  void visit(const Mod* op) override { binary(op->a, op->b, "%", kPrecMul); }
  void visit(const Min* op) override { call("min", {op->a, op->b}); }
  void visit(const Max* op) override { call("max", {op->a, op->b}); }
  void visit(const EQ* op) override { binary(op->a, op->b, "==", kPrecCmp, false); }
  void visit(const NE* op) override { binary(op->a, op->b, "!=", kPrecCmp, false); }
  void visit(const LT* op) override { binary(op->a, op->b, "<", kPrecCmp, false); }
  void visit(const LE* op) override { binary(op->a, op->b, "<=", kPrecCmp, false); }
  void visit(const GT* op) override { binary(op->a, op->b, ">", kPrecCmp, false); }
  void visit(const GE* op) override { binary(op->a, op->b, ">=", kPrecCmp, false); }
  void visit(const And* op) override { binary(op->a, op->b, "&&", kPrecAnd); }
  void visit(const Or* op) override { binary(op->a, op->b, "||", kPrecOr); }
  void visit(const Not* op) override {
    open(kPrecUnary);
    os_ << '!';
    print(op->a, kPrecUnary);
    close(kPrecUnary);
  }
  void visit(const Select* op) override { call("select", {op->condition, op->true_value, op->false_value}); }
  void visit(const Load* op) override {
    os_ << op->name;
    indices(op->indices);
  }
  void visit(const Call* op) override {
    os_ << call_op_name(op->op) << '(';
    for (size_t i = 0; i < op->args.size(); ++i) {
      if (i) os_ << ", ";
      print(op->args[i]);
    }
    os_ << ')';
  }
  void visit(const Ramp* op) override {
    os_ << "ramp(";
    print(op->base);
    os_ << ", ";
    print(op->stride);
    os_ << ", " << op->lanes << ')';
  }
  void visit(const Broadcast* op) override {
    os_ << "broadcast(";
    print(op->value);
    os_ << ", " << op->lanes << ')';
  }

  void visit(const LetStmt* op) override {
    line();
    os_ << "let " << op->name << " = ";
    print(op->value);
    os_ << '\n';
    print(op->body);
  }
  void visit(const For* op) override {
    line();
    if (op->kind != ForKind::kSerial) os_ << for_kind_name(op->kind) << ' ';
    os_ << "for " << op->name << " in ";
    if (is_const(op->min, 0)) {
      os_ << "0.." ;
      print(op->extent, kPrecAtom);
    } else {
      print(op->min, kPrecAtom);
      os_ << "..";
      print(op->min, kPrecAdd);
      os_ << " + ";
      print(op->extent, kPrecAdd + 1);
    }
    block_body(op->body);
  }
  void visit(const Store* op) override {
    line();
    os_ << op->name;
    indices(op->indices);
    os_ << " = ";
    print(op->value);
    os_ << '\n';
  }
  void visit(const Allocate* op) override {
    line();
    os_ << "allocate " << op->name << ": " << op->dtype.str() << '[';
    for (size_t i = 0; i < op->extents.size(); ++i) os_ << (i ? ", " : "") << op->extents[i];
    os_ << ']';
    block_body(op->body);
  }
  void visit(const IfThenElse* op) override {
    line();
    os_ << "if (";
    print(op->condition);
    os_ << ')';
    block_body(op->then_case);
    if (op->else_case.defined()) {
      line();
      os_ << "else";
      block_body(op->else_case);
    }
  }
  void visit(const Block* op) override {
    for (const Stmt& s : op->stmts) print(s);
  }
};

}  // namespace

std::string float_literal(double v, DataType t) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  // One digit: what the loop below finds at its first precision ("0.0", "-3.0").
  if (v == std::trunc(v) && std::fabs(v) <= 9) {
    std::string s = std::signbit(v) ? "-" : "";
    s += char('0' + int(std::fabs(v)));
    return s + ".0";
  }
  char buf[64];
  // The shortest %g precision that reads back exactly at the type's width.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    double back = std::strtod(buf, nullptr);
    if (t.bits == 32 ? float(back) == float(v) : back == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string to_string(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  std::string out;
  Printer(out).print(e);
  return out;
}

std::string to_string(const Stmt& s) {
  std::string out;
  out.reserve(1024);
  append_to_string(s, &out);
  return out;
}

void append_to_string(const Stmt& s, std::string* out) {
  if (!s.defined()) {
    *out += "<undefined>\n";
    return;
  }
  Printer(*out).print(s);
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

}  // namespace tensorgym
