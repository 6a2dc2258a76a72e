// Device building blocks shared by the fused attention kernels (softmax, stick-breaking, PaTH):
// asynchronous global→shared tile loads, and warp-level matrix products whose accumulators use the
// register layout of the tensor cores' m16n8k16 instruction. For bf16 storage the products run on
// the tensor cores (ldmatrix + mma.sync, fp32 accumulation); for fp32 storage the same fragments
// are computed with fp32 FMAs (no tf32), so one kernel source serves both precisions.
//
// Fragment layout (g = lane / 4, t = lane % 4): an accumulator tile of 16 rows × 8·NT columns is
// float acc[NT][4] with acc[n][0..1] = rows g, columns 8n+2t+{0,1} and acc[n][2..3] = row g+8.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <utility>

#include "core/attention/cuda/kernel_common.h"
#include "core/attention/gpu_head_dims.h"

namespace pathbench::cuda::tiles {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;                 // warps per block in the attention kernels (launch_kernel_threads for others)
constexpr int kThreads = 32 * kWarps;
constexpr int kChunk = 64;                // rows of a query or key block (PaTH's chunk size C)
constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;  // logits in log₂ units: 2^(x·log₂e) = eˣ
constexpr float kLn2 = 0.6931471805599453f;

// Row stride (elements) of a shared tile with `cols` columns: padded by 16 bytes so that the 8 rows
// read by one ldmatrix (or by the 8 row groups of a warp) fall in different banks.
template <typename S>
__host__ __device__ constexpr int stride_of(int cols) {
  return cols + int(16 / sizeof(S));
}
// Elements of a rows × cols shared tile.
template <typename S>
__host__ __device__ constexpr int tile_elems(int rows, int cols) {
  return rows * stride_of<S>(cols);
}

// Carves 16-byte-aligned pieces of a kernel's dynamic shared memory; with a null base it only
// counts bytes, so host and device derive one layout from the same code.
struct SmemCarver {
  unsigned char* base;
  size_t offset = 0;
  template <typename T>
  __host__ __device__ constexpr T* take(size_t count) {
    offset = (offset + 15) / 16 * 16;
    T* p = base ? reinterpret_cast<T*>(base + offset) : nullptr;
    offset += count * sizeof(T);
    return p;
  }
};

// The hardware's approximate 2ˣ, log₂ x and 1/x (relative error ≈ 2⁻²²) with subnormal inputs and
// results flushed to zero. exp2f and the __log2f, __fdividef intrinsics use the same approximations
// but, without flushing, wrap a range test and rescaling multiplies around each to keep subnormals,
// which no attention weight needs (a weight below 2⁻¹²⁶ is as good as zero).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float log2_ftz(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ int lane_id() { return int(threadIdx.x & 31); }
__device__ __forceinline__ int warp_id() { return int(threadIdx.x >> 5); }

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
template <typename S>
__device__ __forceinline__ S from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16_rn(x); }

// Stores two adjacent values (columns c, c+1) of one row.
__device__ __forceinline__ void store_pair(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
__device__ __forceinline__ void store_pair(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ float2 load_pair(const float* p) { return *reinterpret_cast<const float2*>(p); }
__device__ __forceinline__ float2 load_pair(const bf16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}

// ---- global → shared copies ---------------------------------------------------------------------

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  const unsigned addr = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// The row order of a tile as stored: row r holds global row r (a row map: tile row → global row).
struct SameRow {
  __device__ constexpr int operator()(int r) const { return r; }
};

// Starts copying rows 0..ROWS−1 (each COLS elements of S, global row stride ld) into a shared tile
// whose 16 bytes at tile row r, element column c start at dest(r, c); tile row r comes from global
// row row_of(r), and rows at or past `valid` are filled with zeros. The whole block (NTHREADS
// threads) calls it; commit/wait separately. Thread t copies granules t, t + NTHREADS, …: unrolled
// over a count known when compiling and in unsigned arithmetic, so what depends on the thread alone
// is computed once and the divisions are shifts.
template <typename S, int ROWS, int COLS, int NTHREADS, typename RowMap, typename Dest>
__device__ __forceinline__ void copy_rows_async(Dest dest, const S* gmem, int64_t ld, int valid, RowMap row_of) {
  constexpr int kPer = int(16 / sizeof(S));
  constexpr unsigned kGranules = COLS / kPer, kTotal = ROWS * kGranules;
  const int last = valid > 0 ? valid - 1 : 0;
#pragma unroll 4
  for (unsigned k = 0; k < (kTotal + NTHREADS - 1) / NTHREADS; ++k) {
    const unsigned i = threadIdx.x + k * NTHREADS;
    if (kTotal % NTHREADS != 0 && i >= kTotal) break;
    const int r = int(i / kGranules), c = int(i % kGranules) * kPer, g = row_of(r);
    const S* src = gmem + int64_t(g < valid ? g : last) * ld + c;
    cp_async16(dest(r, c), src, g < valid ? 16 : 0);
  }
}

// copy_rows_async into a padded shared tile (row stride stride_of<S>(COLS)).
template <typename S, int ROWS, int COLS, int NTHREADS = kThreads, typename RowMap = SameRow>
__device__ __forceinline__ void load_tile_async(S* smem, const S* gmem, int64_t ld, int valid, RowMap row_of = {}) {
  constexpr int kStride = stride_of<S>(COLS);
  copy_rows_async<S, ROWS, COLS, NTHREADS>([smem](int r, int c) { return smem + r * kStride + c; }, gmem, ld,
                                           valid, row_of);
}

// Starts copying `n` per-row fp32 values (rows at or past `valid` get zeros; gmem may be null when
// valid is 0) with 4-byte cp.async, so they arrive with the tiles of the same commit group.
template <int NTHREADS = kThreads>
__device__ __forceinline__ void load_row_values_async(float* smem, const float* gmem, int n, int valid) {
  for (int i = int(threadIdx.x); i < n; i += NTHREADS) {
    if (!gmem || valid <= 0) {
      smem[i] = 0.f;
      continue;
    }
    const unsigned addr = unsigned(__cvta_generic_to_shared(smem + i));
    const float* src = gmem + (i < valid ? i : valid - 1);  // not read when the size is 0
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(addr), "l"(src), "r"(i < valid ? 4 : 0));
  }
}

// Copies `n` per-row fp32 values (rows past `valid` get `fill`) with plain loads.
template <int NTHREADS = kThreads>
__device__ __forceinline__ void load_row_values(float* smem, const float* gmem, int n, int valid, float fill) {
  for (int i = int(threadIdx.x); i < n; i += NTHREADS) smem[i] = i < valid ? gmem[i] : fill;
}

// ---- A operands: one 16 × 16 slice --------------------------------------------------------------

template <typename S>
struct Frag16;
// bf16: the four .b32 registers of mma.m16n8k16's A operand.
template <>
struct Frag16<bf16> {
  uint32_t r[4];
};
// fp32: the 8 values this thread owns in accumulator layout: (g,2t) (g,2t+1) (g+8,2t) (g+8,2t+1),
// then the same four at column +8.
template <>
struct Frag16<float> {
  float r[8];
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  const unsigned addr = unsigned(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  const unsigned addr = unsigned(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// A(m, k) = a[m·lda + k0 + k], m in the warp's 16 rows (a points at the first of them).
__device__ __forceinline__ void load_a(Frag16<bf16>& f, const bf16* a, int lda, int k0) {
  const int l = lane_id();
  ldmatrix_x4(f.r, a + (l % 16) * lda + k0 + (l / 16) * 8);
}
__device__ __forceinline__ void load_a(Frag16<float>& f, const float* a, int lda, int k0) {
  const int g = lane_id() / 4, t = lane_id() % 4;
  const float* p = a + g * lda + k0 + 2 * t;
  float2 v0 = load_pair(p), v1 = load_pair(p + 8 * lda), v2 = load_pair(p + 8), v3 = load_pair(p + 8 * lda + 8);
  f.r[0] = v0.x, f.r[1] = v0.y, f.r[2] = v1.x, f.r[3] = v1.y;
  f.r[4] = v2.x, f.r[5] = v2.y, f.r[6] = v3.x, f.r[7] = v3.y;
}
// Transposed source: A(m, k) = at[(k0 + k)·ld + m], m in 0..15 (at points at column m = 0).
__device__ __forceinline__ void load_a_trans(Frag16<bf16>& f, const bf16* at, int ld, int k0) {
  const int l = lane_id(), i = l / 8, r = l % 8;
  ldmatrix_x4_trans(f.r, at + (k0 + r + (i / 2) * 8) * ld + (i % 2) * 8);
}
__device__ __forceinline__ void load_a_trans(Frag16<float>& f, const float* at, int ld, int k0) {
  const int g = lane_id() / 4, t = lane_id() % 4;
  const float* p = at + (k0 + 2 * t) * ld + g;
  f.r[0] = p[0], f.r[1] = p[ld], f.r[2] = p[8], f.r[3] = p[ld + 8];
  p += 8 * ld;
  f.r[4] = p[0], f.r[5] = p[ld], f.r[6] = p[8], f.r[7] = p[ld + 8];
}
// From an fp32 accumulator: columns 16·kt … 16·kt+15 of acc (its tiles 2kt and 2kt+1), times mul.
template <int NT>
__device__ __forceinline__ void frag_from_acc(Frag16<bf16>& f, const float (&acc)[NT][4], int kt, float mul = 1.f) {
  f.r[0] = pack_bf16(mul * acc[2 * kt][0], mul * acc[2 * kt][1]);
  f.r[1] = pack_bf16(mul * acc[2 * kt][2], mul * acc[2 * kt][3]);
  f.r[2] = pack_bf16(mul * acc[2 * kt + 1][0], mul * acc[2 * kt + 1][1]);
  f.r[3] = pack_bf16(mul * acc[2 * kt + 1][2], mul * acc[2 * kt + 1][3]);
}
template <int NT>
__device__ __forceinline__ void frag_from_acc(Frag16<float>& f, const float (&acc)[NT][4], int kt, float mul = 1.f) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    f.r[e] = mul * acc[2 * kt][e];
    f.r[4 + e] = mul * acc[2 * kt + 1][e];
  }
}

// ---- products: acc (16 × 8·NT) += A (16 × 16) · B (16 × 8·NT) -----------------------------------

// How B sits in shared memory: NK = stored b[n·ld + k] (e.g. keys for Q·Kᵀ), KN = stored b[k·ld + n].
enum class BLayout { NK, KN };

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// B rows k0 … k0+15 (KN) or columns k0 … k0+15 (NK); columns/rows n = 0 … 8·NT−1 of b.
template <BLayout L, int NT>
__device__ __forceinline__ void mma16(float (&acc)[NT][4], const Frag16<bf16>& a, const bf16* b, int ldb, int k0) {
  static_assert(NT % 2 == 0, "B tiles are loaded in pairs of 8 columns");
  const int l = lane_id(), i = l / 8, r = l % 8;
#pragma unroll
  for (int np = 0; np < NT / 2; ++np) {
    uint32_t bb[4];
    if constexpr (L == BLayout::NK)
      ldmatrix_x4(bb, b + (np * 16 + (i / 2) * 8 + r) * ldb + k0 + (i % 2) * 8);
    else
      ldmatrix_x4_trans(bb, b + (k0 + (i % 2) * 8 + r) * ldb + np * 16 + (i / 2) * 8);
    mma_bf16(acc[2 * np], a.r, bb[0], bb[1]);
    mma_bf16(acc[2 * np + 1], a.r, bb[2], bb[3]);
  }
}
template <BLayout L, int NT>
__device__ __forceinline__ void mma16(float (&acc)[NT][4], const Frag16<float>& a, const float* b, int ldb, int k0) {
  const int l = lane_id(), t = l % 4, quad = l & ~3;
  // Column pair p (columns 2p, 2p+1 of the slice) of rows g and g+8 lives in thread p % 4 of the quad.
#pragma unroll 1
  for (int p = 0; p < 8; ++p) {
    const int src = quad | (p % 4);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float ag = __shfl_sync(kFullMask, p < 4 ? a.r[e] : a.r[4 + e], src);
      const float ag8 = __shfl_sync(kFullMask, p < 4 ? a.r[2 + e] : a.r[6 + e], src);
      const int k = k0 + 2 * (p % 4) + 8 * (p / 4) + e;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        float b0, b1;
        if constexpr (L == BLayout::NK) {
          b0 = b[(8 * n + 2 * t) * ldb + k];
          b1 = b[(8 * n + 2 * t + 1) * ldb + k];
        } else {
          const float2 v = load_pair(b + k * ldb + 8 * n + 2 * t);
          b0 = v.x, b1 = v.y;
        }
        acc[n][0] = fmaf(ag, b0, acc[n][0]);
        acc[n][1] = fmaf(ag, b1, acc[n][1]);
        acc[n][2] = fmaf(ag8, b0, acc[n][2]);
        acc[n][3] = fmaf(ag8, b1, acc[n][3]);
      }
    }
  }
}

// acc += A · B with A (16 × 16·KT) held in registers.
template <BLayout L, int NT, int KT, typename S>
__device__ __forceinline__ void mma_rs(float (&acc)[NT][4], const Frag16<S> (&a)[KT], const S* b, int ldb) {
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) mma16<L>(acc, a[kt], b, ldb, 16 * kt);
}
// acc += A · B with A (16 × 16·KT) read from shared memory: row-major (a[m·lda + k]) or, with
// TransA, stored transposed (a[k·lda + m]).
template <BLayout L, bool TransA, int NT, int KT, typename S>
__device__ __forceinline__ void mma_ss(float (&acc)[NT][4], const S* a, int lda, const S* b, int ldb) {
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    Frag16<S> f;
    if constexpr (TransA)
      load_a_trans(f, a, lda, 16 * kt);
    else
      load_a(f, a, lda, 16 * kt);
    mma16<L>(acc, f, b, ldb, 16 * kt);
  }
}
// acc (16 × 8·NT) += X (16 × 8·NK2) · B with X an fp32 accumulator in registers.
template <BLayout L, int NT, int NK2, typename S>
__device__ __forceinline__ void mma_acc(float (&acc)[NT][4], const float (&x)[NK2][4], const S* b, int ldb,
                                        float mul = 1.f) {
#pragma unroll
  for (int kt = 0; kt < NK2 / 2; ++kt) {
    Frag16<S> f;
    frag_from_acc(f, x, kt, mul);
    mma16<L>(acc, f, b, ldb, 16 * kt);
  }
}

// ---- accumulator helpers --------------------------------------------------------------------------

template <int NT>
__device__ __forceinline__ void zero(float (&acc)[NT][4]) {
#pragma unroll
  for (int n = 0; n < NT; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
}
// Loads rows 0..15 of a shared tile (row stride ld) into accumulator layout.
template <int NT, typename S>
__device__ __forceinline__ void load_acc(float (&acc)[NT][4], const S* src, int ld) {
  const int g = lane_id() / 4, t = lane_id() % 4;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    const float2 a = load_pair(src + g * ld + 8 * n + 2 * t), b = load_pair(src + (g + 8) * ld + 8 * n + 2 * t);
    acc[n][0] = a.x, acc[n][1] = a.y, acc[n][2] = b.x, acc[n][3] = b.y;
  }
}
// Stores the 16 rows to a tile (shared or global, row stride ld), rounding to S; rows at or past
// `valid` are skipped.
template <int NT, typename S>
__device__ __forceinline__ void store_acc(const float (&acc)[NT][4], S* dst, int64_t ld, int valid = 16,
                                          float mul = 1.f) {
  const int g = lane_id() / 4, t = lane_id() % 4;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    if (g < valid) store_pair(dst + g * ld + 8 * n + 2 * t, mul * acc[n][0], mul * acc[n][1]);
    if (g + 8 < valid) store_pair(dst + (g + 8) * ld + 8 * n + 2 * t, mul * acc[n][2], mul * acc[n][3]);
  }
}
// atomic_add_acc's layout: neighbouring threads swap halves, so that for each 8-column tile n a
// thread holds four contiguous values of one row — even t: row g, columns 2t … 2t+3; odd t: row g+8,
// columns 2t−2 … 2t+1 (col below). quad(acc, n, mul) returns mul times them; every lane calls it
// (shuffles).
struct RowQuads {
  bool odd;
  int row, col;  // this thread's row of the warp's 16 and its first column in each tile
  __device__ __forceinline__ RowQuads() {
    const int g = lane_id() / 4, t = lane_id() % 4;
    odd = t & 1, row = odd ? g + 8 : g, col = 2 * (t & ~1);
  }
  template <int NT>
  __device__ __forceinline__ float4 quad(const float (&acc)[NT][4], int n, float mul) const {
    const float r0 = __shfl_xor_sync(kFullMask, odd ? acc[n][0] : acc[n][2], 1);
    const float r1 = __shfl_xor_sync(kFullMask, odd ? acc[n][1] : acc[n][3], 1);
    return odd ? make_float4(mul * r0, mul * r1, mul * acc[n][2], mul * acc[n][3])
               : make_float4(mul * acc[n][0], mul * acc[n][1], mul * r0, mul * r1);
  }
};
// Adds four contiguous values at `at` atomically: into fp32 one vector atomic; into bf16 (each add
// rounded to bf16) one 8-byte vector reduction on sm_90, two bf16-pair atomics elsewhere.
__device__ __forceinline__ void atomic_add_quad(float* at, float4 v) { atomicAdd(reinterpret_cast<float4*>(at), v); }
__device__ __forceinline__ void atomic_add_quad(bf16* at, float4 v) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.noftz.v2.bf16x2 [%0], {%1, %2};" ::"l"(at),
               "r"(*reinterpret_cast<const unsigned*>(&lo)), "r"(*reinterpret_cast<const unsigned*>(&hi))
               : "memory");
#else
  atomicAdd(reinterpret_cast<__nv_bfloat162*>(at), lo);
  atomicAdd(reinterpret_cast<__nv_bfloat162*>(at + 2), hi);
#endif
}
// Atomically adds mul·acc into a global tile of fp32 or bf16 A (row stride ld, a multiple of 4; rows
// aligned to four values), the warp's row r (0..15) into row row_of(r); rows at or past `valid`
// skipped: one add of four contiguous values a thread (RowQuads; half the atomic operations of
// pairs).
template <int NT, typename A, typename RowMap = SameRow>
__device__ __forceinline__ void atomic_add_acc(const float (&acc)[NT][4], A* dst, int64_t ld, int valid = 16,
                                               float mul = 1.f, RowMap row_of = {}) {
  const RowQuads q;
  const int row = row_of(q.row);
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    const float4 v = q.quad(acc, n, mul);
    if (row < valid) atomic_add_quad(dst + row * ld + 8 * n + q.col, v);
  }
}

// Sum and max over the 4 threads of a quad (the threads sharing a row).
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(kFullMask, x, 1);
  return x + __shfl_xor_sync(kFullMask, x, 2);
}
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(kFullMask, x, 1));
  return fmaxf(x, __shfl_xor_sync(kFullMask, x, 2));
}

// Writes the two row values of this thread's quad (rows g and g+8 of the warp's 16) to out, for
// rows below `valid`; one thread per quad writes.
__device__ __forceinline__ void store_row_pair(float* out, const float (&v)[2], int valid) {
  const int g = lane_id() / 4;
  if (lane_id() % 4 == 0) {
    if (g < valid) out[g] = v[0];
    if (g + 8 < valid) out[g + 8] = v[1];
  }
}

// The query-major kernels' block (softmax forward, stick-breaking): query block blockIdx.x counted
// from the last (longest rows first) of slice blockIdx.y, and this warp's first row.
struct QueryBlock {
  int T, qb, q0, row0;
  int64_t base;  // the slice's first row in [BH, T, ·] tensors
  bool masked_rows;  // the last block: rows past T
  __device__ explicit QueryBlock(int64_t length)
      : T(int(length)),
        qb((T + kChunk - 1) / kChunk - 1 - int(blockIdx.x)),
        q0(qb * kChunk),
        row0(q0 + 16 * warp_id()),
        base(int64_t(blockIdx.y) * T),
        masked_rows(q0 + kChunk > T) {}
};

// Column index (within the 8·NT columns) of accumulator element e of tile n, and its row (0..15).
__device__ __forceinline__ int acc_col(int n, int e) { return 8 * n + 2 * (lane_id() % 4) + (e & 1); }
__device__ __forceinline__ int acc_row(int e) { return lane_id() / 4 + 8 * (e >> 1); }

}  // namespace pathbench::cuda::tiles

namespace pathbench::cuda {

// Calls f.template operator()<D>() for the runtime head dimension, one of kGpuHeadDims (checked by
// check_attention_shape before; any other value throws).
template <typename F>
void with_head_dim(int64_t head_dim, F&& f) {
  const bool dispatched = [&]<size_t... I>(std::index_sequence<I...>) {
    return ((head_dim == kGpuHeadDims[I] && (f.template operator()<kGpuHeadDims[I]>(), true)) || ...);
  }(std::make_index_sequence<kGpuHeadDims.size()>());
  if (!dispatched) check_attention_shape(1, 1, head_dim, "with_head_dim");
}

// Launches kernel<<<grid, threads, smem, stream>>>(args...), raising its dynamic shared-memory limit
// first when it needs more than the default 48 KB, and checks the launch.
template <typename... KArgs, typename... Args>
void launch_kernel_threads(void (*kernel)(KArgs...), dim3 grid, int threads, size_t smem, cudaStream_t stream,
                           const char* name, Args&&... args) {
  if (smem > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), name);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  kernel<<<grid, threads, smem, stream>>>(std::forward<Args>(args)...);
  check_launch(name);
}
// The same with the usual 4 warps per block.
template <typename... KArgs, typename... Args>
void launch_kernel(void (*kernel)(KArgs...), dim3 grid, size_t smem, cudaStream_t stream, const char* name,
                   Args&&... args) {
  launch_kernel_threads(kernel, grid, tiles::kThreads, smem, stream, name, std::forward<Args>(args)...);
}

// How many blocks of `kernel` (with `smem` bytes of dynamic shared memory) the device keeps resident
// at once: blocks per multiprocessor × multiprocessors, at least 1.
template <typename... KArgs>
int resident_blocks(void (*kernel)(KArgs...), int threads, size_t smem, const char* name) {
  if (smem > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), name);
  int device = 0, sms = 0, per_sm = 0;
  check_cuda(cudaGetDevice(&device), name);
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), name);
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem), name);
  return per_sm * sms > 0 ? per_sm * sms : 1;
}

}  // namespace pathbench::cuda
