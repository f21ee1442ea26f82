#include "codegen/ir/type.h"

namespace tensorgym {

std::string DataType::str() const {
  std::string s;
  if (is_bool()) {
    s = "bool";
  } else {
    s = code == TypeCode::kFloat ? "f" : code == TypeCode::kInt ? "i" : "u";
    s += std::to_string(bits);
  }
  if (lanes > 1) s += "x" + std::to_string(lanes);
  return s;
}

std::optional<DataType> parse_dtype(std::string_view text) {
  if (text == "f32") return DataType::f32();
  if (text == "f64") return DataType::f64();
  if (text == "i8") return DataType::i8();
  if (text == "i32") return DataType::i32();
  return std::nullopt;
}

}  // namespace tensorgym
