#include "codegen/interp/host_buffer.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/interp/interpreter.h"
#include "codegen/ir/program.h"
#include "codegen/lower/loop_nest.h"
#include "support/read_slack.h"

namespace tensorgym {

bool is_supported_element_type(DataType t) {
  if (!t.is_scalar()) return false;
  switch (t.code) {
    case TypeCode::kInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::kUInt: return t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32;
    case TypeCode::kFloat: return t.bits == 32 || t.bits == 64;
  }
  return false;
}

void HostBuffer::FreeAligned::operator()(std::byte* p) const { std::free(p - kInputReadSlackBytes); }

HostBuffer::HostBuffer() = default;

HostBuffer::HostBuffer(DataType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  assert(is_supported_element_type(dtype_));
  num_elements_ = 1;
  for (int64_t d : shape_) {
    assert(d >= 0);
    num_elements_ *= d;
  }
  allocate();
}

HostBuffer::HostBuffer(const HostBuffer& other)
    : dtype_(other.dtype_), shape_(other.shape_), num_elements_(other.num_elements_) {
  allocate();
  if (other.storage_ && bytes() > 0) std::memcpy(storage_.get(), other.storage_.get(), size_t(bytes()));
}

HostBuffer& HostBuffer::operator=(const HostBuffer& other) {
  if (this != &other) *this = HostBuffer(other);
  return *this;
}

void HostBuffer::allocate() {
  // Round up to the alignment (aligned_alloc requires it); never zero bytes, so
  // data() of an empty buffer is still a valid aligned pointer. Zero-filled slack on
  // both sides: compiled kernels may read it (support/read_slack.h).
  static_assert(kInputReadSlackBytes % kAlignment == 0);
  size_t n = size_t(bytes());
  size_t rounded = (n + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  const size_t total = rounded + 2 * size_t(kInputReadSlackBytes);
  void* p = std::aligned_alloc(kAlignment, total);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, total);
  storage_.reset(static_cast<std::byte*>(p) + kInputReadSlackBytes);
}

double HostBuffer::get_float(int64_t i) const {
  assert(i >= 0 && i < num_elements_);
  if (dtype_.is_float())
    return dtype_.bits == 32 ? double(typed<float>()[i]) : typed<double>()[i];
  return double(get_int(i));
}

int64_t HostBuffer::get_int(int64_t i) const {
  assert(i >= 0 && i < num_elements_);
  const std::byte* p = storage_.get();
  switch (dtype_.code) {
    case TypeCode::kFloat:
      return scalar_semantics::float_to_int(get_float(i), DataType::i64());
    case TypeCode::kInt:
      switch (dtype_.bits) {
        case 8: return reinterpret_cast<const int8_t*>(p)[i];
        case 16: return reinterpret_cast<const int16_t*>(p)[i];
        case 32: return reinterpret_cast<const int32_t*>(p)[i];
        default: return reinterpret_cast<const int64_t*>(p)[i];
      }
    case TypeCode::kUInt:
      switch (dtype_.bits) {
        case 1: return reinterpret_cast<const uint8_t*>(p)[i] != 0;
        case 8: return reinterpret_cast<const uint8_t*>(p)[i];
        case 16: return reinterpret_cast<const uint16_t*>(p)[i];
        default: return reinterpret_cast<const uint32_t*>(p)[i];
      }
  }
  return 0;
}

void HostBuffer::set_float(int64_t i, double v) {
  assert(i >= 0 && i < num_elements_);
  if (dtype_.is_float()) {
    if (dtype_.bits == 32) {
      typed<float>()[i] = float(v);
    } else {
      typed<double>()[i] = v;
    }
    return;
  }
  if (dtype_.is_bool()) {
    set_int(i, v != 0.0 ? 1 : 0);
    return;
  }
  set_int(i, scalar_semantics::float_to_int(v, dtype_));
}

void HostBuffer::set_int(int64_t i, int64_t v) {
  assert(i >= 0 && i < num_elements_);
  std::byte* p = storage_.get();
  switch (dtype_.code) {
    case TypeCode::kFloat:
      if (dtype_.bits == 32) {
        typed<float>()[i] = float(v);
      } else {
        typed<double>()[i] = double(v);
      }
      return;
    case TypeCode::kInt:
    case TypeCode::kUInt:
      if (dtype_.is_bool()) v = v != 0;
      switch (dtype_.bytes()) {
        case 1: reinterpret_cast<uint8_t*>(p)[i] = uint8_t(uint64_t(v)); return;
        case 2: reinterpret_cast<uint16_t*>(p)[i] = uint16_t(uint64_t(v)); return;
        case 4: reinterpret_cast<uint32_t*>(p)[i] = uint32_t(uint64_t(v)); return;
        default: reinterpret_cast<int64_t*>(p)[i] = v; return;
      }
  }
}

int64_t HostBuffer::flat_index(const std::vector<int64_t>& index) const {
  assert(index.size() == shape_.size());
  int64_t flat = 0;
  for (size_t d = 0; d < shape_.size(); ++d) flat = flat * shape_[d] + index[d];
  return flat;
}

std::string HostBuffer::describe() const {
  return fmt::format("{}[{}]", dtype_.str(), fmt::join(shape_, ", "));
}

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform integer in [lo, hi] from the top 32 bits of `u` (multiply-shift; the
// bias is below 2^-27 for these small ranges and identical on every platform).
int64_t uniform_int(uint64_t u, int64_t lo, int64_t hi) {
  uint64_t span = uint64_t(hi - lo + 1);
  return lo + int64_t(((u >> 32) * span) >> 32);
}

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t state = seed;
  uint64_t a = splitmix64(state);
  state = a ^ (stream * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull);
  return splitmix64(state);
}

void fill_random(HostBuffer& buffer, uint64_t seed) {
  uint64_t state = seed;
  const DataType t = buffer.dtype();
  const int64_t n = buffer.num_elements();
  if (t.is_float()) {
    if (t.bits == 32) {
      float* p = buffer.typed<float>();
      for (int64_t i = 0; i < n; ++i) {
        // 24 random bits k: (k - 2^23) * 2^-23 is exact in float and in [-1, 1).
        int64_t k = int64_t(splitmix64(state) >> 40);
        p[i] = float(double(k - (int64_t(1) << 23)) * 0x1p-23);
      }
    } else {
      double* p = buffer.typed<double>();
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = int64_t(splitmix64(state) >> 11);
        p[i] = double(k - (int64_t(1) << 52)) * 0x1p-52;
      }
    }
    return;
  }
  int64_t lo = -64, hi = 64;
  if (t.is_bool()) {
    lo = 0, hi = 1;
  } else if (t.code == TypeCode::kUInt) {
    lo = 0, hi = 16;
  } else if (t.bits == 8) {
    lo = -8, hi = 8;
  }
  for (int64_t i = 0; i < n; ++i) buffer.set_int(i, uniform_int(splitmix64(state), lo, hi));
}

void fill_poison(HostBuffer& buffer) {
  const DataType t = buffer.dtype();
  const int64_t n = buffer.num_elements();
  if (t.is_float()) {
    if (t.bits == 32) {
      float* p = buffer.typed<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = std::numeric_limits<float>::quiet_NaN();
    } else {
      double* p = buffer.typed<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = std::numeric_limits<double>::quiet_NaN();
    }
    return;
  }
  if (buffer.bytes() > 0) std::memset(buffer.data(), 0x5A, size_t(buffer.bytes()));
}

std::vector<HostBuffer> make_random_inputs(const Program& program, uint64_t seed) {
  std::vector<HostBuffer> buffers;
  buffers.reserve(program.inputs.size());
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const TensorInput& in = program.inputs[i];
    buffers.emplace_back(in.dtype, in.shape);
    fill_random(buffers.back(), derive_seed(seed, i));
  }
  return buffers;
}

std::vector<HostBuffer> make_output_buffers(const LoopNest& nest) {
  std::vector<HostBuffer> buffers;
  buffers.reserve(nest.outputs.size());
  for (const BufferArg& arg : nest.outputs) {
    buffers.emplace_back(arg.dtype, arg.shape);
    fill_poison(buffers.back());
  }
  return buffers;
}

std::vector<const HostBuffer*> const_pointers(const std::vector<HostBuffer>& buffers) {
  std::vector<const HostBuffer*> out;
  out.reserve(buffers.size());
  for (const HostBuffer& b : buffers) out.push_back(&b);
  return out;
}

std::vector<HostBuffer*> pointers(std::vector<HostBuffer>& buffers) {
  std::vector<HostBuffer*> out;
  out.reserve(buffers.size());
  for (HostBuffer& b : buffers) out.push_back(&b);
  return out;
}

}  // namespace tensorgym
