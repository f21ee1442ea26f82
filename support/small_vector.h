// A vector that keeps its first N elements inside the object: short sequences built
// on every lowering (the terms of an index's linear form) cost no heap allocation.
// Only what its users need: append, erase, clear, index, iterate.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace tensorgym {

template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(const SmallVector& o) { append_all(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(std::move(o)); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      append_all(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(std::move(o));
    }
    return *this;
  }
  ~SmallVector() {
    clear();
    release();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= cap_) return;
    T* heap = static_cast<T*>(::operator new(n * sizeof(T)));
    std::uninitialized_move(data_, data_ + size_, heap);
    std::destroy(data_, data_ + size_);
    release();
    data_ = heap;
    cap_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(cap_ * 2);
    ::new (data_ + size_) T(std::move(v));
    ++size_;
  }
  // Removes the element at `pos`, shifting the later ones down (order kept).
  T* erase(T* pos) {
    std::move(pos + 1, end(), pos);
    --size_;
    std::destroy_at(data_ + size_);
    return pos;
  }
  void clear() {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  void release() {
    if (data_ != inline_data()) ::operator delete(data_);
    data_ = inline_data();
    cap_ = N;
  }
  void append_all(const T* b, const T* e) {
    reserve(size_ + size_t(e - b));
    for (; b != e; ++b) ::new (data_ + size_++) T(*b);
  }
  // Takes o's elements (its heap block when it has one), leaving o empty; *this is empty.
  void take(SmallVector&& o) {
    if (o.data_ != o.inline_data()) {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.inline_data();
      o.cap_ = N;
      o.size_ = 0;
      return;
    }
    std::uninitialized_move(o.begin(), o.end(), data_);
    size_ = o.size_;
    o.clear();
  }

  T* data_ = inline_data();
  size_t size_ = 0;
  size_t cap_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace tensorgym
