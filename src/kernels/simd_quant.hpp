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
// - panel of NR keys: per block, the NR keys' float16 scales, then the block's code bytes as rows
//   of NR (code byte i of every key, key after key: one load of NR bytes feeds a vector per key
//   row of the product);
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
        for (std::size_t i = 0; i < Q::kCodeBytes; ++i) block[2 * NR + i * NR + key] = codes[i];
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

  // W code bytes as int8 (Q8_0), or the low / high nibbles of W code bytes less 8 (Q4_0), as
  // float32 lanes.
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
  template <bool kHigh>
  static batch nibble_lanes(const std::uint8_t* c) {
    if constexpr (W == 16) {
      __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
      x = kHigh ? _mm512_srli_epi32(x, 4) : _mm512_and_si512(x, _mm512_set1_epi32(15));
      return batch(_mm512_cvtepi32_ps(_mm512_sub_epi32(x, _mm512_set1_epi32(8))));
    } else if constexpr (W == 8) {
      __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)));
      x = kHigh ? _mm256_srli_epi32(x, 4) : _mm256_and_si256(x, _mm256_set1_epi32(15));
      return batch(_mm256_cvtepi32_ps(_mm256_sub_epi32(x, _mm256_set1_epi32(8))));
    } else {
      alignas(16) float lanes[W];
      for (std::size_t i = 0; i < W; ++i)
        lanes[i] = static_cast<float>(int(kHigh ? c[i] >> 4 : c[i] & 15u) - 8);
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
        (nibble_lanes<false>(codes + x * W) * scale).store_unaligned(out + x * W);
      } else {
        (nibble_lanes<true>(codes + x * W - Q::kCodeBytes) * scale).store_unaligned(out + x * W);
      }
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
        // Code byte i of the NR keys, to the NR values of element i (and, for 4 bits, i + 16).
        if constexpr (std::is_same_v<Q, Q8_0>) {
          for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t x = 0; x < V; ++x)
              (int8_lanes(codes + i * NR + x * W) * scale[x])
                  .store_unaligned(o + (c0 + i) * NR + x * W);
          }
        } else {
          for (std::size_t i = 0; i < Q::kCodeBytes && i < rows; ++i) {
            const std::uint8_t* c = codes + i * NR;
            for (std::size_t x = 0; x < V; ++x)
              (nibble_lanes<false>(c + x * W) * scale[x])
                  .store_unaligned(o + (c0 + i) * NR + x * W);
            if (i + 16 >= rows) continue;
            for (std::size_t x = 0; x < V; ++x)
              (nibble_lanes<true>(c + x * W) * scale[x])
                  .store_unaligned(o + (c0 + i + 16) * NR + x * W);
          }
        }
      }
    }
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
