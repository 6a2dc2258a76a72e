// PaTH's w/β projection in one kernel each way (projection_fused.h). A block holds a tile of 64
// consecutive output rows of x in shared memory with the bf16 weights, forms [low | pre] =
// x·[W_down; u_β; 0]ᵀ and y = low·W_upᵀ on the tensor cores (bf16 operands, fp32 sums; low rounded
// to bf16 as the staged path stores it), then the convolution, SiLU and normalization per (row,
// head) and β per row. The convolution reads y two rows before each output (and the backward's dy
// dz two rows after one): those halo rows' y come from scalar products of their own, so that a tile
// is the products' 64 rows. The backward's blocks stay resident and walk the tiles in a fixed
// stride, adding the parameter gradients into per-block sums in shared memory (one owner an
// element), which one finish_column_sums adds in a fixed order.
#include "core/attention/path/cuda/projection_fused.h"

#include <algorithm>
#include <stdexcept>

#include "core/attention/cuda/tiles.cuh"
#include "core/attention/path/cuda/projection_math.cuh"
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {

using tiles::BLayout;
using tiles::Frag16;

constexpr int kOutputs = 64;                            // a tile's output rows: the products' rows
constexpr int kHalo = kConvWidth - 1;                   // rows the convolution reads before an output
constexpr int kSpanRows = kOutputs + 2 * kHalo;         // tile rows j: global row first + j, outputs j = 2 … 65
constexpr int kExtraRows = 16;                          // rows after W_down in wext: u_β (H ≤ 16), zeros
constexpr int kRowGroups = kOutputs / 16;               // the products' groups of 16 rows
constexpr int kWarps = 12, kThreads = 32 * kWarps;
constexpr int kMaxHeads = kExtraRows;

struct Dims {
  int64_t rows, length;  // N = B·T, T
  int width, heads, head_dim, channels;  // C, H, D, H·D
};

__host__ __device__ Dims dims_of(const FusedProjectionArgs& a) {
  return {a.batch * a.length, a.length, int(a.width), int(a.heads), int(a.head_dim), int(a.heads * a.head_dim)};
}

// Tile row of halo row h: the forward's two (h = 0, 1: rows 0, 1), the backward's four (and h = 2,
// 3: rows 66, 67).
__device__ __forceinline__ int halo_row(int h) { return h < kHalo ? h : kOutputs + h; }

// Threads a channel in the backward's pass over channels (each takes a share of the output rows):
// enough to occupy the block when the channels are fewer than its threads.
__host__ __device__ int conv_parts(int channels) { return channels >= kThreads ? 1 : kThreads / channels; }

// A block's shared memory (row strides padded as tiles::stride_of). With a null base it only
// counts bytes, so host and device derive one layout.
struct Smem {
  // Output rows i = 0 … 63 (tile row 2 + i) in x, low, pre, dpre, dy and dlp; tile rows j = 0 … 67
  // in y, dz, dw, pos and at; halo rows h (halo_row) in xh and lowh.
  bf16 *x, *xh, *wext, *wup, *low;  // [64, C], [4, C], [R + 16, C] = [W_down; u_β; 0], [H·D, R], [64, R]
  float *lowh, *y, *pre;            // [4, R] halo rows' low (bf16 values), [68, H·D] fp32, [64, H] x·u_βᵀ
  float *conv, *bias;               // [3, H·D] tap-major, [H]
  int* pos;                         // [68] each tile row's position t in its sequence, −1 outside [0, N)
  int64_t* at;                      // [68] its index in [B, H, T] tensors at head 0: b·H·T + t
  float *dz, *dpre, *grads;         // backward: [68, H·D], [64, H], [span] this block's gradient sums
  float* conv_sums;                 // backward: [parts, H·D, 3] the convolution kernel's sums (conv_parts)
  bf16 *dw, *dy, *dlp;              // backward: [68, H·D] dw's rows, [64, H·D], [64, R + 16] = [dlow | dpre | 0]
  int ldx, ldr, ldy, lddy, lddlp;   // strides of x and wext, of wup and low, of y and dz, of dy, of dlp
  size_t bytes;

  __host__ __device__ Smem(unsigned char* base, int rank, const Dims& d, int64_t span, bool backward) {
    tiles::SmemCarver c{base};
    ldx = tiles::stride_of<bf16>(d.width);
    ldr = tiles::stride_of<bf16>(rank);
    ldy = d.channels + 8;  // fp32 rows 8 banks apart: a half warp's pair stores of 4 rows hit 32 banks
    lddy = tiles::stride_of<bf16>(d.channels);
    lddlp = tiles::stride_of<bf16>(rank + kExtraRows);
    x = c.take<bf16>(size_t(kOutputs) * ldx);
    xh = c.take<bf16>(size_t(2 * kHalo) * ldx);
    wext = c.take<bf16>(size_t(rank + kExtraRows) * ldx);
    wup = c.take<bf16>(size_t(d.channels) * ldr);
    low = c.take<bf16>(size_t(kOutputs) * ldr);
    lowh = c.take<float>(size_t(2 * kHalo) * rank);
    y = c.take<float>(size_t(kSpanRows) * ldy);
    pre = c.take<float>(size_t(kOutputs) * d.heads);
    conv = c.take<float>(size_t(d.channels) * kConvWidth);
    bias = c.take<float>(d.heads);
    pos = c.take<int>(kSpanRows);
    at = c.take<int64_t>(kSpanRows);
    dz = dpre = grads = conv_sums = nullptr;
    dw = dy = dlp = nullptr;
    if (backward) {
      dz = c.take<float>(size_t(kSpanRows) * ldy);
      dpre = c.take<float>(size_t(kOutputs) * d.heads);
      grads = c.take<float>(size_t(span));
      conv_sums = c.take<float>(size_t(conv_parts(d.channels)) * d.channels * kConvWidth);
      dw = c.take<bf16>(size_t(kSpanRows) * lddy);
      dy = c.take<bf16>(size_t(kOutputs) * lddy);
      dlp = c.take<bf16>(size_t(kOutputs) * lddlp);
    }
    bytes = c.offset;
  }
};

__device__ __forceinline__ int warp_index() { return int(threadIdx.x >> 5); }
__device__ __forceinline__ int lane_index() { return int(threadIdx.x & 31); }

// Starts copying a [rows, cols] bf16 matrix (cols a multiple of 8) into shared rows of stride ld.
__device__ void copy_matrix_async(bf16* dst, int ld, const bf16* src, int rows, int cols) {
  const int per_row = cols / 8;
  for (int i = int(threadIdx.x); i < rows * per_row; i += kThreads) {
    const int r = i / per_row, c = (i % per_row) * 8;
    tiles::cp_async16(dst + r * ld + c, src + int64_t(r) * cols + c, 16);
  }
}

// Starts loading wext, wup (cp.async), zeroes wext's rows past u_β, and copies conv and bias.
__device__ void load_weights(const Smem& s, const FusedProjectionArgs& a, int rank, const Dims& d) {
  copy_matrix_async(s.wext, s.ldx, a.w_down, rank, d.width);
  copy_matrix_async(s.wext + rank * s.ldx, s.ldx, a.beta_weight, d.heads, d.width);
  copy_matrix_async(s.wup, s.ldr, a.w_up, d.channels, rank);
  for (int i = int(threadIdx.x); i < (kExtraRows - d.heads) * d.width; i += kThreads)
    s.wext[(rank + d.heads + i / d.width) * s.ldx + i % d.width] = bf16(0.0f);
  for (int i = int(threadIdx.x); i < d.channels * kConvWidth; i += kThreads)
    s.conv[(i % kConvWidth) * d.channels + i / kConvWidth] = a.conv[i];
  for (int i = int(threadIdx.x); i < d.heads; i += kThreads) s.bias[i] = a.beta_bias[i];
}

// x's output rows into s.x and its first `halo` halo rows into s.xh (rows outside [0, N) zero):
// cp.async from x16 (wait for it separately), else converted from x with plain loads.
__device__ void load_x_rows(const Smem& s, const FusedProjectionArgs& a, int64_t first, int halo, const Dims& d) {
  const int per_row = d.width / 8;
  for (int i = int(threadIdx.x); i < (kOutputs + halo) * per_row; i += kThreads) {
    const int q = i / per_row, c = (i % per_row) * 8;
    const int64_t r = first + (q < kOutputs ? kHalo + q : halo_row(q - kOutputs));
    const bool inside = r >= 0 && r < d.rows;
    bf16* dst = (q < kOutputs ? s.x + q * s.ldx : s.xh + (q - kOutputs) * s.ldx) + c;
    if (a.x16) {
      tiles::cp_async16(dst, a.x16 + (inside ? r : 0) * d.width + c, inside ? 16 : 0);
      continue;
    }
    uint4 packed = make_uint4(0, 0, 0, 0);
    if (inside) {
      const float4 lo = *reinterpret_cast<const float4*>(a.x + r * d.width + c);
      const float4 hi = *reinterpret_cast<const float4*>(a.x + r * d.width + c + 4);
      packed = make_uint4(tiles::pack_bf16(lo.x, lo.y), tiles::pack_bf16(lo.z, lo.w), tiles::pack_bf16(hi.x, hi.y),
                          tiles::pack_bf16(hi.z, hi.w));
    }
    *reinterpret_cast<uint4*>(dst) = packed;
  }
}

// [low | pre] = x · wextᵀ for the tile's output rows, a warp per group of 16 rows (warps 0–3): low
// (bf16) into s.low, pre (fp32) into s.pre.
template <int R>
__device__ void down_products(const Smem& s, const Dims& d) {
  constexpr int NT = (R + kExtraRows) / 8;
  const int warp = warp_index();
  const int row0 = 16 * warp;
  float acc[NT][4];
  tiles::zero(acc);
  for (int k0 = 0; k0 < d.width; k0 += 16) {
    Frag16<bf16> f;
    tiles::load_a(f, s.x + row0 * s.ldx, s.ldx, k0);
    tiles::mma16<BLayout::NK>(acc, f, s.wext, s.ldx, k0);
  }
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = row0 + tiles::acc_row(2 * half), col = tiles::acc_col(n, 0);
      if (n < R / 8) {
        tiles::store_pair(s.low + row * s.ldr + col, acc[n][2 * half], acc[n][2 * half + 1]);
        continue;
      }
      for (int e = 0; e < 2; ++e)
        if (col + e - R < d.heads) s.pre[row * d.heads + col + e - R] = acc[n][2 * half + e];
    }
}

// low of the first `halo` halo rows, rounded to bf16 as the products' low is (warps 4–7 while 0–3
// take the products): a thread a (row, rank index), its sum over the channels of x in order.
template <int R>
__device__ void halo_low(const Smem& s, const Dims& d, int halo) {
  for (int item = int(threadIdx.x) - 32 * kRowGroups; item < halo * R; item += kThreads - 32 * kRowGroups) {
    const int h = item / R, k = item % R;
    const __nv_bfloat162 *x = reinterpret_cast<const __nv_bfloat162*>(s.xh + h * s.ldx),
                         *w = reinterpret_cast<const __nv_bfloat162*>(s.wext + k * s.ldx);
    float sum = 0.0f;
    for (int c = 0; c < d.width / 2; ++c) {
      const float2 xv = __bfloat1622float2(x[c]), wv = __bfloat1622float2(w[c]);
      sum = fmaf(xv.y, wv.y, fmaf(xv.x, wv.x, sum));
    }
    s.lowh[item] = __bfloat162float(__float2bfloat16_rn(sum));
  }
}

// y of the first `halo` halo rows from their low: a thread a (row, channel).
template <int R>
__device__ void halo_y(const Smem& s, const Dims& d, int halo) {
  for (int item = int(threadIdx.x); item < halo * d.channels; item += kThreads) {
    const int h = item / d.channels, ch = item % d.channels;
    const float* low = s.lowh + h * R;
    const bf16* w = s.wup + ch * s.ldr;
    float sum = 0.0f;
#pragma unroll 8
    for (int k = 0; k < R; ++k) sum = fmaf(low[k], __bfloat162float(w[k]), sum);
    s.y[halo_row(h) * s.ldy + ch] = sum;
  }
}

// y = low · W_upᵀ (fp32) into s.y's output rows: items of 16 rows × 16 channels.
template <int R>
__device__ void up_products(const Smem& s, const Dims& d) {
  constexpr int KT = R / 16;
  const int items = kRowGroups * (d.channels / 16);
  for (int item = warp_index(); item < items; item += kWarps) {
    const int row0 = 16 * (item % kRowGroups), n0 = 16 * (item / kRowGroups);
    Frag16<bf16> a[KT];
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) tiles::load_a(a[kt], s.low + row0 * s.ldr, s.ldr, 16 * kt);
    float acc[2][4];
    tiles::zero(acc);
    tiles::mma_rs<BLayout::NK>(acc, a, s.wup + n0 * s.ldr, s.ldr);
    tiles::store_acc(acc, s.y + (kHalo + row0) * s.ldy + n0, s.ldy);
  }
}

// s.pos and s.at of the tile's rows first … first + 67 (read after the next barrier).
__device__ void row_places(const Smem& s, int64_t first, const Dims& d) {
  for (int j = int(threadIdx.x); j < kSpanRows; j += kThreads) {
    const int64_t r = first + j;
    const bool inside = r >= 0 && r < d.rows;
    s.pos[j] = inside ? int(r % d.length) : -1;
    s.at[j] = inside ? r / d.length * d.heads * d.length + r % d.length : 0;
  }
}

// x's rows of the tile at `first` and of its first `halo` halo rows into shared memory (with
// whatever copies are in flight), then low, pre and y from them; the whole block calls it, and all
// of it is visible to all on return.
template <int R>
__device__ void tile_products(const Smem& s, const FusedProjectionArgs& a, int64_t first, int halo, const Dims& d) {
  load_x_rows(s, a, first, halo, d);
  tiles::cp_async_commit();
  tiles::cp_async_wait<0>();
  __syncthreads();
  if (warp_index() < kRowGroups)
    down_products<R>(s, d);
  else
    halo_low<R>(s, d, halo);
  __syncthreads();
  up_products<R>(s, d);
  halo_y<R>(s, d, halo);
  __syncthreads();
}

// Eight consecutive fp32 or bf16 values of shared or global memory (16-byte aligned).
__device__ __forceinline__ void load8(float (&v)[8], const float* p) {
  const float4 lo = *reinterpret_cast<const float4*>(p), hi = *reinterpret_cast<const float4*>(p + 4);
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
__device__ __forceinline__ void load8(float (&v)[8], const bf16* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void store8(float* p, const float (&v)[8]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  *reinterpret_cast<float4*>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void store8(bf16* p, const float (&v)[8]) {
  *reinterpret_cast<uint4*>(p) = make_uint4(tiles::pack_bf16(v[0], v[1]), tiles::pack_bf16(v[2], v[3]),
                                            tiles::pack_bf16(v[4], v[5]), tiles::pack_bf16(v[6], v[7]));
}

// The (row, head) items of the w passes: D / 8 lanes an item, eight consecutive channels a lane,
// so that a warp takes 256 / D items at once and each lane's w or dw is one 16-byte vector.
template <int D>
struct HeadLanes {
  static constexpr int kLanes = D / 8, kItemsPerWarp = 32 / kLanes;
  int slot = lane_index() / kLanes;       // this lane's item among the warp's
  int c0 = 8 * (lane_index() % kLanes);  // its first channel in the head
  // Sum over an item's lanes (aligned groups: the xor shuffles stay inside them); all lanes call it.
  __device__ static float sum(float v) {
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
    return v;
  }
  // Calls f(j, h, valid) for the items (tile row kHalo + i, head h) of `rows` rows: every lane of
  // the warp calls it the same number of times (the shuffles need them all); the lanes past the
  // last item get its indices again with valid false.
  template <class F>
  __device__ void for_each(int rows, int heads, F&& f) const {
    const int count = rows * heads;
    for (int base = warp_index() * kItemsPerWarp; base < count; base += kWarps * kItemsPerWarp) {
      const int item = min(base + slot, count - 1);
      f(kHalo + item / heads, item % heads, base + slot < count);
    }
  }
};

// z, σ(z) and a = silu(z) = z·σ(z) of a lane's eight channels at tile row j, head h (position t),
// and the head's ‖a‖ and 1 / max(‖a‖, ε).
template <int D>
struct HeadRow {
  float z[8], s[8], a[8];
  float norm, inv;

  __device__ HeadRow(const Smem& sm, int channels, int j, int h, int t, int c0) {
    const int ch0 = h * D + c0;
    float y[kConvWidth][8], taps[kConvWidth][8];
#pragma unroll
    for (int k = 0; k < kConvWidth; ++k) {
      load8(y[k], sm.y + (j - kHalo + k) * sm.ldy + ch0);
      load8(taps[k], sm.conv + k * channels + ch0);
    }
    float ss = 0.0f;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      z[c] = causal_conv(t, [&](int k) { return taps[k][c]; }, [&](int k) { return y[k][c]; });
      s[c] = sigmoid(z[c]);
      a[c] = z[c] * s[c];
      ss += a[c] * a[c];
    }
    norm = sqrtf(HeadLanes<D>::sum(ss));
    inv = 1.0f / fmaxf(norm, kNormEps);
  }
};

// w for the forward's output rows.
template <int D>
__device__ void w_rows(const Smem& s, const Dims& d, bf16* w) {
  const HeadLanes<D> lanes;
  lanes.for_each(kOutputs, d.heads, [&](int j, int h, bool valid) {
    const int t = s.pos[j];
    const HeadRow<D> v(s, d.channels, j, h, t, lanes.c0);
    float out[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) out[c] = v.a[c] * v.inv;
    if (valid && t >= 0) store8(w + (s.at[j] + h * d.length) * D + lanes.c0, out);
  });
}

// β for the forward's output rows.
__device__ void beta_rows(const Smem& s, const Dims& d, float* beta, float cap, bool clip) {
  for (int item = int(threadIdx.x); item < kOutputs * d.heads; item += kThreads) {
    const int j = kHalo + item / d.heads, h = item % d.heads;
    if (s.pos[j] < 0) break;  // rows past N: the rest are too
    beta[s.at[j] + h * d.length] = beta_value(s.pre[item] + s.bias[h], cap, clip);
  }
}

template <int R, int D>
__global__ void __launch_bounds__(kThreads)
    fused_projection_forward_kernel(FusedProjectionArgs a, bf16* w, float* beta, float cap, bool clip) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Dims d = dims_of(a);
  const Smem s(smem, R, d, 0, false);
  const int64_t first = int64_t(blockIdx.x) * kOutputs - kHalo;
  load_weights(s, a, R, d);
  row_places(s, first, d);
  tile_products<R>(s, a, first, kHalo, d);
  w_rows<D>(s, d, w);
  beta_rows(s, d, beta, cap, clip);
}

// Starts copying dw's rows for tile rows 2 … 67 into s.dw (head-major [H·D] rows, as dz; rows past
// N zero).
template <int D>
__device__ void load_dw_rows(const Smem& s, const bf16* dw, const Dims& d) {
  const int per_row = d.channels / 8;
  for (int i = int(threadIdx.x); i < (kSpanRows - kHalo) * per_row; i += kThreads) {
    const int j = kHalo + i / per_row, c = (i % per_row) * 8;
    const bool inside = s.pos[j] >= 0;
    const bf16* src = dw + (inside ? (s.at[j] + c / D * d.length) * D + c % D : 0);
    tiles::cp_async16(s.dw + j * s.lddy + c, src, inside ? 16 : 0);
  }
}

// dz (fp32) for tile rows 2 … 67 from dw through the normalization and SiLU (rows past N have
// dw = 0 and so dz = 0).
template <int D>
__device__ void w_pre_gradients(const Smem& s, const Dims& d) {
  const HeadLanes<D> lanes;
  lanes.for_each(kSpanRows - kHalo, d.heads, [&](int j, int h, bool valid) {
    const HeadRow<D> v(s, d.channels, j, h, s.pos[j], lanes.c0);
    const int at = h * D + lanes.c0;
    float g[8], proj = 0.0f;
    load8(g, s.dw + j * s.lddy + at);
#pragma unroll
    for (int c = 0; c < 8; ++c) proj += v.a[c] * v.inv * g[c];
    proj = HeadLanes<D>::sum(proj);
    float dz[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) dz[c] = w_pre_gradient(v.z[c], v.s[c], g[c], v.norm, v.inv, proj);
    if (valid) store8(s.dz + j * s.ldy + at, dz);
  });
}

// Whether output row i (tile row 2 + i) lies inside [0, N).
__device__ __forceinline__ bool inside_rows(const Smem& s, int i) { return s.pos[kHalo + i] >= 0; }

// dpre for every output row (0 past N) into s.dpre and column R + h of s.dlp.
template <int R>
__device__ void beta_pre_gradients(const Smem& s, const Dims& d, const float* dbeta, float cap, bool clip) {
  for (int item = int(threadIdx.x); item < kOutputs * d.heads; item += kThreads) {
    const int i = item / d.heads, h = item % d.heads;
    float v = 0.0f;
    if (inside_rows(s, i))
      v = beta_pre_gradient(s.pre[item] + s.bias[h], dbeta[s.at[kHalo + i] + h * d.length], cap, clip);
    s.dpre[item] = v;
    s.dlp[i * s.lddlp + R + h] = __float2bfloat16_rn(v);
  }
}

// conv_parts threads a channel, each over its share of the output rows: dy (bf16) into s.dy, and
// the convolution kernel's sums dconv[ch, k] += Σ dz[r]·y[r − 2 + k] over the sources inside the
// sequence, into the thread's own row of s.conv_sums. dz two rows ahead and y two rows behind stay
// in registers from row to row, so a row reads one new value of each.
__device__ void conv_gradients(const Smem& s, const Dims& d) {
  const int parts = conv_parts(d.channels);
  for (int slot = int(threadIdx.x); slot < parts * d.channels; slot += kThreads) {
    const int ch = slot % d.channels, part = slot / d.channels;
    const int begin = kHalo + part * kOutputs / parts, end = kHalo + (part + 1) * kOutputs / parts;
    const float *dz = s.dz + ch, *y = s.y + ch;  // column ch, row stride s.ldy
    float taps[kConvWidth], sums[kConvWidth] = {};
    ConvWindow win;  // at tile row j: ahead[i] = dz at row j + i, behind[k] = y at row j − 2 + k
#pragma unroll
    for (int k = 0; k < kConvWidth; ++k) taps[k] = s.conv[k * d.channels + ch];
#pragma unroll
    for (int k = 0; k + 1 < kConvWidth; ++k) {
      win.ahead[k] = dz[(begin + k) * s.ldy];
      win.behind[k] = y[(begin - kHalo + k) * s.ldy];
    }
    for (int j = begin; j < end; ++j) {
      win.ahead[kConvWidth - 1] = dz[(j + kHalo) * s.ldy];
      win.behind[kConvWidth - 1] = y[j * s.ldy];
      const int t = s.pos[j];
      s.dy[(j - kHalo) * s.lddy + ch] = __float2bfloat16_rn(t >= 0 ? win.step(t, d.length, taps, sums) : 0.0f);
      win.slide();
    }
    float* own = s.conv_sums + (part * d.channels + ch) * kConvWidth;
#pragma unroll
    for (int k = 0; k < kConvWidth; ++k) own[k] += sums[k];
  }
}

// dlow = dy · W_up (bf16) into columns 0 … R−1 of s.dlp, a warp per group of 16 rows.
template <int R>
__device__ void low_gradients(const Smem& s, const Dims& d) {
  const int warp = warp_index();
  if (warp >= kRowGroups) return;
  const int row0 = 16 * warp;
  float acc[R / 8][4];
  tiles::zero(acc);
  for (int k0 = 0; k0 < d.channels; k0 += 16) {
    Frag16<bf16> f;
    tiles::load_a(f, s.dy + row0 * s.lddy, s.lddy, k0);
    tiles::mma16<BLayout::KN>(acc, f, s.wup, s.ldr, k0);
  }
  tiles::store_acc(acc, s.dlp + row0 * s.lddlp, s.lddlp);
}

// Asks L2 for dx's output rows of the tile, which input_gradient reads and writes at its end.
__device__ void prefetch_dx_rows(const float* dx, int64_t first, const Dims& d) {
  const int lines = (d.width + 31) / 32;  // 128-byte lines a row
  for (int i = int(threadIdx.x); i < kOutputs * lines; i += kThreads) {
    const int64_t r = first + kHalo + i / lines;
    if (r < d.rows) asm volatile("prefetch.global.L2 [%0];" ::"l"(dx + r * d.width + 32 * (i % lines)));
  }
}

// dx[r] += [dlow | dpre] · wext for the output rows: items of 16 rows × 16 columns of x.
template <int R>
__device__ void input_gradient(const Smem& s, const Dims& d, int64_t first, float* dx) {
  constexpr int KT = (R + kExtraRows) / 16;
  const int items = kRowGroups * (d.width / 16);
  for (int item = warp_index(); item < items; item += kWarps) {
    const int row0 = 16 * (item % kRowGroups), n0 = 16 * (item / kRowGroups);
    Frag16<bf16> a[KT];
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) tiles::load_a(a[kt], s.dlp + row0 * s.lddlp, s.lddlp, 16 * kt);
    float2* rows[2][2] = {};  // this thread's dx pairs (row half, tile n), null outside the outputs
    float2 old[2][2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = row0 + tiles::acc_row(2 * half);
      if (!inside_rows(s, i)) continue;
#pragma unroll
      for (int n = 0; n < 2; ++n) {
        rows[half][n] = reinterpret_cast<float2*>(dx + (first + kHalo + i) * d.width + n0 + tiles::acc_col(n, 0));
        old[half][n] = *rows[half][n];  // issued before the product, which hides its latency
      }
    }
    float acc[2][4];
    tiles::zero(acc);
    tiles::mma_rs<BLayout::KN>(acc, a, s.wext + n0, s.ldx);
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int n = 0; n < 2; ++n)
        if (rows[half][n])
          *rows[half][n] = make_float2(old[half][n].x + acc[n][2 * half], old[half][n].y + acc[n][2 * half + 1]);
  }
}

// sums[row, col] += acc for a 16-row accumulator whose rows start at sums (row stride ld).
template <int NT>
__device__ __forceinline__ void add_acc(float* sums, int ld, const float (&acc)[NT][4]) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) sums[tiles::acc_row(e) * ld + tiles::acc_col(n, e)] += acc[n][e];
}

// The block's sums of dW_up += dyᵀ·low (items of 16 channels) and [dW_down; du_β] += [dlow | dpre]ᵀ·x
// (items of 16 rows of wext × 16 columns).
template <int R>
__device__ void weight_gradients(const Smem& s, const Dims& d, const ProjectionGradLayout& g) {
  for (int m0 = 16 * warp_index(); m0 < d.channels; m0 += 16 * kWarps) {
    float acc[R / 8][4];
    tiles::zero(acc);
    tiles::mma_ss<BLayout::KN, true, R / 8, kOutputs / 16>(acc, s.dy + m0, s.lddy, s.low, s.ldr);
    add_acc(s.grads + g.up + m0 * R, R, acc);
  }
  constexpr int MT = (R + kExtraRows) / 16;
  const int items = MT * (d.width / 16);
  for (int item = warp_index(); item < items; item += kWarps) {
    const int m0 = 16 * (item % MT), n0 = 16 * (item / MT);
    float acc[2][4];
    tiles::zero(acc);
    tiles::mma_ss<BLayout::KN, true, 2, kOutputs / 16>(acc, s.dlp + m0, s.lddlp, s.x + n0, s.ldx);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + tiles::acc_row(2 * half);
      float* row = m < R ? s.grads + m * d.width : m - R < d.heads ? s.grads + g.beta_weight + (m - R) * d.width : nullptr;
      if (!row) continue;
#pragma unroll
      for (int n = 0; n < 2; ++n) {
        row[n0 + tiles::acc_col(n, 0)] += acc[n][2 * half];
        row[n0 + tiles::acc_col(n, 1)] += acc[n][2 * half + 1];
      }
    }
  }
}

template <int R, int D>
__global__ void __launch_bounds__(kThreads)
    fused_projection_backward_kernel(FusedProjectionArgs a, const bf16* dw, const float* dbeta, float* dx,
                                     ProjectionGradLayout g, float* partial, float cap, bool clip) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Dims d = dims_of(a);
  const Smem s(smem, R, d, g.span, true);
  load_weights(s, a, R, d);
  // zeros that no tile overwrites: the sums and dlp's columns past dpre
  for (int i = int(threadIdx.x); i < g.span; i += kThreads) s.grads[i] = 0.0f;
  for (int i = int(threadIdx.x); i < conv_parts(d.channels) * d.channels * kConvWidth; i += kThreads)
    s.conv_sums[i] = 0.0f;
  for (int i = int(threadIdx.x); i < kOutputs * (kExtraRows - d.heads); i += kThreads)
    s.dlp[(i / (kExtraRows - d.heads)) * s.lddlp + R + d.heads + i % (kExtraRows - d.heads)] = bf16(0.0f);
  __syncthreads();  // the zeros before any thread reads them (a block may get no tile)
  const int64_t tiles_total = (d.rows + kOutputs - 1) / kOutputs;
  for (int64_t tile = blockIdx.x; tile < tiles_total; tile += gridDim.x) {
    const int64_t first = tile * kOutputs - kHalo;
    prefetch_dx_rows(dx, first, d);
    row_places(s, first, d);
    __syncthreads();
    load_dw_rows<D>(s, dw, d);
    tile_products<R>(s, a, first, 2 * kHalo, d);
    w_pre_gradients<D>(s, d);
    beta_pre_gradients<R>(s, d, dbeta, cap, clip);
    __syncthreads();
    conv_gradients(s, d);
    if (threadIdx.x < d.heads) {  // the bias's sum over the output rows, in row order
      float sum = 0.0f;
      for (int i = 0; i < kOutputs; ++i) sum += s.dpre[i * d.heads + threadIdx.x];
      s.grads[g.beta_bias + threadIdx.x] += sum;
    }
    __syncthreads();
    low_gradients<R>(s, d);
    __syncthreads();
    input_gradient<R>(s, d, first, dx);
    weight_gradients<R>(s, d, g);
    __syncthreads();
  }
  const int parts = conv_parts(d.channels);
  for (int i = int(threadIdx.x); i < d.channels * kConvWidth; i += kThreads) {  // the parts' sums in order
    float total = 0.0f;
    for (int p = 0; p < parts; ++p) total += s.conv_sums[p * d.channels * kConvWidth + i];
    s.grads[g.conv + i] = total;
  }
  __syncthreads();
  for (int i = int(threadIdx.x); i < g.span; i += kThreads) partial[int64_t(blockIdx.x) * g.span + i] = s.grads[i];
}

// Calls f.template operator()<R, D>() for the rank and head dim (checked by fused_projection_supported).
template <class F>
void with_rank_and_head_dim(int64_t rank, int64_t head_dim, F&& f) {
  auto by_head_dim = [&]<int R>() {
    switch (head_dim) {
      case 16: return f.template operator()<R, 16>();
      case 32: return f.template operator()<R, 32>();
      case 64: return f.template operator()<R, 64>();
      case 128: return f.template operator()<R, 128>();
      default: throw std::logic_error("fused PaTH projection: head dim " + std::to_string(head_dim));
    }
  };
  switch (rank) {
    case 16: return by_head_dim.template operator()<16>();
    case 32: return by_head_dim.template operator()<32>();
    case 48: return by_head_dim.template operator()<48>();
    case 64: return by_head_dim.template operator()<64>();
    default: throw std::logic_error("fused PaTH projection: rank " + std::to_string(rank) + " not 16, 32, 48 or 64");
  }
}

size_t smem_bytes(const FusedProjectionArgs& a, const ProjectionGradLayout& g, bool backward) {
  return Smem(nullptr, int(a.rank), dims_of(a), g.span, backward).bytes;
}

float beta_cap(const FusedProjectionArgs& a) { return float(2.0 - a.beta_clip_eps); }

}  // namespace

ProjectionGradLayout projection_grad_layout(const ParameterSet<float>& params, const std::string& prefix) {
  const char* names[] = {"path_w_down", "path_w_up", "path_w_conv", "path_beta_weight", "path_beta_bias"};
  int64_t offsets[5], end = 0;
  const size_t base = params.entry(params.find(prefix + names[0])).offset;
  for (int i = 0; i < 5; ++i) {
    const ParameterEntry& e = params.entry(params.find(prefix + names[i]));
    offsets[i] = int64_t(e.offset) - int64_t(base);
    if (offsets[i] < end || offsets[i] - end >= int64_t(ParameterSet<float>::kAlignment)) return {};
    end = offsets[i] + int64_t(e.size);
  }
  return {offsets[1], offsets[2], offsets[3], offsets[4], end};
}

bool fused_projection_supported(int64_t width, int64_t rank, int64_t heads, int64_t head_dim,
                                const ProjectionGradLayout& grads) {
  const bool shape = width > 0 && width % 16 == 0 && (rank == 16 || rank == 32 || rank == 48 || rank == 64) &&
                     heads >= 1 && heads <= kMaxHeads &&
                     (head_dim == 16 || head_dim == 32 || head_dim == 64 || head_dim == 128);
  if (!shape || grads.span == 0) return false;
  FusedProjectionArgs a;
  a.width = width, a.rank = rank, a.heads = heads, a.head_dim = head_dim;
  int device = 0, limit = 0;
  check_cuda(cudaGetDevice(&device), "fused_projection_supported");
  check_cuda(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "fused_projection_supported");
  return smem_bytes(a, grads, true) <= size_t(limit);
}

void fused_projection_forward(const FusedProjectionArgs& a, bf16* w, float* beta, cudaStream_t stream) {
  const int64_t rows = a.batch * a.length;
  const unsigned blocks = unsigned((rows + kOutputs - 1) / kOutputs);
  const size_t smem = smem_bytes(a, {}, false);
  with_rank_and_head_dim(a.rank, a.head_dim, [&]<int R, int D>() {
    launch_kernel_threads(fused_projection_forward_kernel<R, D>, dim3(blocks), kThreads, smem, stream,
                          "fused_projection_forward_kernel", a, w, beta, beta_cap(a), a.beta_clip_eps > 0);
  });
}

int fused_projection_backward_blocks(const FusedProjectionArgs& a, const ProjectionGradLayout& grads) {
  const int64_t tiles_total = (a.batch * a.length + kOutputs - 1) / kOutputs;
  int resident = 1;
  with_rank_and_head_dim(a.rank, a.head_dim, [&]<int R, int D>() {
    resident = resident_blocks(fused_projection_backward_kernel<R, D>, kThreads, smem_bytes(a, grads, true),
                               "fused_projection_backward_kernel");
  });
  return int(std::max<int64_t>(1, std::min<int64_t>(resident, tiles_total)));
}

void fused_projection_backward(const FusedProjectionArgs& a, const bf16* dw, const float* dbeta, float* dx,
                               const ProjectionGradLayout& grads, float* grad_base, float* partial, int blocks,
                               cudaStream_t stream) {
  const size_t smem = smem_bytes(a, grads, true);
  with_rank_and_head_dim(a.rank, a.head_dim, [&]<int R, int D>() {
    launch_kernel_threads(fused_projection_backward_kernel<R, D>, dim3(unsigned(blocks)), kThreads, smem, stream,
                          "fused_projection_backward_kernel", a, dw, dbeta, dx, grads, partial, beta_cap(a),
                          a.beta_clip_eps > 0);
  });
  finish_column_sums(partial, blocks, grads.span, grad_base, stream);
}

}  // namespace pathbench::cuda
