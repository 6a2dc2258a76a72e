// The safetensors format (what PyTorch users load with `safetensors.torch.load_file`): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {string: string}}, then the raw little-endian tensor bytes. Serialization to and from memory;
// callers do the file I/O.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pathbench {

struct TensorData {
  std::string dtype;            // "F32", "F64", "I32", "I64", "BF16", …
  std::vector<int64_t> shape;
  std::string bytes;            // raw little-endian values, row-major
};

struct SafetensorsContent {
  std::map<std::string, TensorData> tensors;
  std::map<std::string, std::string> metadata;
};

std::string serialize_safetensors(const SafetensorsContent& content);
// Validates the header (sizes, offsets, dtypes, shapes); errors name `where` and the tensor.
SafetensorsContent parse_safetensors(const std::string& bytes, const std::string& where);

// A tensor of float32 or float64 values (T decides the dtype).
template <typename T>
TensorData make_tensor(const T* data, std::vector<int64_t> shape);
// The values of an F32 or F64 tensor converted to T; errors name `what` on another dtype.
template <typename T>
std::vector<T> tensor_values(const TensorData& tensor, const std::string& what);
int64_t element_count(const std::vector<int64_t>& shape);

}  // namespace pathbench
