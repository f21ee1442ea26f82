// Scalar and vector element types of the IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorgym {

enum class TypeCode : uint8_t { kInt, kUInt, kFloat };

// A scalar type with `lanes` > 1 is a vector (produced by vectorization).
struct DataType {
  TypeCode code = TypeCode::kInt;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DataType() = default;
  constexpr DataType(TypeCode c, int b, int l = 1) : code(c), bits(uint8_t(b)), lanes(uint16_t(l)) {}

  static constexpr DataType i8() { return {TypeCode::kInt, 8}; }
  static constexpr DataType i32() { return {TypeCode::kInt, 32}; }
  static constexpr DataType i64() { return {TypeCode::kInt, 64}; }
  static constexpr DataType f32() { return {TypeCode::kFloat, 32}; }
  static constexpr DataType f64() { return {TypeCode::kFloat, 64}; }
  static constexpr DataType boolean() { return {TypeCode::kUInt, 1}; }

  constexpr bool is_float() const { return code == TypeCode::kFloat; }
  constexpr bool is_bool() const { return code == TypeCode::kUInt && bits == 1; }
  constexpr bool is_int() const { return code == TypeCode::kInt; }
  constexpr bool is_vector() const { return lanes > 1; }
  constexpr bool is_scalar() const { return lanes == 1; }
  constexpr DataType element_of() const { return {code, bits, 1}; }
  constexpr DataType with_lanes(int l) const { return {code, bits, l}; }
  constexpr int bytes() const { return bits == 1 ? 1 : bits / 8; }

  constexpr bool operator==(const DataType& o) const {
    return code == o.code && bits == o.bits && lanes == o.lanes;
  }
  constexpr bool operator!=(const DataType& o) const { return !(*this == o); }

  // "f32", "i32", "bool", "f32x8".
  std::string str() const;
};

// Parses the program-language spelling of a type ("f32", "f64", "i8", "i32").
std::optional<DataType> parse_dtype(std::string_view text);

}  // namespace tensorgym
