// The list of registered position encodings, and lookup/construction by name.
#include "core/attention/registry.h"

#include <fmt/format.h>

#include "core/attention/named_entries.h"
#include "core/error.h"

namespace pathbench {

// A declaration and a list entry per encoding; each is defined in its own file.
EncodingInfo nope_encoding_info();
EncodingInfo rope_encoding_info();
EncodingInfo fox_encoding_info();
EncodingInfo sba_encoding_info();
EncodingInfo path_encoding_info();
EncodingInfo path_fox_encoding_info();
#ifdef PATHBENCH_WITH_CUDA
void attach_cuda_encodings(std::vector<EncodingInfo>& registry);
#endif

namespace {

std::vector<EncodingInfo>& mutable_registry() {
  static std::vector<EncodingInfo> registry = [] {
    std::vector<EncodingInfo> r = {
        nope_encoding_info(),
        rope_encoding_info(),
        fox_encoding_info(),
        sba_encoding_info(),
        path_encoding_info(),
        path_fox_encoding_info(),
    };
#ifdef PATHBENCH_WITH_CUDA
    attach_cuda_encodings(r);
#endif
    return r;
  }();
  return registry;
}

}  // namespace

const std::vector<EncodingInfo>& encoding_registry() { return mutable_registry(); }

EncodingRegistration::EncodingRegistration(EncodingInfo info) : name_(info.name) {
  add_entry(mutable_registry(), std::move(info), "encoding");
}

EncodingRegistration::~EncodingRegistration() { remove_entry(mutable_registry(), name_); }

std::vector<std::string> encoding_names() { return entry_names(encoding_registry()); }

const EncodingInfo& find_encoding(const std::string& name) { return find_entry(encoding_registry(), name, "encoding"); }

json checked_encoding_options(const EncodingInfo& info, const json& options, int64_t head_dim,
                              const std::string& where) {
  const std::string problem = info.head_dim_problem(head_dim);
  if (!problem.empty()) throw Error(fmt::format("{}: head dimension {}: {}", where, head_dim, problem));
  return resolve_options(info.options, options, where);
}

template <typename T>
std::unique_ptr<PositionEncoding<T>> make_encoding(const std::string& name, const json& options,
                                                   const EncodingSetup<T>& setup, const std::string& where) {
  const EncodingInfo& info = find_encoding(name);
  EncodingSetup<T> resolved = setup;
  resolved.options = checked_encoding_options(info, options, setup.dims.head_dim, where);
  if constexpr (std::is_same_v<T, float>)
    return info.make_float(resolved);
  else
    return info.make_double(resolved);
}

template std::unique_ptr<PositionEncoding<float>> make_encoding<float>(const std::string&, const json&,
                                                                       const EncodingSetup<float>&,
                                                                       const std::string&);
template std::unique_ptr<PositionEncoding<double>> make_encoding<double>(const std::string&, const json&,
                                                                         const EncodingSetup<double>&,
                                                                         const std::string&);

}  // namespace pathbench
