// The registry of position encodings by name. Adding an encoding is one file with its class, plus
// a declaration and a list entry in registry.cpp; the conformance tests iterate over this list. An
// EncodingRegistration adds one for as long as it lives (a test's own encoding, say).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/encoding.h"

struct __nv_bfloat16;  // cuda_bf16.h's bf16 type; complete only where the CUDA side is built

namespace pathbench {

namespace cuda {
template <typename S>
class PositionEncoding;
struct EncodingSetup;
}  // namespace cuda

struct EncodingInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Returns an empty string when the head dimension is supported, else the reason.
  std::function<std::string(int64_t head_dim)> head_dim_problem;
  std::function<std::unique_ptr<PositionEncoding<float>>(const EncodingSetup<float>&)> make_float;
  std::function<std::unique_ptr<PositionEncoding<double>>(const EncodingSetup<double>&)> make_double;
  // The GPU implementation (gpu_encoding.h) with fp32 or bf16 attention tensors; attached in CUDA
  // builds by attach_cuda_encodings (gpu_registry.cpp), null where an encoding has none.
  std::function<std::unique_ptr<cuda::PositionEncoding<float>>(const cuda::EncodingSetup&)> make_cuda_float;
  std::function<std::unique_ptr<cuda::PositionEncoding<__nv_bfloat16>>(const cuda::EncodingSetup&)> make_cuda_bf16;
};

const std::vector<EncodingInfo>& encoding_registry();

// Registers an encoding for this object's lifetime; throws pathbench::Error when the name is taken.
class EncodingRegistration {
 public:
  explicit EncodingRegistration(EncodingInfo info);
  ~EncodingRegistration();
  EncodingRegistration(const EncodingRegistration&) = delete;
  EncodingRegistration& operator=(const EncodingRegistration&) = delete;

 private:
  std::string name_;
};
// Throws pathbench::Error naming the unknown encoding and listing the known ones.
const EncodingInfo& find_encoding(const std::string& name);
std::vector<std::string> encoding_names();

// The options of `info` resolved from `options` (defaults filled in, each checked) for a head
// dimension the encoding supports; throws pathbench::Error naming `where` (the config location).
json checked_encoding_options(const EncodingInfo& info, const json& options, int64_t head_dim,
                              const std::string& where);

// Builds encoding `name` with `options` (validated here; `where` names the config location).
template <typename T>
std::unique_ptr<PositionEncoding<T>> make_encoding(const std::string& name, const json& options,
                                                   const EncodingSetup<T>& setup, const std::string& where);

}  // namespace pathbench
