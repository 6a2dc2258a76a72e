// ParameterSet: every trainable tensor of a model, named, in one flat value buffer and one flat
// gradient buffer (so the optimizer, clipping and checkpoints see one array; the gaps that align
// tensors hold zeros). Layers keep ids and look up pointers when they run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pathbench {

struct ParameterEntry {
  std::string name;              // e.g. "layers.0.attn.wq"
  std::vector<int64_t> shape;    // row-major
  size_t offset = 0;             // into the flat buffers
  size_t size = 0;               // product of shape
  bool weight_decay = true;      // AdamW decays it (false for norms, gates, biases)
};

template <typename T>
class ParameterSet {
 public:
  using Id = size_t;
  // Tensors whose size is a multiple of this start at a multiple of it in the flat buffers, so
  // that their bf16 copies on the GPU are 16-byte aligned (cuBLAS picks slower kernels otherwise).
  static constexpr size_t kAlignment = 8;

  // Declares a tensor; its values start at zero. Names must be unique.
  Id add(const std::string& name, std::vector<int64_t> shape, bool weight_decay = true);

  T* value(Id id) { return values_.data() + entries_[id].offset; }
  const T* value(Id id) const { return values_.data() + entries_[id].offset; }
  T* grad(Id id) { return grads_.data() + entries_[id].offset; }
  const ParameterEntry& entry(Id id) const { return entries_[id]; }
  // Looks a tensor up by name; throws pathbench::Error when absent.
  Id find(const std::string& name) const;

  const std::vector<ParameterEntry>& entries() const { return entries_; }
  std::vector<T>& values() { return values_; }
  const std::vector<T>& values() const { return values_; }
  std::vector<T>& grads() { return grads_; }
  const std::vector<T>& grads() const { return grads_; }
  // Elements of the flat buffers, alignment gaps included.
  size_t count() const { return values_.size(); }
  // Trainable values: the sum of the tensors' sizes.
  size_t parameter_count() const;
  void zero_grad();

 private:
  std::vector<ParameterEntry> entries_;
  std::vector<T> values_;
  std::vector<T> grads_;
};

}  // namespace pathbench
