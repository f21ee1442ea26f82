#include "codegen/schedule/trace.h"

#include <cctype>

#include <fmt/format.h>

#include "support/quote.h"

namespace tensorgym {

std::string Primitive::to_string() const {
  size_t size = name.size() + 2;
  for (const std::string& a : args) size += a.size() + 2;
  std::string s;
  s.reserve(size);
  s += name;
  s += '(';
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) s += ", ";
    s += args[i];
  }
  s += ')';
  return s;
}

std::string Trace::to_string() const {
  std::string s;
  for (const Primitive& p : steps) s += p.to_string() + "\n";
  return s;
}

namespace {

class TraceReader {
 public:
  explicit TraceReader(std::string_view text) : text_(text) {}

  Expected<Trace> read() {
    Trace trace;
    for (;;) {
      skip_blanks_and_separators();
      if (at_end()) return trace;
      Expected<Primitive> p = read_primitive();
      if (!p.ok()) return p.status();
      trace.steps.push_back(std::move(*p));
      skip_spaces();
      if (at_end()) return trace;
      char c = peek();
      if (c != ';' && c != '\n' && c != '\r' && c != '#')
        return error("expected ';' or a new line after " + excerpt_text(trace.steps.back().to_string()));
    }
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  Status error(const std::string& message) const {
    return invalid_argument(fmt::format("{}:{}: {}", line_, col_, message));
  }
  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) advance();
  }
  void skip_blanks_and_separators() {
    for (;;) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';') {
        advance();
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }
  // The longest run of characters from here that `pred` accepts (none is a new line),
  // copied once rather than a character at a time: actions arrive as text on every step.
  template <typename Pred>
  std::string take_while(Pred pred) {
    const size_t start = pos_;
    while (pos_ < text_.size() && pred(text_[pos_])) ++pos_;
    col_ += int(pos_ - start);
    return std::string(text_.substr(start, pos_ - start));
  }
  // ASCII only, without the locale lookup of std::isalnum: a trace is ASCII text.
  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  static bool is_word_char(char c) { return is_name_char(c) || c == '.' || c == '-' || c == '+'; }

  Expected<Primitive> read_primitive() {
    Primitive p;
    p.loc = {line_, col_};
    if (!is_name_char(peek()) || (peek() >= '0' && peek() <= '9'))
      return error(std::string("expected a primitive name, found ") + describe(peek()));
    p.name = take_while(is_name_char);
    skip_spaces();
    if (peek() != '(') return error("expected '(' after " + excerpt_text(p.name));
    advance();
    skip_spaces();
    if (peek() == ')') {
      advance();
      return p;
    }
    p.args.reserve(4);  // most primitives take at most four
    for (;;) {
      skip_spaces();
      std::string arg = take_while(is_word_char);
      if (arg.empty()) return error("expected an argument of " + excerpt_text(p.name) + ", found " + describe(peek()));
      p.args.push_back(std::move(arg));
      skip_spaces();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ')') {
        advance();
        return p;
      }
      return error("expected ',' or ')' in " + excerpt_text(p.name) + "(...), found " + describe(peek()));
    }
  }

  static std::string describe(char c) {
    if (c == '\0') return "the end of the text";
    if (c == '\n') return "the end of the line";
    if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
    return "an unexpected byte";
  }
};

}  // namespace

Expected<Trace> parse_trace(std::string_view text) { return TraceReader(text).read(); }

}  // namespace tensorgym
