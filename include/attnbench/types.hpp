// attnbench: the problem's shape, the K/V storage types and the library's error type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnbench {

struct Shape {
  std::size_t batch = 1;
  std::size_t q_heads = 1;
  std::size_t kv_heads = 1;
  std::size_t q_len = 0;
  std::size_t kv_len = 0;
  std::size_t head_dim = 0;

  std::size_t q_elements() const { return batch * q_heads * q_len * head_dim; }
  std::size_t kv_elements() const { return batch * kv_heads * kv_len * head_dim; }
};

// The Shape of a call on arrays of these dimensions, each (n, d), (h, n, d) or (b, h, n, d) like
// Q, K and V themselves (a front end's arrays: NumPy's, .npy files'). Checks what the dimensions
// alone decide (ranks 2 to 4, K and V alike, equal ranks, head dim and batch matching) and throws
// Error naming the array by `names` (its field) with its shape (its value); heads and sizes are
// validate()'s.
Shape shape_from_dims(std::span<const std::size_t> q, std::span<const std::size_t> k,
                      std::span<const std::size_t> v,
                      const std::array<std::string_view, 3>& names = {"q", "k", "v"});

// How K and V are stored where a kernel reads them (its packed copy, or a KvCache): float32, IEEE
// half (float16), bfloat16, or block-quantised as ggml's q8_0 and q4_0 (each key's and value's row
// cut into blocks of 32 values along the head dim, the last padded with zeros; per block one
// float16 scale and 32 int8 codes, 34 bytes, or 32 4-bit codes, 18 bytes). Inputs stay float32
// (Q, K, V) and so do the outputs and every accumulation; a narrower type cuts the bytes of K and
// V a call streams, at the price of rounding them once (to nearest, ties to even; a block's
// codes as ggml's reference quantisation rounds them).
enum class KvType { f32, f16, bf16, q8_0, q4_0 };
inline constexpr std::size_t kKvTypes = 5;
inline constexpr KvType kAllKvTypes[kKvTypes] = {KvType::f32, KvType::f16, KvType::bf16,
                                                 KvType::q8_0, KvType::q4_0};
std::string_view to_string(KvType type);
// The KvType called `name` ("f32", "f16", "bf16", "q8_0", "q4_0"), or nullopt.
std::optional<KvType> kv_type_from_string(std::string_view name);
// Whether `type` stores blocks of 32 values with a scale (q8_0, q4_0).
constexpr bool is_quantised(KvType type) { return type == KvType::q8_0 || type == KvType::q4_0; }
// Bytes of one key's (or value's) row of `head_dim` values stored as `type`, the padding of a
// quantised row's last block included: 4 d, 2 d, 34 ceil(d / 32) or 18 ceil(d / 32).
constexpr std::size_t kv_row_bytes(KvType type, std::size_t head_dim) {
  const std::size_t blocks = (head_dim + 31) / 32;
  switch (type) {
    case KvType::f32: return 4 * head_dim;
    case KvType::f16:
    case KvType::bf16: return 2 * head_dim;
    case KvType::q8_0: return 34 * blocks;
    case KvType::q4_0: return 18 * blocks;
  }
  return 4 * head_dim;
}

// The precision of a kernel's two products, Q K^T and P V (Kernel::products). f32: float32
// FMAs on float32 operands (K and V widened from their storage type). bf16: Q, K and V rounded to
// bfloat16 once, the weights P rounded to bfloat16 once before P V, each product of two bfloat16
// values accumulated in float32 (AVX512_BF16's vdpbf16ps); scores, softmax, the running max and
// sum, the output accumulator and the LSE stay float32. Such a kernel stores K and V as bf16.
enum class Products { f32, bf16 };
std::string_view to_string(Products products);

// The scalar conversions every storage path agrees with bit for bit: float32 to float16 or
// bfloat16 rounds to nearest, ties to even (subnormal halves included); NaN stays NaN (quiet, the
// top payload bits kept), infinities stay infinite, and a finite float beyond the type's range
// becomes an infinity (see rounds_to_infinity). The way back is exact.
std::uint16_t float_to_f16(float x);
float f16_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float x);
float bf16_to_float(std::uint16_t b);
// x stored as `type` and read back: x itself for f32; for a quantised type, x alone in its block.
float round_to(KvType type, float x);
// One K or V row of n values stored as `type` and read back into out (in == out allowed): each
// value as round_to rounds it, or a quantised type's blocks of 32 (the last padded with zeros).
void round_row(KvType type, const float* in, float* out, std::size_t n);
// The least magnitude `type` cannot store finite: halfway from its largest finite value to the
// next power of two (f16: 65520; bf16: 0x7F7F8000, about 3.3961e38); for a quantised type, where
// its block's float16 scale would (65520 x 127 for q8_0, 65520 x 8 for q4_0); infinity for f32.
float kv_overflow_threshold(KvType type);
// Is x finite while its `type` rounding is an infinity (|x| >= kv_overflow_threshold(type))?
bool rounds_to_infinity(KvType type, float x);

// The library's one error type: invalid shapes, options, pointers and budgets. The message names
// the field and the value, e.g. "shape.head_dim = 0: must be at least 1".
class Error : public std::invalid_argument {
 public:
  Error(std::string field, std::string value, const std::string& why);
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }

 private:
  std::string field_;
  std::string value_;
};

}  // namespace attnbench
