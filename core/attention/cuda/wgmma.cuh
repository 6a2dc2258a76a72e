// Hopper (sm_90a) warpgroup matrix products for the attention kernels: shared tiles in the 128-byte
// swizzled layout the tensor cores read without passing through registers, their matrix
// descriptors, and wgmma.mma_async m64n64k16 (bf16 operands, fp32 accumulators) with A from shared
// memory or from registers. The warpgroup is a block's 4 warps; warp w holds accumulator rows
// 16w … 16w+15 in the register layout of tiles.cuh (acc[n][e]: rows g, g+8, columns 8n+2t, +1), so
// per-element code written for mma.sync serves both.
//
// Swizzled tile: a [rows, cols] bf16 tile (cols a multiple of 64) is cols/64 panels, one after the
// other, each rows × 64 columns with 128-byte rows; the 16-byte granule c of row r sits at granule
// c ^ (r % 8) of its row. Tiles start on 1,024-byte boundaries (the swizzle's period). Used as an
// operand, such a tile is either K-major (rows are M or N, the panels' columns K) or MN-major (rows
// are K, columns M or N).
//
// Every function here compiles to nothing useful without sm_90a (the wgmma instructions exist
// only there): kernels that call them are guarded by PATHBENCH_SM90A_DEVICE and launched only
// where hopper_kernels() (core/cuda/hopper.h) says so.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "core/attention/cuda/tiles.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PATHBENCH_SM90A_DEVICE 1
#else
#define PATHBENCH_SM90A_DEVICE 0
#endif

namespace pathbench::cuda::wgmma {

using tiles::bf16;

// Whether the kernels for storage S at head dimension D have a Hopper form: bf16 at D = 64 or 128
// (the layouts and register budgets here assume one or two 64-column panels).
template <typename S, int D>
inline constexpr bool kHasHopperForm = std::is_same_v<S, bf16> && (D == 64 || D == 128);

constexpr int kPanelCols = 64;        // bf16 columns of a panel: one 128-byte row
constexpr int kRowBytes = 128;
constexpr int kSwizzleBytes = 1024;   // the swizzle's period: 8 rows

// The first 1,024-byte boundary at or after p in shared memory (dynamic shared memory is only
// 16-byte aligned); a kernel reserves kSwizzleBytes more than its tiles need.
__device__ __forceinline__ unsigned char* align_to_swizzle(unsigned char* p) {
  const uint32_t addr = uint32_t(__cvta_generic_to_shared(p));
  return p + ((kSwizzleBytes - addr % kSwizzleBytes) % kSwizzleBytes);
}
// Bytes of a [rows, cols] swizzled tile, and the byte offset of its element (r, c).
__host__ __device__ constexpr int tile_bytes(int rows, int cols) { return rows * cols * 2; }
__host__ __device__ constexpr int swizzled_offset(int rows, int r, int c) {
  return (c / kPanelCols) * rows * kRowBytes + r * kRowBytes + ((((c % kPanelCols) / 8) ^ (r % 8)) * 16) +
         (c % 8) * 2;
}

// The swizzled tiles of a forward over one query block, from the aligned start of shared memory:
// Q [64, D], then two stages of K and V [64, D]; whatever else a kernel keeps starts at end().
template <int D>
struct ForwardTiles {
  static constexpr int tile = tile_bytes(64, D);
  static constexpr size_t bytes = 5 * size_t(tile);
  unsigned char* base;
  __device__ bf16* q() const { return reinterpret_cast<bf16*>(base); }
  __device__ bf16* k(int stage) const { return reinterpret_cast<bf16*>(base + (1 + stage) * tile); }
  __device__ bf16* v(int stage) const { return reinterpret_cast<bf16*>(base + (3 + stage) * tile); }
  __device__ unsigned char* end() const { return base + bytes; }
};

// Starts copying rows 0..ROWS−1 (COLS elements each, global row stride ld) into a swizzled tile, tile
// row r from global row row_of(r); rows at or past `valid` are zeros (tiles::copy_rows_async). The
// whole block (NTHREADS threads) calls it; commit/wait as for tiles.cuh's loads.
template <int ROWS, int COLS, int NTHREADS = tiles::kThreads, typename RowMap = tiles::SameRow>
__device__ __forceinline__ void load_tile_async(bf16* smem, const bf16* gmem, int64_t ld, int valid,
                                                RowMap row_of = {}) {
  static_assert(COLS % kPanelCols == 0, "swizzled tiles are whole 64-column panels");
  unsigned char* base = reinterpret_cast<unsigned char*>(smem);
  tiles::copy_rows_async<bf16, ROWS, COLS, NTHREADS>(
      [base](int r, int c) { return base + swizzled_offset(ROWS, r, c); }, gmem, ld, valid, row_of);
}

// Copies an fp32 [ROWS, COLS] matrix (row stride COLS, 16-byte aligned rows) into a swizzled bf16
// tile with plain loads and stores (the whole block; fence and barrier before the tensor cores read
// it). A thread takes a fixed count of four-float quads, i = threadIdx.x + k·kThreads, and issues the
// loads of up to eight before it converts and stores them, so that their latencies overlap.
template <int ROWS, int COLS>
__device__ __forceinline__ void store_float_tile(bf16* smem, const float* gmem) {
  static_assert(COLS % kPanelCols == 0, "swizzled tiles are whole 64-column panels");
  constexpr int kQuads = COLS / 4, kPerThread = ROWS * kQuads / tiles::kThreads;
  constexpr int kBatch = kPerThread < 8 ? kPerThread : 8;
  static_assert(ROWS * kQuads % (tiles::kThreads * kBatch) == 0, "whole batches of quads a thread");
  unsigned char* base = reinterpret_cast<unsigned char*>(smem);
  const float4* src = reinterpret_cast<const float4*>(gmem);
#pragma unroll
  for (int k0 = 0; k0 < kPerThread; k0 += kBatch) {
    float4 v[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) v[k] = src[threadIdx.x + unsigned(k0 + k) * tiles::kThreads];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const unsigned i = threadIdx.x + unsigned(k0 + k) * tiles::kThreads, r = i / kQuads, c = i % kQuads * 4;
      bf16* dst = reinterpret_cast<bf16*>(base + swizzled_offset(ROWS, int(r), int(c)));
      tiles::store_pair(dst, v[k].x, v[k].y);
      tiles::store_pair(dst + 2, v[k].z, v[k].w);
    }
  }
}

// Stores the warp's 16 accumulator rows (16w …, 64 columns) into rows row0 … row0+15 of a swizzled
// [ROWS, 64] tile as bf16.
template <int ROWS>
__device__ __forceinline__ void store_acc(const float (&acc)[8][4], bf16* smem, int row0) {
  const int g = tiles::lane_id() / 4, t = tiles::lane_id() % 4;
  unsigned char* base = reinterpret_cast<unsigned char*>(smem);
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    tiles::store_pair(reinterpret_cast<bf16*>(base + swizzled_offset(ROWS, row0 + g, 8 * n + 2 * t)), acc[n][0],
                      acc[n][1]);
    tiles::store_pair(reinterpret_cast<bf16*>(base + swizzled_offset(ROWS, row0 + g + 8, 8 * n + 2 * t)), acc[n][2],
                      acc[n][3]);
  }
}

// Loads rows row0 … row0+15, columns col0 … col0+63 of a swizzled [ROWS, ·] tile into the warp's
// accumulator layout.
template <int ROWS>
__device__ __forceinline__ void load_acc(float (&acc)[8][4], const bf16* smem, int row0, int col0) {
  const int g = tiles::lane_id() / 4, t = tiles::lane_id() % 4;
  const unsigned char* base = reinterpret_cast<const unsigned char*>(smem);
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int c = col0 + 8 * n + 2 * t;
    const float2 a = tiles::load_pair(reinterpret_cast<const bf16*>(base + swizzled_offset(ROWS, row0 + g, c)));
    const float2 b = tiles::load_pair(reinterpret_cast<const bf16*>(base + swizzled_offset(ROWS, row0 + g + 8, c)));
    acc[n][0] = a.x, acc[n][1] = a.y, acc[n][2] = b.x, acc[n][3] = b.y;
  }
}

// A shared-memory matrix descriptor with 128-byte swizzling: start address, leading and stride
// byte offsets (each in 16-byte units, 14 bits).
__device__ __forceinline__ uint64_t descriptor(const void* start, uint32_t leading_bytes, uint32_t stride_bytes) {
  const uint32_t addr = uint32_t(__cvta_generic_to_shared(start));
  return uint64_t((addr >> 4) & 0x3FFF) | uint64_t((leading_bytes >> 4) & 0x3FFF) << 16 |
         uint64_t((stride_bytes >> 4) & 0x3FFF) << 32 | uint64_t(1) << 62;
}
// A K-major operand's 16 columns k0 = 16·kt … of a [ROWS, K] swizzled tile: within a panel the
// k-slices are 32 bytes apart (the hardware applies the swizzle to the address it forms); groups
// of 8 rows are 1,024 bytes apart; the leading offset is unused.
template <int ROWS>
__device__ __forceinline__ uint64_t k_major(const bf16* tile, int kt) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(tile);
  return descriptor(p + (kt / 4) * ROWS * kRowBytes + (kt % 4) * 32, 16, kSwizzleBytes);
}
// An MN-major operand's rows 16·kt … 16·kt+15 (K) and panel `panel` (64 of M or N) of a [ROWS, ·]
// swizzled tile: groups of 8 K-rows 1,024 bytes apart; the leading offset (to the next panel)
// is unused by the 64-wide products here.
template <int ROWS>
__device__ __forceinline__ uint64_t mn_major(const bf16* tile, int panel, int kt) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(tile);
  return descriptor(p + panel * ROWS * kRowBytes + kt * 16 * kRowBytes, ROWS * kRowBytes, kSwizzleBytes);
}

// Makes this thread's ordinary shared-memory writes (stores, cp.async copies it waited for) visible
// to the tensor cores' reads: each writing thread runs it before the barrier that precedes them.
__device__ __forceinline__ void fence_shared_for_tensor_cores() {
#if PATHBENCH_SM90A_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Orders the warpgroup's register and shared-memory accesses before the products issued next.
__device__ __forceinline__ void arrive() {
#if PATHBENCH_SM90A_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#if PATHBENCH_SM90A_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N committed groups of products are still running.
template <int N>
__device__ __forceinline__ void wait() {
#if PATHBENCH_SM90A_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Ties an operand's registers to this point of the program: called before arrive() on accumulators
// and register A operands (so that the code writing them is not moved past the products' issue,
// which would make ptxas serialize the products) and after wait() (so that nothing reads an
// accumulator, or reuses an A operand's registers, before the products are done).
template <int NT>
__device__ __forceinline__ void fence_operands(float (&acc)[NT][4]) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(acc[n][e])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_operands(tiles::Frag16<bf16> (&a)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[k].r[i])::"memory");
}

// Columns 64·h … 64·h+63 of a wider accumulator (8·panels tiles of 8 columns) as one 64-column
// accumulator, for products one panel at a time.
template <int NT>
__device__ __forceinline__ float (&panel(float (&acc)[NT][4], int h))[8][4] {
  static_assert(NT % 8 == 0, "an accumulator of whole 64-column panels");
  return *reinterpret_cast<float(*)[8][4]>(&acc[8 * h]);
}

#define PATHBENCH_WGMMA_ACC                                                                                    \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),    \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
#define PATHBENCH_WGMMA_D                                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31}"

// d (64 × 64, this warp's 16 rows) = A·B (+ d when accumulate): A 64 × 16 and B 16 × 64 from shared
// memory; kTransA: A is M-major (else K-major), kTransB: B is N-major (else K-major).
template <int kTransA, int kTransB>
__device__ __forceinline__ void mma_ss(float (&d)[8][4], uint64_t a, uint64_t b, bool accumulate) {
#if PATHBENCH_SM90A_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PATHBENCH_WGMMA_D ", %32, %33, p, 1, 1, %35, %36;\n}\n"
      : PATHBENCH_WGMMA_ACC
      : "l"(a), "l"(b), "r"(int(accumulate)), "n"(kTransA), "n"(kTransB));
#endif
}
// The same with A (this warp's 16 rows × 16, mma.sync's A fragment layout) from registers.
template <int kTransB>
__device__ __forceinline__ void mma_rs(float (&d)[8][4], const tiles::Frag16<bf16>& a, uint64_t b, bool accumulate) {
#if PATHBENCH_SM90A_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PATHBENCH_WGMMA_D
      ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
      : PATHBENCH_WGMMA_ACC
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(b), "r"(int(accumulate)), "n"(kTransB));
#endif
}
#undef PATHBENCH_WGMMA_ACC
#undef PATHBENCH_WGMMA_D

// ---- the attention kernels' products over [64, D] tiles (D = 64 or 128), this warp's 16 rows --------

// Issues d (64 × 64) = A·Bᵀ (+ d when accumulate) for K-major [64, D] tiles a and b (rows of a
// against rows of b).
template <int D>
__device__ __forceinline__ void issue_rows_by_rows(float (&d)[8][4], const bf16* a, const bf16* b,
                                                   bool accumulate = false) {
#pragma unroll
  for (int kt = 0; kt < D / 16; ++kt) mma_ss<0, 0>(d, k_major<64>(a, kt), k_major<64>(b, kt), accumulate || kt > 0);
}
// Issues acc (64 × D) += A·B for A (64 × 64) in registers and b a [64, D] tile read MN-major.
template <int D, int NT>
__device__ __forceinline__ void issue_regs_by_tile(float (&acc)[NT][4], const tiles::Frag16<bf16> (&a)[4],
                                                   const bf16* b) {
  static_assert(NT == D / 8, "an accumulator of D columns");
#pragma unroll
  for (int h = 0; h < D / kPanelCols; ++h)
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) mma_rs<1>(panel(acc, h), a[kt], mn_major<64>(b, h, kt), true);
}
// Issues acc (64 × D) = A·B (+ acc when accumulate) for a K-major [64, 64] tile a (rows of A) and b
// a [64, D] tile read MN-major.
template <int D, int NT>
__device__ __forceinline__ void issue_rows_by_tile(float (&acc)[NT][4], const bf16* a, const bf16* b,
                                                   bool accumulate = true) {
  static_assert(NT == D / 8, "an accumulator of D columns");
#pragma unroll
  for (int h = 0; h < D / kPanelCols; ++h)
#pragma unroll
    for (int kt = 0; kt < 4; ++kt)
      mma_ss<0, 1>(panel(acc, h), k_major<64>(a, kt), mn_major<64>(b, h, kt), accumulate || kt > 0);
}
// Issues acc (64 × D) += A·F for a K-major [64, D] tile a (rows of A) and f a swizzled [D, D] tile
// read MN-major (its rows are the contracted dimension).
template <int D>
__device__ __forceinline__ void issue_rows_by_square(float (&acc)[D / 8][4], const bf16* a, const bf16* f) {
#pragma unroll
  for (int h = 0; h < D / kPanelCols; ++h)
#pragma unroll
    for (int kt = 0; kt < D / 16; ++kt) mma_ss<0, 1>(panel(acc, h), k_major<64>(a, kt), mn_major<D>(f, h, kt), true);
}
// The same with Fᵀ: acc (64 × D) += A·Fᵀ, f read K-major (its rows against a's rows).
template <int D>
__device__ __forceinline__ void issue_rows_by_square_t(float (&acc)[D / 8][4], const bf16* a, const bf16* f) {
#pragma unroll
  for (int h = 0; h < D / kPanelCols; ++h)
#pragma unroll
    for (int kt = 0; kt < D / 16; ++kt)
      mma_ss<0, 0>(panel(acc, h), k_major<64>(a, kt), k_major<D>(f + h * 64 * kPanelCols, kt), true);
}
// Issues acc (64 × D) += A·Fᵀ, f read K-major (its rows against A's rows); the 64-row groups of f are
// 8 KB apart within each of its panels.
template <int D>
__device__ __forceinline__ void issue_regs_by_square_t(float (&acc)[D / 8][4], const tiles::Frag16<bf16> (&a)[D / 16],
                                                       const bf16* f) {
#pragma unroll
  for (int h = 0; h < D / kPanelCols; ++h)
#pragma unroll
    for (int kt = 0; kt < D / 16; ++kt) mma_rs<0>(panel(acc, h), a[kt], k_major<D>(f + h * 64 * kPanelCols, kt), true);
}
// Issues d (64 × 64) = A·Bᵀ (+ d when accumulate) for A (64 × D) in registers (D/16 fragments) and
// b a K-major [64, D] tile (rows of A against rows of b).
template <int D>
__device__ __forceinline__ void issue_regs_by_rows(float (&d)[8][4], const tiles::Frag16<bf16> (&a)[D / 16],
                                                   const bf16* b, bool accumulate = false) {
#pragma unroll
  for (int kt = 0; kt < D / 16; ++kt) mma_rs<0>(d, a[kt], k_major<64>(b, kt), accumulate || kt > 0);
}
// Issues d (64 × 64) = Aᵀ·B (+ d when accumulate) for panel a_panel of a [64, ·] tile a and panel h
// of a [64, D] tile b, both read MN-major (their rows are the contracted dimension).
__device__ __forceinline__ void issue_tile_by_tile(float (&d)[8][4], const bf16* a, const bf16* b, int h,
                                                   int a_panel = 0, bool accumulate = false) {
#pragma unroll
  for (int kt = 0; kt < 4; ++kt)
    mma_ss<1, 1>(d, mn_major<64>(a, a_panel, kt), mn_major<64>(b, h, kt), accumulate || kt > 0);
}
// A 64 × 8·NT register product as bf16 A fragments (16 columns each) for the register products.
template <int NT>
__device__ __forceinline__ void to_fragments(tiles::Frag16<bf16> (&f)[NT / 2], const float (&x)[NT][4]) {
#pragma unroll
  for (int kt = 0; kt < NT / 2; ++kt) tiles::frag_from_acc(f[kt], x, kt);
  fence_operands(f);
}
// d = A·Bᵀ (issue_rows_by_rows), waited for.
template <int D>
__device__ __forceinline__ void rows_by_rows(float (&d)[8][4], const bf16* a, const bf16* b) {
  arrive();
  issue_rows_by_rows<D>(d, a, b);
  commit();
  wait<0>();
  fence_operands(d);
}
// d1 = A1·B1ᵀ and d2 = A2·B2ᵀ issued together, both waited for.
template <int D>
__device__ __forceinline__ void rows_by_rows(float (&d1)[8][4], const bf16* a1, const bf16* b1, float (&d2)[8][4],
                                             const bf16* a2, const bf16* b2) {
  arrive();
  issue_rows_by_rows<D>(d1, a1, b1);
  issue_rows_by_rows<D>(d2, a2, b2);
  commit();
  wait<0>();
  fence_operands(d1);
  fence_operands(d2);
}
// d = Aᵀ·B (+ d) (issue_tile_by_tile), waited for with every product issued before it.
__device__ __forceinline__ void tile_by_tile(float (&d)[8][4], const bf16* a, const bf16* b, int h,
                                             int a_panel = 0, bool accumulate = false) {
  if (accumulate) fence_operands(d);
  arrive();
  issue_tile_by_tile(d, a, b, h, a_panel, accumulate);
  commit();
  wait<0>();
  fence_operands(d);
}
// The top of an iteration of a kernel's two-stage copy pipeline: waits for this stage's copies,
// makes them visible to the tensor cores, and starts the next stage's (issue_next) when has_next.
template <typename F>
__device__ __forceinline__ void next_stage(bool has_next, F&& issue_next) {
  tiles::cp_async_wait<0>();
  fence_shared_for_tensor_cores();
  __syncthreads();
  if (has_next) issue_next();
  tiles::cp_async_commit();
}
// acc += X·B for a 64 × 64 register product x (as bf16) and b a [64, D] tile read MN-major, waited for.
template <int D, int NT>
__device__ __forceinline__ void add_regs_by_tile(float (&acc)[NT][4], const float (&x)[8][4], const bf16* b) {
  tiles::Frag16<bf16> f[4];
  to_fragments(f, x);
  fence_operands(acc);
  arrive();
  issue_regs_by_tile<D>(acc, f, b);
  commit();
  wait<0>();
  fence_operands(acc);
  fence_operands(f);
}

}  // namespace pathbench::cuda::wgmma
