// What the softmax and PaTH forward kernels share per block pair of 16 query rows (a warp) × 64 keys:
// the logits' per-element step (the FoX bias and the causal mask, in raw units) and the online
// softmax (FlashAttention's running max and sum) that turns them into probabilities.
#pragma once
#include "core/attention/cuda/tiles.cuh"

namespace pathbench::cuda::tiles {

// The cumulative log gates c_i of the thread's two rows of the warp's 16 from q0 (zero without
// gates or past T).
__device__ __forceinline__ void row_gates(float (&row_gate)[2], const float* gate, int q0, int T) {
  for (int r = 0; r < 2; ++r) {
    const int i = q0 + 16 * warp_id() + acc_row(2 * r);
    row_gate[r] = gate && i < T ? gate[i] : 0.f;
  }
}

// causal_logits for one kind of block pair.
template <bool kDiagonal, bool kGated>
__device__ __forceinline__ void causal_logits_step(float (&x)[8][4], const float (&row_gate)[2], const float* key_gate,
                                                   float ratio) {
  const int w = warp_id();
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int jl = acc_col(n, e), il = 16 * w + acc_row(e);
      if constexpr (kGated) x[n][e] = fmaf(ratio, row_gate[e >> 1] - key_gate[jl], x[n][e]);
      if constexpr (kDiagonal)
        if (jl > il) x[n][e] = -INFINITY;
    }
}

// x holds this warp's Q·Kᵀ (16 rows × 64 keys) on entry and the logits in raw units on return, the
// units OnlineSoftmax::update takes (its `unit` s·log₂e turns them into s·qᵀk + g·(c_i − c_j) in
// log₂ units): with gates (key_gate: the key block's c_j, else null) x + ratio·(c_i − c_j), ratio =
// g / s (s > 0), the gate difference taken first as it is exact for nearby c; on the diagonal block
// (diagonal) keys after the query become −∞. Off the diagonal and without gates x is left as it is.
__device__ __forceinline__ void causal_logits(float (&x)[8][4], bool diagonal, const float (&row_gate)[2],
                                              const float* key_gate, float ratio) {
  if (diagonal) {
    if (key_gate)
      causal_logits_step<true, true>(x, row_gate, key_gate, ratio);
    else
      causal_logits_step<true, false>(x, row_gate, key_gate, ratio);
  } else if (key_gate) {
    causal_logits_step<false, true>(x, row_gate, key_gate, ratio);
  }
}

struct OnlineSoftmax {
  // A row's base may stay up to kSlack (log₂ units) below its running maximum: probabilities then
  // reach 2^kSlack, far inside fp32 and bf16 range, and the output rows are rescaled only when some
  // row of the warp outgrows its base by more (rarely after the first key blocks).
  static constexpr float kSlack = 8.f;
  float m[2] = {-INFINITY, -INFINITY};  // the bases of rows g and g+8 (log₂ units): weights are 2^(x·unit − m)
  float l[2] = {0.f, 0.f};              // this thread's part of the running sum of the weights

  // Turns x (16 × 64 logits in raw units, masked ones −∞; unit > 0 turns them into log₂ units)
  // into unnormalized probabilities and rescales the output rows o where a base moved.
  template <int NTD>
  __device__ __forceinline__ void update(float (&x)[8][4], float (&o)[NTD][4], float unit) {
    float corr[2];
    bool moved = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < 8; ++n) mx = fmaxf(mx, fmaxf(x[n][2 * r], x[n][2 * r + 1]));
      mx = quad_max(mx) * unit;
      const float next = mx > m[r] + kSlack ? mx : m[r];  // −∞ + kSlack is −∞: the first visible key sets it
      const float base = next == -INFINITY ? 0.f : next;  // a fully masked row so far stays at zero
      corr[r] = exp2_ftz(m[r] - base);                    // 1 exactly where the base stays
      moved |= next != m[r];
      m[r] = next;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        x[n][2 * r] = exp2_ftz(fmaf(x[n][2 * r], unit, -base));
        x[n][2 * r + 1] = exp2_ftz(fmaf(x[n][2 * r + 1], unit, -base));
        sum += x[n][2 * r] + x[n][2 * r + 1];
      }
      l[r] = l[r] * corr[r] + sum;
    }
    if (__any_sync(kFullMask, moved)) {
#pragma unroll
      for (int n = 0; n < NTD; ++n) {
        o[n][0] *= corr[0], o[n][1] *= corr[0];
        o[n][2] *= corr[1], o[n][3] *= corr[1];
      }
    }
  }

  // Takes up a softmax over other keys that a pass left with store(): o becomes its normalized rows
  // (fp32, from `partial`, row stride ld) and each row's base its log-sum-exp (natural log, from
  // `partial_lse`) in log₂ units, so that the weights so far sum to one (a row's sum sits in the
  // quad's first thread).
  template <int NTD>
  __device__ __forceinline__ void resume(float (&o)[NTD][4], const float* partial, const float* partial_lse, int ld) {
    load_acc(o, partial, ld);
    const int g = lane_id() / 4;
    m[0] = partial_lse[g] * kLog2e, m[1] = partial_lse[g + 8] * kLog2e;
    l[0] = l[1] = lane_id() % 4 == 0 ? 1.f : 0.f;
  }

  // Normalizes o and returns each row's natural-log log-sum-exp in lse.
  template <int NTD>
  __device__ __forceinline__ void finish(float (&o)[NTD][4], float (&lse)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float total = quad_sum(l[r]);
      const float inv = 1.f / total;
#pragma unroll
      for (int n = 0; n < NTD; ++n) o[n][2 * r] *= inv, o[n][2 * r + 1] *= inv;
      lse[r] = (m[r] + log2f(total)) * kLn2;
    }
  }
  // finish, then stores the warp's 16 rows of o (from `out`, row stride ld) and their log-sum-exp
  // (from `lse_out`) for the rows below `valid`.
  template <int NTD, typename S>
  __device__ __forceinline__ void store(float (&o)[NTD][4], S* out, float* lse_out, int64_t ld, int valid) {
    float row_lse[2];
    finish(o, row_lse);
    store_acc(o, out, ld, valid);
    store_row_pair(lse_out, row_lse, valid);
  }
};

// The softmax of a forward kernel over the warp's 16 query rows (from q0 + 16·warp): the online
// softmax, the rows' output in registers (o: accumulator layout, 8·NTD columns) and their log gates.
// Per key block the kernel turns its Q·Kᵀ into probabilities with weigh() and adds them times V
// into o; store() ends it.
template <int NTD>
struct SoftmaxRows {
  OnlineSoftmax state;
  float o[NTD][4];
  float row_gate[2];  // c_i of the thread's two rows (0 without gates)
  float unit, ratio;  // s·log₂e, g / s

  __device__ __forceinline__ SoftmaxRows(float scale, float gate_scale, const float* gate, int q0, int T)
      : unit(scale * kLog2e), ratio(gate_scale / scale) {
    row_gates(row_gate, gate, q0, T);
    zero(o);
  }
  // x: the warp's Q·Kᵀ against one key block (key_gate: its c_j, else null), the diagonal block
  // masked; on return its unnormalized probabilities, with o rescaled where a row's base moved.
  __device__ __forceinline__ void weigh(float (&x)[8][4], bool diagonal, const float* key_gate) {
    causal_logits(x, diagonal, row_gate, key_gate, ratio);
    state.update(x, o, unit);
  }
  // OnlineSoftmax::resume into o.
  __device__ __forceinline__ void resume(const float* partial, const float* partial_lse, int ld) {
    state.resume(o, partial, partial_lse, ld);
  }
  // OnlineSoftmax::store of o.
  template <typename S>
  __device__ __forceinline__ void store(S* out, float* lse_out, int64_t ld, int valid) {
    state.store(o, out, lse_out, ld, valid);
  }
};

}  // namespace pathbench::cuda::tiles
