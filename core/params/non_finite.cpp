// describe_non_finite_gradients: counts the non-finite gradient entries per tensor.
#include "core/params/non_finite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <vector>

namespace pathbench {

size_t non_finite_gradients(const ParameterSet<float>& params, const ParameterEntry& e) {
  const std::vector<float>& grads = params.grads();
  size_t bad = 0;
  for (size_t j = e.offset; j < e.offset + e.size; ++j) bad += std::isfinite(grads[j]) ? 0 : 1;
  return bad;
}

std::string describe_non_finite_gradients(const ParameterSet<float>& params, size_t listed) {
  const std::vector<ParameterEntry>& entries = params.entries();
  std::vector<std::string> named;  // from the output backwards
  size_t tensors = 0;
  for (size_t i = entries.size(); i-- > 0;) {
    const ParameterEntry& e = entries[i];
    const size_t bad = non_finite_gradients(params, e);
    if (bad == 0) continue;
    ++tensors;
    if (named.size() < listed) named.push_back(fmt::format("{} ({} of {})", e.name, bad, e.size));
  }
  if (tensors == 0) return "";
  return fmt::format("non-finite gradients in {} of {} tensors; nearest the output: {}{}", tensors, entries.size(),
                     fmt::join(named, ", "), tensors > named.size() ? ", …" : "");
}

}  // namespace pathbench
