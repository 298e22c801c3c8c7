// tiled/simd-bf16: the tiled forward of tiled_simd.hpp with bf16 products (Products::bf16), on
// AVX512_BF16's vdpbf16ps: each instruction multiplies 16 pairs of bfloat16 values and adds both
// products to 16 float32 accumulators, 64 FLOPs against vfmadd231ps's 32. Written over the
// xsimd architecture (AVX-512 only) and instantiated by bf16_<isa>.cpp.
//
// As FlashAttention does it in 16 bits: S = Q K^T from bfloat16 Q and K, accumulated in float32;
// the online softmax (scale, max, exp, sum, rescale) in float32 on the float32 scores, as the
// float32 kernel does it (Simd's sweeps); P rounded to bfloat16 once; O += P V from bfloat16 P and
// V into float32 accumulators; the sum l adds P unrounded.
//
// A vdpbf16ps lane pairs two consecutive elements of each operand, so every operand is stored in
// pairs along the sum: Q and K^T by pairs of head-dim columns (odd d: a zero column), P and V by
// pairs of keys (an odd block: the last pair half masked). A pair is one 32-bit word, lower
// element at the lower address, which a broadcast (vpbroadcastd) gives every lane of Q or P.
#pragma once

#include "kernels/simd_common.hpp"

namespace attnbench::kernels {
namespace {

// `Self`: a kernel built on this one that replaces its seams (below), as TiledAmx does.
template <class Arch, class Self = void>
struct TiledBf16 : Simd<Arch> {
  using S = Simd<Arch>;
  using K = std::conditional_t<std::is_void_v<Self>, TiledBf16, Self>;
  using S::MR;
  using S::NR;
  using S::W;
  static_assert(W == 16, "vdpbf16ps kernels are AVX-512");
  using Pair = std::uint32_t;  // two bfloat16 values

  // ---------------------------------------------------------------------------------------------
  // The seams a further bf16-products ISA fills (bf16_amxbf16.cpp's AMX tiles): the height of a
  // K^T panel in pairs, the most rows of a group and the rows of a block's groups, the
  // accumulator rows past a query block that a group's tiles may touch, the tile state a call
  // holds; and pack_q, score_rows and blend_shared below.
  // ---------------------------------------------------------------------------------------------
  static std::size_t panel_height(std::size_t d) { return pairs(d); }
  static constexpr std::size_t kGroup = MR;
  static std::size_t group_rows(std::size_t br) { return row_group(br, MR); }
  static constexpr std::size_t kSpareRows = 0;
  struct NoTileState {};
  static NoTileState enter_tiles() { return {}; }

  // ---------------------------------------------------------------------------------------------
  // Packing, once per (batch, key/value head)
  // ---------------------------------------------------------------------------------------------
  // NOTE: K^T in panels of NR keys, each [panel_height(d)][NR] pairs of columns (keys past the
  // capacity and pairs past d zero), then V as [pairs of keys][padded_dim(d)] pairs of keys
  // (columns past d zero, an odd capacity's missing key zero). A score step streams one pair row of
  // a panel (NR pairs, 2 vectors); a blend step one pair of V rows.
  static std::size_t pairs(std::size_t d) { return (d + 1) / 2; }
  static std::size_t packed_bytes(std::size_t capacity, std::size_t d) {
    return (S::padded_keys(capacity) * K::panel_height(d) +
            round_up(capacity, 2) / 2 * S::padded_dim(d)) *
           sizeof(Pair);
  }
  static const Pair* packed_v(const Pair* kt, std::size_t capacity, std::size_t d) {
    return kt + S::padded_keys(capacity) * K::panel_height(d);
  }

  // Keys [first, last) of a head laid out for `capacity` keys, rounded to bfloat16 (the scalar
  // rounding of storage.hpp, through its vector form): K^T panels, then V in pairs of rows.
  // Disjoint ranges write disjoint bytes, save the two halves of a V pair, which an odd `first`
  // shares with the range before it (a KvCache's appends are sequential; the driver's ranges are
  // even).
  static void pack(const float* k, const float* v, std::size_t capacity, std::size_t d,
                   std::size_t first, std::size_t last, void* out) {
    Pair* kt = static_cast<Pair*>(out);
    pack_panels(k, capacity, d, first, last, kt, K::panel_height(d));
    pack_pair_rows(v, capacity, d, first, last, kt + S::padded_keys(capacity) * K::panel_height(d));
  }

  // Columns [c0, c0 + C) of a row rounded to bfloat16, zeros past d (odd d's pair, the padding).
  static constexpr std::size_t C = S::kRoundChunk;
  static_assert(C % (2 * W) == 0, "a chunk must be whole pairs of vectors");
  static std::size_t round_chunk(const float* row, std::size_t d, std::size_t c0, BFloat16* to) {
    const std::size_t n = min_of(C, d - c0);
    S::round_array(row + c0, to, n);
    for (std::size_t c = n; c < C; ++c) to[c] = BFloat16{};
    return n;
  }

  // Rows [first, last) of src (first's row at src) as the columns of K^T-style panels, [height]
  // [NR] pairs each (height >= pairs(d)): a row rounded, read as pairs, is its column. Keys past
  // the capacity and pairs past d zero.
  static void pack_panels(const float* src, std::size_t capacity, std::size_t d, std::size_t first,
                          std::size_t last, Pair* kt, std::size_t height = 0) {
    const std::size_t pd = height == 0 ? pairs(d) : height;
    alignas(64) BFloat16 a[C];
    for (std::size_t j = first; j < last; ++j) {
      Pair* panel = kt + j / NR * NR * pd + j % NR;
      for (std::size_t c0 = 0; c0 < d; c0 += C) {
        const std::size_t n = round_chunk(src + (j - first) * d, d, c0, a);
        for (std::size_t c2 = 0; 2 * c2 < n; ++c2) {
          Pair word;
          __builtin_memcpy(&word, a + 2 * c2, sizeof word);
          panel[(c0 / 2 + c2) * NR] = word;
        }
      }
      for (std::size_t c2 = pairs(d); c2 < pd; ++c2) panel[c2 * NR] = 0;
    }
    for (std::size_t j = last == capacity ? capacity : S::padded_keys(capacity);
         j < S::padded_keys(capacity); ++j) {
      Pair* panel = kt + j / NR * NR * pd + j % NR;
      for (std::size_t c2 = 0; c2 < pd; ++c2) panel[c2 * NR] = 0;
    }
  }

  // Rows [first, last) of src in pairs of rows, [pairs of rows][padded_dim(d)] pairs: two rows
  // rounded and interleaved (an odd capacity's missing row zero).
  static void pack_pair_rows(const float* src, std::size_t capacity, std::size_t d,
                             std::size_t first, std::size_t last, Pair* out) {
    const std::size_t dp = S::padded_dim(d);
    alignas(64) BFloat16 a[C], b[C];
    for (std::size_t j = first; j < last; ++j) {
      const bool pair = j % 2 == 0 && j + 1 < last;  // j and j + 1 fill the pair
      for (std::size_t c0 = 0; c0 < d; c0 += C) {    // (dp - d < W: c0 < dp means c0 < d)
        round_chunk(src + (j - first) * d, d, c0, a);
        if (pair) round_chunk(src + (j + 1 - first) * d, d, c0, b);
        Pair* row = out + j / 2 * dp + c0;
        for (std::size_t c = 0; c < C && c0 + c < dp; c += W) {
          const __m512i lo =
              _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(a + c)));
          if (pair) {
            const __m512i hi =
                _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(b + c)));
            _mm512_storeu_si512(row + c, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
          } else {  // one row: its half of each pair only (16-bit stores)
            auto* half = reinterpret_cast<std::uint16_t*>(row + c) + j % 2;
            alignas(64) std::uint32_t words[W];
            _mm512_store_si512(words, lo);
            for (std::size_t x = 0; x < W; ++x) half[2 * x] = static_cast<std::uint16_t>(words[x]);
          }
        }
      }
      if (pair) ++j;
    }
    if (last == capacity && capacity % 2 != 0) {
      auto* half = reinterpret_cast<std::uint16_t*>(out + capacity / 2 * dp) + 1;
      for (std::size_t c = 0; c < dp; ++c) half[2 * c] = 0;
    }
  }

  // Q rows [0, rows) in groups of `group` <= MR rows, group k at out + k MR height as
  // [height][MR] pairs of columns rounded to bfloat16 (odd d: a zero column; height, pairs(d)
  // unless given, zero pairs past d): each row rounded by the vector conversion, then read as
  // pairs.
  static void pack_q(const float* q, std::size_t rows, std::size_t group, std::size_t d, Pair* out,
                     std::size_t height = 0) {
    const std::size_t pd = height == 0 ? pairs(d) : height;
    alignas(64) BFloat16 row[C];
    for (std::size_t g = 0; g < rows; g += group) {
      const std::size_t mr = min_of(group, rows - g);
      Pair* packed = out + g / group * MR * pd;
      for (std::size_t r = 0; r < mr; ++r) {
        for (std::size_t c0 = 0; c0 < d; c0 += C) {
          const std::size_t n = round_chunk(q + (g + r) * d, d, c0, row);
          for (std::size_t c2 = 0; 2 * c2 < n; ++c2) {
            Pair word;
            __builtin_memcpy(&word, row + 2 * c2, sizeof word);
            packed[(c0 / 2 + c2) * MR + r] = word;
          }
        }
        for (std::size_t c2 = pairs(d); c2 < pd; ++c2) packed[c2 * MR + r] = 0;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Micro-kernels: as Simd's score_tile and blend_tile, a pair per step
  // ---------------------------------------------------------------------------------------------
  [[gnu::always_inline]] static __m512 dot_pairs(__m512 acc, __m512i a, __m512i b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }

  // S[r][keys of vectors first..first + V) = q_r . K^T for R rows of a packed Q group.
  template <std::size_t R, std::size_t V>
  static void score_tile(const Pair* q, std::size_t pd, const Pair* kt, std::size_t first, float* s,
                         std::size_t s_stride) {
    const Pair* at[V];
#pragma GCC unroll 8
    for (std::size_t x = 0; x < V; ++x)
      at[x] = kt + (first + x) / 2 * NR * pd + (first + x) % 2 * W;
    __m512 acc[R][V];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x) acc[r][x] = _mm512_setzero_ps();
    }
    for (std::size_t c2 = 0; c2 < pd; ++c2) {
      __m512i k[V];
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x) k[x] = _mm512_load_si512(at[x] + c2 * NR);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) {
        const __m512i a = _mm512_set1_epi32(static_cast<int>(q[c2 * MR + r]));
#pragma GCC unroll 8
        for (std::size_t x = 0; x < V; ++x) acc[r][x] = dot_pairs(acc[r][x], a, k[x]);
      }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < V; ++x)
        _mm512_store_ps(s + r * s_stride + (first + x) * W, acc[r][x]);
    }
  }

  template <std::size_t Ss>
  static void score_rows(std::size_t rows, const Pair* q, std::size_t pd, const Pair* kt,
                         std::size_t panels, float* s) {
    S::with_rows(rows, [&](auto r) {
      constexpr std::size_t R = decltype(r)::value, V = S::tile_vectors(R);
      const std::size_t vectors = 2 * panels;
      std::size_t x = 0;
      for (; x + V <= vectors; x += V) score_tile<R, V>(q, pd, kt, x, s, Ss);
      if constexpr (V > 2) {
        for (; x + 2 <= vectors; x += 2) score_tile<R, 2>(q, pd, kt, x, s, Ss);
        if (x < vectors) score_tile<R, 1>(q, pd, kt, x, s, Ss);
      }
    });
  }

  // O[r][0..NV W) = alpha_r O[r] + sum over `pairs` pairs of P[r] V, P[r]'s pair jp at
  // p[r * Ps + jp * Pstep] and V's at v + jp * dp (pairs of keys; the backward's dV and dK sum
  // pairs of query rows the same way). `half_first` / `half_last`: the first pair's first element
  // / the last pair's second lies past what the rows see (its P is 0, and its V, which may hold
  // anything, is masked out: 0 x NaN would be NaN).
  template <std::size_t R, std::size_t NV, std::size_t Ps, std::size_t Pstep>
  static void blend_tile(const Pair* p, const Pair* v, std::size_t dp, std::size_t pairs,
                         bool half_first, bool half_last, const float* alpha, float* o) {
    __m512 acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) {
        acc[r][x] = _mm512_load_ps(o + r * dp + x * W);
        if (alpha != nullptr) acc[r][x] = _mm512_mul_ps(acc[r][x], _mm512_set1_ps(alpha[r]));
      }
    }
    // (always inlined: a call would keep the accumulators in memory, which the TU's size made GCC
    // choose once the backward's instantiations joined it)
    auto step = [&](std::size_t jp, bool masked, __mmask32 keep) __attribute__((always_inline)) {
      __m512i vj[NV];
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) {
        vj[x] = _mm512_load_si512(v + jp * dp + x * W);
        if (masked) vj[x] = _mm512_maskz_mov_epi16(keep, vj[x]);
      }
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) {
        const __m512i a = _mm512_set1_epi32(static_cast<int>(p[r * Ps + jp * Pstep]));
#pragma GCC unroll 8
        for (std::size_t x = 0; x < NV; ++x) acc[r][x] = dot_pairs(acc[r][x], a, vj[x]);
      }
    };
    std::size_t jp = 0;
    if (half_first && pairs > 0) step(jp++, true, 0xAAAAAAAAu);  // each pair's second element
    const std::size_t whole = half_last && pairs > jp ? pairs - 1 : pairs;
    for (; jp < whole; ++jp) step(jp, false, 0);
    if (jp < pairs) step(jp, true, 0x55555555u);  // each pair's first element
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) _mm512_store_ps(o + r * dp + x * W, acc[r][x]);
    }
  }

  template <std::size_t Ps, std::size_t Pstep = 1>
  static void blend_rows(std::size_t rows, const Pair* p, const Pair* v, std::size_t dp,
                         std::size_t pairs, bool half_first, bool half_last, const float* alpha,
                         float* o) {
    S::with_rows(rows, [&](auto r) {
      constexpr std::size_t R = decltype(r)::value, NV = S::tile_vectors(R);
      std::size_t c = 0;
      for (; c + NV * W <= dp; c += NV * W) {
        blend_tile<R, NV, Ps, Pstep>(p, v + c, dp, pairs, half_first, half_last, alpha, o + c);
      }
      if constexpr (NV > 2) {
        for (; c + S::NR <= dp; c += S::NR)
          blend_tile<R, 2, Ps, Pstep>(p, v + c, dp, pairs, half_first, half_last, alpha, o + c);
      }
      if (c < dp)
        blend_tile<R, 1, Ps, Pstep>(p, v + c, dp, pairs, half_first, half_last, alpha, o + c);
    });
  }

  // O = O * alpha + P V over `pairs` pairs of keys that all mr rows see (pairs 0: rescale only).
  template <std::size_t Ps>
  static void blend_shared(std::size_t mr, const Pair* p, const Pair* v, std::size_t dp,
                           std::size_t pairs, const float* alpha, float* o) {
    blend_rows<Ps>(mr, p, v, dp, pairs, false, false, alpha, o);
  }

  // O = O * alpha + P V for the group: every row over the whole pairs of keys they all see
  // (blend_shared), and each row's head and tail alone (no row multiplies a V it does not see: a
  // pair half outside a row's keys has that half masked); per row the same pairs in increasing
  // order whatever the group (a head before the shared pairs comes after a pass that only
  // rescales).
  template <std::size_t Ps, class Keys>
  static void blend_group(std::size_t mr, const Keys& keys, const Pair* p, const Pair* v,
                          std::size_t dp, const float* alpha, float* o) {
    const std::size_t c0 = (keys.common_begin + 1) / 2, c1 = keys.common_end / 2;
    const bool shared = keys.shared() && c0 < c1;
    bool heads = !shared;
    for (std::size_t r = 0; r < mr && !heads; ++r) heads = keys.begin[r] / 2 < c0;
    if (heads && alpha != nullptr) {  // rescale only
      K::template blend_shared<Ps>(mr, p, v, dp, 0, alpha, o);
      alpha = nullptr;
    }
    for (std::size_t r = 0; heads && r < mr; ++r) {
      if (keys.begin[r] >= keys.end[r]) continue;
      const std::size_t first = keys.begin[r] / 2, last = shared ? c0 : (keys.end[r] + 1) / 2;
      if (first < last) {
        blend_rows<Ps>(1, p + r * Ps + first, v + first * dp, dp, last - first,
                       keys.begin[r] % 2 != 0, !shared && keys.end[r] % 2 != 0, nullptr,
                       o + r * dp);
      }
    }
    if (!shared) return;
    K::template blend_shared<Ps>(mr, p + c0, v + c0 * dp, dp, c1 - c0, alpha, o);
    for (std::size_t r = 0; r < mr; ++r) {
      const std::size_t last = (keys.end[r] + 1) / 2;
      if (last > c1) {
        blend_rows<Ps>(1, p + r * Ps + c1, v + c1 * dp, dp, last - c1, false, keys.end[r] % 2 != 0,
                       nullptr, o + r * dp);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The forward: rows `rows` against keys `keys` (keys.begin a multiple of the key block), as
  // TiledSimd::compute without its decode and L3 paths: query blocks of Simd::query_block rows,
  // key blocks of Simd::key_block keys, group after group over each block. A variant with only
  // some `Phases` skips the others' work, its tiles starting zeroed (the cost model times it).
  // ---------------------------------------------------------------------------------------------
  template <unsigned Phases = kAllPhases>
  static void compute(const HeadProblem& head, RowRange rows, KeyRange keys,
                      const PartialRows* partial, Workspace& ws) {
    const std::size_t d = head.head_dim;
    const std::size_t dp = S::padded_dim(d), ph = K::panel_height(d);
    const std::size_t Bc = S::key_block(dp);
    const std::size_t Br = min_of(S::query_block(dp), rows.end - rows.begin);
    constexpr std::size_t Ss = S::kTileStride;  // score tile row stride (floats)
    constexpr std::size_t Ps = Ss / 2;          // weight row stride (pairs)
    constexpr std::size_t G = K::kGroup;
    float* s_tile = ws.take<float>(G * Ss);
    Pair* p_tile = ws.take<Pair>(G * Ps);
    float* o_acc = ws.take<float>((Br + K::kSpareRows) * dp);
    float* m = ws.take<float>(Br);
    float* l = ws.take<float>(Br);
    float* alpha = ws.take<float>(G);
    Pair* q_packed = ws.take<Pair>(round_up(Br, G) * ph);
    if constexpr (Phases != kAllPhases) {
      for (std::size_t x = 0; x < G * Ss; ++x) s_tile[x] = 0.0f;
      for (std::size_t x = 0; x < G * Ps; ++x) p_tile[x] = 0;
    }
    [[maybe_unused]] const auto tiles = K::enter_tiles();
    const Pair* kt = static_cast<const Pair*>(head.kv_packed);
    const Pair* v = packed_v(kt, head.kv_capacity, d);

    for (std::size_t i0 = rows.begin; i0 < rows.end; i0 += Br) {
      const std::size_t br = min_of(Br, rows.end - i0);
      const std::size_t group = K::group_rows(br);
      for (std::size_t r = 0; r < br; ++r) {
        m[r] = kMinusInf;
        l[r] = 0.0f;
      }
      for (std::size_t x = 0; x < br * dp; ++x) o_acc[x] = 0.0f;
      K::pack_q(head.q + i0 * d, br, group, d, q_packed, ph);
      // Key blocks no row sees (past the causal diagonal, before a window) are skipped.
      const KeySpan block_keys = head.visible_rows(i0, br);
      const std::size_t last_key = min_of(block_keys.end, keys.end);
      for (std::size_t j0 = on_grid(keys.begin, block_keys.begin, Bc); j0 < last_key; j0 += Bc) {
        const std::size_t bc = min_of(Bc, last_key - j0);
        for (std::size_t g = 0; g < br; g += group) {
          const std::size_t mr = min_of(group, br - g);
          const auto seen = S::template block_keys<G>(head, i0 + g, mr, j0, bc);
          if (!seen.any()) continue;
          const std::size_t p0 = seen.first / NR * NR;  // the first key's panel
          if constexpr ((Phases & kScorePhase) != 0) {
            K::template score_rows<Ss>(mr, q_packed + g / group * G * ph, ph, kt + (j0 + p0) * ph,
                                       (seen.widest - p0 + NR - 1) / NR, s_tile + p0);
          }
          bool rescale = false;
          for (std::size_t r = 0; r < mr && (Phases & kSoftmaxPhase) != 0; ++r) {
            // the float32 kernel's online softmax
            float* s_r = s_tile + r * Ss;
            float scale = head.scale;
            if (head.only_drops_keys()) {  // the sweeps scale what it leaves
              S::drop_removed(s_r, seen.begin[r], seen.end[r],
                              head.tensor.keep + head.tensor_row(i0 + g + r) + j0);
            } else if (head.modifies_scores()) {  // modified in place: the sweeps' scale 1
              const std::size_t i = i0 + g + r;
              const std::size_t at = head.tensor_row(i) + j0;  // the block's first key
              S::modify_scores(s_r, seen.begin[r], seen.end[r], head.scale, head.softcap,
                               head.alibi_slope(i), double(j0) - double(head.diagonal(i)),
                               head.tensor.keep ? head.tensor.keep + at : nullptr,
                               head.tensor.bias ? head.tensor.bias + at : nullptr);
              scale = 1.0f;
            }
            const float block_max = S::scale_and_max(s_r, seen.begin[r], seen.end[r], scale);
            const float m_old = m[g + r];
            const float m_new = block_max > m_old ? block_max : m_old;
            const float m_ref = max_reference(m_new);
            alpha[r] = 1.0f;
            if (m_new != m_old) {
              alpha[r] = scalar_exp(m_old - m_ref);
              rescale = true;
              m[g + r] = m_new;
            }
            // P = exp(scale S - m) rounded to bfloat16 pairs as it is stored (zero past the
            // row's keys to the end of their vector: an odd row's last pair is (P, 0))
            auto* p_row = reinterpret_cast<std::uint16_t*>(p_tile + r * Ps);
            const auto round = [p_row](typename S::batch p, std::size_t j) {
              const __m256bh b = _mm512_cvtneps_pbh(static_cast<__m512>(p));
              _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_row + j),
                                  reinterpret_cast<__m256i>(b));
            };
            l[g + r] =
                S::mul_add(l[g + r], alpha[r],
                           S::exp_and_sum(s_r, seen.begin[r], seen.end[r], scale, m_ref, round));
          }
          if constexpr ((Phases & kBlendPhase) != 0) {
            blend_group<Ps>(mr, seen, p_tile, v + j0 / 2 * dp, dp, rescale ? alpha : nullptr,
                            o_acc + g * dp);
          }
        }
      }
      S::finish_rows(head, i0, br, o_acc, dp, m, l, partial, rows.begin);
    }
  }

  static void rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
    compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
  }
  template <unsigned Phase>
  static void phase_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
    compute<Phase>(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
  }
  static void partial_rows(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                           Workspace& ws) {
    compute(head, rows, keys, &out, ws);
  }
  static std::size_t query_block(std::size_t head_dim) {
    return S::query_block(S::padded_dim(head_dim));
  }
  static ForwardBlocking blocking(std::size_t head_dim) {
    const std::size_t dp = S::padded_dim(head_dim);
    return {.query_block = S::query_block(dp),
            .key_block = S::key_block(dp),
            .mr = K::kGroup,
            .nr = NR,
            .padded_dim = dp};
  }
};

}  // namespace
}  // namespace attnbench::kernels
