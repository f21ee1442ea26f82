#include "codegen/ir/type.h"

#include <charconv>

namespace tensorgym {

std::string DataType::str() const {
  // Into a local buffer: printers call this for every typed node.
  char buf[32];
  char* p = buf;
  char* const end = buf + sizeof(buf);
  if (is_bool()) {
    for (char c : {'b', 'o', 'o', 'l'}) *p++ = c;
  } else {
    *p++ = code == TypeCode::kFloat ? 'f' : code == TypeCode::kInt ? 'i' : 'u';
    p = std::to_chars(p, end, bits).ptr;
  }
  if (lanes > 1) {
    *p++ = 'x';
    p = std::to_chars(p, end, lanes).ptr;
  }
  return std::string(buf, p);
}

std::optional<DataType> parse_dtype(std::string_view text) {
  if (text == "f32") return DataType::f32();
  if (text == "f64") return DataType::f64();
  if (text == "i8") return DataType::i8();
  if (text == "i32") return DataType::i32();
  return std::nullopt;
}

}  // namespace tensorgym
