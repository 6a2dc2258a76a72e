// Compute precision of the GPU backend. Master weights, optimizer state, residual stream and
// reductions are fp32 in every mode; the mode picks how matrix products (and attention) compute:
// fp32 (exact fp32 FMAs), tf32 (tensor cores with tf32 inputs, fp32 accumulation) or bf16 (bf16
// operands, fp32 accumulation).
#pragma once
#include <string>
#include <vector>

namespace pathbench {

enum class Precision { fp32, tf32, bf16 };

inline const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"fp32", "tf32", "bf16"};
  return names;
}
inline const char* precision_name(Precision p) { return precision_names()[static_cast<int>(p)].c_str(); }
// Returns false when `name` is not a precision.
inline bool parse_precision(const std::string& name, Precision& out) {
  for (size_t i = 0; i < precision_names().size(); ++i)
    if (precision_names()[i] == name) {
      out = static_cast<Precision>(i);
      return true;
    }
  return false;
}

}  // namespace pathbench
