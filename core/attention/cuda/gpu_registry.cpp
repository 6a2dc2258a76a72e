// The GPU implementations of the registered encodings (a declaration and a list entry each),
// attached to the registry by name, and construction by name.
#include <fmt/format.h>

#include "core/attention/cuda/gpu_encoding.h"
#include "core/attention/registry.h"
#include "core/error.h"

namespace pathbench {

namespace cuda {
// Defined in the encodings' cuda/<name>_encoding.cpp (path_fox beside path, in path_encoding.cpp).
EncodingFactories nope_cuda_encoding();
EncodingFactories rope_cuda_encoding();
EncodingFactories fox_cuda_encoding();
EncodingFactories sba_cuda_encoding();
EncodingFactories path_cuda_encoding();
EncodingFactories path_fox_cuda_encoding();
}  // namespace cuda

void attach_cuda_encodings(std::vector<EncodingInfo>& registry) {
  const std::pair<const char*, cuda::EncodingFactories> gpu[] = {
      {"nope", cuda::nope_cuda_encoding()},
      {"rope", cuda::rope_cuda_encoding()},
      {"fox", cuda::fox_cuda_encoding()},
      {"sba", cuda::sba_cuda_encoding()},
      {"path", cuda::path_cuda_encoding()},
      {"path_fox", cuda::path_fox_cuda_encoding()},
  };
  for (EncodingInfo& info : registry)
    for (const auto& [name, factories] : gpu)
      if (info.name == name) {
        info.make_cuda_float = factories.make_float;
        info.make_cuda_bf16 = factories.make_bf16;
      }
}

namespace cuda {

template <typename S>
std::unique_ptr<PositionEncoding<S>> make_cuda_encoding(const std::string& name, const json& options,
                                                        const EncodingSetup& setup, const std::string& where) {
  const EncodingInfo& info = find_encoding(name);
  if (!info.make_cuda_float)
    throw Error(fmt::format("{}: encoding '{}' has no CUDA implementation (run it with --device cpu)", where, name));
  EncodingSetup resolved = setup;
  resolved.options = checked_encoding_options(info, options, setup.dims.head_dim, where);
  if constexpr (std::is_same_v<S, float>)
    return info.make_cuda_float(resolved);
  else
    return info.make_cuda_bf16(resolved);
}

template std::unique_ptr<PositionEncoding<float>> make_cuda_encoding<float>(const std::string&, const json&,
                                                                            const EncodingSetup&, const std::string&);
template std::unique_ptr<PositionEncoding<bf16>> make_cuda_encoding<bf16>(const std::string&, const json&,
                                                                          const EncodingSetup&, const std::string&);

}  // namespace cuda

}  // namespace pathbench
