// The list of attention ops, and lookup by name.
#include "core/attention/op_registry.h"

#include "core/attention/named_entries.h"

namespace pathbench {

// A declaration and a list entry per op; each is defined beside its kernels.
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

std::vector<std::string> attention_op_names() { return entry_names(attention_ops()); }

const AttentionOpInfo& find_attention_op(const std::string& name) { return find_entry(attention_ops(), name, "op"); }

AttentionOpRegistration::AttentionOpRegistration(AttentionOpInfo op) : name_(op.name) {
  add_entry(mutable_ops(), std::move(op), "op");
}

AttentionOpRegistration::~AttentionOpRegistration() { remove_entry(mutable_ops(), name_); }

}  // namespace pathbench
