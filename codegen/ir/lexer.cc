#include "codegen/ir/lexer.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "codegen/ir/program.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// Text quoted for a message, cut short when long, bytes outside printable ASCII escaped.
std::string quote(std::string_view s) {
  constexpr size_t kMaxShown = 40;
  return quote_text(s, kMaxShown);
}

}  // namespace

const char* token_kind_name(TokenKind kind) {
  switch (kind) {
    case TokenKind::kIdent: return "a name";
    case TokenKind::kInt: return "an integer";
    case TokenKind::kFloat: return "a float";
    case TokenKind::kLBracket: return "'['";
    case TokenKind::kRBracket: return "']'";
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kComma: return "','";
    case TokenKind::kColon: return "':'";
    case TokenKind::kPlus: return "'+'";
    case TokenKind::kMinus: return "'-'";
    case TokenKind::kStar: return "'*'";
    case TokenKind::kSlash: return "'/'";
    case TokenKind::kPercent: return "'%'";
    case TokenKind::kAssign: return "'='";
    case TokenKind::kPlusAssign: return "'+='";
    case TokenKind::kMaxAssign: return "'max='";
    case TokenKind::kMinAssign: return "'min='";
    case TokenKind::kEq: return "'=='";
    case TokenKind::kNe: return "'!='";
    case TokenKind::kLt: return "'<'";
    case TokenKind::kLe: return "'<='";
    case TokenKind::kGt: return "'>'";
    case TokenKind::kGe: return "'>='";
    case TokenKind::kAndAnd: return "'&&'";
    case TokenKind::kOrOr: return "'||'";
    case TokenKind::kBang: return "'!'";
    case TokenKind::kDotDot: return "'..'";
    case TokenKind::kNewline: return "end of line";
    case TokenKind::kEnd: return "end of input";
    case TokenKind::kError: return "an invalid token";
  }
  return "a token";
}

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::kNewline:
    case TokenKind::kEnd: return token_kind_name(token.kind);
    default: return quote(token.text);
  }
}

bool is_reserved_word(std::string_view word) {
  static constexpr std::array<std::string_view, 15> kReserved = {
      "input", "where", "in", "select", "min", "max", "abs", "exp", "log", "sqrt", "tanh", "f32", "f64", "i8", "i32"};
  for (std::string_view r : kReserved)
    if (word == r) return true;
  return false;
}

Token Lexer::make(TokenKind kind, size_t start, size_t len) {
  Token t;
  t.kind = kind;
  t.text = text_.substr(start, len);
  t.line = line_;
  t.column = int(start - line_start_) + 1;
  pos_ = start + len;
  return t;
}
Token Lexer::error(size_t start, std::string message) {
  Token t;
  t.kind = TokenKind::kError;
  t.text = text_.substr(start, 1);
  t.line = line_;
  t.column = int(start - line_start_) + 1;
  t.message = std::move(message);
  return t;
}

void Lexer::skip_blanks_and_comments() {
  while (!at_end()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '#') {
      while (!at_end() && peek() != '\n') ++pos_;
    } else {
      break;
    }
  }
}

Token Lexer::scan() {
  skip_blanks_and_comments();
  if (at_end()) return make(TokenKind::kEnd, pos_, 0);
  const size_t start = pos_;
  const char c = peek();
  if (c == '\n') {
    Token t = make(TokenKind::kNewline, start, 1);
    t.text = {};
    ++line_;
    line_start_ = pos_;
    return t;
  }
  if (is_ident_start(c)) return identifier(start);
  if (is_digit(c)) return number(start);
  auto two = [&](char second) { return peek(1) == second; };
  switch (c) {
    case '[': return make(TokenKind::kLBracket, start, 1);
    case ']': return make(TokenKind::kRBracket, start, 1);
    case '(': return make(TokenKind::kLParen, start, 1);
    case ')': return make(TokenKind::kRParen, start, 1);
    case ',': return make(TokenKind::kComma, start, 1);
    case ':': return make(TokenKind::kColon, start, 1);
    case '+': return two('=') ? make(TokenKind::kPlusAssign, start, 2) : make(TokenKind::kPlus, start, 1);
    case '-': return make(TokenKind::kMinus, start, 1);
    case '*': return make(TokenKind::kStar, start, 1);
    case '/': return make(TokenKind::kSlash, start, 1);
    case '%': return make(TokenKind::kPercent, start, 1);
    case '=': return two('=') ? make(TokenKind::kEq, start, 2) : make(TokenKind::kAssign, start, 1);
    case '!': return two('=') ? make(TokenKind::kNe, start, 2) : make(TokenKind::kBang, start, 1);
    case '<': return two('=') ? make(TokenKind::kLe, start, 2) : make(TokenKind::kLt, start, 1);
    case '>': return two('=') ? make(TokenKind::kGe, start, 2) : make(TokenKind::kGt, start, 1);
    case '&':
      if (two('&')) return make(TokenKind::kAndAnd, start, 2);
      return error(start, "unexpected character '&' (did you mean '&&'?)");
    case '|':
      if (two('|')) return make(TokenKind::kOrOr, start, 2);
      return error(start, "unexpected character '|' (did you mean '||'?)");
    case '.':
      if (two('.')) return make(TokenKind::kDotDot, start, 2);
      if (is_digit(peek(1))) return error(start, "a number must start with a digit (write 0.5, not .5)");
      return error(start, "unexpected character '.'");
    default: break;
  }
  return error(start, "unexpected character " + quote(text_.substr(start, 1)));
}

Token Lexer::identifier(size_t start) {
  size_t end = start;
  while (end < text_.size() && is_ident_char(text_[end])) ++end;
  if (end - start > kMaxNameBytes)
    return error(start, fmt::format("a name of {} bytes, over the limit of {}", end - start, kMaxNameBytes));
  std::string_view word = text_.substr(start, end - start);
  // `max=` / `min=` are the reduction operators; `max==` is never valid anyway.
  if ((word == "max" || word == "min") && end < text_.size() && text_[end] == '=' &&
      !(end + 1 < text_.size() && text_[end + 1] == '=')) {
    return make(word == "max" ? TokenKind::kMaxAssign : TokenKind::kMinAssign, start, end - start + 1);
  }
  return make(TokenKind::kIdent, start, end - start);
}

Token Lexer::number(size_t start) {
  size_t end = start;
  auto digits = [&] {
    size_t from = end;
    while (end < text_.size() && is_digit(text_[end])) ++end;
    return end > from;
  };
  digits();
  bool is_float = false;
  if (end < text_.size() && text_[end] == '.' && !(end + 1 < text_.size() && text_[end + 1] == '.')) {
    ++end;
    is_float = true;
    if (!digits()) {
      return error(start,
                   "malformed number " + quote(text_.substr(start, end - start)) + ": expected digits after '.'");
    }
  }
  if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
    size_t save = end;
    ++end;
    if (end < text_.size() && (text_[end] == '+' || text_[end] == '-')) ++end;
    if (!digits()) {
      end = save + 1;
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
      return error(start,
                   "malformed number " + quote(text_.substr(start, end - start)) + ": expected digits in the exponent");
    }
    is_float = true;
  }
  if (end < text_.size() && is_ident_char(text_[end])) {
    while (end < text_.size() && is_ident_char(text_[end])) ++end;
    return error(start, "malformed number " + quote(text_.substr(start, end - start)));
  }
  std::string_view spelled = text_.substr(start, end - start);
  if (!is_float) {
    uint64_t v = 0;
    constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
    for (char d : spelled) {
      uint64_t digit = uint64_t(d - '0');
      if (v > (kMax - digit) / 10) return error(start, "integer literal " + quote(spelled) + " is too large");
      v = v * 10 + digit;
    }
    Token t = make(TokenKind::kInt, start, end - start);
    t.int_value = v;
    return t;
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(spelled.data(), spelled.data() + spelled.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && !std::isfinite(v)))
    return error(start, "float literal " + quote(spelled) + " is out of range");
  if (ec != std::errc() || ptr != spelled.data() + spelled.size())
    return error(start, "malformed number " + quote(spelled));
  Token t = make(TokenKind::kFloat, start, end - start);
  t.float_value = v;
  return t;
}

Token Lexer::next() {
  if (done_) return last_;
  Token t = scan();
  if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kError) {
    done_ = true;
    last_ = t;
  }
  return t;
}

std::vector<Token> tokenize(std::string_view text) {
  Lexer lexer(text);
  std::vector<Token> out;
  while (true) {
    out.push_back(lexer.next());
    if (out.back().kind == TokenKind::kEnd || out.back().kind == TokenKind::kError) break;
  }
  return out;
}

}  // namespace tensorgym
