// The list of attention ops, and lookup by name.
#include "core/attention/op_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

// One line per op; each is defined beside its kernels.
AttentionOpInfo nope_attention_op();
AttentionOpInfo rope_attention_op();
AttentionOpInfo fox_attention_op();
AttentionOpInfo sba_attention_op();
AttentionOpInfo path_attention_op();
AttentionOpInfo path_fox_attention_op();
#ifdef PATHBENCH_WITH_CUDA
void attach_gpu_ops(std::vector<AttentionOpInfo>& ops);
#endif

namespace {

std::vector<AttentionOpInfo>& mutable_ops() {
  static std::vector<AttentionOpInfo> ops = [] {
    std::vector<AttentionOpInfo> list = {nope_attention_op(), rope_attention_op(),  fox_attention_op(),
                                         sba_attention_op(),  path_attention_op(), path_fox_attention_op()};
#ifdef PATHBENCH_WITH_CUDA
    attach_gpu_ops(list);
#endif
    return list;
  }();
  return ops;
}

}  // namespace

const std::vector<AttentionOpInfo>& attention_ops() { return mutable_ops(); }

std::vector<std::string> attention_op_names() {
  std::vector<std::string> names;
  for (const auto& op : attention_ops()) names.push_back(op.name);
  return names;
}

const AttentionOpInfo& find_attention_op(const std::string& name) {
  for (const auto& op : attention_ops())
    if (op.name == name) return op;
  throw Error(fmt::format("unknown op '{}' (known: {})", name, fmt::join(attention_op_names(), ", ")));
}

AttentionOpRegistration::AttentionOpRegistration(AttentionOpInfo op) : name_(op.name) {
  for (const auto& known : attention_ops())
    if (known.name == name_) throw Error(fmt::format("an attention op named '{}' is already registered", name_));
  mutable_ops().push_back(std::move(op));
}

AttentionOpRegistration::~AttentionOpRegistration() {
  auto& ops = mutable_ops();
  ops.erase(std::remove_if(ops.begin(), ops.end(), [&](const AttentionOpInfo& o) { return o.name == name_; }),
            ops.end());
}

}  // namespace pathbench
