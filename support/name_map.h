// A small map from names to values, for the per-lowering tables of bound inference and
// lowering.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensorgym {

// A few values keyed by name, with the lookups of an unordered_map: a flat list searched
// by name, cheaper to build, search and free than a hash map when there are a handful
// of entries made again on every use (the stages and buffers of a lowering). Entries
// keep their insertion order, and their addresses while nothing is added.
template <class T>
class NameMap {
 public:
  using value_type = std::pair<std::string, T>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void reserve(size_t n) { entries_.reserve(n); }

  iterator find(std::string_view name) { return begin() + ptrdiff_t(index_of(name)); }
  const_iterator find(std::string_view name) const { return begin() + ptrdiff_t(index_of(name)); }
  size_t count(std::string_view name) const { return index_of(name) < size() ? 1 : 0; }
  const T& at(std::string_view name) const {
    size_t i = index_of(name);
    if (i == size()) throw std::out_of_range("NameMap::at: no entry named " + std::string(name));
    return entries_[i].second;
  }
  T& at(std::string_view name) { return const_cast<T&>(std::as_const(*this).at(name)); }
  // Like unordered_map::emplace: keeps the value of a name already present.
  std::pair<iterator, bool> emplace(std::string_view name, T value) {
    if (size_t i = index_of(name); i < size()) return {begin() + ptrdiff_t(i), false};
    entries_.emplace_back(std::string(name), std::move(value));
    return {end() - 1, true};
  }

 private:
  // The position of `name`, or size() when absent.
  size_t index_of(std::string_view name) const {
    size_t i = 0;
    while (i < entries_.size() && entries_[i].first != name) ++i;
    return i;
  }
  std::vector<value_type> entries_;
};

}  // namespace tensorgym
