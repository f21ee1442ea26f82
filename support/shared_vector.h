// A vector whose copies share one buffer until one of them is written (copy on
// write). For lists copied often and changed rarely: a loop nest's buffer arguments,
// which every lowering that reuses the previous one carries over unchanged. Reads
// go through the const std::vector it converts to; writes copy the buffer first
// when another SharedVector still shares it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

#include "support/copy_on_write.h"

namespace tensorgym {

template <class T>
class SharedVector {
 public:
  SharedVector() = default;
  SharedVector(std::initializer_list<T> items) : SharedVector(std::vector<T>(items)) {}
  SharedVector(std::vector<T> items) {  // NOLINT: implicit, as a vector is assigned to one
    if (!items.empty()) items_ = std::move(items);  // an empty one allocates nothing
  }

  const std::vector<T>& get() const { return items_.get(); }
  operator const std::vector<T>&() const { return get(); }  // NOLINT: reads as a vector

  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const T& operator[](size_t i) const { return get()[i]; }
  typename std::vector<T>::const_iterator begin() const { return get().begin(); }
  typename std::vector<T>::const_iterator end() const { return get().end(); }

  // The vector to write, this copy's own.
  std::vector<T>& mutable_vector() { return items_.mutate(); }
  void push_back(T item) { mutable_vector().push_back(std::move(item)); }

 private:
  CopyOnWrite<std::vector<T>> items_;
};

}  // namespace tensorgym
