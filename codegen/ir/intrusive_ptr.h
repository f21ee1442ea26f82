// Reference-counted pointer to immutable IR nodes (the count lives in the node).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace tensorgym {

struct RefCounted {
  mutable std::atomic<int32_t> ref_count{0};
  RefCounted() = default;
  RefCounted(const RefCounted&) : ref_count(0) {}
  RefCounted& operator=(const RefCounted&) { return *this; }
  virtual ~RefCounted() = default;
};

template <class T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  IntrusivePtr(T* p) : p_(p) { incref(); }  // NOLINT(google-explicit-constructor)
  IntrusivePtr(const IntrusivePtr& o) : p_(o.p_) { incref(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  IntrusivePtr(const IntrusivePtr<U>& o) : p_(o.get()) {  // NOLINT(google-explicit-constructor)
    incref();
  }
  ~IntrusivePtr() { decref(); }
  IntrusivePtr& operator=(IntrusivePtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool same_as(const IntrusivePtr& o) const { return p_ == o.p_; }

 private:
  void incref() const {
    if (p_) p_->ref_count.fetch_add(1, std::memory_order_relaxed);
  }
  void decref() {
    if (p_ && p_->ref_count.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

}  // namespace tensorgym
