// Parser of the program language (see program.h): one statement per line, either
// `input NAME: DTYPE[dims] [const]` or `NAME[vars] OP expr [where v in lo..hi, ...]`.
//
// The parser is a recursive descent over the token stream of lexer.h. Expressions
// are typed while they are built; literals, and expressions over literals only,
// stay untyped until they meet an operand whose type they adopt (or take i32 / f32
// by default). After a stage's line is read, its variables get ranges (from lone
// uses as whole indices and from `where`), and every tensor access is proved in
// bounds with interval arithmetic before the stage is accepted.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/ir/expr.h"
#include "codegen/ir/interval.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/lexer.h"
#include "codegen/ir/program.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

// Parentheses, calls, index lists and unary operators nest the parser's recursion.
constexpr int kMaxNesting = 256;
// Left-leaning chains (a + a + ... + a) nest the tree without nesting the parser;
// every later pass recurses over the tree, so its depth is capped too.
constexpr int kMaxExprDepth = 512;
// Reduction variables of one stage; extents of 1 would let a stage have very many
// without reaching the iteration cap. (Spatial ones are capped by max_rank.)
constexpr size_t kMaxReductionVariables = 64;

std::string loc_prefix(SourceLoc loc) { return fmt::format("{}:{}: ", loc.line, loc.column); }

Status error_at(SourceLoc loc, const std::string& message) { return invalid_argument(loc_prefix(loc) + message); }
Status exhausted_at(SourceLoc loc, const std::string& message) { return resource_exhausted(loc_prefix(loc) + message); }

SourceLoc loc_of(const Token& t) { return {t.line, t.column}; }
std::string loc_text(SourceLoc loc) { return fmt::format("{}:{}", loc.line, loc.column); }

std::string quoted(std::string_view s) { return quote_text(s); }

bool is_function_word(std::string_view w) {
  return w == "select" || w == "min" || w == "max" || w == "abs" || w == "exp" || w == "log" || w == "sqrt" ||
         w == "tanh" || w == "f32" || w == "f64" || w == "i8" || w == "i32";
}

// a * b, or nullopt past int64.
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::string size_text(std::optional<int64_t> v) {
  return v ? fmt::format("{}", *v) : fmt::format("more than {}", std::numeric_limits<int64_t>::max());
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string bound_text(int64_t v) {
  if (v == IntRange::kNegInf) return "-inf";
  if (v == IntRange::kPosInf) return "inf";
  return std::to_string(v);
}

// The cast that would make two mismatched types agree, for the message.
std::string cast_hint(DataType a, DataType b) {
  if (a.is_bool() || b.is_bool()) return "";
  DataType target = a;
  if (a.is_float() != b.is_float()) {
    target = a.is_float() ? a : b;
  } else if (b.bits > a.bits) {
    target = b;
  }
  return " (use a cast such as " + target.str() + "(...))";
}

// A parsed expression: a typed tree, or an untyped constant whose type is decided
// by what it meets: a literal (3, 1.5) or an expression over literals only
// (1.0 / 256.0), built once the type is known.
struct Operand {
  enum class Literal : uint8_t { kNone, kInt, kFloat };
  using Builder = std::function<Expected<Expr>(DataType)>;

  Expr expr;      // the typed tree; undefined while untyped
  SourceLoc loc;  // where the operand starts
  Literal literal = Literal::kNone;
  int64_t int_value = 0;
  double float_value = 0;
  std::shared_ptr<const Builder> build;  // an untyped constant expression
  bool build_float = false;              // ... of float kind (f32/f64), else integer (i8/i32)
  int depth = 1;                         // height of the tree

  bool is_untyped() const { return literal != Literal::kNone || build != nullptr; }
  bool is_float_constant() const { return literal == Literal::kFloat || (build && build_float); }
  DataType default_type() const {
    if (!is_untyped()) return expr.type();
    return is_float_constant() ? DataType::f32() : DataType::i32();
  }
  std::string literal_text() const {
    return literal == Literal::kInt ? std::to_string(int_value) : float_literal(float_value, DataType::f64());
  }
};

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax };

// One variable of the stage being parsed.
struct VarInfo {
  std::string name;
  SourceLoc first_loc;   // first occurrence (left side, else body)
  bool spatial = false;  // on the left side
  // The first use as a whole index: its range is [0, extent) of that dimension.
  bool has_lone_use = false;
  int64_t lone_extent = 0;
  std::string lone_tensor;
  int lone_dim = 0;
  SourceLoc lone_loc;
  // A `where v in lo..hi` clause.
  bool has_where = false;
  int64_t where_lo = 0, where_hi = 0;
  SourceLoc where_loc;
};

class Parser {
 public:
  Parser(std::string_view text, const ProgramLimits& limits) : text_(text), limits_(limits), lexer_(text) {}

  Expected<Program> run() {
    if (int64_t(text_.size()) > limits_.max_text_bytes) {
      return exhausted_at({1, 1}, fmt::format("program text is {} bytes, over the limit of {} bytes (max_text_bytes)",
                                              text_.size(), limits_.max_text_bytes));
    }
    lookahead_[0] = lexer_.next();
    lookahead_[1] = lexer_.next();
    while (true) {
      const Token& t = cur();
      if (t.kind == TokenKind::kEnd) break;
      if (t.kind == TokenKind::kNewline) {
        advance();
        continue;
      }
      if (t.kind == TokenKind::kIdent && t.text == "input" && peek_next().kind != TokenKind::kLBracket) {
        TG_RETURN_IF_ERROR(parse_input());
      } else if (t.kind == TokenKind::kIdent) {
        TG_RETURN_IF_ERROR(parse_stage());
      } else {
        return unexpected(t, "a statement ('input NAME: TYPE[dims]' or 'NAME[vars] = expression')");
      }
      const Token& end = cur();
      if (end.kind != TokenKind::kNewline && end.kind != TokenKind::kEnd) {
        if (end.kind == TokenKind::kError) return error_at(loc_of(end), end.message);
        return error_at(loc_of(end), "unexpected " + describe_token(end) + " after the end of the statement");
      }
    }
    if (prog_.stages.empty()) return error_at(loc_of(cur()), "the program defines no stages (nothing to compute)");
    // Outputs: stages no later stage reads.
    for (size_t i = 0; i < prog_.stages.size(); ++i) {
      bool read = false;
      for (size_t j = i + 1; j < prog_.stages.size() && !read; ++j)
        for (const std::string& r : prog_.reads_of(prog_.stages[j]))
          if (r == prog_.stages[i].name) read = true;
      if (!read) prog_.outputs.push_back(prog_.stages[i].name);
    }
    return std::move(prog_);
  }

 private:
  std::string_view text_;
  const ProgramLimits& limits_;
  Lexer lexer_;
  Token lookahead_[2];  // the current token and the next one
  Program prog_;
  // Every tensor defined so far (inputs and stages), by name.
  struct TensorInfo {
    DataType dtype;
    std::vector<int64_t> shape;
    SourceLoc loc;
  };
  std::unordered_map<std::string, TensorInfo> tensors_;
  int64_t total_bytes_ = 0;
  int nesting_ = 0;
  // Where each node built by the parser came from (operators: the operator token).
  std::unordered_map<const BaseExprNode*, SourceLoc> node_locs_;
  // The stage being parsed.
  std::string stage_name_;
  std::vector<VarInfo> vars_;
  std::unordered_map<std::string, size_t> var_index_;  // name -> position in vars_
  size_t reduction_vars_ = 0;

  // ---- tokens ----

  const Token& cur() const { return lookahead_[0]; }
  const Token& peek_next() const { return lookahead_[1]; }
  void advance() {
    lookahead_[0] = std::move(lookahead_[1]);
    lookahead_[1] = lexer_.next();
  }
  bool at(TokenKind k) const { return cur().kind == k; }
  bool at_word(std::string_view w) const { return cur().kind == TokenKind::kIdent && cur().text == w; }

  Status unexpected(const Token& t, const std::string& wanted) const {
    if (t.kind == TokenKind::kError) return error_at(loc_of(t), t.message);
    return error_at(loc_of(t), "expected " + wanted + ", found " + describe_token(t));
  }
  Status expect(TokenKind k, const std::string& wanted) {
    if (!at(k)) return unexpected(cur(), wanted);
    advance();
    return Status();
  }

  // ---- names ----

  Status check_new_tensor_name(const Token& t) {
    if (is_reserved_word(t.text))
      return error_at(loc_of(t), quoted(t.text) + " is a reserved word and cannot name a tensor");
    auto it = tensors_.find(std::string(t.text));
    if (it != tensors_.end())
      return error_at(loc_of(t), "tensor " + quoted(t.text) + " is already defined at " + loc_text(it->second.loc));
    return Status();
  }

  bool is_tensor(std::string_view name) const { return tensors_.count(std::string(name)) > 0; }

  // ---- inputs ----

  Status parse_input() {
    advance();  // input
    const Token name = cur();
    if (name.kind != TokenKind::kIdent) return unexpected(name, "a tensor name after 'input'");
    TG_RETURN_IF_ERROR(check_new_tensor_name(name));
    advance();
    TG_RETURN_IF_ERROR(expect(TokenKind::kColon, "':' after the input's name"));
    const Token type_tok = cur();
    if (type_tok.kind != TokenKind::kIdent) return unexpected(type_tok, "an element type (f32, f64, i8 or i32)");
    std::optional<DataType> dtype = parse_dtype(type_tok.text);
    if (!dtype) {
      return error_at(loc_of(type_tok),
                      "unknown element type " + describe_token(type_tok) + " (expected f32, f64, i8 or i32)");
    }
    advance();
    TG_RETURN_IF_ERROR(expect(TokenKind::kLBracket, "'[' and the input's dimensions"));
    if (at(TokenKind::kRBracket)) return error_at(loc_of(cur()), "an input needs at least one dimension");
    TensorInput input;
    input.name = std::string(name.text);
    input.dtype = *dtype;
    input.loc = loc_of(name);
    std::vector<SourceLoc> dim_locs;
    while (true) {
      const Token d = cur();
      if (d.kind == TokenKind::kMinus) return error_at(loc_of(d), "dimensions must be positive integers");
      if (d.kind != TokenKind::kInt) return unexpected(d, "a dimension (a positive integer)");
      if (d.int_value == 0) return error_at(loc_of(d), "dimensions must be positive integers, found 0");
      input.shape.push_back(int64_t(d.int_value));
      dim_locs.push_back(loc_of(d));
      advance();
      if (at(TokenKind::kComma)) {
        advance();
        continue;
      }
      TG_RETURN_IF_ERROR(expect(TokenKind::kRBracket, "',' or ']' in the input's dimensions"));
      break;
    }
    if (at_word("const")) {
      input.constant = true;
      advance();
    }
    TG_RETURN_IF_ERROR(check_tensor_size("input " + input.name, input.loc, input.dtype, input.shape));
    for (size_t i = 0; i < input.shape.size(); ++i) {
      if (input.shape[i] > std::numeric_limits<int32_t>::max()) {
        return error_at(dim_locs[i], fmt::format("dimension {} of {} is too large (indices are i32: at most 2147483647)",
                                                     input.shape[i], input.name));
      }
    }
    tensors_[input.name] = {input.dtype, input.shape, input.loc};
    prog_.inputs.push_back(std::move(input));
    return Status();
  }

  // Rank, bytes of the tensor and bytes of all tensors so far against the caps.
  Status check_tensor_size(const std::string& what, SourceLoc loc, DataType dtype, const std::vector<int64_t>& shape) {
    if (int64_t(shape.size()) > limits_.max_rank) {
      return exhausted_at(
          loc, fmt::format("{} has rank {}, over the limit of {} (max_rank)", what, shape.size(), limits_.max_rank));
    }
    std::optional<int64_t> bytes = int64_t(dtype.bytes());
    for (int64_t d : shape)
      if (bytes) bytes = checked_mul(*bytes, d);
    if (!bytes || *bytes > limits_.max_tensor_bytes) {
      return exhausted_at(loc, fmt::format("{} ({}{}) needs {} bytes, over the limit of {} bytes for one tensor "
                                           "(max_tensor_bytes)",
                                           what, dtype.str(), shape_text(shape), size_text(bytes),
                                           limits_.max_tensor_bytes));
    }
    std::optional<int64_t> total = checked_add(total_bytes_, *bytes);
    if (!total || *total > limits_.max_total_bytes) {
      return exhausted_at(loc, fmt::format("with {} all tensors together need {} bytes, over the limit of {} bytes "
                                           "(max_total_bytes)",
                                           what, size_text(total), limits_.max_total_bytes));
    }
    total_bytes_ = *total;
    return Status();
  }

  // ---- stages ----

  VarInfo* find_var(std::string_view name) {
    auto it = var_index_.find(std::string(name));
    return it == var_index_.end() ? nullptr : &vars_[it->second];
  }
  // Adds a variable first seen at `loc`; fails past kMaxReductionVariables.
  Expected<VarInfo*> add_var(std::string_view name, SourceLoc loc, bool spatial) {
    if (!spatial && ++reduction_vars_ > kMaxReductionVariables) {
      return exhausted_at(loc, fmt::format("stage {} uses more than {} reduction variables", stage_name_,
                                           kMaxReductionVariables));
    }
    VarInfo v;
    v.name = std::string(name);
    v.first_loc = loc;
    v.spatial = spatial;
    var_index_[v.name] = vars_.size();
    vars_.push_back(std::move(v));
    return &vars_.back();
  }

  Status parse_stage() {
    const Token name = cur();
    TG_RETURN_IF_ERROR(check_new_tensor_name(name));
    if (int64_t(prog_.stages.size()) >= limits_.max_stages) {
      return exhausted_at(loc_of(name),
                          fmt::format("stage {} would be stage number {}, over the limit of {} stages (max_stages)",
                                      name.text, prog_.stages.size() + 1, limits_.max_stages));
    }
    advance();
    stage_name_ = std::string(name.text);
    vars_.clear();
    var_index_.clear();
    reduction_vars_ = 0;
    node_locs_.clear();
    TG_RETURN_IF_ERROR(expect(TokenKind::kLBracket, "'[' and the stage's index variables"));
    if (at(TokenKind::kRBracket)) return error_at(loc_of(cur()), "a stage needs at least one index variable");
    while (true) {
      const Token v = cur();
      if (v.kind != TokenKind::kIdent) {
        return unexpected(v, "a variable name (the left side lists plain variables, as in C[i, j])");
      }
      TG_RETURN_IF_ERROR(check_variable_name(v));
      if (VarInfo* prev = find_var(v.text)) {
        return error_at(loc_of(v), "variable " + quoted(v.text) + " appears twice on the left side (first at " +
                                       loc_text(prev->first_loc) + ")");
      }
      TG_RETURN_IF_ERROR(add_var(v.text, loc_of(v), /*spatial=*/true).status());
      advance();
      if (at(TokenKind::kComma)) {
        advance();
        continue;
      }
      if (!at(TokenKind::kRBracket)) {
        return unexpected(cur(), "',' or ']' (the left side lists plain variables, as in C[i, j])");
      }
      advance();
      break;
    }
    if (int64_t(vars_.size()) > limits_.max_rank) {
      return exhausted_at(loc_of(name), fmt::format("stage {} has rank {}, over the limit of {} (max_rank)", stage_name_,
                                                    vars_.size(), limits_.max_rank));
    }
    const Token op = cur();
    ReduceKind reduce;
    switch (op.kind) {
      case TokenKind::kAssign: reduce = ReduceKind::kNone; break;
      case TokenKind::kPlusAssign: reduce = ReduceKind::kSum; break;
      case TokenKind::kMaxAssign: reduce = ReduceKind::kMax; break;
      case TokenKind::kMinAssign: reduce = ReduceKind::kMin; break;
      default: return unexpected(op, "'=', '+=', 'max=' or 'min='");
    }
    advance();
    TG_ASSIGN_OR_RETURN(Operand body, parse_expr());
    TG_RETURN_IF_ERROR(finalize(body));
    if (at_word("where")) TG_RETURN_IF_ERROR(parse_where());
    if (!at(TokenKind::kNewline) && !at(TokenKind::kEnd)) {
      if (cur().kind == TokenKind::kError) return error_at(loc_of(cur()), cur().message);
      return error_at(loc_of(cur()), "unexpected " + describe_token(cur()) + " after the stage's expression");
    }

    if (body.expr.type().is_bool()) {
      return error_at(body.loc, "the body of " + stage_name_ +
                                    " is a condition (bool); a stage computes numbers (use select(cond, 1.0, 0.0))");
    }

    StageDef stage;
    stage.name = stage_name_;
    stage.dtype = body.expr.type();
    stage.reduce = reduce;
    stage.body = body.expr;
    stage.loc = loc_of(name);
    for (const VarInfo& v : vars_) {
      IterVar iv;
      iv.name = v.name;
      if (v.has_where) {
        iv.min = v.where_lo;
        iv.extent = v.where_hi - v.where_lo;
        iv.declared = true;
      } else if (v.has_lone_use) {
        iv.min = 0;
        iv.extent = v.lone_extent;
      } else if (v.spatial) {
        return error_at(v.first_loc, "cannot infer the range of variable " + quoted(v.name) +
                                         ": it is not used alone as an index of a tensor; add 'where " + v.name +
                                         " in 0..N'");
      } else {
        return error_at(v.first_loc, "cannot infer the range of variable " + quoted(v.name) +
                                         ": it is not used alone as an index of a tensor; add 'where " + v.name +
                                         " in lo..hi'");
      }
      (v.spatial ? stage.axes : stage.reduce_axes).push_back(std::move(iv));
    }
    if (reduce == ReduceKind::kNone && !stage.reduce_axes.empty()) {
      const VarInfo* first = find_var(stage.reduce_axes.front().name);
      return error_at(first->first_loc, "variable " + quoted(first->name) + " is not on the left side of " +
                                            stage_name_ +
                                            ", so it is a reduction variable, which '=' does not allow (use '+=', "
                                            "'max=' or 'min=')");
    }
    TG_RETURN_IF_ERROR(check_tensor_size("stage " + stage.name, stage.loc, stage.dtype, stage.shape()));
    std::optional<int64_t> iterations = 1;
    for (const IterVar& v : stage.axes)
      if (iterations) iterations = checked_mul(*iterations, v.extent);
    for (const IterVar& v : stage.reduce_axes)
      if (iterations) iterations = checked_mul(*iterations, v.extent);
    if (!iterations || *iterations > limits_.max_stage_iterations) {
      return exhausted_at(stage.loc,
                          fmt::format("stage {} runs {} iterations, over the limit of {} (max_stage_iterations)",
                                      stage.name, size_text(iterations), limits_.max_stage_iterations));
    }
    RangeScope scope;
    for (const IterVar& v : stage.axes) scope[v.name] = {v.min, v.min + v.extent - 1};
    for (const IterVar& v : stage.reduce_axes) scope[v.name] = {v.min, v.min + v.extent - 1};
    TG_RETURN_IF_ERROR(check_bounds(stage.body, scope, stage.loc));

    tensors_[stage.name] = {stage.dtype, stage.shape(), stage.loc};
    prog_.stages.push_back(std::move(stage));
    node_locs_.clear();
    return Status();
  }

  Status check_variable_name(const Token& v) {
    if (is_reserved_word(v.text))
      return error_at(loc_of(v), quoted(v.text) + " is a reserved word and cannot name a variable");
    if (is_tensor(v.text) || v.text == stage_name_)
      return error_at(loc_of(v), quoted(v.text) + " names a tensor and cannot be used as a variable");
    return Status();
  }

  // `where v in lo..hi, ...` (the current token is `where`).
  Status parse_where() {
    advance();
    while (true) {
      const Token v = cur();
      if (v.kind != TokenKind::kIdent) return unexpected(v, "a variable name in the where clause");
      VarInfo* info = find_var(v.text);
      if (!info) {
        if (is_reserved_word(v.text)) return unexpected(v, "a variable name in the where clause");
        return error_at(loc_of(v),
                        "variable " + quoted(v.text) + " in the where clause does not occur in stage " + stage_name_);
      }
      if (info->has_where) {
        return error_at(
            loc_of(v), "duplicate where range for " + quoted(v.text) + " (first at " + loc_text(info->where_loc) + ")");
      }
      advance();
      if (!at_word("in")) return unexpected(cur(), "'in' after the variable name (as in 'where h in 0..58')");
      advance();
      const Token lo_tok = cur();
      TG_ASSIGN_OR_RETURN(int64_t lo, parse_range_bound());
      TG_RETURN_IF_ERROR(expect(TokenKind::kDotDot, "'..' between the range's bounds (as in 0..58)"));
      TG_ASSIGN_OR_RETURN(int64_t hi, parse_range_bound());
      if (lo >= hi) {
        return error_at(loc_of(lo_tok), fmt::format("empty range {}..{} for {} (ranges are half-open: lo..hi needs lo < hi)",
                                                    lo, hi, quoted(v.text)));
      }
      if (hi - lo > std::numeric_limits<int32_t>::max()) {
        return error_at(loc_of(lo_tok), fmt::format("range {}..{} of {} is too long (at most 2147483647 values)", lo, hi,
                                                    quoted(v.text)));
      }
      if (info->spatial && lo != 0) {
        return error_at(loc_of(lo_tok),
                        fmt::format("variable {} is on the left side of {}, so its range must start at 0, found {}..{}",
                                    quoted(v.text), stage_name_, lo, hi));
      }
      if (info->has_lone_use && (lo != 0 || hi != info->lone_extent)) {
        return error_at(loc_of(v), fmt::format("the range {}..{} of {} disagrees with its use as index {} of {} at {} (0..{})",
                                               lo, hi, quoted(v.text), info->lone_dim, info->lone_tensor,
                                               loc_text(info->lone_loc), info->lone_extent));
      }
      info->has_where = true;
      info->where_lo = lo;
      info->where_hi = hi;
      info->where_loc = loc_of(v);
      if (!at(TokenKind::kComma)) break;
      advance();
    }
    return Status();
  }

  Expected<int64_t> parse_range_bound() {
    bool negative = false;
    if (at(TokenKind::kMinus)) {
      negative = true;
      advance();
    }
    const Token t = cur();
    if (t.kind != TokenKind::kInt) return unexpected(t, "an integer range bound");
    advance();
    int64_t v = negative ? -int64_t(t.int_value) : int64_t(t.int_value);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return error_at(loc_of(t), fmt::format("range bound {} does not fit in i32 (variables are i32)", v));
    }
    return v;
  }

  // ---- expressions ----

  // Counts one level of parser recursion; fails past kMaxNesting.
  class NestingGuard {
   public:
    explicit NestingGuard(int* n) : n_(n) { ++*n_; }
    ~NestingGuard() { --*n_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    bool too_deep() const { return *n_ > kMaxNesting; }

   private:
    int* n_;
  };
  Status nesting_error() const {
    return error_at(loc_of(cur()), fmt::format("expression nested too deeply (more than {} levels of parentheses, calls, "
                                                 "indices or unary operators)",
                                                 kMaxNesting));
  }
  Status depth_error(SourceLoc loc) const {
    return error_at(loc, fmt::format("expression too large: nested more than {} operations deep", kMaxExprDepth));
  }

  // What a message calls an operand: its type, or what kind of constant it is.
  static std::string describe(const Operand& x) {
    if (x.literal != Operand::Literal::kNone) return "the literal " + x.literal_text();
    if (x.build) return std::string("a constant ") + (x.build_float ? "f32" : "i32") + " expression";
    return "a " + x.expr.type().str();
  }

  // Gives an untyped operand its default type: i32 for integers, f32 for floats.
  Status finalize(Operand& x) {
    if (!x.is_untyped()) return Status();
    return coerce(x, x.default_type(), "");
  }

  // Gives an untyped operand the type `t` (the type its context needs).
  Status coerce(Operand& x, DataType t, const std::string& context) {
    const std::string where = context.empty() ? "" : " in " + quoted(context);
    if (x.literal == Operand::Literal::kInt) {
      if (t.is_float()) {
        x.expr = FloatImm::make(t, double(x.int_value));
      } else if (t.is_int()) {
        int64_t lo = -(int64_t(1) << (t.bits - 1)), hi = (int64_t(1) << (t.bits - 1)) - 1;
        if (x.int_value < lo || x.int_value > hi)
          return error_at(x.loc, "integer literal " + x.literal_text() + " does not fit in " + t.str() + where);
        x.expr = IntImm::make(t, x.int_value);
      } else {
        return error_at(x.loc, "integer literal " + x.literal_text() + " used as a " + t.str() + where);
      }
    } else if (x.literal == Operand::Literal::kFloat) {
      if (!t.is_float()) {
        return error_at(x.loc, "float literal " + x.literal_text() + " cannot be used as " + t.str() + where +
                                   " (write an integer, or cast: f32(...))");
      }
      if (t.bits == 32 && std::isinf(float(x.float_value)))
        return error_at(x.loc, "float literal " + x.literal_text() + " is out of range for f32");
      x.expr = FloatImm::make(t, x.float_value);
    } else if (x.build) {
      if (t.is_bool() || t.is_float() != x.build_float) {
        return error_at(x.loc, describe(x) + " cannot be used as " + t.str() + where + cast_hint(t, x.default_type()));
      }
      TG_ASSIGN_OR_RETURN(x.expr, (*x.build)(t));
      x.build.reset();
    }
    x.literal = Operand::Literal::kNone;
    return Status();
  }

  Status mismatch(const std::string& op, SourceLoc op_loc, DataType a, DataType b) const {
    return error_at(op_loc, "type mismatch in " + quoted(op) + ": " + a.str() + " and " + b.str() + cast_hint(a, b));
  }

  // Whether an untyped combination of `a` and `b` is a float constant. An integer
  // literal may join floats; an integer constant expression may not.
  Expected<bool> untyped_kind(const Operand& a, const Operand& b, const std::string& op, SourceLoc op_loc) const {
    const bool af = a.is_float_constant(), bf = b.is_float_constant();
    if (af == bf) return af;
    const Operand& integer = af ? b : a;
    if (integer.literal == Operand::Literal::kInt) return true;
    return mismatch(op, op_loc, a.default_type(), b.default_type());
  }

  // Brings two operands of `op` to one type: an untyped side adopts the other's type.
  Status unify(Operand& a, Operand& b, const std::string& op, SourceLoc op_loc) {
    if (a.is_untyped() && b.is_untyped()) {
      TG_ASSIGN_OR_RETURN(bool is_float, untyped_kind(a, b, op, op_loc));
      DataType t = is_float ? DataType::f32() : DataType::i32();
      TG_RETURN_IF_ERROR(coerce(a, t, op));
      return coerce(b, t, op);
    }
    if (a.is_untyped() || b.is_untyped()) {
      Operand& x = a.is_untyped() ? a : b;
      const DataType t = a.is_untyped() ? b.expr.type() : a.expr.type();
      if (x.build && (t.is_bool() || t.is_float() != x.build_float)) {
        return a.is_untyped() ? mismatch(op, op_loc, a.default_type(), t) : mismatch(op, op_loc, t, b.default_type());
      }
      return coerce(x, t, op);
    }
    DataType ta = a.expr.type(), tb = b.expr.type();
    if (ta != tb) return mismatch(op, op_loc, ta, tb);
    return Status();
  }

  Expected<Operand> typed(Expr e, SourceLoc start, SourceLoc node_loc, int depth) {
    if (depth > kMaxExprDepth) return depth_error(node_loc);
    node_locs_[e.get()] = node_loc;
    Operand r;
    r.expr = std::move(e);
    r.loc = start;
    r.depth = depth;
    return r;
  }

  // An untyped constant expression, built by `build` once its type is known.
  Expected<Operand> deferred(Operand::Builder build, bool is_float, SourceLoc start, SourceLoc node_loc, int depth) {
    if (depth > kMaxExprDepth) return depth_error(node_loc);
    Operand r;
    r.build = std::make_shared<const Operand::Builder>(std::move(build));
    r.build_float = is_float;
    r.loc = start;
    r.depth = depth;
    return r;
  }

  Expected<Operand> parse_expr() {
    NestingGuard guard(&nesting_);
    if (guard.too_deep()) return nesting_error();
    return parse_or();
  }

  Expected<Operand> parse_or() {
    TG_ASSIGN_OR_RETURN(Operand a, parse_and());
    while (at(TokenKind::kOrOr)) {
      const Token op = cur();
      advance();
      TG_ASSIGN_OR_RETURN(Operand b, parse_and());
      TG_ASSIGN_OR_RETURN(a, logic(op, std::move(a), std::move(b)));
    }
    return a;
  }

  Expected<Operand> parse_and() {
    TG_ASSIGN_OR_RETURN(Operand a, parse_cmp());
    while (at(TokenKind::kAndAnd)) {
      const Token op = cur();
      advance();
      TG_ASSIGN_OR_RETURN(Operand b, parse_cmp());
      TG_ASSIGN_OR_RETURN(a, logic(op, std::move(a), std::move(b)));
    }
    return a;
  }

  static bool is_comparison(TokenKind k) {
    return k == TokenKind::kEq || k == TokenKind::kNe || k == TokenKind::kLt || k == TokenKind::kLe ||
           k == TokenKind::kGt || k == TokenKind::kGe;
  }

  Expected<Operand> parse_cmp() {
    TG_ASSIGN_OR_RETURN(Operand a, parse_add());
    if (!is_comparison(cur().kind)) return a;
    const Token op = cur();
    advance();
    TG_ASSIGN_OR_RETURN(Operand b, parse_add());
    if (is_comparison(cur().kind)) {
      return error_at(loc_of(cur()), "comparisons cannot be chained; combine them with && (as in a < b && b < c)");
    }
    std::string name(op.text);
    TG_RETURN_IF_ERROR(unify(a, b, name, loc_of(op)));
    DataType t = a.expr.type();
    if (t.is_bool() && op.kind != TokenKind::kEq && op.kind != TokenKind::kNe)
      return error_at(loc_of(op), quoted(name) + " cannot order bools (only == and != compare conditions)");
    Expr e;
    switch (op.kind) {
      case TokenKind::kEq: e = EQ::make(a.expr, b.expr); break;
      case TokenKind::kNe: e = NE::make(a.expr, b.expr); break;
      case TokenKind::kLt: e = LT::make(a.expr, b.expr); break;
      case TokenKind::kLe: e = LE::make(a.expr, b.expr); break;
      case TokenKind::kGt: e = GT::make(a.expr, b.expr); break;
      default: e = GE::make(a.expr, b.expr); break;
    }
    return typed(std::move(e), a.loc, loc_of(op), std::max(a.depth, b.depth) + 1);
  }

  Expected<Operand> logic(const Token& op, Operand a, Operand b) {
    std::string name(op.text);
    for (const Operand* x : {&a, &b}) {
      if (x->is_untyped() || !x->expr.type().is_bool())
        return error_at(x->loc, quoted(name) + " needs conditions (bool) on both sides, found " + describe(*x));
    }
    Expr e = op.kind == TokenKind::kAndAnd ? And::make(a.expr, b.expr) : Or::make(a.expr, b.expr);
    return typed(std::move(e), a.loc, loc_of(op), std::max(a.depth, b.depth) + 1);
  }

  Expected<Operand> parse_add() {
    TG_ASSIGN_OR_RETURN(Operand a, parse_mul());
    while (at(TokenKind::kPlus) || at(TokenKind::kMinus)) {
      const Token op = cur();
      advance();
      TG_ASSIGN_OR_RETURN(Operand b, parse_mul());
      BinOp kind = op.kind == TokenKind::kPlus ? BinOp::kAdd : BinOp::kSub;
      TG_ASSIGN_OR_RETURN(a, combine(kind, std::string(op.text), loc_of(op), std::move(a), std::move(b)));
    }
    return a;
  }

  Expected<Operand> parse_mul() {
    TG_ASSIGN_OR_RETURN(Operand a, parse_unary());
    while (at(TokenKind::kStar) || at(TokenKind::kSlash) || at(TokenKind::kPercent)) {
      const Token op = cur();
      advance();
      TG_ASSIGN_OR_RETURN(Operand b, parse_unary());
      BinOp kind = op.kind == TokenKind::kStar ? BinOp::kMul : op.kind == TokenKind::kSlash ? BinOp::kDiv : BinOp::kMod;
      TG_ASSIGN_OR_RETURN(a, combine(kind, std::string(op.text), loc_of(op), std::move(a), std::move(b)));
    }
    return a;
  }

  // The node for `a op b`, both of one type.
  Expected<Expr> make_binary(BinOp op, const std::string& name, SourceLoc op_loc, const Expr& a, const Expr& b) {
    DataType t = a.type();
    if (t.is_bool()) return error_at(op_loc, quoted(name) + " needs numbers, found conditions (bool)");
    if (op == BinOp::kMod && !t.is_int()) return error_at(op_loc, "'%' needs integer operands, found " + t.str());
    if ((op == BinOp::kDiv || op == BinOp::kMod) && t.is_int()) {
      // A divisor that is zero whatever the variables are (0, 1 - 1, i - i).
      IntRange divisor = constant_bounds(b, RangeScope{});
      if (divisor.is_point() && divisor.min == 0)
        return error_at(op_loc, op == BinOp::kDiv ? "division by zero" : "modulo by zero");
    }
    Expr e;
    switch (op) {
      case BinOp::kAdd: e = Add::make(a, b); break;
      case BinOp::kSub: e = Sub::make(a, b); break;
      case BinOp::kMul: e = Mul::make(a, b); break;
      case BinOp::kDiv: e = Div::make(a, b); break;
      case BinOp::kMod: e = Mod::make(a, b); break;
      case BinOp::kMin: e = Min::make(a, b); break;
      case BinOp::kMax: e = Max::make(a, b); break;
    }
    node_locs_[e.get()] = op_loc;
    return e;
  }

  // `a op b` for + - * / % min max. Two untyped operands stay untyped (1.0 / 256.0
  // takes the type of whatever it meets); otherwise the untyped side adopts the other's.
  Expected<Operand> combine(BinOp op, const std::string& name, SourceLoc op_loc, Operand a, Operand b) {
    const SourceLoc start = (op == BinOp::kMin || op == BinOp::kMax) ? op_loc : a.loc;
    const int depth = std::max(a.depth, b.depth) + 1;
    if (a.is_untyped() && b.is_untyped()) {
      TG_ASSIGN_OR_RETURN(bool is_float, untyped_kind(a, b, name, op_loc));
      if (op == BinOp::kMod && is_float) return error_at(op_loc, "'%' needs integer operands, found f32");
      auto build = [this, op, name, op_loc, a, b](DataType t) -> Expected<Expr> {
        Operand x = a, y = b;
        TG_RETURN_IF_ERROR(coerce(x, t, name));
        TG_RETURN_IF_ERROR(coerce(y, t, name));
        return make_binary(op, name, op_loc, x.expr, y.expr);
      };
      return deferred(std::move(build), is_float, start, op_loc, depth);
    }
    TG_RETURN_IF_ERROR(unify(a, b, name, op_loc));
    TG_ASSIGN_OR_RETURN(Expr e, make_binary(op, name, op_loc, a.expr, b.expr));
    return typed(std::move(e), start, op_loc, depth);
  }

  Expected<Operand> parse_unary() {
    if (!at(TokenKind::kMinus) && !at(TokenKind::kBang)) return parse_primary();
    NestingGuard guard(&nesting_);
    if (guard.too_deep()) return nesting_error();
    const Token op = cur();
    const SourceLoc loc = loc_of(op);
    advance();
    TG_ASSIGN_OR_RETURN(Operand x, parse_unary());
    if (op.kind == TokenKind::kMinus) {
      // A literal takes the sign (-3 is the literal -3); anything else is 0 - x.
      if (x.literal == Operand::Literal::kInt) {
        x.int_value = -x.int_value;
        x.loc = loc;
        return x;
      }
      if (x.literal == Operand::Literal::kFloat) {
        x.float_value = -x.float_value;
        x.loc = loc;
        return x;
      }
      if (x.build) {
        const bool is_float = x.build_float;
        auto build = [this, x, loc](DataType t) -> Expected<Expr> {
          Operand y = x;
          TG_RETURN_IF_ERROR(coerce(y, t, "-"));
          Expr e = Sub::make(make_zero(t), y.expr);
          node_locs_[e.get()] = loc;
          return e;
        };
        return deferred(std::move(build), is_float, loc, loc, x.depth + 1);
      }
      if (x.expr.type().is_bool()) return error_at(loc, "unary '-' needs a number, found a condition (bool)");
      return typed(Sub::make(make_zero(x.expr.type()), x.expr), loc, loc, x.depth + 1);
    }
    if (x.is_untyped() || !x.expr.type().is_bool())
      return error_at(loc, "'!' needs a condition (bool), found " + describe(x));
    return typed(Not::make(x.expr), loc, loc, x.depth + 1);
  }

  Expected<Operand> parse_primary() {
    const Token t = cur();
    switch (t.kind) {
      case TokenKind::kInt: {
        advance();
        Operand x;
        x.literal = Operand::Literal::kInt;
        x.int_value = int64_t(t.int_value);
        x.loc = loc_of(t);
        return x;
      }
      case TokenKind::kFloat: {
        advance();
        Operand x;
        x.literal = Operand::Literal::kFloat;
        x.float_value = t.float_value;
        x.loc = loc_of(t);
        return x;
      }
      case TokenKind::kLParen: {
        advance();
        TG_ASSIGN_OR_RETURN(Operand x, parse_expr());
        if (!at(TokenKind::kRParen)) return unexpected(cur(), "')' to close the '(' at " + loc_text(loc_of(t)));
        advance();
        x.loc = loc_of(t);
        return x;
      }
      case TokenKind::kIdent: {
        if (is_function_word(t.text)) return parse_call(t);
        if (is_reserved_word(t.text)) return unexpected(t, "an expression");
        if (peek_next().kind == TokenKind::kLBracket) return parse_load(t);
        if (peek_next().kind == TokenKind::kLParen) {
          return error_at(loc_of(t), "unknown function " + quoted(t.text) +
                                         " (functions: select, min, max, abs, exp, log, sqrt, tanh; casts: f32, f64, "
                                         "i8, i32)");
        }
        return parse_variable(t);
      }
      default: return unexpected(t, "an expression");
    }
  }

  Expected<Operand> parse_variable(const Token& t) {
    if (is_tensor(t.text) || t.text == stage_name_) {
      return error_at(loc_of(t),
                      "tensor " + quoted(t.text) + " must be indexed, as in " + std::string(t.text) + "[...]");
    }
    advance();
    if (!find_var(t.text)) TG_RETURN_IF_ERROR(add_var(t.text, loc_of(t), /*spatial=*/false).status());
    return typed(Variable::make(DataType::i32(), std::string(t.text)), loc_of(t), loc_of(t), 1);
  }

  // Reads `(arg, ...)` after a function name.
  Expected<std::vector<Operand>> parse_args(const Token& fn, size_t wanted) {
    advance();  // the name
    if (!at(TokenKind::kLParen)) return unexpected(cur(), "'(' after " + quoted(fn.text));
    const Token open = cur();
    advance();
    std::vector<Operand> args;
    if (!at(TokenKind::kRParen)) {
      while (true) {
        TG_ASSIGN_OR_RETURN(Operand a, parse_expr());
        args.push_back(std::move(a));
        if (at(TokenKind::kComma)) {
          advance();
          continue;
        }
        if (!at(TokenKind::kRParen)) {
          return unexpected(cur(),
                            "',' or ')' to close the '(' of " + std::string(fn.text) + " at " + loc_text(loc_of(open)));
        }
        break;
      }
    }
    advance();  // )
    if (args.size() != wanted) {
      return error_at(loc_of(fn), fmt::format("{} takes {} argument{}, found {}", fn.text, wanted, wanted == 1 ? "" : "s",
                                                args.size()));
    }
    return args;
  }

  Expected<Operand> parse_call(const Token& fn) {
    const std::string name(fn.text);
    const SourceLoc loc = loc_of(fn);
    if (name == "select") {
      TG_ASSIGN_OR_RETURN(std::vector<Operand> args, parse_args(fn, 3));
      const Operand& c = args[0];
      if (c.is_untyped() || !c.expr.type().is_bool()) {
        return error_at(c.loc, "the condition of select must be a bool (a comparison), found " + describe(c));
      }
      const int depth = std::max({c.depth, args[1].depth, args[2].depth}) + 1;
      if (args[1].is_untyped() && args[2].is_untyped()) {
        TG_ASSIGN_OR_RETURN(bool is_float, untyped_kind(args[1], args[2], name, loc));
        auto build = [this, c, a = args[1], b = args[2], loc](DataType t) -> Expected<Expr> {
          Operand x = a, y = b;
          TG_RETURN_IF_ERROR(coerce(x, t, "select"));
          TG_RETURN_IF_ERROR(coerce(y, t, "select"));
          Expr e = Select::make(c.expr, x.expr, y.expr);
          node_locs_[e.get()] = loc;
          return e;
        };
        return deferred(std::move(build), is_float, loc, loc, depth);
      }
      TG_RETURN_IF_ERROR(unify(args[1], args[2], name, loc));
      return typed(Select::make(c.expr, args[1].expr, args[2].expr), loc, loc, depth);
    }
    if (name == "min" || name == "max") {
      TG_ASSIGN_OR_RETURN(std::vector<Operand> args, parse_args(fn, 2));
      return combine(name == "min" ? BinOp::kMin : BinOp::kMax, name, loc, std::move(args[0]), std::move(args[1]));
    }
    TG_ASSIGN_OR_RETURN(std::vector<Operand> args, parse_args(fn, 1));
    Operand& x = args[0];
    if (std::optional<DataType> cast_to = parse_dtype(name)) {
      TG_RETURN_IF_ERROR(finalize(x));
      if (x.expr.type().is_bool()) {
        return error_at(
            loc, "cannot cast a condition (bool) to " + cast_to->str() + "; use select(cond, 1, 0) to get a number");
      }
      return typed(Cast::make(*cast_to, x.expr), loc, loc, x.depth + 1);
    }
    CallOp op = CallOp::kAbs;
    if (name == "exp") op = CallOp::kExp;
    if (name == "log") op = CallOp::kLog;
    if (name == "sqrt") op = CallOp::kSqrt;
    if (name == "tanh") op = CallOp::kTanh;
    if (op == CallOp::kAbs) {
      if (x.is_untyped()) {  // abs(-2.5) is as untyped as -2.5
        const bool is_float = x.is_float_constant();
        auto build = [this, x, loc](DataType t) -> Expected<Expr> {
          Operand y = x;
          TG_RETURN_IF_ERROR(coerce(y, t, "abs"));
          Expr e = Call::make(CallOp::kAbs, {y.expr});
          node_locs_[e.get()] = loc;
          return e;
        };
        return deferred(std::move(build), is_float, loc, loc, x.depth + 1);
      }
      if (x.expr.type().is_bool()) return error_at(loc, "abs needs a number, found a condition (bool)");
    } else {
      // An integer literal argument reads as a float (exp(1) is exp(1.0)).
      if (x.literal == Operand::Literal::kInt || x.is_float_constant())
        TG_RETURN_IF_ERROR(coerce(x, DataType::f32(), name));
      TG_RETURN_IF_ERROR(finalize(x));
      if (!x.expr.type().is_float()) {
        return error_at(loc, name + " needs a float argument, found " + x.expr.type().str() +
                                 (x.expr.type().is_bool() ? "" : " (use a cast such as f32(...))"));
      }
    }
    return typed(Call::make(op, {x.expr}), loc, loc, x.depth + 1);
  }

  Expected<Operand> parse_load(const Token& name) {
    const std::string tensor(name.text);
    SourceLoc loc = loc_of(name);
    if (tensor == stage_name_) return error_at(loc, "stage " + tensor + " cannot read itself");
    auto found = tensors_.find(tensor);
    if (found == tensors_.end()) {
      return error_at(loc,
                      "unknown tensor " + quoted(tensor) + " (a stage reads only inputs and stages defined above it)");
    }
    const DataType dtype = found->second.dtype;
    const std::vector<int64_t>& shape = found->second.shape;
    advance();  // name
    advance();  // [
    std::vector<Expr> indices;
    int depth = 1;
    while (true) {
      if (at(TokenKind::kRBracket) && indices.empty()) {
        return error_at(loc_of(cur()),
                        fmt::format("access to {} needs {} indices, found none", tensor, shape.size()));
      }
      const Token start = cur();
      TG_ASSIGN_OR_RETURN(Operand idx, parse_expr());
      TG_RETURN_IF_ERROR(finalize(idx));
      TG_RETURN_IF_ERROR(check_index(idx.expr, loc_of(start), tensor));
      const size_t dim = indices.size();
      if (dim >= shape.size()) {
        return error_at(loc_of(start), fmt::format("{} has {} dimension{} but is accessed with more indices", tensor,
                                                   shape.size(), shape.size() == 1 ? "" : "s"));
      }
      if (const Variable* v = idx.expr.as<Variable>())
        TG_RETURN_IF_ERROR(record_lone_use(v->name, tensor, int(dim), shape[dim], loc_of(start)));
      depth = std::max(depth, idx.depth + 1);
      indices.push_back(idx.expr);
      if (at(TokenKind::kComma)) {
        advance();
        continue;
      }
      if (!at(TokenKind::kRBracket)) {
        return unexpected(cur(), "',' or ']' to close the '[' of " + tensor + " at " + loc_text(loc));
      }
      advance();
      break;
    }
    if (indices.size() != shape.size()) {
      return error_at(loc, fmt::format("{} has {} dimension{} but is accessed with {} ind{}", tensor, shape.size(),
                                       shape.size() == 1 ? "" : "s", indices.size(), indices.size() == 1 ? "ex" : "ices"));
    }
    return typed(Load::make(dtype, tensor, std::move(indices)), loc, loc, depth);
  }

  Status record_lone_use(const std::string& var, const std::string& tensor, int dim, int64_t extent, SourceLoc loc) {
    VarInfo* info = find_var(var);
    if (!info) return Status();  // cannot happen: the variable was recorded when parsed
    if (!info->has_lone_use) {
      info->has_lone_use = true;
      info->lone_extent = extent;
      info->lone_tensor = tensor;
      info->lone_dim = dim;
      info->lone_loc = loc;
      return Status();
    }
    if (info->lone_extent != extent) {
      return error_at(loc, fmt::format("conflicting ranges for {}: 0..{} as index {} of {}, but 0..{} as index {} of {} at {}",
                                       quoted(var), extent, dim, tensor, info->lone_extent, info->lone_dim,
                                       info->lone_tensor, loc_text(info->lone_loc)));
    }
    return Status();
  }

  SourceLoc node_loc(const Expr& e, SourceLoc fallback) const {
    auto it = node_locs_.find(e.get());
    return it == node_locs_.end() ? fallback : it->second;
  }

  static bool has_variable(const Expr& e) {
    switch (e.kind()) {
      case NodeKind::kVariable: return true;
      case NodeKind::kIntImm: return false;
      case NodeKind::kAdd: return has_variable(e.as<Add>()->a) || has_variable(e.as<Add>()->b);
      case NodeKind::kSub: return has_variable(e.as<Sub>()->a) || has_variable(e.as<Sub>()->b);
      case NodeKind::kMul: return has_variable(e.as<Mul>()->a) || has_variable(e.as<Mul>()->b);
      case NodeKind::kDiv: return has_variable(e.as<Div>()->a) || has_variable(e.as<Div>()->b);
      case NodeKind::kMod: return has_variable(e.as<Mod>()->a) || has_variable(e.as<Mod>()->b);
      default: return true;  // not reached for checked indices
    }
  }

  // An index is i32 and affine in the variables, with / and % by positive constants.
  Status check_index(const Expr& e, SourceLoc fallback, const std::string& tensor) {
    const SourceLoc loc = node_loc(e, fallback);
    const std::string rule =
        " (an index is affine in the variables: + and -, * by an integer constant, / and % by a positive constant)";
    switch (e.kind()) {
      case NodeKind::kIntImm:
      case NodeKind::kVariable: break;
      case NodeKind::kFloatImm: return error_at(loc, "a float is not allowed in an index of " + tensor);
      case NodeKind::kAdd:
        TG_RETURN_IF_ERROR(check_index(e.as<Add>()->a, fallback, tensor));
        TG_RETURN_IF_ERROR(check_index(e.as<Add>()->b, fallback, tensor));
        break;
      case NodeKind::kSub:
        TG_RETURN_IF_ERROR(check_index(e.as<Sub>()->a, fallback, tensor));
        TG_RETURN_IF_ERROR(check_index(e.as<Sub>()->b, fallback, tensor));
        break;
      case NodeKind::kMul: {
        const Mul* m = e.as<Mul>();
        TG_RETURN_IF_ERROR(check_index(m->a, fallback, tensor));
        TG_RETURN_IF_ERROR(check_index(m->b, fallback, tensor));
        if (has_variable(m->a) && has_variable(m->b)) {
          return error_at(loc, "index " + to_string(e) + " of " + tensor +
                                   " is not affine: it multiplies two variable terms" + rule);
        }
        break;
      }
      case NodeKind::kDiv:
      case NodeKind::kMod: {
        const bool div = e.kind() == NodeKind::kDiv;
        const Expr& a = div ? e.as<Div>()->a : e.as<Mod>()->a;
        const Expr& b = div ? e.as<Div>()->b : e.as<Mod>()->b;
        TG_RETURN_IF_ERROR(check_index(a, fallback, tensor));
        TG_RETURN_IF_ERROR(check_index(b, fallback, tensor));
        if (has_variable(b)) {
          return error_at(loc, "index " + to_string(e) + " of " + tensor + " divides by a variable term" + rule);
        }
        IntRange r = constant_bounds(b, RangeScope{});
        if (r.is_point() && r.min == 0) return error_at(loc, div ? "division by zero" : "modulo by zero");
        if (!r.is_point() || r.min < 0) {
          return error_at(loc, "index " + to_string(e) + " of " + tensor + " divides by " + to_string(b) +
                                   ", which is not a positive constant" + rule);
        }
        break;
      }
      case NodeKind::kLoad:
        return error_at(loc, "index of " + tensor + " reads tensor " + e.as<Load>()->name +
                                 "; tensor reads are not allowed in an index" + rule);
      case NodeKind::kSelect: return error_at(loc, "select is not allowed in an index of " + tensor + rule);
      case NodeKind::kMin:
      case NodeKind::kMax:
      case NodeKind::kCall: return error_at(loc, "function calls are not allowed in an index of " + tensor + rule);
      case NodeKind::kCast: return error_at(loc, "casts are not allowed in an index of " + tensor + rule);
      default:
        return error_at(
            loc, "index " + to_string(e) + " of " + tensor + " must be an i32 expression, found " + e.type().str());
    }
    if (e.type() != DataType::i32()) {
      return error_at(
          loc, "index " + to_string(e) + " of " + tensor + " must be an i32 expression, found " + e.type().str());
    }
    return Status();
  }

  // ---- bounds ----

  Status check_bounds(const Expr& e, const RangeScope& scope, SourceLoc fallback) {
    switch (e.kind()) {
      case NodeKind::kSelect: {
        const Select* s = e.as<Select>();
        TG_RETURN_IF_ERROR(check_bounds(s->condition, scope, fallback));
        RangeScope when_true = scope;
        narrow_by_condition(s->condition, true, &when_true);
        TG_RETURN_IF_ERROR(check_bounds(s->true_value, when_true, fallback));
        RangeScope when_false = scope;
        narrow_by_condition(s->condition, false, &when_false);
        return check_bounds(s->false_value, when_false, fallback);
      }
      case NodeKind::kLoad: {
        const Load* l = e.as<Load>();
        auto it = tensors_.find(l->name);
        if (it == tensors_.end()) return Status();  // not reached: loads name known tensors
        const std::vector<int64_t>& shape = it->second.shape;
        for (size_t d = 0; d < l->indices.size() && d < shape.size(); ++d) {
          IntRange r = constant_bounds(l->indices[d], scope);
          if (r.min < 0 || r.max > shape[d] - 1) {
            return error_at(node_loc(e, fallback),
                              fmt::format("access {} may be out of bounds: index {} ({}) ranges over {}..{} but {} has "
                                          "extent {} in that dimension",
                                          to_string(e), d, to_string(l->indices[d]), bound_text(r.min),
                                          bound_text(r.max), l->name, shape[d]));
          }
        }
        return Status();
      }
      case NodeKind::kCast: return check_bounds(e.as<Cast>()->value, scope, fallback);
      case NodeKind::kNot: return check_bounds(e.as<Not>()->a, scope, fallback);
      case NodeKind::kCall:
        for (const Expr& a : e.as<Call>()->args) TG_RETURN_IF_ERROR(check_bounds(a, scope, fallback));
        return Status();
#define TG_BOUNDS_BINARY(Node)                               \
  case NodeKind::k##Node: {                                  \
    const Node* b = e.as<Node>();                            \
    TG_RETURN_IF_ERROR(check_bounds(b->a, scope, fallback)); \
    return check_bounds(b->b, scope, fallback);              \
  }
        TG_BOUNDS_BINARY(Add)
        TG_BOUNDS_BINARY(Sub)
        TG_BOUNDS_BINARY(Mul)
        TG_BOUNDS_BINARY(Div)
        TG_BOUNDS_BINARY(Mod)
        TG_BOUNDS_BINARY(Min)
        TG_BOUNDS_BINARY(Max)
        TG_BOUNDS_BINARY(EQ)
        TG_BOUNDS_BINARY(NE)
        TG_BOUNDS_BINARY(LT)
        TG_BOUNDS_BINARY(LE)
        TG_BOUNDS_BINARY(GT)
        TG_BOUNDS_BINARY(GE)
        TG_BOUNDS_BINARY(And)
        TG_BOUNDS_BINARY(Or)
#undef TG_BOUNDS_BINARY
      default: return Status();
    }
  }
};

}  // namespace

Expected<Program> parse_program(std::string_view text, const ProgramLimits& limits) {
  return Parser(text, limits).run();
}

}  // namespace tensorgym
