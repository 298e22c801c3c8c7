// The K/V storage types' names and scalar conversions (include/attnbench/types.hpp), all from
// kernels/storage.hpp, the one definition of the rounding.
#include <cmath>
#include <limits>

#include <attnbench/attnbench.hpp>
#include "kernels/storage.hpp"

namespace attnbench {

std::string_view to_string(KvType type) {
  switch (type) {
    case KvType::f32: return "f32";
    case KvType::f16: return "f16";
    case KvType::bf16: return "bf16";
    case KvType::q8_0: return "q8_0";
    case KvType::q4_0: return "q4_0";
  }
  return "?";
}

std::optional<KvType> kv_type_from_string(std::string_view name) {
  for (KvType type : kAllKvTypes) {
    if (name == to_string(type)) return type;
  }
  return std::nullopt;
}

std::uint16_t float_to_f16(float x) { return kernels::half_bits(x); }
float f16_to_float(std::uint16_t h) { return kernels::half_value(h); }
std::uint16_t float_to_bf16(float x) { return kernels::bfloat16_bits(x); }
float bf16_to_float(std::uint16_t b) { return kernels::bfloat16_value(b); }

float round_to(KvType type, float x) {
  switch (type) {
    case KvType::f32: return x;
    case KvType::f16: return f16_to_float(float_to_f16(x));
    case KvType::bf16: return bf16_to_float(float_to_bf16(x));
    case KvType::q8_0:
    case KvType::q4_0: round_row(type, &x, &x, 1); return x;
  }
  return x;
}

void round_row(KvType type, const float* in, float* out, std::size_t n) {
  if (type == KvType::q8_0) return kernels::quantize_row<kernels::Q8_0>(in, out, n);
  if (type == KvType::q4_0) return kernels::quantize_row<kernels::Q4_0>(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = round_to(type, in[i]);
}

float kv_overflow_threshold(KvType type) {
  switch (type) {
    case KvType::f32: break;
    case KvType::f16: return kernels::kHalfOverflow;
    case KvType::bf16: return 0x1.FFp127f;
    case KvType::q8_0: return kernels::Q8_0::kLimit;
    case KvType::q4_0: return kernels::Q4_0::kLimit;
  }
  return std::numeric_limits<float>::infinity();
}

bool rounds_to_infinity(KvType type, float x) {
  return std::isfinite(x) && std::fabs(x) >= kv_overflow_threshold(type);
}

}  // namespace attnbench
