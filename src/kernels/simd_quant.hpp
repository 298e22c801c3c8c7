// The block-quantised K/V types (storage.hpp's Q8_0, Q4_0) in the SIMD kernels' packed layout:
// packing (ggml's reference quantisation, once per appended key) and the dequantisation of one key
// block to the float32 layout the micro-kernels read. Written once over the xsimd architecture
// `Arch`, with the ISA's integer-to-float conversions (scalar lanes on SSE4.2).
// Internal linkage, as simd_common.hpp says why.
#pragma once

#include <cstring>

#include "kernels/simd_common.hpp"

namespace attnbench::kernels {
namespace {

// NOTE: a packed head is, like the float layout, K^T in panels of NR keys and then V by rows, with
// every row of d values cut into blocks of 32 (ggml's; the last block padded with zero values):
// - panel of NR keys: per block, the NR keys' float16 scales, then the block's code bytes in
//   groups of 4: code bytes 4g..4g+3 of key 0, of key 1, ... of key NR - 1, then group g + 1 (the
//   layout of vpdpbusd's operand: a 32-bit lane per key, 4 consecutive codes in it; Q4_0's byte
//   holds element i in its low nibble and i + 16 in its high one, as ggml's);
// - V row of one key: per block, its scale, then its code bytes (ggml's block as it is).
// So K and V each take row_bytes(d) per key (34 or 18 bytes per 32 values), and a key block
// starts at j0 x row_bytes(d) in both.
template <class Arch, class Q>
struct QuantPacking {
  using S = Simd<Arch>;
  static constexpr std::size_t NR = S::NR;
  static constexpr std::size_t kBlockBytes = kQuantBlockBytes<Q>;

  static std::size_t blocks(std::size_t d) { return (d + kQuantBlock - 1) / kQuantBlock; }
  static std::size_t row_bytes(std::size_t d) { return blocks(d) * kBlockBytes; }
  static std::size_t packed_bytes(std::size_t capacity, std::size_t d) {
    return (S::padded_keys(capacity) + capacity) * row_bytes(d);
  }
  // The K^T panels from key j0 (a multiple of NR), and V's rows from key j0.
  static const std::uint8_t* panels(const void* packed, std::size_t j0, std::size_t d) {
    return static_cast<const std::uint8_t*>(packed) + j0 * row_bytes(d);
  }
  static const std::uint8_t* v_rows(const void* packed, std::size_t capacity, std::size_t j0,
                                    std::size_t d) {
    return static_cast<const std::uint8_t*>(packed) +
           (S::padded_keys(capacity) + j0) * row_bytes(d);
  }

  // As Simd::pack: keys [first, last) of a head laid out for `capacity` keys, the last panel's
  // keys past the capacity zero once `last` reaches it; disjoint ranges write disjoint bytes.
  static void pack(const float* k, const float* v, std::size_t capacity, std::size_t d,
                   std::size_t first, std::size_t last, void* out) {
    auto* packed = static_cast<std::uint8_t*>(out);
    const std::size_t nb = blocks(d), row = row_bytes(d);
    const std::size_t panels_end = last == capacity ? S::padded_keys(capacity) : last;
    for (std::size_t j = first; j < panels_end; ++j) {
      std::uint8_t* panel = packed + j / NR * NR * row;
      const std::size_t key = j % NR;
      for (std::size_t b = 0; b < nb; ++b) {
        std::uint16_t scale;
        std::uint8_t codes[Q::kCodeBytes];
        quantize_block<Q>(j < last ? k + (j - first) * d : nullptr, d, b, scale, codes);
        std::uint8_t* block = panel + b * NR * kBlockBytes;
        std::memcpy(block + key * sizeof scale, &scale, sizeof scale);
        for (std::size_t i = 0; i < Q::kCodeBytes; ++i)
          block[2 * NR + (i / 4 * NR + key) * 4 + i % 4] = codes[i];
      }
    }
    std::uint8_t* pv = packed + S::padded_keys(capacity) * row;
    for (std::size_t j = first; j < last; ++j) {
      for (std::size_t b = 0; b < nb; ++b) {
        std::uint8_t* block = pv + j * row + b * kBlockBytes;
        std::uint16_t scale;
        quantize_block<Q>(v + (j - first) * d, d, b, scale, block + sizeof scale);
        std::memcpy(block, &scale, sizeof scale);
      }
    }
  }

  using batch = typename S::batch;
  static constexpr std::size_t W = S::W;

  // W code bytes as int8 (Q8_0), as float32 lanes.
  static batch int8_lanes(const std::uint8_t* c) {
    if constexpr (W == 16) {
      return batch(_mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)))));
    } else if constexpr (W == 8) {
      return batch(_mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)))));
    } else {
      alignas(16) float lanes[W];
      for (std::size_t i = 0; i < W; ++i)
        lanes[i] = static_cast<float>(static_cast<std::int8_t>(c[i]));
      return batch::load_aligned(lanes);
    }
  }
  // Q4_0's low nibbles of W code bytes less 8, or the high nibbles less 8 times 16, as float32
  // without a conversion: the nibble under the exponent of 2^23 (0x4B000000) is the float 2^23 + n
  // (high: 2^23 + 16 n), and less 2^23 + 8 (2^23 + 128) it is exactly n - 8 (16 (n - 8)). A high
  // nibble's factor (its scale, or its weight in the decode blend) is taken a sixteenth, exactly,
  // so each product rounds as (n - 8) x factor does.
  template <bool kHigh>
  static batch nibble_values(const std::uint8_t* c) {
    constexpr int kMask = kHigh ? 0xF0 : 0x0F;
    const batch less(kHigh ? 8388736.0f : 8388616.0f);
    if constexpr (W == 16) {
      const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
      const __m512i f = _mm512_ternarylogic_epi32(x, _mm512_set1_epi32(kMask),
                                                  _mm512_set1_epi32(0x4B000000), 0xEA);  // A&B | C
      return batch(_mm512_castsi512_ps(f)) - less;
    } else if constexpr (W == 8) {
      const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)));
      const __m256i f = _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi32(kMask)),
                                        _mm256_set1_epi32(0x4B000000));
      return batch(_mm256_castsi256_ps(f)) - less;
    } else {
      alignas(16) float lanes[W];
      for (std::size_t i = 0; i < W; ++i)
        lanes[i] = static_cast<float>(int(c[i] & kMask)) - (kHigh ? 128.0f : 8.0f);
      return batch::load_aligned(lanes);
    }
  }

  // One block's codes with scale d to its 32 float32 values at out, element i at out[i].
  static void values(float d, const std::uint8_t* codes, float* out) {
    const batch scale(d);
    for (std::size_t x = 0; x < kQuantBlock / W; ++x) {
      if constexpr (std::is_same_v<Q, Q8_0>) {
        (int8_lanes(codes + x * W) * scale).store_unaligned(out + x * W);
      } else if (x * W < Q::kCodeBytes) {
        (nibble_values<false>(codes + x * W) * scale).store_unaligned(out + x * W);
      } else {  // 16 (n - 8) times a sixteenth of the scale: the same exact product
        (nibble_values<true>(codes + x * W - Q::kCodeBytes) * (scale * batch(0.0625f)))
            .store_unaligned(out + x * W);
      }
    }
  }

  using ibatch = typename S::ibatch;
  // W keys' 32-bit lanes of one group of 4 code bytes (an unaligned load).
  static ibatch group_lanes(const std::uint8_t* p) {
    return ibatch::load_unaligned(reinterpret_cast<const std::int32_t*>(p));
  }
  // Code byte t of each lane as int8 (Q8_0), or its low / high nibble less 8 (Q4_0), as float32.
  template <std::size_t t, bool kHigh = false>
  static batch lane_values(ibatch lanes) {
    if constexpr (std::is_same_v<Q, Q8_0>) {
      return xsimd::to_float((lanes << int(24 - 8 * t)) >> 24);
    } else {
      return xsimd::to_float(((lanes >> int(8 * t + (kHigh ? 4 : 0))) & ibatch(15)) - ibatch(8));
    }
  }

  // `count` panels from `src` dequantised to the float32 panels [d][NR] at out.
  static void widen_panels(const std::uint8_t* src, std::size_t count, std::size_t d, float* out) {
    constexpr std::size_t V = NR / W;  // vectors a panel row
    const std::size_t nb = blocks(d), row = row_bytes(d);
    for (std::size_t p = 0; p < count; ++p) {
      const std::uint8_t* panel = src + p * NR * row;
      float* o = out + p * NR * d;
      for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* block = panel + b * NR * kBlockBytes;
        batch scale[V];
        for (std::size_t x = 0; x < V; ++x)
          scale[x] = S::load_kv(reinterpret_cast<const Half*>(block) + x * W);
        const std::uint8_t* codes = block + 2 * NR;
        const std::size_t c0 = b * kQuantBlock, rows = min_of(kQuantBlock, d - c0);
        // Element i of the NR keys to row c0 + i, for the rows within d.
        auto put = [&](std::size_t i, std::size_t x, batch values) {
          if (i < rows) (values * scale[x]).store_unaligned(o + (c0 + i) * NR + x * W);
        };
        for (std::size_t g = 0; g < Q::kCodeBytes / 4; ++g) {
          for (std::size_t x = 0; x < V; ++x) {
            const ibatch lanes = group_lanes(codes + (g * NR + x * W) * 4);
            put(4 * g, x, lane_values<0>(lanes));
            put(4 * g + 1, x, lane_values<1>(lanes));
            put(4 * g + 2, x, lane_values<2>(lanes));
            put(4 * g + 3, x, lane_values<3>(lanes));
            if constexpr (std::is_same_v<Q, Q4_0>) {
              put(16 + 4 * g, x, lane_values<0, true>(lanes));
              put(16 + 4 * g + 1, x, lane_values<1, true>(lanes));
              put(16 + 4 * g + 2, x, lane_values<2, true>(lanes));
              put(16 + 4 * g + 3, x, lane_values<3, true>(lanes));
            }
          }
        }
      }
    }
  }

  // NOTE: with Options::quantise_query, Q K^T on AVX-512 VNNI is integer dot products, as ggml's
  // q8_0 x q8_0: vpdpbusd multiplies 4 unsigned bytes by 4 signed ones and adds the 4 products to
  // a 32-bit lane, 64 products an instruction against an FMA's 16. K's codes go unsigned by an
  // offset (Q8_0: + 128, the sign bit flipped; Q4_0: its nibbles, code + 8 already), which adds
  // offset x (sum of the query's codes) to each dot product: the lane starts at minus that. A
  // block's integer dot product is exact (at most 32 x 255 x 127 < 2^24, so its conversion is
  // too); it is scaled by the key's scale times the query block's (two float16 values: exact) and
  // added to the score, one rounding per block where float32 FMAs round 32 times.
  static bool integer_dot() {
    if constexpr (W != 16) {
      return false;
    } else {
      static const bool available =
          __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
      return available;
    }
  }
  static constexpr int kCodeOffset = std::is_same_v<Q, Q8_0> ? 128 : 8;
  // Registers: rows x vectors integer and float accumulators, each vector's codes (Q4_0: both
  // nibbles) and scale.
  static constexpr std::size_t int_vectors(std::size_t rows) {
    constexpr std::size_t code_registers = std::is_same_v<Q, Q4_0> ? 2 : 1;
    for (std::size_t v : {4, 2})
      if (2 * rows * v + (code_registers + 1) * v + 1 <= S::kRegisters) return v;
    return 1;
  }

  // S[r][keys of vectors first..first + V) = q_r . K^T for R query rows given as q8_0 blocks
  // (codes `qc`, scales `qs`, code sums `qsum`; row r's at r x nb blocks), the panels at kt.
  template <std::size_t R, std::size_t V>
  __attribute__((target("avx512f,avx512bw,avx512vnni"))) static void score_tile_int8(
      const std::int8_t* qc, const float* qs, const std::int32_t* qsum, std::size_t d,
      const std::uint8_t* kt, std::size_t first, float* s, std::size_t s_stride) {
    const std::size_t nb = blocks(d), row = row_bytes(d);
    const std::uint8_t* at[V];
    std::size_t half[V];
    for (std::size_t x = 0; x < V; ++x) {
      at[x] = kt + (first + x) / 2 * NR * row;
      half[x] = (first + x) % 2 * 16;
    }
    __m512 f[R][V];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t x = 0; x < V; ++x) f[r][x] = _mm512_setzero_ps();
    const __m512i low_nibbles = _mm512_set1_epi8(15), sign = _mm512_set1_epi8(char(0x80));
    for (std::size_t b = 0; b < nb; ++b) {
      __m512i acc[R][V];
      for (std::size_t r = 0; r < R; ++r) {
        const __m512i start = _mm512_set1_epi32(-kCodeOffset * qsum[r * nb + b]);
        for (std::size_t x = 0; x < V; ++x) acc[r][x] = start;
      }
      const std::int8_t* q_block = qc + b * kQuantBlock;
      auto word = [&](std::size_t r, std::size_t w) {  // query codes 4w..4w+3 of row r
        std::int32_t v;
        std::memcpy(&v, q_block + r * nb * kQuantBlock + 4 * w, sizeof v);
        return _mm512_set1_epi32(v);
      };
      for (std::size_t g = 0; g < Q::kCodeBytes / 4; ++g) {
        for (std::size_t x = 0; x < V; ++x) {
          const std::uint8_t* from = at[x] + b * NR * kBlockBytes + 2 * NR + (g * NR + half[x]) * 4;
          if (R <= S::kStreamingRows)
            S::prefetch_l2(from + (V + 1) / 2 * NR * row);  // as score_tile
          const __m512i k = _mm512_loadu_si512(from);
          if constexpr (std::is_same_v<Q, Q8_0>) {
            const __m512i ku = _mm512_xor_si512(k, sign);
            for (std::size_t r = 0; r < R; ++r)
              acc[r][x] = _mm512_dpbusd_epi32(acc[r][x], ku, word(r, g));
          } else {
            const __m512i lo = _mm512_and_si512(k, low_nibbles);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(k, 4), low_nibbles);
            for (std::size_t r = 0; r < R; ++r) {
              acc[r][x] = _mm512_dpbusd_epi32(acc[r][x], lo, word(r, g));
              acc[r][x] = _mm512_dpbusd_epi32(acc[r][x], hi, word(r, 4 + g));
            }
          }
        }
      }
      for (std::size_t x = 0; x < V; ++x) {
        const __m512 scale = _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(at[x] + b * NR * kBlockBytes + half[x] * 2)));
        for (std::size_t r = 0; r < R; ++r) {
          const __m512 both = _mm512_mul_ps(scale, _mm512_set1_ps(qs[r * nb + b]));
          f[r][x] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][x]), both, f[r][x]);
        }
      }
    }
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t x = 0; x < V; ++x)
        _mm512_store_ps(s + r * s_stride + (first + x) * W, f[r][x]);
  }

  // The rows' scores against `panels` panels at kt on integer dot products (integer_dot()), the
  // rows' q8_0 blocks as score_tile_int8 takes them.
  static void score_rows_int8(std::size_t rows, const std::int8_t* qc, const float* qs,
                              const std::int32_t* qsum, std::size_t d, const std::uint8_t* kt,
                              std::size_t panels, float* s, std::size_t s_stride) {
    if constexpr (W == 16) {
      S::with_rows(rows, [&](auto r) {
        constexpr std::size_t R = decltype(r)::value, V = int_vectors(R);
        const std::size_t vectors = 2 * panels;
        std::size_t x = 0;
        for (; x + V <= vectors; x += V) score_tile_int8<R, V>(qc, qs, qsum, d, kt, x, s, s_stride);
        if constexpr (V > 2) {
          for (; x + 2 <= vectors; x += 2)
            score_tile_int8<R, 2>(qc, qs, qsum, d, kt, x, s, s_stride);
        }
        if constexpr (V > 1) {
          if (x < vectors) score_tile_int8<R, 1>(qc, qs, qsum, d, kt, x, s, s_stride);
        }
      });
    }
  }

  // NOTE: decoding blends V as stored (tiled_simd.hpp's quant_few): each key's block scale is
  // folded into its P weight, w = P[r][j] x scale[j][b], and each vector of codes becomes float32
  // once (sign extension and conversion; Q4_0: nibble_values) for the group's R FMAs,
  // O[r][c] += w x code. Widening first (widen_rows) also multiplied every value by its scale and
  // stored and reloaded it: for a one-row decode that was 2 vector instructions and a store more
  // per FMA (docs/studies/2026-12-07-fused-quantised-blend.md). The weights of a run of at most
  // kBlendKeys keys: w[(b x R + r) x kWeightStride + j], a compile-time stride, so that the tile
  // reaches every row's and block's weight from one pointer (as Simd::kTileStride); the scales
  // first gathered from the rows, block by block, for whole-vector conversions.
  static constexpr std::size_t kWeightStride = S::kBlendKeys + 16;
  // Q4_0's high nibbles take their weights a sixteenth (nibble_values), after the others.
  static constexpr std::size_t kWeightHalves = std::is_same_v<Q, Q4_0> ? 2 : 1;
  static std::size_t high_weights(std::size_t rows, std::size_t d) {  // where those start
    return blocks(d) * rows * kWeightStride;
  }
  static std::size_t weight_floats(std::size_t rows, std::size_t d) {
    return kWeightHalves * high_weights(rows, d);
  }
  // The raw float16 scales of V rows [0, keys) at src: out[b x kWeightStride + j], zero from keys
  // to the next whole vector.
  static void gather_scales(const std::uint8_t* src, std::size_t keys, std::size_t d,
                            std::uint16_t* out) {
    const std::size_t nb = blocks(d), row = row_bytes(d);
    for (std::size_t b = 0; b < nb; ++b) {
      std::uint16_t* to = out + b * kWeightStride;
      for (std::size_t j = 0; j < keys; ++j)
        std::memcpy(to + j, src + j * row + b * kBlockBytes, 2);
      for (std::size_t j = keys; j < round_up(keys, W); ++j) to[j] = 0;
    }
  }
  // The weights of `rows` rows of P (row r at p + r x p_stride, `keys` of them read, up to the
  // next whole vector) against the gathered scales.
  static void weights(std::size_t rows, const float* p, std::size_t p_stride,
                      const std::uint16_t* scales, std::size_t keys, std::size_t d, float* w) {
    const std::size_t nb = blocks(d), high = high_weights(rows, d);
    for (std::size_t b = 0; b < nb; ++b) {
      for (std::size_t j = 0; j < keys; j += W) {
        const batch scale =
            S::load_kv(reinterpret_cast<const Half*>(scales + b * kWeightStride + j));
        for (std::size_t r = 0; r < rows; ++r) {
          const batch wr = batch::load_unaligned(p + r * p_stride + j) * scale;
          wr.store_unaligned(w + (b * rows + r) * kWeightStride + j);
          if constexpr (kWeightHalves == 2)
            (wr * batch(0.0625f)).store_unaligned(w + high + (b * rows + r) * kWeightStride + j);
        }
      }
    }
  }

  // Vectors a blend tile of R rows takes: a power of two (so tiles fall on the blocks alike), its
  // accumulators and 2 code vectors in the ISA's registers, at most 16 chains.
  static constexpr std::size_t blend_vectors(std::size_t rows) {
    for (std::size_t v : {8, 4, 2})
      if (rows * v <= 16 && rows * v + 3 <= S::kRegisters) return v;
    return 1;
  }
  // W values of a vector `Off` columns into a block of codes at c, as float32 (scale not applied;
  // Q4_0's high nibbles 16 times theirs).
  template <std::size_t Off>
  static batch code_lanes(const std::uint8_t* c) {
    if constexpr (std::is_same_v<Q, Q8_0>) {
      return int8_lanes(c + Off);
    } else {
      return nibble_values<(Off >= 16)>(c + Off % 16);
    }
  }
  // O[r][c0 .. c0 + NV W) = alpha_r O[r] + sum_j w[r][j] x V[j] for R rows, the rows' weights
  // at w (weights' layout), V's rows at src (row bytes apart), c0 % 32 == Off; prefetching the
  // codes kBlendKeys keys ahead if `prefetch`. A row's FMAs run key by key in order, whatever R.
  template <std::size_t R, std::size_t NV, std::size_t Off>
  static void blend_tile_codes(const float* w, const std::uint8_t* src, std::size_t row,
                               std::size_t keys, std::size_t c0, std::size_t high_offset,
                               const float* alpha, float* o, std::size_t o_stride, bool prefetch) {
    batch acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) {
        acc[r][x] = batch::load_aligned(o + r * o_stride + c0 + x * W);
        if (alpha != nullptr) acc[r][x] *= batch(alpha[r]);  // O = O * exp(m_old - m_new)
      }
    }
    const std::size_t b0 = c0 / kQuantBlock;
    const std::uint8_t* codes = src + b0 * kBlockBytes + 2;  // the first block's codes
    const float* wb = w + b0 * R * kWeightStride;
    const float* wb_high = wb + high_offset;  // Q4_0's high nibbles' weights
    // column Off + x W of the tile: block (Off + x W) / 32, column (Off + x W) % 32 in it
    auto block_of = [](std::size_t x) { return (Off + x * W) / kQuantBlock; };
    for (std::size_t j = 0; j < keys; ++j) {
      const std::uint8_t* cj = codes + j * row;
      if (prefetch) {
#pragma GCC unroll 8
        for (std::size_t x = 0; x < NV; ++x) {
          if ((Off + x * W) % kQuantBlock == 0 || x == 0)
            S::prefetch_l2(cj + S::kBlendKeys * row + block_of(x) * kBlockBytes);
        }
      }
      batch vals[NV];
      [&]<std::size_t... X>(std::index_sequence<X...>) {
        ((vals[X] = code_lanes<(Off + X * W) % kQuantBlock>(cj + block_of(X) * kBlockBytes)), ...);
      }
      (std::make_index_sequence<NV>{});
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
        for (std::size_t x = 0; x < NV; ++x) {
          const bool high = kWeightHalves == 2 && (Off + x * W) % kQuantBlock >= 16;
          const batch a((high ? wb_high : wb)[(block_of(x) * R + r) * kWeightStride + j]);
          acc[r][x] = xsimd::fma(a, vals[x], acc[r][x]);  // O += P V
        }
      }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (std::size_t x = 0; x < NV; ++x) acc[r][x].store_aligned(o + r * o_stride + c0 + x * W);
    }
  }

  // f(integral_constant<Off>) for the column offset c0 % 32 (a multiple of W).
  template <class F, std::size_t... K>
  static void with_offset(std::size_t off, F&& f, std::index_sequence<K...>) {
    ((off == K * W ? (f(std::integral_constant<std::size_t, K * W>{}), 0) : 0), ...);
  }
  // O[rows][0 .. dp) (+)= P V over the run of `keys` V rows at src, for 1..MR rows, their
  // weights at w (weights()); alpha null: no rescale.
  static void blend_rows_codes(std::size_t rows, const float* w, const std::uint8_t* src,
                               std::size_t keys, std::size_t d, std::size_t dp, const float* alpha,
                               float* o, bool prefetch) {
    const std::size_t row = row_bytes(d), high_offset = high_weights(rows, d);
    S::with_rows(rows, [&](auto r) {
      constexpr std::size_t R = decltype(r)::value, NV = blend_vectors(R);
      auto tile = [&](auto nv, std::size_t c0) {
        with_offset(
            c0 % kQuantBlock,
            [&](auto off) {
              blend_tile_codes<R, decltype(nv)::value, decltype(off)::value>(
                  w, src, row, keys, c0, high_offset, alpha, o, dp, prefetch);
            },
            std::make_index_sequence<kQuantBlock / W>{});
      };
      std::size_t c0 = 0;
      for (; c0 + NV * W <= dp; c0 += NV * W) tile(std::integral_constant<std::size_t, NV>{}, c0);
      for (; c0 < dp; c0 += W) tile(std::integral_constant<std::size_t, 1>{}, c0);
    });
  }

  // V rows of `count` keys from `src` dequantised to float32 rows of dp floats at out (dp, the
  // padded head dim, at most the blocks' 32 nb values: the columns past d come out zero).
  static void widen_rows(const std::uint8_t* src, std::size_t count, std::size_t d, std::size_t dp,
                         float* out) {
    const std::size_t nb = blocks(d), row = row_bytes(d);
    for (std::size_t j = 0; j < count; ++j) {
      for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* block = src + j * row + b * kBlockBytes;
        std::uint16_t h;
        std::memcpy(&h, block, sizeof h);
#if defined(__F16C__)
        const float scale = _cvtsh_ss(h);  // exact, as half_value
#else
        const float scale = half_value(h);
#endif
        const std::size_t c0 = b * kQuantBlock;
        float* to = out + j * dp + c0;
        if (c0 + kQuantBlock <= dp) {
          values(scale, block + 2, to);
        } else {
          alignas(64) float all[kQuantBlock];
          values(scale, block + 2, all);
          for (std::size_t c = 0; c < dp - c0; ++c) to[c] = all[c];
        }
      }
    }
  }
};

}  // namespace
}  // namespace attnbench::kernels
