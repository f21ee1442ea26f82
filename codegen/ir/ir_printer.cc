#include "codegen/ir/ir_printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string_view>

namespace tensorgym {
namespace {

// Collects text in a buffer on the stack and appends it to the string in large
// pieces (printing runs on every loop_nest observation): a piece costs one bounds
// check and a copy of constant size or a few bytes, with no iostreams, no
// temporaries, and integers formatted in place.
class TextOut {
 public:
  explicit TextOut(std::string& out) : out_(out) {}
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;
  ~TextOut() { flush(); }

  void put(char c) {
    if (len_ == kSize) flush();
    buf_[len_++] = c;
  }
  // A literal: its length is a constant, so the copy is a few moves.
  template <size_t N>
  void put(const char (&s)[N]) {
    static_assert(N - 1 <= kSize);
    if (len_ + (N - 1) > kSize) flush();
    std::memcpy(buf_ + len_, s, N - 1);
    len_ += N - 1;
  }
  void put(std::string_view s) {
    if (len_ + s.size() > kSize) {
      flush();
      if (s.size() > kSize) return (void)out_.append(s);
    }
    // Names are short: a byte loop beats a call to memcpy.
    for (char c : s) buf_[len_++] = c;
  }
  void put_int(int64_t v) {
    if (len_ + 20 > kSize) flush();  // 20: "-9223372036854775808"
    len_ = size_t(std::to_chars(buf_ + len_, buf_ + kSize, v).ptr - buf_);
  }
  void indent(int levels) {
    for (int i = 0; i < levels; ++i) put("  ");
  }
  // Where the next byte goes, counted from the start of the string.
  size_t position() const { return out_.size() + len_; }
  // Appends again the `n` bytes written from `pos` (an earlier position()).
  void put_earlier(size_t pos, size_t n) {
    if (len_ + n > kSize) flush();
    if (n > kSize) {
      const std::string copy = out_.substr(pos, n);
      return (void)out_.append(copy);
    }
    const size_t flushed = out_.size();
    size_t done = 0;
    if (pos < flushed) {
      done = std::min(n, flushed - pos);
      std::memcpy(buf_ + len_, out_.data() + pos, done);
    }
    // The rest is still in the buffer, before len_: no overlap with where it goes.
    if (done < n) std::memcpy(buf_ + len_ + done, buf_ + (pos + done - flushed), n - done);
    len_ += n;
  }

 private:
  static constexpr size_t kSize = 2048;
  void flush() {
    out_.append(buf_, len_);
    len_ = 0;
  }
  std::string& out_;
  size_t len_ = 0;
  char buf_[kSize];
};

// Binding strength, loosest first; mirrors the parser's grammar.
enum Prec { kPrecOr = 1, kPrecAnd, kPrecCmp, kPrecAdd, kPrecMul, kPrecUnary, kPrecAtom };

// A switch over node kinds rather than an IRVisitor: no virtual call per node and
// the context precedence passed down instead of saved and restored.
class Printer {
 public:
  explicit Printer(std::string& out) : os_(out) {}

  // `context`: the precedence the surrounding syntax binds with; a looser operator
  // is parenthesized.
  void expr(const Expr& e, int context = 0) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case NodeKind::kIntImm: return int_imm(static_cast<const IntImm*>(e.get()), context);
      case NodeKind::kFloatImm: {
        const FloatImm* op = static_cast<const FloatImm*>(e.get());
        bool paren = std::signbit(op->value) && !std::isnan(op->value) && kPrecUnary < context;
        if (paren) os_.put('(');
        os_.put(float_literal(op->value, op->type));
        if (paren) os_.put(')');
        return;
      }
      case NodeKind::kVariable: return os_.put(static_cast<const Variable*>(e.get())->name);
      case NodeKind::kCast: {
        const Cast* op = static_cast<const Cast*>(e.get());
        os_.put(op->type.element_of().str());
        return call_args({&op->value});
      }
      case NodeKind::kAdd: return binary<Add>(e, " + ", kPrecAdd, context);
      case NodeKind::kSub: return binary<Sub>(e, " - ", kPrecAdd, context);
      case NodeKind::kMul: return binary<Mul>(e, " * ", kPrecMul, context);
      case NodeKind::kDiv: return binary<Div>(e, " / ", kPrecMul, context);
      case NodeKind::kMod: return binary<Mod>(e, " % ", kPrecMul, context);
      case NodeKind::kMin: return min_max<Min>(e, "min");
      case NodeKind::kMax: return min_max<Max>(e, "max");
      case NodeKind::kEQ: return binary<EQ>(e, " == ", kPrecCmp, context, false);
      case NodeKind::kNE: return binary<NE>(e, " != ", kPrecCmp, context, false);
      case NodeKind::kLT: return binary<LT>(e, " < ", kPrecCmp, context, false);
      case NodeKind::kLE: return binary<LE>(e, " <= ", kPrecCmp, context, false);
      case NodeKind::kGT: return binary<GT>(e, " > ", kPrecCmp, context, false);
      case NodeKind::kGE: return binary<GE>(e, " >= ", kPrecCmp, context, false);
      case NodeKind::kAnd: return binary<And>(e, " && ", kPrecAnd, context);
      case NodeKind::kOr: return binary<Or>(e, " || ", kPrecOr, context);
      case NodeKind::kNot: {
        bool paren = kPrecUnary < context;
        if (paren) os_.put('(');
        os_.put('!');
        expr(static_cast<const Not*>(e.get())->a, kPrecUnary);
        if (paren) os_.put(')');
        return;
      }
      case NodeKind::kSelect: {
        const Select* op = static_cast<const Select*>(e.get());
        os_.put("select");
        return call_args({&op->condition, &op->true_value, &op->false_value});
      }
      case NodeKind::kLoad: {
        const Load* op = static_cast<const Load*>(e.get());
        os_.put(op->name);
        return indices(op->indices);
      }
      case NodeKind::kCall: {
        const Call* op = static_cast<const Call*>(e.get());
        os_.put(std::string_view(call_op_name(op->op)));
        os_.put('(');
        list(op->args);
        return os_.put(')');
      }
      case NodeKind::kRamp: {
        const Ramp* op = static_cast<const Ramp*>(e.get());
        os_.put("ramp(");
        expr(op->base);
        os_.put(", ");
        expr(op->stride);
        return lanes(op->lanes);
      }
      case NodeKind::kBroadcast: {
        const Broadcast* op = static_cast<const Broadcast*>(e.get());
        os_.put("broadcast(");
        expr(op->value);
        return lanes(op->lanes);
      }
      default: return;
    }
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case NodeKind::kLetStmt: {
        const LetStmt* op = static_cast<const LetStmt*>(s.get());
        os_.indent(indent_);
        os_.put("let ");
        os_.put(op->name);
        os_.put(" = ");
        expr(op->value);
        os_.put('\n');
        return stmt(op->body);
      }
      case NodeKind::kFor: return for_loop(static_cast<const For*>(s.get()));
      case NodeKind::kStore: {
        const Store* op = static_cast<const Store*>(s.get());
        os_.indent(indent_);
        os_.put(op->name);
        indices(op->indices);
        os_.put(" = ");
        expr(op->value);
        return os_.put('\n');
      }
      case NodeKind::kAllocate: {
        const Allocate* op = static_cast<const Allocate*>(s.get());
        os_.indent(indent_);
        os_.put("allocate ");
        os_.put(op->name);
        os_.put(": ");
        os_.put(op->dtype.str());
        os_.put('[');
        for (size_t i = 0; i < op->extents.size(); ++i) {
          if (i) os_.put(", ");
          os_.put_int(op->extents[i]);
        }
        os_.put(']');
        if (op->scope != MemoryScope::kAuto) {
          os_.put(" in ");
          os_.put(std::string_view(memory_scope_name(op->scope)));
        }
        return block_body(op->body);
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* op = static_cast<const IfThenElse*>(s.get());
        os_.indent(indent_);
        os_.put("if (");
        expr(op->condition);
        os_.put(')');
        block_body(op->then_case);
        if (op->else_case.defined()) {
          os_.indent(indent_);
          os_.put("else");
          block_body(op->else_case);
        }
        return;
      }
      case NodeKind::kBlock:
        for (const Stmt& x : static_cast<const Block*>(s.get())->stmts) stmt(x);
        return;
      case NodeKind::kBarrier:
        os_.indent(indent_);
        return os_.put("sync_threads()\n");
      default: return;
    }
  }

 private:
  TextOut os_;
  int indent_ = 0;
  // The last index expressions printed (nodes of the tree being printed, alive
  // throughout) and where their text is.
  struct PrintedIndex {
    const BaseExprNode* node = nullptr;
    size_t start = 0, size = 0;
  };
  static constexpr size_t kPrintedIndices = 8;
  PrintedIndex printed_[kPrintedIndices];
  size_t next_printed_ = 0;

  void int_imm(const IntImm* op, int context) {
    if (op->type.is_bool()) {
      if (op->value) os_.put("true");
      else os_.put("false");
      return;
    }
    bool paren = op->value < 0 && kPrecUnary < context;
    if (paren) os_.put('(');
    os_.put_int(op->value);
    if (paren) os_.put(')');
  }
  // Left-associative binary operator: the right side binds one level tighter, and
  // so does the left one of a comparison (no chaining).
  template <class T, size_t N>
  void binary(const Expr& e, const char (&op)[N], int prec, int context, bool chain = true) {
    const T* node = static_cast<const T*>(e.get());
    bool paren = prec < context;
    if (paren) os_.put('(');
    expr(node->a, chain ? prec : prec + 1);
    os_.put(op);
    expr(node->b, prec + 1);
    if (paren) os_.put(')');
  }
  template <class T, size_t N>
  void min_max(const Expr& e, const char (&name)[N]) {
    const T* node = static_cast<const T*>(e.get());
    os_.put(name);
    call_args({&node->a, &node->b});
  }
  void call_args(std::initializer_list<const Expr*> args) {
    os_.put('(');
    bool first = true;
    for (const Expr* a : args) {
      if (!first) os_.put(", ");
      first = false;
      expr(*a);
    }
    os_.put(')');
  }
  void list(const std::vector<Expr>& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) os_.put(", ");
      expr(items[i]);
    }
  }
  // Accesses of one element share their index node (a reduction's init, update and
  // the load it accumulates into): its text is printed once and copied after that.
  void indices(const std::vector<Expr>& idx) {
    os_.put('[');
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) os_.put(", ");
      index(idx[i]);
    }
    os_.put(']');
  }
  void index(const Expr& e) {
    if (!e.defined() || e.kind() == NodeKind::kVariable || e.kind() == NodeKind::kIntImm) return expr(e);
    for (const PrintedIndex& p : printed_)
      if (p.node == e.get()) return os_.put_earlier(p.start, p.size);
    const size_t start = os_.position();
    expr(e);
    printed_[next_printed_] = {e.get(), start, os_.position() - start};
    next_printed_ = (next_printed_ + 1) % kPrintedIndices;
  }
  void lanes(int n) {
    os_.put(", ");
    os_.put_int(n);
    os_.put(')');
  }
  void for_loop(const For* op) {
    os_.indent(indent_);
    if (op->kind != ForKind::kSerial) {
      os_.put(std::string_view(for_kind_name(op->kind)));
      os_.put(' ');
    }
    os_.put("for ");
    os_.put(op->name);
    os_.put(" in ");
    if (is_const(op->min, 0)) {
      os_.put("0..");
      expr(op->extent, kPrecAtom);
    } else {
      expr(op->min, kPrecAtom);
      os_.put("..");
      expr(op->min, kPrecAdd);
      os_.put(" + ");
      expr(op->extent, kPrecAdd + 1);
    }
    if (!op->thread_tag.empty()) {
      os_.put(" bound to ");
      os_.put(op->thread_tag);
    }
    block_body(op->body);
  }
  void block_body(const Stmt& s) {
    os_.put(" {\n");
    ++indent_;
    stmt(s);
    --indent_;
    os_.indent(indent_);
    os_.put("}\n");
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
  Printer(out).expr(e);
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
  Printer(*out).stmt(s);
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

}  // namespace tensorgym
