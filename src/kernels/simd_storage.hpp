// The K/V storage conversions the SIMD kernels share, written once over the xsimd architecture
// `Arch` (the base of simd_common.hpp's Simd<Arch>): float32 rounded to a storage type where K/V
// enter the packed layout, and stored vectors widened back to float32 where a micro-kernel loads
// them. Internal linkage, as simd_common.hpp says why.
#pragma once

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>

#include "kernels/storage.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch>
struct SimdStorage {
  using batch = xsimd::batch<float, Arch>;
  using ibatch = xsimd::batch<std::int32_t, Arch>;
  static constexpr std::size_t W = batch::size;  // float lanes per vector

  // n floats rounded to T (float: copied): F16C's vcvtps2ph (its AVX-512 form on AVX-512) for
  // float16, round to nearest even on the integer bits for bfloat16, the scalar conversion for
  // the tail and on SSE4.2's float16; bit for bit the scalar conversion (tested).
  static constexpr std::size_t kRoundChunk = 64;
  static void round_array(const float* in, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
  }
  static void round_array(const float* in, Half* out, std::size_t n) {
    std::size_t i = 0;
    if constexpr (W == 16) {
      for (; i + W <= n; i += W) {
        const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
      }
    } else if constexpr (W == 8) {
      for (; i + W <= n; i += W) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
      }
    }
    for (; i < n; ++i) out[i] = stored<Half>(in[i]);
  }
  static void round_array(const float* in, BFloat16* out, std::size_t n) {
    std::size_t i = 0;
    if constexpr (W >= 8) {
      for (; i + W <= n; i += W) {  // storage.hpp's bfloat16_bits, a lane each
        const ibatch u = xsimd::bitwise_cast<ibatch>(batch::load_unaligned(in + i));
        const ibatch low16(0xFFFF);
        const ibatch high = (u >> 16) & low16;  // an arithmetic shift: keep the low 16 bits
        const ibatch rounded = ((u + ibatch(0x7FFF) + (high & ibatch(1))) >> 16) & low16;
        const auto nan = (u & ibatch(0x7FFFFFFF)) > ibatch(0x7F800000);
        store_16_bits(xsimd::select(nan, high | ibatch(0x40), rounded), out + i);
      }
    }
    for (; i < n; ++i) out[i] = stored<BFloat16>(in[i]);
  }
  // The low 16 bits of each lane (each lane < 2^16) to out[0..W).
  static void store_16_bits(ibatch x, BFloat16* out) {
    if constexpr (W == 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(x));
    } else if constexpr (W == 8) {  // pack within lanes, then gather the two lanes' low halves
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(x, x), 0b1000);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
    }
  }
  // n floats rounded to T through round_array: how tests reach it.
  template <class T>
  static void narrow_array(const float* in, std::uint16_t* out, std::size_t n) {
    round_array(in, reinterpret_cast<T*>(out), n);
  }

  // n stored values (n a multiple of W) widened to float32 in `out` (aligned).
  template <class T>
  static void widen_block(const T* in, std::size_t n, float* out) {
    for (std::size_t i = 0; i < n; i += W) load_kv(in + i).store_aligned(out + i);
  }

  // One vector of W stored values, widened to float32: an aligned load for float; for the 16-bit
  // types (vectors only half-vector aligned) vcvtph2ps (F16C on AVX2, its AVX-512 form) or a
  // zero extension and a 16-bit shift for bfloat16. SSE4.2 has no F16C: its halves go through
  // the scalar conversion.
  static batch load_kv(const float* p) { return batch::load_aligned(p); }
  static batch load_kv(const Half* p) {
    if constexpr (W == 16) {
      return batch(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
    } else if constexpr (W == 8) {
      return batch(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    } else {
      alignas(64) float lanes[W];
      for (std::size_t i = 0; i < W; ++i) lanes[i] = value_of(p[i]);
      return batch::load_aligned(lanes);
    }
  }
  static batch load_kv(const BFloat16* p) {
    if constexpr (W == 16) {
      const __m512i wide =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      return batch(_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
    } else if constexpr (W == 8) {
      const __m256i wide =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      return batch(_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
    } else {
      const __m128i wide = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
      return batch(_mm_castsi128_ps(_mm_slli_epi32(wide, 16)));
    }
  }
  // n stored values widened through load_kv (n a multiple of W): how tests reach it.
  template <class T>
  static void widen_array(const std::uint16_t* in, float* out, std::size_t n) {
    for (std::size_t i = 0; i < n; i += W)
      load_kv(reinterpret_cast<const T*>(in + i)).store_unaligned(out + i);
  }
};

}  // namespace
}  // namespace attnbench::kernels
