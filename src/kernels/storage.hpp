// The K/V storage types (KvType) as the kernels see them, and their scalar conversions: the one
// definition of rounding that the public float_to_f16 & co. (kv_types.cpp), every kernel's
// packing and the tests agree with bit for bit. The SIMD kernels widen stored values to float32
// in registers (simd_storage.hpp's load_kv); the arithmetic is float32 throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <attnbench/attnbench.hpp>

namespace attnbench::kernels {

// Internal linkage: included by scalar and per-ISA translation units alike (see common.hpp).
namespace {

// The stored element of each 16-bit type: its bits, as a type of its own so that a kernel
// templated on the element cannot mix them up.
enum class Half : std::uint16_t {};      // IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits
enum class BFloat16 : std::uint16_t {};  // the top half of a float32: 1, 8, 7

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
}

// float32 -> binary16, round to nearest, ties to even, as F16C's vcvtps2ph with rounding mode 0:
// NaN keeps its sign and top 10 payload bits and becomes quiet; |x| >= 65520 (halfway between the
// largest half, 65504, and 65536) becomes an infinity; below 2^-14 the result is subnormal.
inline std::uint16_t half_bits(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // inf, or overflow
  if (a >= 0x38800000u) {  // a normal half: rebias the exponent (127 - 15), round off 13 bits
    const std::uint32_t r = a - 0x38000000u;
    return static_cast<std::uint16_t>(sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
  }
  const std::uint32_t e = a >> 23;
  if (e < 102) return static_cast<std::uint16_t>(sign);  // |x| <= 2^-25: rounds to zero
  // A subnormal half: the value in units of 2^-24 is mant x 2^(e - 126), a right shift by
  // 126 - e (14 to 24 bits), rounded to nearest even.
  const std::uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126 - e;
  std::uint32_t q = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // may carry into the smallest normal
  return static_cast<std::uint16_t>(sign | q);
}

// binary16 -> float32, exact; a NaN comes back quiet (as vcvtph2ps gives it), its payload kept.
inline float half_value(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return float_of(sign | 0x7F800000u | (m ? 0x400000u : 0u) | (m << 13));
  if (e == 0) {  // zero or subnormal: m x 2^-24, exact in float32
    const float magnitude = static_cast<float>(m) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}

// float32 -> bfloat16, round to nearest, ties to even on the low 16 bits; NaN stays NaN (quiet);
// a finite value that rounds past the largest bfloat16 (about 3.39e38) becomes an infinity.
inline std::uint16_t bfloat16_bits(float x) {
  const std::uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// bfloat16 -> float32: the bits shifted into the top half, exact.
inline float bfloat16_value(std::uint16_t b) {
  return float_of(static_cast<std::uint32_t>(b) << 16);
}

// The block-quantised types, as ggml defines them: K and V rows cut into blocks of kQuantBlock
// values along the head dim (the last block padded with zeros), each block one float16 scale d
// and kCodeBytes bytes of codes. Q8_0: 32 int8 codes, x = d code, d = max|x| / 127 (34 bytes per
// 32 values). Q4_0: 32 4-bit codes, x = d (code - 8), d = (the value of largest magnitude) / -8
// (18 bytes per 32); code byte i holds element i in its low nibble and element i + 16 in its high
// one. quantize() is ggml's reference quantisation (quantize_row_q8_0_ref, _q4_0_ref) step for
// step, so a block holds the bytes ggml would write.
inline constexpr std::size_t kQuantBlock = 32;

// The float16 scale of a block is |x| / kDivisor at most, so a block holds |x| < kLimit only.
inline constexpr float kHalfOverflow = 65520.0f;  // the least magnitude float16 rounds to infinity

// roundf(v) (half away from zero) for |v| < 2^31 without libm's out-of-line call, once per value
// of a q8_0 block, and without a branch (the halves fall at random): both slowed filling a q8_0
// cache (docs/studies/2026-12-06-quantised-kv.md). v - trunc(v) is exact.
inline float round_half_away(float v) {
  const float t = static_cast<float>(static_cast<std::int32_t>(v));
  const float up = static_cast<float>(__builtin_fabsf(v - t) >= 0.5f);
  return t + __builtin_copysignf(up, v);
}

struct Q8_0 {
  static constexpr std::size_t kCodeBytes = 32;
  static constexpr float kDivisor = 127.0f;
  static constexpr float kLimit = kHalfOverflow * kDivisor;
  static void quantize(const float* x, std::uint16_t& scale, std::uint8_t* codes) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < kQuantBlock; ++i)
      amax = __builtin_fmaxf(amax, __builtin_fabsf(x[i]));
    const float d = amax / kDivisor;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    scale = half_bits(d);
    for (std::size_t i = 0; i < kQuantBlock; ++i)
      codes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(round_half_away(x[i] * id)));
  }
  // Element i of a block with scale d (as float32) and codes `codes`.
  static float value(float d, const std::uint8_t* codes, std::size_t i) {
    return d * static_cast<float>(static_cast<std::int8_t>(codes[i]));
  }
};

struct Q4_0 {
  static constexpr std::size_t kCodeBytes = 16;
  static constexpr float kDivisor = 8.0f;  // d = max / -8
  static constexpr float kLimit = kHalfOverflow * kDivisor;
  static void quantize(const float* x, std::uint16_t& scale, std::uint8_t* codes) {
    float amax = 0.0f, max = 0.0f;
    for (std::size_t i = 0; i < kQuantBlock; ++i) {
      if (amax < __builtin_fabsf(x[i])) {
        amax = __builtin_fabsf(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    scale = half_bits(d);
    for (std::size_t i = 0; i < kCodeBytes; ++i) {
      const auto code = [&](float v) {
        const int c = static_cast<std::int8_t>(v * id + 8.5f);  // truncates, as ggml's cast
        return static_cast<std::uint8_t>(c < 15 ? c : 15);
      };
      codes[i] = static_cast<std::uint8_t>(code(x[i]) | (code(x[i + kCodeBytes]) << 4));
    }
  }
  static float value(float d, const std::uint8_t* codes, std::size_t i) {
    const unsigned byte = codes[i % kCodeBytes];
    const int code = static_cast<int>(i < kCodeBytes ? byte & 15u : byte >> 4);
    return d * static_cast<float>(code - 8);
  }
};

// Whether T is one of the block-quantised types.
template <class T>
inline constexpr bool kQuantised = std::is_same_v<T, Q8_0> || std::is_same_v<T, Q4_0>;

// The bytes of one quantised block of T: the scale and the codes.
template <class T>
inline constexpr std::size_t kQuantBlockBytes = sizeof(std::uint16_t) + T::kCodeBytes;

// Block b (values [32 b, 32 b + 32), zeros past n) of a row of n values, quantised as T; a null
// row is all zeros (a padding key).
template <class T>
void quantize_block(const float* row, std::size_t n, std::size_t b, std::uint16_t& scale,
                    std::uint8_t* codes) {
  float block[kQuantBlock] = {};
  const std::size_t from = b * kQuantBlock, count = n - from < kQuantBlock ? n - from : kQuantBlock;
  for (std::size_t i = 0; row != nullptr && i < count; ++i) block[i] = row[from + i];
  T::quantize(block, scale, codes);
}

// n values (one K or V row) stored as T and read back: whole blocks, the last padded with zeros.
template <class T>
void quantize_row(const float* x, float* out, std::size_t n) {
  for (std::size_t b = 0; b * kQuantBlock < n; ++b) {
    std::uint16_t scale;
    std::uint8_t codes[T::kCodeBytes];
    quantize_block<T>(x, n, b, scale, codes);
    const float d = half_value(scale);
    const std::size_t from = b * kQuantBlock;
    for (std::size_t i = 0; i < kQuantBlock && from + i < n; ++i)
      out[from + i] = T::value(d, codes, i);
  }
}

// One query row of n values quantised as q8_0 (Options::quantise_query, as ggml quantises the
// query for its q8_0 and q4_0 dot products): per block of 32 its codes (zeros past n), its scale
// (the float16's value) and the sum of its codes; the rounded values, codes times scale, to
// `rounded` (as quantize_row<Q8_0> gives them).
inline void quantise_query_row(const float* x, std::size_t n, std::int8_t* codes, float* scales,
                               std::int32_t* sums, float* rounded) {
  for (std::size_t b = 0; b * kQuantBlock < n; ++b) {
    std::uint16_t scale;
    std::uint8_t c[kQuantBlock];
    quantize_block<Q8_0>(x, n, b, scale, c);
    scales[b] = half_value(scale);
    std::int32_t sum = 0;
    for (std::size_t i = 0; i < kQuantBlock; ++i) {
      codes[b * kQuantBlock + i] = static_cast<std::int8_t>(c[i]);
      sum += static_cast<std::int8_t>(c[i]);
      if (b * kQuantBlock + i < n) rounded[b * kQuantBlock + i] = Q8_0::value(scales[b], c, i);
    }
    sums[b] = sum;
  }
}

// x as stored in T.
inline float store_as(float x, const float*) { return x; }
inline Half store_as(float x, const Half*) { return Half{half_bits(x)}; }
inline BFloat16 store_as(float x, const BFloat16*) { return BFloat16{bfloat16_bits(x)}; }
template <class T>
T stored(float x) {
  return store_as(x, static_cast<const T*>(nullptr));
}

// A stored value read back as float32.
inline float value_of(float x) { return x; }
inline float value_of(Half h) { return half_value(static_cast<std::uint16_t>(h)); }
inline float value_of(BFloat16 b) { return bfloat16_value(static_cast<std::uint16_t>(b)); }

}  // namespace

}  // namespace attnbench::kernels
