// Tokenizer of the program language. Every token carries its line:column so that
// every parse error can point at what was wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorgym {

enum class TokenKind : uint8_t {
  kIdent,       // [A-Za-z_][A-Za-z0-9_]*, reserved words included
  kInt,         // 123
  kFloat,       // 1.5, 2e-3, 1.0e5
  kLBracket,    // [
  kRBracket,    // ]
  kLParen,      // (
  kRParen,      // )
  kComma,       // ,
  kColon,       // :
  kPlus,        // +
  kMinus,       // -
  kStar,        // *
  kSlash,       // /
  kPercent,     // %
  kAssign,      // =
  kPlusAssign,  // +=
  kMaxAssign,   // max=
  kMinAssign,   // min=
  kEq,          // ==
  kNe,          // !=
  kLt,          // <
  kLe,          // <=
  kGt,          // >
  kGe,          // >=
  kAndAnd,      // &&
  kOrOr,        // ||
  kBang,        // !
  kDotDot,      // ..
  kNewline,     // end of a line (statements are one per line)
  kEnd,         // end of the text
  kError,       // a malformed token; `message` says why, and lexing stops there
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;   // the token's bytes in the source (empty for kNewline / kEnd)
  int line = 1;            // 1-based
  int column = 1;          // 1-based, in bytes
  uint64_t int_value = 0;  // kInt: the value (at most INT64_MAX)
  double float_value = 0;  // kFloat: the value (finite)
  std::string message;     // kError: what is wrong
};

// The spelling of a token kind for messages ("'['", "end of line", "a number").
const char* token_kind_name(TokenKind kind);

// A token as messages quote it: "'foo'", "'+='", "end of line", "'\x00'".
std::string describe_token(const Token& token);

// Reserved words: input, where, in, select, min, max, abs, exp, log, sqrt, tanh and
// the type names f32, f64, i8, i32.
bool is_reserved_word(std::string_view word);

// Reads tokens one at a time (the parser needs one token of lookahead, so the
// text is never held as a token array). Comments (`#` to end of line) and blanks
// vanish; each line break is a kNewline token. After kEnd, or after a kError at
// the first malformed input, next() keeps returning that same token.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  Token next();

 private:
  Token scan();
  Token make(TokenKind kind, size_t start, size_t len);
  Token error(size_t start, std::string message);
  Token identifier(size_t start);
  Token number(size_t start);
  void skip_blanks_and_comments();
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  bool done_ = false;
  Token last_;  // the kEnd or kError token once done_
};

// All tokens of `text`, ending with kEnd or with one kError (never both).
std::vector<Token> tokenize(std::string_view text);

}  // namespace tensorgym
