// The SIMD building blocks shared by naive/simd and tiled/simd, written once over the xsimd
// architecture `Arch` and compiled per ISA by the small <strategy>_simd_<isa>.cpp files, which
// alone get that ISA's compiler flags.
//
// Everything here has internal linkage (an unnamed namespace): each ISA's translation unit keeps
// its own copy, so the linker can never hand the SSE path a function compiled for AVX-512. For the
// same reason these helpers use no inline std:: algorithms.
#pragma once

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/common.hpp"
#include "kernels/simd_softmax.hpp"
#include "kernels/simd_storage.hpp"
#include "kernels/storage.hpp"

namespace attnbench::kernels {
namespace {

inline std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

// The phases of a tiled forward, as bits: the kernel runs them all; the cost model's variants
// (TiledPhases) one alone, over the same loops, to time it.
enum TiledPhase : unsigned { kScorePhase = 1, kSoftmaxPhase = 2, kBlendPhase = 4, kAllPhases = 7 };

template <class Arch>
struct Simd : SimdSoftmax<Arch> {
  using Storage = SimdStorage<Arch>;
  using Softmax = SimdSoftmax<Arch>;
  using Softmax::exp;
  using Softmax::exp_and_sum;
  using Softmax::scale_and_max;
  using Storage::W;  // float lanes per vector
  using typename Storage::batch;
  using typename Storage::ibatch;
  // The conversions where K/V enter the packed layout (round_array) and leave it (load_kv).
  using Storage::kRoundChunk;
  using Storage::load_kv;
  using Storage::round_array;
  using Storage::widen_block;

  // The micro-tile: MR query rows x NR keys (for S = Q K^T) or MR rows x NR output columns (for
  // O += P V), NR = 2 vectors (groups of few rows take wider tiles: tile_vectors). Each step of a
  // product loads the tile's 2 K (or V) vectors, from
  // L2 (a key block lives there, not in L1) and feeds them to MR rows: MR sets the L2 bytes per
  // FMA. AVX2 and SSE have 16 registers: 6 rows keep 12 accumulators, plus 2 for the streamed
  // vectors and 1 for the broadcast. AVX-512 has 32, and its vectors are twice as wide, so at 6
  // rows it would need twice AVX2's L2 bytes per cycle: 12 rows keep 24 accumulators (27 of 32
  // registers with the streamed vectors and the broadcast) and the same L2 bytes per FMA
  // instruction, so per cycle, as AVX2's 6 rows (docs/studies/2026-12-02-avx512-12-row-tile.md).
  // 12 or 24 independent FMA chains cover the FMA latency (4 cycles) times 2 FMA ports.
  static constexpr std::size_t MR = W == 16 ? 12 : 6;
  static constexpr std::size_t NR = 2 * W;

  // Br = 48 query rows (8 or 4 row groups): the naive and backward kernels' query block, and the
  // smallest of the tiled forward's (query_block below).
  static constexpr std::size_t Br = 48;
  static_assert(Br % MR == 0, "a query block must be whole row groups");
  static_assert(kRowsPerTask % Br == 0, "a parallel task must be whole query blocks");

  // The tiled forward's query block: the rows that share each key block while it sits in L2, so
  // that K and V stream from beyond L2 once per query block. A block's accumulator and Q rows
  // (2 x rows x dp floats) take at most a quarter of the L2 this CPU reports, beside the key
  // block's half: 48 rows doubled while that holds, up to 192. (48 rows read K and V at 24 FLOPs
  // per byte; at n = 16384, where K and V of a head no longer fit in L2, that ran 3%, 13% and
  // 32% slower than 192 rows at d = 64, 128 and 256 on one core of a Xeon with 2 MiB of L2:
  // docs/studies/2026-12-01-l2-blocking.md.)
  // Always kRowsPerTask times a power of two, so a parallel task can be a whole query block.
  static constexpr std::size_t kMaxQueryBlock = 4 * kRowsPerTask;
  static std::size_t query_block(std::size_t dp) {
    static const std::size_t budget = reported_l2_bytes() / 4;
    std::size_t br = kRowsPerTask;
    while (br < kMaxQueryBlock && 2 * (2 * br) * dp * sizeof(float) <= budget) br *= 2;
    return br;
  }

  // Bc: the key block's K^T and V (about 8 x d bytes per key) take at most half the L2 this CPU
  // reports (sysconf; 512 KiB if it reports none), leaving the rest for the accumulator, the Q
  // rows and the score tile. Larger blocks mean fewer max/rescale steps per row; capped at 512
  // keys, where an MR x Bc score tile (12 KiB, 24 KiB with AVX-512's 12 rows) sits in L1 beside
  // the group's Q rows and the streamed panels (at d = 256 with 12 rows, 36 KiB: more than a 32
  // KiB L1, within the 48 KiB of the Xeon measured in docs/studies/). A multiple of NR. The block
  // depends on d and the cache only, never on threads.
  static constexpr std::size_t kMaxKeyBlock = 512;
  // Every block key_block() returns is kMaxKeyBlock halved some times, down to NR at the least:
  // whole panels, and a divisor of the decode chunk.
  static_assert((NR & (NR - 1)) == 0 && kMaxKeyBlock % NR == 0, "key blocks must be whole panels");
  static_assert(kKeyChunk % kMaxKeyBlock == 0, "a decode chunk must be whole key blocks");
  static_assert(kPackKeys % NR == 0, "a packing task must be whole panels");
  static std::size_t key_block(std::size_t dp) {
    static const std::size_t budget = reported_l2_bytes() / 2;
    std::size_t bc = kMaxKeyBlock;
    while (bc > NR && bc * 8 * dp > budget) bc /= 2;
    return bc;
  }

  // NOTE: K and V of a long head do not fit the L3 either. Query block after query block would
  // then stream them from memory, and that stream is not hidden behind the FMAs: the products
  // over one query block against a head of 32 MiB or more of K and V ran 3-16% slower than on a
  // block in L2, while up to 16 MiB they lost nothing (Zen 5, 1 MiB of L2;
  // docs/studies/2026-12-02-key-chunks.md). So the tiled forward takes the keys in chunks of
  // l3_keys(dp) (K and V of 4 L2s, at most a quarter of a reported L3) and passes a super block of
  // query blocks over each chunk while it stays in L3: memory is read once per super block instead
  // of once per query block. Each row still meets the same key blocks in the same order, so its
  // result is unchanged.
  static std::size_t l3_keys(std::size_t dp) {
    static const std::size_t l3 = reported_l3_bytes();
    static const std::size_t chunk = l3 ? min_of(4 * reported_l2_bytes(), l3 / 4)  //
                                        : 4 * reported_l2_bytes();
    const std::size_t bc = key_block(dp);
    return max_of(bc, chunk / (8 * dp) / bc * bc);
  }
  // Query blocks of a super block: the largest power of two of them whose Q rows and accumulators
  // (8 x dp bytes a row) take at most half a chunk's K and V (8 x dp bytes a key), so that the
  // driver's tasks, halved from a super block, stay whole query blocks. One query block when the
  // head's K and V fit one chunk.
  static std::size_t super_blocks(std::size_t dp) {
    const std::size_t most = l3_keys(dp) / 2 / query_block(dp);
    std::size_t blocks = 1;
    while (2 * blocks <= most) blocks *= 2;
    return blocks;
  }
  static std::size_t super_rows(std::size_t dp, std::size_t kv_len) {
    return query_block(dp) * (kv_len <= l3_keys(dp) ? 1 : super_blocks(dp));
  }

  // ---------------------------------------------------------------------------------------------
  // Packing, once per (batch, key/value head)
  // ---------------------------------------------------------------------------------------------
  // NOTE: the packed head is K^T in panels of NR keys, each panel [head_dim][NR] (keys past the
  // capacity are zero), followed by V with rows padded to a multiple of W columns (padding zero),
  // both in the storage type T (float, Half or BFloat16). The score micro-kernel then streams one
  // row of each panel its tile spans per step of the dot product, and the blend micro-kernel reads
  // whole vectors of V with no column tail; load_kv widens a 16-bit vector as it loads it.
  static std::size_t padded_keys(std::size_t kv_len) { return round_up(kv_len, NR); }
  static std::size_t padded_dim(std::size_t d) { return round_up(d, W); }
  template <class T>
  static std::size_t packed_bytes(std::size_t capacity, std::size_t d) {
    return (padded_keys(capacity) * d + capacity * padded_dim(d)) * sizeof(T);
  }
  template <class T>
  static const T* packed_v(const T* packed, std::size_t capacity, std::size_t d) {
    return packed + padded_keys(capacity) * d;
  }

  // Packs keys [first, last) of a head laid out for `capacity` keys (k and v at key `first`'s
  // rows), rounding to T: their columns of the K^T panels (the last panel padded with zero keys
  // once `last` reaches the capacity) and their V rows. Disjoint key ranges write disjoint parts
  // of `packed`, so ranges can be packed in parallel, and a KvCache appends one token at a time.
  template <class T>
  static void pack(const float* k, const float* v, std::size_t capacity, std::size_t d,
                   std::size_t first, std::size_t last, void* out) {
    T* packed = static_cast<T*>(out);
    const std::size_t panels_end = last == capacity ? padded_keys(capacity) : last;
    for (std::size_t j0 = first / NR * NR; j0 < panels_end; j0 += NR) {
      T* panel = packed + j0 * d;
      const std::size_t from = j0 > first ? j0 : first;
      const std::size_t to = min_of(j0 + NR, panels_end);
      if constexpr (std::is_same_v<T, float>) {
        // 4 keys by 4 columns at a time, transposed in registers (SSE, which every x86-64 CPU
        // has): a load and a store per 4 values instead of one of each per value; the rest, and
        // the zero keys past `last`, one by one.
        const std::size_t real_end = min_of(to, last);
        std::size_t j = from;
        for (; j + 4 <= real_end; j += 4) {
          const float* rows = k + (j - first) * d;
          float* at = panel + (j - j0);
          std::size_t c = 0;
          for (; c + 4 <= d; c += 4) {
            __m128 r0 = _mm_loadu_ps(rows + c), r1 = _mm_loadu_ps(rows + d + c);
            __m128 r2 = _mm_loadu_ps(rows + 2 * d + c), r3 = _mm_loadu_ps(rows + 3 * d + c);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(at + c * NR, r0);
            _mm_storeu_ps(at + (c + 1) * NR, r1);
            _mm_storeu_ps(at + (c + 2) * NR, r2);
            _mm_storeu_ps(at + (c + 3) * NR, r3);
          }
          for (; c < d; ++c) {
            for (std::size_t x = 0; x < 4; ++x) at[c * NR + x] = rows[x * d + c];
          }
        }
        for (; j < to; ++j) {
          for (std::size_t c = 0; c < d; ++c)
            panel[c * NR + (j - j0)] = j < last ? k[(j - first) * d + c] : 0.0f;
        }
      } else {  // each key's row rounded by the vector conversion, then spread down its column
        for (std::size_t j = from; j < to; ++j) {
          for (std::size_t c0 = 0; c0 < d; c0 += kRoundChunk) {
            T row[kRoundChunk];
            const std::size_t n = min_of(kRoundChunk, d - c0);
            if (j < last) {
              round_array(k + (j - first) * d + c0, row, n);
            } else {
              for (std::size_t c = 0; c < n; ++c) row[c] = T{};
            }
            for (std::size_t c = 0; c < n; ++c) panel[(c0 + c) * NR + (j - j0)] = row[c];
          }
        }
      }
    }
    const std::size_t dp = padded_dim(d);
    T* pv = packed + padded_keys(capacity) * d;
    for (std::size_t j = first; j < last; ++j) {
      round_array(v + (j - first) * d, pv + j * dp, d);
      for (std::size_t c = d; c < dp; ++c) pv[j * dp + c] = T{};
    }
  }

  // Q rows [0, rows) (d floats each) packed in groups of `group` <= MR rows, group k at
  // out + k MR d as [d][MR]: the score micro-kernel's broadcasts then read one pointer at fixed
  // offsets instead of one pointer per row (12 with AVX-512: more than the free general registers).
  static void pack_q(const float* q, std::size_t rows, std::size_t group, std::size_t d,
                     float* out) {
    for (std::size_t g = 0; g < rows; g += group) {
      const std::size_t mr = min_of(group, rows - g);
      float* packed = out + g / group * MR * d;
      for (std::size_t r = 0; r < mr; ++r) {
        for (std::size_t c = 0; c < d; ++c) packed[c * MR + r] = q[(g + r) * d + c];
      }
    }
  }

  // Rows [i, i + count) of a head finished over their keys, their accumulators at o_acc (dp floats
  // a row), max and sum at m and l: normalised into head.o (and their LSE, when asked), or, for a
  // partial result over part of the keys, copied to *partial as they are (row i at i - first).
  static void finish_rows(const HeadProblem& head, std::size_t i, std::size_t count,
                          const float* o_acc, std::size_t dp, const float* m, const float* l,
                          const PartialRows* partial, std::size_t first) {
    const std::size_t d = head.head_dim;
    for (std::size_t r = 0; r < count; ++r) {
      if (partial) {
        const std::size_t at = i + r - first;
        for (std::size_t x = 0; x < d; ++x) partial->o[at * d + x] = o_acc[r * dp + x];
        partial->m[at] = m[r];
        partial->l[at] = l[r];
      } else {
        Softmax::write_row(o_acc + r * dp, inverse_sum(l[r]), l[r] == 0.0f, d,
                           head.o + (i + r) * d);
        if (head.lse) head.lse[i + r] = log_sum_exp(m[r], l[r]);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Micro-kernels
  // ---------------------------------------------------------------------------------------------

  // NOTE: a group of at most kStreamingRows rows (decoding's folded heads; elsewhere, edge groups
  // and the ragged tails of causal blocks) does few FMAs per byte it reads. Decoding reads each
  // key block once, from memory, and the FMAs in the reorder window leave too few loads in flight
  // to cover the memory latency. So the micro-kernels of such groups prefetch, into L2, the data
  // a fixed distance ahead in each stream they read, one prefetch per vector loaded: (V + 1) / 2
  // panels ahead (scores), kBlendKeys keys ahead (blend). Spread over the loads this way, decoding
  // ran faster on AVX2 and AVX-512; the next key block prefetched in a burst per panel was slower
  // than no prefetch (docs/studies/2026-12-02-decode.md). A larger group prefetches when the
  // caller says it `streams` the block: it is the first of its row block to read it, from beyond L2
  // (decoding several rows per query head: 5 to 48 folded rows); the groups after it find the block
  // in L2, where prefetching only costs (every group of a prefill prefetching ran 0.82-0.96x).
  static constexpr std::size_t kStreamingRows = 4;
  template <class T>
  static void prefetch_l2(const T* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
  }

  // S[r][keys of vectors first..first + V) = q_r . K^T for R query rows, vector x of a block
  // being half x % 2 of its packed panel x / 2 (raw dot products; the scale is applied by the
  // softmax pass). Each key's dot product runs over the head dimension in order whatever R, V and
  // first, so a row's scores do not depend on the tile that computes them.
  template <std::size_t R, std::size_t V, class T, class QS, class QT>
  static void score_tile(const float* q, QS q_stride, QT q_step, std::size_t d, const T* kt,
                         std::size_t first, float* s, std::size_t s_stride, bool streams = false) {
    const T* at[V];
#pragma GCC unroll 8
    for (std::size_t x = 0; x < V; ++x) at[x] = kt + (first + x) / 2 * NR * d + (first + x) % 2 * W;
    batch acc[R][V];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x) acc[r][x] = batch(0.0f);
    }
    for (std::size_t c = 0; c < d; ++c) {
      batch k[V];
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x) k[x] = load_kv(at[x] + c * NR);
      if (R <= kStreamingRows || streams) {  // (V + 1) / 2 panels ahead, at this step's row
#pragma GCC unroll 8
        for (std::size_t x = 0; x < V; ++x) prefetch_l2(at[x] + (V + 1) / 2 * NR * d + c * NR);
      }
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) {
        const batch a(q[r * q_stride + c * q_step]);
#pragma GCC unroll 8
        for (std::size_t x = 0; x < V; ++x) acc[r][x] = xsimd::fma(a, k[x], acc[r][x]);
      }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x)
        acc[r][x].store_aligned(s + r * s_stride + (first + x) * W);
    }
  }

  // O[r][0..NV*W) = alpha_r * O[r] + sum_{j < keys} P[r][j] V[j] for R rows and NV vectors of
  // output columns (the O tile lives in registers for the whole key loop). `alpha` null: no
  // rescale. P[r][j] is p[r * p_stride + j * p_step]: p_step 1 for P itself, p_stride 1 for a P
  // stored transposed (the backward's P^T dO and dS^T Q read P and dS that way).
  // NOTE: with a run-time stride the R rows' broadcasts need R pointers (or R multiples of the
  // stride), more than the free general registers: the compiler spilled them and reloaded some
  // from the stack on every key. So a stride may be a compile-time constant (PS a
  // std::integral_constant), and the broadcasts are then one pointer plus fixed offsets: the tiled
  // forward's score tile has rows kTileStride floats apart whatever the key block
  // (docs/studies/2026-12-06-instruction-limit.md). The largest key block and one cache line
  // more: rows of a tile shorter than the stride then fall in different L1 sets instead of a few
  // (2 KiB apart, 48 rows would compete for the same 8 ways).
  static constexpr std::size_t kTileStride = kMaxKeyBlock + 16;
  static_assert(kTileStride % W == 0, "score tile rows must be whole vectors");
  template <std::size_t R, std::size_t NV, class T, class PS>
  static void blend_tile(const float* p, PS p_stride, const T* v, std::size_t v_stride,
                         std::size_t keys, const float* alpha, float* o, std::size_t o_stride,
                         std::size_t p_step = 1, bool streams = false) {
    batch acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) {
        acc[r][x] = batch::load_aligned(o + r * o_stride + x * W);
        if (alpha != nullptr) acc[r][x] *= batch(alpha[r]);  // O = O * exp(m_old - m_new)
      }
    }
    for (std::size_t j = 0; j < keys; ++j) {
      batch vj[NV];
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) vj[x] = load_kv(v + j * v_stride + x * W);
      if (R <= kStreamingRows || streams) {  // this tile's columns of the next run's key
#pragma GCC unroll 8
        for (std::size_t x = 0; x < NV; ++x) prefetch_l2(v + (j + kBlendKeys) * v_stride + x * W);
      }
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) {
        const batch a(p[r * p_stride + j * p_step]);
#pragma GCC unroll 8
        for (std::size_t x = 0; x < NV; ++x)
          acc[r][x] = xsimd::fma(a, vj[x], acc[r][x]);  // O += P V
      }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) acc[r][x].store_aligned(o + r * o_stride + x * W);
    }
  }

  // f(std::integral_constant<std::size_t, rows>{}) for rows in 1..MR, known only at run time
  // (edge tiles): one instance of the micro-kernel per row count.
  template <class F, std::size_t... R>
  static void with_rows(std::size_t rows, F&& f, std::index_sequence<R...>) {
    const bool called =
        ((rows == R + 1 ? (f(std::integral_constant<std::size_t, R + 1>{}), true) : false) || ...);
    assert(called && "a micro-tile has 1..MR rows");
    (void)called;
  }
  template <class F>
  static void with_rows(std::size_t rows, F&& f) {
    with_rows(rows, f, std::make_index_sequence<MR>{});
  }

  // NOTE: a group of few rows (decoding's 1 to 4 folded rows, or an edge group) would keep only 2
  // FMA chains per row in an MR x NR tile: too few to cover the FMA latency times 2 ports (8 to
  // 10), and one broadcast Q or P value per 2 FMAs. Such a group's tiles are wider instead, up to
  // 8 vectors of keys (scores) or of output columns (blend): as many chains as make 16 at most, in
  // the registers the ISA has (32 with AVX-512, 16 otherwise; a vector only one row reads is
  // folded into its FMA). A row's arithmetic is the same at every width, so it does not depend on
  // the rows grouped with it.
  static constexpr std::size_t kRegisters = W == 16 ? 32 : 16;
  static constexpr bool fits(std::size_t rows, std::size_t vectors) {
    const std::size_t streamed = rows == 1 ? 2 : vectors;
    return rows * vectors <= 16 && rows * vectors + streamed + 1 <= kRegisters;
  }
  static constexpr std::size_t tile_vectors(std::size_t rows) {
    for (std::size_t v : {8, 4, 3})
      if (fits(rows, v)) return v;
    return 2;
  }

  // The group's scores against the block's panels [0, panels), for 1..MR rows: tiles of
  // tile_vectors(rows) vectors, the rest in tiles of 2 and 1.
  template <class T>
  static void score_rows(std::size_t rows, const float* q, std::size_t d, const T* kt,
                         std::size_t panels, float* s, std::size_t s_stride, bool streams = false,
                         bool q_packed = false) {
    using One = std::integral_constant<std::size_t, 1>;
    with_rows(rows, [&](auto r) {
      constexpr std::size_t R = decltype(r)::value, V = tile_vectors(R);
      auto tiles = [&](auto q_stride, auto q_step) {
        const std::size_t vectors = 2 * panels;
        std::size_t x = 0;
        for (; x + V <= vectors; x += V)
          score_tile<R, V>(q, q_stride, q_step, d, kt, x, s, s_stride, streams);
        if constexpr (V > 2) {
          for (; x + 2 <= vectors; x += 2)
            score_tile<R, 2>(q, q_stride, q_step, d, kt, x, s, s_stride, streams);
          if (x < vectors) score_tile<R, 1>(q, q_stride, q_step, d, kt, x, s, s_stride, streams);
        }
      };
      if (q_packed) {
        tiles(One{}, std::integral_constant<std::size_t, MR>{});
      } else {
        tiles(d, One{});
      }
    });
  }

  // NOTE: keys in runs of kBlendRun, every column tile over one run before the next, so that the
  // run's P (R rows of kBlendRun floats) stays in L1 across the column tiles. A tile loads and
  // stores its accumulators once per run: runs of 64 keys spent up to 7 % of the blend on that
  // with AVX2's 6-row tiles (docs/studies/2026-12-06-instruction-limit.md). The accumulators go
  // through memory between runs (exactly), so every row's FMAs keep their order. kBlendKeys is
  // the decode path's run (tiled_simd.hpp) and the blend's prefetch distance.
  static constexpr std::size_t kBlendKeys = 64;
  static constexpr std::size_t kBlendRun = 256;
  template <std::size_t R, class T, class PS>
  static void blend_columns(const float* p, PS p_stride, const T* v, std::size_t dp,
                            std::size_t keys, const float* alpha, float* o, std::size_t p_step,
                            bool streams) {
    std::size_t k0 = 0;
    do {  // at least once: with no keys, the pass only rescales by alpha
      const std::size_t run = min_of(kBlendRun, keys - k0);
      const float* a = k0 == 0 ? alpha : nullptr;
      const float* pk = p + k0 * p_step;
      const T* vk = v + k0 * dp;
      constexpr std::size_t NV = tile_vectors(R);
      std::size_t c = 0;
      for (; c + NV * W <= dp; c += NV * W)
        blend_tile<R, NV>(pk, p_stride, vk + c, dp, run, a, o + c, dp, p_step, streams);
      if constexpr (NV > 2) {
        for (; c + NR <= dp; c += NR)
          blend_tile<R, 2>(pk, p_stride, vk + c, dp, run, a, o + c, dp, p_step, streams);
      }
      if (c < dp)
        blend_tile<R, 1>(pk, p_stride, vk + c, dp, run, a, o + c, dp, p_step,
                         streams);  // one vector left
      k0 += run;
    } while (k0 < keys);
  }

  // O[rows][0..dp) (+)= P V over every padded column, for 1..MR rows.
  template <class T, class PS>
  static void blend_rows(std::size_t rows, const float* p, PS p_stride, const T* v, std::size_t dp,
                         std::size_t keys, const float* alpha, float* o, std::size_t p_step = 1,
                         bool streams = false) {
    with_rows(rows, [&](auto r) {
      blend_columns<decltype(r)::value>(p, p_stride, v, dp, keys, alpha, o, p_step, streams);
    });
  }

  // The keys of block [j0, j0 + bc) that each of the mr rows starting at query row i sees,
  // counted from j0: [begin[r], end[r]) (empty: begin[r] == end[r]); every row sees
  // [common_begin, common_end) (none when common_begin >= common_end); `first` is the least
  // begin and `widest` the largest end of the rows that see any (widest 0: no row does).
  // (G: the most rows of a group; MR but for the AMX kernel's 16-row tiles.)
  template <std::size_t G>
  struct BlockKeysOf {
    std::size_t begin[G];
    std::size_t end[G];
    std::size_t common_begin;
    std::size_t common_end;
    std::size_t first;
    std::size_t widest;
    bool any() const { return widest > 0; }
    bool shared() const { return common_begin < common_end; }
  };
  using BlockKeys = BlockKeysOf<MR>;
  template <std::size_t G = MR>
  static BlockKeysOf<G> row_keys(std::size_t mr, std::size_t j0, std::size_t bc, auto&& visible) {
    assert(mr <= G);
    BlockKeysOf<G> keys{{}, {}, 0, bc, bc, 0};
    for (std::size_t r = 0; r < mr; ++r) {
      const KeySpan span = visible(r);
      const std::size_t end = span.end <= j0 ? 0 : min_of(bc, span.end - j0);
      const std::size_t begin = span.begin <= j0 ? 0 : min_of(end, span.begin - j0);
      keys.begin[r] = begin;
      keys.end[r] = end;
      keys.common_begin = begin > keys.common_begin ? begin : keys.common_begin;
      keys.common_end = min_of(keys.common_end, end);
      if (begin < end) {
        keys.first = min_of(keys.first, begin);
        keys.widest = end > keys.widest ? end : keys.widest;
      }
    }
    if (keys.widest == 0) keys.first = 0;
    return keys;
  }
  template <std::size_t G = MR>
  static BlockKeysOf<G> block_keys(const HeadProblem& head, std::size_t i, std::size_t mr,
                                   std::size_t j0, std::size_t bc) {
    return row_keys<G>(mr, j0, bc, [&](std::size_t r) { return head.visible(i + r); });
  }

  // S[0..mr)[0..widest) = Q K^T for the group's rows against the block's packed panels (`streams`:
  // the group reads them first, from beyond L2, and prefetches them whatever its rows).
  template <class T>
  static void score_group(const float* q, std::size_t mr, std::size_t d, const T* kt_block,
                          std::size_t widest, float* s, std::size_t s_stride, bool streams = false,
                          bool q_packed = false) {
    score_rows(mr, q, d, kt_block, (widest + NR - 1) / NR, s, s_stride, streams, q_packed);
  }

  // O = O * alpha + P V for the group: all rows over the keys they share, then each row's
  // ragged head and tail alone, so that no row ever multiplies a key it does not see (a masked
  // key's V may hold NaN, and 0 * NaN is NaN). Per row the FMAs run over its keys in increasing
  // order whatever the group (a row's bits must not depend on its neighbours): a head before
  // the shared keys is added after a pass that only rescales.
  template <class T, class PS>
  static void blend_group(std::size_t mr, const BlockKeys& keys, const float* p, PS p_stride,
                          const T* v_block, std::size_t dp, const float* alpha, float* o_acc,
                          bool streams = false) {
    const bool shared = keys.shared();
    bool heads = !shared;
    for (std::size_t r = 0; r < mr && !heads; ++r) heads = keys.begin[r] < keys.common_begin;
    if (heads && alpha != nullptr) {  // rescale only
      blend_rows(mr, p, p_stride, v_block, dp, 0, alpha, o_acc);
      alpha = nullptr;
    }
    for (std::size_t r = 0; heads && r < mr; ++r) {
      const std::size_t end = shared ? min_of(keys.end[r], keys.common_begin) : keys.end[r];
      if (keys.begin[r] < end) {
        blend_rows(1, p + r * p_stride + keys.begin[r], p_stride, v_block + keys.begin[r] * dp, dp,
                   end - keys.begin[r], nullptr, o_acc + r * dp);
      }
    }
    if (shared) {
      blend_rows(mr, p + keys.common_begin, p_stride, v_block + keys.common_begin * dp, dp,
                 keys.common_end - keys.common_begin, alpha, o_acc, 1, streams);
    }
    for (std::size_t r = 0; shared && r < mr; ++r) {
      if (keys.end[r] > keys.common_end) {
        blend_rows(1, p + r * p_stride + keys.common_end, p_stride, v_block + keys.common_end * dp,
                   dp, keys.end[r] - keys.common_end, nullptr, o_acc + r * dp);
      }
    }
  }
};

}  // namespace
}  // namespace attnbench::kernels
