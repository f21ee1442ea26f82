// FNV-1a, 64 bits: a stable hash (the same value in every process and build) for
// fingerprints and cache keys. Not for anything adversarial.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorgym {

inline constexpr uint64_t kFnvOffset = 1469598103934665603ull;

// Hashes `bytes`, continuing from `h` (chain calls to hash several fields).
inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// 16 lowercase hex digits.
inline std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace tensorgym
