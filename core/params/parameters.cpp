// ParameterSet: declaration, lookup and gradient reset.
#include "core/params/parameters.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

template <typename T>
typename ParameterSet<T>::Id ParameterSet<T>::add(const std::string& name, std::vector<int64_t> shape,
                                                  bool weight_decay) {
  for (const auto& e : entries_)
    if (e.name == name) throw std::logic_error("duplicate parameter name " + name);
  size_t size = 1;
  for (int64_t d : shape) size *= static_cast<size_t>(d);
  // A tensor whose size is a multiple of kAlignment starts at a multiple of it (zeros in between,
  // which stay zero: their gradients are zero). Others start right after their predecessor, so
  // tensors declared one after another (wq, wk, wv) stay adjacent whatever their sizes.
  if (size % kAlignment == 0) {
    const size_t start = (values_.size() + kAlignment - 1) / kAlignment * kAlignment;
    values_.resize(start, T(0));
  }
  entries_.push_back({name, std::move(shape), values_.size(), size, weight_decay});
  values_.resize(values_.size() + size, T(0));
  grads_.resize(values_.size(), T(0));
  return entries_.size() - 1;
}

template <typename T>
typename ParameterSet<T>::Id ParameterSet<T>::find(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == name) return i;
  throw Error(fmt::format("no parameter named '{}'", name));
}

template <typename T>
size_t ParameterSet<T>::parameter_count() const {
  size_t total = 0;
  for (const auto& e : entries_) total += e.size;
  return total;
}

template <typename T>
void ParameterSet<T>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template class ParameterSet<float>;
template class ParameterSet<double>;

}  // namespace pathbench
