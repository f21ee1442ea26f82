// A value whose copies share one immutable instance until one of them is written
// (copy on write): for parts of a state that is copied on every step and changed
// on few of them, such as a stage's definition in a schedule state. Reads see a
// const T; mutate() gives this copy its own instance first when another shares it.
// Like a std::vector, one object is not for writing from two threads at once.
#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace tensorgym {

template <class T>
class CopyOnWrite {
 public:
  CopyOnWrite() = default;  // T's default value, without an allocation
  CopyOnWrite(T value) : value_(std::make_shared<T>(std::move(value))) {}  // NOLINT: implicit, as a T is assigned

  const T& get() const { return value_ ? *value_ : default_value(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }
  operator const T&() const { return get(); }  // NOLINT: reads as a T

  T& mutate() {
    if (!value_) {
      value_ = std::make_shared<T>();
    } else if (value_.use_count() > 1) {
      value_ = std::make_shared<T>(*value_);
    } else {
      // The only holder: no other can appear but through this object. Whoever let go
      // of the instance last read it before its release; order those reads before
      // the writes that follow.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return *value_;
  }

  // Whether the two share one instance (then they are equal without comparing).
  bool shares_with(const CopyOnWrite& other) const { return value_ && value_ == other.value_; }

 private:
  static const T& default_value() {
    static const T value;
    return value;
  }

  std::shared_ptr<T> value_;
};

}  // namespace tensorgym
