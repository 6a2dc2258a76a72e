// AdamW with decoupled weight decay (applied only to tensors marked for decay), global-norm
// gradient clipping, and the warmup + cosine learning-rate schedule.
#pragma once
#include <cstdint>
#include <vector>

#include "core/params/parameters.h"

namespace pathbench {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

// The step-dependent factors of update t (counted from 1): lr / (1 − β1^t), 1 / sqrt(1 − β2^t) and
// lr · weight_decay; shared by the CPU and GPU updates.
struct AdamWTerms {
  double step_size, inv_sqrt_bc2, decay;
};
AdamWTerms adamw_terms(const AdamWConfig& config, double lr, int64_t t);

template <typename T>
class AdamW {
 public:
  AdamW(const ParameterSet<T>& params, AdamWConfig config);
  // One update with learning rate lr from params.grads().
  void step(ParameterSet<T>& params, double lr);
  int64_t steps() const { return t_; }
  std::vector<T>& first_moment() { return m_; }
  std::vector<T>& second_moment() { return v_; }
  const std::vector<T>& first_moment() const { return m_; }
  const std::vector<T>& second_moment() const { return v_; }
  void set_steps(int64_t t) { t_ = t; }

 private:
  AdamWConfig config_;
  std::vector<T> m_, v_;     // [P] moment estimates
  std::vector<uint8_t> decay_;  // [P] 1 where weight decay applies
  int64_t t_ = 0;
};

// Scales gradients so their global L2 norm is at most max_norm (no-op when max_norm <= 0).
// Returns the norm before clipping.
template <typename T>
double clip_grad_norm(std::vector<T>& grads, double max_norm);

// Linear warmup from 0 to peak over warmup steps, then cosine decay to min_ratio·peak at total.
struct LrSchedule {
  double peak = 1e-3;
  int64_t warmup = 0;
  int64_t total = 1;
  double min_ratio = 0.1;
  double at(int64_t step) const;  // step counts from 0
};

}  // namespace pathbench
