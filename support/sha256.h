// SHA-256 (FIPS 180-4): content hashes for keys that name what a batch job or a
// cached program is. Small and dependency-free: nothing needs a crypto library.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tensorgym {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest; the object is spent afterwards.
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

// The lower-case hex of SHA-256(bytes).
std::string sha256_hex(std::string_view bytes);

}  // namespace tensorgym
