// Host-side tensors for the interpreter, the evaluator and the tests: dense,
// row-major, 64-byte aligned, owning their storage, with zeros readable for
// kInputReadSlackBytes on both sides (the compiled kernels' convention on inputs,
// support/read_slack.h). Also the deterministic random
// inputs every correctness check uses.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/ir/type.h"

namespace tensorgym {

struct Program;
struct LoopNest;

// Element types a HostBuffer (and the interpreter) support: i8, i16, i32, i64, u8,
// u16, u32, bool (one byte, 0 or 1) and f32, f64; scalar only.
bool is_supported_element_type(DataType t);

class HostBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  // An empty buffer: no elements, no storage (dtype f32, shape {0}).
  HostBuffer();
  // A zero-filled buffer. `dtype` must satisfy is_supported_element_type and every
  // dimension must be >= 0.
  HostBuffer(DataType dtype, std::vector<int64_t> shape);
  HostBuffer(const HostBuffer& other);
  HostBuffer& operator=(const HostBuffer& other);
  HostBuffer(HostBuffer&& other) noexcept = default;
  HostBuffer& operator=(HostBuffer&& other) noexcept = default;
  ~HostBuffer() = default;

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t num_elements() const { return num_elements_; }
  int64_t element_bytes() const { return dtype_.bytes(); }
  int64_t bytes() const { return num_elements_ * element_bytes(); }
  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  // The storage as T*; T's size must be the element size.
  template <class T>
  T* typed() {
    assert(int64_t(sizeof(T)) == element_bytes());
    return reinterpret_cast<T*>(storage_.get());
  }
  template <class T>
  const T* typed() const {
    assert(int64_t(sizeof(T)) == element_bytes());
    return reinterpret_cast<const T*>(storage_.get());
  }

  // Element `i` (flat, row-major; 0 <= i < num_elements()) of any dtype as a double:
  // integers and bools exactly up to 2^53.
  double get_float(int64_t i) const;
  // Element `i` as an integer; float elements convert as an IR cast to i64 does
  // (truncation toward zero, saturating, NaN -> 0).
  int64_t get_int(int64_t i) const;
  // Stores `v` with the semantics of an IR cast from f64 to the buffer's dtype
  // (rounded to f32; truncated and saturated for integers; != 0 for bool).
  void set_float(int64_t i, double v);
  // Stores `v` with the semantics of an IR cast from i64 to the buffer's dtype
  // (wrapped to the integer width; != 0 for bool; converted for floats).
  void set_int(int64_t i, int64_t v);

  // Flat index of a multi-dimensional index (one entry per dimension, in range).
  int64_t flat_index(const std::vector<int64_t>& index) const;
  // "f32[64, 32]"
  std::string describe() const;

 private:
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  void allocate();

  DataType dtype_ = DataType::f32();
  std::vector<int64_t> shape_{0};
  int64_t num_elements_ = 0;
  std::unique_ptr<std::byte[], FreeAligned> storage_;
};

// A 64-bit seed derived from (seed, stream): distinct streams give independent
// sequences. Used to seed one buffer per input.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// Fills with values from a splitmix64 sequence seeded by `seed`; identical bits on
// every platform. f32/f64: uniform in [-1, 1) on a 2^-23 (f32) or 2^-52 (f64) grid;
// i8: [-8, 8]; i16, i32, i64: [-64, 64]; u8, u16, u32: [0, 16]; bool: 0 or 1.
// The ranges keep integer dot products far from overflow.
void fill_random(HostBuffer& buffer, uint64_t seed);

// Fills with the poison pattern: quiet NaN for floats, 0x5A in every byte for
// integers (bools read as 1), so reads of never-written elements show up as
// mismatches.
void fill_poison(HostBuffer& buffer);

// One random buffer per program input, in declaration order; input i is filled with
// fill_random(derive_seed(seed, i)).
std::vector<HostBuffer> make_random_inputs(const Program& program, uint64_t seed);

// One poisoned buffer per nest output (shape and dtype as declared), so an output
// element the nest never writes is caught by the comparison.
std::vector<HostBuffer> make_output_buffers(const LoopNest& nest);

// Pointer views for interpret() and ProgramEvaluator.
std::vector<const HostBuffer*> const_pointers(const std::vector<HostBuffer>& buffers);
std::vector<HostBuffer*> pointers(std::vector<HostBuffer>& buffers);

}  // namespace tensorgym
