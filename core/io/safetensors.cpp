// safetensors serialization and strict parsing.
#include "core/io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace pathbench {

namespace {

int64_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},
                                                       {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
                                                       {"U8", 1},  {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? -1 : it->second;
}

// shape's element count times `element_bytes`, or nullopt when that product overflows 64 bits.
std::optional<uint64_t> checked_byte_size(const std::vector<int64_t>& shape, int64_t element_bytes) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t bytes = uint64_t(element_bytes);
  for (int64_t d : shape) {
    if (bytes > std::numeric_limits<uint64_t>::max() / uint64_t(d)) return std::nullopt;
    bytes *= uint64_t(d);
  }
  return bytes;
}

}  // namespace

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string serialize_safetensors(const SafetensorsContent& content) {
  nlohmann::json header = nlohmann::json::object();
  if (!content.metadata.empty()) header["__metadata__"] = content.metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : content.tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  out += text;
  for (const auto& [name, t] : content.tensors) out += t.bytes;
  return out;
}

SafetensorsContent parse_safetensors(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 8) throw Error(fmt::format("{}: not a safetensors file (shorter than 8 bytes)", where));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  if (n > bytes.size() - 8) throw Error(fmt::format("{}: not a safetensors file (header length {} exceeds file)", where, n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: not a safetensors file (header is not JSON)", where));
  }
  if (!header.is_object()) throw Error(fmt::format("{}: safetensors header is not a JSON object", where));
  const uint64_t data_size = bytes.size() - 8 - n;
  SafetensorsContent out;
  struct Extent {
    uint64_t begin, end;
    std::string name;
    bool operator<(const Extent& o) const { return begin < o.begin; }
  };
  std::vector<Extent> extents;  // the data each non-empty tensor occupies
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(fmt::format("{}: __metadata__ is not an object", where));
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw Error(fmt::format("{}: metadata '{}' is not a string", where, k));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& why) { return Error(fmt::format("{}: tensor '{}': {}", where, name, why)); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw bad("entry needs dtype, shape and data_offsets");
    TensorData t;
    if (!entry["dtype"].is_string() || dtype_size(entry["dtype"]) < 0) throw bad("unknown dtype " + entry["dtype"].dump());
    t.dtype = entry["dtype"];
    if (!entry["shape"].is_array()) throw bad("shape is not a list");
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) throw bad("shape has a bad dimension " + d.dump());
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("data_offsets is not a pair of offsets");
    const uint64_t begin = off[0], end = off[1];
    if (begin > end || end > data_size) throw bad("data_offsets point outside the file");
    const std::optional<uint64_t> needed = checked_byte_size(t.shape, dtype_size(t.dtype));
    if (!needed || *needed > data_size)
      throw bad(fmt::format("shape {} is larger than the file's data", entry["shape"].dump()));
    if (end - begin != *needed)
      throw bad(fmt::format("holds {} bytes, but shape and dtype need {}", end - begin, *needed));
    if (begin < end) extents.push_back({begin, end, name});
    t.bytes = bytes.substr(8 + n + begin, end - begin);
    out.tensors[name] = std::move(t);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].begin < extents[i - 1].end)
      throw Error(fmt::format("{}: tensors '{}' and '{}' overlap in the file's data", where, extents[i - 1].name,
                              extents[i].name));
  return out;
}

template <typename T>
TensorData make_tensor(const T* data, std::vector<int64_t> shape) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  TensorData t;
  t.dtype = std::is_same_v<T, float> ? "F32" : "F64";
  t.shape = std::move(shape);
  t.bytes.assign(reinterpret_cast<const char*>(data), sizeof(T) * element_count(t.shape));
  return t;
}

template <typename T>
std::vector<T> tensor_values(const TensorData& tensor, const std::string& what) {
  const int64_t n = element_count(tensor.shape);
  std::vector<T> out(n);
  if (tensor.dtype == "F32") {
    std::vector<float> tmp(n);
    std::memcpy(tmp.data(), tensor.bytes.data(), sizeof(float) * n);
    std::copy(tmp.begin(), tmp.end(), out.begin());
  } else if (tensor.dtype == "F64") {
    std::vector<double> tmp(n);
    std::memcpy(tmp.data(), tensor.bytes.data(), sizeof(double) * n);
    std::copy(tmp.begin(), tmp.end(), out.begin());
  } else {
    throw Error(fmt::format("{}: dtype {} is not supported (use F32 or F64)", what, tensor.dtype));
  }
  return out;
}

template TensorData make_tensor<float>(const float*, std::vector<int64_t>);
template TensorData make_tensor<double>(const double*, std::vector<int64_t>);
template std::vector<float> tensor_values<float>(const TensorData&, const std::string&);
template std::vector<double> tensor_values<double>(const TensorData&, const std::string&);

}  // namespace pathbench
