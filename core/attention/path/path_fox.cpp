// The `path_fox` encoding: PaTH's logits plus the FoX forget-gate bias g·(c_i − c_j), built from the
// PaTH encoding (path_encoding.h) with its gate on.
#include "core/attention/path/path_encoding.h"
#include "core/attention/registry_entry.h"

namespace pathbench {

namespace {

template <typename T>
class PathFoxEncoding : public PathEncoding<T> {
 public:
  explicit PathFoxEncoding(const EncodingSetup<T>& setup) : PathEncoding<T>(setup, true) {}
};

}  // namespace

EncodingInfo path_fox_encoding_info() {
  return make_encoding_info<PathFoxEncoding>("path_fox", "PaTH plus the FoX forget-gate logit bias",
                                             path_encoding_options(true), [](int64_t) { return std::string(); });
}

}  // namespace pathbench
